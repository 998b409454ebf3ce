// The partition of the input space into cells (partition.hpp).
#include "learners/partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "base/rng.hpp"

namespace kl {

namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::uint64_t node_seed(std::uint64_t seed, std::uint64_t node) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (node + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline double sqdist(const double* x, const double* c, Eigen::Index d) {
  double s = 0.0;
  for (Eigen::Index k = 0; k < d; ++k) {
    const double t = x[k] - c[k];
    s += t * t;
  }
  return s;
}

// Index of the nearest of the centres C (row-major rows) among `active` (all when empty),
// ties to the lowest index: the one routing rule of the partition.
inline int nearest(const double* x, const RowMat& C, const std::vector<char>* active) {
  const Eigen::Index d = C.cols();
  int best = -1;
  double bd = std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < C.rows(); ++j) {
    if (active && !(*active)[j]) continue;
    const double s = sqdist(x, C.data() + j * d, d);
    if (best < 0 || s < bd) {
      bd = s;
      best = static_cast<int>(j);
    }
  }
  return best;
}

struct Builder {
  const RowMat& X;
  const PartitionOptions& opt;
  const Callbacks& cb;
  int threads;
  int min_size;

  const double* row(int r) const { return X.data() + static_cast<Eigen::Index>(r) * X.cols(); }

  // The rows a node's centres are computed on: all of them, or a seeded sample (ascending).
  std::vector<int> sample_of(const std::vector<int>& rows, Rng& rng) const {
    const int m = static_cast<int>(rows.size());
    if (m <= opt.sample) return rows;
    std::vector<int> idx(rows);
    for (int i = 0; i < opt.sample; ++i) {
      const int j = i + static_cast<int>(rng.below(static_cast<std::uint64_t>(m - i)));
      std::swap(idx[i], idx[j]);
    }
    idx.resize(opt.sample);
    std::sort(idx.begin(), idx.end());
    return idx;
  }

  // assign[i] = nearest active centre of rows[i].
  void assign(const std::vector<int>& rows, const RowMat& C, const std::vector<char>* active,
              std::vector<int>& out) const {
    const Eigen::Index m = static_cast<Eigen::Index>(rows.size());
    out.resize(rows.size());
    const bool par = threads > 1 && m * C.rows() * C.cols() > 200000;
#pragma omp parallel for num_threads(threads) schedule(static) if (par)
    for (Eigen::Index i = 0; i < m; ++i) out[i] = nearest(row(rows[i]), C, active);
  }

  // k-means++ seeding and Lloyd iterations on the sample S: c centres (fewer when S has fewer
  // distinct rows).
  RowMat kmeans(const std::vector<int>& S, int c, Rng& rng) const {
    const Eigen::Index d = X.cols();
    const int s = static_cast<int>(S.size());
    RowMat C(c, d);
    std::vector<double> D(s, std::numeric_limits<double>::infinity());
    int got = 0;
    int first = static_cast<int>(rng.below(static_cast<std::uint64_t>(s)));
    C.row(0) = Eigen::Map<const Eigen::RowVectorXd>(row(S[first]), d);
    got = 1;
    while (got < c) {
      const double* cj = C.data() + (got - 1) * d;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && s * d > 200000)
      for (int i = 0; i < s; ++i) D[i] = std::min(D[i], sqdist(row(S[i]), cj, d));
      double total = 0.0;
      for (int i = 0; i < s; ++i) total += D[i];
      if (!(total > 0.0)) break;  // every sampled row coincides with a centre
      const double u = rng.uniform() * total;
      double acc = 0.0;
      int pick = s - 1;
      for (int i = 0; i < s; ++i) {
        acc += D[i];
        if (acc > u && D[i] > 0.0) {
          pick = i;
          break;
        }
      }
      if (!(D[pick] > 0.0)) {
        // rounding at the end of the cumulative sum: the last row with a positive distance
        for (int i = s - 1; i >= 0; --i)
          if (D[i] > 0.0) {
            pick = i;
            break;
          }
      }
      C.row(got++) = Eigen::Map<const Eigen::RowVectorXd>(row(S[pick]), d);
    }
    if (got < c) C.conservativeResize(got, d);
    c = got;
    std::vector<int> a(s, -1), prev;
    for (int it = 0; it < opt.iterations; ++it) {
      prev = a;
      assign(S, C, nullptr, a);
      if (a == prev) break;
      RowMat sum = RowMat::Zero(c, d);
      std::vector<int> cnt(c, 0);
      for (int i = 0; i < s; ++i) {
        sum.row(a[i]) += Eigen::Map<const Eigen::RowVectorXd>(row(S[i]), d);
        ++cnt[a[i]];
      }
      for (int j = 0; j < c; ++j)
        if (cnt[j] > 0) C.row(j) = sum.row(j) / cnt[j];
    }
    return C;
  }

  // Two mirror centres around the median of the projections on the principal direction of
  // the node's sample; false when the rows do not vary.
  bool median_split(const std::vector<int>& rows, Rng& rng, RowMat& C) const {
    const Eigen::Index d = X.cols();
    const std::vector<int> S = sample_of(rows, rng);
    const int s = static_cast<int>(S.size());
    Eigen::RowVectorXd mu = Eigen::RowVectorXd::Zero(d);
    for (int i = 0; i < s; ++i) mu += Eigen::Map<const Eigen::RowVectorXd>(row(S[i]), d);
    mu /= s;
    RowMat Z(s, d);
    for (int i = 0; i < s; ++i) Z.row(i) = Eigen::Map<const Eigen::RowVectorXd>(row(S[i]), d) - mu;
    Eigen::VectorXd v(d);
    for (Eigen::Index k = 0; k < d; ++k) v[k] = rng.normal();
    // start from the coordinate of largest variance mixed with a random direction
    const Eigen::VectorXd var = Z.colwise().squaredNorm().transpose();
    Eigen::Index kmax = 0;
    if (!(var.maxCoeff(&kmax) > 0.0)) return false;
    v *= 1e-3;
    v[kmax] += 1.0;
    v.normalize();
    for (int it = 0; it < 50; ++it) {
      Eigen::VectorXd w = Z.transpose() * (Z * v);
      const double nw = w.norm();
      if (!(nw > 0.0)) break;
      w /= nw;
      const double change = (w - v).norm();
      v = w;
      if (change < 1e-6) break;
    }
    const Eigen::VectorXd p = Z * v;
    std::vector<double> ps(p.data(), p.data() + s);
    std::sort(ps.begin(), ps.end());
    if (!(ps.back() > ps.front())) return false;
    double t = ps[(s - 1) / 2];
    if (!(t < ps.back())) {
      // ties at the top: the largest value below the maximum
      t = *(std::lower_bound(ps.begin(), ps.end(), ps.back()) - 1);
    }
    const double sd = std::sqrt(std::max(p.squaredNorm() / s, 1e-300));
    C.resize(2, d);
    C.row(0) = mu + (t - sd) * v.transpose();
    C.row(1) = mu + (t + sd) * v.transpose();
    return true;
  }
};

}  // namespace

Partition build_partition(CMatRef Xin, const PartitionOptions& opt, std::vector<int>* cell_of,
                          std::vector<std::vector<int>>* extra, const Callbacks& cb) {
  const Eigen::Index n = Xin.rows(), d = Xin.cols();
  if (n < 1 || d < 1) throw Error("the partition needs at least one row and one column");
  if (opt.cell_size < 2) throw Error("cell_size must be at least 2");
  if (opt.branching < 2) throw Error("branching must be at least 2");
  if (opt.sample < 2) throw Error("the sample size must be at least 2");
  if (!(opt.overlap >= 0.0) || !std::isfinite(opt.overlap))
    throw Error("overlap must be a finite number >= 0");
  if (!Xin.allFinite()) throw Error("the rows to partition have missing or infinite values");
  const int threads = clamp_threads(opt.threads);
  const RowMat X = Xin;
  Builder b{X, opt, cb, threads,
            opt.min_size > 0 ? opt.min_size : std::max(1, opt.cell_size / 8)};

  Partition P;
  std::vector<Eigen::RowVectorXd> centre{Eigen::RowVectorXd::Zero(d)};
  std::vector<std::vector<int>> rows_of;  // rows of each node (kept for leaves and overlap)
  std::vector<int> parent{-1};
  P.first_child.push_back(-1);
  P.n_children.push_back(0);
  P.cell.push_back(-1);
  rows_of.emplace_back(static_cast<std::size_t>(n));
  std::iota(rows_of[0].begin(), rows_of[0].end(), 0);

  for (int v = 0; v < static_cast<int>(rows_of.size()); ++v) {
    cb.check();
    if (static_cast<int>(rows_of[v].size()) <= opt.cell_size) continue;  // a leaf
    // (moved out: adding children below reallocates rows_of)
    std::vector<int> rows = std::move(rows_of[v]);
    const int m = static_cast<int>(rows.size());
    Rng rng(node_seed(opt.seed, static_cast<std::uint64_t>(v)));
    RowMat C;
    std::vector<int> a;
    std::vector<char> active;
    bool split = false;
    if (opt.method == PartitionMethod::Voronoi) {
      const int c = std::min(opt.branching,
                             std::max(2, (m + opt.cell_size - 1) / opt.cell_size));
      const std::vector<int> S = b.sample_of(rows, rng);
      C = b.kmeans(S, c, rng);
      if (C.rows() >= 2) {
        b.assign(rows, C, nullptr, a);
        active.assign(C.rows(), 1);
        std::vector<int> cnt(C.rows(), 0);
        for (int j : a) ++cnt[j];
        for (Eigen::Index j = 0; j < C.rows(); ++j)
          if (cnt[j] == 0) active[j] = 0;
        // merge children below min_size into their neighbours, smallest first
        for (;;) {
          int small = -1, live = 0;
          for (Eigen::Index j = 0; j < C.rows(); ++j) {
            if (!active[j]) continue;
            ++live;
            if (cnt[j] < b.min_size && (small < 0 || cnt[j] < cnt[small])) small = static_cast<int>(j);
          }
          if (small < 0 || live <= 1) break;
          active[small] = 0;
          for (int i = 0; i < m; ++i) {
            if (a[i] != small) continue;
            a[i] = nearest(b.row(rows[i]), C, &active);
            ++cnt[a[i]];
          }
          cnt[small] = 0;
        }
        int live = 0;
        for (char x : active) live += x;
        split = live >= 2;
      }
    }
    if (!split) {
      bool ok = b.median_split(rows, rng, C);
      if (ok) {
        b.assign(rows, C, nullptr, a);
        active.assign(2, 1);
        int left = 0;
        for (int j : a) left += j == 0;
        ok = left > 0 && left < m;  // rounding may leave one side empty
      }
      if (!ok) {  // coinciding rows: an oversized leaf
        rows_of[v] = std::move(rows);
        continue;
      }
    }
    // children in centre order
    std::vector<int> child_of(C.rows(), -1);
    P.first_child[v] = static_cast<int>(rows_of.size());
    for (Eigen::Index j = 0; j < C.rows(); ++j) {
      if (!active[j]) continue;
      child_of[j] = static_cast<int>(rows_of.size());
      centre.push_back(C.row(j));
      parent.push_back(v);
      P.first_child.push_back(-1);
      P.n_children.push_back(0);
      P.cell.push_back(-1);
      rows_of.emplace_back();
      ++P.n_children[v];
    }
    for (int i = 0; i < m; ++i) rows_of[child_of[a[i]]].push_back(rows[i]);
  }

  const int N = static_cast<int>(rows_of.size());
  P.centres.resize(N, d);
  for (int v = 0; v < N; ++v) P.centres.row(v) = centre[v];
  if (cell_of) cell_of->assign(static_cast<std::size_t>(n), -1);
  for (int v = 0; v < N; ++v) {
    if (P.n_children[v] > 0) continue;
    P.cell[v] = P.n_cells++;
    if (cell_of)
      for (int r : rows_of[v]) (*cell_of)[r] = P.cell[v];
  }

  if (extra) {
    extra->assign(P.n_cells, {});
    if (opt.overlap > 0.0) {
      // rows under each inner node, gathered from its leaves (children come after parents)
      std::vector<std::vector<int>> under(N);
      for (int v = N - 1; v >= 0; --v) {
        if (P.n_children[v] == 0) {
          under[v] = rows_of[v];
        } else {
          for (int c = P.first_child[v]; c < P.first_child[v] + P.n_children[v]; ++c)
            under[v].insert(under[v].end(), under[c].begin(), under[c].end());
          std::sort(under[v].begin(), under[v].end());
        }
      }
      for (int v = 1; v < N; ++v) {
        if (P.n_children[v] > 0) continue;
        cb.check();
        const std::vector<int>& own = rows_of[v];
        const std::vector<int>& pool = under[parent[v]];
        const int want = static_cast<int>(std::floor(opt.overlap * own.size()));
        if (want <= 0) continue;
        std::vector<std::pair<double, int>> cand;
        cand.reserve(pool.size() - own.size());
        const Eigen::RowVectorXd cen = P.centres.row(v);
        std::size_t o = 0;
        for (int r : pool) {
          while (o < own.size() && own[o] < r) ++o;
          if (o < own.size() && own[o] == r) continue;
          cand.emplace_back(sqdist(X.data() + static_cast<Eigen::Index>(r) * d, cen.data(), d), r);
        }
        const std::size_t k = std::min<std::size_t>(want, cand.size());
        std::nth_element(cand.begin(), cand.begin() + k, cand.end());
        std::vector<int>& ex = (*extra)[P.cell[v]];
        for (std::size_t t = 0; t < k; ++t) ex.push_back(cand[t].second);
        std::sort(ex.begin(), ex.end());
      }
    }
  }
  return P;
}

std::vector<int> Partition::route(CMatRef X, int threads) const {
  const Eigen::Index m = X.rows(), d = X.cols();
  if (d != centres.cols())
    throw Error("the rows have " + std::to_string(d) + " columns but the partition was built on " +
                std::to_string(centres.cols()));
  std::vector<int> out(static_cast<std::size_t>(m), 0);
  const RowMat C = centres;
  threads = clamp_threads(threads);
#pragma omp parallel num_threads(threads) if (threads > 1 && m > 256)
  {
    Eigen::RowVectorXd x(d);
#pragma omp for schedule(static)
    for (Eigen::Index i = 0; i < m; ++i) {
      x = X.row(i);
      int v = 0;
      while (n_children[v] > 0) {
        const int f = first_child[v];
        int best = f;
        double bd = sqdist(x.data(), C.data() + static_cast<Eigen::Index>(f) * d, d);
        for (int c = f + 1; c < f + n_children[v]; ++c) {
          const double s = sqdist(x.data(), C.data() + static_cast<Eigen::Index>(c) * d, d);
          if (s < bd) {
            bd = s;
            best = c;
          }
        }
        v = best;
      }
      out[i] = cell[v];
    }
  }
  return out;
}

void Partition::validate(Eigen::Index d) const {
  const int N = nodes();
  if (N < 1 || static_cast<int>(first_child.size()) != N ||
      static_cast<int>(n_children.size()) != N || centres.rows() != N)
    throw Error("the partition's arrays do not have one entry per node");
  if (centres.cols() != d)
    throw Error("the partition was built on " + std::to_string(centres.cols()) +
                " columns, not " + std::to_string(d));
  if (!centres.allFinite()) throw Error("the partition has non-finite centres");
  int leaves = 0;
  for (int v = 0; v < N; ++v) {
    if (n_children[v] < 0) throw Error("the partition has a negative child count");
    if (n_children[v] == 0) {
      if (cell[v] < 0 || cell[v] >= n_cells) throw Error("a leaf of the partition has no cell");
      ++leaves;
    } else if (first_child[v] <= v || first_child[v] + n_children[v] > N) {
      throw Error("the partition's children are out of range");
    }
  }
  if (leaves != n_cells) throw Error("the partition's cells do not match its leaves");
}

}  // namespace kl
