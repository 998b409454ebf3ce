// Tessellated kernel learning: the Frank-Wolfe loop over P with SVM alpha-steps (tkl.hpp).
#include "learners/tkl.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/tessellated.hpp"

namespace kl {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Callbacks interrupts_only(const Callbacks& cb) {
  Callbacks c;
  c.interrupted = cb.interrupted;
  return c;
}

// The SVM of one alpha-step: its machines and OPT_A (the dual objective, maximised).
struct AlphaStep {
  std::vector<BinaryMachine> machines;
  double value = 0;
  long iter = 0;
};

// Sums a machine's objective into OPT_A: the solver minimises 0.5 a'Qa + p'a, the negative of
// the dual objective in the paper's sign.
AlphaStep make_step(std::vector<BinaryMachine> m) {
  AlphaStep s;
  s.machines = std::move(m);
  for (const BinaryMachine& b : s.machines) {
    s.value -= b.obj;
    s.iter += b.iter;
  }
  return s;
}

// The alpha-step: the SVM with the given parameters on an n x n Gram matrix, warm-started from
// the machines of an earlier step, or cold when none.
using SolveFn = std::function<AlphaStep(const TrainingKernel&, const std::vector<BinaryMachine>*,
                                        const SvmParams&)>;

// What a fit on given rows builds once: the learner's algebra, the current P and its Gram
// matrix K (the start P = I, or I / s with normalize), the trace q and the ridge mu of the
// optimisation's solves. A run moves P and K; a path of costs continues from where the last
// run left them.
struct TklState {
  std::unique_ptr<TklGram> G;
  Mat K, P;
  Eigen::MatrixXf Kf;  // K in single precision (par.single; K is then empty)
  bool single = false;
  double q = 0, mu = 0, scale = 1;
  int h = 0;
  double seconds = 0;
};

TklState tkl_start(CMatRef X, const Vec& lower, const Vec& upper, const TklParams& par,
                   const Callbacks& cb) {
  if (par.maxit < 0) throw Error("maxit must be >= 0");
  if (!(par.tol > 0) || !std::isfinite(par.tol)) throw Error("tol must be a positive number");
  const int n = static_cast<int>(X.rows());
  const int threads = clamp_threads(par.svm.threads);
  TklState S;
  auto t0 = std::chrono::steady_clock::now();
  // The start P = I (I / s with normalize), its Gram matrix through the kernel object, and the
  // learner's algebra.
  const long long hh = monomial_count(static_cast<int>(X.cols()), par.degree);
  if (hh < 1 || hh > 2000)
    throw Error("degree " + std::to_string(par.degree) + " in " + std::to_string(X.cols()) +
                " columns gives more than 2000 monomials (P would be " +
                (hh < 1 ? std::string("too large") : std::to_string(2 * hh) + " x " +
                 std::to_string(2 * hh)) + ")");
  S.h = static_cast<int>(hh);
  S.P = Mat::Identity(2 * S.h, 2 * S.h);
  S.single = par.single;
  S.G = std::make_unique<TklGram>(X, par.degree, lower, upper, threads, cb, par.single);
  double mean_diag;
  if (S.single) {
    // K(I) from the box matrix, never in double precision (the point is the memory)
    S.Kf.resize(n, n);
    S.G->start_kernel(S.Kf.data());
    mean_diag = S.Kf.diagonal().cast<double>().mean();
  } else {
    S.K.resize(n, n);
    const KernelPtr k0 = make_tessellated_kernel(S.P, par.degree, lower, upper);
    if (par.backend)
      par.backend->kernel_matrix(*k0, X, X, S.K, threads, interrupts_only(cb));
    else
      k0->block(X, X, S.K, threads, interrupts_only(cb));
    mean_diag = S.K.diagonal().mean();
  }
  S.q = 2.0 * S.h;
  if (par.normalize) {
    const double s = mean_diag;
    if (!(s > 0) || !std::isfinite(s))
      throw Error("the start kernel's mean diagonal is not a positive finite number");
    S.scale = s;
    if (S.single) S.Kf /= static_cast<float>(s);
    else S.K /= s;
    S.P /= s;
    S.q /= s;
    mean_diag /= s;
  }
  // The ridge of the optimisation's solves (none without iterations): with it the SVM's
  // maximiser is unique and OPT_A smooth in P; the final SVM is solved on K(P) itself.
  S.mu = par.maxit > 0 ? par.ridge * mean_diag : 0.0;
  S.seconds = seconds_since(t0);
  cb.check();
  return S;
}

// Exponentiated gradient in the span of the training rows' monomials. The gradient C lies in
// U = span{[z_i; 0], [0; z_i]} (z_i the monomials of training row i; every block of C is
// Z'(...)Z), so from a P of the form alpha I + Q (W - alpha I) Q' (Q an orthonormal basis of
// U with r columns, W r x r) the step keeps that form:
//   log P - t C = log(alpha) (I - Q Q') + Q (log W - t Q'C Q) Q',
// and C's eigenvalues are those of Q'C Q with zeros. Where r is well below 2h (fewer rows than
// monomials), the step's eigenproblems are r x r instead of 2h x 2h, with the same iterates.
struct TklSubspace {
  Mat Q;             // 2h x r; empty when the step works on all of P
  Mat W;             // Q'P Q
  double alpha = 0;  // P's eigenvalue off U
};

TklSubspace tkl_subspace(const TklGram& G, const Mat& P) {
  TklSubspace sub;
  const int n = G.n(), h = G.h();
  // worth it only where U is at most three quarters of the space
  if (4 * std::min(n, h) > 3 * h) return sub;
  // An orthonormal basis of the row space of Z (n x h): Z'u / sqrt(lambda) over the
  // eigenpairs of Z Z' above 1e-12 of the largest (directions of rows collinear beyond that are
  // left to the part of P off U), made orthonormal to rounding by (B'B)^(-1/2).
  const Mat& Z = G.row_monomials();
  Eigen::SelfAdjointEigenSolver<Mat> ez(Z * Z.transpose());
  if (ez.info() != Eigen::Success) return sub;
  const Vec& lz = ez.eigenvalues();  // increasing
  const double top = lz[n - 1];
  if (!(top > 0) || !std::isfinite(top)) return sub;
  int first = n;
  while (first > 0 && lz[first - 1] > 1e-12 * top) --first;
  const int rz = n - first;
  const int r = 2 * rz;
  if (4 * rz > 3 * h) return sub;
  Mat B = Z.transpose() * ez.eigenvectors().rightCols(rz);
  B *= lz.tail(rz).array().rsqrt().matrix().asDiagonal();
  Eigen::SelfAdjointEigenSolver<Mat> eb(B.transpose() * B);
  if (eb.info() != Eigen::Success || !(eb.eigenvalues()[0] > 0.5)) return sub;
  B = B * (eb.eigenvectors() * eb.eigenvalues().array().rsqrt().matrix().asDiagonal() *
           eb.eigenvectors().transpose());
  Mat Q = Mat::Zero(2 * h, r);
  Q.block(0, 0, h, rz) = B;
  Q.block(h, rz, h, rz) = B;
  Mat W = Q.transpose() * P * Q;
  W = 0.5 * (W + W.transpose());
  const double alpha = (P.trace() - W.trace()) / (2 * h - r);
  // P must have the form (the start I / s, or where a run on these rows left it)
  Mat R = P - Q * W * Q.transpose();
  R.diagonal().array() -= alpha;
  R.noalias() += alpha * (Q * Q.transpose());
  if (!(R.norm() <= 1e-9 * P.norm())) return sub;
  sub.Q = std::move(Q);
  sub.W = std::move(W);
  sub.alpha = alpha;
  return sub;
}

// The Frank-Wolfe loop from the state's P and K (left at the result's P and K(P)); the first
// solve is warm-started from `warm` when given (a path of increasing costs keeps the last
// solution feasible), cold otherwise.
TklResult tkl_run(TklState& S, const TklParams& par, const Callbacks& cb, const SolveFn& solve,
                  const std::vector<BinaryMachine>* warm,
                  std::vector<BinaryMachine>* first = nullptr) {
  const int n = S.G->n();
  const int h = S.h;
  const double q = S.q, mu = S.mu;
  TklGram& G = *S.G;
  Mat& K = S.K;
  Eigen::MatrixXf& Kf = S.Kf;
  Mat& P = S.P;
  const bool single = S.single;
  // (1 - eta) K + eta K(q v v') (+ mu I) as rows on demand, and formed in place of K
  const auto blended = [&](const Vec& dir, double eta, double ridge) {
    return single ? TrainingKernel(G.blended_rows(dir, q, eta, Kf.data(), ridge))
                  : TrainingKernel(G.blended_rows(dir, q, eta, K.data(), ridge));
  };
  TklResult res;
  SvmParams sp = par.svm;
  sp.probability = false;
  auto t0 = std::chrono::steady_clock::now();
  Vec e1 = Vec::Zero(2 * h);
  e1[0] = 1.0;
  const auto current = [&]() {
    return mu > 0 || single ? blended(e1, 0.0, mu) : TrainingKernel(K.data(), n);
  };
  AlphaStep cur = solve(current(), warm, sp);
  if (first) *first = cur.machines;
  res.seconds_first = seconds_since(t0);
  res.iter_first = cur.iter;

  double best_lower = -std::numeric_limits<double>::infinity();
  // The gradient at the current P over the support vectors of every machine, the P-step's
  // direction v and the duality gap; fills the row's objective, gap and bound.
  Vec v;
  Mat Cg;                 // the symmetrised gradient C
  double lmin = 0, cmax = 0;  // its smallest and largest eigenvalues
  TklSubspace sub;
  if (par.mirror && par.subspace) sub = tkl_subspace(G, P);
  const bool reduced = sub.Q.size() > 0;
  const int r = reduced ? static_cast<int>(sub.Q.cols()) : 0;
  Mat Cr;                 // Q'C Q (reduced)
  auto assess = [&](TklIteration& row) {
    std::vector<std::vector<int>> rows;
    std::vector<std::vector<double>> w;
    for (const BinaryMachine& m : cur.machines) {
      rows.push_back(m.sv);
      w.push_back(m.coef);
    }
    const Mat C = G.gradient(rows, w);
    Cg = 0.5 * (C + C.transpose());
    if (reduced) {
      Cr = sub.Q.transpose() * (Cg * sub.Q);
      Cr = 0.5 * (Cr + Cr.transpose());
      Eigen::SelfAdjointEigenSolver<Mat> es(Cr, Eigen::EigenvaluesOnly);
      if (es.info() != Eigen::Success) throw Error("the eigenproblem of the P-step failed");
      lmin = std::min(es.eigenvalues()[0], 0.0);
      cmax = std::max(es.eigenvalues()[r - 1], 0.0);
    } else {
      // (exponentiated gradient needs C's extreme eigenvalues only, Frank-Wolfe the direction)
      Eigen::SelfAdjointEigenSolver<Mat> es(
          Cg, par.mirror ? Eigen::EigenvaluesOnly : Eigen::ComputeEigenvectors);
      if (es.info() != Eigen::Success) throw Error("the eigenproblem of the P-step failed");
      if (!par.mirror) v = es.eigenvectors().col(0);
      lmin = es.eigenvalues()[0];
      cmax = es.eigenvalues()[es.eigenvalues().size() - 1];
    }
    row.objective = cur.value;
    row.gap = C.cwiseProduct(P).sum() - q * lmin;  // trace(C P) - q lambda_min
    best_lower = std::max(best_lower, cur.value - row.gap);
    row.lower = best_lower;
  };
  double step_sum = 0;
  int steps = 0;
  // exponentiated gradient: the accepted step of the last iteration (none yet: -1), and the
  // eigendecomposition of P (known from the accepted trial after the first iteration)
  double t_last = -1;
  Mat p_vectors;
  Vec p_values;
  // One trial of a line search: the SVM on `kernel`, its time and iterations in the row.
  const auto try_kernel = [&](TrainingKernel kernel, const std::vector<BinaryMachine>* from,
                              TklIteration& row) {
    const auto t0 = std::chrono::steady_clock::now();
    AlphaStep a = solve(std::move(kernel), from, sp);
    row.seconds_alpha += seconds_since(t0);
    row.solves += 1;
    row.svm_iter += a.iter;
    return a;
  };
  res.stop = "maxit";
  for (int it = 0;; ++it) {
    cb.check();
    cb.report(par.maxit > 0 ? static_cast<double>(it) / par.maxit : 1.0);
    TklIteration row;
    auto tp = std::chrono::steady_clock::now();
    assess(row);
    row.seconds_p = seconds_since(tp);
    const bool small_gap = row.gap <= par.tol * std::max(std::fabs(cur.value), 1e-12);
    if (small_gap || it >= par.maxit) {
      res.stop = small_gap ? "gap" : "maxit";
      res.trace.push_back(row);
      break;
    }
    if (par.mirror) {
      // Exponentiated gradient: P(t) = q exp(log P - t C) / trace, t from twice the last
      // accepted step (1 / ||C|| at first), divided by 4 until OPT_A decreases.
      // (reduced: the eigendecomposition is W's, and P's eigenvalue off U is alpha)
      if (p_values.size() == 0) {
        Eigen::SelfAdjointEigenSolver<Mat> ep(reduced ? sub.W : P);
        if (ep.info() != Eigen::Success) throw Error("the eigenproblem of P failed");
        p_vectors = ep.eigenvectors();
        p_values = ep.eigenvalues();
      }
      const Vec lam = p_values.cwiseMax(1e-12 * q);
      const Mat logP = p_vectors * lam.array().log().matrix().asDiagonal() *
                       p_vectors.transpose();
      const double log_alpha = reduced ? std::log(std::max(sub.alpha, 1e-12 * q)) : 0.0;
      const double cnorm = std::max(std::fabs(lmin), std::fabs(cmax));
      if (!(cnorm > 0) || !std::isfinite(cnorm)) {
        res.stop = "no decrease";
        res.trace.push_back(row);
        break;
      }
      double t = t_last > 0 ? 2.0 * t_last : 1.0 / cnorm;
      const double t_floor = 1e-9 * t;
      bool accepted = false;
      AlphaStep trial;
      Mat Pt;
      Eigen::SelfAdjointEigenSolver<Mat> et;
      Vec mu_t;  // the eigenvalues of the trial's P (W's, reduced; the eigenvectors are et's)
      double alpha_t = 0;
      while (t >= t_floor) {
        cb.check();
        et.compute(logP - t * (reduced ? Cr : Cg));
        if (et.info() != Eigen::Success) throw Error("the eigenproblem of the P-step failed");
        const Vec ev = et.eigenvalues();
        const double top = reduced ? std::max(ev.maxCoeff(), log_alpha) : ev.maxCoeff();
        mu_t = (ev.array() - top).exp().matrix();
        if (reduced) {
          alpha_t = std::exp(log_alpha - top);
          const double scale = q / (mu_t.sum() + alpha_t * (2 * h - r));
          mu_t *= scale;
          alpha_t *= scale;
          Mat D = et.eigenvectors() * mu_t.asDiagonal() * et.eigenvectors().transpose();
          D.diagonal().array() -= alpha_t;
          Pt = sub.Q * D * sub.Q.transpose();
          Pt.diagonal().array() += alpha_t;
        } else {
          mu_t *= q / mu_t.sum();
          Pt = et.eigenvectors() * mu_t.asDiagonal() * et.eigenvectors().transpose();
        }
        Pt = 0.5 * (Pt + Pt.transpose());
        trial = try_kernel(TrainingKernel(G.form_rows(Pt, mu)),
                           par.warm ? &cur.machines : nullptr, row);
        if (trial.value < cur.value) {
          accepted = true;
          break;
        }
        t /= 4.0;
      }
      if (!accepted) {
        res.stop = "no decrease";
        res.trace.push_back(row);
        break;
      }
      row.step = t;
      res.trace.push_back(row);
      P = Pt;
      p_vectors = et.eigenvectors();
      p_values = mu_t;
      sub.alpha = alpha_t;
      cur = std::move(trial);
      t_last = t;
      continue;
    }
    // Line search on OPT_A along P + eta (P* - P).
    const double eta0 = steps > 0 ? step_sum / steps : 1.0;
    double eta = eta0;
    bool accepted = false;
    AlphaStep trial;
    while (eta >= 1e-3 * eta0) {
      cb.check();
      // At eta = 1 the trial kernel is K(P*) alone and the current alpha carries no
      // information about it (a cold start was faster in our runs); otherwise warm.
      trial = try_kernel(blended(v, eta, mu), par.warm && eta < 1.0 ? &cur.machines : nullptr,
                         row);
      if (trial.value < cur.value) {
        accepted = true;
        break;
      }
      eta /= 5.0;
    }
    if (!accepted) {
      res.stop = "no decrease";
      res.trace.push_back(row);
      break;
    }
    row.step = eta;
    tp = std::chrono::steady_clock::now();
    if (single) G.blend_rank_one(v, q, eta, Kf.data(), Kf.data());
    else G.blend_rank_one(v, q, eta, K.data(), K.data());
    row.seconds_p += seconds_since(tp);
    res.trace.push_back(row);
    P = (1.0 - eta) * P + (eta * q) * (v * v.transpose());
    P = 0.5 * (P + P.transpose());
    cur = std::move(trial);
    step_sum += eta;
    ++steps;
    if (eta < par.tol / 100.0) {
      // The state after the step still gets its row (objective, gap, bound).
      res.stop = "step";
      TklIteration last;
      assess(last);
      res.trace.push_back(last);
      break;
    }
  }
  if (par.mirror && t_last > 0) {
    // K(P) at the result's P (the trials were rows on demand); without an accepted step the
    // state's K is K(P) already
    if (single) G.form(P, Kf.data());
    else G.form(P, K.data());
  }
  if (par.svm.probability || mu > 0) {
    sp.probability = par.svm.probability;
    cur = solve(single ? blended(e1, 0.0, 0.0) : TrainingKernel(K.data(), n), &cur.machines,
                sp);
  }
  res.P = P;
  res.q = q;
  res.scale = S.scale;
  res.subspace = r;
  res.machines = std::move(cur.machines);
  return res;
}

TklResult tkl_loop(CMatRef X, const Vec& lower, const Vec& upper, const TklParams& par,
                   const Callbacks& cb, const SolveFn& solve) {
  TklState S = tkl_start(X, lower, upper, par, cb);
  TklResult res = tkl_run(S, par, cb, solve, nullptr);
  res.seconds_start = S.seconds;
  return res;
}

std::vector<TklResult> tkl_path_loop(CMatRef X, const Vec& lower, const Vec& upper,
                                     const TklParams& par, const std::vector<double>& costs,
                                     const Callbacks& cb, const SolveFn& solve) {
  if (costs.empty()) throw Error("the path needs at least one cost");
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (!(costs[i] > 0) || !std::isfinite(costs[i]))
      throw Error("the path's costs must be positive numbers");
    if (i > 0 && !(costs[i] > costs[i - 1])) throw Error("the path's costs must increase");
  }
  TklState S = tkl_start(X, lower, upper, par, cb);
  // Every cost starts from the start P (a start from the last cost's P, whose mass sits on a
  // few directions, took Frank-Wolfe more iterations than it saved), so the start kernel is
  // kept; its SVM solution at one cost warm-starts the first solve at the next.
  const Mat K0 = S.K, P0 = S.P;
  const Eigen::MatrixXf Kf0 = S.Kf;
  std::vector<TklResult> out;
  out.reserve(costs.size());
  std::vector<BinaryMachine> first, next;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    TklParams pc = par;
    pc.svm.cost = costs[i];
    if (i > 0) {
      S.K = K0;
      S.Kf = Kf0;
      S.P = P0;
    }
    out.push_back(tkl_run(S, pc, cb, solve, i > 0 ? &first : nullptr, &next));
    first.swap(next);
    if (i == 0) out.back().seconds_start = S.seconds;
  }
  return out;
}

}  // namespace

TklGram::TklGram(CMatRef X, int degree, const Vec& lower, const Vec& upper, int threads,
                 const Callbacks& cb, bool single)
    : threads_(clamp_threads(threads)), single_(single) {
  const Eigen::Index n = X.rows(), d = X.cols();
  if (lower.size() != d || upper.size() != d) throw Error("the box needs one bound per column");
  Xc_.resize(n, d);
  V_ = 1.0;
  B_ = Vec::Ones(n);
  for (Eigen::Index i = 0; i < d; ++i) {
    if (!(lower[i] < upper[i])) throw Error("the box must have lower < upper in every column");
    for (Eigen::Index k = 0; k < n; ++k)
      Xc_(k, i) = std::min(upper[i], std::max(lower[i], X(k, i)));
    V_ *= upper[i] - lower[i];
    B_.array() *= upper[i] - Xc_.col(i).array();
  }
  Zm_ = monomials(Xc_, degree);
  if (single_) {
    Af_.resize(n, n);
    fill_box(Af_.data(), upper, cb);
  } else {
    A_.resize(n, n);
    fill_box(A_.data(), upper, cb);
  }
}

// A(x_k, x_l) = prod_i (b_i - max(x_ki, x_li)), accumulated in double precision per tile
// column and stored as TA.
template <typename TA>
void TklGram::fill_box(TA* A, const Vec& upper, const Callbacks& cb) {
  const Eigen::Index n = Xc_.rows(), d = Xc_.cols();
  for_each_tile(n, n, threads_, interrupts_only(cb),
                [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
    std::vector<double> acc(static_cast<std::size_t>(nr));
    for (Eigen::Index j = c0; j < c0 + nc; ++j) {
      double* a = acc.data();
      for (Eigen::Index k = 0; k < nr; ++k) a[k] = 1.0;
      for (Eigen::Index i = 0; i < d; ++i) {
        const double b = upper[i], zj = Xc_(j, i);
        const double* xi = Xc_.col(i).data() + r0;
        for (Eigen::Index k = 0; k < nr; ++k) a[k] *= b - (xi[k] > zj ? xi[k] : zj);
      }
      TA* out = A + static_cast<std::size_t>(j) * n + r0;
      for (Eigen::Index k = 0; k < nr; ++k) out[k] = static_cast<TA>(a[k]);
    }
  });
}

namespace {

// The factors of K(P) on some rows: Z M1, Z M2, Z P22 and Z (m x h each, in the notation of
// TklGram::form()) and B.
struct FormFactors {
  Mat Z1, Z2, Z3, Zm;
  Vec B;
};

FormFactors form_factors(const Mat& Zm, const Vec& B, const Mat& P) {
  const Eigen::Index h = Zm.cols();
  if (P.rows() != 2 * h || P.cols() != 2 * h) throw Error("P must be 2h x 2h");
  const Mat P11 = P.topLeftCorner(h, h), P12 = P.topRightCorner(h, h),
            P21 = P.bottomLeftCorner(h, h), P22 = P.bottomRightCorner(h, h);
  EigenSerial serial(true);  // on the calling thread; the same factors at any thread count
  FormFactors f;
  f.Z1.noalias() = Zm * (P11 - P12 - P21 + P22);
  f.Z2.noalias() = Zm * (P12 - P22);
  f.Z3.noalias() = Zm * P22;
  f.Zm = Zm;
  f.B = B;
  return f;
}

// Rows of K(P) + mu I on a subset of the training rows (global indices `rows`, factors
// restricted to them), computed when asked: four products of an m x h factor with a vector.
template <typename T>
class FormRows final : public KernelRows {
 public:
  FormRows(const T* A, Eigen::Index n, std::shared_ptr<const FormFactors> f, double V,
           double mu, std::vector<int> rows)
      : A_(A), n_(n), f_(std::move(f)), V_(V), mu_(mu), rows_(std::move(rows)) {}
  int size() const override { return static_cast<int>(rows_.size()); }
  double diag(int p) const override { return at(p, p); }
  double value(int i, int j) const override { return at(i, j); }
  void row(int p, float* out, int) const override {
    const FormFactors& f = *f_;
    const int l = rows_[p];
    const Vec zl = f.Zm.row(p).transpose();
    const Vec u1 = f.Z1 * zl, u2 = f.Z2 * zl, u4 = f.Z3 * zl;
    const Vec u3 = f.Zm * f.Z2.row(p).transpose();
    const T* Al = A_ + static_cast<std::size_t>(l) * n_;
    const double bl = f.B[p];
    const int m = size();
    for (int j = 0; j < m; ++j) {
      const double v = static_cast<double>(Al[rows_[j]]) * u1[j] + f.B[j] * u2[j] + bl * u3[j] +
                       V_ * u4[j];
      out[j] = static_cast<float>(v + (j == p ? mu_ : 0.0));
    }
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int) const override {
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t i = 0; i < rows.size(); ++i) out(i, j) = at(rows[i], cols[j]);
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    const FormFactors& f = *f_;
    const Eigen::Index m = static_cast<Eigen::Index>(rows.size()), h = f.Zm.cols();
    auto g = std::make_shared<FormFactors>();
    g->Z1.resize(m, h);
    g->Z2.resize(m, h);
    g->Z3.resize(m, h);
    g->Zm.resize(m, h);
    g->B.resize(m);
    std::vector<int> r(rows.size());
    for (Eigen::Index i = 0; i < m; ++i) {
      const int p = rows[i];
      r[i] = rows_[p];
      g->Z1.row(i) = f.Z1.row(p);
      g->Z2.row(i) = f.Z2.row(p);
      g->Z3.row(i) = f.Z3.row(p);
      g->Zm.row(i) = f.Zm.row(p);
      g->B[i] = f.B[p];
    }
    return std::unique_ptr<KernelRows>(new FormRows(A_, n_, std::move(g), V_, mu_, std::move(r)));
  }

 private:
  // positions in this subset
  double at(int i, int j) const {
    const FormFactors& f = *f_;
    const double Akl = static_cast<double>(A_[static_cast<std::size_t>(rows_[j]) * n_ + rows_[i]]);
    return Akl * f.Z1.row(i).dot(f.Zm.row(j)) + f.B[i] * f.Z2.row(i).dot(f.Zm.row(j)) +
           f.B[j] * f.Zm.row(i).dot(f.Z2.row(j)) + V_ * f.Z3.row(i).dot(f.Zm.row(j)) +
           (i == j ? mu_ : 0.0);
  }
  const T* A_;
  Eigen::Index n_;
  std::shared_ptr<const FormFactors> f_;
  double V_, mu_;
  std::vector<int> rows_;
};

}  // namespace

template <typename T>
void TklGram::form_impl(const Mat& P, T* out) const {
  const Eigen::Index n = Zm_.rows();
  const FormFactors f = form_factors(Zm_, B_, P);
  const T* A;
  if constexpr (std::is_same<T, float>::value) A = Af_.data();
  else A = A_.data();
  const double V = V_;
  Callbacks none;
  for_each_tile(n, n, threads_, none,
                [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
    const auto Zc = Zm_.middleRows(c0, nc).transpose();
    const Mat G1 = f.Z1.middleRows(r0, nr) * Zc;
    const Mat G2 = f.Z2.middleRows(r0, nr) * Zc;
    const Mat G2t = Zm_.middleRows(r0, nr) * f.Z2.middleRows(c0, nc).transpose();
    const Mat G3 = f.Z3.middleRows(r0, nr) * Zc;
    for (Eigen::Index c = 0; c < nc; ++c) {
      const Eigen::Index l = c0 + c;
      const T* Al = A + static_cast<std::size_t>(l) * n;
      T* ol = out + static_cast<std::size_t>(l) * n;
      const double bl = B_[l];
      for (Eigen::Index r = 0; r < nr; ++r) {
        const Eigen::Index k = r0 + r;
        ol[k] = static_cast<T>(static_cast<double>(Al[k]) * G1(r, c) + B_[k] * G2(r, c) +
                               bl * G2t(r, c) + V * G3(r, c));
      }
    }
  });
}

void TklGram::form(const Mat& P, double* out) const {
  if (single_) throw Error("the box matrix is single precision: form a float matrix");
  form_impl<double>(P, out);
}

void TklGram::form(const Mat& P, float* out) const {
  if (!single_) throw Error("the box matrix is double precision: form a double matrix");
  form_impl<float>(P, out);
}

std::unique_ptr<KernelRows> TklGram::form_rows(const Mat& P, double mu) const {
  auto f = std::make_shared<FormFactors>(form_factors(Zm_, B_, P));
  std::vector<int> rows(n());
  for (int i = 0; i < n(); ++i) rows[i] = i;
  if (single_)
    return std::unique_ptr<KernelRows>(
        new FormRows<float>(Af_.data(), n(), std::move(f), V_, mu, std::move(rows)));
  return std::unique_ptr<KernelRows>(
      new FormRows<double>(A_.data(), n(), std::move(f), V_, mu, std::move(rows)));
}

void TklGram::start_kernel(float* out) const {
  if (!single_) throw Error("start_kernel(float*) needs the single precision box matrix");
  const Eigen::Index n = Zm_.rows();
  const double V = V_;
  Callbacks none;
  for_each_tile(n, n, threads_, none,
                [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
    const Mat G = Zm_.middleRows(r0, nr) * Zm_.middleRows(c0, nc).transpose();
    for (Eigen::Index l = c0; l < c0 + nc; ++l) {
      const float* Al = Af_.col(l).data();
      float* ol = out + static_cast<std::size_t>(l) * n;
      const double bl = B_[l];
      for (Eigen::Index k = r0; k < r0 + nr; ++k)
        ol[k] = static_cast<float>(G(k - r0, l - c0) *
                                   (2.0 * static_cast<double>(Al[k]) - B_[k] - bl + V));
    }
  });
}

namespace {

// Entry (k, l) of (1 - eta) K + eta K(q v v') (a = 1 - eta, e = eta q): the one expression
// both the formed matrix and the on-demand rows use, so they agree bitwise.
inline double blend_value(double a, double e, double V, double Kkl, double Akl, double sk,
                          double sl, double tk, double tl, double bsk, double bsl) {
  return a * Kkl + e * (sk * sl * Akl + bsk * tl + tk * bsl + V * tk * tl);
}

// The rank-one form's vectors s = Z (v1 - v2), t = Z v2 and B .* s.
struct RankOne {
  Vec s, t, bs;
};

// Rows of the blended matrix on a subset of the training rows, computed when asked; K and the
// box matrix A stored as T (double or float), the blend computed in double precision.
template <typename T>
class BlendRows final : public KernelRows {
 public:
  BlendRows(const T* K, const T* A, Eigen::Index n, std::shared_ptr<const RankOne> r, double a,
            double e, double V, double mu, std::vector<int> rows)
      : K_(K), A_(A), r_(std::move(r)), a_(a), e_(e), V_(V), mu_(mu), n_(n),
        rows_(std::move(rows)) {}
  int size() const override { return static_cast<int>(rows_.size()); }
  double diag(int p) const override { return at(rows_[p], rows_[p]); }
  double value(int i, int j) const override { return at(rows_[i], rows_[j]); }
  void row(int p, float* out, int) const override {
    const int l = rows_[p];
    const T* Kl = K_ + static_cast<std::size_t>(l) * n_;
    const T* Al = A_ + static_cast<std::size_t>(l) * n_;
    const double *s = r_->s.data(), *t = r_->t.data(), *bs = r_->bs.data();
    const double sl = s[l], tl = t[l], bsl = bs[l];
    const int m = size();
    for (int j = 0; j < m; ++j) {
      const int k = rows_[j];
      out[j] = static_cast<float>(blend_value(a_, e_, V_, Kl[k], Al[k], s[k], sl, t[k], tl,
                                              bs[k], bsl) +
                                  (k == l ? mu_ : 0.0));
    }
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int) const override {
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t i = 0; i < rows.size(); ++i) out(i, j) = at(rows_[rows[i]], rows_[cols[j]]);
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    std::vector<int> r(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) r[i] = rows_[rows[i]];
    return std::unique_ptr<KernelRows>(
        new BlendRows(K_, A_, n_, r_, a_, e_, V_, mu_, std::move(r)));
  }

 private:
  double at(int k, int l) const {
    const RankOne& r = *r_;
    const std::size_t kl = static_cast<std::size_t>(l) * n_ + k;
    return blend_value(a_, e_, V_, K_[kl], A_[kl], r.s[k], r.s[l], r.t[k], r.t[l], r.bs[k],
                       r.bs[l]) + (k == l ? mu_ : 0.0);
  }
  const T* K_;
  const T* A_;
  std::shared_ptr<const RankOne> r_;
  double a_, e_, V_, mu_;
  Eigen::Index n_;
  std::vector<int> rows_;
};

}  // namespace

template <typename T>
std::unique_ptr<KernelRows> TklGram::rows_impl(const Vec& v, double q, double eta, const T* K,
                                               double mu) const {
  const int h = this->h();
  if (v.size() != 2 * h) throw Error("v must have length 2h");
  auto r = std::make_shared<RankOne>();
  r->s = Zm_ * (v.head(h) - v.tail(h));
  r->t = Zm_ * v.tail(h);
  r->bs = B_.cwiseProduct(r->s);
  std::vector<int> rows(n());
  for (int i = 0; i < n(); ++i) rows[i] = i;
  const T* A;
  if constexpr (std::is_same<T, float>::value) A = Af_.data();
  else A = A_.data();
  return std::unique_ptr<KernelRows>(new BlendRows<T>(K, A, n(), std::move(r), 1.0 - eta,
                                                      eta * q, V_, mu, std::move(rows)));
}

std::unique_ptr<KernelRows> TklGram::blended_rows(const Vec& v, double q, double eta,
                                                  const double* K, double mu) const {
  if (single_) throw Error("the box matrix is single precision: blend a float matrix");
  return rows_impl<double>(v, q, eta, K, mu);
}

std::unique_ptr<KernelRows> TklGram::blended_rows(const Vec& v, double q, double eta,
                                                  const float* K, double mu) const {
  if (!single_) throw Error("the box matrix is double precision: blend a double matrix");
  return rows_impl<float>(v, q, eta, K, mu);
}

template <typename T>
void TklGram::blend_impl(const Vec& v, double q, double eta, const T* K, T* out) const {
  const int h = this->h();
  if (v.size() != 2 * h) throw Error("v must have length 2h");
  const Eigen::Index n = Zm_.rows();
  const Vec s = Zm_ * (v.head(h) - v.tail(h));
  const Vec t = Zm_ * v.tail(h);
  const Vec bs = B_.cwiseProduct(s);
  const double a = 1.0 - eta, e = eta * q, V = V_;
  const double *sp = s.data(), *tp = t.data(), *bp = bs.data();
  const T* A;
  if constexpr (std::is_same<T, float>::value) A = Af_.data();
  else A = A_.data();
  Callbacks none;
  for_each_tile(n, n, threads_, none,
                [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
    for (Eigen::Index l = c0; l < c0 + nc; ++l) {
      const double sl = sp[l], tl = tp[l], bsl = bp[l];
      const T* Al = A + l * n;
      const T* Kl = K + l * n;
      T* ol = out + l * n;
      for (Eigen::Index k = r0; k < r0 + nr; ++k)
        ol[k] = static_cast<T>(blend_value(a, e, V, Kl[k], Al[k], sp[k], sl, tp[k], tl, bp[k],
                                           bsl));
    }
  });
}

void TklGram::blend_rank_one(const Vec& v, double q, double eta, const double* K,
                             double* out) const {
  if (single_) throw Error("the box matrix is single precision: blend a float matrix");
  blend_impl<double>(v, q, eta, K, out);
}

void TklGram::blend_rank_one(const Vec& v, double q, double eta, const float* K,
                             float* out) const {
  if (!single_) throw Error("the box matrix is double precision: blend a double matrix");
  blend_impl<float>(v, q, eta, K, out);
}

Mat TklGram::gradient(const std::vector<std::vector<int>>& rows,
                      const std::vector<std::vector<double>>& w) const {
  const int h = this->h();
  Mat C11 = Mat::Zero(h, h), C12 = Mat::Zero(h, h), C22 = Mat::Zero(h, h);
  EigenSerial serial(true);
  for (std::size_t mi = 0; mi < rows.size(); ++mi) {
    const std::vector<int>& sv = rows[mi];
    const Eigen::Index m = static_cast<Eigen::Index>(sv.size());
    if (m == 0) continue;
    if (w[mi].size() != sv.size()) throw Error("gradient: rows and weights differ in length");
    Mat U(m, h);
    Vec wb(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      U.row(i) = w[mi][i] * Zm_.row(sv[i]);
      wb[i] = w[mi][i] * B_[sv[i]];
    }
    // AU = A(sv, sv) U, in fixed row blocks.
    Mat AU(m, h);
    const Eigen::Index nb = (m + kTileRows - 1) / kTileRows;
    const int nt = nb > 1 ? threads_ : 1;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
#endif
    for (Eigen::Index b = 0; b < nb; ++b) {
      const Eigen::Index r0 = b * kTileRows, nr = std::min(kTileRows, m - r0);
      Mat Ab(nr, m);
      for (Eigen::Index j = 0; j < m; ++j) {
        if (single_) {
          const float* Aj = Af_.col(sv[j]).data();
          for (Eigen::Index k = 0; k < nr; ++k) Ab(k, j) = Aj[sv[r0 + k]];
        } else {
          const double* Aj = A_.col(sv[j]).data();
          for (Eigen::Index k = 0; k < nr; ++k) Ab(k, j) = Aj[sv[r0 + k]];
        }
      }
      AU.middleRows(r0, nr).noalias() = Ab * U;
    }
    const Mat T = U.transpose() * AU;
    Vec u1 = Vec::Zero(h), ub = Vec::Zero(h);
    for (Eigen::Index i = 0; i < m; ++i) {
      u1 += w[mi][i] * Zm_.row(sv[i]).transpose();
      ub += wb[i] * Zm_.row(sv[i]).transpose();
    }
    C11 += T;
    C12 += ub * u1.transpose() - T;
    C22 += V_ * u1 * u1.transpose() - ub * u1.transpose() - u1 * ub.transpose() + T;
  }
  Mat C(2 * h, 2 * h);
  C.topLeftCorner(h, h) = -0.5 * C11;
  C.topRightCorner(h, h) = -0.5 * C12;
  C.bottomLeftCorner(h, h) = -0.5 * C12.transpose();
  C.bottomRightCorner(h, h) = -0.5 * C22;
  return C;
}

namespace {

SolveFn classify_solver(const std::vector<int>& y, int k, const std::vector<double>& weight,
                        int n, const Callbacks& cb) {
  return [&y, k, &weight, n, &cb](const TrainingKernel& TK,
                                  const std::vector<BinaryMachine>* warm, const SvmParams& sp) {
    std::vector<std::vector<double>> w0;
    if (warm) {
      for (const BinaryMachine& m : *warm) {
        std::vector<double> v(n, 0.0);
        for (std::size_t s = 0; s < m.sv.size(); ++s) v[m.sv[s]] = m.coef[s];
        w0.push_back(std::move(v));
      }
    }
    return make_step(svm_classify(TK, y, k, weight, sp, w0, interrupts_only(cb)));
  };
}

SolveFn regress_solver(const std::vector<double>& z, int n, const Callbacks& cb) {
  return [&z, n, &cb](const TrainingKernel& TK, const std::vector<BinaryMachine>* warm,
                      const SvmParams& sp) {
    std::vector<double> w0;
    if (warm && !warm->empty()) {
      w0.assign(n, 0.0);
      const BinaryMachine& m = (*warm)[0];
      for (std::size_t s = 0; s < m.sv.size(); ++s) w0[m.sv[s]] = m.coef[s];
    }
    std::vector<BinaryMachine> out(1, svm_regress(TK, z, sp, w0, interrupts_only(cb)));
    return make_step(std::move(out));
  };
}

}  // namespace

TklResult tkl_classify(CMatRef X, const std::vector<int>& y, int k,
                       const std::vector<double>& weight, const Vec& lower, const Vec& upper,
                       const TklParams& par, const Callbacks& cb) {
  const int n = static_cast<int>(X.rows());
  if (static_cast<int>(y.size()) != n) throw Error("labels and rows differ in number");
  return tkl_loop(X, lower, upper, par, cb, classify_solver(y, k, weight, n, cb));
}

TklResult tkl_regress(CMatRef X, const std::vector<double>& z, const Vec& lower,
                      const Vec& upper, const TklParams& par, const Callbacks& cb) {
  const int n = static_cast<int>(X.rows());
  if (static_cast<int>(z.size()) != n) throw Error("response and rows differ in number");
  return tkl_loop(X, lower, upper, par, cb, regress_solver(z, n, cb));
}

std::vector<TklResult> tkl_classify_path(CMatRef X, const std::vector<int>& y, int k,
                                         const std::vector<double>& weight, const Vec& lower,
                                         const Vec& upper, const TklParams& par,
                                         const std::vector<double>& costs, const Callbacks& cb) {
  const int n = static_cast<int>(X.rows());
  if (static_cast<int>(y.size()) != n) throw Error("labels and rows differ in number");
  return tkl_path_loop(X, lower, upper, par, costs, cb, classify_solver(y, k, weight, n, cb));
}

std::vector<TklResult> tkl_regress_path(CMatRef X, const std::vector<double>& z,
                                        const Vec& lower, const Vec& upper, const TklParams& par,
                                        const std::vector<double>& costs, const Callbacks& cb) {
  const int n = static_cast<int>(X.rows());
  if (static_cast<int>(z.size()) != n) throw Error("response and rows differ in number");
  return tkl_path_loop(X, lower, upper, par, costs, cb, regress_solver(z, n, cb));
}

}  // namespace kl
