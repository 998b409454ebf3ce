// Test problems with known minima for the optimisers of linalg/optim.hpp.
#pragma once

#include <string>
#include <vector>

#include "base/common.hpp"
#include "base/rng.hpp"
#include "linalg/optim.hpp"

namespace ct {

// sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, minimum 0 at (1, ..., 1); g (when not null)
// receives the gradient.
double rosenbrock(const kl::CVecRef& x, kl::Vec* g);

// 10 d + sum_i (x_i^2 - 10 cos(2 pi x_i)), minimum 0 at the origin, local minima near integers.
double rastrigin(const kl::Vec& x);

// L-BFGS on Rosenbrock from x0.
kl::LbfgsResult rosenbrock_lbfgs(const kl::Vec& x0, kl::LineSearchKind search, int max_iter,
                                 int memory = 10, double gtol = 1e-8, double ftol = 0.0);

// Steepest descent on Rosenbrock with the value-only Armijo search; each search starts from
// twice the previous accepted step. armijo_ok: every accepted step satisfied the
// sufficient-decrease condition and its value was the value at the new point.
struct DescentResult {
  kl::Vec x, grad;
  double value = 0.0;
  int iterations = 0, evaluations = 0;
  bool converged = false, armijo_ok = true;
};
DescentResult rosenbrock_descent(const kl::Vec& x0, int max_iter, double gtol);

// Least squares 0.5 / n ||A x - y||^2 by mini-batch Adam (batches in a random order drawn from
// rng each epoch) with the plateau scheduler.
struct AdamRun {
  kl::Vec x;
  double value = 0.0, lr = 0.0, best = 0.0;
  int epochs = 0, decays = 0;
  long steps = 0;
  std::string reason;
  std::vector<double> history, lr_history;
};
AdamRun least_squares_adam(const kl::Mat& A, const kl::Vec& y, const kl::Vec& x0, int batch,
                           double lr, const kl::PlateauOptions& po, kl::Rng& rng);

// Simulated annealing on Rastrigin with Gaussian proposals of the given step.
kl::AnnealResult<kl::Vec> rastrigin_anneal(const kl::Vec& x0, const kl::AnnealOptions& opt,
                                           double step, kl::Rng& rng);

// The plateau scheduler fed `values` one epoch at a time, until it stops.
struct PlateauRun {
  std::vector<double> lr;  // per epoch fed; NaN after the stop
  int stop_epoch = -1;     // 1-based; -1 when it never stopped
  int decays = 0, best_epoch = 0;
  double best = 0.0;
  std::string reason;
};
PlateauRun plateau_sequence(const std::vector<double>& values, double lr,
                            const kl::PlateauOptions& po);

}  // namespace ct
