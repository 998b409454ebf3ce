#include "backend/expansion.hpp"

#include "kernels/standard.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

// How a set of machines is evaluated over kernel blocks with `nc` columns, worked out once for
// all row blocks.
//  - Dense machines (one coefficient per column) go through one matrix product: Ct holds their
//    coefficients, one row each.
//  - Sparse machines whose columns come in long contiguous runs (the one-vs-one machines of an
//    SVM: each uses the support vectors of its two classes, stored class by class) go through
//    matrix products too: the columns are cut into segments that every machine uses whole or
//    not at all, and each segment contributes K(., segment) * C(segment, machines using it).
//    Contributions are added in segment order: the same sums for any number of threads.
//  - Other sparse machines (short runs) are one column update per point.
struct ExpansionPlan {
  std::vector<int> dense, sparse;
  Mat Ct;                                    // dense machines' coefficients
  bool segmented = false;
  std::vector<int> bounds;                   // segment g = columns [bounds[g], bounds[g + 1])
  std::vector<std::vector<int>> users;       // machines (indices into `sparse`) per segment
  std::vector<Mat> coef;                     // per segment: users x segment length
};

ExpansionPlan plan_expansion(const std::vector<SparseMachine>& machines, Eigen::Index ncols) {
  ExpansionPlan pl;
  const int M = static_cast<int>(machines.size());
  const int nc = static_cast<int>(ncols);
  for (int m = 0; m < M; ++m) {
    const SparseMachine& sm = machines[m];
    if (sm.col.empty() && static_cast<Eigen::Index>(sm.coef.size()) == ncols && ncols > 0)
      pl.dense.push_back(m);
    else
      pl.sparse.push_back(m);
  }
  if (!pl.dense.empty()) {
    pl.Ct.resize(pl.dense.size(), ncols);
    for (std::size_t t = 0; t < pl.dense.size(); ++t)
      pl.Ct.row(t) = Eigen::Map<const Vec>(machines[pl.dense[t]].coef.data(), ncols).transpose();
  }
  const int S = static_cast<int>(pl.sparse.size());
  if (S < 2) return pl;
  // Each sparse machine's columns in ascending order, repeated columns merged.
  std::vector<std::vector<int>> cols(S);
  std::vector<std::vector<double>> coefs(S);
  std::vector<int> bounds{0, nc};
  std::size_t total = 0;
  for (int t = 0; t < S; ++t) {
    const SparseMachine& sm = machines[pl.sparse[t]];
    const bool all_cols = sm.col.empty();
    if (!all_cols && sm.col.size() != sm.coef.size())
      throw Error("a machine needs one coefficient per point");
    if (all_cols && !sm.coef.empty() && sm.coef.size() != static_cast<std::size_t>(nc))
      throw Error("a machine needs one coefficient per point");
    std::vector<std::pair<int, double>> cc(sm.coef.size());
    for (std::size_t s = 0; s < cc.size(); ++s) {
      cc[s] = {all_cols ? static_cast<int>(s) : sm.col[s], sm.coef[s]};
      if (cc[s].first < 0 || cc[s].first >= nc)
        throw Error("a machine refers to a point the model does not have");
    }
    std::stable_sort(cc.begin(), cc.end(),
                     [](const std::pair<int, double>& a, const std::pair<int, double>& b) {
                       return a.first < b.first;
                     });
    for (const std::pair<int, double>& e : cc) {
      if (!cols[t].empty() && cols[t].back() == e.first) {
        coefs[t].back() += e.second;
        continue;
      }
      if (cols[t].empty() || cols[t].back() + 1 != e.first) {
        if (!cols[t].empty()) bounds.push_back(cols[t].back() + 1);
        bounds.push_back(e.first);
      }
      cols[t].push_back(e.first);
      coefs[t].push_back(e.second);
    }
    if (!cols[t].empty()) bounds.push_back(cols[t].back() + 1);
    total += cols[t].size();
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const int nseg = static_cast<int>(bounds.size()) - 1;
  // (machine, offset of the segment's first column in the machine's sorted coefficients)
  std::vector<std::vector<std::pair<int, int>>> uses(std::max(nseg, 0));
  std::size_t nuses = 0;
  for (int t = 0; t < S; ++t) {
    const std::vector<int>& c = cols[t];
    for (std::size_t s = 0; s < c.size();) {
      const int g = static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), c[s]) -
                                     bounds.begin()) - 1;
      uses[g].push_back({t, static_cast<int>(s)});
      ++nuses;
      s += bounds[g + 1] - bounds[g];
    }
  }
  // Worth it when the products are wide enough: segments of several columns on average.
  if (nuses == 0 || total < 8 * nuses) return pl;
  pl.segmented = true;
  pl.bounds = std::move(bounds);
  pl.users.resize(nseg);
  pl.coef.resize(nseg);
  for (int g = 0; g < nseg; ++g) {
    const int len = pl.bounds[g + 1] - pl.bounds[g];
    const int mu = static_cast<int>(uses[g].size());
    pl.coef[g].resize(mu, len);
    for (int u = 0; u < mu; ++u) {
      pl.users[g].push_back(uses[g][u].first);
      const std::vector<double>& cf = coefs[uses[g][u].first];
      for (int j = 0; j < len; ++j) pl.coef[g](u, j) = cf[uses[g][u].second + j];
    }
  }
  return pl;
}

void apply_expansion(CMatRef Kb, const std::vector<SparseMachine>& machines,
                     const ExpansionPlan& pl, MatRef dec, int threads) {
  if (dec.rows() != Kb.rows() || dec.cols() != static_cast<Eigen::Index>(machines.size()))
    throw Error("decision matrix has the wrong shape");
  if (!pl.dense.empty()) {
    // All dense machines at once: Kb (rows x n) times their coefficients (n x machines).
    Mat F(Kb.rows(), pl.dense.size());
    cpu_backend().gemm_nt(Kb, pl.Ct, F, threads);
    for (std::size_t t = 0; t < pl.dense.size(); ++t)
      dec.col(pl.dense[t]) = F.col(t).array() - machines[pl.dense[t]].rho;
  }
  const int S = static_cast<int>(pl.sparse.size());
  if (S == 0) return;
  if (pl.segmented) {
    for (int t = 0; t < S; ++t) dec.col(pl.sparse[t]).setConstant(-machines[pl.sparse[t]].rho);
    Mat F;
    for (std::size_t g = 0; g < pl.users.size(); ++g) {
      if (pl.users[g].empty()) continue;
      const int lo = pl.bounds[g], len = pl.bounds[g + 1] - pl.bounds[g];
      F.resize(Kb.rows(), static_cast<Eigen::Index>(pl.users[g].size()));
      cpu_backend().gemm_nt(Kb.middleCols(lo, len), pl.coef[g], F, threads);
      for (std::size_t u = 0; u < pl.users[g].size(); ++u)
        dec.col(pl.sparse[pl.users[g][u]]) += F.col(static_cast<Eigen::Index>(u));
    }
    return;
  }
  const int nt = clamp_threads(threads);
  (void)nt;
  if (S >= nt || Kb.rows() < 256) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1 && S > 1)
#endif
    for (int t = 0; t < S; ++t) {
      const SparseMachine& sm = machines[pl.sparse[t]];
      auto d = dec.col(pl.sparse[t]);
      d.setConstant(-sm.rho);
      for (std::size_t s = 0; s < sm.col.size(); ++s)
        d.noalias() += sm.coef[s] * Kb.col(sm.col[s]);
    }
    return;
  }
  // Fewer machines than threads (a binary SVM): the threads share the rows instead. Each row's
  // sum runs over the points in the same order either way.
  const Eigen::Index chunk = 128, nchunks = (Kb.rows() + chunk - 1) / chunk;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
  for (Eigen::Index c = 0; c < nchunks; ++c) {
    const Eigen::Index lo = c * chunk, len = std::min(chunk, Kb.rows() - lo);
    for (int t = 0; t < S; ++t) {
      const SparseMachine& sm = machines[pl.sparse[t]];
      auto d = dec.col(pl.sparse[t]).segment(lo, len);
      d.setConstant(-sm.rho);
      for (std::size_t s = 0; s < sm.col.size(); ++s)
        d.noalias() += sm.coef[s] * Kb.col(sm.col[s]).segment(lo, len);
    }
  }
}

}  // namespace

void expansion_from_block(CMatRef Kb, const std::vector<SparseMachine>& machines, MatRef dec,
                          int threads) {
  apply_expansion(Kb, machines, plan_expansion(machines, Kb.cols()), dec, threads);
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
  const ExpansionPlan plan = plan_expansion(machines, nc);
  threads = clamp_threads(threads);
  if (nc > 0 && !(be.is_gpu() && be.computes(kernel))) {
    // On the processor: each thread takes whole row blocks, small enough that their kernel
    // values stay in its cache between the kernel and the products (about 2 MB; at least 256
    // rows when the kernel block is a matrix product, so the centers are packed rarely).
    // Every row's values are computed the same way whatever the number of threads.
    const bool direct = kernel.standard() && X.cols() <= kDirectKernelCols;
    const Eigen::Index by_cache = (2 << 20) / (8 * nc);
    const Eigen::Index bs = std::min<Eigen::Index>(
        512, std::max<Eigen::Index>(direct ? 32 : 256, by_cache / 16 * 16));
    const Eigen::Index nblocks = (m + bs - 1) / bs;
    const Eigen::Index sweep = 8 * threads;
    for (Eigen::Index start = 0; start < nblocks; start += sweep) {
      cb.check();
      const Eigen::Index stop = std::min(nblocks, start + sweep);
      bool failed = false;
      std::string what;
      {
        const EigenSerial eigen_serial(true);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1 && stop - start > 1)
#endif
        {
          Mat Kb;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
          for (Eigen::Index blk = start; blk < stop; ++blk) {
            try {
              const Eigen::Index lo = blk * bs, b = std::min(bs, m - lo);
              Kb.resize(b, nc);
              kernel.block(X.middleRows(lo, b), centers, Kb, 1, Callbacks());
              apply_expansion(Kb, machines, plan, dec.middleRows(lo, b), 1);
            } catch (const std::exception& e) {
#ifdef _OPENMP
#pragma omp critical(kl_expansion_error)
#endif
              if (!failed) {
                failed = true;
                what = e.what();
              }
            }
          }
        }
      }
      if (failed) throw Error("kernel expansion: " + what);
      cb.report(static_cast<double>(std::min(m, stop * bs)) / m);
    }
    return;
  }
  // Row blocks of at most ~64 MB of kernel values.
  const Eigen::Index bs = std::max<Eigen::Index>(
      64, std::min<Eigen::Index>(4096, (8 << 20) / std::max<Eigen::Index>(nc, 1)));
  Mat Kb;
  for (Eigen::Index lo = 0; lo < m; lo += bs) {
    cb.check();
    const Eigen::Index b = std::min(bs, m - lo);
    Kb.resize(b, nc);
    if (nc > 0) be.kernel_matrix(kernel, X.middleRows(lo, b), centers, Kb, threads, cb);
    apply_expansion(Kb, machines, plan, dec.middleRows(lo, b), threads);
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
