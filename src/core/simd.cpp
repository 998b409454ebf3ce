#include "simd.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common.hpp"

namespace kl {
namespace {

const std::ptrdiff_t kKc = 256;  // rows per packed block
const int kMr = 6;               // rows of C per micro-kernel call

// Copies rows k0 .. k0 + kc - 1 of the columns c0 .. c0 + w - 1 of X into panels of `width`
// columns: panel q holds X(k0 + k, c0 + q * width + j) at out[(q * kc + k) * width + j], with
// zeros past column w.
template <class T>
void pack(const T* X, std::ptrdiff_t ldx, std::ptrdiff_t k0, std::ptrdiff_t kc,
          std::ptrdiff_t c0, std::ptrdiff_t w, int width, T* out) {
  const std::ptrdiff_t panels = (w + width - 1) / width;
  for (std::ptrdiff_t k = 0; k < kc; ++k) {
    const T* row = X + (k0 + k) * ldx + c0;
    for (std::ptrdiff_t q = 0; q < panels; ++q) {
      T* dst = out + (q * kc + k) * width;
      const std::ptrdiff_t j0 = q * width;
      const std::ptrdiff_t m = std::min<std::ptrdiff_t>(width, w - j0);
      std::memcpy(dst, row + j0, static_cast<std::size_t>(m) * sizeof(T));
      std::fill(dst + m, dst + width, T(0));
    }
  }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(_WIN32)
#define KL_SIMD_X86 1
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

// C(0:6, 0:2W) += sum_k A(k, 0:6)' B(k, 0:2W) for packed panels A (kc x 6) and B (kc x 2W)
// with 12 vector accumulators. Inlined into the target-specific kernels below, so it is
// compiled for their instruction sets.
template <class V, int W, class T>
__attribute__((always_inline)) inline void micro_kernel(std::ptrdiff_t kc, const T* A,
                                                        const T* B, T* C, std::ptrdiff_t ldc) {
  V c0[kMr], c1[kMr];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    c0[i] = V{};
    c1[i] = V{};
  }
  for (std::ptrdiff_t k = 0; k < kc; ++k) {
    V b0, b1;
    std::memcpy(&b0, B + k * 2 * W, sizeof(V));
    std::memcpy(&b1, B + k * 2 * W + W, sizeof(V));
    const T* a = A + k * kMr;
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      c0[i] += a[i] * b0;
      c1[i] += a[i] * b1;
    }
  }
#pragma GCC unroll 6
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

__attribute__((target("avx2,fma"))) void kernel_avx2(std::ptrdiff_t kc, const float* A,
                                                     const float* B, float* C,
                                                     std::ptrdiff_t ldc) {
  micro_kernel<v8f, 8>(kc, A, B, C, ldc);
}

__attribute__((target("avx512f,avx2,fma"))) void kernel_avx512(std::ptrdiff_t kc,
                                                               const float* A, const float* B,
                                                               float* C, std::ptrdiff_t ldc) {
  micro_kernel<v16f, 16>(kc, A, B, C, ldc);
}

__attribute__((target("avx2,fma"))) void kernel_avx2(std::ptrdiff_t kc, const double* A,
                                                     const double* B, double* C,
                                                     std::ptrdiff_t ldc) {
  micro_kernel<v4d, 4>(kc, A, B, C, ldc);
}

__attribute__((target("avx512f,avx2,fma"))) void kernel_avx512(std::ptrdiff_t kc,
                                                               const double* A, const double* B,
                                                               double* C, std::ptrdiff_t ldc) {
  micro_kernel<v8d, 8>(kc, A, B, C, ldc);
}
#endif

SimdLevel detect() {
#ifdef KL_SIMD_X86
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return SimdLevel::none;
  if (__builtin_cpu_supports("avx512f")) return SimdLevel::avx512;
  return SimdLevel::avx2;
#else
  return SimdLevel::none;
#endif
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = detect();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::avx2: return "avx2";
    default: return "none";
  }
}

namespace {

template <class T>
void crossprod_cols_impl(SimdLevel level, const T* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                         std::ptrdiff_t ca, std::ptrdiff_t wa, std::ptrdiff_t cb,
                         std::ptrdiff_t wb, T* C, std::ptrdiff_t ldc) {
  if (level == SimdLevel::none || level > simd_level())
    throw Error("crossprod_cols: this processor lacks the requested instructions");
#ifdef KL_SIMD_X86
  // Micro-tiles of 6 rows by two vectors: 64 or 32 bytes each.
  const int nr = static_cast<int>((level == SimdLevel::avx512 ? 128 : 64) / sizeof(T));
  const std::ptrdiff_t mp = (wa + kMr - 1) / kMr * kMr, np = (wb + nr - 1) / nr * nr;
  std::vector<T> Ap(static_cast<std::size_t>(mp * kKc)), Bp(static_cast<std::size_t>(np * kKc));
  std::vector<T> Ct(static_cast<std::size_t>(mp * np), T(0));
  for (std::ptrdiff_t k0 = 0; k0 < nrows; k0 += kKc) {
    const std::ptrdiff_t kc = std::min(kKc, nrows - k0);
    pack(X, ldx, k0, kc, ca, wa, kMr, Ap.data());
    pack(X, ldx, k0, kc, cb, wb, nr, Bp.data());
    for (std::ptrdiff_t q = 0; q < np / nr; ++q) {
      const T* B = Bp.data() + q * kc * nr;
      for (std::ptrdiff_t r = 0; r < mp / kMr; ++r) {
        const T* A = Ap.data() + r * kc * kMr;
        T* Cr = Ct.data() + r * kMr * np + q * nr;
        if (level == SimdLevel::avx512)
          kernel_avx512(kc, A, B, Cr, np);
        else
          kernel_avx2(kc, A, B, Cr, np);
      }
    }
  }
  for (std::ptrdiff_t i = 0; i < wa; ++i)
    std::memcpy(C + i * ldc, Ct.data() + i * np, static_cast<std::size_t>(wb) * sizeof(T));
#else
  (void)X; (void)ldx; (void)nrows; (void)ca; (void)wa; (void)cb; (void)wb; (void)C; (void)ldc;
#endif
}

}  // namespace

void crossprod_cols(SimdLevel level, const float* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                    std::ptrdiff_t ca, std::ptrdiff_t wa, std::ptrdiff_t cb, std::ptrdiff_t wb,
                    float* C, std::ptrdiff_t ldc) {
  crossprod_cols_impl(level, X, ldx, nrows, ca, wa, cb, wb, C, ldc);
}

void crossprod_cols(SimdLevel level, const double* X, std::ptrdiff_t ldx, std::ptrdiff_t nrows,
                    std::ptrdiff_t ca, std::ptrdiff_t wa, std::ptrdiff_t cb, std::ptrdiff_t wb,
                    double* C, std::ptrdiff_t ldc) {
  crossprod_cols_impl(level, X, ldx, nrows, ca, wa, cb, wb, C, ldc);
}

}  // namespace kl
