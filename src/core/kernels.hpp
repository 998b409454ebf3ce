// Kernel functions and blocked, OpenMP-parallel kernel matrices.
#pragma once

#include <string>

#include "common.hpp"

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

// The kernel value between two points of dimension d (plain loops; the reference the blocked
// matrix routine is tested against).
double kernel_value(const KernelSpec& spec, const double* x, std::ptrdiff_t incx, const double* z,
                    std::ptrdiff_t incz, int d);

// K (n x m) = k(X_i, Z_j) for X (n x d) and Z (m x d). Every kernel goes through Eigen GEMM
// blocks of X Z' (distance kernels as ||x||^2 + ||z||^2 - 2 x'z, clamped at 0). The block
// partition is fixed, so K does not depend on the thread count. cb.check() runs between
// parallel sweeps.
void kernel_matrix(const KernelSpec& spec, CMatRef X, CMatRef Z, MatRef K, int threads,
                   const Callbacks& cb = Callbacks());

// Same, for the transformation of a precomputed inner-product block G = X Z' with the squared
// row norms of X and Z (used by the backends after their own GEMM).
void finish_kernel_block(const KernelSpec& spec, const double* xnorm, const double* znorm,
                         MatRef G);

}  // namespace kl
