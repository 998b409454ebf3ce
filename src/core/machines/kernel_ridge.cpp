#include "machines/kernel_ridge.hpp"

#include <cmath>

namespace kl {

KrrFit kernel_ridge_solve(MatRef K, CMatRef Y, double lambda, bool intercept, int threads,
                          const Callbacks& cb, Backend& backend) {
  const Eigen::Index n = K.rows(), L = Y.cols();
  if (K.cols() != n) throw Error("the kernel matrix must be square");
  if (Y.rows() != n) throw Error("the kernel matrix and Y must have the same number of rows");
  if (!(lambda >= 0) || !std::isfinite(lambda)) throw Error("lambda must be >= 0 and finite");
  K.diagonal().array() += lambda;
  cb.check();
  // With a bias: u = A^-1 Y, v = A^-1 1, b = 1'u / 1'v, alpha = u - v b'.
  Mat rhs(n, L + (intercept ? 1 : 0));
  rhs.leftCols(L) = Y;
  if (intercept) rhs.col(L).setOnes();
  if (!backend.cholesky_solve(K, rhs, false, threads, cb))
    throw Error("K + lambda I is not positive definite (increase lambda)");
  cb.check();
  KrrFit fit;
  if (intercept) {
    const double s = rhs.col(L).sum();
    fit.bias = rhs.leftCols(L).colwise().sum().transpose() / s;
    fit.alpha = rhs.leftCols(L) - rhs.col(L) * fit.bias.transpose();
  } else {
    fit.alpha = rhs;
    fit.bias = Vec::Zero(L);
  }
  return fit;
}

}  // namespace kl
