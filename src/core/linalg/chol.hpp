// Blocked, parallel Cholesky factorisation for large dense systems.
#pragma once

#include "base/common.hpp"
#include "linalg/simd.hpp"

namespace kl {

// A = L L' in place: reads the lower triangle of the symmetric matrix A and overwrites it with
// L (the strict upper triangle is not referenced). Right-looking, in column blocks of 256:
// each block's diagonal part is factored with Eigen, the panel below it solved, and the
// trailing lower triangle updated in 512 x 512 tiles in parallel, through the widest
// vectorised kernel of linalg/simd.hpp up to `max_level` (Eigen when there is none). The order of
// operations does not depend on the thread count. Returns false when a pivot is not positive.
bool cholesky_lower(MatRef A, int threads, SimdLevel max_level = SimdLevel::avx512,
                    const Callbacks& cb = Callbacks());

// The same in single precision.
using MatFRef = Eigen::Ref<Eigen::MatrixXf>;
using CMatFRef = Eigen::Ref<const Eigen::MatrixXf>;
bool cholesky_lower(MatFRef A, int threads, SimdLevel max_level = SimdLevel::avx512,
                    const Callbacks& cb = Callbacks());

// Solves (L L') X = B for L from cholesky_lower.
Mat cholesky_solve(const CMatRef& L, const CMatRef& B);

// The same, blocked for large L: for each block of 256 rows the contribution of the rows
// already solved is subtracted through the vectorised product of simd.hpp (its rows shared
// among the threads), then the block's triangle is solved by substitution; the same backwards
// with L'. With fewer than 4 right-hand sides, L is streamed once per substitution instead,
// each block's columns shared among the threads. The summation order does not depend on the
// thread count. Eigen's solver when the processor has no vectorised kernel.
Mat cholesky_solve(const CMatRef& L, const CMatRef& B, int threads);
Eigen::MatrixXf cholesky_solve(const CMatFRef& L, const CMatFRef& B, int threads);

// (A + shift I) X for a symmetric A held in single precision, of which the lower triangle
// (diagonal included) is read; in double, each entry of A converted exactly. Two fixed halves
// of A's columns (equal work) are summed separately and then added, at any thread count.
Mat symmetric_lower_product(const CMatFRef& A, double shift, const CMatRef& X, int threads);

// Solves (A + shift I) X = B, for a symmetric A held in single precision, to double accuracy
// at about half the cost of a double factorisation: the Cholesky factor of A + shift I in
// single precision, then iterative refinement (the residual in double through
// symmetric_lower_product, the correction through the single-precision factor). Refinement
// contracts the error by about cond(A + shift I) * 6e-8 per step, so it suits systems whose
// condition number is well below 1e7; factor() and solve() say when it does not work, and the
// caller then factors in double.
class MixedCholesky {
 public:
  // Factors A + shift I in single precision; A must outlive the solves (it is not copied).
  // False when the single-precision factor breaks down (a pivot not positive).
  bool factor(const Eigen::MatrixXf& A, double shift, int threads,
              const Callbacks& cb = Callbacks());
  // X for every column of B, refined until the last correction of each column is at most
  // tol times its largest entry, or the error it leaves (estimated as the ratio of the last two
  // corrections times the last) is at most a tenth of that. False,
  // X unspecified, when a correction fails to shrink to half the previous one or after
  // max_steps corrections. `steps` (optional) receives the corrections made.
  bool solve(const CMatRef& B, Mat& X, double tol, int threads, int max_steps = 10,
             int* steps = nullptr) const;
  bool ready() const { return A_ != nullptr; }
  void clear();

 private:
  const Eigen::MatrixXf* A_ = nullptr;
  Eigen::MatrixXf L_;
  double shift_ = 0.0;
};

}  // namespace kl
