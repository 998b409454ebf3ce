// Tessellated kernel learning: the learner's rank-one Gram matrices and gradient against the
// kernel object, and the P-step direction against finite differences of the SVM dual.
#include <cmath>

#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/tessellated.hpp"
#include "learners/tkl.hpp"

namespace {

kl::Mat gram(const kl::Mat& P, int q, const kl::Vec& lo, const kl::Vec& hi, const kl::Mat& x) {
  const kl::KernelPtr k = kl::make_tessellated_kernel(P, q, lo, hi);
  kl::Mat K(x.rows(), x.rows());
  k->block(x, x, K, 2, kl::Callbacks());
  return K;
}

double sum_prod(const kl::Mat& a, const kl::Mat& b) { return (a.array() * b.array()).sum(); }

// Columns scaled to [0, 1].
kl::Mat scale01(const kl::Mat& x) {
  kl::Mat out = x;
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const double lo = x.col(j).minCoeff(), hi = x.col(j).maxCoeff();
    out.col(j) = (x.col(j).array() - lo) / (hi - lo);
  }
  return out;
}

kl::SvmParams svm_params(double cost, double tol) {
  kl::SvmParams par;  // kernel_svm()'s defaults otherwise
  par.cost = cost;
  par.epsilon = 0.1;
  par.tol = tol;
  par.cache_mb = 1024;
  par.seed = ct::seed2(1, 1);
  par.threads = 2;
  return par;
}

// The SVM on the precomputed K: classification when y holds class codes (k = 2), else
// regression; the machines of the fit.
std::vector<kl::BinaryMachine> svm(const kl::Mat& K, const std::vector<double>& y, bool classify,
                                   double cost, double tol) {
  const kl::TrainingKernel T(K.data(), static_cast<int>(K.rows()));
  if (classify) {
    std::vector<int> yy(y.begin(), y.end());
    return kl::svm_classify(T, yy, 2, {1.0, 1.0}, svm_params(cost, tol), {}, kl::Callbacks());
  }
  return {kl::svm_regress(T, y, svm_params(cost, tol), {}, kl::Callbacks())};
}

// OPT_A(P): the SVM dual objective at K(P).
double dual_at(const kl::Mat& P, const kl::Mat& xs, const std::vector<double>& y, bool classify,
               double cost, double tol) {
  const kl::Vec lo = kl::Vec::Constant(xs.cols(), -0.1), hi = kl::Vec::Constant(xs.cols(), 1.1);
  double s = 0;
  for (const auto& m : svm(gram(P, 1, lo, hi, xs), y, classify, cost, tol)) s -= m.obj;
  return s;
}

}  // namespace

TEST_CASE("tkl: the learner's rank-one Gram matrices and gradient agree with the kernel object") {
  kl::Rng rng(ct::seed2(2, 1));
  const kl::Mat x = ct::runif(rng, 70, 2);
  const kl::Vec lo = kl::Vec::Constant(2, -0.2), hi = kl::Vec::Constant(2, 1.3);
  for (int q = 0; q <= 2; ++q) {
    const int h = static_cast<int>(kl::monomial_count(2, q));
    const kl::Mat P = ct::crossprod(ct::rnorm(rng, 2 * h, 2 * h)) / h;
    const kl::Mat K = gram(P, q, lo, hi, x);
    kl::Vec v = ct::rnorm_vec(rng, 2 * h);
    v /= v.norm();
    kl::Vec w = ct::rnorm_vec(rng, 70);
    for (Eigen::Index i = 0; i < 70; ++i)
      if (!(rng.uniform() > 0.3)) w[i] = 0;  // some rows have no weight (not support vectors)
    const kl::TklGram G(x, q, lo, hi, 2, kl::Callbacks());
    kl::Mat blended(70, 70);
    G.blend_rank_one(v, 2 * h, 0.35, K.data(), blended.data());
    std::vector<int> rows;
    std::vector<double> vals;
    for (int i = 0; i < 70; ++i)
      if (w[i] != 0) {
        rows.push_back(i);
        vals.push_back(w[i]);
      }
    const kl::Mat C = G.gradient({rows}, {vals});
    const kl::Mat Kstar = gram(2.0 * h * v * v.transpose(), q, lo, hi, x);
    CHECK_EQUAL(blended, kl::Mat(0.65 * K + 0.35 * Kstar), 1e-12);
    // the gradient through the kernel's derivative contraction with E = -w w' / 2
    const kl::KernelPtr k = kl::make_tessellated_kernel(P, q, lo, hi);
    kl::Vec g(k->num_params());
    k->contract_derivatives(x, x, -w * w.transpose() / 2, g, 1, kl::Callbacks());
    CHECK_EQUAL(C, ct::reshape(g, 2 * h, 2 * h), 1e-10);
    CHECK_EQUAL(sum_prod(C, P), -w.dot(K * w) / 2, 1e-10);
    CHECK_LT(ct::sym_eigenvalues(C)[0], 1e-10 * ct::max_abs(C));
  }
}

TEST_CASE("tkl: the single precision algebra agrees with the double precision one") {
  kl::Rng rng(ct::seed2(3, 1));
  const kl::Mat x = ct::runif(rng, 60, 3);
  const kl::Vec lo = kl::Vec::Constant(3, -0.1), hi = kl::Vec::Constant(3, 1.1);
  const int h = static_cast<int>(kl::monomial_count(3, 1));
  const kl::TklGram Gd(x, 1, lo, hi, 2, kl::Callbacks());
  const kl::TklGram Gf(x, 1, lo, hi, 2, kl::Callbacks(), true);
  CHECK(Gf.single());
  // K(I) from the single precision box matrix against the kernel object's double precision
  const kl::Mat K = gram(kl::Mat::Identity(2 * h, 2 * h), 1, lo, hi, x);
  Eigen::MatrixXf Kf(60, 60);
  Gf.start_kernel(Kf.data());
  CHECK_EQUAL(kl::Mat(Kf.cast<double>()), K, 1e-6);
  // a blend, in place, and the same blend as rows on demand
  kl::Vec v = ct::rnorm_vec(rng, 2 * h);
  v /= v.norm();
  kl::Mat Kd = K;
  Gd.blend_rank_one(v, 2 * h, 0.4, Kd.data(), Kd.data());
  Eigen::MatrixXf Kb = Kf;
  Gf.blend_rank_one(v, 2 * h, 0.4, Kb.data(), Kb.data());
  CHECK_EQUAL(kl::Mat(Kb.cast<double>()), Kd, 1e-6);
  const auto rows = Gf.blended_rows(v, 2 * h, 0.4, Kf.data(), 0.25);
  std::vector<float> r(60);
  rows->row(7, r.data(), 1);
  kl::Vec got(60), want(60);
  for (int j = 0; j < 60; ++j) {
    got[j] = static_cast<double>(r[static_cast<std::size_t>(j)]);
    want[j] = Kd(j, 7) + (j == 7 ? 0.25 : 0.0);
  }
  CHECK_EQUAL(got, want, 1e-6);
  // the gradient
  std::vector<int> sv;
  std::vector<double> w;
  for (int i = 0; i < 60; i += 2) {
    sv.push_back(i);
    w.push_back(rng.uniform() - 0.5);
  }
  const kl::Mat Cd = Gd.gradient({sv}, {w}), Cf = Gf.gradient({sv}, {w});
  CHECK_EQUAL(Cf, Cd, 1e-6);
  // a float matrix given to the double algebra (and the reverse) is an error
  CHECK_THROWS(Gd.blended_rows(v, 2 * h, 0.4, Kf.data(), 0.0), kl::Error, "is double precision");
  CHECK_THROWS(Gf.blended_rows(v, 2 * h, 0.4, K.data(), 0.0), kl::Error, "is single precision");
}

TEST_CASE("tkl: K(P) for a general P, formed and as rows on demand, agrees with the kernel object") {
  kl::Rng rng(ct::seed2(5, 1));
  const kl::Mat x = ct::runif(rng, 50, 3);
  const kl::Vec lo = kl::Vec::Constant(3, -0.1), hi = kl::Vec::Constant(3, 1.2);
  for (int q = 0; q <= 2; ++q) {
    const int h = static_cast<int>(kl::monomial_count(3, q));
    const kl::Mat P = ct::crossprod(ct::rnorm(rng, 2 * h, 2 * h)) / h;
    const kl::Mat K = gram(P, q, lo, hi, x);
    const kl::TklGram Gd(x, q, lo, hi, 2, kl::Callbacks());
    const kl::TklGram Gf(x, q, lo, hi, 2, kl::Callbacks(), true);
    kl::Mat Kd(50, 50);
    Gd.form(P, Kd.data());
    CHECK_EQUAL(Kd, K, 1e-12);
    Eigen::MatrixXf Kf(50, 50);
    Gf.form(P, Kf.data());
    CHECK_EQUAL(kl::Mat(Kf.cast<double>()), K, 1e-6);
    // rows on demand with a ridge, on all rows and on a subset (as one pair of classes sees)
    const kl::Mat Kr = K + 0.3 * kl::Mat::Identity(50, 50);
    for (const kl::TklGram* G : {&Gd, &Gf}) {
      const auto rows = G->form_rows(P, 0.3);
      const double tol = G->single() ? 1e-6 : 1e-12;
      std::vector<float> r(50);
      rows->row(11, r.data(), 1);
      kl::Vec got(50);
      for (int j = 0; j < 50; ++j) got[j] = static_cast<double>(r[static_cast<std::size_t>(j)]);
      CHECK_EQUAL(got, kl::Vec(Kr.col(11)), 1e-6);  // rows are single precision either way
      CHECK_EQUAL(rows->diag(4), Kr(4, 4), tol);
      CHECK_EQUAL(rows->value(4, 9), Kr(4, 9), tol);
      const std::vector<int> sub = {30, 2, 17, 44};
      const auto rs = rows->subset(sub);
      std::vector<float> rr(4);
      rs->row(2, rr.data(), 1);
      kl::Vec gs(4), ws(4);
      for (int j = 0; j < 4; ++j) {
        gs[j] = static_cast<double>(rr[static_cast<std::size_t>(j)]);
        ws[j] = Kr(sub[j], 17);
      }
      CHECK_EQUAL(gs, ws, 1e-6);
      kl::Mat blk(2, 3), want(2, 3);
      rs->block({0, 3}, {1, 2, 3}, blk, 1);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) want(i, j) = Kr(sub[i == 0 ? 0 : 3], sub[j + 1]);
      CHECK_EQUAL(blk, want, tol);
    }
  }
}

TEST_CASE("tkl: the P-step direction is the gradient of the dual objective (finite differences)") {
  kl::Rng rng(ct::seed2(5, 1));
  const kl::Mat x = ct::runif(rng, 100, 2, -1, 1);
  const kl::Mat xs = scale01(x);
  std::vector<double> yr(100), yc(100);
  for (int i = 0; i < 100; ++i) {
    yr[static_cast<std::size_t>(i)] = std::sin(3 * x(i, 0)) + x(i, 1);
    // classes "in" (0) and "out" (1), in the order of their levels
    yc[static_cast<std::size_t>(i)] = x.row(i).squaredNorm() < 0.5 ? 0 : 1;
  }
  kl::Mat P = ct::crossprod(ct::rnorm(rng, 6, 6)) + kl::Mat::Identity(6, 6);
  P = 6 * P / P.trace();
  const double lmin = ct::sym_eigenvalues(P).minCoeff();
  const kl::Vec lo = kl::Vec::Constant(2, -0.1), hi = kl::Vec::Constant(2, 1.1);
  const kl::Mat K = gram(P, 1, lo, hi, xs);
  for (bool classify : {false, true}) {
    const std::vector<double>& y = classify ? yc : yr;
    const kl::BinaryMachine s = svm(K, y, classify, 2, 1e-10)[0];
    std::vector<int> rows = s.sv;
    const kl::TklGram G(xs, 1, lo, hi, 1, kl::Callbacks());
    const kl::Mat C = G.gradient({rows}, {s.coef});
    for (int r = 0; r < 2; ++r) {
      kl::Mat D = ct::rnorm(rng, 6, 6);
      D = kl::Mat((D + D.transpose()) / 2);
      // P +- e D stays positive definite; the SVM's kernel rows are single precision, so the
      // step is not tiny
      D = D / ct::sym_eigenvalues(D).cwiseAbs().maxCoeff() * lmin;
      const double e = 0.1;
      const double fd = (dual_at(P + e * D, xs, y, classify, 2, 1e-10) -
                         dual_at(P - e * D, xs, y, classify, 2, 1e-10)) /
                        (2 * e);
      CHECK_EQUAL(sum_prod(C, D), fd, 5e-3);
    }
  }
}
