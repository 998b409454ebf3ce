#include "expansion.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

// Sparse machines whose columns come in long contiguous runs (the one-vs-one machines of an
// SVM: each uses the support vectors of its two classes, stored class by class) are computed
// by matrix products instead of one column update per support vector. The columns are cut into
// segments that every machine uses whole or not at all; each segment contributes
// K(., segment) * C(segment, machines using it) through one product (threaded over its fixed
// tiles), and the contributions are added in segment order: the same sums for any number of
// threads. Returns false, leaving `dec` untouched, when the runs are too short to gain.
bool sparse_by_segments(CMatRef Kb, const std::vector<SparseMachine>& machines,
                        const std::vector<int>& sparse, MatRef dec, int threads) {
  const int nc = static_cast<int>(Kb.cols());
  const int S = static_cast<int>(sparse.size());
  // Each machine's columns in ascending order, repeated columns merged.
  std::vector<std::vector<int>> cols(S);
  std::vector<std::vector<double>> coefs(S);
  std::vector<int> bounds{0, nc};
  std::size_t total = 0;
  for (int t = 0; t < S; ++t) {
    const SparseMachine& sm = machines[sparse[t]];
    const bool dense_like = sm.col.empty();
    if (!dense_like && sm.col.size() != sm.coef.size())
      throw Error("a machine needs one coefficient per point");
    if (dense_like && !sm.coef.empty() && sm.coef.size() != static_cast<std::size_t>(nc))
      throw Error("a machine needs one coefficient per point");
    const std::size_t len = sm.coef.size();
    std::vector<std::pair<int, double>> cc(len);
    for (std::size_t s = 0; s < len; ++s) {
      cc[s] = {dense_like ? static_cast<int>(s) : sm.col[s], sm.coef[s]};
      if (cc[s].first < 0 || cc[s].first >= nc)
        throw Error("a machine refers to a point the model does not have");
    }
    std::stable_sort(cc.begin(), cc.end(),
                     [](const std::pair<int, double>& a, const std::pair<int, double>& b) {
                       return a.first < b.first;
                     });
    for (std::size_t s = 0; s < cc.size(); ++s) {
      if (!cols[t].empty() && cols[t].back() == cc[s].first) {
        coefs[t].back() += cc[s].second;
        continue;
      }
      if (cols[t].empty() || cols[t].back() + 1 != cc[s].first) {
        if (!cols[t].empty()) bounds.push_back(cols[t].back() + 1);
        bounds.push_back(cc[s].first);
      }
      cols[t].push_back(cc[s].first);
      coefs[t].push_back(cc[s].second);
    }
    if (!cols[t].empty()) bounds.push_back(cols[t].back() + 1);
    total += cols[t].size();
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const int nseg = static_cast<int>(bounds.size()) - 1;
  // Segment g = columns [bounds[g], bounds[g + 1]); users[g] = (machine, offset of the segment's
  // first column in that machine's sorted coefficients).
  std::vector<std::vector<std::pair<int, int>>> users(std::max(nseg, 0));
  std::size_t uses = 0;
  for (int t = 0; t < S; ++t) {
    const std::vector<int>& c = cols[t];
    for (std::size_t s = 0; s < c.size();) {
      const int g = static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), c[s]) -
                                     bounds.begin()) - 1;
      users[g].push_back({t, static_cast<int>(s)});
      ++uses;
      s += bounds[g + 1] - bounds[g];
    }
  }
  // Worth it when the products are wide enough: segments of several columns on average.
  if (uses == 0 || total < 8 * uses) return false;
  for (int t = 0; t < S; ++t) dec.col(sparse[t]).setConstant(-machines[sparse[t]].rho);
  Mat F;
  for (int g = 0; g < nseg; ++g) {
    if (users[g].empty()) continue;
    const int lo = bounds[g], len = bounds[g + 1] - bounds[g];
    const int mu = static_cast<int>(users[g].size());
    Mat Ct(mu, len);
    for (int u = 0; u < mu; ++u) {
      const std::vector<double>& cf = coefs[users[g][u].first];
      for (int j = 0; j < len; ++j) Ct(u, j) = cf[users[g][u].second + j];
    }
    F.resize(Kb.rows(), mu);
    cpu_backend().gemm_nt(Kb.middleCols(lo, len), Ct, F, threads);
    for (int u = 0; u < mu; ++u) dec.col(sparse[users[g][u].first]) += F.col(u);
  }
  return true;
}

}  // namespace

void expansion_from_block(CMatRef Kb, const std::vector<SparseMachine>& machines, MatRef dec,
                          int threads) {
  const int M = static_cast<int>(machines.size());
  if (dec.rows() != Kb.rows() || dec.cols() != M)
    throw Error("decision matrix has the wrong shape");
  std::vector<int> dense, sparse;
  for (int m = 0; m < M; ++m) {
    const SparseMachine& sm = machines[m];
    if (sm.col.empty() && static_cast<Eigen::Index>(sm.coef.size()) == Kb.cols() && Kb.cols() > 0)
      dense.push_back(m);
    else
      sparse.push_back(m);
  }
  if (!dense.empty()) {
    // All dense machines at once: Kb (rows x n) times their coefficients (n x machines).
    Mat Ct(dense.size(), Kb.cols());
    for (std::size_t t = 0; t < dense.size(); ++t)
      Ct.row(t) = Eigen::Map<const Vec>(machines[dense[t]].coef.data(), Kb.cols()).transpose();
    Mat F(Kb.rows(), dense.size());
    cpu_backend().gemm_nt(Kb, Ct, F, threads);
    for (std::size_t t = 0; t < dense.size(); ++t)
      dec.col(dense[t]) = F.col(t).array() - machines[dense[t]].rho;
  }
  if (sparse.empty()) return;
  if (sparse.size() >= 2 && sparse_by_segments(Kb, machines, sparse, dec, threads)) return;
  const int S = static_cast<int>(sparse.size());
  const int nt = S > 1 ? clamp_threads(threads) : 1;
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1)
#endif
  for (int t = 0; t < S; ++t) {
    const SparseMachine& sm = machines[sparse[t]];
    auto d = dec.col(sparse[t]);
    d.setConstant(-sm.rho);
    for (std::size_t s = 0; s < sm.col.size(); ++s) d.noalias() += sm.coef[s] * Kb.col(sm.col[s]);
  }
}

void kernel_expansion(Backend& be, const Kernel& kernel, CMatRef X, CMatRef centers,
                      const std::vector<SparseMachine>& machines, MatRef dec, int threads,
                      const Callbacks& cb) {
  const Eigen::Index m = X.rows(), nc = centers.rows();
  if (X.cols() != centers.cols()) throw Error("new data and the model's points differ in columns");
  if (dec.rows() != m || dec.cols() != static_cast<Eigen::Index>(machines.size()))
    throw Error("decision matrix has the wrong shape");
  kernel.check_dim(X.cols(), "the new data");
  for (const SparseMachine& sm : machines)
    for (int c : sm.col)
      if (c < 0 || c >= nc) throw Error("a machine refers to a point the model does not have");
  // Row blocks of at most ~64 MB of kernel values.
  const Eigen::Index bs = std::max<Eigen::Index>(
      64, std::min<Eigen::Index>(4096, (8 << 20) / std::max<Eigen::Index>(nc, 1)));
  Mat Kb;
  for (Eigen::Index lo = 0; lo < m; lo += bs) {
    cb.check();
    const Eigen::Index b = std::min(bs, m - lo);
    Kb.resize(b, nc);
    if (nc > 0) be.kernel_matrix(kernel, X.middleRows(lo, b), centers, Kb, threads, cb);
    expansion_from_block(Kb, machines, dec.middleRows(lo, b), threads);
    cb.report(static_cast<double>(lo + b) / m);
  }
}

std::vector<SparseMachine> dense_machines(CMatRef alpha, CVecRef bias) {
  if (bias.size() != alpha.cols()) throw Error("one bias per output is needed");
  std::vector<SparseMachine> out(alpha.cols());
  for (Eigen::Index l = 0; l < alpha.cols(); ++l) {
    out[l].coef.assign(alpha.col(l).data(), alpha.col(l).data() + alpha.rows());
    out[l].rho = -bias[l];
  }
  return out;
}

}  // namespace kl
