#include "kernels/hgk_pass.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <string>

#include "linalg/simd.hpp"
#include "linalg/vexp_simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

constexpr Eigen::Index kMinBlockRows = 32;
constexpr Eigen::Index kMaxBlocks = 64;

Eigen::Index block_rows(Eigen::Index nx) {
  return std::max(kMinBlockRows, (nx + kMaxBlocks - 1) / kMaxBlocks);
}
constexpr std::size_t kMaxLeafCols = 16;

// The tree as flat arrays: member m of node v is m in [start[v], start[v + 1]), which is also
// its parameter index (the kernel numbers parameters node by node, member by member).
struct Program {
  int nn = 0;
  std::vector<char> leaf;
  std::vector<int> start;   // nn + 1
  std::vector<int> member;  // leaf: slot of the packed column; inner: child node
  std::vector<int> column;  // leaf members: the input column (-1 for inner members)
  std::vector<double> coef; // s_v w_m^2
  std::vector<double> pfac; // -2 s_v w_m: dK/dw_m = pfac * sum of G_v t_m
  int nslots = 0;
};

Program compile(const std::vector<HgkNode>& nodes) {
  Program P;
  P.nn = static_cast<int>(nodes.size());
  P.start.push_back(0);
  for (const HgkNode& nd : nodes) {
    P.leaf.push_back(nd.leaf ? 1 : 0);
    for (std::size_t i = 0; i < nd.members.size(); ++i) {
      const double w = nd.weights[i];
      P.coef.push_back(nd.scale * w * w);
      P.pfac.push_back(-2.0 * nd.scale * w);
      if (nd.leaf) {
        P.member.push_back(P.nslots++);
        P.column.push_back(nd.members[i]);
      } else {
        P.member.push_back(nd.members[i]);
        P.column.push_back(-1);
      }
    }
    P.start.push_back(static_cast<int>(P.member.size()));
  }
  return P;
}

// Everything a block of rows reads; outputs per block are written to distinct places.
struct Context {
  const Program* P;
  const HgkPassJob* job;
  CMatRef X;
  Eigen::Index nx, nzp;      // nzp: the columns rounded up to the vector width (padding is zero)
  const double* Zp;          // nzp x nslots, column-major
  const double* Vp;          // nzp x L, column-major, zero padded
  Eigen::Index L;
  bool grad;
  Mat* gblocks;              // nparams x blocks: each block's sums (before pfac)
};

#ifdef KL_HGK_SIMD
using namespace vexp_detail;

struct AlignedDelete {
  template <class T>
  void operator()(T* p) const {
    ::operator delete[](p, std::align_val_t(64));
  }
};

// Columns go U vectors at a time (more independent work between the dependent steps of each
// node's exponential, and the per-node bookkeeping paid once for U W pairs).
constexpr int kUnroll = 4;

template <class V, class VI, int W>
KL_INLINE void run_block(const Context& c, int block) {
  constexpr int U = kUnroll;
  const Program& P = *c.P;
  const HgkPassJob& job = *c.job;
  const int nn = P.nn, root = nn - 1;
  const Eigen::Index npar = static_cast<Eigen::Index>(P.coef.size());
  const Eigen::Index L = c.L;
  const Eigen::Index a0 = hgk_pass_block_start(c.nx, block);
  const Eigen::Index a1 = std::min(c.nx, a0 + block_rows(c.nx));
  // node values (U vectors per node), adjoints and the row's sums in one 64-byte aligned
  // buffer (std::vector of a vector type need not honour its alignment)
  const std::size_t nvec = static_cast<std::size_t>(3 * U * nn + npar + L);
  std::unique_ptr<V[], AlignedDelete> store(
      static_cast<V*>(::operator new[](nvec * sizeof(V), std::align_val_t(64))));
  for (std::size_t i = 0; i < nvec; ++i) store[i] = V{};
  V* kv = store.get();
  V* om = kv + U * nn;
  V* gb = om + U * nn;
  V* acc = gb + U * nn;
  V* kvs = acc + npar;
  std::vector<double> xm(P.member.size());
  std::vector<double> krow(job.want_row ? c.nzp : 0), sums(L), ua(L);
  Vec gsum = Vec::Zero(npar);
  V lane;
  for (int u = 0; u < W; ++u) lane[u] = u;
  const V zero = V{};
  V tab0, tab1;
  std::memcpy(&tab0, exp_table(2 * W), sizeof tab0);
  std::memcpy(&tab1, exp_table(2 * W) + W, sizeof tab1);
  for (Eigen::Index a = a0; a < a1; ++a) {
    for (std::size_t m = 0; m < P.member.size(); ++m)
      xm[m] = P.column[m] >= 0 ? c.X(a, P.column[m]) : 0.0;
    for (Eigen::Index l = 0; l < L; ++l) {
      kvs[l] = zero;
      ua[l] = job.U ? (*job.U)(a, l) : 1.0;
    }
    if (c.grad)
      for (Eigen::Index t = 0; t < npar; ++t) acc[t] = zero;
    const Eigen::Index bstart = job.triangle ? (a + 1) / (U * W) * (U * W) : 0;
    for (Eigen::Index b0 = bstart; b0 < c.nzp; b0 += U * W) {
      // forward: every node's K and 1 - K
      for (int v = 0; v < nn; ++v) {
        V s[U];
        for (int u = 0; u < U; ++u) s[u] = zero;
        if (P.leaf[v]) {
          for (int m = P.start[v]; m < P.start[v + 1]; ++m) {
            const double* zc = c.Zp + P.member[m] * c.nzp + b0;
            const double cm = P.coef[m], xa = xm[m];
            for (int u = 0; u < U; ++u) {
              V z;
              std::memcpy(&z, zc + u * W, sizeof z);
              const V dd = z - xa;
              s[u] += cm * (dd * dd);
            }
          }
        } else {
          for (int m = P.start[v]; m < P.start[v + 1]; ++m) {
            const V* oc = om + P.member[m] * U;
            const double cm = P.coef[m];
            for (int u = 0; u < U; ++u) s[u] += cm * oc[u];
          }
        }
        for (int u = 0; u < U; ++u)
          exp_pair_table<V, VI, W>(s[u], kv[v * U + u], om[v * U + u], tab0, tab1);
      }
      V adj[U];
      for (int u = 0; u < U; ++u) {
        const V k = kv[root * U + u];
        adj[u] = zero;
        for (Eigen::Index l = 0; l < L; ++l) {
          V w;
          std::memcpy(&w, c.Vp + l * c.nzp + b0 + u * W, sizeof w);
          kvs[l] += k * w;
          adj[u] += ua[l] * w;
        }
        if (job.want_row) std::memcpy(krow.data() + b0 + u * W, &k, sizeof k);
        if (job.triangle && b0 + u * W <= a) {
          const V idx = lane + static_cast<double>(b0 + u * W);
          adj[u] = idx > static_cast<double>(a) ? adj[u] : zero;
        }
        gb[root * U + u] = adj[u] * k;
      }
      if (!c.grad) continue;
      // backward from the root
      for (int v = root; v >= 0; --v) {
        const V* g = gb + v * U;
        if (P.leaf[v]) {
          for (int m = P.start[v]; m < P.start[v + 1]; ++m) {
            const double* zc = c.Zp + P.member[m] * c.nzp + b0;
            const double xa = xm[m];
            V t = zero;
            for (int u = 0; u < U; ++u) {
              V z;
              std::memcpy(&z, zc + u * W, sizeof z);
              const V dd = z - xa;
              t += g[u] * (dd * dd);
            }
            acc[m] += t;
          }
        } else {
          for (int m = P.start[v]; m < P.start[v + 1]; ++m) {
            const int ch = P.member[m];
            const double cm = P.coef[m];
            V t = zero;
            for (int u = 0; u < U; ++u) {
              t += g[u] * om[ch * U + u];
              gb[ch * U + u] = (g[u] * cm) * kv[ch * U + u];
            }
            acc[m] += t;
          }
        }
      }
    }
    for (Eigen::Index l = 0; l < L; ++l) {
      double s = 0.0;
      for (int u = 0; u < W; ++u) s += kvs[l][u];
      sums[l] = s;
      if (job.KV) (*job.KV)(a, l) = s;
    }
    const double f = job.row_end ? job.row_end(a, block, sums.data(),
                                               job.want_row ? krow.data() : nullptr)
                                 : 1.0;
    if (c.grad)
      for (Eigen::Index t = 0; t < npar; ++t) {
        double s = 0.0;
        for (int u = 0; u < W; ++u) s += acc[t][u];
        gsum[t] += f * s;
      }
  }
  if (c.grad) c.gblocks->col(block) = gsum;
}

__attribute__((target("avx2,fma"))) void run_block_avx2(const Context& c, int block) {
  run_block<v4d, v4l, 4>(c, block);
}
__attribute__((target("avx512f,avx2,fma"))) void run_block_avx512(const Context& c, int block) {
  run_block<v8d, v8l, 8>(c, block);
}
#endif

}  // namespace

bool hgk_pass_available(const std::vector<HgkNode>& nodes) {
#ifdef KL_HGK_SIMD
  if (simd_level() == SimdLevel::none) return false;
  for (const HgkNode& nd : nodes)
    if (nd.leaf && nd.members.size() > kMaxLeafCols) return false;
  return !nodes.empty();
#else
  (void)nodes;
  return false;
#endif
}

int hgk_pass_blocks(Eigen::Index nx) {
  const Eigen::Index r = block_rows(nx);
  return static_cast<int>((nx + r - 1) / r);
}

Eigen::Index hgk_pass_block_start(Eigen::Index nx, int block) {
  return static_cast<Eigen::Index>(block) * block_rows(nx);
}

void hgk_pass(const std::vector<HgkNode>& nodes, int d, CMatRef X, CMatRef Z,
              const HgkPassJob& job, int threads, const Callbacks& cb) {
  if (!hgk_pass_available(nodes)) throw Error("the fused hierarchical kernel pass is not available");
  if (X.cols() != d || Z.cols() != d) throw Error("the points do not have the kernel's columns");
  if ((job.KV || job.grad) && !job.V) throw Error("the pass needs the column weights");
  if (job.V && (job.V->rows() != Z.rows() || job.V->cols() < 1))
    throw Error("the pass needs one row of column weights per point");
  const Eigen::Index L = job.V ? job.V->cols() : 0;
  if (job.U && (job.U->rows() != X.rows() || job.U->cols() != L))
    throw Error("the adjoint's row factors have the wrong shape");
  if (job.grad && !job.U && L != 1)
    throw Error("a row factor from the row's own sums needs a single output");
  if (job.triangle && (X.rows() != Z.rows() || job.KV))
    throw Error("a triangle pass runs over one point set and gives no row sums");
  if (job.KV && (job.KV->rows() != X.rows() || job.KV->cols() != L))
    throw Error("the row sums have the wrong shape");
#ifdef KL_HGK_SIMD
  const SimdLevel level = simd_level();
  const int W = level == SimdLevel::avx512 ? 8 : 4;
  const Program P = compile(nodes);
  for (int v = 0; v + 1 < P.nn; ++v)
    if (P.leaf[v] == 0 && P.start[v] == P.start[v + 1]) throw Error("empty node");
  const Eigen::Index nx = X.rows(), nz = Z.rows();
  const Eigen::Index step = static_cast<Eigen::Index>(W) * kUnroll;
  const Eigen::Index nzp = (nz + step - 1) / step * step;
  Mat Zp = Mat::Zero(nzp, std::max(1, P.nslots));
  for (std::size_t m = 0; m < P.member.size(); ++m)
    if (P.column[m] >= 0) Zp.col(P.member[m]).head(nz) = Z.col(P.column[m]);
  Mat Vp = Mat::Zero(nzp, std::max<Eigen::Index>(L, 1));
  if (job.V) Vp.topRows(nz) = *job.V;
  const int nb = hgk_pass_blocks(nx);
  Mat gblocks;
  if (job.grad) gblocks.setZero(static_cast<Eigen::Index>(P.coef.size()), nb);
  Context c{&P, &job, X, nx, nzp, Zp.data(), Vp.data(), L, job.grad != nullptr, &gblocks};
  threads = clamp_threads(threads);
  const int sweep = std::max(1, 8 * threads);
  for (int s0 = 0; s0 < nb; s0 += sweep) {
    cb.check();
    const int s1 = std::min(nb, s0 + sweep);
    const int nt = s1 - s0 > 1 ? threads : 1;
    (void)nt;
    bool failed = false;
    std::string what;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
#endif
    for (int b = s0; b < s1; ++b) {
      try {
        if (level == SimdLevel::avx512) run_block_avx512(c, b);
        else run_block_avx2(c, b);
      } catch (const std::exception& e) {
#ifdef _OPENMP
#pragma omp critical(kl_hgk_pass)
#endif
        {
          failed = true;
          what = e.what();
        }
      }
    }
    if (failed) throw Error(what);
    cb.report(static_cast<double>(s1) / nb);
  }
  if (job.grad) {
    Vec g = Vec::Zero(gblocks.rows());
    for (int b = 0; b < nb; ++b) g += gblocks.col(b);
    *job.grad = g.cwiseProduct(Eigen::Map<const Vec>(P.pfac.data(), g.size()));
  }
#else
  (void)threads;
  (void)cb;
  throw Error("the fused hierarchical kernel pass is not available");
#endif
}

void hgk_pass_lower(const std::vector<HgkNode>& nodes, int d, CMatRef X, MatRef K, int threads,
                    const Callbacks& cb) {
  const Eigen::Index nx = X.rows();
  if (K.rows() != nx || K.cols() != nx) throw Error("K has the wrong shape");
  HgkPassJob job;
  job.want_row = true;
  job.triangle = true;
  job.row_end = [&](Eigen::Index a, int, const double*, const double* krow) {
    K(a, a) = 1.0;
    if (a + 1 < nx) K.col(a).tail(nx - a - 1) = Eigen::Map<const Vec>(krow + a + 1, nx - a - 1);
    return 1.0;
  };
  hgk_pass(nodes, d, X, X, job, threads, cb);
}

}  // namespace kl
