#include "linalg/simd.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "base/common.hpp"
#include "base/scratch.hpp"

namespace kl {
namespace {

// the scratch memory of gemm_block's packed panels
struct GemmPackedA;
struct GemmPackedB;
struct LowerTileBuffer;  // each thread's tile product in PackedBlocks::for_lower_tiles

const std::ptrdiff_t kKc = 256;  // rows per packed block
const std::ptrdiff_t kMc = 144;  // rows of A packed at a time (a multiple of kMr)
const int kMr = 6;               // rows of C per micro-kernel call

// Copies the block of rows i0 .. i0 + w - 1 and columns k0 .. k0 + kc - 1 of the strided
// operand M (element (i, k) at M[i * si + k * sk]) into panels of `width` rows: panel q holds
// M(i0 + q * width + j, k0 + k) at out[(q * kc + k) * width + j], with zeros past row w.
template <class T>
void pack(const T* M, std::ptrdiff_t si, std::ptrdiff_t sk, std::ptrdiff_t i0, std::ptrdiff_t w,
          std::ptrdiff_t k0, std::ptrdiff_t kc, int width, T* out) {
  const std::ptrdiff_t panels = (w + width - 1) / width;
  if (si == 1) {
    // Rows contiguous: a few k at a time across all panels, so each of those columns of M is
    // read front to back (a panel row is only `width` elements: one k per panel at a time
    // would jump a whole column stride per element).
    const std::ptrdiff_t kstep = 8;
    for (std::ptrdiff_t ka = 0; ka < kc; ka += kstep) {
      const std::ptrdiff_t kb = std::min(kc, ka + kstep);
      for (std::ptrdiff_t q = 0; q < panels; ++q) {
        const std::ptrdiff_t j0 = q * width;
        const std::ptrdiff_t m = std::min<std::ptrdiff_t>(width, w - j0);
        const T* src = M + (i0 + j0) + k0 * sk;
        T* dst = out + q * kc * width;
        for (std::ptrdiff_t k = ka; k < kb; ++k) {
          T* d = dst + k * width;
          const T* sr = src + k * sk;
          // whole runs: element-wise loops here stay scalar at -O2 (d and sr may overlap for
          // the compiler), which made packing a tenth of a factorisation's time
          std::memcpy(d, sr, static_cast<std::size_t>(m) * sizeof(T));
          std::fill(d + m, d + width, T(0));
        }
      }
    }
    return;
  }
  for (std::ptrdiff_t q = 0; q < panels; ++q) {
    T* dst = out + q * kc * width;
    const std::ptrdiff_t j0 = q * width;
    const std::ptrdiff_t m = std::min<std::ptrdiff_t>(width, w - j0);
    const T* src = M + (i0 + j0) * si + k0 * sk;
    // columns contiguous (or neither): walk along k for each row
    for (std::ptrdiff_t j = 0; j < m; ++j)
      for (std::ptrdiff_t k = 0; k < kc; ++k) dst[k * width + j] = src[j * si + k * sk];
    for (std::ptrdiff_t k = 0; k < kc; ++k) std::fill(dst + k * width + m, dst + (k + 1) * width, T(0));
  }
}

// x <- -x and y += x over n elements, through Eigen's vectorised maps (plain loops stay
// scalar at -O2).
template <class T>
void negate(T* x, std::ptrdiff_t n) {
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> v(x, n);
  v = -v;
}
template <class T>
void add_to(T* y, const T* x, std::ptrdiff_t n) {
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(y, n) +=
      Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(x, n);
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(_WIN32)
#define KL_SIMD_X86 1
// Full unrolling of the fixed 6-row loops keeps the accumulators in registers.
// KL_UNROLL_ALL: the same for the loops of up to 16 steps over a kernel's columns and vectors.
#if defined(__clang__)
#define KL_UNROLL _Pragma("unroll")
#define KL_UNROLL_ALL _Pragma("unroll")
#else
#define KL_UNROLL _Pragma("GCC unroll 6")
#define KL_UNROLL_ALL _Pragma("GCC unroll 16")
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

// C(0:6, 0:2W) = (first ? 0 : C) + sum_k A(k, 0:6)' B(k, 0:2W) for packed panels A (kc x 6)
// and B (kc x 2W) with 12 vector accumulators. Inlined into the target-specific kernels below,
// so it is compiled for their instruction sets.
template <class V, int W, class T>
__attribute__((always_inline)) inline void micro_kernel(std::ptrdiff_t kc, const T* A,
                                                        const T* B, T* C, std::ptrdiff_t ldc,
                                                        bool first) {
  V c0[kMr], c1[kMr];
KL_UNROLL
  for (int i = 0; i < kMr; ++i) {
    c0[i] = V{};
    c1[i] = V{};
  }
  for (std::ptrdiff_t k = 0; k < kc; ++k) {
    V b0, b1;
    std::memcpy(&b0, B + k * 2 * W, sizeof(V));
    std::memcpy(&b1, B + k * 2 * W + W, sizeof(V));
    const T* a = A + k * kMr;
KL_UNROLL
    for (int i = 0; i < kMr; ++i) {
      c0[i] += a[i] * b0;
      c1[i] += a[i] * b1;
    }
  }
  if (first) {
KL_UNROLL
    for (int i = 0; i < kMr; ++i) {
      T* ci = C + i * ldc;
      std::memcpy(ci, &c0[i], sizeof(V));
      std::memcpy(ci + W, &c1[i], sizeof(V));
    }
    return;
  }
KL_UNROLL
  for (int i = 0; i < kMr; ++i) {
    V t0, t1;
    T* ci = C + i * ldc;
    std::memcpy(&t0, ci, sizeof(V));
    std::memcpy(&t1, ci + W, sizeof(V));
    t0 += c0[i];
    t1 += c1[i];
    std::memcpy(ci, &t0, sizeof(V));
    std::memcpy(ci + W, &t1, sizeof(V));
  }
}

// Vector types of 32 and 64 bytes for each element type.
template <class T> struct Vecs;
template <> struct Vecs<float> { typedef v8f v256; typedef v16f v512; };
template <> struct Vecs<double> { typedef v4d v256; typedef v8d v512; };

template <class T>
__attribute__((target("avx2,fma"))) void kernel_avx2(std::ptrdiff_t kc, const T* A, const T* B,
                                                     T* C, std::ptrdiff_t ldc, bool first) {
  micro_kernel<typename Vecs<T>::v256, static_cast<int>(32 / sizeof(T))>(kc, A, B, C, ldc, first);
}

template <class T>
__attribute__((target("avx512f,avx2,fma"))) void kernel_avx512(std::ptrdiff_t kc, const T* A,
                                                               const T* B, T* C,
                                                               std::ptrdiff_t ldc, bool first) {
  micro_kernel<typename Vecs<T>::v512, static_cast<int>(64 / sizeof(T))>(kc, A, B, C, ldc,
                                                                         first);
}

// B <- B L^-T for a column-major B (m x n, leading dimension ldb) and lower-triangular L
// (n x n, leading dimension ldl): column j of the solution is
// (B(:, j) - sum_{l < j} X(:, l) L(j, l)) / L(j, j), computed for 4 vectors of rows at a time
// (then one vector, then single rows). Every row's arithmetic is the same in each path.
template <class V, class T>
__attribute__((always_inline)) inline void trsm_rlt_run(std::ptrdiff_t m, std::ptrdiff_t n,
                                                        const T* L, std::ptrdiff_t ldl, T* B,
                                                        std::ptrdiff_t ldb) {
  const int w = static_cast<int>(sizeof(V) / sizeof(T));
  std::ptrdiff_t r = 0;
  for (; r + 4 * w <= m; r += 4 * w) {
    for (std::ptrdiff_t j = 0; j < n; ++j) {
      T* bj = B + r + j * ldb;
      V a0, a1, a2, a3;
      std::memcpy(&a0, bj, sizeof(V));
      std::memcpy(&a1, bj + w, sizeof(V));
      std::memcpy(&a2, bj + 2 * w, sizeof(V));
      std::memcpy(&a3, bj + 3 * w, sizeof(V));
      for (std::ptrdiff_t l = 0; l < j; ++l) {
        const T c = L[j + l * ldl];
        const T* xl = B + r + l * ldb;
        V x0, x1, x2, x3;
        std::memcpy(&x0, xl, sizeof(V));
        std::memcpy(&x1, xl + w, sizeof(V));
        std::memcpy(&x2, xl + 2 * w, sizeof(V));
        std::memcpy(&x3, xl + 3 * w, sizeof(V));
        a0 -= c * x0;
        a1 -= c * x1;
        a2 -= c * x2;
        a3 -= c * x3;
      }
      const T d = L[j + j * ldl];
      a0 /= d;
      a1 /= d;
      a2 /= d;
      a3 /= d;
      std::memcpy(bj, &a0, sizeof(V));
      std::memcpy(bj + w, &a1, sizeof(V));
      std::memcpy(bj + 2 * w, &a2, sizeof(V));
      std::memcpy(bj + 3 * w, &a3, sizeof(V));
    }
  }
  for (; r + w <= m; r += w) {
    for (std::ptrdiff_t j = 0; j < n; ++j) {
      T* bj = B + r + j * ldb;
      V a0;
      std::memcpy(&a0, bj, sizeof(V));
      for (std::ptrdiff_t l = 0; l < j; ++l) {
        V x0;
        std::memcpy(&x0, B + r + l * ldb, sizeof(V));
        a0 -= L[j + l * ldl] * x0;
      }
      a0 /= L[j + j * ldl];
      std::memcpy(bj, &a0, sizeof(V));
    }
  }
  for (; r < m; ++r) {
    for (std::ptrdiff_t j = 0; j < n; ++j) {
      T a = B[r + j * ldb];
      for (std::ptrdiff_t l = 0; l < j; ++l) a -= L[j + l * ldl] * B[r + l * ldb];
      B[r + j * ldb] = a / L[j + j * ldl];
    }
  }
}

template <class T>
__attribute__((target("avx2,fma"))) void trsm_rlt_avx2(std::ptrdiff_t m, std::ptrdiff_t n,
                                                       const T* L, std::ptrdiff_t ldl, T* B,
                                                       std::ptrdiff_t ldb) {
  trsm_rlt_run<typename Vecs<T>::v256>(m, n, L, ldl, B, ldb);
}

template <class T>
__attribute__((target("avx512f,avx2,fma"))) void trsm_rlt_avx512(std::ptrdiff_t m,
                                                                 std::ptrdiff_t n, const T* L,
                                                                 std::ptrdiff_t ldl, T* B,
                                                                 std::ptrdiff_t ldb) {
  trsm_rlt_run<typename Vecs<T>::v512>(m, n, L, ldl, B, ldb);
}

// Skinny products of a single-precision row-major matrix X (nrows x p, leading dimension ldx)
// with K columns, K padded to a multiple of the class block C by the callers' zero rows.
//
// out(i, k) = sum_j X(i, j) W(k, j), for R rows and C classes at a time: the rows' vectors are
// loaded once per class block and W's vector once per R rows. Each row's sum is lane-wise over
// j in order, then the lanes are added in order, then the columns past the last full vector:
// the same arithmetic for a row in the R-row and the one-row paths.
template <class V>
__attribute__((always_inline)) inline float lane_sum(const V& v) {
  const int w = static_cast<int>(sizeof(V) / sizeof(float));
  float s = 0.0f;
  for (int l = 0; l < w; ++l) s += v[l];
  return s;
}

template <class V, int R, int C>
__attribute__((always_inline)) inline void rows_times_tile(const float* X, std::ptrdiff_t ldx,
                                                           std::ptrdiff_t p, const float* W,
                                                           float* out, std::ptrdiff_t ldo) {
  const int w = static_cast<int>(sizeof(V) / sizeof(float));
  const std::ptrdiff_t pv = p - p % w;
  V acc[R][C];
KL_UNROLL
  for (int r = 0; r < R; ++r)
KL_UNROLL
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  for (std::ptrdiff_t j = 0; j < pv; j += w) {
    V x[R];
KL_UNROLL
    for (int r = 0; r < R; ++r) std::memcpy(&x[r], X + r * ldx + j, sizeof(V));
KL_UNROLL
    for (int c = 0; c < C; ++c) {
      V wc;
      std::memcpy(&wc, W + c * p + j, sizeof(V));
KL_UNROLL
      for (int r = 0; r < R; ++r) acc[r][c] += x[r] * wc;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float s = lane_sum(acc[r][c]);
      for (std::ptrdiff_t j = pv; j < p; ++j) s += X[r * ldx + j] * W[c * p + j];
      out[r * ldo + c] = s;
    }
}

template <class V, int R, int C>
__attribute__((always_inline)) inline void rows_times_run(const float* X, std::ptrdiff_t ldx,
                                                          std::ptrdiff_t nrows, std::ptrdiff_t p,
                                                          const float* W, std::ptrdiff_t K,
                                                          float* out) {
  // Rows outermost: a group of rows stays in cache while the class blocks sweep it.
  std::ptrdiff_t r = 0;
  for (; r + R <= nrows; r += R)
    for (std::ptrdiff_t c0 = 0; c0 < K; c0 += C)
      rows_times_tile<V, R, C>(X + r * ldx, ldx, p, W + c0 * p, out + r * K + c0, K);
  for (; r < nrows; ++r)
    for (std::ptrdiff_t c0 = 0; c0 < K; c0 += C)
      rows_times_tile<V, 1, C>(X + r * ldx, ldx, p, W + c0 * p, out + r * K + c0, K);
}

// Cm(k, j) += sum_i Rm(i, k) X(i, j) for Rm row-major (nrows x K) and Cm row-major (K x p):
// for each vector of columns, C classes' accumulators stay in registers while 8 rows at a
// time are added to them, one row after the other (the same order as the single-row path).
template <class V, int C>
__attribute__((always_inline)) inline void rows_crossprod_run(const float* X, std::ptrdiff_t ldx,
                                                              std::ptrdiff_t nrows,
                                                              std::ptrdiff_t p, const float* Rm,
                                                              std::ptrdiff_t K, float* Cm) {
  const int w = static_cast<int>(sizeof(V) / sizeof(float));
  const int G = 8;
  const std::ptrdiff_t pv = p - p % w;
  std::ptrdiff_t i = 0;
  for (; i + G <= nrows; i += G) {
    for (std::ptrdiff_t c0 = 0; c0 < K; c0 += C) {
      const float* xi = X + i * ldx;
      const float* ri = Rm + i * K + c0;
      for (std::ptrdiff_t j = 0; j < pv; j += w) {
        V a[C];
KL_UNROLL
        for (int c = 0; c < C; ++c) std::memcpy(&a[c], Cm + (c0 + c) * p + j, sizeof(V));
KL_UNROLL
        for (int g = 0; g < G; ++g) {
          V x;
          std::memcpy(&x, xi + g * ldx + j, sizeof(V));
KL_UNROLL
          for (int c = 0; c < C; ++c) a[c] += ri[g * K + c] * x;
        }
KL_UNROLL
        for (int c = 0; c < C; ++c) std::memcpy(Cm + (c0 + c) * p + j, &a[c], sizeof(V));
      }
      for (std::ptrdiff_t j = pv; j < p; ++j)
        for (int g = 0; g < G; ++g)
          for (int c = 0; c < C; ++c) Cm[(c0 + c) * p + j] += ri[g * K + c] * xi[g * ldx + j];
    }
  }
  for (; i < nrows; ++i) {
    for (std::ptrdiff_t c0 = 0; c0 < K; c0 += C) {
      const float* xi = X + i * ldx;
      const float* ri = Rm + i * K + c0;
      for (std::ptrdiff_t j = 0; j < pv; j += w) {
        V x;
        std::memcpy(&x, xi + j, sizeof(V));
        for (int c = 0; c < C; ++c) {
          V a;
          std::memcpy(&a, Cm + (c0 + c) * p + j, sizeof(V));
          a += ri[c] * x;
          std::memcpy(Cm + (c0 + c) * p + j, &a, sizeof(V));
        }
      }
      for (std::ptrdiff_t j = pv; j < p; ++j)
        for (int c = 0; c < C; ++c) Cm[(c0 + c) * p + j] += ri[c] * xi[j];
    }
  }
}

__attribute__((target("avx2,fma"))) void rows_times_avx2(const float* X, std::ptrdiff_t ldx,
                                                         std::ptrdiff_t nrows, std::ptrdiff_t p,
                                                         const float* W, std::ptrdiff_t K,
                                                         float* out) {
  rows_times_run<v8f, 2, 4>(X, ldx, nrows, p, W, K, out);
}
__attribute__((target("avx512f,avx2,fma"))) void rows_times_avx512(
    const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows, std::ptrdiff_t p, const float* W,
    std::ptrdiff_t K, float* out) {
  rows_times_run<v16f, 4, 4>(X, ldx, nrows, p, W, K, out);
}
__attribute__((target("avx2,fma"))) void rows_crossprod_avx2(const float* X, std::ptrdiff_t ldx,
                                                             std::ptrdiff_t nrows,
                                                             std::ptrdiff_t p, const float* Rm,
                                                             std::ptrdiff_t K, float* Cm) {
  rows_crossprod_run<v8f, 4>(X, ldx, nrows, p, Rm, K, Cm);
}
__attribute__((target("avx512f,avx2,fma"))) void rows_crossprod_avx512(
    const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows, std::ptrdiff_t p, const float* Rm,
    std::ptrdiff_t K, float* Cm) {
  rows_crossprod_run<v16f, 4>(X, ldx, nrows, p, Rm, K, Cm);
}

// Columns j0 .. j0 + G - 1 of the symmetric product Y += (A + shift I) X, for a
// single-precision A (column-major, leading dimension lda, n x n, lower triangle read) and M
// double columns of X and Y, in double (each float converted exactly). Rows below the group
// are swept once for all G columns and M vectors: Y(i, c) += A(i, j) X(j, c) for the columns
// j in order, and the dot products A(i, j) X(i, c) in one vector of lanes per column and
// vector. Each column's dot product sums the rows inside the group's triangle first, then the
// lanes, then the rows past the last full vector: an order fixed by n and j0 alone.
template <class VD, class VF, int W, int M, int G>
__attribute__((always_inline)) inline void sym_group_run(const float* __restrict__ A,
                                                         std::ptrdiff_t lda, std::ptrdiff_t n,
                                                         std::ptrdiff_t j0, double shift,
                                                         const double* __restrict__ x,
                                                         std::ptrdiff_t ldx,
                                                         double* __restrict__ y,
                                                         std::ptrdiff_t ldy) {
  double dots[G][M], s[G][M];
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c) {
      dots[q][c] = 0.0;
      s[q][c] = x[c * ldx + j0 + q];
    }
  // the triangle inside the group
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
    for (std::ptrdiff_t i = j0 + q + 1; i < j0 + G; ++i) {
      const double a = static_cast<double>(A[i + (j0 + q) * lda]);
KL_UNROLL_ALL
      for (int c = 0; c < M; ++c) {
        y[c * ldy + i] += s[q][c] * a;
        dots[q][c] += a * x[c * ldx + i];
      }
    }
  const std::ptrdiff_t r0 = j0 + G, r = n - r0, rv = r > 0 ? r / W * W : 0;
  VD acc[G][M];
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c) acc[q][c] = VD{};
  const float* a0 = A + r0 + j0 * lda;
  const double* x0 = x + r0;
  double* y0 = y + r0;
  for (std::ptrdiff_t i = 0; i < rv; i += W) {
    VD xv[M], yv[M];
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c) {
      std::memcpy(&xv[c], x0 + c * ldx + i, sizeof(VD));
      std::memcpy(&yv[c], y0 + c * ldy + i, sizeof(VD));
    }
KL_UNROLL_ALL
    for (int q = 0; q < G; ++q) {
      VF af;
      std::memcpy(&af, a0 + q * lda + i, sizeof af);
      const VD av = __builtin_convertvector(af, VD);
KL_UNROLL_ALL
      for (int c = 0; c < M; ++c) {
        acc[q][c] += av * xv[c];
        yv[c] += s[q][c] * av;
      }
    }
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c) std::memcpy(y0 + c * ldy + i, &yv[c], sizeof(VD));
  }
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c)
KL_UNROLL_ALL
      for (int u = 0; u < W; ++u) dots[q][c] += acc[q][c][u];
  for (std::ptrdiff_t i = rv; i < r; ++i)
KL_UNROLL_ALL
    for (int q = 0; q < G; ++q) {
      const double a = static_cast<double>(a0[q * lda + i]);
KL_UNROLL_ALL
      for (int c = 0; c < M; ++c) {
        y0[c * ldy + i] += s[q][c] * a;
        dots[q][c] += a * x0[c * ldx + i];
      }
    }
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q) {
    const double djj = static_cast<double>(A[(j0 + q) * (lda + 1)]) + shift;
KL_UNROLL_ALL
    for (int c = 0; c < M; ++c) y[c * ldy + j0 + q] += dots[q][c] + djj * s[q][c];
  }
}

// sym_group_run for g (1 to 4) columns and m (1 to 4) vectors: groups of four columns (two
// with more than two vectors, so that the accumulators stay in registers), else column by
// column.
template <class VD, class VF, int W, int M>
__attribute__((always_inline)) inline void sym_columns_m(const float* A, std::ptrdiff_t lda,
                                                         std::ptrdiff_t n, std::ptrdiff_t j0,
                                                         int g, double shift, const double* x,
                                                         std::ptrdiff_t ldx, double* y,
                                                         std::ptrdiff_t ldy) {
  constexpr int G = M <= 2 ? 4 : 2;
  int q = 0;
  for (; q + G <= g; q += G) sym_group_run<VD, VF, W, M, G>(A, lda, n, j0 + q, shift, x, ldx, y, ldy);
  for (; q < g; ++q) sym_group_run<VD, VF, W, M, 1>(A, lda, n, j0 + q, shift, x, ldx, y, ldy);
}

template <class VD, class VF, int W>
__attribute__((always_inline)) inline void sym_columns_any(const float* A, std::ptrdiff_t lda,
                                                           std::ptrdiff_t n, std::ptrdiff_t j0,
                                                           int g, double shift,
                                                           const double* x, std::ptrdiff_t ldx,
                                                           double* y, std::ptrdiff_t ldy, int m) {
  switch (m) {
    case 1: return sym_columns_m<VD, VF, W, 1>(A, lda, n, j0, g, shift, x, ldx, y, ldy);
    case 2: return sym_columns_m<VD, VF, W, 2>(A, lda, n, j0, g, shift, x, ldx, y, ldy);
    case 3: return sym_columns_m<VD, VF, W, 3>(A, lda, n, j0, g, shift, x, ldx, y, ldy);
    default: return sym_columns_m<VD, VF, W, 4>(A, lda, n, j0, g, shift, x, ldx, y, ldy);
  }
}

// Two consecutive vectors of W elements at p, loaded or stored.
template <class V, class T, int W>
__attribute__((always_inline)) inline void load_pair(const T* p, V& v0, V& v1) {
  std::memcpy(&v0, p, sizeof(V));
  std::memcpy(&v1, p + W, sizeof(V));
}
template <class V, class T, int W>
__attribute__((always_inline)) inline void store_pair(T* p, const V& v0, const V& v1) {
  std::memcpy(p, &v0, sizeof(V));
  std::memcpy(p + W, &v1, sizeof(V));
}

// Y(0:n, j) -= sum_k A(0:n, k) Z(k, j) for G columns of A and M of Y: each element's terms
// subtracted one by one in order of k, as G M calls of axpy_sub_run would (vectors in pairs,
// then single elements), with Y read and written once for the G columns.
template <class V, class T, int W, int M, int G>
__attribute__((always_inline)) inline void axpy_group_run(T* __restrict__ y, std::ptrdiff_t ldy,
                                                          const T* __restrict__ a,
                                                          std::ptrdiff_t lda, const T* z,
                                                          std::ptrdiff_t ldz, std::ptrdiff_t n) {
  T c[G][M];
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) c[q][j] = z[q + j * ldz];
  std::ptrdiff_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V y0[M], y1[M];
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) load_pair<V, T, W>(y + j * ldy + i, y0[j], y1[j]);
KL_UNROLL_ALL
    for (int q = 0; q < G; ++q) {
      V a0, a1;
      load_pair<V, T, W>(a + q * lda + i, a0, a1);
KL_UNROLL_ALL
      for (int j = 0; j < M; ++j) {
        y0[j] -= c[q][j] * a0;
        y1[j] -= c[q][j] * a1;
      }
    }
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) store_pair<V, T, W>(y + j * ldy + i, y0[j], y1[j]);
  }
  for (; i < n; ++i)
KL_UNROLL_ALL
    for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
      for (int j = 0; j < M; ++j) y[j * ldy + i] -= c[q][j] * a[q * lda + i];
}

// D(k, j) = A(0:n, k)' X(0:n, j) for G columns of A and M of X, each the same sum as dot_run's
// (two vectors of lanes, added, then across the lanes, then the elements past them), with X
// read once for the G columns.
template <class V, class T, int W, int M, int G>
__attribute__((always_inline)) inline void dot_group_run(const T* __restrict__ a,
                                                         std::ptrdiff_t lda,
                                                         const T* __restrict__ x,
                                                         std::ptrdiff_t ldx, std::ptrdiff_t n,
                                                         T* d, std::ptrdiff_t ldd) {
  V s0[G][M], s1[G][M];
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) s0[q][j] = s1[q][j] = V{};
  std::ptrdiff_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V x0[M], x1[M];
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) load_pair<V, T, W>(x + j * ldx + i, x0[j], x1[j]);
KL_UNROLL_ALL
    for (int q = 0; q < G; ++q) {
      V a0, a1;
      load_pair<V, T, W>(a + q * lda + i, a0, a1);
KL_UNROLL_ALL
      for (int j = 0; j < M; ++j) {
        s0[q][j] += a0 * x0[j];
        s1[q][j] += a1 * x1[j];
      }
    }
  }
KL_UNROLL_ALL
  for (int q = 0; q < G; ++q)
KL_UNROLL_ALL
    for (int j = 0; j < M; ++j) {
      const V s = s0[q][j] + s1[q][j];
      T t = T(0);
KL_UNROLL_ALL
      for (int u = 0; u < W; ++u) t += s[u];
      for (std::ptrdiff_t k = i; k < n; ++k) t += a[q * lda + k] * x[j * ldx + k];
      d[q + j * ldd] = t;
    }
}

// The two above over K columns of A and m (1 to 4) vectors: groups of four columns (two with
// more than two vectors), then single columns.
template <class V, class T, int W, int M>
__attribute__((always_inline)) inline void cols_m(bool dots, T* y, std::ptrdiff_t ldy,
                                                  const T* a, std::ptrdiff_t lda,
                                                  std::ptrdiff_t K, const T* z,
                                                  std::ptrdiff_t ldz, std::ptrdiff_t n) {
  constexpr int G = M <= 2 ? 4 : 2;
  std::ptrdiff_t k = 0;
  for (; k + G <= K; k += G) {
    if (dots)
      dot_group_run<V, T, W, M, G>(a + k * lda, lda, z, ldz, n, y + k, ldy);
    else
      axpy_group_run<V, T, W, M, G>(y, ldy, a + k * lda, lda, z + k, ldz, n);
  }
  for (; k < K; ++k) {
    if (dots)
      dot_group_run<V, T, W, M, 1>(a + k * lda, lda, z, ldz, n, y + k, ldy);
    else
      axpy_group_run<V, T, W, M, 1>(y, ldy, a + k * lda, lda, z + k, ldz, n);
  }
}

template <class V, class T, int W>
__attribute__((always_inline)) inline void cols_any(bool dots, T* y, std::ptrdiff_t ldy, int m,
                                                    const T* a, std::ptrdiff_t lda,
                                                    std::ptrdiff_t K, const T* z,
                                                    std::ptrdiff_t ldz, std::ptrdiff_t n) {
  switch (m) {
    case 1: return cols_m<V, T, W, 1>(dots, y, ldy, a, lda, K, z, ldz, n);
    case 2: return cols_m<V, T, W, 2>(dots, y, ldy, a, lda, K, z, ldz, n);
    case 3: return cols_m<V, T, W, 3>(dots, y, ldy, a, lda, K, z, ldz, n);
    default: return cols_m<V, T, W, 4>(dots, y, ldy, a, lda, K, z, ldz, n);
  }
}

typedef float v4f __attribute__((vector_size(16)));

// y -= a x and x'y over n elements, two vectors a step; the dot product's lanes are summed at
// the end, so its order depends on n alone.
template <class V, class T, int W>
inline void axpy_sub_run(T* y, const T* x, T a, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V x0, x1, y0, y1;
    std::memcpy(&x0, x + i, sizeof x0);
    std::memcpy(&x1, x + i + W, sizeof x1);
    std::memcpy(&y0, y + i, sizeof y0);
    std::memcpy(&y1, y + i + W, sizeof y1);
    y0 -= a * x0;
    y1 -= a * x1;
    std::memcpy(y + i, &y0, sizeof y0);
    std::memcpy(y + i + W, &y1, sizeof y1);
  }
  for (; i < n; ++i) y[i] -= a * x[i];
}

template <class V, class T, int W>
inline T dot_run(const T* x, const T* y, std::ptrdiff_t n) {
  V s0 = V{}, s1 = V{};
  std::ptrdiff_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V x0, x1, y0, y1;
    std::memcpy(&x0, x + i, sizeof x0);
    std::memcpy(&x1, x + i + W, sizeof x1);
    std::memcpy(&y0, y + i, sizeof y0);
    std::memcpy(&y1, y + i + W, sizeof y1);
    s0 += x0 * y0;
    s1 += x1 * y1;
  }
  s0 += s1;
  T t = T(0);
  for (int u = 0; u < W; ++u) t += s0[u];
  for (; i < n; ++i) t += x[i] * y[i];
  return t;
}

__attribute__((target("avx2,fma"))) void axpy_sub_avx2(double* y, const double* x, double a,
                                                       std::ptrdiff_t n) {
  axpy_sub_run<v4d, double, 4>(y, x, a, n);
}
__attribute__((target("avx2,fma"))) void axpy_sub_avx2(float* y, const float* x, float a,
                                                       std::ptrdiff_t n) {
  axpy_sub_run<v8f, float, 8>(y, x, a, n);
}
__attribute__((target("avx512f,avx2,fma"))) void axpy_sub_avx512(double* y, const double* x,
                                                                 double a, std::ptrdiff_t n) {
  axpy_sub_run<v8d, double, 8>(y, x, a, n);
}
__attribute__((target("avx512f,avx2,fma"))) void axpy_sub_avx512(float* y, const float* x,
                                                                 float a, std::ptrdiff_t n) {
  axpy_sub_run<v16f, float, 16>(y, x, a, n);
}
__attribute__((target("avx2,fma"))) double dot_avx2(const double* x, const double* y,
                                                    std::ptrdiff_t n) {
  return dot_run<v4d, double, 4>(x, y, n);
}
__attribute__((target("avx2,fma"))) float dot_avx2(const float* x, const float* y,
                                                   std::ptrdiff_t n) {
  return dot_run<v8f, float, 8>(x, y, n);
}
__attribute__((target("avx512f,avx2,fma"))) double dot_avx512(const double* x, const double* y,
                                                              std::ptrdiff_t n) {
  return dot_run<v8d, double, 8>(x, y, n);
}
__attribute__((target("avx512f,avx2,fma"))) float dot_avx512(const float* x, const float* y,
                                                             std::ptrdiff_t n) {
  return dot_run<v16f, float, 16>(x, y, n);
}

__attribute__((target("avx2,fma"))) void sym_columns_avx2(const float* A, std::ptrdiff_t lda,
                                                          std::ptrdiff_t n, std::ptrdiff_t j0,
                                                          int g, double shift, const double* x,
                                                          std::ptrdiff_t ldx, double* y,
                                                          std::ptrdiff_t ldy, int m) {
  sym_columns_any<v4d, v4f, 4>(A, lda, n, j0, g, shift, x, ldx, y, ldy, m);
}
__attribute__((target("avx512f,avx2,fma"))) void sym_columns_avx512(
    const float* A, std::ptrdiff_t lda, std::ptrdiff_t n, std::ptrdiff_t j0, int g, double shift,
    const double* x, std::ptrdiff_t ldx, double* y, std::ptrdiff_t ldy, int m) {
  sym_columns_any<v8d, v8f, 8>(A, lda, n, j0, g, shift, x, ldx, y, ldy, m);
}

// cols_any for each element type and instruction set (dots: dot_cols, else axpy_sub_cols)
__attribute__((target("avx2,fma"))) void cols_avx2(bool dots, double* y, std::ptrdiff_t ldy,
                                                   int m, const double* a, std::ptrdiff_t lda,
                                                   std::ptrdiff_t K, const double* z,
                                                   std::ptrdiff_t ldz, std::ptrdiff_t n) {
  cols_any<v4d, double, 4>(dots, y, ldy, m, a, lda, K, z, ldz, n);
}
__attribute__((target("avx2,fma"))) void cols_avx2(bool dots, float* y, std::ptrdiff_t ldy,
                                                   int m, const float* a, std::ptrdiff_t lda,
                                                   std::ptrdiff_t K, const float* z,
                                                   std::ptrdiff_t ldz, std::ptrdiff_t n) {
  cols_any<v8f, float, 8>(dots, y, ldy, m, a, lda, K, z, ldz, n);
}
__attribute__((target("avx512f,avx2,fma"))) void cols_avx512(bool dots, double* y,
                                                             std::ptrdiff_t ldy, int m,
                                                             const double* a, std::ptrdiff_t lda,
                                                             std::ptrdiff_t K, const double* z,
                                                             std::ptrdiff_t ldz, std::ptrdiff_t n) {
  cols_any<v8d, double, 8>(dots, y, ldy, m, a, lda, K, z, ldz, n);
}
__attribute__((target("avx512f,avx2,fma"))) void cols_avx512(bool dots, float* y,
                                                             std::ptrdiff_t ldy, int m,
                                                             const float* a, std::ptrdiff_t lda,
                                                             std::ptrdiff_t K, const float* z,
                                                             std::ptrdiff_t ldz, std::ptrdiff_t n) {
  cols_any<v16f, float, 16>(dots, y, ldy, m, a, lda, K, z, ldz, n);
}
#endif

SimdLevel detect_cpu() {
#ifdef KL_SIMD_X86
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return SimdLevel::none;
  if (__builtin_cpu_supports("avx512f")) return SimdLevel::avx512;
  return SimdLevel::avx2;
#else
  return SimdLevel::none;
#endif
}

// The processor's level, capped by the environment variable KERNLEARN_SIMD ("none", "avx2" or
// "avx512"; read once per process): "none" runs the portable baseline path everywhere, as on
// a processor without AVX2, for testing it and for comparing results.
SimdLevel detect() {
  const SimdLevel cpu = detect_cpu();
  const char* cap = std::getenv("KERNLEARN_SIMD");
  if (cap == nullptr) return cpu;
  SimdLevel want = cpu;
  if (std::strcmp(cap, "none") == 0) want = SimdLevel::none;
  else if (std::strcmp(cap, "avx2") == 0) want = SimdLevel::avx2;
  else if (std::strcmp(cap, "avx512") == 0) want = SimdLevel::avx512;
  return std::min(cpu, want);
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = detect();
  return level;
}

namespace {
template <class T>
void trsm_right_lower_t_impl(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, const T* L,
                             std::ptrdiff_t ldl, T* B, std::ptrdiff_t ldb) {
  if (level == SimdLevel::none || level > simd_level())
    throw Error("trsm: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512)
    trsm_rlt_avx512(m, n, L, ldl, B, ldb);
  else
    trsm_rlt_avx2(m, n, L, ldl, B, ldb);
#else
  (void)m; (void)n; (void)L; (void)ldl; (void)B; (void)ldb;
#endif
}
}  // namespace

void trsm_right_lower_t(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, const double* L,
                        std::ptrdiff_t ldl, double* B, std::ptrdiff_t ldb) {
  trsm_right_lower_t_impl(level, m, n, L, ldl, B, ldb);
}

void trsm_right_lower_t(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, const float* L,
                        std::ptrdiff_t ldl, float* B, std::ptrdiff_t ldb) {
  trsm_right_lower_t_impl(level, m, n, L, ldl, B, ldb);
}

std::ptrdiff_t skinny_class_block() { return 4; }

void rows_times_f32(SimdLevel level, const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                    std::ptrdiff_t p, const float* W, std::ptrdiff_t K, float* out) {
  if (level == SimdLevel::none || level > simd_level() || K % skinny_class_block() != 0)
    throw Error("rows_times_f32: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512)
    rows_times_avx512(X, ldx, nrows, p, W, K, out);
  else
    rows_times_avx2(X, ldx, nrows, p, W, K, out);
#else
  (void)X; (void)ldx; (void)nrows; (void)p; (void)W; (void)out;
#endif
}

void rows_crossprod_f32(SimdLevel level, const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                        std::ptrdiff_t p, const float* R, std::ptrdiff_t K, float* C) {
  if (level == SimdLevel::none || level > simd_level() || K % skinny_class_block() != 0)
    throw Error("rows_crossprod_f32: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512)
    rows_crossprod_avx512(X, ldx, nrows, p, R, K, C);
  else
    rows_crossprod_avx2(X, ldx, nrows, p, R, K, C);
#else
  (void)X; (void)ldx; (void)nrows; (void)p; (void)R; (void)C;
#endif
}

namespace {
template <class T>
void axpy_sub_impl(SimdLevel level, T* y, const T* x, T a, std::ptrdiff_t n) {
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512) return axpy_sub_avx512(y, x, a, n);
  if (level == SimdLevel::avx2) return axpy_sub_avx2(y, x, a, n);
#endif
  (void)level;
  for (std::ptrdiff_t i = 0; i < n; ++i) y[i] -= a * x[i];
}
template <class T>
T dot_impl(SimdLevel level, const T* x, const T* y, std::ptrdiff_t n) {
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512) return dot_avx512(x, y, n);
  if (level == SimdLevel::avx2) return dot_avx2(x, y, n);
#endif
  (void)level;
  T t = T(0);
  for (std::ptrdiff_t i = 0; i < n; ++i) t += x[i] * y[i];
  return t;
}
}  // namespace

void axpy_sub(SimdLevel level, double* y, const double* x, double a, std::ptrdiff_t n) {
  axpy_sub_impl(level, y, x, a, n);
}
void axpy_sub(SimdLevel level, float* y, const float* x, float a, std::ptrdiff_t n) {
  axpy_sub_impl(level, y, x, a, n);
}
double dot(SimdLevel level, const double* x, const double* y, std::ptrdiff_t n) {
  return dot_impl(level, x, y, n);
}
float dot(SimdLevel level, const float* x, const float* y, std::ptrdiff_t n) {
  return dot_impl(level, x, y, n);
}

void sym_columns_f32(SimdLevel level, const float* A, std::ptrdiff_t lda, std::ptrdiff_t n,
                     std::ptrdiff_t j0, int g, double shift, const double* x, std::ptrdiff_t ldx,
                     double* y, std::ptrdiff_t ldy, int m) {
  if (m < 1 || m > 4 || g < 1 || g > 4 || j0 < 0 || j0 + g > n)
    throw Error("sym_columns_f32: 1 to 4 columns inside the matrix and 1 to 4 vectors");
  if (level > simd_level())
    throw Error("sym_columns_f32: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512) return sym_columns_avx512(A, lda, n, j0, g, shift, x, ldx, y, ldy, m);
  if (level == SimdLevel::avx2) return sym_columns_avx2(A, lda, n, j0, g, shift, x, ldx, y, ldy, m);
#endif
  for (std::ptrdiff_t j = j0; j < j0 + g; ++j)
    for (int c = 0; c < m; ++c) {
      const double sj = x[c * ldx + j];
      double t = 0.0;
      for (std::ptrdiff_t i = j + 1; i < n; ++i) {
        const double a = static_cast<double>(A[i + j * lda]);
        y[c * ldy + i] += sj * a;
        t += a * x[c * ldx + i];
      }
      y[c * ldy + j] += t + (static_cast<double>(A[j * (lda + 1)]) + shift) * sj;
    }
}

namespace {
template <class T>
void cols_impl(SimdLevel level, bool dots, T* y, std::ptrdiff_t ldy, int m, const T* a,
               std::ptrdiff_t lda, std::ptrdiff_t K, const T* z, std::ptrdiff_t ldz,
               std::ptrdiff_t n) {
  if (m < 1 || m > 4) throw Error("axpy_sub_cols / dot_cols: 1 to 4 vectors");
  if (level > simd_level())
    throw Error("axpy_sub_cols / dot_cols: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  if (level == SimdLevel::avx512) return cols_avx512(dots, y, ldy, m, a, lda, K, z, ldz, n);
  if (level == SimdLevel::avx2) return cols_avx2(dots, y, ldy, m, a, lda, K, z, ldz, n);
#endif
  for (std::ptrdiff_t k = 0; k < K; ++k)
    for (int j = 0; j < m; ++j) {
      if (dots)
        y[k + j * ldy] = dot_impl(SimdLevel::none, a + k * lda, z + j * ldz, n);
      else
        axpy_sub_impl(SimdLevel::none, y + j * ldy, a + k * lda, z[k + j * ldz], n);
    }
}
}  // namespace

void axpy_sub_cols(SimdLevel level, double* Y, std::ptrdiff_t ldy, int m, const double* A,
                   std::ptrdiff_t lda, std::ptrdiff_t K, const double* Z, std::ptrdiff_t ldz,
                   std::ptrdiff_t n) {
  cols_impl(level, false, Y, ldy, m, A, lda, K, Z, ldz, n);
}
void axpy_sub_cols(SimdLevel level, float* Y, std::ptrdiff_t ldy, int m, const float* A,
                   std::ptrdiff_t lda, std::ptrdiff_t K, const float* Z, std::ptrdiff_t ldz,
                   std::ptrdiff_t n) {
  cols_impl(level, false, Y, ldy, m, A, lda, K, Z, ldz, n);
}
void dot_cols(SimdLevel level, const double* A, std::ptrdiff_t lda, std::ptrdiff_t K,
              const double* X, std::ptrdiff_t ldx, int m, std::ptrdiff_t n, double* D,
              std::ptrdiff_t ldd) {
  cols_impl(level, true, D, ldd, m, A, lda, K, X, ldx, n);
}
void dot_cols(SimdLevel level, const float* A, std::ptrdiff_t lda, std::ptrdiff_t K,
              const float* X, std::ptrdiff_t ldx, int m, std::ptrdiff_t n, float* D,
              std::ptrdiff_t ldd) {
  cols_impl(level, true, D, ldd, m, A, lda, K, X, ldx, n);
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::avx2: return "avx2";
    default: return "none";
  }
}

namespace {

// C = A B, or C -= A B when `subtract` (through A packed negated, which changes no rounding).
template <class T>
void gemm_block_impl(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                     const T* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const T* B,
                     std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, T* C, std::ptrdiff_t cs_i,
                     std::ptrdiff_t cs_j, bool subtract = false) {
  if (level == SimdLevel::none || level > simd_level())
    throw Error("gemm_block: this processor lacks the requested instructions");
  if (kdim == 0) {
    // an empty sum: the product is zero (and subtracting it changes nothing)
    if (!subtract)
      for (std::ptrdiff_t j = 0; j < n; ++j)
        for (std::ptrdiff_t i = 0; i < m; ++i) C[i * cs_i + j * cs_j] = T(0);
    return;
  }
#ifdef KL_SIMD_X86
  if (cs_i == 1 && cs_j != 1) {
    // A column-major C is the row-major C' = B'A': computed that way, the tile is copied out
    // row by row. Every element is the same sum over k in the same order.
    gemm_block_impl(level, n, m, kdim, B, bs_j, bs_k, A, as_k, as_i, C, cs_j, std::ptrdiff_t(1),
                    subtract);
    return;
  }
  // Micro-tiles of 6 rows by two vectors: 64 or 32 bytes each. For each block of kKc values of
  // k: B packed whole, then blocks of kMc rows of A packed (sized for the core's L2 cache),
  // each swept by every panel of B. Full micro-tiles of a row-major C are summed in place;
  // the others go through a small buffer. Every element is the same sum over k in the same
  // order either way, whatever the tile.
  const int nr = static_cast<int>((level == SimdLevel::avx512 ? 128 : 64) / sizeof(T));
  const std::ptrdiff_t np = (n + nr - 1) / nr * nr;
  const std::ptrdiff_t mc = std::min<std::ptrdiff_t>((m + kMr - 1) / kMr * kMr, kMc);
  // the packed panels in this thread's scratch memory (base/scratch.hpp)
  T* const Ap = thread_scratch<GemmPackedA, T>(static_cast<std::size_t>(mc * kKc));
  T* const Bp = thread_scratch<GemmPackedB, T>(static_cast<std::size_t>(np * kKc));
  T edge[kMr * 32];
  const bool direct = cs_j == 1;
  for (std::ptrdiff_t k0 = 0; k0 < kdim; k0 += kKc) {
    const std::ptrdiff_t kc = std::min(kKc, kdim - k0);
    const bool first = k0 == 0 && !subtract;
    pack(B, bs_j, bs_k, 0, n, k0, kc, nr, Bp);
    for (std::ptrdiff_t i0 = 0; i0 < m; i0 += mc) {
      const std::ptrdiff_t mb = std::min(mc, m - i0);
      pack(A, as_i, as_k, i0, mb, k0, kc, kMr, Ap);
      if (subtract)
        negate(Ap, (mb + kMr - 1) / kMr * kMr * kc);
      const std::ptrdiff_t panels = (mb + kMr - 1) / kMr;
      for (std::ptrdiff_t q = 0; q < np / nr; ++q) {
        const T* Bq = Bp + q * kc * nr;
        const std::ptrdiff_t j0 = q * nr, nj = std::min<std::ptrdiff_t>(nr, n - j0);
        for (std::ptrdiff_t r = 0; r < panels; ++r) {
          const T* Ar = Ap + r * kc * kMr;
          const std::ptrdiff_t ia = i0 + r * kMr, ni = std::min<std::ptrdiff_t>(kMr, m - ia);
          const bool full = direct && ni == kMr && nj == nr;
          T* Cr = full ? C + ia * cs_i + j0 : edge;
          const std::ptrdiff_t ldc = full ? cs_i : nr;
          if (level == SimdLevel::avx512)
            kernel_avx512(kc, Ar, Bq, Cr, ldc, first || !full);
          else
            kernel_avx2(kc, Ar, Bq, Cr, ldc, first || !full);
          if (full) continue;
          for (std::ptrdiff_t i = 0; i < ni; ++i) {
            for (std::ptrdiff_t j = 0; j < nj; ++j) {
              T& c = C[(ia + i) * cs_i + (j0 + j) * cs_j];
              c = first ? edge[i * nr + j] : c + edge[i * nr + j];
            }
          }
        }
      }
    }
  }
#else
  (void)m; (void)n; (void)kdim; (void)A; (void)as_i; (void)as_k; (void)B; (void)bs_k;
  (void)bs_j; (void)C; (void)cs_i; (void)cs_j;
#endif
}

#ifdef KL_SIMD_X86
// The columns of X (nrows x p, X(k, j) = X[k * sr + j * sc]) in blocks of `tile`, each packed
// once for all the tile products that use it, in both operand layouts: panels of kMr columns
// (negated when asked: a product subtracted) and panels of the kernel's width, slice by slice
// of kKc rows. Packing inside each tile's product would pack every block once per tile of its
// row and once per tile of its column.
template <class T>
struct PackedBlocks {
  std::ptrdiff_t nr = 0, tile = 0, p = 0, nrows = 0, nt = 0, ns = 0;
  std::vector<std::ptrdiff_t> offa, offb;
  T* Pa = nullptr;
  T* Pb = nullptr;

  // The panels are held in `store`, grown as needed and kept by the caller for the next call
  // (a fresh allocation of this size is new pages, which the system clears each time).
  PackedBlocks(SimdLevel level, const T* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
               std::ptrdiff_t nrows_, std::ptrdiff_t p_, std::ptrdiff_t tile_, bool negate_a,
               int threads, std::vector<T>& store)
      : nr((level == SimdLevel::avx512 ? 128 : 64) / static_cast<std::ptrdiff_t>(sizeof(T))),
        tile(tile_), p(p_), nrows(nrows_), nt((p_ + tile_ - 1) / tile_),
        ns((nrows_ + kKc - 1) / kKc) {
    offa.assign(static_cast<std::size_t>(nt + 1), 0);
    offb = offa;
    for (std::ptrdiff_t b = 0; b < nt; ++b) {
      offa[static_cast<std::size_t>(b + 1)] = offa[static_cast<std::size_t>(b)] + rows_a(b) * nrows;
      offb[static_cast<std::size_t>(b + 1)] = offb[static_cast<std::size_t>(b)] + cols_b(b) * nrows;
    }
    const std::size_t need = static_cast<std::size_t>(offa.back() + offb.back());
    if (store.size() < need) store.resize(need);
    Pa = store.data();
    Pb = store.data() + offa.back();
    const long npack = static_cast<long>(nt * ns);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (npack > 1)
#else
    (void)threads;
#endif
    for (long t = 0; t < npack; ++t) {
      const std::ptrdiff_t b = t / ns, k0 = (t % ns) * kKc, kc = std::min(kKc, nrows - k0);
      T* pa = Pa + offa[static_cast<std::size_t>(b)] + rows_a(b) * k0;
      pack(X, sc, sr, b * tile, width(b), k0, kc, kMr, pa);
      if (negate_a)
        negate(pa, rows_a(b) * kc);
      pack(X, sc, sr, b * tile, width(b), k0, kc, static_cast<int>(nr),
           Pb + offb[static_cast<std::size_t>(b)] + cols_b(b) * k0);
    }
  }
  std::ptrdiff_t width(std::ptrdiff_t b) const { return std::min(tile, p - b * tile); }
  std::ptrdiff_t rows_a(std::ptrdiff_t b) const { return (width(b) + kMr - 1) / kMr * kMr; }
  std::ptrdiff_t cols_b(std::ptrdiff_t b) const { return (width(b) + nr - 1) / nr * nr; }
  std::ptrdiff_t slice(std::ptrdiff_t s) const { return std::min(kKc, nrows - s * kKc); }
  const T* a_panels(std::ptrdiff_t b, std::ptrdiff_t s) const {
    return Pa + offa[static_cast<std::size_t>(b)] + rows_a(b) * s * kKc;
  }
  const T* b_panels(std::ptrdiff_t b, std::ptrdiff_t s) const {
    return Pb + offb[static_cast<std::size_t>(b)] + cols_b(b) * s * kKc;
  }

  // f(a, b, C) for each tile (a, b), b <= a, of the lower triangle of blocks, in parallel
  // over tiles; C is a buffer of the calling thread, big enough for any tile's product.
  template <class F>
  void for_lower_tiles(int threads, const F& f) const {
    std::vector<std::pair<std::ptrdiff_t, std::ptrdiff_t>> tiles;
    for (std::ptrdiff_t a = 0; a < nt; ++a)
      for (std::ptrdiff_t b = 0; b <= a; ++b) tiles.emplace_back(a, b);
    const long ntasks = static_cast<long>(tiles.size());
#ifdef _OPENMP
#pragma omp parallel num_threads(clamp_threads(threads)) if (ntasks > 1)
#else
    (void)threads;
#endif
    {
      T* const C = thread_scratch<LowerTileBuffer, T>(static_cast<std::size_t>(rows_a(0) * cols_b(0)));
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
      for (long t = 0; t < ntasks; ++t)
        f(tiles[static_cast<std::size_t>(t)].first, tiles[static_cast<std::size_t>(t)].second, C);
    }
  }

  // The product of block a (rows of C, A layout) and block b (columns of C, B layout) over
  // slice s into the row-major C (leading dimension ldc): micro-tiles that are whole inside
  // `rows` x `cols` are summed in place (stored when `first`), the others added through a
  // small buffer. For each element, the same sums in the same order as gemm_block_impl.
  // With `upper`, micro-tiles wholly below the diagonal of C are left out (a tile on the
  // diagonal of a symmetric product, of which only the upper triangle of C is used).
  void product(SimdLevel level, std::ptrdiff_t a, std::ptrdiff_t b, std::ptrdiff_t s, T* C,
               std::ptrdiff_t ldc, std::ptrdiff_t rows, std::ptrdiff_t cols, bool first,
               bool upper = false) const {
    const std::ptrdiff_t kc = slice(s), panels_a = rows_a(a) / kMr, panels_b = cols_b(b) / nr;
    const T* Ak = a_panels(a, s);
    const T* Bk = b_panels(b, s);
    const std::ptrdiff_t group = kMc / kMr;  // A panels swept by each B panel (kept in L2)
    T edge[kMr * 32];
    for (std::ptrdiff_t r0 = 0; r0 < panels_a; r0 += group) {
      const std::ptrdiff_t r1 = std::min(panels_a, r0 + group);
      for (std::ptrdiff_t q = 0; q < panels_b; ++q) {
        const T* Bq = Bk + q * kc * nr;
        const std::ptrdiff_t nj = std::min(nr, cols - q * nr);
        for (std::ptrdiff_t r = r0; r < r1; ++r) {
          const std::ptrdiff_t ni = std::min<std::ptrdiff_t>(kMr, rows - r * kMr);
          if (ni <= 0 || nj <= 0) continue;
          if (upper && q * nr + nr <= r * kMr) continue;
          const bool full = ni == kMr && nj == nr;
          T* Cr = full ? C + r * kMr * ldc + q * nr : edge;
          const std::ptrdiff_t ld = full ? ldc : nr;
          if (level == SimdLevel::avx512)
            kernel_avx512(kc, Ak + r * kc * kMr, Bq, Cr, ld, first || !full);
          else
            kernel_avx2(kc, Ak + r * kc * kMr, Bq, Cr, ld, first || !full);
          if (full) continue;
          for (std::ptrdiff_t i = 0; i < ni; ++i) {
            T* ci = C + (r * kMr + i) * ldc + q * nr;
            for (std::ptrdiff_t j = 0; j < nj; ++j) ci[j] = first ? edge[i * nr + j] : ci[j] + edge[i * nr + j];
          }
        }
      }
    }
  }
};
#endif

// The vectorised path of add_crossprod_lower: each tile (a, b) of the lower triangle sums its
// product over the slices of each group of `group` slices in order into a tile of T, held
// transposed (row j, column i: the column of G it is added to is contiguous), and adds it to
// G before the next group, which then finds that part of G in the cache. Tiles on the
// diagonal leave out the micro-tiles above it.
template <class T>
void add_crossprod_lower_packed(SimdLevel level, const T* X, std::ptrdiff_t sr,
                                std::ptrdiff_t sc, std::ptrdiff_t nrows, std::ptrdiff_t p,
                                std::ptrdiff_t tile, MatRef G, int threads,
                                std::vector<T>& store, std::ptrdiff_t group) {
#ifdef KL_SIMD_X86
  const PackedBlocks<T> P(level, X, sr, sc, nrows, p, tile, false, threads, store);
  P.for_lower_tiles(threads, [&](std::ptrdiff_t a, std::ptrdiff_t b, T* C) {
    const std::ptrdiff_t wi = P.width(a), wj = P.width(b), ldc = P.cols_b(a);
    const std::ptrdiff_t i0 = a * tile, j0 = b * tile;
    const bool diagonal = a == b;
    for (std::ptrdiff_t s0 = 0; s0 < P.ns; s0 += group) {
      const std::ptrdiff_t s1 = std::min(P.ns, s0 + group);
      // C(j, i) = sum_k X(k, j0 + j) X(k, i0 + i): the same products and sums as with the
      // roles of the blocks the other way round
      for (std::ptrdiff_t s = s0; s < s1; ++s)
        P.product(level, b, a, s, C, ldc, wj, wi, s == s0, diagonal);
      for (std::ptrdiff_t j = 0; j < wj; ++j) {
        double* g = &G(i0, j0 + j);
        const T* c = C + j * ldc;
        for (std::ptrdiff_t i = diagonal ? j : 0; i < wi; ++i) g[i] += static_cast<double>(c[i]);
      }
    }
  });
#else
  (void)level; (void)X; (void)sr; (void)sc; (void)nrows; (void)p; (void)tile; (void)G;
  (void)threads; (void)store; (void)group;
#endif
}

// The trailing update of a blocked Cholesky step: A22 -= A21 A21' on the lower triangle of
// tiles (tiles on the diagonal: their lower triangle), A21 = A(r0:N, c0:c0 + kb) of the
// column-major A (leading dimension ld), A22 = A(r0:N, r0:N). Tiles off the diagonal are
// updated in place slice by slice, the diagonal ones through a tile summed over all slices;
// both with the sums, in the same order, of a product of the blocks subtracted.
template <class T>
void cholesky_update_impl(SimdLevel level, T* A, std::ptrdiff_t ld, std::ptrdiff_t N,
                          std::ptrdiff_t c0, std::ptrdiff_t kb, std::ptrdiff_t r0,
                          std::ptrdiff_t tile, int threads, std::vector<T>& store) {
  if (level == SimdLevel::none || level > simd_level())
    throw Error("cholesky_update: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  const std::ptrdiff_t rest = N - r0;
  if (rest <= 0 || kb <= 0) return;
  // A21' as a row-major kb x rest matrix: element (k, i) = A(r0 + i, c0 + k)
  const PackedBlocks<T> P(level, A + r0 + c0 * ld, ld, 1, kb, rest, tile, true, threads, store);
  // rows of C are columns of A22 (block b, A layout), its columns rows of A22 (block a)
  P.for_lower_tiles(threads, [&](std::ptrdiff_t a, std::ptrdiff_t b, T* C) {
    const std::ptrdiff_t wi = P.width(a), wj = P.width(b);
    const std::ptrdiff_t i0 = r0 + a * tile, j0 = r0 + b * tile;
    if (a != b) {
      // C(r, c) = A(i0 + c, j0 + r): row r of C is column j0 + r of A
      for (std::ptrdiff_t s = 0; s < P.ns; ++s)
        P.product(level, b, a, s, A + i0 + j0 * ld, ld, wj, wi, false);
      return;
    }
    const std::ptrdiff_t ldc = P.cols_b(a);
    for (std::ptrdiff_t s = 0; s < P.ns; ++s)
      P.product(level, b, a, s, C, ldc, wj, wi, s == 0, true);
    for (std::ptrdiff_t j = 0; j < wj; ++j)
      add_to(A + (i0 + j) + (j0 + j) * ld, C + j * ldc + j, wi - j);
  });
#else
  (void)A; (void)ld; (void)N; (void)c0; (void)kb; (void)r0; (void)tile; (void)threads;
  (void)store;
#endif
}

template <class T>
void add_crossprod_lower_impl(SimdLevel level, const T* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
                              std::ptrdiff_t nrows, std::ptrdiff_t p, std::ptrdiff_t tile,
                              MatRef G, int threads, std::vector<T>* store,
                              std::ptrdiff_t sum_rows) {
  if (level > simd_level())
    throw Error("add_crossprod_lower: this processor lacks the requested instructions");
  if (sum_rows <= 0 || sum_rows > nrows) sum_rows = nrows;
  if (level != SimdLevel::none && nrows > 0 && p > 0) {
    if (sum_rows % kKc != 0 && sum_rows != nrows)
      throw Error("add_crossprod_lower: rows per sum must be a multiple of the slice");
    std::vector<T> own;
    add_crossprod_lower_packed(level, X, sr, sc, nrows, p, tile, G, threads, store ? *store : own,
                               std::max<std::ptrdiff_t>(1, (sum_rows + kKc - 1) / kKc));
    return;
  }
  if (sum_rows < nrows) {
    for (std::ptrdiff_t r0 = 0; r0 < nrows; r0 += sum_rows)
      add_crossprod_lower_impl(level, X + r0 * sr, sr, sc, std::min(sum_rows, nrows - r0), p,
                               tile, G, threads, store, sum_rows);
    return;
  }
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const std::ptrdiff_t nt = (p + tile - 1) / tile;
  std::vector<std::pair<std::ptrdiff_t, std::ptrdiff_t>> tiles;
  for (std::ptrdiff_t a = 0; a < nt; ++a)
    for (std::ptrdiff_t b = 0; b <= a; ++b) tiles.emplace_back(a * tile, b * tile);
  const long ntasks = static_cast<long>(tiles.size());
  const Eigen::Map<const MT, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>> M(
      X, nrows, p, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(sc, sr));
#ifndef _OPENMP
  (void)threads;
#endif
  {
    // the tiles are the parallel work: each product on its thread alone, so that its blocking
    // (and the order of its sums) does not depend on the thread count
    const EigenSerial eigen_serial(true);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (ntasks > 1)
#endif
    for (long t = 0; t < ntasks; ++t) {
      const std::ptrdiff_t i0 = tiles[static_cast<std::size_t>(t)].first;
      const std::ptrdiff_t j0 = tiles[static_cast<std::size_t>(t)].second;
      const std::ptrdiff_t wi = std::min(tile, p - i0), wj = std::min(tile, p - j0);
      MT prod(wi, wj);
      if (level != SimdLevel::none)  // prod(i, j) = sum_k X(k, i0 + i) X(k, j0 + j)
        gemm_block_impl(level, wi, wj, nrows, X + i0 * sc, sc, sr, X + j0 * sc, sr, sc,
                        prod.data(), std::ptrdiff_t(1), wi);
      else
        prod.noalias() = M.middleCols(i0, wi).transpose() * M.middleCols(j0, wj);
      G.block(i0, j0, wi, wj) += prod.template cast<double>();
    }
  }
}

}  // namespace

void add_crossprod_lower(SimdLevel level, const float* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
                         std::ptrdiff_t nrows, std::ptrdiff_t p, std::ptrdiff_t tile, MatRef G,
                         int threads, std::vector<float>* store, std::ptrdiff_t sum_rows) {
  add_crossprod_lower_impl(level, X, sr, sc, nrows, p, tile, G, threads, store, sum_rows);
}

void add_crossprod_lower(SimdLevel level, const double* X, std::ptrdiff_t sr, std::ptrdiff_t sc,
                         std::ptrdiff_t nrows, std::ptrdiff_t p, std::ptrdiff_t tile, MatRef G,
                         int threads, std::vector<double>* store, std::ptrdiff_t sum_rows) {
  add_crossprod_lower_impl(level, X, sr, sc, nrows, p, tile, G, threads, store, sum_rows);
}

void cholesky_update(SimdLevel level, double* A, std::ptrdiff_t ld, std::ptrdiff_t N,
                     std::ptrdiff_t c0, std::ptrdiff_t kb, std::ptrdiff_t r0, std::ptrdiff_t tile,
                     int threads, std::vector<double>& store) {
  cholesky_update_impl(level, A, ld, N, c0, kb, r0, tile, threads, store);
}

void cholesky_update(SimdLevel level, float* A, std::ptrdiff_t ld, std::ptrdiff_t N,
                     std::ptrdiff_t c0, std::ptrdiff_t kb, std::ptrdiff_t r0, std::ptrdiff_t tile,
                     int threads, std::vector<float>& store) {
  cholesky_update_impl(level, A, ld, N, c0, kb, r0, tile, threads, store);
}

void gemm_block(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t cs_i,
                std::ptrdiff_t cs_j) {
  gemm_block_impl(level, m, n, kdim, A, as_i, as_k, B, bs_k, bs_j, C, cs_i, cs_j);
}

void gemm_block_sub(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                    const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                    std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t cs_i,
                    std::ptrdiff_t cs_j) {
  gemm_block_impl(level, m, n, kdim, A, as_i, as_k, B, bs_k, bs_j, C, cs_i, cs_j, true);
}

void gemm_block_sub(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                    const float* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const float* B,
                    std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, float* C, std::ptrdiff_t cs_i,
                    std::ptrdiff_t cs_j) {
  gemm_block_impl(level, m, n, kdim, A, as_i, as_k, B, bs_k, bs_j, C, cs_i, cs_j, true);
}

void gemm_parallel(SimdLevel level, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t kdim,
                   const double* A, std::ptrdiff_t as_i, std::ptrdiff_t as_k, const double* B,
                   std::ptrdiff_t bs_k, std::ptrdiff_t bs_j, double* C, std::ptrdiff_t ldc,
                   int threads) {
  if (level == SimdLevel::none || level > simd_level())
    throw Error("gemm_parallel: this processor lacks the requested instructions");
#ifndef _OPENMP
  (void)threads;
#endif
  const std::ptrdiff_t tile = 512;
  const std::ptrdiff_t tm = (m + tile - 1) / tile, tn = (n + tile - 1) / tile;
  const long ntasks = static_cast<long>(tm * tn);
  {
    // the tiles are the parallel work: each product on its thread alone, so that its blocking
    // (and the order of its sums) does not depend on the thread count
    const EigenSerial eigen_serial(true);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (ntasks > 1)
#endif
    for (long t = 0; t < ntasks; ++t) {
      const std::ptrdiff_t i0 = (t / tn) * tile, j0 = (t % tn) * tile;
      const std::ptrdiff_t wi = std::min(tile, m - i0), wj = std::min(tile, n - j0);
      gemm_block_impl(level, wi, wj, kdim, A + i0 * as_i, as_i, as_k, B + j0 * bs_j, bs_k, bs_j,
                      C + i0 + j0 * ldc, std::ptrdiff_t(1), ldc);
    }
  }
}

void mirror_lower(double* g, std::ptrdiff_t ld, std::ptrdiff_t p, int threads) {
  const std::ptrdiff_t b = 64;
  const long nb = static_cast<long>((p + b - 1) / b);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (nb > 1)
#else
  (void)threads;
#endif
  for (long jb = nb - 1; jb >= 0; --jb) {  // the long block columns first
    const std::ptrdiff_t j0 = jb * b, j1 = std::min(p, j0 + b);
    for (std::ptrdiff_t i0 = 0; i0 < j1; i0 += b) {
      const std::ptrdiff_t i1 = std::min(j1, i0 + b);
      for (std::ptrdiff_t j = j0; j < j1; ++j)
        for (std::ptrdiff_t i = i0; i < std::min(i1, j); ++i) g[i + j * ld] = g[j + i * ld];
    }
  }
}

}  // namespace kl
