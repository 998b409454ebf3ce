// The vectorised exponential pair of the hierarchical Gaussian kernel (exp(-s) and 1 - exp(-s))
// as inline templates over GCC vector types, for the translation units that compile it into
// functions with AVX2 / AVX-512 target attributes (linalg/vexp.cpp, kernels/hgk_pass.cpp).
// Internal to the core: include only from .cpp files.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define KL_INLINE __attribute__((always_inline)) inline
#else
#define KL_INLINE inline
#endif

namespace kl {
namespace vexp_detail {

// Constants of the range reduction: ln 2 in two parts, and the shifter that rounds to an integer
// kept in the low bits of a double.
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kShifter = 6755399441055744.0;  // 1.5 * 2^52: rounds to an integer

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(_WIN32)
#define KL_HGK_SIMD 1
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef std::int64_t v4l __attribute__((vector_size(32)));
typedef std::int64_t v8l __attribute__((vector_size(64)));

// exp(-s) and 1 - exp(-s) for s >= 0 through a table of 2^(j / N), N = 2 W entries (W the
// lanes of V): x = -s = (N k + j) ln2 / N + r with |r| <= ln2 / (2 N), exp(r) - 1 = p(r) by its
// Taylor polynomial of degree 7 (N = 16) or 8 (N = 8), both within 2e-18 relative; with
// T = 2^(k + j / N),
//   exp(-s) = T + T p,   1 - exp(-s) = (1 - T) - T p,
// where 1 - T is exact (Sterbenz) whenever T >= 1/2, and 1 - T = 0 for |x| < ln2 / (2 N), so
// the second has no cancellation beyond the table's rounding (relative error at most a few
// units in the last place times 1 / (1 - 2^(-1/N))). Below the normal range (s above about
// 708) K is 0.
// `tab` holds the 2 W table values (kept by the caller: exp_table()).
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_pair_table(const V& s, V& k, V& o, const V& tab0,
                                                          const V& tab1) {
  constexpr int N = 2 * W;
  constexpr int shift = N == 16 ? 4 : 3;
  const V zero = V{};
  V x = zero - s;
  x = x < -745.0 ? zero - 745.0 : x;
  const V t = x * (kLog2e * N) + kShifter;
  const V fn = t - kShifter;
  V r = x - fn * (kLn2Hi / N);
  r = r - fn * (kLn2Lo / N);
  V q = zero + (N == 8 ? 1.0 / 40320.0 : 1.0 / 5040.0);
  if (N == 8) q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  q = q * r + 1.0;
  const V p = q * r;
  VI bits, sb;
  std::memcpy(&bits, &t, sizeof bits);
  const V sh = zero + kShifter;
  std::memcpy(&sb, &sh, sizeof sb);
  const VI n = bits - sb;
  const VI j = n & (N - 1);
  // the biased exponent, 0 (the scale 0.0, so K = 0 and 1 - K = 1) where it would leave the
  // normal range: no selects (GCC does not always keep them in vector registers) and no
  // subnormal results
  VI e = (n >> shift) + 1023;
  e = (e & ~(e >> 63)) << 52;
  V scale;
  std::memcpy(&scale, &e, sizeof scale);
  const V T = __builtin_shuffle(tab0, tab1, j) * scale;
  k = T + T * p;
  o = (1.0 - T) - T * p;
}

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef std::int32_t v8i __attribute__((vector_size(32)));
typedef std::int32_t v16i __attribute__((vector_size(64)));

// The same pair in single precision (V of W floats, VI of W int32): a table of N = 2 W values
// 2^(j / N) (16 or 32), |r| <= ln2 / (2 N), and exp(r) - 1 by its Taylor polynomial of degree 3
// (truncation below 1e-8 relative, under a float's rounding); ln 2 / N in two parts whose first
// times the integer is exact. exp(-s) is 0 (and 1 - exp(-s) is 1) below the normal range of a
// float (s above about 87.3). `tab` from exp_table_f(2 W).
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_pair_table_f(const V& s, V& k, V& o,
                                                            const V& tab0, const V& tab1) {
  constexpr int N = 2 * W;
  constexpr int shift = N == 32 ? 5 : 4;
  constexpr float kShifterF = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  constexpr float kLn2HiF = 0.693359375f, kLn2LoF = -2.12194440e-4f;
  const V zero = V{};
  // s clamped to 88: then the biased exponent below is never negative (0 where exp(-s) is
  // below the normal range: K = 0)
  const V sc = s > 88.0f ? zero + 88.0f : s;
  const V t = sc * (-1.44269504f * N) + kShifterF;
  const V fn = t - kShifterF;
  // r = -sc - fn ln2 / N, in two parts (a negated multiply-subtract, then a multiply-add)
  V r = fn * (-kLn2HiF / N) - sc;
  r = r - fn * (kLn2LoF / N);
  V q = zero + 1.0f / 6.0f;
  q = q * r + 0.5f;
  q = q * r + 1.0f;
  const V p = q * r;
  // t's bits are those of the shifter plus the integer n = N k + j (|n| < 2^22): the shifter's
  // low bits are zero, so j is in t's low bits, and k = floor(n / N) is the difference of the
  // shifted bits and the shifter's
  VI bits, sb;
  std::memcpy(&bits, &t, sizeof bits);
  const V sh = zero + kShifterF;
  std::memcpy(&sb, &sh, sizeof sb);
  const VI j = bits & (N - 1);
  const VI e = ((bits >> shift) << 23) + (((127 - (sb >> shift)) << 23));
  V scale;
  std::memcpy(&scale, &e, sizeof scale);
  const V T = __builtin_shuffle(tab0, tab1, j) * scale;
  k = T + T * p;
  o = (1.0f - T) - T * p;
}

#endif

// 2^(j / N) for j < N (N = 8 or 16), correctly rounded up to the last bit of exp2.
const double* exp_table(int N);
// 2^(j / N) for j < N (N = 16 or 32), rounded to float.
const float* exp_table_f(int N);

}  // namespace vexp_detail
}  // namespace kl
