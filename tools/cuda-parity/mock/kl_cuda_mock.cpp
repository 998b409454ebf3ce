// A stand-in for the GPU library with the same C interface (src/cuda/kl_cuda_api.h), computed
// on the CPU with Eigen. It lets the parity program and the core's GPU backend (loading,
// dispatch by operation and size, fallbacks, the calibrated least-squares head's device
// factors) be exercised on machines without a GPU: `make check-mock`. It checks nothing about
// the CUDA code itself.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "../../../src/cuda/kl_cuda_api.h"

#define KL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Mat = Eigen::MatrixXd;
using MatF = Eigen::MatrixXf;
using Stride = Eigen::OuterStride<>;

void set_err(char* err, int len, const char* fmt, ...) {
  if (!err || len <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(err, static_cast<std::size_t>(len), fmt, ap);
  va_end(ap);
}

void clear(char* err, int len) {
  if (err && len > 0) err[0] = '\0';
}

// Lower Cholesky factor of the lower triangle of A (n x n) into L (in A's precision, as
// cuSOLVER's potrf); false when a pivot is not positive, with *info its 1-based index.
template <class M>
bool factor_lower(const M& A, M* L, int* info) {
  const Eigen::Index n = A.rows();
  Eigen::LLT<M, Eigen::Lower> llt(A);
  if (llt.info() == Eigen::Success) {
    *L = llt.matrixL();
    return true;
  }
  // the index of the first pivot that is not positive, column by column
  *L = M::Zero(n, n);
  for (Eigen::Index j = 0; j < n; ++j) {
    auto col = L->col(j).tail(n - j);
    col = A.col(j).tail(n - j);
    if (j > 0) col.noalias() -= L->bottomLeftCorner(n - j, j) * L->row(j).head(j).transpose();
    const auto d = col[0];
    if (!(d > 0)) {
      *info = static_cast<int>(j + 1);
      return false;
    }
    col /= std::sqrt(d);
  }
  return true;
}

}  // namespace

struct kl_cuda_factor {
  bool single = false;
  Mat L;
  MatF Lf;
};

KL_EXPORT int kl_cuda_api_version(void) { return KL_CUDA_API_VERSION; }

KL_EXPORT int kl_cuda_init(int device, char* name, int name_len, char* err, int err_len) {
  clear(err, err_len);
  if (device != 0) {
    set_err(err, err_len, "CUDA device %d does not exist (1 device found)", device);
    return 1;
  }
  if (name && name_len > 0) std::snprintf(name, static_cast<std::size_t>(name_len), "CPU mock");
  return 0;
}

KL_EXPORT int kl_cuda_gaussian_kernel(const double* X, int n, const double* Z, int m, int d,
                                      double gamma, double* K, char* err, int err_len) {
  clear(err, err_len);
  if (n < 0 || m < 0 || d < 0) {
    set_err(err, err_len, "negative dimension");
    return 1;
  }
  if (!std::isfinite(gamma) || gamma <= 0) {
    set_err(err, err_len, "gamma must be finite and positive");
    return 1;
  }
  Eigen::Map<const Mat> x(X, n, d), z(Z, m, d);
  Eigen::Map<Mat> k(K, n, m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) k(i, j) = std::exp(-gamma * (x.row(i) - z.row(j)).squaredNorm());
  return 0;
}

KL_EXPORT int kl_cuda_dgemm(int ta, int tb, int m, int n, int k, const double* A, int lda,
                            const double* B, int ldb, double* C, int ldc, char* err, int err_len) {
  clear(err, err_len);
  if (m < 0 || n < 0 || k < 0) {
    set_err(err, err_len, "negative dimension");
    return 1;
  }
  const int ra = ta ? k : m, rb = tb ? n : k;
  if (lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) {
    set_err(err, err_len, "leading dimension too small");
    return 1;
  }
  Eigen::Map<Mat, 0, Stride> c(C, m, n, Stride(ldc));
  if (k == 0) {
    c.setZero();
    return 0;
  }
  Eigen::Map<const Mat, 0, Stride> a(A, ra, ta ? m : k, Stride(lda)), b(B, rb, tb ? k : n, Stride(ldb));
  if (ta && tb) c = a.transpose() * b.transpose();
  else if (ta) c = a.transpose() * b;
  else if (tb) c = a * b.transpose();
  else c = a * b;
  return 0;
}

KL_EXPORT int kl_cuda_cholesky_solve(double* A, int n, int lda, int write_factor, double* B,
                                     int nrhs, int ldb, int* info, char* err, int err_len) {
  clear(err, err_len);
  if (!info) return 1;
  *info = 0;
  if (n < 0 || nrhs < 0) {
    set_err(err, err_len, "negative dimension");
    return 1;
  }
  if (lda < (n > 1 ? n : 1) || (nrhs > 0 && ldb < (n > 1 ? n : 1))) {
    set_err(err, err_len, "leading dimension too small");
    return 1;
  }
  if (n == 0) return 0;
  Eigen::Map<Mat, 0, Stride> a(A, n, n, Stride(lda));
  Mat L;
  if (!factor_lower(Mat(a), &L, info)) return 0;
  if (nrhs > 0) {
    Eigen::Map<Mat, 0, Stride> b(B, n, nrhs, Stride(ldb));
    const Mat x = L.transpose().triangularView<Eigen::Upper>().solve(
        L.triangularView<Eigen::Lower>().solve(Mat(b)));
    b = x;
  }
  if (write_factor) a.triangularView<Eigen::Lower>() = L;
  return 0;
}

KL_EXPORT int kl_cuda_gram_f32(const float* X, long long n, int p, long long row_stride, int block,
                               double* G, int ldg, char* err, int err_len) {
  clear(err, err_len);
  if (n < 0 || p < 0 || block < 1 || row_stride < p || ldg < (p > 1 ? p : 1)) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  Eigen::Map<Mat, 0, Stride> g(G, p, p, Stride(ldg));
  g.setZero();
  for (long long r0 = 0; r0 < n; r0 += block) {
    const long long len = n - r0 < block ? n - r0 : block;
    MatF c = MatF::Zero(p, p);
    for (long long i = r0; i < r0 + len; ++i) {
      Eigen::Map<const Eigen::VectorXf> x(X + i * row_stride, p);
      c.selfadjointView<Eigen::Lower>().rankUpdate(x);
    }
    g.triangularView<Eigen::Lower>() += c.cast<double>();
  }
  return 0;
}

// Factorisations made since the library was loaded (the mock only).
long long g_factors_created = 0;
KL_EXPORT long long kl_cuda_mock_factors_created(void) { return g_factors_created; }

KL_EXPORT int kl_cuda_factor_create(const double* S, int n, int lds, double scale, double shift,
                                    int single, kl_cuda_factor** out, double* diag, int* info,
                                    char* err, int err_len) {
  clear(err, err_len);
  ++g_factors_created;
  if (!out || !info) return 1;
  *out = nullptr;
  *info = 0;
  if (n < 1 || lds < n || !S) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  Eigen::Map<const Mat, 0, Stride> s(S, n, n, Stride(lds));
  Mat A = scale * s;
  A.diagonal().array() += shift;
  auto* f = new (std::nothrow) kl_cuda_factor;
  if (!f) return 1;
  f->single = single != 0;
  bool ok;
  if (f->single) {
    MatF Af = A.cast<float>();
    ok = factor_lower(Af, &f->Lf, info);
  } else {
    ok = factor_lower(A, &f->L, info);
  }
  if (!ok) {
    delete f;
    return 0;
  }
  if (diag)
    for (int i = 0; i < n; ++i) diag[i] = f->single ? f->Lf(i, i) : f->L(i, i);
  *out = f;
  return 0;
}

KL_EXPORT int kl_cuda_factor_solve(kl_cuda_factor* f, double* B, int nrhs, int ldb, char* err,
                                   int err_len) {
  clear(err, err_len);
  if (!f) return 1;
  const Eigen::Index n = f->single ? f->Lf.rows() : f->L.rows();
  if (nrhs < 0 || ldb < n) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  Eigen::Map<Mat, 0, Stride> b(B, n, nrhs, Stride(ldb));
  if (f->single) {
    const MatF bf = b.cast<float>();
    const MatF x = f->Lf.transpose().triangularView<Eigen::Upper>().solve(
        f->Lf.triangularView<Eigen::Lower>().solve(bf));
    b = x.cast<double>();
  } else {
    const Mat x = f->L.transpose().triangularView<Eigen::Upper>().solve(
        f->L.triangularView<Eigen::Lower>().solve(Mat(b)));
    b = x;
  }
  return 0;
}

KL_EXPORT void kl_cuda_factor_free(kl_cuda_factor* f) { delete f; }

struct kl_cuda_rows {
  int type = 0, degree = 1;
  double gamma = 1, scale = 1, offset = 0;
  Mat X;  // n x d
  Eigen::VectorXd xn;
  // type 4: a hierarchical Gaussian kernel
  std::vector<int> leaf, offsets, members;
  std::vector<double> weights, scales;
  double tree(const double* a, std::ptrdiff_t inca, int j) const {
    const int nn = static_cast<int>(leaf.size());
    std::vector<double> om(nn);
    double e = 0;
    for (int v = 0; v < nn; ++v) {
      double acc = 0;
      for (int k = offsets[v]; k < offsets[v + 1]; ++k) {
        const double w = weights[k];
        if (leaf[v]) {
          const double df = a[members[k] * inca] - X(j, members[k]);
          acc += w * w * df * df;
        } else {
          acc += w * w * om[members[k]];
        }
      }
      e = scales[v] * acc;
      om[v] = -std::expm1(-e);
    }
    return std::exp(-e);
  }
  double k(const double* a, std::ptrdiff_t inca, double an, int j) const {
    if (type == 4) return tree(a, inca, j);
    double dot = 0;
    for (Eigen::Index c = 0; c < X.cols(); ++c) dot += a[c * inca] * X(j, c);
    if (type == 2) return dot;
    if (type == 3) {
      double r = 1, b = scale * dot + offset;
      for (int e = degree; e > 0; e >>= 1) {
        if (e & 1) r *= b;
        b *= b;
      }
      return r;
    }
    double d2 = an + xn[j] - 2 * dot;
    if (d2 < 0) d2 = 0;
    return std::exp(-gamma * (type == 1 ? std::sqrt(d2) : d2));
  }
};

KL_EXPORT int kl_cuda_rows_create(const double* X, int n, int d, int ldx, int type, double gamma,
                                  double degree, double scale, double offset, kl_cuda_rows** out,
                                  char* err, int err_len) {
  clear(err, err_len);
  if (!out) return 1;
  *out = nullptr;
  if (n < 1 || d < 1 || ldx < n || !X || type < 0 || type > 3 ||
      (type == 3 && !(degree >= 1 && degree == std::floor(degree)))) {
    set_err(err, err_len, "bad arguments");
    return 1;
  }
  auto* h = new (std::nothrow) kl_cuda_rows;
  if (!h) return 1;
  h->type = type;
  h->degree = type == 3 ? static_cast<int>(degree) : 1;
  h->gamma = gamma;
  h->scale = scale;
  h->offset = offset;
  h->X = Eigen::Map<const Mat, 0, Stride>(X, n, d, Stride(ldx));
  h->xn = h->X.rowwise().squaredNorm();
  *out = h;
  return 0;
}

// Rows computed by kl_cuda_rows_compute since the library was loaded (the mock only: lets the
// parity program see that the core's GPU backend used the device rows).
long long g_rows_computed = 0;
KL_EXPORT long long kl_cuda_mock_rows_computed(void) { return g_rows_computed; }

KL_EXPORT int kl_cuda_rows_create_tree(const double* X, int n, int d, int ldx, int nnodes,
                                       const int* leaf, const int* offsets, const int* members,
                                       const double* weights, const double* scales,
                                       kl_cuda_rows** out, char* err, int err_len) {
  clear(err, err_len);
  if (!out) return 1;
  *out = nullptr;
  if (nnodes < 1 || nnodes > KL_CUDA_MAX_TREE_NODES || !leaf || !offsets || !members ||
      !weights || !scales || offsets[0] != 0) {
    set_err(err, err_len, "bad tree");
    return 1;
  }
  for (int v = 0; v < nnodes; ++v)
    for (int k = offsets[v]; k < offsets[v + 1]; ++k)
      if (leaf[v] ? (members[k] < 0 || members[k] >= d) : (members[k] < 0 || members[k] >= v)) {
        set_err(err, err_len, "member %d of node %d is out of range", members[k], v);
        return 1;
      }
  kl_cuda_rows* h = nullptr;
  if (kl_cuda_rows_create(X, n, d, ldx, 0, 1, 1, 1, 0, &h, err, err_len) != 0) return 1;
  h->type = 4;
  h->leaf.assign(leaf, leaf + nnodes);
  h->offsets.assign(offsets, offsets + nnodes + 1);
  h->members.assign(members, members + offsets[nnodes]);
  h->weights.assign(weights, weights + offsets[nnodes]);
  h->scales.assign(scales, scales + nnodes);
  *out = h;
  return 0;
}

KL_EXPORT int kl_cuda_rows_compute(kl_cuda_rows* h, const int* idx, int count, float* out,
                                   long long ldo, char* err, int err_len) {
  clear(err, err_len);
  if (!h) return 1;
  g_rows_computed += count;
  const int n = static_cast<int>(h->X.rows());
  if (count < 0 || ldo < n) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  for (int r = 0; r < count; ++r) {
    if (idx[r] < 0 || idx[r] >= n) {
      set_err(err, err_len, "row index %d out of range (n = %d)", idx[r], n);
      return 1;
    }
    const int p = idx[r];
    for (int q = 0; q < n; ++q)
      out[r * ldo + q] = static_cast<float>(h->k(h->X.data() + p, n, h->xn[p], q));
  }
  return 0;
}

KL_EXPORT int kl_cuda_rows_block(kl_cuda_rows* h, const double* Z, int m, int ldz, double* K,
                                 int ldk, char* err, int err_len) {
  clear(err, err_len);
  if (!h) return 1;
  const int n = static_cast<int>(h->X.rows()), d = static_cast<int>(h->X.cols());
  if (m < 0 || ldz < m || ldk < m) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  for (int i = 0; i < m; ++i) {
    double zn = 0;
    for (int c = 0; c < d; ++c) zn += Z[i + static_cast<std::size_t>(c) * ldz] * Z[i + static_cast<std::size_t>(c) * ldz];
    for (int j = 0; j < n; ++j) K[i + static_cast<std::size_t>(j) * ldk] = h->k(Z + i, ldz, zn, j);
  }
  return 0;
}

// Tree passes run since the library was loaded (the mock only, as kl_cuda_mock_rows_computed).
long long g_tree_passes = 0;
KL_EXPORT long long kl_cuda_mock_tree_passes(void) { return g_tree_passes; }

KL_EXPORT int kl_cuda_rows_tree_pass(kl_cuda_rows* h, const double* Z, int m, int ldz,
                                     int triangle, const double* V, int ldv, int L,
                                     const double* U, int ldu, double* KV, int ldkv, double* grad,
                                     char* err, int err_len) {
  clear(err, err_len);
  if (!h || h->type != 4) {
    set_err(err, err_len, "the pass needs the points of a hierarchical kernel");
    return 1;
  }
  const int n = static_cast<int>(h->X.rows());
  const int nn = static_cast<int>(h->leaf.size()), M = h->offsets[nn];
  if (L < 1 || L > KL_CUDA_MAX_TREE_OUTPUTS || !V || ldv < n ||
      (triangle ? (m != n || KV) : (m < 0 || (m > 0 && (!Z || ldz < m)))) ||
      (KV && ldkv < m) || (grad && (!U || ldu < m)) ||
      (grad && M > KL_CUDA_MAX_TREE_WEIGHTS)) {
    set_err(err, err_len, "bad arguments");
    return 1;
  }
  ++g_tree_passes;
  const int d = static_cast<int>(h->X.cols());
  const Mat Xt = h->X.transpose();  // d x n
  std::vector<double> gsum(M, 0.0), kv(static_cast<std::size_t>(m) * L, 0.0);
  std::vector<double> z(d), kval(nn), om(nn), gb(nn);
  for (int a = 0; a < m; ++a) {
    for (int c = 0; c < d; ++c)
      z[c] = triangle ? h->X(a, c) : Z[a + static_cast<std::size_t>(c) * ldz];
    for (int b = triangle ? a + 1 : 0; b < n; ++b) {
      const double* x = Xt.data() + static_cast<std::size_t>(b) * d;
      for (int v = 0; v < nn; ++v) {
        double acc = 0;
        for (int k = h->offsets[v]; k < h->offsets[v + 1]; ++k) {
          const double w = h->weights[k];
          const double t = h->leaf[v] ? (z[h->members[k]] - x[h->members[k]]) *
                                            (z[h->members[k]] - x[h->members[k]])
                                      : om[h->members[k]];
          acc += w * w * t;
        }
        const double e = h->scales[v] * acc;
        kval[v] = std::exp(-e);
        om[v] = -std::expm1(-e);
      }
      const double kr = kval[nn - 1];
      for (int l = 0; l < L; ++l) kv[a + static_cast<std::size_t>(l) * m] += kr * V[b + static_cast<std::size_t>(l) * ldv];
      if (!grad) continue;
      double adj = 0;
      for (int l = 0; l < L; ++l)
        adj += U[a + static_cast<std::size_t>(l) * ldu] * V[b + static_cast<std::size_t>(l) * ldv];
      gb[nn - 1] = adj * kr;
      for (int v = nn - 1; v >= 0; --v) {
        const double s = h->scales[v];
        for (int k = h->offsets[v]; k < h->offsets[v + 1]; ++k) {
          const int c = h->members[k];
          const double w = h->weights[k];
          const double t = h->leaf[v] ? (z[c] - x[c]) * (z[c] - x[c]) : om[c];
          gsum[k] += -2.0 * s * w * gb[v] * t;
          if (!h->leaf[v]) gb[c] = gb[v] * s * w * w * kval[c];
        }
      }
    }
  }
  if (KV)
    for (int l = 0; l < L; ++l)
      for (int a = 0; a < m; ++a)
        KV[a + static_cast<std::size_t>(l) * ldkv] = kv[a + static_cast<std::size_t>(l) * m];
  if (grad)
    for (int k = 0; k < M; ++k) grad[k] = gsum[k];
  return 0;
}

// Tessellated blocks computed since the library was loaded (the mock only).
long long g_tessellated_blocks = 0;
KL_EXPORT long long kl_cuda_mock_tessellated_blocks(void) { return g_tessellated_blocks; }

KL_EXPORT int kl_cuda_tessellated_block(const double* X, const double* F, const double* G,
                                        int n, const double* Y, const double* Zm,
                                        const double* Zt, int m, int d, int h,
                                        const double* upper, double* K, int ldk, char* err,
                                        int err_len) {
  clear(err, err_len);
  if (n < 0 || m < 0 || d < 1 || h < 1 || ldk < n) {
    set_err(err, err_len, "bad dimensions");
    return 1;
  }
  if (n == 0 || m == 0) return 0;
  ++g_tessellated_blocks;
  using CMap = Eigen::Map<const Mat>;
  const Mat T1 = CMap(F, n, h) * CMap(Zm, m, h).transpose();
  const Mat T2 = CMap(G, n, 2 * h) * CMap(Zt, m, 2 * h).transpose();
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) {
      double a = 1.0;
      for (int c = 0; c < d; ++c)
        a *= upper[c] - std::max(X[i + static_cast<std::size_t>(c) * n], Y[j + static_cast<std::size_t>(c) * m]);
      K[i + static_cast<std::size_t>(j) * ldk] = a * T1(i, j) + T2(i, j);
    }
  return 0;
}

KL_EXPORT void kl_cuda_rows_free(kl_cuda_rows* h) { delete h; }

KL_EXPORT void kl_cuda_release(void) {}
