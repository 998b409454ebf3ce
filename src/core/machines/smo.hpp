// The SMO solver of the kernel SVM duals.
#pragma once

#include <atomic>
#include <vector>

#include "machines/rows.hpp"

namespace kl {

// The dual problem
//   min_a 0.5 a'Qa + p'a   s.t.  y'a = y'a0,  0 <= a_v <= C_v,
// with Q_uv = y_u y_v k(pt_u, pt_v), y_v = +-1, over L variables that map to the points of a
// RowCache (several variables may share a point, as in regression).

struct SolverOptions {
  double eps = 1e-3;            // stopping tolerance on the maximal violating pair
  bool shrinking = true;
  long max_iter = 10000000;
  const std::atomic<bool>* stop = nullptr;  // polled; throws Interrupted when set
  std::atomic<double>* gap = nullptr;       // current maximal violation, for progress
};

struct SolverResult {
  std::vector<double> alpha;
  double rho = 0.0;   // decision f(x) = sum_v y_v a_v k(pt_v, x) - rho
  double obj = 0.0;   // 0.5 a'Qa + p'a at the solution
  long iter = 0;
  bool converged = true;
};

SolverResult smo_solve(RowCache& cache, const std::vector<int>& pt,
                       const std::vector<signed char>& y, const std::vector<double>& p,
                       const std::vector<double>& C, std::vector<double> alpha0,
                       const SolverOptions& opt);

// Makes a warm start feasible for the box [0, C] and y'a = 0: clips to the box, then scales
// the side of larger total down. Empty input gives zeros.
std::vector<double> feasible_start(const std::vector<double>& a0,
                                   const std::vector<signed char>& y,
                                   const std::vector<double>& C);

}  // namespace kl
