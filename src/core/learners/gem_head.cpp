#include "learners/gem_head.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kl {
namespace {

using RowMapF =
    Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Error rate and mean deviance (-log p of the true class) of linear predictors eta.
void score_eta(const Mat& eta, const IVec& y, double& err, double& dev) {
  Eigen::Index wrong = 0;
  double sum = 0.0;
  for (Eigen::Index i = 0; i < eta.rows(); ++i) {
    Eigen::Index k = 0;
    const double mx = eta.row(i).maxCoeff(&k);
    if (k != y[i]) ++wrong;
    const double lse = mx + std::log((eta.row(i).array() - mx).exp().sum());
    sum += lse - eta(i, y[i]);
  }
  err = static_cast<double>(wrong) / static_cast<double>(eta.rows());
  dev = sum / static_cast<double>(eta.rows());
}

// fit(o) fits on the training part from o's starting point; score(f, err, dev) scores a fit on
// the validation part; final(o) fits on all rows.
template <class Fit, class Score, class Final>
LogisticFit select_path(const LogisticOptions& opt, const std::vector<double>& grid, int patience,
                        HeadSearch& search, int& path_iterations, const Callbacks& cb, Fit fit,
                        Score score, Final final) {
  if (grid.empty()) throw Error("logistic: empty penalty grid");
  for (std::size_t i = 1; i < grid.size(); ++i)
    if (!(grid[i] < grid[i - 1])) throw Error("logistic: the penalty grid must be decreasing");
  // The path's fits are warm-started and only rank the penalties: their iterations are capped
  // (the final fit has the full budget).
  LogisticOptions o = opt;
  o.max_iter = std::min(opt.max_iter, 100);
  LogisticFit best_fit;
  double best_err = std::numeric_limits<double>::infinity(), best_dev = best_err;
  int since = 0;
  path_iterations = 0;
  const double n_grid = static_cast<double>(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    cb.check();
    o.lambda = grid[i];
    LogisticFit f = fit(o, cb.stage(0.7 * i / n_grid, 0.7 * (i + 1) / n_grid));
    path_iterations += f.iterations;
    double err = 0, dev = 0;
    score(f, err, dev);
    search.lambda.push_back(grid[i]);
    search.error.push_back(err);
    search.loss.push_back(dev);
    o.init_coef = f.coef;
    o.init_intercept = f.intercept;
    if (err < best_err || (err == best_err && dev < best_dev)) {
      best_err = err;
      best_dev = dev;
      search.chosen = grid[i];
      best_fit = std::move(f);
      since = 0;
    } else if (++since >= patience) {
      break;
    }
  }
  o.lambda = search.chosen;
  o.max_iter = opt.max_iter;
  o.init_coef = best_fit.coef;
  o.init_intercept = best_fit.intercept;
  return final(o, cb.stage(0.7, 1.0));
}

}  // namespace

LogisticFit logistic_fit_select(const CMatRef& X, Eigen::Index n_train, const IVec& y, int K,
                                const LogisticOptions& opt, const std::vector<double>& grid,
                                int patience, HeadSearch& search, int& path_iterations,
                                const Callbacks& cb) {
  const Eigen::Index n = X.rows(), nv = n - n_train;
  if (n_train < 1 || nv < 1 || y.size() != n)
    throw Error("logistic: the validation split does not match the rows");
  search = HeadSearch();
  search.train_rows = n_train;
  search.validation_rows = nv;
  const IVec yt = y.head(n_train), yv = y.tail(nv);
  const auto Xt = X.topRows(n_train);
  const auto Xv = X.bottomRows(nv);
  return select_path(
      opt, grid, patience, search, path_iterations, cb,
      [&](const LogisticOptions& o, const Callbacks& c) {
        return logistic_fit(Xt, yt, K, Vec(), o, c);
      },
      [&](const LogisticFit& f, double& err, double& dev) {
        Mat eta = Xv * f.coef;
        eta.rowwise() += f.intercept.transpose();
        score_eta(eta, yv, err, dev);
      },
      [&](const LogisticOptions& o, const Callbacks& c) {
        return logistic_fit(X, y, K, Vec(), o, c);
      });
}

LogisticFit logistic_fit_select(const RowMajorF32& X, Eigen::Index n_train, const IVec& y, int K,
                                const LogisticOptions& opt, const std::vector<double>& grid,
                                int patience, HeadSearch& search, int& path_iterations,
                                const Callbacks& cb) {
  const Eigen::Index n = X.n, nv = n - n_train;
  if (n_train < 1 || nv < 1 || y.size() != n)
    throw Error("logistic: the validation split does not match the rows");
  search = HeadSearch();
  search.train_rows = n_train;
  search.validation_rows = nv;
  const IVec yv = y.tail(nv);
  std::vector<Eigen::Index> rows(static_cast<std::size_t>(n_train));
  for (Eigen::Index i = 0; i < n_train; ++i) rows[static_cast<std::size_t>(i)] = i;
  const RowMapF Xv(X.row(n_train), nv, X.p);
  return select_path(
      opt, grid, patience, search, path_iterations, cb,
      [&](const LogisticOptions& o, const Callbacks& c) {
        return logistic_fit_f32(X, y, K, rows, o, c);
      },
      [&](const LogisticFit& f, double& err, double& dev) {
        const Eigen::MatrixXf Bf = f.coef.cast<float>();
        Mat eta = (Xv * Bf).cast<double>();
        eta.rowwise() += f.intercept.transpose();
        score_eta(eta, yv, err, dev);
      },
      [&](const LogisticOptions& o, const Callbacks& c) {
        return logistic_fit_f32(X, y, K, {}, o, c);
      });
}

Mat gem_cls_scores_single(const CMatRef& z, const CMatRef& V, int base, int degree,
                          bool keep_input, bool ones, bool standardize, const Vec& center,
                          const Vec& scale, const ClsFit& fit, int threads, const Callbacks& cb,
                          const InputMap& map) {
  threads = clamp_threads(threads);
  RowMajorF32 X;
  gem_features_f32(z, V, base, degree, keep_input, ones, X, threads, cb, map);
  if (standardize) standardize_f32_apply(X, center, scale, threads);
  return cls_scores(X, fit, threads);
}

GemHeadFit gem_head_fit(const CMatRef& z, const CMatRef& V, int base, int degree,
                        bool keep_input, bool ones, const IVec& y, int K,
                        const GemHeadOptions& opt, const Callbacks& cb, const InputMap& map) {
  if (opt.lambda.empty()) throw Error("gem: no penalty given");
  for (double l : opt.lambda)
    if (!(l >= 0) || !std::isfinite(l)) throw Error("gem: the penalty must be >= 0");
  if (y.size() != z.rows()) throw Error("gem: labels and rows differ in number");
  const bool search = opt.lambda.size() > 1;
  if (search && (opt.n_train < 1 || opt.n_train >= z.rows()))
    throw Error("gem: the validation split does not match the rows");
  const int threads = clamp_threads(opt.threads);
  GemHeadFit out;
  out.head = opt.head;
  out.single = opt.single;
  out.searched = search;
  const Callbacks feat = cb.stage(0.0, 0.1), rest = cb.stage(0.1, 1.0);
  RowMajorF32 Xf;
  Mat Xd;
  if (opt.single) {
    gem_features_f32(z, V, base, degree, keep_input, ones, Xf, threads, feat, map);
    if (opt.standardize) standardize_f32(Xf, out.center, out.scale, threads);
    out.p = Xf.p;
  } else {
    out.p = gem_feature_count(map.out_dim(z.cols()), V.cols(), degree, keep_input, ones);
    Xd.resize(z.rows(), out.p);
    gem_features(z, V, base, degree, keep_input, ones, Xd, threads, feat, map);
    if (opt.standardize) standardize_columns(Xd, out.center, out.scale, true, threads);
  }
  if (opt.head == 1) {
    ClsOptions co;
    co.lambda = opt.lambda.front();
    co.max_iter = opt.max_iter;
    co.tol = opt.tol;
    co.threads = threads;
    co.single_factor_min = opt.single_factor_min;
    co.single_final_min = opt.single_final_min;
    co.search_only = opt.search_only && search;
    co.backend = opt.backend;
    out.search_only = co.search_only;
    if (search) {
      out.cls = opt.single ? cls_fit_select(Xf, opt.n_train, y, K, co, opt.lambda, opt.start,
                                            opt.exhaustive, out.search, rest)
                           : cls_fit_select(Xd, opt.n_train, y, K, co, opt.lambda, opt.start,
                                            opt.exhaustive, out.search, rest);
      out.lambda = out.search.chosen;
    } else {
      out.cls = opt.single ? cls_fit(Xf, y, K, co, rest) : cls_fit(Xd, y, K, co, rest);
      out.lambda = co.lambda;
    }
    return out;
  }
  LogisticOptions lo;
  lo.lambda = opt.lambda.front();
  lo.max_iter = opt.max_iter;
  lo.gtol = opt.tol;
  lo.ftol = opt.single ? 1e-12 : 1e-14;
  lo.threads = threads;
  if (search) {
    out.logistic = opt.single
                       ? logistic_fit_select(Xf, opt.n_train, y, K, lo, opt.lambda, opt.patience,
                                             out.search, out.sub_iterations, rest)
                       : logistic_fit_select(Xd, opt.n_train, y, K, lo, opt.lambda, opt.patience,
                                             out.search, out.sub_iterations, rest);
    out.lambda = out.search.chosen;
    return out;
  }
  out.lambda = lo.lambda;
  if (!opt.warm_rows.empty()) {
    LogisticFit f0;
    if (opt.single) {
      f0 = logistic_fit_f32(Xf, y, K, opt.warm_rows, lo, rest);
    } else {
      const Eigen::Index m = static_cast<Eigen::Index>(opt.warm_rows.size());
      Mat Xs(m, out.p);
      IVec ys(m);
      for (Eigen::Index i = 0; i < m; ++i) {
        const Eigen::Index r = opt.warm_rows[static_cast<std::size_t>(i)];
        if (r < 0 || r >= Xd.rows()) throw Error("gem: a warm-start row is out of range");
        Xs.row(i) = Xd.row(r);
        ys[i] = y[r];
      }
      f0 = logistic_fit(Xs, ys, K, Vec(), lo, rest);
    }
    lo.init_coef = f0.coef;
    lo.init_intercept = f0.intercept;
    out.sub_iterations = f0.iterations;
  }
  out.logistic = opt.single ? logistic_fit_f32(Xf, y, K, {}, lo, rest)
                            : logistic_fit(Xd, y, K, Vec(), lo, rest);
  return out;
}

}  // namespace kl
