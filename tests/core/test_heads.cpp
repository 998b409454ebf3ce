// Linear heads: the multinomial logistic objective against an independent computation, its
// gradient against central differences, and the fit as a stationary point.
#include <cmath>

#include "harness.hpp"
#include "heads/logistic.hpp"
#include "helpers.hpp"

namespace {

struct LogisticData {
  kl::Mat x;
  kl::IVec y;  // 0..K-1
};

// Rows with normal features and classes drawn from a softmax of x B (B with sd 1.5), as the
// R tests make them.
LogisticData logistic_data(int n, int p, int K, std::uint64_t seed) {
  kl::Rng rng(seed);
  LogisticData d;
  d.x = ct::rnorm(rng, n, p);
  const kl::Mat B = ct::rnorm(rng, p, K, 0, 1.5);
  const kl::Mat eta = d.x * B;
  d.y.resize(n);
  for (int i = 0; i < n; ++i) {
    const kl::Vec e = (eta.row(i).array() - eta.row(i).maxCoeff()).exp();
    const double u = rng.uniform() * e.sum();
    double c = 0;
    int k = 0;
    for (; k < K - 1; ++k) {
      c += e[k];
      if (u < c) break;
    }
    d.y[i] = k;
  }
  return d;
}

// The objective written out from its definition, independently of the core:
// sum_i w_i (logsumexp(eta_i) - eta_{i, y_i}) / sum(w) + lambda / 2 ||B||^2.
double objective_ref(const kl::Mat& x, const kl::IVec& y, const kl::Mat& B, const kl::Vec& b,
                     double lambda, const kl::Vec& w) {
  double num = 0, den = 0;
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    kl::Vec eta = (x.row(i) * B).transpose() + b;
    const double m = eta.maxCoeff();
    double s = 0;
    for (Eigen::Index k = 0; k < eta.size(); ++k) s += std::exp(eta[k] - m);
    num += w[i] * (m + std::log(s) - eta[y[i]]);
    den += w[i];
  }
  return num / den + lambda / 2 * B.squaredNorm();
}

}  // namespace

TEST_CASE(
    "heads: the logistic objective matches an independent computation and its gradient central "
    "differences") {
  const LogisticData d = logistic_data(60, 4, 3, ct::seed2(1, 1));
  kl::Rng rng(ct::seed2(2, 1));
  const kl::Mat B = ct::rnorm(rng, 4, 3, 0, 0.5);
  const kl::Vec b = ct::rnorm_vec(rng, 3);
  const kl::Vec w = ct::runif_vec(rng, 60, 0.2, 2);
  const double lambda = 0.3;
  kl::Mat gB;
  kl::Vec gb;
  const double v = kl::logistic_objective(d.x, d.y, 3, w, lambda, B, b, &gB, &gb, 2);
  CHECK_EQUAL(v, objective_ref(d.x, d.y, B, b, lambda, w), 1e-12);

  const double h = 1e-6;
  auto f = [&](const kl::Mat& Bv, const kl::Vec& bv) {
    return kl::logistic_objective(d.x, d.y, 3, w, lambda, Bv, bv, nullptr, nullptr, 1);
  };
  kl::Mat num_B(4, 3);
  for (Eigen::Index j = 0; j < B.size(); ++j) {
    kl::Mat Bp = B, Bm = B;
    Bp(j) += h;
    Bm(j) -= h;
    num_B(j) = (f(Bp, b) - f(Bm, b)) / (2 * h);
  }
  kl::Vec num_b(3);
  for (Eigen::Index k = 0; k < 3; ++k) {
    kl::Vec bp = b, bm = b;
    bp[k] += h;
    bm[k] -= h;
    num_b[k] = (f(B, bp) - f(B, bm)) / (2 * h);
  }
  CHECK_EQUAL(gB, num_B, 1e-6);
  CHECK_EQUAL(gb, num_b, 1e-6);
  CHECK_GT(ct::max_abs(gB), 1e-3);  // a non-trivial gradient was checked

  // Unit weights are the same as no weights.
  const double o1 =
      kl::logistic_objective(d.x, d.y, 3, kl::Vec(), lambda, B, b, nullptr, nullptr, 1);
  const double o2 = kl::logistic_objective(d.x, d.y, 3, kl::Vec::Constant(60, 2), lambda, B, b,
                                           nullptr, nullptr, 1);
  CHECK_EQUAL(o1, o2, 1e-14);
  CHECK_EQUAL(o1, objective_ref(d.x, d.y, B, b, lambda, kl::Vec::Ones(60)), 1e-12);
}

TEST_CASE("heads: the logistic fit is a stationary point of its objective") {
  const LogisticData d = logistic_data(150, 5, 3, ct::seed2(1, 2));
  kl::LogisticOptions opt;  // as .logistic_fit(x, y, lambda = 0.05, tol = 1e-9, threads = 1)
  opt.lambda = 0.05;
  opt.max_iter = 500;
  opt.gtol = 1e-9;
  opt.ftol = 1e-14;
  opt.memory = 10;
  opt.threads = 1;
  const kl::LogisticFit fit = kl::logistic_fit(d.x, d.y, 3, kl::Vec(), opt);
  CHECK(fit.converged);
  kl::Mat gB;
  kl::Vec gb;
  kl::logistic_objective(d.x, d.y, 3, kl::Vec(), 0.05, fit.coef, fit.intercept, &gB, &gb, 1);
  CHECK_LT(std::max(ct::max_abs(gB), ct::max_abs(gb)), 1e-8);
}
