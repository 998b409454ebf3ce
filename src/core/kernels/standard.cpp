#include "kernels/standard.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "linalg/vexp.hpp"
#include "linalg/simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

float exp_neg(float x) {
  // x = n ln 2 + r with |r| <= ln(2) / 2, a degree-6 polynomial for exp(r) and 2^n from the
  // exponent bits.
  const bool under = x < -87.0f;
  x = x < -87.0f ? -87.0f : x;
  const float t = x * 1.44269504088896341f - 0.5f;
  const int n = static_cast<int>(t);  // truncation of t <= 0 rounds towards 0: n = round(x log2 e)
  const float fn = static_cast<float>(n);
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float r2 = r * r;
  float q = 1.9875691500e-4f;
  q = q * r + 1.3981999507e-3f;
  q = q * r + 8.3334519073e-3f;
  q = q * r + 4.1665795894e-2f;
  q = q * r + 1.6666665459e-1f;
  q = q * r + 5.0000001201e-1f;
  const float e = q * r2 + r + 1.0f;
  int bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return under ? 0.0f : e * scale;
}

void validate(const KernelSpec& s) {
  switch (s.type) {
    case KernelType::Gaussian:
    case KernelType::Laplacian:
      if (!(s.gamma > 0) || !std::isfinite(s.gamma))
        throw Error("gamma must be a positive finite number");
      break;
    case KernelType::Linear:
      break;
    case KernelType::Polynomial:
      if (!(s.degree >= 1) || s.degree != std::floor(s.degree) || s.degree > 1000)
        throw Error("degree must be an integer >= 1");
      if (!std::isfinite(s.scale) || !std::isfinite(s.offset))
        throw Error("scale and offset must be finite");
      break;
    default:
      throw Error("unknown kernel type");
  }
}

namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The four standard kernels differ only in the map applied to an inner product (or to a squared
// distance built from it); each map is a small struct and the kernel class is one template.
struct GaussianOp {
  static constexpr bool distance = true;
  static constexpr bool exp_form = true;  // op(d2) = exp(-exponent(d2)), exponent >= 0
  static constexpr bool linear_exponent = true;  // exponent(d2) = g * d2
  double g;
  explicit GaussianOp(const KernelSpec& s) : g(s.gamma) {}
  double exponent(double d2) const { return g * d2; }
  double operator()(double d2) const { return std::exp(-g * d2); }
  float single(double d2) const { return exp_neg(static_cast<float>(-g * d2)); }
  double diag(double) const { return 1.0; }
  static const char* name() { return "gaussian"; }
};

struct LaplacianOp {
  static constexpr bool distance = true;
  static constexpr bool exp_form = true;
  static constexpr bool linear_exponent = false;
  double g;
  explicit LaplacianOp(const KernelSpec& s) : g(s.gamma) {}
  double exponent(double d2) const { return g * std::sqrt(d2); }
  double operator()(double d2) const { return std::exp(-g * std::sqrt(d2)); }
  float single(double d2) const { return exp_neg(static_cast<float>(-g * std::sqrt(d2))); }
  double diag(double) const { return 1.0; }
  static const char* name() { return "laplacian"; }
};

struct LinearOp {
  static constexpr bool distance = false;
  static constexpr bool exp_form = false;
  explicit LinearOp(const KernelSpec&) {}
  double operator()(double ip) const { return ip; }
  float single(double ip) const { return static_cast<float>(ip); }
  double diag(double norm2) const { return norm2; }
  static const char* name() { return "linear"; }
};

struct PolynomialOp {
  static constexpr bool distance = false;
  static constexpr bool exp_form = false;
  double scale, offset;
  int deg;
  explicit PolynomialOp(const KernelSpec& s)
      : scale(s.scale), offset(s.offset), deg(static_cast<int>(s.degree)) {}
  double operator()(double ip) const { return ipow(scale * ip + offset, deg); }
  float single(double ip) const { return static_cast<float>((*this)(ip)); }
  double diag(double norm2) const { return (*this)(norm2); }
  static const char* name() { return "polynomial"; }
};

// The factor the squared distances are computed with: the exponent itself when it is linear
// in them (the Gaussian kernel), else 1 and the exponent applied afterwards.
template <class Op>
double exponent_scale(const Op& op) {
  if constexpr (Op::linear_exponent) return op.g;
  return 1.0;
}

// G(i, j) <- op(G(i, j)) for an inner-product block G, with the squared norms of its rows and
// columns for the distance kernels. The exponential kernels go through the vectorised exp of
// linalg/vexp.hpp when the processor has it (`level`).
template <class Op>
void finish_block(const Op& op, const double* xn, const double* zn, MatRef G, SimdLevel level) {
  const Eigen::Index r = G.rows(), c = G.cols();
  for (Eigen::Index j = 0; j < c; ++j) {
    double* g = G.col(j).data();
    if (Op::distance) {
      const double zj = zn[j];
      if constexpr (Op::exp_form) {
        if constexpr (Op::linear_exponent) {
          if (level != SimdLevel::none) {
            hgk_exp_dist(xn, zj, op.g, g, r);  // exp(-g d2), vectorised from end to end
            continue;
          }
        }
        if (level != SimdLevel::none) {
          for (Eigen::Index i = 0; i < r; ++i)
            g[i] = op.exponent(std::max(xn[i] + zj - 2.0 * g[i], 0.0));
          hgk_exp_pair(g, g, nullptr, r);  // the vectorised exp(-s) the hierarchical kernel uses
          continue;
        }
      }
      for (Eigen::Index i = 0; i < r; ++i) g[i] = op(std::max(xn[i] + zj - 2.0 * g[i], 0.0));
    } else {
      for (Eigen::Index i = 0; i < r; ++i) g[i] = op(g[i]);
    }
  }
}

// Block sizes of the standard kernel matrix: fixed, so results are reproducible.
constexpr Eigen::Index kRowBlock = 512;
constexpr Eigen::Index kColBlock = 1024;

template <class Op>
void standard_block(const Op& op, CMatRef X, CMatRef Z, MatRef K, int threads,
                    const Callbacks& cb) {
  const Eigen::Index n = X.rows(), m = Z.rows(), d = X.cols();
  if (Z.cols() != d) throw Error("X and Z must have the same number of columns");
  if (K.rows() != n || K.cols() != m) throw Error("K has the wrong shape");
  if (n == 0 || m == 0) return;
  threads = clamp_threads(threads);
  Vec xn, zn;
  if (Op::distance) {
    xn = X.rowwise().squaredNorm();
    zn = Z.rowwise().squaredNorm();
  }
  const Eigen::Index nrb = (n + kRowBlock - 1) / kRowBlock;
  const Eigen::Index ncb = (m + kColBlock - 1) / kColBlock;
  const Eigen::Index nblocks = nrb * ncb;
  const SimdLevel level = simd_level();
  // Sweeps of a bounded number of blocks let the caller interrupt long computations.
  const Eigen::Index sweep = std::max<Eigen::Index>(1, 8 * threads);
  for (Eigen::Index start = 0; start < nblocks; start += sweep) {
    const Eigen::Index stop = std::min(nblocks, start + sweep);
    bool failed = false;
    {
      const EigenSerial eigen_serial(!(stop - start > 1));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (stop - start > 1)
#endif
      for (Eigen::Index b = start; b < stop; ++b) {
        try {
          const Eigen::Index rb = b / ncb, cbk = b % ncb;
          const Eigen::Index r0 = rb * kRowBlock, c0 = cbk * kColBlock;
          const Eigen::Index nr = std::min(kRowBlock, n - r0), nc = std::min(kColBlock, m - c0);
          // computed in place in K (column-major blocks: contiguous columns)
          auto G = K.block(r0, c0, nr, nc);
          if constexpr (Op::exp_form) {
            if (level != SimdLevel::none && d <= kDirectKernelCols) {
              // few columns: squared distances directly, vectorised over the rows, then exp
              for (Eigen::Index j = 0; j < nc; ++j) {
                double* g = G.col(j).data();
                hgk_leaf_distances(X.data() + r0, X.outerStride(), Z.data() + c0 + j,
                                   Z.outerStride(), nr, 1, d, exponent_scale(op), g);
                if constexpr (!Op::linear_exponent)
                  for (Eigen::Index i = 0; i < nr; ++i) g[i] = op.exponent(g[i]);
                hgk_exp_pair(g, g, nullptr, nr);
              }
              continue;
            }
          }
          if (level != SimdLevel::none)  // G(i, j) = sum_k X(r0 + i, k) Z(c0 + j, k)
            gemm_block(level, nr, nc, d, X.data() + r0, 1, X.outerStride(), Z.data() + c0,
                       Z.outerStride(), 1, G.data(), 1, K.outerStride());
          else
            G.noalias() = X.middleRows(r0, nr) * Z.middleRows(c0, nc).transpose();
          finish_block(op, Op::distance ? xn.data() + r0 : nullptr,
                       Op::distance ? zn.data() + c0 : nullptr, G, level);
        } catch (...) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
          failed = true;
        }
      }
    }
    if (failed) throw Error("kernel matrix: out of memory while computing a block");
    cb.check();
    cb.report(static_cast<double>(stop) / static_cast<double>(nblocks));
  }
}

template <class Op>
double standard_value(const Op& op, const double* x, std::ptrdiff_t incx, const double* z,
                      std::ptrdiff_t incz, int d) {
  double acc = 0.0;
  if (Op::distance) {
    for (int k = 0; k < d; ++k) {
      const double t = x[k * incx] - z[k * incz];
      acc += t * t;
    }
  } else {
    for (int k = 0; k < d; ++k) acc += x[k * incx] * z[k * incz];
  }
  return op(acc);
}

// The rows of a standard kernel over a row-major copy of the points and their squared norms.
template <class Op>
class StandardRows final : public KernelRows {
 public:
  StandardRows(const Op& op, KernelPtr owner, RowMat X)
      : op_(op), owner_(std::move(owner)), X_(std::move(X)),
        norms_(X_.rowwise().squaredNorm()) {
    // Rows of an exponential kernel on few columns are computed from a column-major copy.
    if (Op::exp_form && X_.cols() <= kRowCopyCols && simd_level() != SimdLevel::none) Xt_ = X_;
  }
  int size() const override { return static_cast<int>(X_.rows()); }
  double diag(int p) const override { return op_.diag(norms_[p]); }
  double value(int i, int j) const override {
    return standard_value(op_, X_.row(i).data(), 1, X_.row(j).data(), 1,
                          static_cast<int>(X_.cols()));
  }
  void row(int p, float* out, int threads) const override {
    const int n = size(), d = static_cast<int>(X_.cols());
    const double* xp = X_.data() + static_cast<std::size_t>(p) * d;
    const double np = norms_[p];
    const int chunk = 512;
    const int nchunks = (n + chunk - 1) / chunk;
    const double work = static_cast<double>(n) * (d + 10);
    const int nt = (threads > 1 && work > 1.5e5) ? threads : 1;
    (void)nt;
    const SimdLevel level = simd_level();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
    for (int c = 0; c < nchunks; ++c) {
      const int lo = c * chunk, hi = std::min(n, lo + chunk);
      double dots[chunk];
      float* o = out + lo;
      const double* nq = norms_.data() + lo;
      const int len = hi - lo;
      if constexpr (Op::exp_form) {
        if (level != SimdLevel::none) {
          // the exponents, their vectorised exp in double (as in kernel blocks), then floats;
          // few columns: squared distances from the column-major copy, vectorised over rows
          if (Xt_.size() > 0) {
            hgk_leaf_distances(Xt_.data() + lo, n, xp, 1, len, 1, d, exponent_scale(op_), dots);
            if constexpr (!Op::linear_exponent)
              for (int q = 0; q < len; ++q) dots[q] = op_.exponent(dots[q]);
          } else {
            Eigen::Map<const RowMat> Xc(X_.data() + static_cast<std::size_t>(lo) * d, len, d);
            Eigen::Map<Vec>(dots, len).noalias() = Xc * Eigen::Map<const Vec>(xp, d);
            for (int q = 0; q < len; ++q)
              dots[q] = op_.exponent(std::max(np + nq[q] - 2.0 * dots[q], 0.0));
          }
          hgk_exp_pair(dots, dots, nullptr, len);
          for (int q = 0; q < len; ++q) o[q] = static_cast<float>(dots[q]);
          continue;
        }
      }
      Eigen::Map<const RowMat> Xc(X_.data() + static_cast<std::size_t>(lo) * d, len, d);
      Eigen::Map<Vec>(dots, len).noalias() = Xc * Eigen::Map<const Vec>(xp, d);
      if (Op::distance) {
#ifdef _OPENMP
#pragma omp simd
#endif
        for (int q = 0; q < len; ++q) {
          double d2 = np + nq[q] - 2.0 * dots[q];
          d2 = d2 > 0.0 ? d2 : 0.0;
          o[q] = op_.single(d2);
        }
      } else {
        for (int q = 0; q < len; ++q) o[q] = op_.single(dots[q]);
      }
    }
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const override {
    const int r = static_cast<int>(rows.size()), c = static_cast<int>(cols.size());
    Mat A(r, X_.cols()), B(c, X_.cols());
    for (int i = 0; i < r; ++i) A.row(i) = X_.row(rows[i]);
    for (int j = 0; j < c; ++j) B.row(j) = X_.row(cols[j]);
    standard_block(op_, A, B, out, threads, Callbacks());
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    RowMat S(rows.size(), X_.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) S.row(i) = X_.row(rows[i]);
    return std::unique_ptr<KernelRows>(new StandardRows(op_, owner_, std::move(S)));
  }

 private:
  Op op_;
  KernelPtr owner_;
  static constexpr Eigen::Index kRowCopyCols = 32;
  RowMat X_;
  Vec norms_;
  Mat Xt_;  // column-major copy of X_, or empty
};

template <class Op>
class StandardKernel final : public Kernel {
 public:
  explicit StandardKernel(const KernelSpec& s) : spec_(s), op_(s) {}
  std::string name() const override { return Op::name(); }
  void block(CMatRef X, CMatRef Z, MatRef K, int threads, const Callbacks& cb) const override {
    standard_block(op_, X, Z, K, threads, cb);
  }
  double value(const double* x, std::ptrdiff_t incx, const double* z, std::ptrdiff_t incz,
               int d) const override {
    return standard_value(op_, x, incx, z, incz, d);
  }
  std::unique_ptr<KernelRows> rows(CMatRef X) const override {
    return std::unique_ptr<KernelRows>(new StandardRows<Op>(op_, share(*this), RowMat(X)));
  }
  const KernelSpec* standard() const override { return &spec_; }

 private:
  KernelSpec spec_;
  Op op_;
};

}  // namespace

KernelPtr make_standard_kernel(const KernelSpec& s) {
  validate(s);
  switch (s.type) {
    case KernelType::Gaussian:
      return std::make_shared<StandardKernel<GaussianOp>>(s);
    case KernelType::Laplacian:
      return std::make_shared<StandardKernel<LaplacianOp>>(s);
    case KernelType::Linear:
      return std::make_shared<StandardKernel<LinearOp>>(s);
    case KernelType::Polynomial:
      return std::make_shared<StandardKernel<PolynomialOp>>(s);
  }
  throw Error("unknown kernel type");
}

double kernel_value(const KernelSpec& s, const double* x, std::ptrdiff_t incx, const double* z,
                    std::ptrdiff_t incz, int d) {
  return make_standard_kernel(s)->value(x, incx, z, incz, d);
}

void kernel_matrix(const KernelSpec& s, CMatRef X, CMatRef Z, MatRef K, int threads,
                   const Callbacks& cb) {
  make_standard_kernel(s)->block(X, Z, K, threads, cb);
}

}  // namespace kl
