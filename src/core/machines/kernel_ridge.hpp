// Exact kernel ridge regression (the least-squares SVM): the solve on a kernel matrix.
#pragma once

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

}  // namespace kl
