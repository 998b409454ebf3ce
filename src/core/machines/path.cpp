// Cost paths for cross-validation: each solve warm-started from the previous cost's.
#include <algorithm>
#include <cmath>

#include "backend/expansion.hpp"
#include "machines/svm.hpp"
#include "machines/problems.hpp"

namespace kl {

using namespace detail;

namespace {

// Decision values of `test` rows for machines given over training rows, per path point.
std::vector<Mat> path_decisions(const TrainingKernel& K, const std::vector<int>& test,
                                const std::vector<std::vector<BinaryMachine>>& machines,
                                int threads, const Callbacks& cb) {
  // Union of support vector rows.
  std::vector<int> cols;
  std::vector<int> where(K.n(), -1);
  for (const auto& per_cost : machines)
    for (const auto& m : per_cost)
      for (int r : m.sv)
        if (where[r] < 0) {
          where[r] = 1;
          cols.push_back(r);
        }
  std::sort(cols.begin(), cols.end());
  for (std::size_t j = 0; j < cols.size(); ++j) where[cols[j]] = static_cast<int>(j);
  std::vector<std::vector<SparseMachine>> sparse(machines.size());
  for (std::size_t c = 0; c < machines.size(); ++c)
    for (const auto& m : machines[c]) {
      SparseMachine s;
      s.rho = m.rho;
      s.coef = m.coef;
      for (int r : m.sv) s.col.push_back(where[r]);
      sparse[c].push_back(std::move(s));
    }
  const int nt = static_cast<int>(test.size());
  std::vector<Mat> out(machines.size());
  for (std::size_t c = 0; c < machines.size(); ++c) out[c].resize(nt, machines[c].size());
  const int bs = std::max(64, std::min(4096, static_cast<int>((8 << 20) / std::max<std::size_t>(cols.size(), 1))));
  Mat Kb;
  for (int lo = 0; lo < nt; lo += bs) {
    cb.check();
    const int b = std::min(bs, nt - lo);
    std::vector<int> rows(test.begin() + lo, test.begin() + lo + b);
    Kb.resize(b, cols.size());
    if (!cols.empty()) K.block(rows, cols, Kb, threads);
    for (std::size_t c = 0; c < machines.size(); ++c)
      expansion_from_block(Kb, sparse[c], out[c].middleRows(lo, b), threads);
  }
  return out;
}

std::vector<double> path_order(const std::vector<double>& costs) {
  for (std::size_t i = 1; i < costs.size(); ++i)
    if (!(costs[i] > costs[i - 1])) throw Error("costs of a path must increase");
  for (double c : costs)
    if (!(c > 0) || !std::isfinite(c)) throw Error("costs must be positive");
  return costs;
}

}  // namespace

std::vector<Mat> svm_classify_path(const TrainingKernel& K, const std::vector<int>& y, int k,
                                   const std::vector<double>& weight,
                                   const std::vector<int>& train, const std::vector<int>& test,
                                   const std::vector<double>& costs, const SvmParams& par,
                                   const Callbacks& cb, bool* converged) {
  path_order(costs);
  const int P = k * (k - 1) / 2;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b) pairs.emplace_back(a, b);
  const int threads = clamp_threads(par.threads);
  const int workers = std::min(threads, P);
  const int row_threads = std::max(1, threads / workers);
  const double cache_mb = par.cache_mb / workers;
  const int nc = static_cast<int>(costs.size());
  std::vector<std::vector<BinaryMachine>> machines(nc, std::vector<BinaryMachine>(P));
  run_tasks(P, workers, [&](int t, const std::atomic<bool>& stop) {
    const int a = pairs[t].first, b = pairs[t].second;
    PairProblem pp = make_pair(y, a, b, weight, 1.0, &train);
    if (pp.rows.empty()) return;
    auto src = K.subset(pp.rows);
    RowCache cache(*src, cache_mb, row_threads);
    std::vector<double> alpha;
    for (int c = 0; c < nc; ++c) {
      std::vector<double> C(pp.C.size());
      for (std::size_t s = 0; s < C.size(); ++s) C[s] = pp.C[s] * costs[c];
      // The previous solution stays feasible for a larger cost (alpha seeding).
      BinarySolution s = solve_binary(K, pp.rows, pp.y, C, alpha, par, cache_mb, row_threads,
                                      stop, nullptr, &cache);
      alpha = s.res.alpha;
      BinaryMachine& m = machines[c][t];
      m.first = a;
      m.second = b;
      fill_machine(m, pp.rows, pp.y, s);
    }
  }, cb);
  if (converged) {
    *converged = true;
    for (const auto& per_cost : machines)
      for (const auto& m : per_cost) *converged = *converged && m.converged;
  }
  return path_decisions(K, test, machines, threads, cb);
}

std::vector<Vec> svm_regress_path(const TrainingKernel& K, const std::vector<double>& z,
                                  const std::vector<int>& train, const std::vector<int>& test,
                                  const std::vector<double>& costs, const SvmParams& par,
                                  const Callbacks& cb, bool* converged) {
  path_order(costs);
  const int nc = static_cast<int>(costs.size());
  std::vector<std::vector<BinaryMachine>> machines(nc, std::vector<BinaryMachine>(1));
  run_tasks(1, 1, [&](int, const std::atomic<bool>& stop) {
    const int n = static_cast<int>(train.size());
    auto src = K.subset(train);
    RowCache cache(*src, par.cache_mb, par.threads);
    const int L = 2 * n;
    RegressionProblem rp = regression_problem(z, train, par.epsilon);
    std::vector<double> alpha;
    for (int c = 0; c < nc; ++c) {
      std::vector<double> C(L, costs[c]);
      if (!alpha.empty()) alpha = feasible_start(alpha, rp.y, C);
      SolverResult r = smo_solve(cache, rp.pt, rp.y, rp.p, C, alpha,
                                 solver_options(par, stop, nullptr));
      alpha = r.alpha;
      fill_regression(machines[c][0], train, r);
    }
  }, cb);
  if (converged) {
    *converged = true;
    for (const auto& per_cost : machines) *converged = *converged && per_cost[0].converged;
  }
  std::vector<Mat> d = path_decisions(K, test, machines, par.threads, cb);
  std::vector<Vec> out(nc);
  for (int c = 0; c < nc; ++c) out[c] = d[c].col(0);
  return out;
}

}  // namespace kl
