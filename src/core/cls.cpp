#include "cls.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>
#include <utility>

#include "chol.hpp"
#include "simd.hpp"

namespace kl {
namespace {

using RowMapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Row blocks of a single-precision row-major design.
struct SourceF32 {
  const RowMajorF32& X;
  using Scalar = float;
  Eigen::Index rows() const { return X.n; }
  Eigen::Index cols() const { return X.p; }
  RowMapF block(Eigen::Index r0, Eigen::Index len) const { return RowMapF(X.row(r0), len, X.p); }
  // Element (i, j) at data(r0)[(i - r0) * row_stride() + j * col_stride()].
  const float* data(Eigen::Index r0) const { return X.row(r0); }
  Eigen::Index row_stride() const { return X.p; }
  Eigen::Index col_stride() const { return 1; }
};

// Row blocks of a double-precision column-major design.
struct SourceF64 {
  const CMatRef& X;
  using Scalar = double;
  Eigen::Index rows() const { return X.rows(); }
  Eigen::Index cols() const { return X.cols(); }
  auto block(Eigen::Index r0, Eigen::Index len) const { return X.middleRows(r0, len); }
  const double* data(Eigen::Index r0) const { return X.data() + r0; }
  Eigen::Index row_stride() const { return 1; }
  Eigen::Index col_stride() const { return X.outerStride(); }
};

const Eigen::Index kGramChunk = 2048;  // rows per accumulation step of the Gram matrix
const Eigen::Index kGramTile = 512;    // columns of a Gram tile

// Single-precision tiles go through the widest vectorised kernel of simd.hpp up to
// `max_level` that the processor has; otherwise (and for double input) through Eigen.
template <class Src>
Mat gram_impl(const Src& s, int threads, SimdLevel max_level, const Callbacks& cb) {
  using T = typename Src::Scalar;
  const Eigen::Index n = s.rows(), p = s.cols();
  Mat G = Mat::Zero(p + 1, p + 1);
  const Eigen::Index nchunks = (n + kGramChunk - 1) / kGramChunk;
  Vec colsum = Vec::Zero(p);
  const SimdLevel level =
      std::is_same<T, float>::value ? std::min(max_level, simd_level()) : SimdLevel::none;
  for (Eigen::Index c = 0; c < nchunks; ++c) {
    cb.check();
    const Eigen::Index r0 = c * kGramChunk, len = std::min(kGramChunk, n - r0);
    const auto Xc = s.block(r0, len);
    add_crossprod_lower(level, s.data(r0), s.row_stride(), s.col_stride(), len, p, kGramTile,
                        G.topLeftCorner(p, p), threads);
    for (Eigen::Index i = 0; i < len; ++i) colsum += Xc.row(i).transpose().template cast<double>();
    cb.report(static_cast<double>(c + 1) / static_cast<double>(nchunks));
  }
  for (Eigen::Index j = 1; j < p; ++j)
    G.col(j).head(j) = G.row(j).head(j).transpose();
  G.col(p).head(p) = colsum;
  G.row(p).head(p) = colsum.transpose();
  G(p, p) = static_cast<double>(n);
  return G;
}

// [X 1]' R: (p + 1) x K, summed over the fixed row blocks in order.
template <class Src>
Mat crossprod_impl(const Src& s, const Mat& R, int threads) {
  using T = typename Src::Scalar;
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index n = s.rows(), p = s.cols(), K = R.cols();
  const RowBlocks bl = make_row_blocks(n);
  std::vector<Mat> part(static_cast<std::size_t>(bl.count));
  {
    const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
    for (int j = 0; j < bl.count; ++j) {
      const Eigen::Index r0 = bl.start(j), len = bl.size(j);
      const MT Rb = R.middleRows(r0, len).template cast<T>();
      MT prod(p, K);
      prod.noalias() = s.block(r0, len).transpose() * Rb;
      Mat& out = part[static_cast<std::size_t>(j)];
      out.resize(p + 1, K);
      out.topRows(p) = prod.template cast<double>();
      out.row(p) = R.middleRows(r0, len).colwise().sum();
    }
  }
  Mat total = Mat::Zero(p + 1, K);
  for (const Mat& m : part) total += m;
  return total;
}

// [X 1] W for W with p + 1 rows: n x K.
template <class Src>
Mat product_impl(const Src& s, const Mat& W, int threads) {
  using T = typename Src::Scalar;
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index n = s.rows(), p = s.cols(), K = W.cols();
  const MT Wt = W.topRows(p).template cast<T>();
  Mat out(n, K);
  const RowBlocks bl = make_row_blocks(n);
  {
    const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
    for (int j = 0; j < bl.count; ++j) {
      const Eigen::Index r0 = bl.start(j), len = bl.size(j);
      MT prod(len, K);
      prod.noalias() = s.block(r0, len) * Wt;
      out.middleRows(r0, len) = prod.template cast<double>();
      out.middleRows(r0, len).rowwise() += W.row(p);
    }
  }
  return out;
}

// [S, S^2 / 2, S^3 / 6, S^4 / 24], elementwise.
Mat link_basis(const Mat& S) {
  const Eigen::Index K = S.cols();
  Mat E(S.rows(), 4 * K);
  E.leftCols(K) = S;
  E.middleCols(K, K) = S.array().square() / 2.0;
  E.middleCols(2 * K, K) = S.array().cube() / 6.0;
  E.rightCols(K) = S.array().square().square() / 24.0;
  return E;
}

double error_rate(const Mat& S, const IVec& y) {
  Eigen::Index wrong = 0;
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    Eigen::Index k = 0;
    S.row(i).maxCoeff(&k);
    if (k != y[i]) ++wrong;
  }
  return static_cast<double>(wrong) / static_cast<double>(S.rows());
}

template <class Src>
ClsFit cls_fit_impl(const Src& s, const IVec& y, int K, const ClsOptions& opt,
                    const Callbacks& cb) {
  const Eigen::Index n = s.rows(), p = s.cols();
  if (n < 1 || y.size() != n) throw Error("cls: labels and rows differ in number");
  if (K < 2) throw Error("cls: at least two classes are needed");
  if (!(opt.lambda >= 0) || !std::isfinite(opt.lambda)) throw Error("cls: lambda must be >= 0");
  for (Eigen::Index i = 0; i < n; ++i)
    if (y[i] < 0 || y[i] >= K) throw Error("cls: a label is out of range");
  const int threads = clamp_threads(opt.threads);
  const double rn = std::sqrt(static_cast<double>(n));
  const double gram_share = 0.6, chol_share = 0.2;
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const auto t0 = clock::now();
  Mat A = gram_impl(s, threads, SimdLevel::avx512, cb.stage(0.0, gram_share));
  const auto t1 = clock::now();
  A *= 0.5;
  A.diagonal().array() += opt.lambda * rn;
  cb.check();
  // Exactly collinear features with lambda = 0 can leave tiny positive pivots from rounding:
  // treat a squared pivot ratio at rounding level as singular too.
  const bool pd = cholesky_lower(A, threads, SimdLevel::avx512,
                                 cb.stage(gram_share, gram_share + chol_share));
  const auto piv = A.diagonal();
  if (!pd || !(piv.minCoeff() > 0) ||
      piv.minCoeff() * piv.minCoeff() <
          piv.maxCoeff() * piv.maxCoeff() * static_cast<double>(p + 1) *
              Eigen::NumTraits<double>::epsilon())
    throw Error("cls: the least-squares system is not positive definite; use lambda > 0");
  const auto solve = [&A](const Mat& B) { return cholesky_solve(A, B); };
  cb.report(gram_share + chol_share);
  const auto t2 = clock::now();
  Mat Y = Mat::Zero(n, K);
  for (Eigen::Index i = 0; i < n; ++i) Y(i, y[i]) = 1.0;
  ClsFit f;
  f.seconds_gram = secs(t0, t1);
  f.seconds_factor = secs(t1, t2);
  f.W0 = solve(crossprod_impl(s, Y, threads));
  Mat S = product_impl(s, f.W0, threads);
  std::vector<double> change, err;
  const double scale = std::sqrt(static_cast<double>(n) * static_cast<double>(K));
  for (int t = 0; t < opt.max_iter; ++t) {
    cb.check();
    const Mat E = link_basis(S);
    Mat EtE = E.transpose() * E;
    EtE.diagonal().array() += rn;
    const Mat EtY = E.transpose() * Y;
    Eigen::LLT<Mat> small(EtE);
    if (small.info() != Eigen::Success) throw Error("cls: the calibration system failed");
    Mat C = small.solve(EtY);
    Mat P = E * C;
    simplex_project_rows(P);
    Mat D = solve(crossprod_impl(s, Mat(Y - P), threads));
    Mat Snew = P + product_impl(s, D, threads);
    change.push_back((Snew - S).norm() / scale);
    S.swap(Snew);
    err.push_back(error_rate(S, y));
    f.link.push_back(std::move(C));
    f.delta.push_back(std::move(D));
    f.iterations = t + 1;
    cb.report(gram_share + chol_share +
              (1.0 - gram_share - chol_share) * static_cast<double>(t + 1) /
                  static_cast<double>(opt.max_iter));
    if (change.back() < opt.tol) {
      f.converged = true;
      break;
    }
  }
  f.seconds_steps = secs(t2, clock::now());
  f.change = Eigen::Map<const Vec>(change.data(), static_cast<Eigen::Index>(change.size()));
  f.train_error = Eigen::Map<const Vec>(err.data(), static_cast<Eigen::Index>(err.size()));
  return f;
}

}  // namespace

void simplex_project_rows(MatRef S) {
  const Eigen::Index K = S.cols();
  std::vector<double> u(static_cast<std::size_t>(K));
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    for (Eigen::Index k = 0; k < K; ++k) u[static_cast<std::size_t>(k)] = S(i, k);
    std::sort(u.begin(), u.end(), std::greater<double>());
    // theta = (sum of the r largest - 1) / r for the largest r with u_r > that value.
    double cum = 0.0, theta = 0.0;
    for (Eigen::Index j = 0; j < K; ++j) {
      cum += u[static_cast<std::size_t>(j)];
      const double t = (cum - 1.0) / static_cast<double>(j + 1);
      if (u[static_cast<std::size_t>(j)] > t) theta = t;
    }
    for (Eigen::Index k = 0; k < K; ++k) S(i, k) = std::max(S(i, k) - theta, 0.0);
  }
}

Mat gram_with_intercept(const RowMajorF32& X, int threads, SimdLevel max_level,
                        const Callbacks& cb) {
  return gram_impl(SourceF32{X}, threads, max_level, cb);
}

Mat gram_with_intercept(const CMatRef& X, int threads, const Callbacks& cb) {
  return gram_impl(SourceF64{X}, threads, SimdLevel::none, cb);
}

ClsFit cls_fit(const RowMajorF32& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb) {
  return cls_fit_impl(SourceF32{X}, y, K, opt, cb);
}

ClsFit cls_fit(const CMatRef& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb) {
  return cls_fit_impl(SourceF64{X}, y, K, opt, cb);
}

Mat cls_scores(const CMatRef& X, const ClsFit& fit, int threads) {
  const Eigen::Index p = X.cols();
  if (fit.W0.rows() != p + 1) throw Error("cls: coefficients of the wrong shape");
  if (fit.link.size() != fit.delta.size()) throw Error("cls: steps of the wrong shape");
  const SourceF64 s{X};
  Mat S = product_impl(s, fit.W0, threads);
  for (std::size_t t = 0; t < fit.link.size(); ++t) {
    if (fit.link[t].rows() != 4 * S.cols() || fit.delta[t].rows() != p + 1)
      throw Error("cls: steps of the wrong shape");
    Mat P = link_basis(S) * fit.link[t];
    simplex_project_rows(P);
    S = P + product_impl(s, fit.delta[t], threads);
  }
  return S;
}

}  // namespace kl
