#include "kernels/hgk_pass.hpp"

#include <algorithm>
#include <new>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/lines.hpp"
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
// its parameter index (the kernel numbers parameters node by node, member by member). Every
// thread reads them at every step: they sit in lines of their own (base/lines.hpp), as does
// everything else the threads share or write in the pass.
struct Program {
  int nn = 0;
  LineVec<char> leaf;
  LineVec<int> start;   // nn + 1
  LineVec<int> member;  // leaf: slot of the packed column; inner: child node
  LineVec<int> column;  // leaf members: the input column (-1 for inner members)
  LineVec<double> coef; // s_v w_m^2
  LineVec<double> pfac; // -2 s_v w_m: dK/dw_m = pfac * sum of G_v t_m
  LineVec<float> coef_f; // coef in single precision
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
  P.coef_f.assign(P.coef.begin(), P.coef.end());
  return P;
}

// Everything a block of rows reads; outputs per block are written to distinct places.
struct Context {
  const Program* P;
  const HgkPassJob* job;
  CMatRef X;
  Eigen::Index nx, nzp;      // nzp: the columns rounded up to whole steps (padding is zero)
  // the leaves' columns of Z (nzp x nslots) and the column weights V (nzp x L), column-major
  // with leading dimension ldd in double precision (Zp: double passes only) and ldf in single
  // (single passes only)
  Eigen::Index ldd, ldf;
  const double* Zp;
  const double* Vp;
  const float* Zpf;
  const float* Vpf;
  Eigen::Index L;
  bool grad;
  Mat* gblocks;              // nparams x blocks: each block's sums (before pfac)
};

// The leaves' columns of Z and the column weights, zero padded to whole steps, in the pass's
// precision (and V in double for the row sums). Each thread of the pass builds its own: read
// from memory another thread created, they made the pass 1.3x to 1.5x slower with 2 threads on
// some processors and memory layouts, though no thread writes them. Their columns lie an odd
// number of cache lines apart: a step reads the same rows of every column, and columns a
// multiple of 4 KiB apart would fall into the same few sets of the first cache level and evict
// each other (measured up to 1.3x slower on one thread, depending on where the buffers lay, at
// 2,500 points and 16 columns).
struct Padded {
  LineVec<double> Zp, Vp;
  LineVec<float> Zpf, Vpf;
  void build(const Program& P, CMatRef Z, const Mat* V, Eigen::Index ldd, Eigen::Index ldf,
             bool single, Context& c) {
    const Eigen::Index nz = Z.rows(), L = V ? V->cols() : 0;
    const Eigen::Index nslots = std::max(1, P.nslots), Lp = std::max<Eigen::Index>(L, 1);
    Vp.assign(static_cast<std::size_t>(ldd * Lp), 0.0);
    for (Eigen::Index l = 0; l < L; ++l) Eigen::Map<Vec>(Vp.data() + l * ldd, nz) = V->col(l);
    if (single) {
      Zpf.assign(static_cast<std::size_t>(ldf * nslots), 0.0f);
      Vpf.assign(static_cast<std::size_t>(ldf * Lp), 0.0f);
      for (std::size_t m = 0; m < P.member.size(); ++m)
        if (P.column[m] >= 0)
          Eigen::Map<Eigen::VectorXf>(Zpf.data() + P.member[m] * ldf, nz) =
              Z.col(P.column[m]).cast<float>();
      for (Eigen::Index l = 0; l < L; ++l)
        Eigen::Map<Eigen::VectorXf>(Vpf.data() + l * ldf, nz) = V->col(l).cast<float>();
    } else {
      Zp.assign(static_cast<std::size_t>(ldd * nslots), 0.0);
      for (std::size_t m = 0; m < P.member.size(); ++m)
        if (P.column[m] >= 0)
          Eigen::Map<Vec>(Zp.data() + P.member[m] * ldd, nz) = Z.col(P.column[m]);
    }
    c.Zp = single ? nullptr : Zp.data();
    c.Vp = Vp.data();
    c.Zpf = single ? Zpf.data() : nullptr;
    c.Vpf = single ? Vpf.data() : nullptr;
  }
};

#ifdef KL_HGK_SIMD
using namespace vexp_detail;

// Columns go U vectors at a time (more independent work between the dependent steps of each
// node's exponential, and the per-node bookkeeping paid once for U W pairs): 8 measured 1.3x
// faster than 2 and 1.05x to 1.1x faster than 4 (AVX2; registers spill, but the exponentials'
// latency hides better).
constexpr int kUnroll = 8;

// The element type's view of the context and its exponential pair: V of W doubles (VD = V) or
// W floats (VD: W / 2 doubles, the processor's own double vector; the row sums and the
// derivative sums are kept in two of them per float vector).
template <class E>
struct Prec;
template <>
struct Prec<double> {
  static const double* Z(const Context& c) { return c.Zp; }
  static const double* V(const Context& c) { return c.Vp; }
  static Eigen::Index ld(const Context& c) { return c.ldd; }
  static const double* coef(const Program& P) { return P.coef.data(); }
  template <class V>
  static KL_INLINE void load_table(V& tab0, V& tab1) {
    constexpr int W = static_cast<int>(sizeof(V) / sizeof(double));
    std::memcpy(&tab0, exp_table(2 * W), sizeof tab0);
    std::memcpy(&tab1, exp_table(2 * W) + W, sizeof tab1);
  }
  template <class V, class VI, int W>
  static KL_INLINE void exp_pair(const V& s, V& k, V& o, const V& t0, const V& t1) {
    exp_pair_table<V, VI, W>(s, k, o, t0, t1);
  }
};
template <>
struct Prec<float> {
  static const float* Z(const Context& c) { return c.Zpf; }
  static const float* V(const Context& c) { return c.Vpf; }
  static Eigen::Index ld(const Context& c) { return c.ldf; }
  static const float* coef(const Program& P) { return P.coef_f.data(); }
  template <class V>
  static KL_INLINE void load_table(V& tab0, V& tab1) {
    load_table_f(tab0, tab1);
  }
  template <class V, class VI, int W>
  static KL_INLINE void exp_pair(const V& s, V& k, V& o, const V& t0, const V& t1) {
    exp_pair_table_f<V, VI, W>(s, k, o, t0, t1);
  }
};

// The number of VD vectors that hold the lanes of one V: 1 in double precision, 2 in single
// (a float vector's halves widened to double, each a native double vector: a double vector as
// wide as the float one would be two registers that GCC handles piecewise and slowly).
template <class V, class VD>
constexpr int kHalves = std::is_same_v<V, VD> ? 1 : 2;

// out = half h of v (lanes h W / 2 .. (h + 1) W / 2 - 1), widened to double; v itself in
// double (references, not vector values, cross the call: no ABI question outside the
// target-specific callers)
template <int h, class VD, class V>
KL_INLINE void widen(VD& out, const V& v) {
  if constexpr (std::is_same_v<V, VD>) {
    out = v;
  } else if constexpr (sizeof(V) / sizeof(v[0]) == 8) {
    out = __builtin_convertvector(
        __builtin_shufflevector(v, v, 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3), VD);
  } else {
    static_assert(sizeof(V) / sizeof(v[0]) == 16, "float vectors of 8 or 16 lanes");
    out = __builtin_convertvector(
        __builtin_shufflevector(v, v, 8 * h, 8 * h + 1, 8 * h + 2, 8 * h + 3, 8 * h + 4,
                                8 * h + 5, 8 * h + 6, 8 * h + 7),
        VD);
  }
}

// out[h] += v's half h
template <class VD, class V>
KL_INLINE void add_wide(VD* out, const V& v) {
  VD w;
  widen<0>(w, v);
  out[0] += w;
  if constexpr (kHalves<V, VD> == 2) {
    widen<1>(w, v);
    out[1] += w;
  }
}

// The sum of the lanes of out[0 .. H - 1], in lane order.
template <int H, class VD>
KL_INLINE double lane_sum(const VD* out) {
  double s = 0.0;
  for (int h = 0; h < H; ++h)
    for (std::size_t u = 0; u < sizeof(VD) / sizeof(double); ++u) s += out[h][u];
  return s;
}

template <class V, class VI, class VD, int W, bool Grad>
KL_INLINE void run_block_impl(const Context& shared, int block) {
  using E = std::remove_cv_t<std::remove_reference_t<decltype(V{}[0])>>;
  using IE = std::remove_cv_t<std::remove_reference_t<decltype(VI{}[0])>>;
  using PR = Prec<E>;
  constexpr int U = kUnroll;
  // the context, the program's pointers and the job's flags copied to this thread's own stack:
  // the inner loops read nothing from lines that another thread writes (base/lines.hpp)
  const Context c = shared;
  const Program& P = *c.P;
  const HgkPassJob& job = *c.job;
  const char* const leaf = P.leaf.data();
  const int* const start = P.start.data();
  const int* const member = P.member.data();
  const bool triangle = job.triangle, want_row = job.want_row;
  const Eigen::Index nzp = c.nzp, ld = PR::ld(c), ldd = c.ldd;
  const int nn = P.nn, root = nn - 1;
  const Eigen::Index npar = static_cast<Eigen::Index>(P.coef.size());
  const Eigen::Index L = c.L;
  const Eigen::Index a0 = hgk_pass_block_start(c.nx, block);
  const Eigen::Index a1 = std::min(c.nx, a0 + block_rows(c.nx));
  const E* Zp = PR::Z(c);
  const E* Vp = PR::V(c);
  const E* coef = PR::coef(P);
  // node values (U vectors per node), adjoints, the leaves' squared differences (U vectors per
  // member) and the row's derivative sums, in the pass's precision; in double the row sums and,
  // in single precision, the derivative sums, into which those of the pass's precision are
  // added every kFlush steps (so that no float lane sums more than kFlush U = 128 terms); each in
  // lines of its own, aligned for the vectors
  constexpr bool wide = !std::is_same_v<V, VD>;
  constexpr int H = kHalves<V, VD>, WH = W / H;  // halves per vector, lanes per half
  constexpr int kFlush = 128 / U;
  const std::size_t nmem = P.member.size();
  const std::size_t nvec = static_cast<std::size_t>(3 * U * nn) + U * nmem + npar;
  const std::size_t nacc = static_cast<std::size_t>(H) * (L + (wide ? npar : 0));
  static_assert(alignof(V) <= kCacheLine && alignof(VD) <= kCacheLine, "vectors fit a line");
  LineVec<V> store(nvec, V{});
  LineVec<VD> dstore(nacc, VD{});
  V* kv = store.data();
  V* om = kv + U * nn;
  V* gb = om + U * nn;
  V* dsq = gb + U * nn;
  V* acc = dsq + U * nmem;
  VD* kvs = dstore.data();
  VD* accd = kvs + H * L;  // wide only
  LineVec<E> xm(P.member.size());
  LineVec<double> krow(want_row ? nzp : 0), sums(L);
  // the row sums K V only for those who read them (not the derivatives' triangle pass)
  const bool sums_needed = job.KV || job.row_end;
  LineVec<E> ua(L);
  LineVec<double> gsum(npar, 0.0);
  VI lane;
  for (int u = 0; u < W; ++u) lane[u] = u;
  const V zero = V{};
  const VD dzero = VD{};
  V tab0, tab1;
  PR::load_table(tab0, tab1);
  for (Eigen::Index a = a0; a < a1; ++a) {
    for (std::size_t m = 0; m < P.member.size(); ++m)
      xm[m] = P.column[m] >= 0 ? static_cast<E>(c.X(a, P.column[m])) : E(0);
    for (Eigen::Index l = 0; l < L; ++l) {
      for (int h = 0; h < H; ++h) kvs[H * l + h] = dzero;
      ua[l] = job.U ? static_cast<E>((*job.U)(a, l)) : E(1);
    }
    if (Grad)
      for (Eigen::Index t = 0; t < npar; ++t) {
        acc[t] = zero;
        if constexpr (wide) accd[H * t] = accd[H * t + 1] = dzero;
      }
    [[maybe_unused]] int steps = 0;
    const Eigen::Index bstart = triangle ? (a + 1) / (U * W) * (U * W) : 0;
    for (Eigen::Index b0 = bstart; b0 < nzp; b0 += U * W) {
      // forward: every node's K and 1 - K
      for (int v = 0; v < nn; ++v) {
        V s[U];
        #pragma GCC unroll 8
        for (int u = 0; u < U; ++u) s[u] = zero;
        if (leaf[v]) {
          for (int m = start[v]; m < start[v + 1]; ++m) {
            const E* zc = Zp + member[m] * ld + b0;
            const E cm = coef[m], xa = xm[m];
            #pragma GCC unroll 8
            for (int u = 0; u < U; ++u) {
              V z;
              std::memcpy(&z, zc + u * W, sizeof z);
              const V dd = z - xa;
              const V sq = dd * dd;
              s[u] += cm * sq;
              if (Grad) dsq[m * U + u] = sq;
            }
          }
        } else {
          for (int m = start[v]; m < start[v + 1]; ++m) {
            const V* oc = om + member[m] * U;
            const E cm = coef[m];
            #pragma GCC unroll 8
            for (int u = 0; u < U; ++u) s[u] += cm * oc[u];
          }
        }
        #pragma GCC unroll 8
        for (int u = 0; u < U; ++u)
          PR::template exp_pair<V, VI, W>(s[u], kv[v * U + u], om[v * U + u], tab0, tab1);
      }
      V adj[U];
      #pragma GCC unroll 8
      for (int u = 0; u < U; ++u) {
        const V k = kv[root * U + u];
        if (sums_needed || want_row) {
          // the root's values in double: the row sums and the kernel row
          VD kd[H];
          widen<0>(kd[0], k);
          if constexpr (H == 2) widen<1>(kd[1], k);
          if (sums_needed)
            for (Eigen::Index l = 0; l < L; ++l) {
              const double* vl = c.Vp + l * ldd + b0 + u * W;
              #pragma GCC unroll 2
              for (int h = 0; h < H; ++h) {
                VD wd;
                std::memcpy(&wd, vl + h * WH, sizeof wd);
                kvs[H * l + h] += kd[h] * wd;
              }
            }
          if (want_row)
            for (int h = 0; h < H; ++h)
              std::memcpy(krow.data() + b0 + u * W + h * WH, &kd[h], sizeof(VD));
        }
        if (!Grad) continue;
        adj[u] = zero;
        for (Eigen::Index l = 0; l < L; ++l) {
          V w;
          std::memcpy(&w, Vp + l * ld + b0 + u * W, sizeof w);
          adj[u] += ua[l] * w;
        }
        if (triangle && b0 + u * W <= a) {
          const VI idx = lane + static_cast<IE>(b0 + u * W);
          adj[u] = idx > static_cast<IE>(a) ? adj[u] : zero;
        }
        gb[root * U + u] = adj[u] * k;
      }
      if (!Grad) continue;
      // backward from the root
      for (int v = root; v >= 0; --v) {
        const V* g = gb + v * U;
        if (leaf[v]) {
          for (int m = start[v]; m < start[v + 1]; ++m) {
            V t = zero;
            #pragma GCC unroll 8
            for (int u = 0; u < U; ++u) t += g[u] * dsq[m * U + u];
            acc[m] += t;
          }
        } else {
          for (int m = start[v]; m < start[v + 1]; ++m) {
            const int ch = member[m];
            const E cm = coef[m];
            V t = zero;
            #pragma GCC unroll 8
            for (int u = 0; u < U; ++u) {
              t += g[u] * om[ch * U + u];
              gb[ch * U + u] = (g[u] * cm) * kv[ch * U + u];
            }
            acc[m] += t;
          }
        }
      }
      if constexpr (wide) {
        if (++steps == kFlush) {
          steps = 0;
          for (Eigen::Index t = 0; t < npar; ++t) {
            add_wide(accd + H * t, acc[t]);
            acc[t] = zero;
          }
        }
      }
    }
    for (Eigen::Index l = 0; l < L; ++l) {
      const double s = lane_sum<H>(kvs + H * l);
      sums[l] = s;
      if (job.KV) (*job.KV)(a, l) = s;
    }
    const double f = job.row_end ? job.row_end(a, block, sums.data(),
                                               want_row ? krow.data() : nullptr)
                                 : 1.0;
    if (Grad)
      for (Eigen::Index t = 0; t < npar; ++t) {
        double s;
        if constexpr (wide) {
          add_wide(accd + H * t, acc[t]);
          s = lane_sum<H>(accd + H * t);
        } else {
          s = lane_sum<1>(acc + t);
        }
        gsum[t] += f * s;
      }
  }
  if (Grad) c.gblocks->col(block) = Eigen::Map<const Vec>(gsum.data(), npar);
}

// with and without the derivative sums (the forward pass keeps no squared differences for a
// value-only pass)
template <class V, class VI, class VD, int W>
KL_INLINE void run_block(const Context& c, int block) {
  if (c.grad) run_block_impl<V, VI, VD, W, true>(c, block);
  else run_block_impl<V, VI, VD, W, false>(c, block);
}

__attribute__((target("avx2,fma"))) void run_block_avx2(const Context& c, int block) {
  run_block<v4d, v4l, v4d, 4>(c, block);
}
__attribute__((target("avx512f,avx2,fma"))) void run_block_avx512(const Context& c, int block) {
  run_block<v8d, v8l, v8d, 8>(c, block);
}
__attribute__((target("avx2,fma"))) void run_block_avx2_f(const Context& c, int block) {
  run_block<v8f, v8i, v4d, 8>(c, block);
}
__attribute__((target("avx512f,avx2,fma"))) void run_block_avx512_f(const Context& c, int block) {
  run_block<v16f, v16i, v8d, 16>(c, block);
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
  const bool single = job.single;
  // lanes of a vector: W doubles, or 2 W floats in single precision
  const int W = (level == SimdLevel::avx512 ? 8 : 4) * (single ? 2 : 1);
  const Program P = compile(nodes);
  for (int v = 0; v + 1 < P.nn; ++v)
    if (P.leaf[v] == 0 && P.start[v] == P.start[v + 1]) throw Error("empty node");
  const Eigen::Index nx = X.rows(), nz = Z.rows();
  const Eigen::Index step = static_cast<Eigen::Index>(W) * kUnroll;
  const Eigen::Index nzp = (nz + step - 1) / step * step;
  const Eigen::Index ldd = nzp + static_cast<Eigen::Index>(kCacheLine / sizeof(double)),
                     ldf = nzp + static_cast<Eigen::Index>(kCacheLine / sizeof(float));
  const int nb = hgk_pass_blocks(nx);
  Mat gblocks;
  if (job.grad) gblocks.setZero(static_cast<Eigen::Index>(P.coef.size()), nb);
  Context c{&P, &job, X, nx, nzp, ldd, ldf, nullptr, nullptr, nullptr, nullptr, L,
            job.grad != nullptr, &gblocks};
  threads = clamp_threads(threads);
  const int sweep = std::max(1, 8 * threads);
  for (int s0 = 0; s0 < nb; s0 += sweep) {
    cb.check();
    const int s1 = std::min(nb, s0 + sweep);
    const int nt = s1 - s0 > 1 ? threads : 1;
    (void)nt;
    bool failed = false;
    std::string what;
    const auto fail = [&](const char* msg) {
#ifdef _OPENMP
#pragma omp critical(kl_hgk_pass)
#endif
      {
        failed = true;
        what = msg;
      }
    };
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
      // each thread reads its own copy of Z's columns and of V, made by itself
      Padded mine;
      Context cc = c;
      bool ready = false;
      try {
        mine.build(P, Z, job.V, ldd, ldf, single, cc);
        ready = true;
      } catch (const std::exception& e) {
        fail(e.what());
      }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
      for (int b = s0; b < s1; ++b) {
        if (!ready) continue;
        try {
          if (level == SimdLevel::avx512) {
            if (single) run_block_avx512_f(cc, b);
            else run_block_avx512(cc, b);
          } else {
            if (single) run_block_avx2_f(cc, b);
            else run_block_avx2(cc, b);
          }
        } catch (const std::exception& e) {
          fail(e.what());
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

namespace {
// the lower triangle into a double or single-precision K (single-precision values are stored
// exactly in either)
template <class M>
void pass_lower_into(const std::vector<HgkNode>& nodes, int d, CMatRef X, M& K, int threads,
                     const Callbacks& cb, bool single) {
  using S = typename M::Scalar;
  const Eigen::Index nx = X.rows();
  if (K.rows() != nx || K.cols() != nx) throw Error("K has the wrong shape");
  HgkPassJob job;
  job.want_row = true;
  job.triangle = true;
  job.single = single;
  job.row_end = [&](Eigen::Index a, int, const double*, const double* krow) {
    // in groups of four, which the compiler turns into vector conversions (Eigen's cast into a
    // column of a Ref, and a plain loop at -O2, go one element at a time)
    S* __restrict col = &K(0, a);
    const double* __restrict kr = krow;
    col[a] = S(1);
    Eigen::Index b = a + 1;
    for (; b + 4 <= nx; b += 4) {
      col[b] = static_cast<S>(kr[b]);
      col[b + 1] = static_cast<S>(kr[b + 1]);
      col[b + 2] = static_cast<S>(kr[b + 2]);
      col[b + 3] = static_cast<S>(kr[b + 3]);
    }
    for (; b < nx; ++b) col[b] = static_cast<S>(kr[b]);
    return 1.0;
  };
  hgk_pass(nodes, d, X, X, job, threads, cb);
}
}  // namespace

void hgk_pass_lower(const std::vector<HgkNode>& nodes, int d, CMatRef X, MatRef K, int threads,
                    const Callbacks& cb, bool single) {
  pass_lower_into(nodes, d, X, K, threads, cb, single);
}

void hgk_pass_lower(const std::vector<HgkNode>& nodes, int d, CMatRef X,
                    Eigen::Ref<Eigen::MatrixXf> K, int threads, const Callbacks& cb) {
  pass_lower_into(nodes, d, X, K, threads, cb, true);
}

void hgk_pass_block(const std::vector<HgkNode>& nodes, int d, CMatRef X, CMatRef Z, MatRef K,
                    int threads, const Callbacks& cb, bool single) {
  const Eigen::Index nx = X.rows();
  if (K.rows() != nx || K.cols() != Z.rows()) throw Error("K has the wrong shape");
  HgkPassJob job;
  job.want_row = true;
  job.single = single;
  job.row_end = [&](Eigen::Index b, int, const double*, const double* krow) {
    K.col(b) = Eigen::Map<const Vec>(krow, nx);
    return 1.0;
  };
  hgk_pass(nodes, d, Z, X, job, threads, cb);
}

}  // namespace kl
