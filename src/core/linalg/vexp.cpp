#include "linalg/vexp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "linalg/simd.hpp"
#include "linalg/vexp_simd.hpp"

namespace kl {
namespace {

using namespace vexp_detail;

void exp_pair_scalar(const double* S, double* K, double* O, std::ptrdiff_t n) {
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    K[t] = std::exp(-S[t]);
    if (O) O[t] = -std::expm1(-S[t]);
  }
}

void leaf_scalar(const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz,
                 std::ptrdiff_t nr, std::ptrdiff_t nc, std::ptrdiff_t p, double scale, double* S) {
  for (std::ptrdiff_t j = 0; j < nc; ++j) {
    double* s = S + j * nr;
    for (std::ptrdiff_t i = 0; i < nr; ++i) s[i] = 0.0;
    for (std::ptrdiff_t k = 0; k < p; ++k) {
      const double z = Z[j + k * ldz];
      const double* x = X + k * ldx;
      for (std::ptrdiff_t i = 0; i < nr; ++i) {
        const double dd = x[i] - z;
        s[i] += dd * dd;
      }
    }
    for (std::ptrdiff_t i = 0; i < nr; ++i) s[i] *= scale;
  }
}

void leaf_backward_scalar(const double* T, const double* K, double f, std::ptrdiff_t nr,
                          std::ptrdiff_t nc, const double* X, std::ptrdiff_t ldx, const double* Z,
                          std::ptrdiff_t ldz, std::ptrdiff_t p, double* q) {
  for (std::ptrdiff_t k = 0; k < p; ++k) {
    double acc = 0.0;
    for (std::ptrdiff_t j = 0; j < nc; ++j) {
      const double z = Z[j + k * ldz];
      for (std::ptrdiff_t i = 0; i < nr; ++i) {
        const double dd = X[i + k * ldx] - z;
        acc += T[i + j * nr] * K[i + j * nr] * dd * dd;
      }
    }
    q[k] += f * acc;
  }
}

#if defined(KL_HGK_SIMD)
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_pair_impl(const double* S, double* K, double* O,
                                                         std::ptrdiff_t n) {
  std::ptrdiff_t t = 0;
  V tab0, tab1;
  std::memcpy(&tab0, exp_table(2 * W), sizeof tab0);
  std::memcpy(&tab1, exp_table(2 * W) + W, sizeof tab1);
  for (; t + W <= n; t += W) {
    V s, k, o;
    std::memcpy(&s, S + t, sizeof s);
    exp_pair_table<V, VI, W>(s, k, o, tab0, tab1);
    std::memcpy(K + t, &k, sizeof k);
    if (O) std::memcpy(O + t, &o, sizeof o);
  }
  if (t < n) {
    // the tail through one padded vector
    double sb[W] = {}, kb[W], ob[W];
    for (std::ptrdiff_t u = t; u < n; ++u) sb[u - t] = S[u];
    V s, k, o;
    std::memcpy(&s, sb, sizeof s);
    exp_pair_table<V, VI, W>(s, k, o, tab0, tab1);
    std::memcpy(kb, &k, sizeof k);
    std::memcpy(ob, &o, sizeof o);
    for (std::ptrdiff_t u = t; u < n; ++u) {
      K[u] = kb[u - t];
      if (O) O[u] = ob[u - t];
    }
  }
}

// G[t] = exp(-scale * max(xn[t] + zn - 2 G[t], 0)): a Gaussian kernel column from inner
// products and squared norms, in place.
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_dist_impl(const double* xn, double zn,
                                                         double scale, double* G,
                                                         std::ptrdiff_t n) {
  std::ptrdiff_t t = 0;
  const V zero = V{};
  V tab0, tab1;
  std::memcpy(&tab0, exp_table(2 * W), sizeof tab0);
  std::memcpy(&tab1, exp_table(2 * W) + W, sizeof tab1);
  for (; t + W <= n; t += W) {
    V g, x, k, o;
    std::memcpy(&g, G + t, sizeof g);
    std::memcpy(&x, xn + t, sizeof x);
    V d = x + zn - 2.0 * g;
    d = d > zero ? d : zero;
    const V s = scale * d;
    exp_pair_table<V, VI, W>(s, k, o, tab0, tab1);
    std::memcpy(G + t, &k, sizeof k);
  }
  for (; t < n; ++t) {
    const double d = xn[t] + zn - 2.0 * G[t];
    G[t] = std::exp(-(scale * (d > 0.0 ? d : 0.0)));
  }
}

template <class V, int W>
__attribute__((always_inline)) inline void leaf_impl(const double* X, std::ptrdiff_t ldx,
                                                     const double* Z, std::ptrdiff_t ldz,
                                                     std::ptrdiff_t nr, std::ptrdiff_t nc,
                                                     std::ptrdiff_t p, double scale, double* S) {
  const std::ptrdiff_t nv = nr / W * W;
  for (std::ptrdiff_t j = 0; j < nc; ++j) {
    double* s = S + j * nr;
    for (std::ptrdiff_t i = 0; i < nv; i += W) {
      V acc = V{};
      for (std::ptrdiff_t k = 0; k < p; ++k) {
        V x;
        std::memcpy(&x, X + k * ldx + i, sizeof x);
        const V dd = x - Z[j + k * ldz];
        acc += dd * dd;
      }
      acc *= scale;
      std::memcpy(s + i, &acc, sizeof acc);
    }
    for (std::ptrdiff_t i = nv; i < nr; ++i) {
      double acc = 0.0;
      for (std::ptrdiff_t k = 0; k < p; ++k) {
        const double dd = X[k * ldx + i] - Z[j + k * ldz];
        acc += dd * dd;
      }
      s[i] = acc * scale;
    }
  }
}

// At most this many columns per leaf (the accumulators of hgk_leaf_backward).
constexpr std::ptrdiff_t kMaxLeafCols = 16;

template <class V, int W>
__attribute__((always_inline)) inline void leaf_backward_impl(
    const double* T, const double* K, double f, std::ptrdiff_t nr, std::ptrdiff_t nc,
    const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz, std::ptrdiff_t p,
    double* q) {
  V acc[kMaxLeafCols];
  double tail[kMaxLeafCols];
  for (std::ptrdiff_t k = 0; k < p; ++k) {
    acc[k] = V{};
    tail[k] = 0.0;
  }
  const std::ptrdiff_t nv = nr / W * W;
  for (std::ptrdiff_t j = 0; j < nc; ++j) {
    const double* tj = T + j * nr;
    const double* kj = K + j * nr;
    for (std::ptrdiff_t i = 0; i < nv; i += W) {
      V t, kk;
      std::memcpy(&t, tj + i, sizeof t);
      std::memcpy(&kk, kj + i, sizeof kk);
      t *= kk;
      for (std::ptrdiff_t k = 0; k < p; ++k) {
        V x;
        std::memcpy(&x, X + k * ldx + i, sizeof x);
        const V dd = x - Z[j + k * ldz];
        acc[k] += t * dd * dd;
      }
    }
    for (std::ptrdiff_t i = nv; i < nr; ++i) {
      const double t = tj[i] * kj[i];
      for (std::ptrdiff_t k = 0; k < p; ++k) {
        const double dd = X[k * ldx + i] - Z[j + k * ldz];
        tail[k] += t * dd * dd;
      }
    }
  }
  for (std::ptrdiff_t k = 0; k < p; ++k) {
    double lanes[W];
    std::memcpy(lanes, &acc[k], sizeof lanes);
    double s = tail[k];
    for (int u = 0; u < W; ++u) s += lanes[u];
    q[k] += f * s;
  }
}

__attribute__((target("avx2,fma"))) void leaf_backward_avx2(
    const double* T, const double* K, double f, std::ptrdiff_t nr, std::ptrdiff_t nc,
    const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz, std::ptrdiff_t p,
    double* q) {
  leaf_backward_impl<v4d, 4>(T, K, f, nr, nc, X, ldx, Z, ldz, p, q);
}
__attribute__((target("avx512f,avx2,fma"))) void leaf_backward_avx512(
    const double* T, const double* K, double f, std::ptrdiff_t nr, std::ptrdiff_t nc,
    const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz, std::ptrdiff_t p,
    double* q) {
  leaf_backward_impl<v8d, 8>(T, K, f, nr, nc, X, ldx, Z, ldz, p, q);
}

// The single-precision pair over whole vectors and one padded tail vector.
template <class V, class VI, int W>
__attribute__((always_inline)) inline void exp_pair_f_impl(const float* S, float* K, float* O,
                                                           std::ptrdiff_t n) {
  V tab0, tab1;
  load_table_f(tab0, tab1);
  for (std::ptrdiff_t t = 0; t < n; t += W) {
    float sb[W] = {}, kb[W], ob[W];
    const std::ptrdiff_t m = std::min<std::ptrdiff_t>(W, n - t);
    std::memcpy(sb, S + t, sizeof(float) * m);
    V s, k, o;
    std::memcpy(&s, sb, sizeof s);
    exp_pair_table_f<V, VI, W>(s, k, o, tab0, tab1);
    std::memcpy(kb, &k, sizeof k);
    std::memcpy(ob, &o, sizeof o);
    std::memcpy(K + t, kb, sizeof(float) * m);
    std::memcpy(O + t, ob, sizeof(float) * m);
  }
}

__attribute__((target("avx2,fma"))) void exp_pair_f_avx2(const float* S, float* K, float* O,
                                                          std::ptrdiff_t n) {
  exp_pair_f_impl<v8f, v8i, 8>(S, K, O, n);
}
__attribute__((target("avx512f,avx2,fma"))) void exp_pair_f_avx512(const float* S, float* K,
                                                                    float* O, std::ptrdiff_t n) {
  exp_pair_f_impl<v16f, v16i, 16>(S, K, O, n);
}

__attribute__((target("avx2,fma"))) void exp_pair_avx2(const double* S, double* K, double* O,
                                                       std::ptrdiff_t n) {
  exp_pair_impl<v4d, v4l, 4>(S, K, O, n);
}
__attribute__((target("avx512f,avx2,fma"))) void exp_pair_avx512(const double* S, double* K,
                                                                 double* O, std::ptrdiff_t n) {
  exp_pair_impl<v8d, v8l, 8>(S, K, O, n);
}
__attribute__((target("avx2,fma"))) void exp_dist_avx2(const double* xn, double zn, double scale,
                                                       double* G, std::ptrdiff_t n) {
  exp_dist_impl<v4d, v4l, 4>(xn, zn, scale, G, n);
}
__attribute__((target("avx512f,avx2,fma"))) void exp_dist_avx512(const double* xn, double zn,
                                                                 double scale, double* G,
                                                                 std::ptrdiff_t n) {
  exp_dist_impl<v8d, v8l, 8>(xn, zn, scale, G, n);
}
__attribute__((target("avx2,fma"))) void leaf_avx2(const double* X, std::ptrdiff_t ldx,
                                                   const double* Z, std::ptrdiff_t ldz,
                                                   std::ptrdiff_t nr, std::ptrdiff_t nc,
                                                   std::ptrdiff_t p, double scale, double* S) {
  leaf_impl<v4d, 4>(X, ldx, Z, ldz, nr, nc, p, scale, S);
}
__attribute__((target("avx512f,avx2,fma"))) void leaf_avx512(const double* X, std::ptrdiff_t ldx,
                                                             const double* Z, std::ptrdiff_t ldz,
                                                             std::ptrdiff_t nr, std::ptrdiff_t nc,
                                                             std::ptrdiff_t p, double scale,
                                                             double* S) {
  leaf_impl<v8d, 8>(X, ldx, Z, ldz, nr, nc, p, scale, S);
}
#endif

}  // namespace

namespace vexp_detail {
const double* exp_table(int N) {
  static const std::vector<double> t8 = [] {
    std::vector<double> t(8);
    for (int j = 0; j < 8; ++j) t[j] = std::exp2(j / 8.0);
    return t;
  }();
  static const std::vector<double> t16 = [] {
    std::vector<double> t(16);
    for (int j = 0; j < 16; ++j) t[j] = std::exp2(j / 16.0);
    return t;
  }();
  return N == 8 ? t8.data() : t16.data();
}

const float* exp_table_f(int N) {
  const auto make = [](int n, int shift) {
    std::vector<float> t(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) {
      const float v = static_cast<float>(std::exp2(j / static_cast<double>(n)));
      std::uint32_t b;
      std::memcpy(&b, &v, sizeof b);
      b -= static_cast<std::uint32_t>(j) << shift;
      std::memcpy(&t[static_cast<std::size_t>(j)], &b, sizeof b);
    }
    return t;
  };
  static const std::vector<float> t8 = make(8, 20), t32 = make(32, 18);
  return N == 8 ? t8.data() : t32.data();
}
}  // namespace vexp_detail

void hgk_leaf_backward(const double* T, const double* K, double f, std::ptrdiff_t nr,
                       std::ptrdiff_t nc, const double* X, std::ptrdiff_t ldx, const double* Z,
                       std::ptrdiff_t ldz, std::ptrdiff_t p, double* q) {
#ifdef KL_HGK_SIMD
  if (p <= kMaxLeafCols) {
    switch (simd_level()) {
      case SimdLevel::avx512: leaf_backward_avx512(T, K, f, nr, nc, X, ldx, Z, ldz, p, q); return;
      case SimdLevel::avx2: leaf_backward_avx2(T, K, f, nr, nc, X, ldx, Z, ldz, p, q); return;
      default: break;
    }
  }
#endif
  leaf_backward_scalar(T, K, f, nr, nc, X, ldx, Z, ldz, p, q);
}

void hgk_exp_pair(const double* S, double* K, double* O, std::ptrdiff_t n) {
#ifdef KL_HGK_SIMD
  switch (simd_level()) {
    case SimdLevel::avx512: exp_pair_avx512(S, K, O, n); return;
    case SimdLevel::avx2: exp_pair_avx2(S, K, O, n); return;
    default: break;
  }
#endif
  exp_pair_scalar(S, K, O, n);
}

bool hgk_exp_pair_f(const float* S, float* K, float* O, std::ptrdiff_t n) {
#ifdef KL_HGK_SIMD
  switch (simd_level()) {
    case SimdLevel::avx512: exp_pair_f_avx512(S, K, O, n); return true;
    case SimdLevel::avx2: exp_pair_f_avx2(S, K, O, n); return true;
    default: break;
  }
#else
  (void)S;
  (void)K;
  (void)O;
  (void)n;
#endif
  return false;
}

void hgk_leaf_distances(const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz,
                        std::ptrdiff_t nr, std::ptrdiff_t nc, std::ptrdiff_t p, double scale,
                        double* S) {
#ifdef KL_HGK_SIMD
  switch (simd_level()) {
    case SimdLevel::avx512: leaf_avx512(X, ldx, Z, ldz, nr, nc, p, scale, S); return;
    case SimdLevel::avx2: leaf_avx2(X, ldx, Z, ldz, nr, nc, p, scale, S); return;
    default: break;
  }
#endif
  leaf_scalar(X, ldx, Z, ldz, nr, nc, p, scale, S);
}

void hgk_exp_dist(const double* xn, double zn, double scale, double* G, std::ptrdiff_t n) {
#ifdef KL_HGK_SIMD
  switch (simd_level()) {
    case SimdLevel::avx512: exp_dist_avx512(xn, zn, scale, G, n); return;
    case SimdLevel::avx2: exp_dist_avx2(xn, zn, scale, G, n); return;
    default: break;
  }
#endif
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const double d = xn[t] + zn - 2.0 * G[t];
    G[t] = std::exp(-(scale * (d > 0.0 ? d : 0.0)));
  }
}

}  // namespace kl
