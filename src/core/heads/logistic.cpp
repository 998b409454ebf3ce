#include "heads/logistic.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "linalg/optim.hpp"

namespace kl {

namespace {

void check_data(const CMatRef& x, const IVec& y, int K, const Vec& w) {
  if (K < 2) throw Error("logistic: at least two classes are needed");
  if (x.rows() < 1) throw Error("logistic: x has no rows");
  if (y.size() != x.rows()) throw Error("logistic: y and x have different numbers of rows");
  if (w.size() != 0 && w.size() != x.rows())
    throw Error("logistic: weights must have one value per row of x");
  for (Eigen::Index i = 0; i < y.size(); ++i)
    if (y[i] < 0 || y[i] >= K) throw Error("logistic: class labels must lie in 0..K-1");
  if (!x.allFinite()) throw Error("logistic: x has non-finite values");
  if (w.size()) {
    if (!w.allFinite() || (w.array() < 0.0).any())
      throw Error("logistic: weights must be finite and non-negative");
    if (!(w.sum() > 0.0)) throw Error("logistic: weights sum to zero");
  }
}

// Observation weights normalised to sum to one.
Vec normalised_weights(const Vec& w, Eigen::Index n) {
  if (w.size() == 0) return Vec::Constant(n, 1.0 / static_cast<double>(n));
  return w / w.sum();
}

// Weighted loss and gradient pieces over all rows, given normalised weights wn.
double data_term(const CMatRef& x, const IVec& y, int K, const Vec& wn, const CMatRef& B,
                 const CVecRef& b, Mat* gB, Vec* gb, int threads) {
  const Eigen::Index n = x.rows(), p = x.cols();
  const RowBlocks bl = make_row_blocks(n);
  const bool want_grad = gB != nullptr || gb != nullptr;
  std::vector<double> loss(static_cast<std::size_t>(bl.count), 0.0);
  std::vector<Mat> gBb(want_grad ? bl.count : 0);
  std::vector<Vec> gbb(want_grad ? bl.count : 0);
  (void)threads;

  {
    const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
    for (int j = 0; j < bl.count; ++j) {
      const Eigen::Index r0 = bl.start(j), len = bl.size(j);
      Mat Z(len, K);
      Z.noalias() = x.middleRows(r0, len) * B;
      Z.rowwise() += b.transpose();
      double acc = 0.0;
      for (Eigen::Index r = 0; r < len; ++r) {
        const Eigen::Index i = r0 + r;
        const int yi = y[i];
        const double zy = Z(r, yi);
        const double zmax = Z.row(r).maxCoeff();
        double s = 0.0;
        for (int k = 0; k < K; ++k) {
          const double e = std::exp(Z(r, k) - zmax);
          Z(r, k) = e;
          s += e;
        }
        // -log p_y = log(sum_k exp(z_k)) - z_y, with the maximum taken out.
        if (wn[i] != 0.0) acc += wn[i] * (std::log(s) + zmax - zy);
        if (want_grad) {
          for (int k = 0; k < K; ++k) Z(r, k) = wn[i] * (Z(r, k) / s);
          Z(r, yi) -= wn[i];
        }
      }
      loss[static_cast<std::size_t>(j)] = acc;
      if (want_grad) {
        gBb[j] = x.middleRows(r0, len).transpose() * Z;
        gbb[j] = Z.colwise().sum().transpose();
      }
    }
  }

  double total = 0.0;
  for (int j = 0; j < bl.count; ++j) total += loss[static_cast<std::size_t>(j)];
  if (want_grad) {
    Mat GB = Mat::Zero(p, K);
    Vec Gb = Vec::Zero(K);
    for (int j = 0; j < bl.count; ++j) {
      GB += gBb[j];
      Gb += gbb[j];
    }
    if (gB) *gB = std::move(GB);
    if (gb) *gb = std::move(Gb);
  }
  return total;
}

}  // namespace

double logistic_objective(const CMatRef& x, const IVec& y, int K, const Vec& w, double lambda,
                          const CMatRef& B, const CVecRef& b, Mat* gB, Vec* gb, int threads) {
  check_data(x, y, K, w);
  if (!(lambda >= 0.0) || !std::isfinite(lambda))
    throw Error("logistic: lambda must be finite and non-negative");
  if (B.rows() != x.cols() || B.cols() != K || b.size() != K)
    throw Error("logistic: coefficient dimensions do not match x and K");
  const Vec wn = normalised_weights(w, x.rows());
  double f = data_term(x, y, K, wn, B, b, gB, gb, threads);
  f += 0.5 * lambda * B.squaredNorm();
  if (gB) *gB += lambda * B;
  return f;
}

LogisticFit logistic_fit(const CMatRef& x, const IVec& y, int K, const Vec& w,
                         const LogisticOptions& opt, const Callbacks& cb) {
  check_data(x, y, K, w);
  if (!(opt.lambda >= 0.0) || !std::isfinite(opt.lambda))
    throw Error("logistic: lambda must be finite and non-negative");
  if (opt.max_iter < 0) throw Error("logistic: max_iter must be non-negative");
  if (!(opt.gtol >= 0.0) || !(opt.ftol >= 0.0))
    throw Error("logistic: tolerances must be non-negative");

  const Eigen::Index n = x.rows(), p = x.cols();
  const Vec wn = normalised_weights(w, n);

  // Class frequencies for the starting intercepts.
  Vec freq = Vec::Zero(K);
  for (Eigen::Index i = 0; i < n; ++i) freq[y[i]] += wn[i];
  for (int k = 0; k < K; ++k)
    if (!(freq[k] > 0.0))
      throw ClassError(k, "logistic: ", " has no observations with positive weight");

  const Vec theta = logistic_start(opt, freq, p, K);

  const double lambda = opt.lambda;
  const int threads = opt.threads;
  Mat gB(p, K);
  Vec gb(K);
  ValueGradFn fg = [&](const CVecRef& th, VecRef g) -> double {
    Eigen::Map<const Mat> B(th.data(), p, K);
    Eigen::Map<const Vec> b(th.data() + p * K, K);
    double f = data_term(x, y, K, wn, B, b, &gB, &gb, threads);
    f += 0.5 * lambda * B.squaredNorm();
    gB += lambda * B;
    g.head(p * K) = Eigen::Map<const Vec>(gB.data(), p * K);
    g.tail(K) = gb;
    return f;
  };

  LogisticFit fit = logistic_minimise(fg, theta, p, K, opt, cb);
  fit.objective = logistic_objective(x, y, K, w, lambda, fit.coef, fit.intercept, &gB, &gb,
                                     threads);
  fit.grad_norm = std::max(gB.size() ? gB.cwiseAbs().maxCoeff() : 0.0, gb.cwiseAbs().maxCoeff());
  return fit;
}

Vec logistic_start(const LogisticOptions& opt, const Vec& freq, Eigen::Index p, int K) {
  Vec theta = Vec::Zero(p * K + K);
  if (opt.init_coef.size() || opt.init_intercept.size()) {
    if (opt.init_coef.rows() != p || opt.init_coef.cols() != K || opt.init_intercept.size() != K)
      throw Error("logistic: the starting coefficients do not match x and K");
    if (!opt.init_coef.allFinite() || !opt.init_intercept.allFinite())
      throw Error("logistic: the starting coefficients are not finite");
    Eigen::Map<Mat>(theta.data(), p, K) = opt.init_coef;
    theta.tail(K) = opt.init_intercept;
  } else {
    Vec b0 = freq.array().log().matrix();
    b0.array() -= b0.mean();
    theta.tail(K) = b0;
  }
  return theta;
}

LogisticFit logistic_minimise(const ValueGradFn& fg, const Vec& theta, Eigen::Index p, int K,
                              const LogisticOptions& opt, const Callbacks& cb) {
  LbfgsOptions lo;
  lo.memory = opt.memory;
  lo.max_iter = opt.max_iter;
  lo.gtol = opt.gtol;
  lo.ftol = opt.ftol;
  lo.line_search = LineSearchKind::wolfe;
  LbfgsResult r = lbfgs(fg, theta, lo, cb);
  LogisticFit fit;
  fit.coef = Eigen::Map<const Mat>(r.x.data(), p, K);
  fit.intercept = r.x.tail(K);
  fit.intercept.array() -= fit.intercept.mean();
  for (Eigen::Index j = 0; j < p; ++j) fit.coef.row(j).array() -= fit.coef.row(j).mean();
  fit.objective = r.value;
  fit.grad_norm = r.grad.size() ? r.grad.cwiseAbs().maxCoeff() : 0.0;
  fit.iterations = r.iterations;
  fit.converged = r.converged;
  fit.message = r.message;
  return fit;
}

Mat logistic_predict_prob(const CMatRef& x, const CMatRef& B, const CVecRef& b, int threads) {
  const Eigen::Index K = B.cols();
  if (B.rows() != x.cols() || b.size() != K)
    throw Error("logistic: coefficient dimensions do not match x");
  if (K < 1) throw Error("logistic: no classes");
  const Eigen::Index n = x.rows();
  Mat P(n, K);
  const RowBlocks bl = make_row_blocks(n);
  if (n == 0) return P;
  (void)threads;
  {
    const EigenSerial eigen_serial(!(bl.count > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(clamp_threads(threads)) if (bl.count > 1)
#endif
    for (int j = 0; j < bl.count; ++j) {
      const Eigen::Index r0 = bl.start(j), len = bl.size(j);
      P.middleRows(r0, len).noalias() = x.middleRows(r0, len) * B;
      for (Eigen::Index i = r0; i < r0 + len; ++i) {
        P.row(i) += b.transpose();
        const double zmax = P.row(i).maxCoeff();
        double s = 0.0;
        for (Eigen::Index k = 0; k < K; ++k) {
          const double e = std::exp(P(i, k) - zmax);
          P(i, k) = e;
          s += e;
        }
        P.row(i) /= s;
      }
    }
  }
  return P;
}

IVec logistic_predict_class(const CMatRef& x, const CMatRef& B, const CVecRef& b, int threads) {
  const Mat P = logistic_predict_prob(x, B, b, threads);
  IVec cls(P.rows());
  for (Eigen::Index i = 0; i < P.rows(); ++i) {
    Eigen::Index best = 0;
    for (Eigen::Index k = 1; k < P.cols(); ++k)
      if (P(i, k) > P(i, best)) best = k;
    cls[i] = static_cast<int>(best);
  }
  return cls;
}

}  // namespace kl
