// The binary subproblems of the SVM models: pairs of classes, regression as a 2n-variable dual,
// solving one on a subset of rows, Platt folds.
#include "machines/problems.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/rng.hpp"
#include "machines/multiclass.hpp"

namespace kl {

namespace detail {


PairProblem make_pair(const std::vector<int>& y, int a, int b, const std::vector<double>& weight,
                      double cost, const std::vector<int>* subset) {
  PairProblem pp;
  auto add = [&](int cls, signed char s) {
    const int n = subset ? static_cast<int>(subset->size()) : static_cast<int>(y.size());
    for (int t = 0; t < n; ++t) {
      const int r = subset ? (*subset)[t] : t;
      if (y[r] == cls) {
        pp.rows.push_back(r);
        pp.y.push_back(s);
        pp.C.push_back(cost * weight[cls]);
      }
    }
  };
  add(a, -1);
  add(b, +1);
  return pp;
}


SolverOptions solver_options(const SvmParams& par, const std::atomic<bool>& stop,
                             std::atomic<double>* gap) {
  SolverOptions opt;
  opt.eps = par.tol;
  opt.shrinking = par.shrinking;
  opt.max_iter = par.max_iter;
  opt.stop = &stop;
  opt.gap = gap;
  return opt;
}


RegressionProblem regression_problem(const std::vector<double>& z, const std::vector<int>& rows,
                                     double epsilon) {
  const int n = static_cast<int>(rows.size()), L = 2 * n;
  RegressionProblem rp;
  rp.pt.resize(L);
  rp.y.resize(L);
  rp.p.resize(L);
  for (int v = 0; v < L; ++v) {
    rp.pt[v] = v < n ? v : v - n;
    rp.y[v] = v < n ? 1 : -1;
    rp.p[v] = v < n ? epsilon - z[rows[v]] : epsilon + z[rows[v - n]];
  }
  return rp;
}

// Support vectors of a regression solution: the rows with a - a* != 0.
void fill_regression(BinaryMachine& m, const std::vector<int>& rows, const SolverResult& r) {
  const std::size_t n = rows.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double c = r.alpha[i] - r.alpha[i + n];
    if (c != 0.0) {
      m.sv.push_back(rows[i]);
      m.coef.push_back(c);
    }
  }
  m.rho = r.rho;
  m.obj = r.obj;
  m.iter = r.iter;
  m.converged = r.converged;
}

BinarySolution solve_binary(const TrainingKernel& K, const std::vector<int>& rows,
                            const std::vector<signed char>& y, const std::vector<double>& C,
                            std::vector<double> alpha0, const SvmParams& par, double cache_mb,
                            int row_threads, const std::atomic<bool>& stop,
                            std::atomic<double>* gap, RowCache* shared_cache) {
  std::unique_ptr<KernelRows> src;
  std::unique_ptr<RowCache> own;
  RowCache* cache = shared_cache;
  if (!cache) {
    src = K.subset(rows);
    own.reset(new RowCache(*src, cache_mb, row_threads));
    cache = own.get();
  }
  const int l = static_cast<int>(rows.size());
  std::vector<int> pt(l);
  std::iota(pt.begin(), pt.end(), 0);
  std::vector<double> p(l, -1.0);
  const SolverOptions opt = solver_options(par, stop, gap);
  BinarySolution out;
  const long before = cache->computed();
  out.res = smo_solve(*cache, pt, y, p, C, feasible_start(alpha0, y, C), opt);
  out.kernel_rows = cache->computed() - before;
  return out;
}

void fill_machine(BinaryMachine& m, const std::vector<int>& rows,
                  const std::vector<signed char>& y, const BinarySolution& s) {
  std::vector<std::pair<int, double>> sv;
  for (std::size_t t = 0; t < rows.size(); ++t)
    if (s.res.alpha[t] > 0) sv.emplace_back(rows[t], y[t] * s.res.alpha[t]);
  std::sort(sv.begin(), sv.end());
  m.sv.resize(sv.size());
  m.coef.resize(sv.size());
  for (std::size_t t = 0; t < sv.size(); ++t) {
    m.sv[t] = sv[t].first;
    m.coef[t] = sv[t].second;
  }
  m.rho = s.res.rho;
  m.obj = s.res.obj;
  m.iter = s.res.iter;
  m.converged = s.res.converged;
  m.kernel_rows = s.kernel_rows;
}

double machine_decision(const TrainingKernel& K, const BinaryMachine& m, int row) {
  double f = -m.rho;
  for (std::size_t s = 0; s < m.sv.size(); ++s) f += m.coef[s] * K.value(row, m.sv[s]);
  return f;
}

// Platt parameters of a pair from decision values of internal cross-validation folds.
void pair_probability(const TrainingKernel& K, const PairProblem& pp, const SvmParams& par,
                      double cache_mb, std::uint64_t seed, const std::atomic<bool>& stop,
                      BinaryMachine& m) {
  const int l = static_cast<int>(pp.rows.size());
  const int F = std::max(2, std::min(par.prob_folds, l));
  Rng rng(seed);
  std::vector<int> perm = rng.permutation(l);
  std::vector<double> dec(l, 0.0);
  for (int f = 0; f < F; ++f) {
    const int begin = static_cast<int>(static_cast<long>(f) * l / F);
    const int end = static_cast<int>(static_cast<long>(f + 1) * l / F);
    std::vector<int> rows;
    std::vector<signed char> y;
    std::vector<double> C;
    int np = 0, nn = 0;
    for (int t = 0; t < l; ++t) {
      if (t >= begin && t < end) continue;
      const int q = perm[t];
      rows.push_back(pp.rows[q]);
      y.push_back(pp.y[q]);
      C.push_back(pp.C[q]);
      (pp.y[q] > 0 ? np : nn)++;
    }
    if (np == 0 || nn == 0) {
      const double v = np > 0 ? 1.0 : (nn > 0 ? -1.0 : 0.0);
      for (int t = begin; t < end; ++t) dec[perm[t]] = v;
      continue;
    }
    // Sort the fold's rows (first class then second as in the full problem).
    std::vector<int> order(rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int u, int v) {
      if (y[u] != y[v]) return y[u] < y[v];
      return rows[u] < rows[v];
    });
    std::vector<int> r2(rows.size());
    std::vector<signed char> y2(rows.size());
    std::vector<double> C2(rows.size());
    for (std::size_t t = 0; t < order.size(); ++t) {
      r2[t] = rows[order[t]];
      y2[t] = y[order[t]];
      C2[t] = C[order[t]];
    }
    BinarySolution s = solve_binary(K, r2, y2, C2, {}, par, cache_mb, 1, stop, nullptr);
    BinaryMachine fm;
    fill_machine(fm, r2, y2, s);
    for (int t = begin; t < end; ++t) dec[perm[t]] = machine_decision(K, fm, pp.rows[perm[t]]);
  }
  platt_fit(dec, pp.y, &m.probA, &m.probB);
  m.has_prob = true;
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (k + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void check_params(const SvmParams& par) {
  if (!(par.cost > 0) || !std::isfinite(par.cost)) throw Error("cost must be positive");
  if (!(par.tol > 0)) throw Error("tol must be positive");
  if (!(par.epsilon >= 0)) throw Error("epsilon must be >= 0");
  if (!(par.cache_mb > 0)) throw Error("cache size must be positive");
}


}  // namespace detail

}  // namespace kl
