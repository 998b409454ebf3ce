#include "kernels/hierarchical.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/hgk_pass.hpp"
#include "linalg/vexp.hpp"
#include "kernels/standard.hpp"
#include "linalg/simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The matrices of one tile (every node's values, their complements, adjoints and products, for
// a chunk of rows by up to kTileCols columns), kept by each thread from one tile, and one call,
// to the next: allocated anew per tile they were given back to the system and faulted in again
// each time (see base/scratch.hpp); blocks and derivative contractions of a tree with 22-column
// leaves ran 1.7x to 4x slower with 2 threads. A thread keeps up to four 32 x 512 matrices of
// doubles (128 KB) per node of the largest tree it has computed.
struct TileWork {
  std::vector<Mat> Kv, Om, adj, Tm;
  Mat S;
};
TileWork& tile_work() {
  thread_local TileWork w;
  return w;
}

class HgkKernel;

// Rows of a tree of depth >= 2 over a set of points: per leaf a row-major copy of its scaled
// columns and their squared norms.
class HgkRows final : public KernelRows {
 public:
  HgkRows(std::shared_ptr<const HgkKernel> k, CMatRef X);
  int size() const override { return n_; }
  double diag(int) const override { return 1.0; }
  double value(int i, int j) const override;
  void row(int p, float* out, int threads) const override;
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const override;
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override;

 private:
  std::shared_ptr<const HgkKernel> k_;
  Mat X_;  // the points as given
  std::vector<RowMat> leaf_;
  std::vector<Vec> norms_;
  int n_ = 0;
};

class HgkKernel final : public Kernel {
 public:
  HgkKernel(std::vector<HgkNode> nodes, int d) : nodes_(std::move(nodes)), d_(d) {
    validate_tree();
    int off = 0;
    for (const auto& v : nodes_) {
      offset_.push_back(off);
      off += static_cast<int>(v.weights.size());
    }
    nparams_ = off;
    parent_.assign(nodes_.size(), -1);
    for (std::size_t v = 0; v < nodes_.size(); ++v)
      if (!nodes_[v].leaf)
        for (int c : nodes_[v].members) parent_[c] = static_cast<int>(v);
    const HgkNode& root = nodes_.back();
    depth1_ = nodes_.size() == 1;
    if (depth1_) gauss_ = make_standard_kernel(gaussian_spec(root.scale));
    pass_ = !depth1_ && hgk_pass_available(nodes_);
  }

  std::string name() const override {
    if (depth1_) return "hierarchical gaussian (depth 1)";
    return "hierarchical gaussian (" + std::to_string(nodes_.size()) + " nodes)";
  }
  int input_dim() const override { return d_; }
  int num_params() const override { return nparams_; }
  const std::vector<HgkNode>& nodes() const { return nodes_; }
  const std::vector<HgkNode>* hierarchical() const override { return &nodes_; }

  void block(CMatRef X, CMatRef Z, MatRef K, int threads, const Callbacks& cb) const override {
    check_dim(X.cols(), "x");
    check_dim(Z.cols(), "y");
    if (K.rows() != X.rows() || K.cols() != Z.rows()) throw Error("K has the wrong shape");
    if (depth1_) {
      gauss_->block(scaled_root(X), scaled_root(Z), K, threads, cb);
      return;
    }
    const bool sym = same_points(X, Z);
    if (pass_) {
      // One fused sweep. K(X, X): the lower triangle, then the mirror image; K(X, Z): the rows
      // of K(Z, X), i.e. the columns of K (the kernel is symmetric in its arguments), so every
      // write is contiguous.
      if (sym) {
        hgk_pass_lower(nodes_, d_, X, K, threads, cb);
        mirror_lower(K.data(), K.outerStride(), K.rows(), threads);
        return;
      }
      hgk_pass_block(nodes_, d_, X, Z, K, threads, cb);
      return;
    }
    // K(X, X): the tiles that reach the upper triangle, then the mirror image.
    Leaves LX = leaves(X, true);
    Leaves LZ = sym ? Leaves() : leaves(Z, true);
    const Leaves& RZ = sym ? LX : LZ;
    for_each_tile(X.rows(), Z.rows(), threads, cb,
                  [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
                    TileWork& w = tile_work();
                    std::vector<Mat>& Kv = w.Kv;
                    std::vector<Mat>& Om = w.Om;
                    for (Eigen::Index rr = 0; rr < nr; rr += kChunk) {
                      const Eigen::Index m = std::min(kChunk, nr - rr);
                      if (sym && c0 + nc <= r0 + rr) break;
                      forward(LX, RZ, r0 + rr, m, c0, nc, Kv, Om);
                      K.block(r0 + rr, c0, m, nc) = Kv.back();
                    }
                  });
    if (sym) K.triangularView<Eigen::StrictlyLower>() = K.transpose();
  }

  double value(const double* x, std::ptrdiff_t incx, const double* z, std::ptrdiff_t incz,
               int d) const override {
    if (d != d_) throw Error("point dimension differs from the kernel's");
    const std::size_t nn = nodes_.size();
    std::vector<double> om(nn), kv(nn);
    for (std::size_t v = 0; v < nn; ++v) {
      const HgkNode& nd = nodes_[v];
      double s = 0.0;
      for (std::size_t i = 0; i < nd.members.size(); ++i) {
        const double w2 = nd.weights[i] * nd.weights[i];
        if (nd.leaf) {
          const int c = nd.members[i];
          const double t = x[c * incx] - z[c * incz];
          s += w2 * t * t;
        } else {
          s += w2 * om[nd.members[i]];
        }
      }
      s *= nd.scale;
      kv[v] = std::exp(-s);
      om[v] = -std::expm1(-s);
    }
    return kv.back();
  }

  std::unique_ptr<KernelRows> rows(CMatRef X) const override {
    check_dim(X.cols(), "the training data");
    if (depth1_) return gauss_->rows(scaled_root(X));
    return std::unique_ptr<KernelRows>(
        new HgkRows(std::static_pointer_cast<const HgkKernel>(share(*this)), X));
  }

  void contract_derivatives(CMatRef X, CMatRef Z, CMatRef E, VecRef g, int threads,
                            const Callbacks& cb) const override {
    check_dim(X.cols(), "x");
    check_dim(Z.cols(), "y");
    if (E.rows() != X.rows() || E.cols() != Z.rows())
      throw Error("the weight matrix must have the shape of the kernel block");
    if (g.size() != nparams_) throw Error("gradient has the wrong length");
    // For K(X, X), <E, dK> = sum over i <= j of (E_ij + E_ji) dK_ij (E_ii once): the tiles
    // that reach the upper triangle only.
    const bool sym = same_points(X, Z);
    Leaves LX = leaves(X, true), RX = leaves(X, false);
    Leaves LZ = sym ? Leaves() : leaves(Z, true), RZ = sym ? Leaves() : leaves(Z, false);
    const Leaves& LZr = sym ? LX : LZ;
    const Leaves& RZr = sym ? RX : RZ;
    const Eigen::Index ncb = (Z.rows() + kTileCols - 1) / kTileCols;
    const Eigen::Index nrb = (X.rows() + kTileRows - 1) / kTileRows;
    std::vector<Vec> per_tile(static_cast<std::size_t>(nrb * ncb));
    const int root = static_cast<int>(nodes_.size()) - 1;
    for_each_tile(X.rows(), Z.rows(), threads, cb,
                  [&](Eigen::Index t0, Eigen::Index tn, Eigen::Index c0, Eigen::Index nc) {
      if (sym && c0 + nc <= t0) return;
      TileWork& w = tile_work();
      std::vector<Mat>& Kv = w.Kv;
      std::vector<Mat>& Om = w.Om;
      std::vector<Mat>& adj = w.adj;
      std::vector<Mat>& Tm = w.Tm;
      adj.resize(nodes_.size());
      Tm.resize(nodes_.size());
      std::vector<double> fac(nodes_.size(), 1.0);
      Vec gt = Vec::Zero(nparams_), q;
      // Row chunks of the tile, so that every node's values of a chunk stay in cache.
      for (Eigen::Index r0 = t0; r0 < t0 + tn; r0 += kChunk) {
        const Eigen::Index nr = std::min(kChunk, t0 + tn - r0);
        if (sym && c0 + nc <= r0) break;
        forward(LX, LZr, r0, nr, c0, nc, Kv, Om);
        adj[root] = E.block(r0, c0, nr, nc);
        if (sym) {
          Mat& A = adj[root];
          A += E.block(c0, r0, nc, nr).transpose();
          for (Eigen::Index j = 0; j < nc; ++j)
            for (Eigen::Index i = 0; i < nr; ++i) {
              const Eigen::Index gi = r0 + i, gj = c0 + j;
              if (gj < gi) A(i, j) = 0.0;
              else if (gj == gi) A(i, j) = E(gi, gi);
            }
        }
        // Backwards from the root: node v's adjoint is fac[v] times its parent's T (the
        // parent's adjoint times its K), so no adjoint is stored.
        for (int v = root; v >= 0; --v) {
          const HgkNode& nd = nodes_[v];
          const Mat& Tp = v == root ? adj[root] : Tm[parent_[v]];
          const double f = v == root ? 1.0 : fac[v];
          const int off = offset_[v];
          const Eigen::Index p = static_cast<Eigen::Index>(nd.members.size());
          if (nd.leaf && p <= kDirect) {
            q.setZero(p);
            hgk_leaf_backward(Tp.data(), Kv[v].data(), f, nr, nc, RX.X[v].data() + r0,
                              RX.X[v].rows(), RZr.X[v].data() + c0, RZr.X[v].rows(), p,
                              q.data());
            for (Eigen::Index i = 0; i < p; ++i)
              gt[off + i] += -2.0 * nd.scale * nd.weights[i] * q[i];
            continue;
          }
          Tm[v].noalias() = f * Tp.cwiseProduct(Kv[v]);
          const Mat& T = Tm[v];
          if (!nd.leaf) {
            for (std::size_t i = 0; i < nd.members.size(); ++i) {
              const int c = nd.members[i];
              const double w = nd.weights[i];
              gt[off + i] += -2.0 * nd.scale * w * T.cwiseProduct(Om[c]).sum();
              fac[c] = nd.scale * w * w;
            }
          } else {
            auto Xr = RX.X[v].middleRows(r0, nr);
            auto Zr = RZr.X[v].middleRows(c0, nc);
            const Mat TZ = T * Zr;  // nr x p
            const Vec rs = T.rowwise().sum();
            const Vec cs = T.colwise().sum().transpose();
            for (Eigen::Index i = 0; i < p; ++i) {
              const double qi = rs.dot(Xr.col(i).cwiseAbs2()) + cs.dot(Zr.col(i).cwiseAbs2()) -
                                2.0 * Xr.col(i).dot(TZ.col(i));
              gt[off + i] += -2.0 * nd.scale * nd.weights[i] * qi;
            }
          }
        }
      }
      per_tile[(t0 / kTileRows) * ncb + c0 / kTileCols] = std::move(gt);
    });
    g.setZero();
    for (const Vec& t : per_tile)
      if (t.size() == nparams_) g += t;
  }

 private:
  friend class HgkRows;
  struct Leaves {
    std::vector<Mat> X;      // per node: the leaf's columns (scaled by its weights or raw)
    std::vector<Vec> norms;  // squared row norms of the scaled columns
  };

  void validate_tree() const {
    const int nn = static_cast<int>(nodes_.size());
    if (nn == 0) throw Error("a hierarchical Gaussian kernel needs at least one node");
    if (d_ < 1) throw Error("a hierarchical Gaussian kernel needs at least one input column");
    std::vector<int> parent(nn, -1);
    for (int v = 0; v < nn; ++v) {
      const HgkNode& nd = nodes_[v];
      if (nd.members.empty()) throw Error("node " + std::to_string(v + 1) + " is empty");
      if (nd.members.size() != nd.weights.size())
        throw Error("node " + std::to_string(v + 1) + " needs one weight per member");
      if (!(nd.scale > 0) || !std::isfinite(nd.scale))
        throw Error("node widths must be positive and finite");
      for (double w : nd.weights)
        if (!std::isfinite(w)) throw Error("weights must be finite");
      for (int m : nd.members) {
        if (nd.leaf) {
          if (m < 0 || m >= d_)
            throw Error("node " + std::to_string(v + 1) + " names column " +
                        std::to_string(m + 1) + " of " + std::to_string(d_));
        } else {
          if (m < 0 || m >= v)
            throw Error("node " + std::to_string(v + 1) + " has a child that does not come "
                        "before it");
          if (parent[m] >= 0)
            throw Error("node " + std::to_string(m + 1) + " has two parents");
          parent[m] = v;
        }
      }
    }
    for (int v = 0; v + 1 < nn; ++v)
      if (parent[v] < 0)
        throw Error("node " + std::to_string(v + 1) + " is not connected to the root");
  }

  // Rows of a tile handled at once, so that every node's values of a chunk stay in cache.
  static constexpr Eigen::Index kChunk = 32;
  // Leaves of at most this many columns compute distances directly, wider ones by a product.
  static constexpr Eigen::Index kDirect = 16;

  // Whether two blocks of points are the same matrix (a symmetric kernel block).
  static bool same_points(CMatRef X, CMatRef Z) {
    return X.data() == Z.data() && X.rows() == Z.rows() && X.cols() == Z.cols() &&
           X.outerStride() == Z.outerStride();
  }

  // X with column i multiplied by the root leaf's weight i (depth 1).
  Mat scaled_root(CMatRef X) const {
    const HgkNode& r = nodes_.back();
    Mat S(X.rows(), d_);
    S.setZero();
    // A coordinate may be listed more than once; then its squared weights add up.
    Vec w2 = Vec::Zero(d_);
    for (std::size_t i = 0; i < r.members.size(); ++i) w2[r.members[i]] += r.weights[i] * r.weights[i];
    for (int c = 0; c < d_; ++c) {
      const double w = std::sqrt(w2[c]);
      S.col(c) = X.col(c) * w;
    }
    return S;
  }

  Leaves leaves(CMatRef X, bool scaled) const {
    Leaves L;
    L.X.resize(nodes_.size());
    L.norms.resize(nodes_.size());
    for (std::size_t v = 0; v < nodes_.size(); ++v) {
      const HgkNode& nd = nodes_[v];
      if (!nd.leaf) continue;
      Mat& S = L.X[v];
      S.resize(X.rows(), static_cast<Eigen::Index>(nd.members.size()));
      for (std::size_t i = 0; i < nd.members.size(); ++i)
        S.col(i) = scaled ? Vec(X.col(nd.members[i]) * nd.weights[i]) : Vec(X.col(nd.members[i]));
      if (scaled) L.norms[v] = S.rowwise().squaredNorm();
    }
    return L;
  }

  // K_v and 1 - K_v of every node on one tile.
  void forward(const Leaves& LX, const Leaves& LZ, Eigen::Index r0, Eigen::Index nr,
               Eigen::Index c0, Eigen::Index nc, std::vector<Mat>& Kv,
               std::vector<Mat>& Om) const {
    const std::size_t nn = nodes_.size();
    Kv.resize(nn);
    Om.resize(nn);
    Mat& S = tile_work().S;
    for (std::size_t v = 0; v < nn; ++v) {
      const HgkNode& nd = nodes_[v];
      if (nd.leaf && LX.X[v].cols() <= kDirect) {
        // narrow leaves: the squared distances directly (no cancellation)
        S.resize(nr, nc);
        hgk_leaf_distances(LX.X[v].data() + r0, LX.X[v].rows(), LZ.X[v].data() + c0,
                           LZ.X[v].rows(), nr, nc, LX.X[v].cols(), nd.scale, S.data());
      } else if (nd.leaf) {
        tile_product_nt(LX.X[v], r0, nr, LZ.X[v], c0, nc, S);
        const double* xn = LX.norms[v].data() + r0;
        const double* zn = LZ.norms[v].data() + c0;
        for (Eigen::Index j = 0; j < nc; ++j)
          for (Eigen::Index i = 0; i < nr; ++i)
            S(i, j) = nd.scale * std::max(xn[i] + zn[j] - 2.0 * S(i, j), 0.0);
      } else {
        S.setZero(nr, nc);
        for (std::size_t i = 0; i < nd.members.size(); ++i) {
          const double w2 = nd.weights[i] * nd.weights[i];
          S.noalias() += w2 * Om[nd.members[i]];
        }
        S *= nd.scale;
      }
      // K_v, and 1 - K_v for the parent and the gradient (not needed at the root)
      Kv[v].resize(nr, nc);
      const bool root = v + 1 == nn;
      if (!root) Om[v].resize(nr, nc);
      hgk_exp_pair(S.data(), Kv[v].data(), root ? nullptr : Om[v].data(), S.size());
    }
  }

  std::vector<HgkNode> nodes_;
  int d_;
  std::vector<int> offset_;
  std::vector<int> parent_;  // the parent of each node (-1 at the root)
  int nparams_ = 0;
  bool depth1_ = false;
  bool pass_ = false;  // blocks through the fused pass (kernels/hgk_pass.hpp)
  KernelPtr gauss_;
};

HgkRows::HgkRows(std::shared_ptr<const HgkKernel> k, CMatRef X)
    : k_(std::move(k)), X_(X), n_(static_cast<int>(X.rows())) {
  const auto& nodes = k_->nodes();
  leaf_.resize(nodes.size());
  norms_.resize(nodes.size());
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    if (!nodes[v].leaf) continue;
    RowMat S(n_, nodes[v].members.size());
    for (std::size_t i = 0; i < nodes[v].members.size(); ++i)
      S.col(i) = X_.col(nodes[v].members[i]) * nodes[v].weights[i];
    norms_[v] = S.rowwise().squaredNorm();
    leaf_[v] = std::move(S);
  }
}

double HgkRows::value(int i, int j) const {
  return k_->value(X_.data() + i, X_.rows(), X_.data() + j, X_.rows(),
                   static_cast<int>(X_.cols()));
}

void HgkRows::row(int p, float* out, int threads) const {
  const auto& nodes = k_->nodes();
  const int nn = static_cast<int>(nodes.size());
  constexpr int chunk = 256;
  const int nchunks = (n_ + chunk - 1) / chunk;
  const double work = static_cast<double>(n_) * (X_.cols() + 10 * nn);
  const int nt = (threads > 1 && work > 1.5e5) ? threads : 1;
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int c = 0; c < nchunks; ++c) {
    // The node values in double through the exp pair (exp(-s) and 1 - exp(-s), vectorised
    // where the processor allows), rounded to single precision at the end.
    const int lo = c * chunk, len = std::min(n_, lo + chunk) - lo;
    std::vector<double> om(static_cast<std::size_t>(nn) * chunk);
    double dots[chunk], acc[chunk], kv[chunk];
    for (int v = 0; v < nn; ++v) {
      const HgkNode& nd = nodes[v];
      if (nd.leaf) {
        const RowMat& L = leaf_[v];
        const Eigen::Index w = L.cols();
        Eigen::Map<const RowMat> Lc(L.data() + static_cast<std::size_t>(lo) * w, len, w);
        Eigen::Map<Vec>(dots, len).noalias() = Lc * L.row(p).transpose();
        const double np = norms_[v][p];
        const double* nq = norms_[v].data() + lo;
        for (int q = 0; q < len; ++q) {
          const double d2 = np + nq[q] - 2.0 * dots[q];
          acc[q] = nd.scale * (d2 > 0.0 ? d2 : 0.0);
        }
      } else {
        for (int q = 0; q < len; ++q) acc[q] = 0.0;
        for (std::size_t i = 0; i < nd.members.size(); ++i) {
          const double w2 = nd.weights[i] * nd.weights[i];
          const double* oc = om.data() + static_cast<std::size_t>(nd.members[i]) * chunk;
          for (int q = 0; q < len; ++q) acc[q] += w2 * oc[q];
        }
        for (int q = 0; q < len; ++q) acc[q] *= nd.scale;
      }
      if (v == nn - 1) {
        hgk_exp_pair(acc, kv, nullptr, len);
        for (int q = 0; q < len; ++q) out[lo + q] = static_cast<float>(kv[q]);
      } else {
        hgk_exp_pair(acc, kv, om.data() + static_cast<std::size_t>(v) * chunk, len);
      }
    }
  }
}

void HgkRows::block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
                    int threads) const {
  Mat A(rows.size(), X_.cols()), B(cols.size(), X_.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) A.row(i) = X_.row(rows[i]);
  for (std::size_t j = 0; j < cols.size(); ++j) B.row(j) = X_.row(cols[j]);
  k_->block(A, B, out, threads, Callbacks());
}

std::unique_ptr<KernelRows> HgkRows::subset(const std::vector<int>& rows) const {
  Mat S(rows.size(), X_.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) S.row(i) = X_.row(rows[i]);
  return std::unique_ptr<KernelRows>(new HgkRows(k_, S));
}

}  // namespace

KernelPtr make_hierarchical_gaussian_kernel(std::vector<HgkNode> nodes, int d) {
  return std::make_shared<HgkKernel>(std::move(nodes), d);
}

}  // namespace kl
