#include "learners/dikl.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>

#include "linalg/chol.hpp"

namespace kl {

namespace {

KernelPtr gaussian(double gamma) { return make_standard_kernel(gaussian_spec(gamma)); }

// B = k(Z, Z) for a Nystrom map.
Mat landmark_gram(const DiklMapParams& p, Backend& be, int threads) {
  Mat B(p.dim(), p.dim());
  be.kernel_matrix(*gaussian(p.gamma), p.P, p.P, B, threads, Callbacks());
  return B;
}

// Lower Cholesky factor of S + jitter I (blocked, parallel); when the factorisation fails (a
// numerically singular S, e.g. repeated landmarks), the diagonal is raised in steps of 100x
// until it succeeds.
Mat spd_factor(Mat& S, double jitter, int threads) {
  const double scale = std::max(S.diagonal().cwiseAbs().maxCoeff(), 1e-300);
  S.diagonal().array() += jitter;
  Mat L = S;
  bool ok = cholesky_lower(L, threads);
  double add = std::max(jitter, 1e-14 * scale);
  for (int tries = 0; !ok && tries < 10; ++tries) {
    S.diagonal().array() += add;
    add *= 100.0;
    L = S;
    ok = cholesky_lower(L, threads);
  }
  if (!ok || !S.allFinite())
    throw Error("the feature covariance is not positive definite (non-finite features?)");
  return L;
}

// Column means as a row vector.
Eigen::RowVectorXd col_means(CMatRef A) {
  return A.colwise().sum() / static_cast<double>(std::max<Eigen::Index>(A.rows(), 1));
}

}  // namespace

void dikl_check_params(const DiklMapParams& p, Eigen::Index d) {
  if (p.P.rows() < 1) throw Error("the map has no features");
  if (p.P.cols() != d) throw Error("the map and the data have different numbers of columns");
  if (!p.P.allFinite()) throw Error("the map parameters are not finite");
  if (p.map == DiklMap::nystrom) {
    if (!(p.gamma > 0.0) || !std::isfinite(p.gamma)) throw Error("gamma must be positive");
  } else {
    if (p.b.size() != p.P.rows()) throw Error("the Fourier map needs one phase per feature");
    if (!p.b.allFinite()) throw Error("the map parameters are not finite");
  }
}

void dikl_features(const DiklMapParams& p, CMatRef X, Mat& F, Mat* sin_out, Backend& be,
                   int threads, const Callbacks& cb) {
  const Eigen::Index n = X.rows(), J = p.dim();
  F.resize(n, J);
  if (p.map == DiklMap::nystrom) {
    be.kernel_matrix(*gaussian(p.gamma), X, p.P, F, threads, cb);
    return;
  }
  be.gemm_nt(X, p.P, F, threads);
  if (sin_out) sin_out->resize(n, J);
  const double s = std::sqrt(2.0 / static_cast<double>(J));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(clamp_threads(threads)) if (n * J > 100000)
#endif
  for (Eigen::Index j = 0; j < J; ++j) {
    const double bj = p.b[j];
    double* f = F.col(j).data();
    double* sn = sin_out ? sin_out->col(j).data() : nullptr;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double z = f[i] + bj;
      if (sn) sn[i] = std::sin(z);
      f[i] = s * std::cos(z);
    }
  }
}

void dikl_backward(const DiklMapParams& p, CMatRef X, CMatRef F, const Mat* sinz, CMatRef dF,
                   const Mat* B, const Mat* dB, Mat& gP, Vec& gb, Backend& be, int threads) {
  const Eigen::Index J = p.dim(), d = X.cols();
  gP.resize(J, d);
  if (p.map == DiklMap::nystrom) {
    const Mat H = dF.cwiseProduct(F);
    be.gemm_tn(H, X, gP, threads);
    const Vec h = H.colwise().sum().transpose();
    gP -= h.asDiagonal() * p.P;
    gP *= 2.0 * p.gamma;
    if (B && dB) {
      const Mat E = dB->cwiseProduct(*B);
      const Vec r = E.rowwise().sum();
      Mat EZ(J, d);
      be.gemm_tn(E, p.P, EZ, threads);  // E is symmetric: E'Z = EZ
      gP -= (4.0 * p.gamma) * (r.asDiagonal() * p.P - EZ);
    }
    gb.resize(0);
    return;
  }
  if (!sinz) throw Error("dikl_backward: the Fourier map needs sin(XW + b)");
  const double s = std::sqrt(2.0 / static_cast<double>(J));
  const Mat G = (-s) * sinz->cwiseProduct(dF);
  be.gemm_tn(G, X, gP, threads);
  gb = G.colwise().sum().transpose();
}

double dikl_objective(DiklObjective obj, const DiklMapParams& p, CMatRef X, CMatRef Y,
                      const IVec* classes, double rho, double jitter, const Mat& V,
                      const Vec& c, DiklGradient* grad, Backend& be, int threads,
                      const Callbacks& cb) {
  const Eigen::Index n = X.rows(), J = p.dim(), L = Y.cols();
  dikl_check_params(p, X.cols());
  if (Y.rows() != n) throw Error("X and Y have different numbers of rows");
  if (n < 1 || L < 1) throw Error("empty batch");
  const bool nys = p.map == DiklMap::nystrom;
  Mat F, sinz;
  dikl_features(p, X, F, nys ? nullptr : &sinz, be, threads, cb);
  Mat B;
  if (nys && (obj == DiklObjective::di || obj == DiklObjective::ls)) B = landmark_gram(p, be, threads);

  double value = 0.0;
  Mat dF, dB;
  const bool need = grad != nullptr;
  switch (obj) {
    case DiklObjective::di: {
      const Mat Fc = F.rowwise() - col_means(F);
      const Mat Yc = Y.rowwise() - col_means(Y);
      Mat S(J, J);
      be.gemm_tn(Fc, Fc, S, threads);
      if (nys) S += rho * B; else S.diagonal().array() += rho;
      Mat M(J, L);
      be.gemm_tn(Fc, Yc, M, threads);
      const Mat A = cholesky_solve(spd_factor(S, jitter, threads), M);
      value = (M.array() * A.array()).sum();
      if (need) {
        const Mat At = A.transpose();
        Mat Res(n, L);
        be.gemm_nt(Fc, At, Res, threads);
        Res = Yc - Res;
        dF.resize(n, J);
        be.gemm_nt(Res, A, dF, threads);
        dF *= 2.0;
        if (nys) {
          dB.resize(J, J);
          be.gemm_nt(A, A, dB, threads);
          dB *= -rho;
        }
      }
      break;
    }
    case DiklObjective::ls: {
      if (V.rows() != J || V.cols() != L || c.size() != L)
        throw Error("the least-squares head does not match the map");
      Mat R = F * V;
      R.rowwise() += c.transpose();
      R -= Y;
      const double pen = nys ? (V.array() * (B * V).array()).sum() : V.squaredNorm();
      value = R.squaredNorm() + rho * pen;
      if (need) {
        dF = 2.0 * R * V.transpose();
        if (nys) dB = rho * (V * V.transpose());
      }
      break;
    }
    case DiklObjective::ce: {
      if (!classes || classes->size() != n)
        throw Error("the cross-entropy objective needs one class per row");
      if (V.rows() != J || V.cols() != L || c.size() != L)
        throw Error("the softmax head does not match the map");
      Mat G = F * V;
      G.rowwise() += c.transpose();
      for (Eigen::Index i = 0; i < n; ++i) {
        const int yi = (*classes)[i];
        if (yi < 0 || yi >= L) throw Error("class index out of range");
        const double mx = G.row(i).maxCoeff();
        double s = 0.0;
        for (Eigen::Index k = 0; k < L; ++k) {
          G(i, k) = std::exp(G(i, k) - mx);
          s += G(i, k);
        }
        value -= std::log(G(i, yi) / s);
        G.row(i) /= s;
        G(i, yi) -= 1.0;  // G = P - onehot
      }
      if (need) {
        dF = G * V.transpose();
        grad->gV = F.transpose() * G;
        grad->gc = G.colwise().sum().transpose();
      }
      break;
    }
  }
  if (need) {
    dikl_backward(p, X, F, nys ? nullptr : &sinz, dF, nys && B.size() ? &B : nullptr,
                  nys && dB.size() ? &dB : nullptr, grad->gP, grad->gb, be, threads);
    if (obj != DiklObjective::ce) {
      grad->gV.resize(0, 0);
      grad->gc.resize(0);
    }
  }
  return value;
}

double dikl_ridge_head(const DiklMapParams& p, CMatRef X, CMatRef Y, double rho, double jitter,
                       Mat& V, Vec& c, Backend& be, int threads, const Callbacks& cb) {
  const Eigen::Index n = X.rows(), J = p.dim(), L = Y.cols();
  dikl_check_params(p, X.cols());
  if (Y.rows() != n || n < 1) throw Error("X and Y have different numbers of rows");
  Mat FtF = Mat::Zero(J, J), FtY = Mat::Zero(J, L), Fb, G(J, J);
  Vec fsum = Vec::Zero(J);
  const Vec ysum = Y.colwise().sum().transpose();
  const Eigen::Index block = 4096;
  for (Eigen::Index r0 = 0; r0 < n; r0 += block) {
    const Eigen::Index m = std::min(block, n - r0);
    dikl_features(p, X.middleRows(r0, m), Fb, nullptr, be, threads, cb);
    be.gemm_tn(Fb, Fb, G, threads);
    FtF += G;
    FtY.noalias() += Fb.transpose() * Y.middleRows(r0, m);
    fsum += Fb.colwise().sum().transpose();
    cb.check();
  }
  const double dn = static_cast<double>(n);
  const Vec fbar = fsum / dn, ybar = ysum / dn;
  Mat S = FtF - dn * fbar * fbar.transpose();
  if (p.map == DiklMap::nystrom) S += rho * landmark_gram(p, be, threads);
  else S.diagonal().array() += rho;
  const Mat M = FtY - dn * fbar * ybar.transpose();
  V = cholesky_solve(spd_factor(S, jitter, threads), M);
  c = ybar - V.transpose() * fbar;
  return (M.array() * V.array()).sum();
}

DiklTrainResult dikl_train(const DiklMapParams& init, CMatRef X, CMatRef Y, const IVec& classes,
                           const DiklTrainOptions& opt, Rng& rng, Backend& be,
                           const Callbacks& cb) {
  const Eigen::Index n = X.rows(), d = X.cols(), L = Y.cols();
  dikl_check_params(init, d);
  if (Y.rows() != n || n < 2) throw Error("X and Y must have the same rows (at least 2)");
  if (opt.batch_size < 2) throw Error("batch_size must be at least 2");
  if (!(opt.lr > 0.0)) throw Error("the learning rate must be positive");
  if (!(opt.rho >= 0.0)) throw Error("rho must be non-negative");
  const bool ce = opt.objective == DiklObjective::ce;
  if (ce && classes.size() != n) throw Error("the cross-entropy objective needs classes");

  DiklTrainResult res;
  res.params = init;
  DiklMapParams& p = res.params;
  const Eigen::Index J = p.dim();
  const bool fourier = p.map == DiklMap::fourier;
  if (ce) {
    res.V = Mat::Zero(J, L);
    res.c = Vec::Zero(L);
  }

  // All trained parameters in one vector for Adam: P, then b (Fourier), then V and c (ce).
  const Eigen::Index nP = J * d, nb = fourier ? J : 0, nV = ce ? J * L : 0, nc = ce ? L : 0;
  Vec theta(nP + nb + nV + nc), g(theta.size());
  auto pack = [&]() {
    theta.head(nP) = Eigen::Map<const Vec>(p.P.data(), nP);
    if (nb) theta.segment(nP, nb) = p.b;
    if (nV) theta.segment(nP + nb, nV) = Eigen::Map<const Vec>(res.V.data(), nV);
    if (nc) theta.tail(nc) = res.c;
  };
  auto unpack = [&]() {
    Eigen::Map<Vec>(p.P.data(), nP) = theta.head(nP);
    if (nb) p.b = theta.segment(nP, nb);
    if (nV) Eigen::Map<Vec>(res.V.data(), nV) = theta.segment(nP + nb, nV);
    if (nc) res.c = theta.tail(nc);
  };
  pack();

  AdamOptions aopt;
  aopt.lr = opt.lr;
  Adam adam(theta.size(), aopt);
  PlateauScheduler sched(opt.lr, opt.plateau);

  const Eigen::Index batches = std::max<Eigen::Index>(1, n / opt.batch_size);
  std::vector<int> perm(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = static_cast<int>(i);
  Mat Xb, Yb;
  IVec cls;
  DiklGradient gr;
  const double sign = opt.objective == DiklObjective::di ? -1.0 : 1.0;  // minimised
  const int max_epochs = opt.plateau.max_epochs;

  for (int epoch = 0; epoch < max_epochs; ++epoch) {
    if (opt.objective == DiklObjective::ls)
      dikl_ridge_head(p, X, Y, opt.rho, opt.jitter, res.V, res.c, be, opt.threads, cb);
    rng.shuffle(perm);
    double sum = 0.0;
    for (Eigen::Index k = 0; k < batches; ++k) {
      const Eigen::Index r0 = n * k / batches, r1 = n * (k + 1) / batches, m = r1 - r0;
      Xb.resize(m, d);
      Yb.resize(m, L);
      if (ce) cls.resize(m);
      for (Eigen::Index i = 0; i < m; ++i) {
        const int src = perm[static_cast<std::size_t>(r0 + i)];
        Xb.row(i) = X.row(src);
        Yb.row(i) = Y.row(src);
        if (ce) cls[i] = classes[src];
      }
      const double v = dikl_objective(opt.objective, p, Xb, Yb, ce ? &cls : nullptr, opt.rho,
                                      opt.jitter, res.V, res.c, &gr, be, opt.threads, cb);
      if (!std::isfinite(v))
        throw Error("the objective became non-finite in epoch " + std::to_string(epoch + 1) +
                    " (try a smaller learning rate)");
      const double w = sign / static_cast<double>(m);
      g.head(nP) = w * Eigen::Map<const Vec>(gr.gP.data(), nP);
      if (nb) g.segment(nP, nb) = w * gr.gb;
      if (nV) g.segment(nP + nb, nV) = w * Eigen::Map<const Vec>(gr.gV.data(), nV);
      if (nc) g.tail(nc) = w * gr.gc;
      adam.step(theta, g);
      unpack();
      ++res.steps;
      sum += v / static_cast<double>(m);
      cb.check();
      cb.report((epoch + static_cast<double>(k + 1) / batches) / max_epochs);
    }
    const double mean = sum / static_cast<double>(batches);
    res.trace.push_back(mean);
    res.lr.push_back(adam.lr());
    res.epochs = epoch + 1;
    if (sched.update(sign * mean)) break;
    adam.set_lr(sched.lr());
  }
  res.best_epoch = sched.best_epoch();
  res.stop = sched.stopped() ? sched.reason_text() : "maximum number of epochs reached";
  if (opt.objective == DiklObjective::ls)  // the head that matches the final map
    dikl_ridge_head(p, X, Y, opt.rho, opt.jitter, res.V, res.c, be, opt.threads, cb);
  cb.report(1.0);
  return res;
}

void nystrom_whitener(const DiklMapParams& p, Mat& T, Vec& values, Backend& be, int threads) {
  if (p.map != DiklMap::nystrom) throw Error("nystrom_whitener: not a Nystrom map");
  const Mat B = landmark_gram(p, be, threads);
  Eigen::SelfAdjointEigenSolver<Mat> es(B);
  if (es.info() != Eigen::Success) throw Error("eigendecomposition of k(Z, Z) failed");
  const Vec& l = es.eigenvalues();  // increasing
  const Eigen::Index J = l.size();
  const double cut = static_cast<double>(J) * std::numeric_limits<double>::epsilon() * l[J - 1];
  Eigen::Index k = 0;
  for (Eigen::Index j = 0; j < J; ++j) k += l[j] > cut ? 1 : 0;
  T.resize(J, k);
  values.resize(k);
  for (Eigen::Index q = 0; q < k; ++q) {
    const Eigen::Index j = J - 1 - q;
    values[q] = l[j];
    T.col(q) = es.eigenvectors().col(j) / std::sqrt(l[j]);
  }
}

}  // namespace kl
