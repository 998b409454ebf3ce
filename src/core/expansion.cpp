#include "expansion.hpp"

#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

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
