// The standard kernels (Gaussian, Laplacian, linear, polynomial) as implementations of the
// kernel interface, with their GEMM / SIMD fast paths, and the blocked kernel expansion
// f(x) = sum_i c_i k(x_i, x) - rho that every predict uses.
#pragma once

#include <string>
#include <vector>

#include "base/common.hpp"
#include "kernels/kernel.hpp"

namespace kl {

enum class KernelType { Gaussian = 0, Laplacian = 1, Linear = 2, Polynomial = 3 };

// k(x, z) for each type:
//   Gaussian    exp(-gamma * ||x - z||^2)
//   Laplacian   exp(-gamma * ||x - z||)          (Euclidean norm, as kernlab's laplacedot)
//   Linear      <x, z>
//   Polynomial  (scale * <x, z> + offset)^degree
struct KernelSpec {
  KernelType type = KernelType::Gaussian;
  double gamma = 1.0;
  double degree = 3.0;
  double scale = 1.0;
  double offset = 1.0;
};

inline KernelSpec gaussian_spec(double gamma) {
  KernelSpec s;
  s.type = KernelType::Gaussian;
  s.gamma = gamma;
  return s;
}

// x^k for an integer k >= 0, by repeated squaring (the polynomial kernel).
inline double ipow(double x, int k) {
  double r = 1.0;
  while (k > 0) {
    if (k & 1) r *= x;
    x *= x;
    k >>= 1;
  }
  return r;
}

// Throws kl::Error when a parameter is invalid (gamma <= 0, degree < 1 or not an integer, ...).
void validate(const KernelSpec& spec);

// The kernel object of a standard kernel (validated). This is the one place that dispatches on
// KernelType.
KernelPtr make_standard_kernel(const KernelSpec& spec);

// Shorthands through make_standard_kernel (kept for callers that hold a spec).
double kernel_value(const KernelSpec& spec, const double* x, std::ptrdiff_t incx, const double* z,
                    std::ptrdiff_t incz, int d);
// K (n x m) = k(X_i, Z_j) for X (n x d) and Z (m x d). Every standard kernel goes through GEMM
// blocks of X Z' (distance kernels as ||x||^2 + ||z||^2 - 2 x'z, clamped at 0). The block
// partition is fixed, so K does not depend on the thread count. cb.check() runs between
// parallel sweeps.
void kernel_matrix(const KernelSpec& spec, CMatRef X, CMatRef Z, MatRef K, int threads,
                   const Callbacks& cb = Callbacks());

// exp(x) for x <= 0 in single precision, vectorisable (kernel rows of the SVM cache): relative
// error about 2e-7; 0 below -87.
// Up to this many columns, the blocks of the exponential kernels (Gaussian, Laplacian) are
// computed from the squared distances directly, vectorised over rows, when the processor has
// the vector kernels: a product of so few columns would cost more than the distances.
constexpr Eigen::Index kDirectKernelCols = 16;

float exp_neg(float x);

}  // namespace kl
