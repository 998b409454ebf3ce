#include "learners/gem.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/rng.hpp"
#include "linalg/simd.hpp"

namespace kl {

namespace {

const Eigen::Index kChunkRows = 2048;  // rows gathered at a time for the moments
const Eigen::Index kTile = 256;        // side of a moment tile

}  // namespace

void InputMap::apply(const CMatRef& xb, MatRef out) const {
  if (!active()) {
    out = xb;
    return;
  }
  const Eigen::Map<const Mat> Wm(W, d, D);
  const Eigen::Map<const Vec> bm(b, D);
  out.noalias() = xb * Wm;
  const double s = std::sqrt(2.0 / static_cast<double>(D));
  for (Eigen::Index j = 0; j < D; ++j)
    out.col(j) = s * (out.col(j).array() + bm[j]).cos().matrix();
}

namespace {

void check_map(const CMatRef& x, const InputMap& map) {
  if (map.active() && (map.d != x.cols() || map.D < 1 || map.b == nullptr))
    throw Error("the random Fourier map and the data have different dimensions");
}

}  // namespace

ClassMoments class_moments(const CMatRef& x, const IVec& y, int K, int threads,
                           const Callbacks& cb, const InputMap& map) {
  check_map(x, map);
  const Eigen::Index n = x.rows(), d = map.out_dim(x.cols()), d_in = x.cols();
  if (K < 1) throw Error("at least one class is needed");
  if (y.size() != n) throw Error("y and x have different numbers of rows");
  std::vector<std::vector<Eigen::Index>> rows(static_cast<std::size_t>(K));
  for (Eigen::Index i = 0; i < n; ++i) {
    if (y[i] < 0 || y[i] >= K) throw Error("class labels must lie in 0..K-1");
    rows[static_cast<std::size_t>(y[i])].push_back(i);
  }
  ClassMoments out;
  out.second.assign(static_cast<std::size_t>(K), Mat::Zero(d, d));
  out.mean = Mat::Zero(d, K);
  out.count = IVec::Zero(K);
  Eigen::Index total_chunks = 0, done_chunks = 0;
  for (int m = 0; m < K; ++m)
    total_chunks += (static_cast<Eigen::Index>(rows[m].size()) + kChunkRows - 1) / kChunkRows;
  // Rows of a chunk, gathered row-major so that column blocks of it feed the vectorised
  // cross-product kernel (Eigen's product on the same tiles when the processor has none).
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> G;
  const SimdLevel level = simd_level();
  std::vector<double> store;  // packed rows, kept from chunk to chunk
  for (int m = 0; m < K; ++m) {
    const auto& r = rows[static_cast<std::size_t>(m)];
    const Eigen::Index nm = static_cast<Eigen::Index>(r.size());
    out.count[m] = static_cast<int>(nm);
    Mat& C = out.second[static_cast<std::size_t>(m)];
    for (Eigen::Index c0 = 0; c0 < nm; c0 += kChunkRows) {
      cb.check();
      const Eigen::Index len = std::min(kChunkRows, nm - c0);
      G.resize(len, d);
      if (!map.active()) {
        {
          const EigenSerial eigen_serial(!(len * d > 100000));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(clamp_threads(threads)) if (len * d > 100000)
#endif
          for (Eigen::Index t = 0; t < len; ++t)
            for (Eigen::Index j = 0; j < d; ++j) G(t, j) = x(r[static_cast<std::size_t>(c0 + t)], j);
        }
      } else {
        // The mapped rows of the chunk, in sub-blocks of rows in parallel.
        const Eigen::Index sub = 64, nsub = (len + sub - 1) / sub;
        {
          const EigenSerial eigen_serial(!(nsub > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (nsub > 1)
#endif
          for (Eigen::Index si = 0; si < nsub; ++si) {
            const Eigen::Index t0 = si * sub, l = std::min(sub, len - t0);
            Mat xb(l, d_in), zb(l, d);
            for (Eigen::Index t = 0; t < l; ++t)
              for (Eigen::Index j = 0; j < d_in; ++j)
                xb(t, j) = x(r[static_cast<std::size_t>(c0 + t0 + t)], j);
            map.apply(xb, zb);
            G.middleRows(t0, l) = zb;
          }
        }
      }
      for (Eigen::Index t = 0; t < len; ++t) out.mean.col(m) += G.row(t).transpose();
      // Lower triangle of tiles, one tile per task; each tile's sums have a fixed order.
      add_crossprod_lower(level, G.data(), d, 1, len, d, kTile, C, threads, &store);
      ++done_chunks;
      cb.report(static_cast<double>(done_chunks) / static_cast<double>(total_chunks));
    }
    if (nm > 0) {
      C /= static_cast<double>(nm);
      out.mean.col(m) /= static_cast<double>(nm);
    }
    C.triangularView<Eigen::StrictlyUpper>() = C.transpose();
  }
  return out;
}

namespace {

// Orthonormalises the columns of X against the first m columns of Q (twice, classical
// Gram-Schmidt) and among themselves; columns that vanish are replaced by random directions.
// Returns the orthonormal block (possibly with fewer columns when the space is exhausted).
Mat orthonormal_block(const Mat& Q, Eigen::Index m, Mat X, Rng& rng) {
  const Eigen::Index d = X.rows();
  Mat out(d, X.cols());
  Eigen::Index kept = 0;
  for (Eigen::Index c = 0; c < X.cols(); ++c) {
    Vec v = X.col(c);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const double n0 = v.norm();
      for (int pass = 0; pass < 2; ++pass) {
        if (m > 0) v.noalias() -= Q.leftCols(m) * (Q.leftCols(m).transpose() * v);
        if (kept > 0) v.noalias() -= out.leftCols(kept) * (out.leftCols(kept).transpose() * v);
      }
      const double n1 = v.norm();
      if (n1 > 1e-10 * n0 && n1 > 0) {
        out.col(kept++) = v / n1;
        break;
      }
      if (m + kept >= d) break;
      for (Eigen::Index i = 0; i < d; ++i) v[i] = rng.normal();
    }
    if (m + kept >= d) break;
  }
  return out.leftCols(kept);
}

}  // namespace

TopEigen top_eigen_block(Eigen::Index d, int k, const std::function<void(const Mat&, Mat&)>& apply,
                         std::uint64_t seed, double tol, Eigen::Index max_applications) {
  TopEigen res;
  if (d < 1 || k < 1) return res;
  k = static_cast<int>(std::min<Eigen::Index>(k, d));
  Rng rng(seed);
  const Eigen::Index b = std::min<Eigen::Index>(d, std::max(4, std::min(16, k)));
  const Eigen::Index mmax = std::min<Eigen::Index>(d, std::max<Eigen::Index>(2 * k + 2 * b, 4 * b));
  Mat Q(d, mmax), AQ(d, mmax);
  Eigen::Index m = 0;

  auto add = [&](const Mat& X) {
    Mat Y = orthonormal_block(Q, m, X, rng);
    if (Y.cols() == 0) return false;
    Mat AY(d, Y.cols());
    apply(Y, AY);
    res.applications += static_cast<int>(Y.cols());
    Q.middleCols(m, Y.cols()) = Y;
    AQ.middleCols(m, Y.cols()) = AY;
    m += Y.cols();
    return true;
  };

  Mat X0(d, b);
  for (Eigen::Index j = 0; j < b; ++j)
    for (Eigen::Index i = 0; i < d; ++i) X0(i, j) = rng.normal();
  add(X0);

  Eigen::SelfAdjointEigenSolver<Mat> es;
  for (;;) {
    Mat H = Q.leftCols(m).transpose() * AQ.leftCols(m);
    H = 0.5 * (H + H.transpose()).eval();
    es.compute(H);
    if (es.info() != Eigen::Success) throw Error("Rayleigh-Ritz eigensolver failed");
    // Descending order.
    const Vec theta = es.eigenvalues().reverse();
    const Mat S = es.eigenvectors().rowwise().reverse();
    const Eigen::Index kk = std::min<Eigen::Index>(k, m);
    const Mat Y = Q.leftCols(m) * S.leftCols(kk);
    Mat R = AQ.leftCols(m) * S.leftCols(kk);
    R -= Y * theta.head(kk).asDiagonal();
    const double scale = std::max(theta.cwiseAbs().maxCoeff(), 1e-300);
    std::vector<Eigen::Index> open;
    for (Eigen::Index j = 0; j < kk; ++j)
      if (R.col(j).norm() > tol * scale) open.push_back(j);
    const bool done = (kk == k && open.empty()) || m == d;
    if (done || res.applications >= max_applications) {
      res.values = theta.head(kk);
      res.vectors = Y;
      res.converged = done;
      return res;
    }
    // Expansion block: residuals of the first unconverged Ritz pairs.
    const Eigen::Index nb = std::min<Eigen::Index>(b, static_cast<Eigen::Index>(open.size()));
    Mat X(d, nb);
    for (Eigen::Index c = 0; c < nb; ++c) X.col(c) = R.col(open[static_cast<std::size_t>(c)]);
    if (m + nb > mmax) {
      // Thick restart on the leading Ritz vectors.
      const Eigen::Index keep = std::min<Eigen::Index>(m, std::max<Eigen::Index>(kk, mmax - 2 * b));
      Mat Qn = Q.leftCols(m) * S.leftCols(keep);
      Mat AQn = AQ.leftCols(m) * S.leftCols(keep);
      Q.leftCols(keep) = Qn;
      AQ.leftCols(keep) = AQn;
      m = keep;
    }
    if (!add(X)) {
      res.values = theta.head(kk);
      res.vectors = Y;
      res.converged = false;
      return res;
    }
  }
}

namespace {

// Top eigenpairs (descending) of the symmetric matrix L^-1 C L^-T, by a dense solver.
void dense_top(const Mat& L, const Mat& C, int k, Vec& values, Mat& U) {
  const auto Lt = L.triangularView<Eigen::Lower>();
  Mat T = Lt.solve(C);                  // L^-1 C
  Mat M = Lt.solve(T.transpose());      // L^-1 C L^-T (C symmetric)
  M = 0.5 * (M + M.transpose()).eval();
  Eigen::SelfAdjointEigenSolver<Mat> es(M);
  if (es.info() != Eigen::Success) throw Error("the dense eigensolver failed");
  const Eigen::Index d = M.rows();
  values = es.eigenvalues().tail(k).reverse();
  U = es.eigenvectors().rightCols(k).rowwise().reverse();
  (void)d;
}

}  // namespace

std::vector<GemPair> gem_directions(const ClassMoments& M, const std::vector<int>& num,
                                    const std::vector<int>& den, const GemOptions& opt,
                                    const Callbacks& cb) {
  const int K = static_cast<int>(M.second.size());
  if (K < 2) throw Error("at least two classes are needed");
  const Eigen::Index d = M.second[0].rows();
  if (num.size() != den.size()) throw Error("pair lists differ in length");
  if (opt.top < 1) throw Error("'top' must be at least 1");
  if (opt.keep_max < 0) throw Error("'keep_max' must be >= 0");
  if (!(opt.ridge >= 0) || !std::isfinite(opt.ridge)) throw Error("'ridge' must be >= 0");
  const std::size_t P = num.size();
  for (std::size_t q = 0; q < P; ++q)
    if (num[q] < 0 || num[q] >= K || den[q] < 0 || den[q] >= K || num[q] == den[q])
      throw Error("invalid class pair");
  const int k = static_cast<int>(std::min<Eigen::Index>(opt.top, d));
  const int threads = clamp_threads(opt.threads);

  // Cholesky factors of the regularised denominators, for the classes that need one.
  std::vector<int> dens(den.begin(), den.end());
  std::sort(dens.begin(), dens.end());
  dens.erase(std::unique(dens.begin(), dens.end()), dens.end());
  std::vector<Mat> L(static_cast<std::size_t>(K));
  std::vector<int> failed(static_cast<std::size_t>(K), 0);
  {
    const EigenSerial eigen_serial(!(dens.size() > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (dens.size() > 1)
#endif
    for (std::size_t t = 0; t < dens.size(); ++t) {
      const int j = dens[t];
      const Mat& C = M.second[static_cast<std::size_t>(j)];
      const double r = opt.relative ? opt.ridge * C.trace() / static_cast<double>(d) : opt.ridge;
      Mat B = C;
      B.diagonal().array() += r;
      Eigen::LLT<Mat> llt(B);
      // A factor with a tiny pivot relative to the largest diagonal entry is numerically singular.
      bool ok = llt.info() == Eigen::Success;
      if (ok) {
        const Mat& Lj = llt.matrixLLT();
        const double dmax = B.diagonal().cwiseAbs().maxCoeff();
        const double pmin = Lj.diagonal().minCoeff();
        ok = pmin > 0 && pmin * pmin > 1e-13 * std::max(dmax, 1e-300);
      }
      if (ok) {
        L[static_cast<std::size_t>(j)] = llt.matrixL();
      } else {
        failed[static_cast<std::size_t>(j)] = 1;
      }
    }
  }
  for (int j : dens)
    if (failed[static_cast<std::size_t>(j)])
      throw ClassError(j, "the regularised second-moment matrix of ",
                       " is singular (a class with fewer rows than columns, or constant "
                       "columns); use a larger ridge");
  cb.check();

  std::vector<GemPair> out(P);
  Rng seeder(opt.seed);
  std::vector<std::uint64_t> seeds(P);
  for (auto& s : seeds) s = seeder.next_u64();
  const bool dense_auto = d <= 256 || 4 * k >= d;
  // Pairs are solved in rounds so that the calling thread can check for interrupts.
  const std::size_t round = static_cast<std::size_t>(2 * threads);
  for (std::size_t q0 = 0; q0 < P; q0 += round) {
    const std::size_t q1 = std::min(P, q0 + round);
    std::vector<std::string> errors(q1 - q0);
    {
      const EigenSerial eigen_serial(!(q1 - q0 > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (q1 - q0 > 1)
#endif
      for (std::size_t q = q0; q < q1; ++q) {
        try {
          const int i = num[q], j = den[q];
          const Mat& Lj = L[static_cast<std::size_t>(j)];
          const Mat& Ci = M.second[static_cast<std::size_t>(i)];
          GemPair& g = out[q];
          g.num = i;
          g.den = j;
          Vec values;
          Mat U;
          bool dense = opt.method == 1 || (opt.method == 0 && dense_auto);
          if (!dense) {
            const auto Lt = Lj.triangularView<Eigen::Lower>();
            auto op = [&](const Mat& X, Mat& AX) {
              Mat T = Lt.transpose().solve(X);
              Mat CT = Ci * T;
              AX = Lt.solve(CT);
            };
            TopEigen te = top_eigen_block(d, k, op, seeds[q], opt.tol, d / 2);
            g.applications = te.applications;
            if (te.converged) {
              values = te.values;
              U = te.vectors;
            } else {
              dense = true;
            }
          }
          if (dense) dense_top(Lj, Ci, k, values, U);
          g.dense = dense;
          g.spectrum = values;
          // v = L^-T u, so that v' B v = 1; keep eigenvalues >= threshold.
          Eigen::Index kept = 0;
          const Eigen::Index cap = opt.keep_max > 0 ? opt.keep_max : values.size();
          while (kept < std::min<Eigen::Index>(values.size(), cap) &&
                 values[kept] >= opt.threshold)
            ++kept;
          // (no solve with an empty right-hand side: Eigen binds a reference to its null data)
          Mat V(d, 0);
          if (kept > 0) V = Lj.triangularView<Eigen::Lower>().transpose().solve(U.leftCols(kept));
          for (Eigen::Index c = 0; c < kept; ++c) {
            const double s = V.col(c).dot(M.mean.col(i));
            if (s < 0) V.col(c) = -V.col(c);
          }
          g.vectors = std::move(V);
        } catch (const std::exception& e) {
          errors[q - q0] = e.what();
        }
      }
    }
    for (const auto& e : errors)
      if (!e.empty()) throw Error(e);
    cb.check();
    cb.report(static_cast<double>(q1) / static_cast<double>(P));
  }
  return out;
}

Eigen::Index gem_feature_count(Eigen::Index d, Eigen::Index F, int degree, bool keep_input,
                               bool ones) {
  const Eigen::Index raw = (keep_input ? d : 0) + 2 * F;
  return (ones ? 1 : 0) + raw * degree;
}

namespace {

// Features of the rows xb into out (xb.rows() x gem_feature_count(...)).
template <class Out>
void feature_block(const CMatRef& xb, const CMatRef& V, int base, int degree, bool keep_input,
                   bool ones, Out&& out) {
  const Eigen::Index len = xb.rows(), d = xb.cols(), F = V.cols();
  const Eigen::Index raw = (keep_input ? d : 0) + 2 * F;
  const Eigen::Index off = ones ? 1 : 0;
  Mat P(len, F);
  const SimdLevel level = simd_level();
  if (F > 0 && level != SimdLevel::none)  // P(i, j) = sum_k xb(i, k) V(k, j)
    gemm_block(level, len, F, d, xb.data(), 1, xb.outerStride(), V.data(), 1, V.outerStride(),
               P.data(), 1, len);
  else if (F > 0)
    P.noalias() = xb * V;
  if (ones) out.leftCols(1).setOnes();
  Eigen::Index c = off;
  if (keep_input) {
    out.middleCols(c, d) = xb;
    c += d;
  }
  for (Eigen::Index f = 0; f < F; ++f) {
    for (Eigen::Index t = 0; t < len; ++t) {
      const double p = P(t, f);
      double pos, neg;
      if (base == 0) {
        pos = std::sqrt(1.0 + std::max(p, 0.0)) - 1.0;
        neg = std::sqrt(1.0 + std::max(-p, 0.0)) - 1.0;
      } else {
        pos = std::sqrt(std::max(p, 0.0));
        neg = std::sqrt(std::max(-p, 0.0));
      }
      out(t, c + f) = pos;
      out(t, c + F + f) = neg;
    }
  }
  for (int a = 2; a <= degree; ++a) {
    const Eigen::Index dst = off + (a - 1) * raw;
    out.middleCols(dst, raw) = out.middleCols(dst - raw, raw).cwiseProduct(out.middleCols(off, raw));
  }
}

// feature_block of the rows xb after the input map (when it is active).
template <class Out>
void mapped_feature_block(const CMatRef& xb, const InputMap& map, const CMatRef& V, int base,
                          int degree, bool keep_input, bool ones, Out&& out) {
  if (!map.active()) {
    feature_block(xb, V, base, degree, keep_input, ones, out);
    return;
  }
  Mat zb(xb.rows(), map.D);
  map.apply(xb, zb);
  feature_block(zb, V, base, degree, keep_input, ones, out);
}

void check_feature_args(const CMatRef& x, const CMatRef& V, int degree, const InputMap& map) {
  check_map(x, map);
  if (V.rows() != map.out_dim(x.cols()))
    throw Error("directions and data have different dimensions");
  if (degree < 1) throw Error("'degree' must be at least 1");
}

// f(r0, len) over blocks of `block` rows, in parallel, in rounds between which the calling
// thread checks for interrupts and reports progress.
template <class F>
void blocks_in_rounds(Eigen::Index n, Eigen::Index block, int threads, const Callbacks& cb, F f) {
  const Eigen::Index nblocks = (n + block - 1) / block;
  const Eigen::Index round = 8 * clamp_threads(threads);
  for (Eigen::Index b0 = 0; b0 < nblocks; b0 += round) {
    const Eigen::Index b1 = std::min(nblocks, b0 + round);
    {
      const EigenSerial eigen_serial(!(b1 - b0 > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(clamp_threads(threads)) if (b1 - b0 > 1)
#endif
      for (Eigen::Index bi = b0; bi < b1; ++bi) f(bi * block, std::min(block, n - bi * block));
    }
    cb.check();
    cb.report(static_cast<double>(b1) / static_cast<double>(nblocks));
  }
}

}  // namespace

void gem_features(const CMatRef& x, const CMatRef& V, int base, int degree, bool keep_input,
                  bool ones, MatRef out, int threads, const Callbacks& cb, const InputMap& map) {
  check_feature_args(x, V, degree, map);
  const Eigen::Index n = x.rows(), dz = map.out_dim(x.cols());
  if (out.rows() != n || out.cols() != gem_feature_count(dz, V.cols(), degree, keep_input, ones))
    throw Error("feature matrix has the wrong shape");
  blocks_in_rounds(n, 512, threads, cb, [&](Eigen::Index r0, Eigen::Index len) {
    mapped_feature_block(x.middleRows(r0, len), map, V, base, degree, keep_input, ones,
                         out.middleRows(r0, len));
  });
}

void gem_features_f32(const CMatRef& x, const CMatRef& V, int base, int degree, bool keep_input,
                      bool ones, RowMajorF32& out, int threads, const Callbacks& cb,
                      const InputMap& map) {
  check_feature_args(x, V, degree, map);
  const Eigen::Index n = x.rows(), dz = map.out_dim(x.cols()), F = V.cols();
  const Eigen::Index p = gem_feature_count(dz, F, degree, keep_input, ones);
  const Eigen::Index raw = (keep_input ? dz : 0) + 2 * F, off = ones ? 1 : 0;
  out.n = n;
  out.p = p;
  // Not zeroed: every element is written below, each row block's pages first by the thread
  // that fills them.
  out.data.resize(static_cast<std::size_t>(n * p));
  const int nt = clamp_threads(threads);
  // Large blocks repack V less often; small inputs still get several blocks to share out.
  const Eigen::Index block = n >= 8192 ? 1024 : 256;
  // Per thread: the projections of a block (row-major) and one row's features of degree 1 and
  // its current power, all in double, as the double-precision map computes them.
  std::vector<Mat> proj(static_cast<std::size_t>(nt));
  std::vector<Vec> first(static_cast<std::size_t>(nt)), power(static_cast<std::size_t>(nt));
  const SimdLevel level = simd_level();
  blocks_in_rounds(n, block, nt, cb, [&](Eigen::Index r0, Eigen::Index len) {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
    Mat& P = proj[static_cast<std::size_t>(tid)];
    Vec& r = first[static_cast<std::size_t>(tid)];
    Vec& q = power[static_cast<std::size_t>(tid)];
    if (P.size() != F * block) P.resize(F, block);  // column t: the projections of row t
    if (r.size() != raw) {
      r.resize(raw);
      q.resize(raw);
    }
    Mat zb;
    if (map.active()) {
      zb.resize(len, map.D);
      map.apply(x.middleRows(r0, len), zb);
    }
    const CMatRef xb = map.active() ? CMatRef(zb) : x.middleRows(r0, len);
    if (F > 0 && level != SimdLevel::none)  // P(j, t) = sum_k xb(t, k) V(k, j)
      gemm_block(level, len, F, dz, xb.data(), 1, xb.outerStride(), V.data(), 1,
                 V.outerStride(), P.data(), F, 1);
    else if (F > 0)
      P.leftCols(len).noalias() = (xb * V).transpose();
    for (Eigen::Index t = 0; t < len; ++t) {
      float* o = out.row(r0 + t);
      if (ones) o[0] = 1.0f;
      Eigen::Index c = 0;
      if (keep_input)
        for (; c < dz; ++c) r[c] = xb(t, c);
      const double* pt = P.data() + t * F;
      for (Eigen::Index f = 0; f < F; ++f) {
        const double v = pt[f];
        if (base == 0) {
          r[c + f] = std::sqrt(1.0 + std::max(v, 0.0)) - 1.0;
          r[c + F + f] = std::sqrt(1.0 + std::max(-v, 0.0)) - 1.0;
        } else {
          r[c + f] = std::sqrt(std::max(v, 0.0));
          r[c + F + f] = std::sqrt(std::max(-v, 0.0));
        }
      }
      float* dst = o + off;
      for (Eigen::Index j = 0; j < raw; ++j) dst[j] = static_cast<float>(r[j]);
      if (degree > 1) q = r;
      for (int a = 2; a <= degree; ++a) {
        dst += raw;
        for (Eigen::Index j = 0; j < raw; ++j) {
          q[j] *= r[j];
          dst[j] = static_cast<float>(q[j]);
        }
      }
    }
  });
}

void standardize_columns(MatRef z, Vec& center, Vec& scale, bool compute, int threads) {
  const Eigen::Index n = z.rows(), p = z.cols();
  if (compute) {
    center.resize(p);
    scale.resize(p);
  } else if (center.size() != p || scale.size() != p) {
    throw Error("standardisation has the wrong length");
  }
  {
    const EigenSerial eigen_serial(!(n * p > 100000));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(clamp_threads(threads)) if (n * p > 100000)
#endif
    for (Eigen::Index j = 0; j < p; ++j) {
      auto col = z.col(j);
      if (compute) {
        const double mu = n > 0 ? col.mean() : 0.0;
        const double ss = (col.array() - mu).square().sum();
        const double sd = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
        center[j] = mu;
        scale[j] = sd > 1e-12 * std::abs(mu) && sd > 1e-30 ? 1.0 / sd : 0.0;
      }
      col.array() = (col.array() - center[j]) * scale[j];
    }
  }
}

}  // namespace kl
