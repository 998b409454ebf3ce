#include "heads/logistic_f32.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "linalg/optim.hpp"
#include "linalg/simd.hpp"

namespace kl {

namespace {

// Rows handled together by the kernels (they share each coefficient row they load).
constexpr int kGroup = 4;

// Data-term kernel for `len` rows whose pointers are in xr: eta = x B (Kp padded columns of
// Bp, row-major p x Kp), then with R (len x Kp, filled by the caller from eta) G += x' R.
// Two versions: portable, and AVX2 + FMA through GCC vector extensions.
void forward_generic(const float* const* xr, int len, Eigen::Index p, const float* Bp, int Kp,
                     float* eta) {
  for (int r = 0; r < len; ++r) {
    float* e = eta + r * Kp;
    std::fill(e, e + Kp, 0.0f);
    const float* x = xr[r];
    for (Eigen::Index j = 0; j < p; ++j) {
      const float v = x[j];
      if (v == 0.0f) continue;
      const float* b = Bp + j * Kp;
      for (int k = 0; k < Kp; ++k) e[k] += v * b[k];
    }
  }
}

void backward_generic(const float* const* xr, int len, Eigen::Index p, const float* R, int Kp,
                      float* G) {
  for (Eigen::Index j = 0; j < p; ++j) {
    float* g = G + j * Kp;
    for (int r = 0; r < len; ++r) {
      const float v = xr[r][j];
      if (v == 0.0f) continue;
      const float* q = R + r * Kp;
      for (int k = 0; k < Kp; ++k) g[k] += v * q[k];
    }
  }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(_WIN32)
#define KL_HAVE_AVX2_KERNEL 1
typedef float v8f __attribute__((vector_size(32)));

__attribute__((target("avx2,fma"))) void forward_avx2(const float* const* xr, int len,
                                                       Eigen::Index p, const float* Bp, int Kp,
                                                       float* eta) {
  const int C = Kp / 8;
  for (int r0 = 0; r0 < len; r0 += kGroup) {
    const int g = std::min(kGroup, len - r0);
    for (int c = 0; c < C; ++c) {
      v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
      const float* x0 = xr[r0];
      const float* x1 = g > 1 ? xr[r0 + 1] : x0;
      const float* x2 = g > 2 ? xr[r0 + 2] : x0;
      const float* x3 = g > 3 ? xr[r0 + 3] : x0;
      for (Eigen::Index j = 0; j < p; ++j) {
        v8f b;
        __builtin_memcpy(&b, Bp + j * Kp + 8 * c, sizeof(v8f));
        a0 += x0[j] * b;
        a1 += x1[j] * b;
        a2 += x2[j] * b;
        a3 += x3[j] * b;
      }
      v8f* acc[4] = {&a0, &a1, &a2, &a3};
      for (int r = 0; r < g; ++r)
        __builtin_memcpy(eta + (r0 + r) * Kp + 8 * c, acc[r], sizeof(v8f));
    }
  }
}

__attribute__((target("avx2,fma"))) void backward_avx2(const float* const* xr, int len,
                                                        Eigen::Index p, const float* R, int Kp,
                                                        float* G) {
  const int C = Kp / 8;
  for (int r0 = 0; r0 < len; r0 += kGroup) {
    const int g = std::min(kGroup, len - r0);
    const v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
    const float* x0 = xr[r0];
    const float* x1 = g > 1 ? xr[r0 + 1] : x0;
    const float* x2 = g > 2 ? xr[r0 + 2] : x0;
    const float* x3 = g > 3 ? xr[r0 + 3] : x0;
    for (int c = 0; c < C; ++c) {
      v8f q0, q1 = zero, q2 = zero, q3 = zero;
      __builtin_memcpy(&q0, R + r0 * Kp + 8 * c, sizeof(v8f));
      if (g > 1) __builtin_memcpy(&q1, R + (r0 + 1) * Kp + 8 * c, sizeof(v8f));
      if (g > 2) __builtin_memcpy(&q2, R + (r0 + 2) * Kp + 8 * c, sizeof(v8f));
      if (g > 3) __builtin_memcpy(&q3, R + (r0 + 3) * Kp + 8 * c, sizeof(v8f));
      for (Eigen::Index j = 0; j < p; ++j) {
        v8f s;
        float* gp = G + j * Kp + 8 * c;
        __builtin_memcpy(&s, gp, sizeof(v8f));
        s += x0[j] * q0 + x1[j] * q1 + x2[j] * q2 + x3[j] * q3;
        __builtin_memcpy(gp, &s, sizeof(v8f));
      }
    }
  }
}
#endif

bool use_avx2() {
#ifdef KL_HAVE_AVX2_KERNEL
  return simd_level() != SimdLevel::none;
#else
  return false;
#endif
}

}  // namespace

bool logistic_f32_vectorised() { return use_avx2(); }

void standardize_f32(RowMajorF32& X, Vec& center, Vec& scale, int threads) {
  const Eigen::Index n = X.n, p = X.p;
  const RowBlocks bl = make_row_blocks(n);
  std::vector<Vec> s1(static_cast<std::size_t>(bl.count)), s2(static_cast<std::size_t>(bl.count));
  // Shifted sums (by the first row) keep the variance accurate.
  Vec shift(p);
  for (Eigen::Index j = 0; j < p; ++j) shift[j] = n > 0 ? X.row(0)[j] : 0.0f;
  {
    const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
    for (int b = 0; b < bl.count; ++b) {
      Vec a = Vec::Zero(p), q = Vec::Zero(p);
      for (Eigen::Index i = bl.start(b); i < bl.start(b) + bl.size(b); ++i) {
        const float* x = X.row(i);
        for (Eigen::Index j = 0; j < p; ++j) {
          const double v = static_cast<double>(x[j]) - shift[j];
          a[j] += v;
          q[j] += v * v;
        }
      }
      s1[static_cast<std::size_t>(b)] = std::move(a);
      s2[static_cast<std::size_t>(b)] = std::move(q);
    }
  }
  Vec a = Vec::Zero(p), q = Vec::Zero(p);
  for (int b = 0; b < bl.count; ++b) {
    a += s1[static_cast<std::size_t>(b)];
    q += s2[static_cast<std::size_t>(b)];
  }
  center.resize(p);
  scale.resize(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    const double m = n > 0 ? a[j] / static_cast<double>(n) : 0.0;
    const double var = n > 1 ? std::max(0.0, (q[j] - n * m * m) / static_cast<double>(n - 1)) : 0.0;
    const double mu = m + shift[j];
    const double sd = std::sqrt(var);
    center[j] = mu;
    scale[j] = sd > 1e-6 * std::abs(mu) && sd > 1e-30 ? 1.0 / sd : 0.0;
  }
  standardize_f32_apply(X, center, scale, threads);
}

void standardize_f32_apply(RowMajorF32& X, const Vec& center, const Vec& scale, int threads) {
  const Eigen::Index n = X.n, p = X.p;
  if (center.size() != p || scale.size() != p)
    throw Error("standardize: statistics of the wrong length");
  {
    const EigenSerial eigen_serial(!(n * p > 100000));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(clamp_threads(threads)) if (n * p > 100000)
#endif
    for (Eigen::Index i = 0; i < n; ++i) {
      float* x = X.row(i);
      for (Eigen::Index j = 0; j < p; ++j)
        x[j] = static_cast<float>((static_cast<double>(x[j]) - center[j]) * scale[j]);
    }
  }
}

LogisticFit logistic_fit_f32(const RowMajorF32& X, const IVec& y, int K,
                             const std::vector<Eigen::Index>& rows_in, const LogisticOptions& opt,
                             const Callbacks& cb) {
  const Eigen::Index p = X.p;
  if (K < 2) throw Error("logistic: at least two classes are needed");
  if (y.size() != X.n) throw Error("logistic: y and x have different numbers of rows");
  std::vector<Eigen::Index> rows = rows_in;
  if (rows.empty()) {
    rows.resize(static_cast<std::size_t>(X.n));
    for (Eigen::Index i = 0; i < X.n; ++i) rows[static_cast<std::size_t>(i)] = i;
  }
  const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
  if (n < 1) throw Error("logistic: no rows");
  Vec freq = Vec::Zero(K);
  for (Eigen::Index r : rows) {
    if (r < 0 || r >= X.n || y[r] < 0 || y[r] >= K) throw Error("logistic: invalid row or class");
    freq[y[r]] += 1.0 / static_cast<double>(n);
  }
  for (int k = 0; k < K; ++k)
    if (!(freq[k] > 0.0))
      throw ClassError(k, "logistic: ", " has no observations");
  const int Kp = ((K + 7) / 8) * 8;
  const bool avx = use_avx2();
  const RowBlocks bl = make_row_blocks(n);
  const double lambda = opt.lambda;
  const int threads = clamp_threads(opt.threads);

  std::vector<float> Bp(static_cast<std::size_t>(p * Kp), 0.0f);
  std::vector<std::vector<float>> Gb(static_cast<std::size_t>(bl.count));
  std::vector<double> loss(static_cast<std::size_t>(bl.count));
  std::vector<Vec> gbb(static_cast<std::size_t>(bl.count));

  ValueGradFn fg = [&](const CVecRef& th, VecRef grad) -> double {
    Eigen::Map<const Mat> B(th.data(), p, K);
    Eigen::Map<const Vec> b(th.data() + p * K, K);
    for (Eigen::Index j = 0; j < p; ++j)
      for (int k = 0; k < K; ++k) Bp[static_cast<std::size_t>(j * Kp + k)] = static_cast<float>(B(j, k));
    {
      const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (bl.count > 1)
#endif
      for (int blk = 0; blk < bl.count; ++blk) {
        std::vector<float>& G = Gb[static_cast<std::size_t>(blk)];
        G.assign(static_cast<std::size_t>(p * Kp), 0.0f);
        Vec gb = Vec::Zero(K);
        double acc = 0.0;
        const Eigen::Index s0 = bl.start(blk), len = bl.size(blk);
        const int chunk = 4 * kGroup;
        std::vector<float> eta(static_cast<std::size_t>(chunk * Kp)), R(eta.size());
        const float* xr[chunk];
        for (Eigen::Index c0 = 0; c0 < len; c0 += chunk) {
          const int m = static_cast<int>(std::min<Eigen::Index>(chunk, len - c0));
          for (int r = 0; r < m; ++r) xr[r] = X.row(rows[static_cast<std::size_t>(s0 + c0 + r)]);
#ifdef KL_HAVE_AVX2_KERNEL
          if (avx) forward_avx2(xr, m, p, Bp.data(), Kp, eta.data());
          else
#endif
            forward_generic(xr, m, p, Bp.data(), Kp, eta.data());
          for (int r = 0; r < m; ++r) {
            const int yi = y[rows[static_cast<std::size_t>(s0 + c0 + r)]];
            double z[256];
            double* zz = K <= 256 ? z : nullptr;
            std::vector<double> zv;
            if (!zz) {
              zv.resize(static_cast<std::size_t>(K));
              zz = zv.data();
            }
            double zmax = -INFINITY;
            for (int k = 0; k < K; ++k) {
              zz[k] = static_cast<double>(eta[static_cast<std::size_t>(r * Kp + k)]) + b[k];
              zmax = std::max(zmax, zz[k]);
            }
            double s = 0.0;
            const double zy = zz[yi];
            for (int k = 0; k < K; ++k) {
              zz[k] = std::exp(zz[k] - zmax);
              s += zz[k];
            }
            acc += std::log(s) + zmax - zy;
            for (int k = 0; k < Kp; ++k) {
              double q = 0.0;
              if (k < K) q = (zz[k] / s - (k == yi ? 1.0 : 0.0)) / static_cast<double>(n);
              if (k < K) gb[k] += q;
              R[static_cast<std::size_t>(r * Kp + k)] = static_cast<float>(q);
            }
          }
#ifdef KL_HAVE_AVX2_KERNEL
          if (avx) backward_avx2(xr, m, p, R.data(), Kp, G.data());
          else
#endif
            backward_generic(xr, m, p, R.data(), Kp, G.data());
        }
        loss[static_cast<std::size_t>(blk)] = acc / static_cast<double>(n);
        gbb[static_cast<std::size_t>(blk)] = gb;
      }
    }
    double f = 0.0;
    Eigen::Map<Mat> gB(grad.data(), p, K);
    gB.setZero();
    Vec gbt = Vec::Zero(K);
    for (int blk = 0; blk < bl.count; ++blk) {
      f += loss[static_cast<std::size_t>(blk)];
      const std::vector<float>& G = Gb[static_cast<std::size_t>(blk)];
      for (Eigen::Index j = 0; j < p; ++j)
        for (int k = 0; k < K; ++k) gB(j, k) += static_cast<double>(G[static_cast<std::size_t>(j * Kp + k)]);
      gbt += gbb[static_cast<std::size_t>(blk)];
    }
    f += 0.5 * lambda * B.squaredNorm();
    gB += lambda * B;
    grad.tail(K) = gbt;
    return f;
  };

  return logistic_minimise(fg, logistic_start(opt, freq, p, K), p, K, opt, cb);
}

}  // namespace kl
