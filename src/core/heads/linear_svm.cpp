#include "heads/linear_svm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace kl {

namespace {

struct BinaryResult {
  Vec w;  // length d (augmented)
  int iterations = 0;
  bool converged = false;
  double primal = 0.0, dual = 0.0;
};

// Dual coordinate descent on one binary problem. Z is d x n (column i = augmented row i),
// s the labels in {-1, +1}, C the per-row costs.
BinaryResult solve_binary(const Mat& Z, const Vec& s, const Vec& C, const LinearSvmOptions& opt,
                          Rng& rng, const Callbacks& cb) {
  const Eigen::Index d = Z.rows(), n = Z.cols();
  const bool l2 = opt.loss == SvmLoss::l2;
  const double inf = std::numeric_limits<double>::infinity();

  Vec U(n), D(n), Q(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    U[i] = l2 ? inf : C[i];
    D[i] = l2 ? 0.5 / C[i] : 0.0;
    Q[i] = Z.col(i).squaredNorm() + D[i];
  }

  BinaryResult res;
  res.w = Vec::Zero(d);
  Vec alpha = Vec::Zero(n);
  std::vector<Eigen::Index> index(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) index[static_cast<std::size_t>(i)] = i;
  Eigen::Index active = n;
  double pg_max_old = inf, pg_min_old = -inf;

  int iter = 0;
  while (iter < opt.max_iter) {
    cb.check();
    ++iter;
    // Random order of the active rows.
    for (Eigen::Index j = active; j > 1; --j) {
      const auto r = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(j)));
      std::swap(index[static_cast<std::size_t>(j - 1)], index[static_cast<std::size_t>(r)]);
    }
    double pg_max = -inf, pg_min = inf;
    for (Eigen::Index j = 0; j < active; ++j) {
      const Eigen::Index i = index[static_cast<std::size_t>(j)];
      const double G = s[i] * res.w.dot(Z.col(i)) - 1.0 + D[i] * alpha[i];
      double pg = 0.0;
      if (alpha[i] == 0.0) {
        if (opt.shrinking && G > pg_max_old) {
          --active;
          std::swap(index[static_cast<std::size_t>(j)], index[static_cast<std::size_t>(active)]);
          --j;
          continue;
        }
        pg = std::min(G, 0.0);
      } else if (alpha[i] == U[i]) {
        if (opt.shrinking && G < pg_min_old) {
          --active;
          std::swap(index[static_cast<std::size_t>(j)], index[static_cast<std::size_t>(active)]);
          --j;
          continue;
        }
        pg = std::max(G, 0.0);
      } else {
        pg = G;
      }
      pg_max = std::max(pg_max, pg);
      pg_min = std::min(pg_min, pg);
      if (std::abs(pg) > 1e-12) {
        const double old = alpha[i];
        double a;
        if (Q[i] > 0.0) {
          a = std::min(std::max(old - G / Q[i], 0.0), U[i]);
        } else {
          a = G < 0.0 ? U[i] : 0.0;  // zero row with hinge loss: the dual is linear in a_i
        }
        alpha[i] = a;
        const double delta = (a - old) * s[i];
        if (delta != 0.0) res.w.noalias() += delta * Z.col(i);
      }
    }
    if (active == 0) {  // everything shrunk: recheck all rows
      pg_max = 0.0;
      pg_min = 0.0;
    }
    if (pg_max - pg_min <= opt.eps) {
      if (active == n) {
        res.converged = true;
        break;
      }
      active = n;
      pg_max_old = inf;
      pg_min_old = -inf;
      continue;
    }
    pg_max_old = pg_max > 0.0 ? pg_max : inf;
    pg_min_old = pg_min < 0.0 ? pg_min : -inf;
  }
  res.iterations = iter;

  // Objectives.
  const double ww = res.w.squaredNorm();
  double loss = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = 1.0 - s[i] * res.w.dot(Z.col(i));
    if (t > 0.0) loss += C[i] * (l2 ? t * t : t);
  }
  res.primal = 0.5 * ww + loss;
  double dual = alpha.sum() - 0.5 * ww;
  if (l2) dual -= 0.5 * (D.array() * alpha.array().square()).sum();
  res.dual = dual;
  return res;
}

}  // namespace

LinearSvmFit linear_svm_fit(const CMatRef& x, const IVec& y, int K, const Vec& class_weights,
                            const LinearSvmOptions& opt, Rng& rng, const Callbacks& cb) {
  const Eigen::Index n = x.rows(), p = x.cols();
  if (K < 2) throw Error("linear SVM: at least two classes are needed");
  if (n < 1) throw Error("linear SVM: x has no rows");
  if (y.size() != n) throw Error("linear SVM: y and x have different numbers of rows");
  for (Eigen::Index i = 0; i < n; ++i)
    if (y[i] < 0 || y[i] >= K) throw Error("linear SVM: class labels must lie in 0..K-1");
  if (!x.allFinite()) throw Error("linear SVM: x has non-finite values");
  if (!(opt.cost > 0.0) || !std::isfinite(opt.cost))
    throw Error("linear SVM: cost must be positive and finite");
  if (!std::isfinite(opt.bias)) throw Error("linear SVM: bias must be finite");
  if (!(opt.eps > 0.0)) throw Error("linear SVM: eps must be positive");
  if (opt.max_iter < 1) throw Error("linear SVM: max_iter must be at least 1");
  if (class_weights.size() != 0 && class_weights.size() != K)
    throw Error("linear SVM: class_weights must have one entry per class");
  if (class_weights.size() && (!class_weights.allFinite() || (class_weights.array() <= 0.0).any()))
    throw Error("linear SVM: class weights must be positive and finite");

  const bool has_bias = opt.bias > 0.0;
  const Eigen::Index d = p + (has_bias ? 1 : 0);
  Mat Z(d, n);
  Z.topRows(p) = x.transpose();
  if (has_bias) Z.row(p).setConstant(opt.bias);

  Vec C(n);
  for (Eigen::Index i = 0; i < n; ++i)
    C[i] = opt.cost * (class_weights.size() ? class_weights[y[i]] : 1.0);

  const int nprob = K == 2 ? 1 : K;
  std::vector<Rng> streams;
  streams.reserve(static_cast<std::size_t>(nprob));
  for (int k = 0; k < nprob; ++k) streams.push_back(rng.split());

  LinearSvmFit fit;
  fit.W.resize(p, nprob);
  fit.b = Vec::Zero(nprob);
  fit.iterations.resize(nprob);
  fit.converged.assign(static_cast<std::size_t>(nprob), false);
  fit.primal.resize(nprob);
  fit.dual.resize(nprob);

  Vec s(n);
  for (int k = 0; k < nprob; ++k) {
    const int positive = K == 2 ? 1 : k;
    for (Eigen::Index i = 0; i < n; ++i) s[i] = y[i] == positive ? 1.0 : -1.0;
    BinaryResult r = solve_binary(Z, s, C, opt, streams[static_cast<std::size_t>(k)], cb);
    fit.W.col(k) = r.w.head(p);
    if (has_bias) fit.b[k] = opt.bias * r.w[p];
    fit.iterations[k] = r.iterations;
    fit.converged[static_cast<std::size_t>(k)] = r.converged;
    fit.primal[k] = r.primal;
    fit.dual[k] = r.dual;
    cb.report(static_cast<double>(k + 1) / nprob);
  }
  return fit;
}

Mat linear_svm_decision(const CMatRef& x, const CMatRef& W, const CVecRef& b) {
  if (W.rows() != x.cols()) throw Error("linear SVM: x and W dimensions do not match");
  if (b.size() != W.cols()) throw Error("linear SVM: W and b dimensions do not match");
  Mat F = x * W;
  F.rowwise() += b.transpose();
  return F;
}

IVec linear_svm_predict(const CMatRef& x, const CMatRef& W, const CVecRef& b) {
  const Mat F = linear_svm_decision(x, W, b);
  IVec cls(F.rows());
  if (F.cols() == 1) {
    for (Eigen::Index i = 0; i < F.rows(); ++i) cls[i] = F(i, 0) > 0.0 ? 1 : 0;
    return cls;
  }
  for (Eigen::Index i = 0; i < F.rows(); ++i) {
    Eigen::Index best = 0;
    for (Eigen::Index k = 1; k < F.cols(); ++k)
      if (F(i, k) > F(i, best)) best = k;
    cls[i] = static_cast<int>(best);
  }
  return cls;
}

}  // namespace kl
