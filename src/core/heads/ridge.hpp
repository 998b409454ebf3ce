// Linear ridge regression with many outputs.
#pragma once

#include "base/common.hpp"

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

}  // namespace kl
