// Kernels vectorised for the processor found at run time.
//
// The package is built with the compiler's portable flags, so Eigen's own kernels use only the
// baseline instruction set (SSE2 on x86-64). The kernels here are compiled for AVX2 + FMA and
// for AVX-512 through function target attributes and chosen at run time when the processor
// has those instructions; elsewhere the callers use Eigen. Target attributes rather than
// separate objects built with -mavx2: a template instantiated in such an object could be
// merged by the linker with the baseline copy and run on a processor without AVX2.
//
// The matrix product (gemm_block and everything built on it: kernel blocks, Gram matrices,
// the Cholesky updates, the learners' products) follows the usual blocking: for each block of
// 256 values of k, all of B is packed in panels of two vectors, and A in blocks of 144 rows
// (6-row panels, about 300 KB: they stay in a core's L2 cache while every panel of B sweeps
// them); a 6 x 2-vector micro-kernel keeps 12 accumulators in registers and adds its sums
// straight into C. The sum of each element runs over k in the same order whatever the tiling,
// so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <vector>

#include "base/common.hpp"

namespace kl {

// The widest kernel set this build can run on this processor, capped by the environment
// variable KERNLEARN_SIMD ("none", "avx2", "avx512") when it is set at start-up.
enum class SimdLevel { none = 0, avx2 = 1, avx512 = 2 };
SimdLevel simd_level();
const char* simd_level_name(SimdLevel level);

// B <- B L^-T (the solution X of X L' = B) for a column-major B (m x n, leading dimension
// ldb) and the lower triangle of L (n x n, leading dimension ldl), by forward substitution
// over the columns, vectorised over the rows. `level` must not be none and must not exceed
// simd_level().
void trsm_right_lower_t(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, const double* L,
                        std::ptrdiff_t ldl, double* B, std::ptrdiff_t ldb);
void trsm_right_lower_t(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, const float* L,
                        std::ptrdiff_t ldl, float* B, std::ptrdiff_t ldb);

// y -= a x and x'y over n elements, vectorised up to `level` (none: scalar loops; the
// caller passes simd_level() or less). The dot product's summation order depends on n only.
void axpy_sub(SimdLevel level, double* y, const double* x, double a, std::ptrdiff_t n);
void axpy_sub(SimdLevel level, float* y, const float* x, float a, std::ptrdiff_t n);
double dot(SimdLevel level, const double* x, const double* y, std::ptrdiff_t n);
float dot(SimdLevel level, const float* x, const float* y, std::ptrdiff_t n);
// Y(0:n, j) -= sum_{k < K} A(0:n, k) Z(k, j) for the m (1 to 4) columns j of Y (leading
// dimension ldy) and of Z (ldz), A column-major (lda): each element's terms subtracted one by
// one in order of k, the arithmetic of K m calls of axpy_sub, with A read once for all m and
// Y once for a few columns of A.
void axpy_sub_cols(SimdLevel level, double* Y, std::ptrdiff_t ldy, int m, const double* A,
                   std::ptrdiff_t lda, std::ptrdiff_t K, const double* Z, std::ptrdiff_t ldz,
                   std::ptrdiff_t n);
void axpy_sub_cols(SimdLevel level, float* Y, std::ptrdiff_t ldy, int m, const float* A,
                   std::ptrdiff_t lda, std::ptrdiff_t K, const float* Z, std::ptrdiff_t ldz,
                   std::ptrdiff_t n);
// D(k, j) = dot(A(0:n, k), X(0:n, j)) for k < K and the m (1 to 4) columns j of X, into D
// (leading dimension ldd): each the same sum as dot()'s, with X read once for a few columns.
void dot_cols(SimdLevel level, const double* A, std::ptrdiff_t lda, std::ptrdiff_t K,
              const double* X, std::ptrdiff_t ldx, int m, std::ptrdiff_t n, double* D,
              std::ptrdiff_t ldd);
void dot_cols(SimdLevel level, const float* A, std::ptrdiff_t lda, std::ptrdiff_t K,
              const float* X, std::ptrdiff_t ldx, int m, std::ptrdiff_t n, float* D,
              std::ptrdiff_t ldd);
// Columns j0 .. j0 + g - 1 (g from 1 to 4) of a symmetric product whose matrix is held in
// single precision: Y += (A + shift I) X restricted to those columns of A, for the n x n A
// (column-major, leading dimension lda) of which the lower triangle is read, and m (1 to 4)
// double columns of X and Y (leading dimensions ldx, ldy): Y(i, c) += A(i, j) X(j, c) for
// i > j and Y(j, c) += sum_{i > j} A(i, j) X(i, c) + (A(j, j) + shift) X(j, c), in double
// (each float converted exactly), in an order fixed by n, j0 and g. Any level up to
// simd_level() (none: scalar).
void sym_columns_f32(SimdLevel level, const float* A, std::ptrdiff_t lda, std::ptrdiff_t n,
                     std::ptrdiff_t j0, int g, double shift, const double* x, std::ptrdiff_t ldx,
                     double* y, std::ptrdiff_t ldy, int m);
// Skinny products with a single-precision row-major X (nrows x p, leading dimension ldx) and
// K columns, K a multiple of skinny_class_block() (callers pad with zero columns). Sums are in
// single precision in an order fixed by the kernel, so results do not depend on threads.
// `level` must not be none and must not exceed simd_level().
std::ptrdiff_t skinny_class_block();
// out (row-major nrows x K, overwritten) = X W' for the row-major W (K x p, leading dimension p).
void rows_times_f32(SimdLevel level, const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                    std::ptrdiff_t p, const float* W, std::ptrdiff_t K, float* out);
// C (row-major K x p, leading dimension p) += R' X for the row-major R (nrows x K).
void rows_crossprod_f32(SimdLevel level, const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                        std::ptrdiff_t p, const float* R, std::ptrdiff_t K, float* C);

// C = A B for strided operands, on the calling thread: A(i, k) = A[i * as_i + k * as_k]
// (m x kdim), B(k, j) = B[k * bs_k + j * bs_j] (kdim x n); C(i, j) = C[i * cs_i + j * cs_j]
// is overwritten. With kdim = 0, C is set to zero. Same conditions on `level`.
void gemm_block(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t cs_i,
                std::ptrdiff_t cs_j);

// C -= A B, operands as for gemm_block (the rounding of computing A B and then subtracting).
void gemm_block_sub(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                    const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                    std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t cs_i,
                    std::ptrdiff_t cs_j);
void gemm_block_sub(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                    const float* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const float* B,
                    std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, float* C, std::ptrdiff_t cs_i,
                    std::ptrdiff_t cs_j);

// The same product into a column-major C (leading dimension ldc), in 512 x 512 tiles of C
// computed in parallel; each tile's sums have a fixed order, so threads do not change it.
void gemm_parallel(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                   const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                   std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t ldc,
                   int threads);

// A(r0:N, r0:N) -= A21 A21' on the lower triangle of tiles of side `tile` (their lower
// triangle on the diagonal), A21 = A(r0:N, c0:c0 + kb), for a column-major A with leading
// dimension ld: the trailing update of a blocked Cholesky step, in parallel over tiles. The
// packed panel is held in `store`, which the caller keeps from step to step.
void cholesky_update(SimdLevel level, double* A, std::ptrdiff_t ld, std::ptrdiff_t N,
                     std::ptrdiff_t c0, std::ptrdiff_t kb, std::ptrdiff_t r0, std::ptrdiff_t tile,
                     int threads, std::vector<double>& store);
void cholesky_update(SimdLevel level, float* A, std::ptrdiff_t ld, std::ptrdiff_t N,
                     std::ptrdiff_t c0, std::ptrdiff_t kb, std::ptrdiff_t r0, std::ptrdiff_t tile,
                     int threads, std::vector<float>& store);

// The strict upper triangle of the leading p x p block of the column-major matrix G (leading
// dimension ld) set from its lower triangle, in square blocks read and written within the
// cache, in parallel over block columns.
void mirror_lower(double* G, std::ptrdiff_t ld, std::ptrdiff_t p, int threads);

// G += X'X on the lower triangle, for X (nrows x p) with X(k, j) = X[k * sr + j * sc], in
// parallel over tiles of side `tile`; entries of G above the diagonal are left unspecified
// (callers mirror the lower triangle). Through the widest vectorised kernel up to `level`, or
// Eigen for none. The products of each block of `sum_rows` rows (all rows when 0; with a
// vectorised kernel a multiple of 256) are summed in T, then added to G in double, block by
// block in order: the result does not depend on how a caller splits its rows into calls
// whose sizes are multiples of sum_rows. The vectorised path packs X into `store` when given
// (a caller that adds many blocks of rows keeps it from call to call), else into its own
// buffer.
void add_crossprod_lower(SimdLevel level, const float* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
                         std::ptrdiff_t nrows, std::ptrdiff_t p, std::ptrdiff_t tile, MatRef G,
                         int threads, std::vector<float>* store = nullptr,
                         std::ptrdiff_t sum_rows = 0);
void add_crossprod_lower(SimdLevel level, const double* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
                         std::ptrdiff_t nrows, std::ptrdiff_t p, std::ptrdiff_t tile, MatRef G,
                         int threads, std::vector<double>* store = nullptr,
                         std::ptrdiff_t sum_rows = 0);

}  // namespace kl
