// Ridge regression with many outputs, and exact kernel ridge regression (LS-SVM).
#pragma once

#include "common.hpp"

namespace kl {

// Linear ridge with an unpenalised intercept:
//   minimise ||Y - 1 b' - X W||_F^2 + lambda ||W||_F^2      (X n x p, Y n x L)
// solved on centred data through a Cholesky factorisation of X'X + lambda I (p <= n) or of
// XX' + lambda I (p > n, the dual form). lambda must be > 0, or 0 with a full-rank system.
struct RidgeFit {
  Mat coef;       // p x L
  Vec intercept;  // L (zeros when intercept = false)
};
RidgeFit ridge_fit(CMatRef X, CMatRef Y, double lambda, bool intercept, int threads);

// Exact kernel ridge regression / least-squares SVM with an unpenalised bias:
//   minimise sum_i ||y_i - f(x_i) - b||^2 + lambda ||f||_H^2,  f = sum_j alpha_j k(x_j, .)
// giving (K + lambda I) alpha = Y - 1 b' with 1' alpha = 0 (bias) or b = 0 (no bias).
// K (n x n, symmetric) is overwritten by its Cholesky factor to save memory.
struct KrrFit {
  Mat alpha;  // n x L
  Vec bias;   // L
};
// K is overwritten by the Cholesky factor of K + lambda I (the core's blocked, vectorised
// factorisation on `threads` threads).
KrrFit kernel_ridge_solve(MatRef K, CMatRef Y, double lambda, bool intercept, int threads = 1,
                          const Callbacks& cb = Callbacks());

}  // namespace kl
