// Exact kernel ridge regression (the least-squares SVM): the solve on a kernel matrix.
#pragma once

#include <vector>

#include "backend/backend.hpp"
#include "base/common.hpp"

namespace kl {

// Exact kernel ridge regression / least-squares SVM with an unpenalised bias:
//   minimise sum_i ||y_i - f(x_i) - b||^2 + lambda ||f||_H^2,  f = sum_j alpha_j k(x_j, .)
// giving (K + lambda I) alpha = Y - 1 b' with 1' alpha = 0 (bias) or b = 0 (no bias).
// K (n x n, symmetric) is used as the workspace of its factorisation, to save memory.
struct KrrFit {
  Mat alpha;  // n x L
  Vec bias;   // L
};
// K + lambda I is factored and solved by `backend` (the CPU: the core's blocked, vectorised
// factorisation on `threads` threads); K's contents afterwards are unspecified.
KrrFit kernel_ridge_solve(MatRef K, CMatRef Y, double lambda, bool intercept, int threads = 1,
                          const Callbacks& cb = Callbacks(), Backend& backend = cpu_backend());

// Cross-validation of kernel ridge regression over kernels x penalties: for every kernel g
// and fold f, the kernel matrix of the fold's training rows (foldid[i] != f, folds numbered
// 0..folds-1) once, then for every penalty l the fit with lambda = m lambdas[l] (m the fold's
// training rows) on a copy of it and its values on the fold's held-out rows (kernel_expansion),
// the same numbers as kernel_ridge_solve and kernel_expansion called one by one. Returns them
// as out[(g * folds + f) * lambdas + l] (held-out rows in order x Y's columns). On the CPU with
// threads >= 2 the (kernel, fold) pairs are tasks on min(threads, pairs) worker threads, one
// thread each, when the largest fold's kernel matrix times the workers takes at most about
// 1 GB; else they run in order on `threads` threads. The caller keeps Eigen's own threads at
// 1 then (kernel_ridge_grid_workers).
std::vector<Mat> kernel_ridge_grid(const std::vector<KernelPtr>& kernels, CMatRef X, CMatRef Y,
                                   const std::vector<int>& foldid, int folds,
                                   const std::vector<double>& lambdas, bool intercept,
                                   int threads, Backend& backend, const Callbacks& cb);
int kernel_ridge_grid_workers(int pairs, Eigen::Index train_rows, int threads,
                              const Backend& backend);

}  // namespace kl
