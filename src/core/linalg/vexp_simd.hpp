// The vectorised exponential pair of the hierarchical Gaussian kernel (exp(-s) and 1 - exp(-s))
// as inline templates over GCC vector types, for the translation units that compile it into
// functions with AVX2 / AVX-512 target attributes (linalg/vexp.cpp, kernels/hgk_pass.cpp).
// Internal to the core: include only from .cpp files.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

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
typedef std::uint32_t v8u __attribute__((vector_size(32)));
typedef std::uint32_t v16u __attribute__((vector_size(64)));

// The number of entries of the single-precision pair's table for W float lanes: W = 8 (AVX2)
// one vector (one permute looks an entry up), W = 16 (AVX-512) two vectors (one two-source
// permute).
constexpr int exp_table_f_size(int W) { return W == 8 ? 8 : 2 * W; }

// The same pair in single precision (V of W floats, VI of W int32): a table of
// N = exp_table_f_size(W) values 2^(j / N) (8 or 32), |r| <= ln2 / (2 N), and exp(r) - 1 by its
// Taylor polynomial of degree 4 (N = 8) or 3 (N = 32), evaluated in two levels (truncation
// below 2e-9 relative, under a float's rounding). The reduction r = x - n ln2 / N takes one
// rounded constant: its error, |x| 2^-24 at most, is that of one rounding of s, and s comes
// from float sums that round it at least once. T = 2^(n / N) is assembled in the integers: the
// table entry of j = n mod N (the permute reads an index's low bits only) plus n shifted to the
// exponent field, the table holding each 2^(j / N) less its j in those bits (exp_table_f()).
// Where 2^(n / N) leaves the normal range of a float (n < -126 N, s above about 87.3) T is 0,
// so that K = 0 and 1 - K = 1 with no subnormal number (slow on some processors) in the pass.
// `tab0`, `tab1`: the table's first and second W entries (tab1 unused when N = W).
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_pair_table_f(const V& s, V& k, V& o,
                                                            const V& tab0, const V& tab1) {
  constexpr int N = exp_table_f_size(W);
  constexpr int shift = N == 32 ? 18 : 20;  // 23 - log2(N)
  constexpr float kShifterF = 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const V zero = V{};
  // s clamped to 88 (then n >= -127 N: T's exponent field stays >= 0, and is 0 only where T is
  // zeroed below) by one vminps (a compare and a blend otherwise); lim first, so that a NaN in s
  // stays NaN
  const V lim = zero + 88.0f;
  V sc;
  asm("vminps %1, %2, %0" : "=v"(sc) : "v"(s), "v"(lim));
  const V t = sc * (-1.44269504f * N) + kShifterF;
  const V fn = t - kShifterF;
  const V r = fn * static_cast<float>(-0.69314718055994531 / N) - sc;
  const V r2 = r * r;
  const V a = r * (1.0f / 6.0f) + 0.5f;
  V p;
  if constexpr (N == 8) p = r2 * (r2 * (1.0f / 24.0f) + a) + r;
  else p = r2 * a + r;
  // t's bits are those of the shifter plus n = N k + j (|n| < 2^22); the shifter's low bits
  // are zero, so that shifted left by `shift` (out of 32 bits) they leave k in the exponent
  // field and j in the bits below it
  using VU = std::conditional_t<W == 8, v8u, v16u>;  // unsigned: the shift wraps
  static_assert(sizeof(VU) == sizeof(VI), "W int32 lanes");
  VU bits;
  std::memcpy(&bits, &t, sizeof bits);
  V tj;
  if constexpr (N == W) tj = __builtin_shuffle(tab0, bits);
  else tj = __builtin_shuffle(tab0, tab1, bits);
  VU tb;
  std::memcpy(&tb, &tj, sizeof tb);
  tb += bits << shift;
  // T = 0 where n < -126 N (k = -127: exponent field 0); as signed integers, the bits of t
  // order as n does
  VI bi, keep;
  std::memcpy(&bi, &t, sizeof bi);
  const V sh = zero + kShifterF;
  VI sb;
  std::memcpy(&sb, &sh, sizeof sb);
  keep = bi >= sb - 126 * N;
  VU mask;
  std::memcpy(&mask, &keep, sizeof mask);
  tb &= mask;
  V T;
  std::memcpy(&T, &tb, sizeof T);
  k = T + T * p;
  o = (1.0f - T) - T * p;
}

#endif

// 2^(j / N) for j < N (N = 8 or 16), correctly rounded up to the last bit of exp2.
const double* exp_table(int N);
// 2^(j / N) for j < N (N = 8 or 32: exp_table_f_size()), rounded to float, its bits less
// j << (23 - log2 N) (exp_pair_table_f() adds n << (23 - log2 N) for 2^(n / N)).
const float* exp_table_f(int N);

#ifdef KL_HGK_SIMD
// The single-precision pair's table for V (W floats) in two vectors (the second zero when the
// table has W entries).
template <class V>
KL_INLINE void load_table_f(V& tab0, V& tab1) {
  constexpr int W = static_cast<int>(sizeof(V) / sizeof(float));
  constexpr int N = exp_table_f_size(W);
  const float* t = exp_table_f(N);
  std::memcpy(&tab0, t, sizeof tab0);
  if constexpr (N > W) std::memcpy(&tab1, t + W, sizeof tab1);
  else std::memset(&tab1, 0, sizeof tab1);
}
#endif

}  // namespace vexp_detail
}  // namespace kl
