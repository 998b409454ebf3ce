#include "heads/cls.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>
#include <utility>

#include "backend/backend.hpp"
#include "linalg/chol.hpp"
#include "linalg/simd.hpp"

namespace kl {
namespace {

using RowMapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Row blocks of a single-precision row-major design (rows [r0, r0 + n) of X).
struct SourceF32 {
  const float* base;
  Eigen::Index n, p;
  explicit SourceF32(const RowMajorF32& X) : base(X.data.data()), n(X.n), p(X.p) {}
  SourceF32(const RowMajorF32& X, Eigen::Index r0, Eigen::Index len)
      : base(X.data.data() + r0 * X.p), n(len), p(X.p) {}
  using Scalar = float;
  Eigen::Index rows() const { return n; }
  Eigen::Index cols() const { return p; }
  RowMapF block(Eigen::Index r0, Eigen::Index len) const { return RowMapF(data(r0), len, p); }
  // Element (i, j) at data(r0)[(i - r0) * row_stride() + j * col_stride()].
  const float* data(Eigen::Index r0) const { return base + r0 * p; }
  Eigen::Index row_stride() const { return p; }
  Eigen::Index col_stride() const { return 1; }
};

// Row blocks of a double-precision column-major design.
struct SourceF64 {
  CMatRef X;
  using Scalar = double;
  Eigen::Index rows() const { return X.rows(); }
  Eigen::Index cols() const { return X.cols(); }
  auto block(Eigen::Index r0, Eigen::Index len) const { return X.middleRows(r0, len); }
  const double* data(Eigen::Index r0) const { return X.data() + r0; }
  Eigen::Index row_stride() const { return 1; }
  Eigen::Index col_stride() const { return X.outerStride(); }
};

const Eigen::Index kLargeValidation = 5000;  // held-out rows from which one miss ends the walk
// The walk follows a lower held-out error rate only where the squared distance is within this
// share of its best so far: there it can be flat while the error falls, and a value further
// above it cannot be chosen.
const double kFlatLoss = 0.005;
const Eigen::Index kGramSum = 2048;  // rows whose products are summed in single precision
// Rows packed at a time for the Gram matrix: up to this many blocks of kGramSum rows, while
// the packed copy (about 8 bytes per row and column) stays within kGramPackBytes. Each tile of
// G is then read and written once per kGramSum rows, but from the cache after the first.
const Eigen::Index kGramMaxSums = 4;
const double kGramPackBytes = 512.0 * 1024 * 1024;
const Eigen::Index kGramTile = 512;    // columns of a Gram tile

// The column sums of the rows of s, each summed over the rows in order in double, in parallel
// over blocks of columns.
template <class Src>
Vec column_sums(const Src& s, int threads) {
  const Eigen::Index n = s.rows(), p = s.cols(), rs = s.row_stride(), cs = s.col_stride();
  const auto* X = s.data(0);
  Vec out = Vec::Zero(p);
  double* o = out.data();
  const Eigen::Index b = 256;
  const long nb = static_cast<long>((p + b - 1) / b);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (nb > 1)
#else
  (void)threads;
#endif
  for (long t = 0; t < nb; ++t) {
    const Eigen::Index j0 = t * b, j1 = std::min(p, j0 + b);
    if (cs == 1) {
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto* xi = X + i * rs;
        for (Eigen::Index j = j0; j < j1; ++j) o[j] += static_cast<double>(xi[j]);
      }
    } else {
      for (Eigen::Index j = j0; j < j1; ++j) {
        const auto* xj = X + j * cs;
        double acc = 0.0;
        for (Eigen::Index i = 0; i < n; ++i) acc += static_cast<double>(xj[i * rs]);
        o[j] = acc;
      }
    }
  }
  return out;
}

// The rest of [X 1]'[X 1] once the lower triangle of X'X is in G's leading block: its upper
// triangle, and the intercept's row and column (the column sums, in double).
template <class Src>
void finish_gram(const Src& s, Mat& G, int threads) {
  const Eigen::Index p = s.cols();
  mirror_lower(G.data(), G.rows(), p, threads);
  const Vec colsum = column_sums(s, threads);
  G.col(p).head(p) = colsum;
  G.row(p).head(p) = colsum.transpose();
  G(p, p) = static_cast<double>(s.rows());
}

// Single-precision tiles go through the widest vectorised kernel of linalg/simd.hpp up to
// `max_level` that the processor has; otherwise (and for double input) through Eigen.
// With a backend that takes it (the GPU's, for single-precision rows), the sums of X'X run
// there, in the same blocks of kGramSum rows.
template <class Src>
Mat gram_impl(const Src& s, int threads, SimdLevel max_level, const Callbacks& cb,
              Backend* backend = nullptr) {
  using T = typename Src::Scalar;
  const Eigen::Index n = s.rows(), p = s.cols();
  if constexpr (std::is_same<T, float>::value) {
    if (backend && n > 0 && p > 0 && s.col_stride() == 1) {
      Mat G = Mat::Zero(p + 1, p + 1);
      cb.check();
      if (backend->gram_f32(s.data(0), n, p, s.row_stride(), kGramSum, G.topLeftCorner(p, p))) {
        cb.report(1.0);
        finish_gram(s, G, threads);
        return G;
      }
    }
  }
  Mat G(p + 1, p + 1);
  {
    // zeroed in parallel, column by column: most of the cost of a large new matrix is the
    // first touch of its pages
    double* g = G.data();
    const Eigen::Index q = p + 1;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(clamp_threads(threads)) if (q > 256)
#endif
    for (Eigen::Index j = 0; j < q; ++j) std::fill(g + j * q, g + (j + 1) * q, 0.0);
  }
  const double block_bytes =
      8.0 * static_cast<double>(std::max<Eigen::Index>(p, 1)) * static_cast<double>(kGramSum);
  const Eigen::Index sums =
      std::min(kGramMaxSums, std::max<Eigen::Index>(
                                 1, static_cast<Eigen::Index>(kGramPackBytes / block_bytes)));
  const Eigen::Index chunk = sums * kGramSum;
  const Eigen::Index nchunks = (n + chunk - 1) / chunk;
  const SimdLevel level =
      std::is_same<T, float>::value ? std::min(max_level, simd_level()) : SimdLevel::none;
  std::vector<T> store;  // packed rows, kept from chunk to chunk
  for (Eigen::Index c = 0; c < nchunks; ++c) {
    cb.check();
    const Eigen::Index r0 = c * chunk, len = std::min(chunk, n - r0);
    add_crossprod_lower(level, s.data(r0), s.row_stride(), s.col_stride(), len, p, kGramTile,
                        G.topLeftCorner(p, p), threads, &store, kGramSum);
    cb.report(static_cast<double>(c + 1) / static_cast<double>(nchunks));
  }
  finish_gram(s, G, threads);
  return G;
}

// The same with every product summed in double precision (the single-precision rows are
// converted a block at a time): the Gram matrix of the rows as they are stored, positive
// semi-definite to double rounding. About twice the time of gram_impl's sums of blocks of
// kGramSum rows in single precision, whose rounding (a relative 1e-6 to 1e-5) can leave
// [X 1]'[X 1] / 2 + lambda sqrt(n) I indefinite when many features are collinear and lambda is
// small; it is computed only when a factorisation fails on gram_impl's matrix.
template <class Src>
Mat gram_double_sums(const Src& s, int threads, const Callbacks& cb) {
  const Eigen::Index n = s.rows(), p = s.cols();
  if (!std::is_same<typename Src::Scalar, float>::value)
    return gram_impl(s, threads, SimdLevel::none, cb);
  Mat G = Mat::Zero(p + 1, p + 1);
  const SimdLevel level = simd_level();
  // rows per block: a multiple of 256 holding about 64 MB in double
  const Eigen::Index block = std::max<Eigen::Index>(
      256, std::min<Eigen::Index>(4096, (8 << 20) / std::max<Eigen::Index>(p, 1) / 256 * 256));
  std::vector<double> buf;
  std::vector<double> store;
  const int nt = clamp_threads(threads);
  for (Eigen::Index r0 = 0; r0 < n; r0 += block) {
    cb.check();
    const Eigen::Index len = std::min(block, n - r0);
    buf.resize(static_cast<std::size_t>(len * p));
    const auto* src = s.data(r0);
    const Eigen::Index rs = s.row_stride(), cs = s.col_stride();
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (len > 64)
#endif
    for (Eigen::Index i = 0; i < len; ++i)
      for (Eigen::Index j = 0; j < p; ++j)
        buf[static_cast<std::size_t>(i * p + j)] = static_cast<double>(src[i * rs + j * cs]);
    add_crossprod_lower(level, buf.data(), p, 1, len, p, kGramTile, G.topLeftCorner(p, p), nt,
                        level == SimdLevel::none ? nullptr : &store, 0);
    cb.report(static_cast<double>(r0 + len) / static_cast<double>(n));
  }
  finish_gram(s, G, threads);
  return G;
}

// Classes padded to the block of the skinny single-precision kernels.
Eigen::Index padded_classes(Eigen::Index K) {
  const Eigen::Index c = skinny_class_block();
  return (K + c - 1) / c * c;
}

// The single-precision design through the vectorised skinny kernels, when the processor has
// them: [X 1]' R as below (each block's sums in single precision, then added in double in
// block order), and [X 1] W.
Mat crossprod_f32_simd(const SourceF32& s, const Mat& R, int threads, SimdLevel level) {
  const Eigen::Index n = s.rows(), p = s.cols(), K = R.cols(), Kp = padded_classes(K);
  const RowBlocks bl = make_row_blocks(n);
  std::vector<Mat> part(static_cast<std::size_t>(bl.count));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
  for (int j = 0; j < bl.count; ++j) {
    const Eigen::Index r0 = bl.start(j), len = bl.size(j);
    std::vector<float> Rb(static_cast<std::size_t>(len * Kp), 0.0f);
    for (Eigen::Index i = 0; i < len; ++i)
      for (Eigen::Index k = 0; k < K; ++k)
        Rb[static_cast<std::size_t>(i * Kp + k)] = static_cast<float>(R(r0 + i, k));
    std::vector<float> acc(static_cast<std::size_t>(Kp * p), 0.0f);
    rows_crossprod_f32(level, s.data(r0), p, len, p, Rb.data(), Kp, acc.data());
    Mat& out = part[static_cast<std::size_t>(j)];
    out.resize(p + 1, K);
    for (Eigen::Index k = 0; k < K; ++k)
      for (Eigen::Index c = 0; c < p; ++c)
        out(c, k) = static_cast<double>(acc[static_cast<std::size_t>(k * p + c)]);
    out.row(p) = R.middleRows(r0, len).colwise().sum();
  }
  Mat total = Mat::Zero(p + 1, K);
  for (const Mat& m : part) total += m;
  return total;
}

Mat product_f32_simd(const SourceF32& s, const Mat& W, int threads, SimdLevel level) {
  const Eigen::Index n = s.rows(), p = s.cols(), K = W.cols(), Kp = padded_classes(K);
  std::vector<float> Wt(static_cast<std::size_t>(Kp * p), 0.0f);
  for (Eigen::Index k = 0; k < K; ++k)
    for (Eigen::Index c = 0; c < p; ++c)
      Wt[static_cast<std::size_t>(k * p + c)] = static_cast<float>(W(c, k));
  Mat out(n, K);
  const RowBlocks bl = make_row_blocks(n);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
  for (int j = 0; j < bl.count; ++j) {
    const Eigen::Index r0 = bl.start(j), len = bl.size(j);
    std::vector<float> prod(static_cast<std::size_t>(len * Kp));
    rows_times_f32(level, s.data(r0), p, len, p, Wt.data(), Kp, prod.data());
    for (Eigen::Index i = 0; i < len; ++i)
      for (Eigen::Index k = 0; k < K; ++k)
        out(r0 + i, k) = static_cast<double>(prod[static_cast<std::size_t>(i * Kp + k)]) + W(p, k);
  }
  return out;
}

// [X 1]' R: (p + 1) x K, summed over the fixed row blocks in order.
template <class Src>
Mat crossprod_impl(const Src& s, const Mat& R, int threads) {
  if constexpr (std::is_same<Src, SourceF32>::value) {
    const SimdLevel level = simd_level();
    if (level != SimdLevel::none) return crossprod_f32_simd(s, R, threads, level);
  }
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
  if constexpr (std::is_same<Src, SourceF32>::value) {
    const SimdLevel level = simd_level();
    if (level != SimdLevel::none) return product_f32_simd(s, W, threads, level);
  }
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

void check_cls_args(Eigen::Index n, const IVec& y, int K, double lambda) {
  if (n < 1 || y.size() < n) throw Error("cls: labels and rows differ in number");
  if (K < 2) throw Error("cls: at least two classes are needed");
  if (!(lambda >= 0) || !std::isfinite(lambda)) throw Error("cls: lambda must be >= 0");
  for (Eigen::Index i = 0; i < n; ++i)
    if (y[i] < 0 || y[i] >= K) throw Error("cls: a label is out of range");
}

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The steps of the fit on the rows of s (labels y[0 .. rows - 1]) once the system is
// factored: solve(B) returns A^-1 B. Progress is reported on [chol_share, 1] of cb.
template <class Src, class Solve>
ClsFit cls_steps(const Src& s, const IVec& y, int K, const ClsOptions& opt, const Solve& solve,
                 double chol_share, const Callbacks& cb) {
  const Eigen::Index n = s.rows();
  const int threads = clamp_threads(opt.threads);
  const double rn = std::sqrt(static_cast<double>(n));
  const auto t2 = Clock::now();
  Mat Y = Mat::Zero(n, K);
  for (Eigen::Index i = 0; i < n; ++i) Y(i, y[i]) = 1.0;
  ClsFit f;
  f.W0 = solve(crossprod_impl(s, Y, threads));
  Mat S = product_impl(s, f.W0, threads);
  std::vector<double> change, err;
  const double scale = std::sqrt(static_cast<double>(n) * static_cast<double>(K));
  const IVec yn = y.head(n);
  for (int t = 0; t < opt.max_iter; ++t) {
    cb.check();
    const Mat E = link_basis(S);
    Mat EtE, EtY, C, P;
    {
      // Products of n x 4K matrices: Eigen's threaded product synchronises its threads once
      // per block of rows, which costs far more than the arithmetic here (and stalls when the
      // cores are busy); serial, they take milliseconds.
      const EigenSerial serial(true);
      EtE = E.transpose() * E;
      EtE.diagonal().array() += rn;
      EtY = E.transpose() * Y;
      Eigen::LLT<Mat> small(EtE);
      if (small.info() != Eigen::Success) throw Error("cls: the calibration system failed");
      C = small.solve(EtY);
      P = E * C;
    }
    simplex_project_rows(P);
    Mat D = solve(crossprod_impl(s, Mat(Y - P), threads));
    Mat Snew = P + product_impl(s, D, threads);
    change.push_back((Snew - S).norm() / scale);
    S.swap(Snew);
    err.push_back(error_rate(S, yn));
    f.link.push_back(std::move(C));
    f.delta.push_back(std::move(D));
    f.iterations = t + 1;
    cb.report(chol_share +
              (1.0 - chol_share) * static_cast<double>(t + 1) / static_cast<double>(opt.max_iter));
    if (change.back() < opt.tol) {
      f.converged = true;
      break;
    }
  }
  f.seconds_steps = seconds_between(t2, Clock::now());
  f.scores = std::move(S);
  f.change = Eigen::Map<const Vec>(change.data(), static_cast<Eigen::Index>(change.size()));
  f.train_error = Eigen::Map<const Vec>(err.data(), static_cast<Eigen::Index>(err.size()));
  return f;
}

// Exactly collinear features with lambda = 0 can leave tiny positive pivots from rounding:
// a squared pivot ratio at rounding level (eps of the factor's precision) counts as singular.
template <class Diag>
bool pivots_ok(const Diag& piv, double eps) {
  const double lo = static_cast<double>(piv.minCoeff()), hi = static_cast<double>(piv.maxCoeff());
  return lo > 0 && !(lo * lo < hi * hi * static_cast<double>(piv.size()) * eps);
}

// The fit on the rows of s (labels y[0 .. rows - 1]) from their Gram matrix A ([X 1]'[X 1],
// unscaled; taken by value and factored in place, so a caller that no longer needs it moves it
// in); progress is reported on [0, 1] of cb.
template <class Src>
ClsFit cls_fit_from_gram(const Src& s, const IVec& y, int K, const ClsOptions& opt, Mat A,
                         const Callbacks& cb) {
  const Eigen::Index n = s.rows();
  check_cls_args(n, y, K, opt.lambda);
  const int threads = clamp_threads(opt.threads);
  const double rn = std::sqrt(static_cast<double>(n));
  const double chol_share = 0.5;
  const auto t1 = Clock::now();
  if (opt.backend) {
    // factored and solved where the backend keeps the factor (the GPU), if it takes it
    DeviceFactor df = opt.backend->device_cholesky(A, 0.5, opt.lambda * rn, false);
    if (df.handled) {
      if (!df.positive_definite ||
          !pivots_ok(df.factor->diagonal(), Eigen::NumTraits<double>::epsilon()))
        throw SingularSystem(
            "cls: the least-squares system is not positive definite; use lambda > 0");
      A.resize(0, 0);
      cb.report(chol_share);
      const double sf = seconds_between(t1, Clock::now());
      DeviceCholesky& fac = *df.factor;
      ClsFit f = cls_steps(
          s, y, K, opt, [&fac](const Mat& B) { return fac.solve(B); }, chol_share, cb);
      f.seconds_factor = sf;
      return f;
    }
  }
  A *= 0.5;
  A.diagonal().array() += opt.lambda * rn;
  cb.check();
  const bool pd = cholesky_lower(A, threads, SimdLevel::avx512, cb.stage(0.0, chol_share));
  if (!pd || !pivots_ok(A.diagonal(), Eigen::NumTraits<double>::epsilon()))
    throw SingularSystem("cls: the least-squares system is not positive definite; use lambda > 0");
  cb.report(chol_share);
  const double sf = seconds_between(t1, Clock::now());
  ClsFit f = cls_steps(
      s, y, K, opt, [&A, threads](const Mat& B) { return cholesky_solve(A, B, threads); },
      chol_share, cb);
  f.seconds_factor = sf;
  return f;
}

// The same with the system factored in single precision (for the values a penalty search
// tries): the right-hand sides are rounded to single precision for the solves. Returns false,
// leaving f alone, when that factorisation fails. A is the caller's storage for the factor,
// kept from one value to the next.
template <class Src>
bool cls_fit_from_gram_single(const Src& s, const IVec& y, int K, const ClsOptions& opt,
                              const Mat& G, Eigen::MatrixXf& A, ClsFit& f, const Callbacks& cb) {
  const Eigen::Index n = s.rows(), q = G.rows();
  check_cls_args(n, y, K, opt.lambda);
  const int threads = clamp_threads(opt.threads);
  const double rn = std::sqrt(static_cast<double>(n));
  const double chol_share = 0.5;
  const auto t1 = Clock::now();
  if (opt.backend) {
    // factored in single precision and solved where the backend keeps the factor (the GPU)
    DeviceFactor df = opt.backend->device_cholesky(G, 0.5, opt.lambda * rn, true);
    if (df.handled) {
      if (!df.positive_definite ||
          !pivots_ok(df.factor->diagonal(), Eigen::NumTraits<float>::epsilon()))
        return false;
      cb.report(chol_share);
      const double sf = seconds_between(t1, Clock::now());
      DeviceCholesky& fac = *df.factor;
      f = cls_steps(
          s, y, K, opt, [&fac](const Mat& B) { return fac.solve(B); }, chol_share, cb);
      f.seconds_factor = sf;
      return true;
    }
  }
  A.resize(q, q);
  // column by column in parallel (each thread first touches the columns it writes)
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads) if (q > 256)
#endif
  for (Eigen::Index j = 0; j < q; ++j) {
    for (Eigen::Index i = 0; i < j; ++i) A(i, j) = 0.0f;  // not referenced; set all the same
    A(j, j) = static_cast<float>(0.5 * G(j, j) + opt.lambda * rn);
    for (Eigen::Index i = j + 1; i < q; ++i) A(i, j) = static_cast<float>(0.5 * G(i, j));
  }
  cb.check();
  const bool pd = cholesky_lower(A, threads, SimdLevel::avx512, cb.stage(0.0, chol_share));
  if (!pd || !pivots_ok(A.diagonal(), Eigen::NumTraits<float>::epsilon())) return false;
  cb.report(chol_share);
  const double sf = seconds_between(t1, Clock::now());
  f = cls_steps(
      s, y, K, opt,
      [&A, threads](const Mat& B) {
        const Eigen::MatrixXf Bf = B.cast<float>();
        return Mat(cholesky_solve(A, Bf, threads).cast<double>());
      },
      chol_share, cb);
  f.seconds_factor = sf;
  return true;
}

// The final fit from the Gram matrix G of its rows: in single precision when the system has at
// least opt.single_final_min columns and that factorisation succeeds, else in double (G is
// then factored in place).
template <class Src>
ClsFit cls_fit_final(const Src& s, const IVec& y, int K, const ClsOptions& opt, Mat G,
                     const Callbacks& cb) {
  if (static_cast<double>(G.rows()) >= opt.single_final_min) {
    Eigen::MatrixXf factor;
    ClsFit f;
    if (cls_fit_from_gram_single(s, y, K, opt, G, factor, f, cb)) {
      f.single_factor = true;
      return f;
    }
  }
  return cls_fit_from_gram(s, y, K, opt, std::move(G), cb);
}

// cls_fit_final, and where it finds the system singular with lambda > 0 (which rounding in the
// single-precision sums of G can cause, never the exact system), again on the Gram matrix
// summed in double precision.
template <class Src>
ClsFit cls_fit_final_exact(const Src& s, const IVec& y, int K, const ClsOptions& opt, Mat G,
                           const Callbacks& cb) {
  try {
    return cls_fit_final(s, y, K, opt, std::move(G), cb);
  } catch (const SingularSystem&) {
    if (!(opt.lambda > 0) || !std::is_same<typename Src::Scalar, float>::value) throw;
  }
  const auto t0 = Clock::now();
  Mat Ge = gram_double_sums(s, clamp_threads(opt.threads), cb.stage(0.0, 0.0));
  const double sg = seconds_between(t0, Clock::now());
  ClsFit f = cls_fit_final(s, y, K, opt, std::move(Ge), cb);
  f.seconds_gram += sg;
  f.exact_gram = true;
  return f;
}

template <class Src>
ClsFit cls_fit_impl(const Src& s, const IVec& y, int K, const ClsOptions& opt,
                    const Callbacks& cb) {
  check_cls_args(s.rows(), y, K, opt.lambda);
  if (y.size() != s.rows()) throw Error("cls: labels and rows differ in number");
  const double gram_share = 0.6;
  const auto t0 = Clock::now();
  Mat G = gram_impl(s, clamp_threads(opt.threads), SimdLevel::avx512, cb.stage(0.0, gram_share),
                    opt.backend);
  const double sg = seconds_between(t0, Clock::now());
  ClsFit f = cls_fit_final_exact(s, y, K, opt, std::move(G), cb.stage(gram_share, 1.0));
  f.seconds_gram += sg;
  return f;
}

// The final scores of the rows of s, replaying the steps of fit.
template <class Src>
Mat cls_scores_impl(const Src& s, const ClsFit& fit, int threads) {
  const Eigen::Index p = s.cols();
  if (fit.W0.rows() != p + 1) throw Error("cls: coefficients of the wrong shape");
  if (fit.link.size() != fit.delta.size()) throw Error("cls: steps of the wrong shape");
  Mat S = product_impl(s, fit.W0, threads);
  for (std::size_t t = 0; t < fit.link.size(); ++t) {
    if (fit.link[t].rows() != 4 * S.cols() || fit.delta[t].rows() != p + 1)
      throw Error("cls: steps of the wrong shape");
    Mat P;
    {
      const EigenSerial serial(true);  // a few columns: see cls_steps
      P = link_basis(S) * fit.link[t];
    }
    simplex_project_rows(P);
    S = P + product_impl(s, fit.delta[t], threads);
  }
  return S;
}

// Validation error rate of scores S for labels y, and the mean squared distance between the
// scores projected onto the simplex and the one-hot labels (a smoother tie-breaker).
void score_validation(Mat S, const IVec& y, double& err, double& brier) {
  err = error_rate(S, y);
  simplex_project_rows(S);
  double sq = 0.0;
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    for (Eigen::Index k = 0; k < S.cols(); ++k) {
      const double d = S(i, k) - (k == y[i] ? 1.0 : 0.0);
      sq += d * d;
    }
  }
  brier = sq / static_cast<double>(S.rows());
}

template <class Src>
ClsFit cls_select_impl(const Src& all, const Src& train, const Src& val, const IVec& y, int K,
                       const ClsOptions& opt, const std::vector<double>& grid, int start,
                       bool exhaustive, HeadSearch& search, const Callbacks& cb) {
  const Eigen::Index n = all.rows(), nt = train.rows(), nv = val.rows();
  if (y.size() != n || nt + nv != n || nt < 1 || nv < 1)
    throw Error("cls: the validation split does not match the rows");
  if (grid.empty() || start < 0 || start >= static_cast<int>(grid.size()))
    throw Error("cls: empty penalty grid");
  check_cls_args(n, y, K, 0.0);
  const int threads = clamp_threads(opt.threads);
  const auto t0 = Clock::now();
  // The Gram matrix of all rows is the sum of those of the two parts.
  Mat G = gram_impl(train, threads, SimdLevel::avx512, cb.stage(0.0, 0.3), opt.backend);
  Mat Gv = gram_impl(val, threads, SimdLevel::avx512, cb.stage(0.3, 0.4), opt.backend);
  double sg = seconds_between(t0, Clock::now());
  bool exact = false;  // G and Gv summed in double precision
  const IVec yt = y.head(nt), yv = y.tail(nv);
  const int m = static_cast<int>(grid.size());
  std::vector<double> err(static_cast<std::size_t>(m), -1.0), loss(static_cast<std::size_t>(m), 0.0);
  search = HeadSearch();
  search.train_rows = nt;
  search.validation_rows = nv;
  // Fits at grid value i and scores it on the held-out rows; false when the system is not
  // positive definite at that penalty (smaller penalties would not be either).
  std::vector<char> singular(static_cast<std::size_t>(m), 0);
  Eigen::MatrixXf factor;  // the single-precision factor, its storage kept across values
  const auto evaluate = [&](int i) {
    if (singular[static_cast<std::size_t>(i)]) return false;
    if (err[static_cast<std::size_t>(i)] >= 0) return true;
    ClsOptions o = opt;
    o.lambda = grid[static_cast<std::size_t>(i)];
    o.max_iter = std::min(opt.max_iter, kClsSearchMaxSteps);
    ClsFit f;
    const bool single = static_cast<double>(G.rows()) >= opt.single_factor_min &&
                        cls_fit_from_gram_single(train, yt, K, o, G, factor, f,
                                                 cb.stage(0.4, 0.4));
    if (!single) {
      try {
        f = cls_fit_from_gram(train, yt, K, o, G, cb.stage(0.4, 0.4));
      } catch (const SingularSystem&) {
        // the single-precision sums of G can leave it indefinite where the exact system is
        // not: once, both parts' Gram matrices are summed in double and the value retried
        if (exact || !(o.lambda > 0) || !std::is_same<typename Src::Scalar, float>::value) {
          singular[static_cast<std::size_t>(i)] = 1;
          return false;
        }
        exact = true;
        const auto te = Clock::now();
        G = gram_double_sums(train, threads, cb.stage(0.4, 0.4));
        Gv = gram_double_sums(val, threads, cb.stage(0.4, 0.4));
        sg += seconds_between(te, Clock::now());
        try {
          f = cls_fit_from_gram(train, yt, K, o, G, cb.stage(0.4, 0.4));
        } catch (const SingularSystem&) {
          singular[static_cast<std::size_t>(i)] = 1;
          return false;
        }
      }
    }
    double e = 0, b = 0;
    score_validation(cls_scores_impl(val, f, threads), yv, e, b);
    err[static_cast<std::size_t>(i)] = e;
    loss[static_cast<std::size_t>(i)] = b;
    search.lambda.push_back(o.lambda);
    search.error.push_back(e);
    search.loss.push_back(b);
    return true;
  };
  // Two orders on the values tried: by held-out error (ties broken by the squared distance),
  // and by the squared distance alone, a proper score of the class probabilities that varies
  // smoothly with the penalty. The walk explores while either improves; the choice is the
  // best by the squared distance (as cv.glmnet chooses by deviance).
  const auto by_error = [&](int a, int b) {  // a strictly better than b
    if (singular[static_cast<std::size_t>(b)]) return !singular[static_cast<std::size_t>(a)];
    if (singular[static_cast<std::size_t>(a)]) return false;
    const double ea = err[static_cast<std::size_t>(a)], eb = err[static_cast<std::size_t>(b)];
    if (ea != eb) return ea < eb;
    return loss[static_cast<std::size_t>(a)] < loss[static_cast<std::size_t>(b)];
  };
  const auto by_loss = [&](int a, int b) {
    if (singular[static_cast<std::size_t>(b)]) return !singular[static_cast<std::size_t>(a)];
    if (singular[static_cast<std::size_t>(a)]) return false;
    return loss[static_cast<std::size_t>(a)] < loss[static_cast<std::size_t>(b)];
  };
  int best = start;
  if (exhaustive) {
    for (int i = m - 1; i >= 0; --i) {
      cb.check();
      if (!evaluate(i)) break;
      if (i == m - 1 || by_loss(i, best)) best = i;
    }
  } else {
    // Local search on the grid: from `start`, walk in the direction that improves until two
    // values in a row improve neither order (one worse value on a few hundred held-out rows
    // is often noise, and the error rate can improve where the squared distance is flat);
    // with many held-out rows, one such value ends the walk. A lower error rate counts only
    // where the squared distance is within kFlatLoss of its best.
    const int patience = nv >= kLargeValidation ? 1 : 2;
    if (!evaluate(start)) {
      // singular at the start: the larger penalties, up to the first that is not
      while (best + 1 < m && !evaluate(best + 1)) ++best;
      if (best + 1 < m) ++best;
    }
    const int origin = best;
    int best_err = best;
    // The other direction is walked too unless the first one lowered the squared distance
    // (the error rate alone can improve on one side of a minimum of the squared distance).
    for (const int dir : {+1, -1}) {
      int i = origin + dir, misses = 0;
      bool lowered = false;
      while (i >= 0 && i < m) {
        cb.check();
        if (!evaluate(i)) break;
        const bool flat = loss[static_cast<std::size_t>(i)] <=
                          (1.0 + kFlatLoss) * loss[static_cast<std::size_t>(best)];
        const bool gain_err = flat && by_error(i, best_err), gain_loss = by_loss(i, best);
        if (gain_err) best_err = i;
        if (gain_loss) best = i;
        if (gain_loss) lowered = true;
        if (gain_err || gain_loss) {
          misses = 0;
        } else if (++misses == patience) {
          break;
        }
        i += dir;
      }
      if (lowered) break;
    }
  }
  if (singular[static_cast<std::size_t>(best)])
    throw SingularSystem("cls: the least-squares system is not positive definite at any penalty "
                         "tried");
  search.chosen = grid[static_cast<std::size_t>(best)];
  if (opt.search_only) {
    ClsFit f;
    f.seconds_gram = sg;
    f.seconds_search = seconds_between(t0, Clock::now()) - sg;
    return f;
  }
  factor.resize(0, 0);
  G += Gv;
  Gv.resize(0, 0);
  ClsOptions o = opt;
  o.lambda = search.chosen;
  ClsFit f = exact ? cls_fit_final(all, y, K, o, std::move(G), cb.stage(0.4, 1.0))
                   : cls_fit_final_exact(all, y, K, o, std::move(G), cb.stage(0.4, 1.0));
  f.exact_gram = f.exact_gram || exact;
  f.seconds_gram += sg;
  f.seconds_search =
      seconds_between(t0, Clock::now()) - f.seconds_gram - f.seconds_factor - f.seconds_steps;
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
  return gram_impl(SourceF32(X), threads, max_level, cb);
}

Mat gram_with_intercept_double_sums(const RowMajorF32& X, int threads, const Callbacks& cb) {
  return gram_double_sums(SourceF32(X), threads, cb);
}

Mat gram_with_intercept(const CMatRef& X, int threads, const Callbacks& cb) {
  return gram_impl(SourceF64{X}, threads, SimdLevel::none, cb);
}

ClsFit cls_fit(const RowMajorF32& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb) {
  return cls_fit_impl(SourceF32(X), y, K, opt, cb);
}

ClsFit cls_fit(const CMatRef& X, const IVec& y, int K, const ClsOptions& opt,
               const Callbacks& cb) {
  return cls_fit_impl(SourceF64{X}, y, K, opt, cb);
}

ClsFit cls_fit_select(const RowMajorF32& X, Eigen::Index n_train, const IVec& y, int K,
                      const ClsOptions& opt, const std::vector<double>& grid, int start,
                      bool exhaustive, HeadSearch& search, const Callbacks& cb) {
  if (n_train < 1 || n_train >= X.n) throw Error("cls: the validation split does not match the rows");
  return cls_select_impl(SourceF32(X), SourceF32(X, 0, n_train),
                         SourceF32(X, n_train, X.n - n_train), y, K, opt, grid, start,
                         exhaustive, search, cb);
}

ClsFit cls_fit_select(const CMatRef& X, Eigen::Index n_train, const IVec& y, int K,
                      const ClsOptions& opt, const std::vector<double>& grid, int start,
                      bool exhaustive, HeadSearch& search, const Callbacks& cb) {
  if (n_train < 1 || n_train >= X.rows())
    throw Error("cls: the validation split does not match the rows");
  return cls_select_impl(SourceF64{X}, SourceF64{X.topRows(n_train)},
                         SourceF64{X.bottomRows(X.rows() - n_train)}, y, K, opt, grid, start,
                         exhaustive, search, cb);
}

Mat cls_scores(const CMatRef& X, const ClsFit& fit, int threads) {
  return cls_scores_impl(SourceF64{X}, fit, threads);
}

Mat cls_product(const RowMajorF32& X, const Mat& W, int threads) {
  if (W.rows() != X.p + 1) throw Error("cls: coefficients of the wrong shape");
  return product_impl(SourceF32(X), W, threads);
}

Mat cls_crossprod(const RowMajorF32& X, const Mat& R, int threads) {
  if (R.rows() != X.n) throw Error("cls: residuals of the wrong shape");
  return crossprod_impl(SourceF32(X), R, threads);
}

Mat cls_scores(const RowMajorF32& X, const ClsFit& fit, int threads) {
  return cls_scores_impl(SourceF32(X), fit, threads);
}

}  // namespace kl
