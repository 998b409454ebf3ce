#include "heads/ridge.hpp"


#include <Eigen/Cholesky>
#include <cmath>

namespace kl {

namespace {
template <class Llt>
void require_pd(const Llt& llt, const char* what) {
  if (llt.info() != Eigen::Success)
    throw Error(std::string(what) +
                " is not positive definite (increase lambda, or check for duplicated or "
                "constant columns)");
}
}  // namespace

RidgeFit ridge_fit(CMatRef X, CMatRef Y, double lambda, bool intercept, int threads) {
  const Eigen::Index n = X.rows(), p = X.cols(), L = Y.cols();
  if (Y.rows() != n) throw Error("X and Y must have the same number of rows");
  if (!(lambda >= 0) || !std::isfinite(lambda)) throw Error("lambda must be >= 0 and finite");
  if (n == 0) throw Error("no rows");
  const int old = Eigen::nbThreads();
  Eigen::setNbThreads(clamp_threads(threads));

  Vec xm = Vec::Zero(p), ym = Vec::Zero(L);
  if (intercept) {
    xm = X.colwise().mean().transpose();
    ym = Y.colwise().mean().transpose();
  }
  const Mat Xc = X.rowwise() - xm.transpose();
  const Mat Yc = Y.rowwise() - ym.transpose();

  RidgeFit fit;
  if (p <= n) {
    Mat A = Mat::Zero(p, p);
    A.selfadjointView<Eigen::Lower>().rankUpdate(Xc.transpose());
    A.diagonal().array() += lambda;
    Eigen::LLT<Eigen::Ref<Mat>, Eigen::Lower> llt(A);
    require_pd(llt, "X'X + lambda I");
    fit.coef = llt.solve(Xc.transpose() * Yc);
  } else {
    Mat A = Mat::Zero(n, n);
    A.selfadjointView<Eigen::Lower>().rankUpdate(Xc);
    A.diagonal().array() += lambda;
    Eigen::LLT<Eigen::Ref<Mat>, Eigen::Lower> llt(A);
    require_pd(llt, "XX' + lambda I");
    fit.coef = Xc.transpose() * llt.solve(Yc);
  }
  fit.intercept = ym - fit.coef.transpose() * xm;
  Eigen::setNbThreads(old);
  return fit;
}

}  // namespace kl
