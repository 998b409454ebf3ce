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

// The same, blocked for large L and few right-hand sides: for each block of 256 rows the
// contribution of the rows already solved is subtracted through the vectorised product of
// simd.hpp (its rows shared among the threads), then the block's triangle is solved by
// substitution; the same backwards with L'. The summation order does not depend on the thread
// count. Eigen's solver when the processor has no vectorised kernel.
Mat cholesky_solve(const CMatRef& L, const CMatRef& B, int threads);
Eigen::MatrixXf cholesky_solve(const CMatFRef& L, const CMatFRef& B, int threads);

}  // namespace kl
