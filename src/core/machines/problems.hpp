// Internal to the SVM rooms (svm.cpp, path.cpp): the binary subproblems and their solution.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "machines/rows.hpp"
#include "machines/smo.hpp"
#include "machines/types.hpp"

namespace kl {
namespace detail {

struct PairProblem {
  std::vector<int> rows;             // training rows, first class then second, each ascending
  std::vector<signed char> y;        // -1 first class, +1 second
  std::vector<double> C;
};

struct BinarySolution {
  SolverResult res;
  long kernel_rows = 0;
};

// epsilon-regression on the rows `rows` as a dual over 2n variables: a (y = +1) then a*
// (y = -1), both over the n cached points.
struct RegressionProblem {
  std::vector<int> pt;
  std::vector<signed char> y;
  std::vector<double> p;
};

PairProblem make_pair(const std::vector<int>& y, int a, int b, const std::vector<double>& weight,
                      double cost, const std::vector<int>* subset);

SolverOptions solver_options(const SvmParams& par, const std::atomic<bool>& stop,
                             std::atomic<double>* gap);

RegressionProblem regression_problem(const std::vector<double>& z, const std::vector<int>& rows,
                                     double epsilon);

void fill_regression(BinaryMachine& m, const std::vector<int>& rows, const SolverResult& r);

BinarySolution solve_binary(const TrainingKernel& K, const std::vector<int>& rows,
                            const std::vector<signed char>& y, const std::vector<double>& C,
                            std::vector<double> alpha0, const SvmParams& par, double cache_mb,
                            int row_threads, const std::atomic<bool>& stop,
                            std::atomic<double>* gap, RowCache* shared_cache = nullptr);

void fill_machine(BinaryMachine& m, const std::vector<int>& rows,
                  const std::vector<signed char>& y, const BinarySolution& s);

double machine_decision(const TrainingKernel& K, const BinaryMachine& m, int row);

void pair_probability(const TrainingKernel& K, const PairProblem& pp, const SvmParams& par,
                      double cache_mb, std::uint64_t seed, const std::atomic<bool>& stop,
                      BinaryMachine& m);

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t k);

void check_params(const SvmParams& par);

}  // namespace detail
}  // namespace kl
