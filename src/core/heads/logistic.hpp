// Multinomial logistic regression with an L2 penalty (glmnet's objective with alpha = 0 and
// standardize = FALSE):
//   (1 / sum(w)) * sum_i w_i * (-log p_{y_i}(x_i)) + (lambda / 2) * sum_k ||beta_k||^2,
// with p_k(x) = softmax_k(x' beta_k + b_k), K coefficient vectors (the symmetric
// parameterisation) and K unpenalised intercepts. K = 2 uses the same code.
#pragma once

#include "base/common.hpp"
#include "linalg/optim.hpp"

namespace kl {

struct LogisticOptions {
  double lambda = 0.0;
  int max_iter = 500;
  double gtol = 1e-7;    // stop when the largest absolute gradient component is below this
  double ftol = 1e-14;   // or when the relative change in the objective is below this
  int memory = 10;       // L-BFGS memory
  int threads = 1;
  // Optional starting point (p x K and K); empty means B = 0 and b = centred log class
  // frequencies.
  Mat init_coef;
  Vec init_intercept;
};

struct LogisticFit {
  Mat coef;         // p x K
  Vec intercept;    // K, centred to sum to zero
  double objective = 0.0;
  double grad_norm = 0.0;  // largest absolute gradient component at the solution
  int iterations = 0;
  bool converged = false;
  std::string message;
};

// The objective at (B, b); when gB / gb are not null they receive the gradient (p x K and K).
// y holds class indices in 0..K-1; w is empty (unit weights) or has one non-negative weight per
// row. Row blocks are fixed by n alone, so the value does not depend on the thread count.
double logistic_objective(const CMatRef& x, const IVec& y, int K, const Vec& w, double lambda,
                          const CMatRef& B, const CVecRef& b, Mat* gB, Vec* gb, int threads = 1);

// Fits by L-BFGS with a strong-Wolfe line search from B = 0 and b = centred log class
// frequencies. Calls cb.check() once per iteration.
LogisticFit logistic_fit(const CMatRef& x, const IVec& y, int K, const Vec& w,
                         const LogisticOptions& opt, const Callbacks& cb = Callbacks());

// Shared by the fitting routines. The starting point (p K coefficients, then K intercepts):
// opt.init_coef / init_intercept when given, else B = 0 and b = centred log class frequencies.
Vec logistic_start(const LogisticOptions& opt, const Vec& freq, Eigen::Index p, int K);
// L-BFGS (strong Wolfe) on fg from theta with opt's settings; coefficients and intercepts are
// centred across classes (which leaves the probabilities unchanged and never increases the
// penalty). objective and grad_norm are those of the last L-BFGS iterate.
LogisticFit logistic_minimise(const ValueGradFn& fg, const Vec& theta, Eigen::Index p, int K,
                              const LogisticOptions& opt, const Callbacks& cb);

// Class probabilities (n x K), by a stable softmax.
Mat logistic_predict_prob(const CMatRef& x, const CMatRef& B, const CVecRef& b, int threads = 1);

// Most probable class (0-based) of each row; ties go to the lower index.
IVec logistic_predict_class(const CMatRef& x, const CMatRef& B, const CVecRef& b,
                            int threads = 1);

}  // namespace kl
