// The kernel SVM's parameters and its fitted binary machines, shared by the SVM rooms
// (problems, solver driver, multiclass bookkeeping, cost paths) and their callers.
#pragma once

#include <cstdint>
#include <vector>

#include "base/common.hpp"

namespace kl {

struct SvmParams {
  double cost = 1.0;
  double epsilon = 0.1;     // regression tube
  double tol = 1e-3;
  bool shrinking = true;
  double cache_mb = 1024;   // kernel row cache for the whole fit, shared by concurrent solves
  long max_iter = 0;        // 0: max(1e7, 100 L)
  int threads = 1;
  bool probability = false;
  int prob_folds = 5;
  std::uint64_t seed = 1;   // folds of the probability model
};

// One binary machine: decision f(x) = sum_s coef_s k(x_sv[s], x) - rho, positive for the
// second class of the pair (classification) or the fitted value (regression).
struct BinaryMachine {
  int first = 0, second = 1;       // classes of the pair (classification)
  std::vector<int> sv;             // training rows, ascending
  std::vector<double> coef;        // y_s a_s (classification) or a_s - a*_s (regression)
  double rho = 0.0;
  double obj = 0.0;
  long iter = 0;
  bool converged = true;
  long kernel_rows = 0;            // kernel rows computed
  double probA = 0.0, probB = 0.0; // Platt: P(second | x) = 1 / (1 + exp(A f + B))
  bool has_prob = false;
};

}  // namespace kl
