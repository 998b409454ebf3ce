// C-classification (one-vs-one, the pairs solved in parallel) and epsilon-regression.
#include "machines/svm.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "machines/problems.hpp"

namespace kl {

using namespace detail;

std::vector<BinaryMachine> svm_classify(const TrainingKernel& K, const std::vector<int>& y, int k,
                                        const std::vector<double>& weight,
                                        const SvmParams& par,
                                        const std::vector<std::vector<double>>& warm,
                                        const Callbacks& cb) {
  check_params(par);
  if (k < 2) throw Error("classification needs at least two classes");
  if (static_cast<int>(y.size()) != K.n()) throw Error("labels and rows differ in number");
  if (static_cast<int>(weight.size()) != k) throw Error("one class weight per class is needed");
  const int P = k * (k - 1) / 2;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b) pairs.emplace_back(a, b);
  std::vector<BinaryMachine> out(P);
  const int threads = clamp_threads(par.threads);
  const int workers = std::min(threads, P);
  const int row_threads = std::max(1, threads / workers);
  const double cache_mb = par.cache_mb / workers;
  std::atomic<double> gap(-1.0);
  run_tasks(P, workers, [&](int t, const std::atomic<bool>& stop) {
    const int a = pairs[t].first, b = pairs[t].second;
    PairProblem pp = make_pair(y, a, b, weight, par.cost, nullptr);
    std::vector<double> a0;
    if (!warm.empty() && !warm[t].empty()) {
      if (warm.size() != static_cast<std::size_t>(P) ||
          warm[t].size() != static_cast<std::size_t>(K.n()))
        throw Error("warm start does not match the problem");
      a0.resize(pp.rows.size());
      for (std::size_t s = 0; s < pp.rows.size(); ++s) a0[s] = std::fabs(warm[t][pp.rows[s]]);
    }
    BinarySolution s = solve_binary(K, pp.rows, pp.y, pp.C, std::move(a0), par, cache_mb,
                                     row_threads, stop, P == 1 ? &gap : nullptr);
    BinaryMachine& m = out[t];
    m.first = a;
    m.second = b;
    fill_machine(m, pp.rows, pp.y, s);
    if (par.probability)
      pair_probability(K, pp, par, cache_mb, mix_seed(par.seed, t), stop, m);
  }, cb, &gap, par.tol);
  return out;
}

BinaryMachine svm_regress(const TrainingKernel& K, const std::vector<double>& z,
                          const SvmParams& par, const std::vector<double>& warm,
                          const Callbacks& cb) {
  check_params(par);
  const int n = K.n();
  if (static_cast<int>(z.size()) != n) throw Error("response and rows differ in number");
  BinaryMachine m;
  std::atomic<double> gap(-1.0);
  run_tasks(1, 1, [&](int, const std::atomic<bool>& stop) {
    std::vector<int> rows(n);
    std::iota(rows.begin(), rows.end(), 0);
    auto src = K.subset(rows);
    RowCache cache(*src, par.cache_mb, par.threads);
    const int L = 2 * n;
    RegressionProblem rp = regression_problem(z, rows, par.epsilon);
    std::vector<double> C(L, par.cost), a0;
    if (!warm.empty()) {
      a0.resize(L);
      for (int i = 0; i < n; ++i) {
        a0[i] = std::max(warm[i], 0.0);
        a0[i + n] = std::max(-warm[i], 0.0);
      }
      a0 = feasible_start(a0, rp.y, C);
    }
    SolverResult r = smo_solve(cache, rp.pt, rp.y, rp.p, C, std::move(a0),
                               solver_options(par, stop, &gap));
    fill_regression(m, rows, r);
    m.kernel_rows = cache.computed();
  }, cb, &gap, par.tol);
  return m;
}

}  // namespace kl
