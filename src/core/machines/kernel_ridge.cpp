#include "machines/kernel_ridge.hpp"

#include <algorithm>
#include <cmath>

#include "backend/expansion.hpp"
#include "base/tasks.hpp"

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

int kernel_ridge_grid_workers(int pairs, Eigen::Index train_rows, int threads,
                              const Backend& backend) {
  threads = clamp_threads(threads);
  if (pairs < 2 || threads < 2 || backend.is_gpu()) return 1;
  const int w = std::min(threads, pairs);
  const double bytes = 8.0 * static_cast<double>(train_rows) * static_cast<double>(train_rows);
  // each worker holds a fold's kernel matrix and a copy of it
  return 2.0 * bytes * w <= 1e9 ? w : 1;
}

std::vector<Mat> kernel_ridge_grid(const std::vector<KernelPtr>& kernels, CMatRef X, CMatRef Y,
                                   const std::vector<int>& foldid, int folds,
                                   const std::vector<double>& lambdas, bool intercept,
                                   int threads, Backend& backend, const Callbacks& cb) {
  const Eigen::Index n = X.rows();
  if (Y.rows() != n || static_cast<Eigen::Index>(foldid.size()) != n)
    throw Error("x, y and the folds have different numbers of rows");
  if (folds < 2) throw Error("the cross-validation needs at least 2 folds");
  std::vector<std::vector<int>> tr(static_cast<std::size_t>(folds)),
      te(static_cast<std::size_t>(folds));
  for (Eigen::Index i = 0; i < n; ++i) {
    const int f = foldid[static_cast<std::size_t>(i)];
    if (f < 0 || f >= folds) throw Error("a fold number is out of range");
    for (int g = 0; g < folds; ++g)
      (g == f ? te : tr)[static_cast<std::size_t>(g)].push_back(static_cast<int>(i));
  }
  Eigen::Index most = 0;
  for (const auto& t : tr) {
    if (t.empty()) throw Error("a fold leaves no training rows");
    most = std::max<Eigen::Index>(most, static_cast<Eigen::Index>(t.size()));
  }
  const int nk = static_cast<int>(kernels.size()), nl = static_cast<int>(lambdas.size());
  const int pairs = nk * folds;
  std::vector<Mat> out(static_cast<std::size_t>(pairs) * static_cast<std::size_t>(nl));
  const auto rows_of = [&](const std::vector<int>& idx, CMatRef A) {
    Mat B(static_cast<Eigen::Index>(idx.size()), A.cols());
    for (std::size_t i = 0; i < idx.size(); ++i)
      B.row(static_cast<Eigen::Index>(i)) = A.row(idx[i]);
    return B;
  };
  const auto pair = [&](int p, int th, const Callbacks& c) {
    const int g = p / folds, f = p % folds;
    const Kernel& k = *kernels[static_cast<std::size_t>(g)];
    const Mat Xtr = rows_of(tr[static_cast<std::size_t>(f)], X);
    const Mat Ytr = rows_of(tr[static_cast<std::size_t>(f)], Y);
    const Mat Xte = rows_of(te[static_cast<std::size_t>(f)], X);
    const Eigen::Index m = Xtr.rows();
    Mat K(m, m), A(m, m);
    backend.kernel_matrix(k, Xtr, Xtr, K, th, c);
    for (int l = 0; l < nl; ++l) {
      c.check();
      A = K;
      const double penalty = static_cast<double>(m) * lambdas[static_cast<std::size_t>(l)];
      const KrrFit fit = kernel_ridge_solve(A, Ytr, penalty, intercept, th, c, backend);
      Mat& F = out[static_cast<std::size_t>(p * nl + l)];
      F.resize(Xte.rows(), Y.cols());
      kernel_expansion(backend, k, Xte, Xtr, dense_machines(fit.alpha, fit.bias), F, th, c);
    }
  };
  const int workers = kernel_ridge_grid_workers(pairs, most, threads, backend);
  run_tasks_or_in_order(pairs, workers, threads, pair, cb);
  return out;
}

}  // namespace kl
