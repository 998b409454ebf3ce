// SVM probabilities: Platt scaling and pairwise coupling against independent computations.
#include <Eigen/LU>
#include <cmath>

#include "harness.hpp"
#include "helpers.hpp"
#include "linalg/optim.hpp"
#include "machines/multiclass.hpp"

TEST_CASE("svm: the Platt fit minimises its regularised cross-entropy") {
  kl::Rng rng(ct::seed2(14, 1));
  std::vector<double> f;
  std::vector<signed char> y;
  for (int i = 0; i < 60; ++i) {
    f.push_back(rng.normal(1, 1));
    y.push_back(1);
  }
  for (int i = 0; i < 40; ++i) {
    f.push_back(rng.normal(-1, 1));
    y.push_back(-1);
  }
  double A, B;
  kl::platt_fit(f, y, &A, &B);
  // the targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2), and the negative log-likelihood
  // sum(t z + log1p(exp(-z))), z = A f + B, minimised by L-BFGS from (0, 0)
  std::vector<double> t(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) t[i] = y[i] > 0 ? 61.0 / 62 : 1.0 / 42;
  kl::ValueGradFn nll = [&](const kl::CVecRef& p, kl::VecRef g) {
    double s = 0;
    g.setZero();
    for (std::size_t i = 0; i < f.size(); ++i) {
      const double z = f[i] * p[0] + p[1];
      s += t[i] * z + std::log1p(std::exp(-z));
      const double d = t[i] - 1.0 / (1.0 + std::exp(z));
      g[0] += d * f[i];
      g[1] += d;
    }
    return s;
  };
  kl::LbfgsOptions opt;
  opt.gtol = 1e-10;
  opt.ftol = 0;
  const kl::LbfgsResult ref = kl::lbfgs(nll, kl::Vec::Zero(2), opt);
  kl::Vec ab(2);
  ab << A, B;
  CHECK_EQUAL(ab, ref.x, 1e-4);
}

TEST_CASE("svm: pairwise coupling is the minimiser of p'Qp with sum(p) = 1") {
  // the minimiser is Q^-1 1 / (1' Q^-1 1)
  kl::Rng rng(ct::seed2(14, 2));
  const int k = 4;
  kl::Mat r = kl::Mat::Zero(k, k);
  for (int i = 0; i < k - 1; ++i)
    for (int j = i + 1; j < k; ++j) {
      r(i, j) = rng.uniform(0.2, 0.8);
      r(j, i) = 1 - r(i, j);
    }
  kl::Mat Q = kl::Mat::Zero(k, k);
  for (int s = 0; s < k; ++s)
    for (int j = 0; j < k; ++j) {
      if (s == j) {
        for (int o = 0; o < k; ++o)
          if (o != s) Q(s, s) += r(o, s) * r(o, s);
      } else {
        Q(s, j) = -r(j, s) * r(s, j);
      }
    }
  kl::Vec p = Q.partialPivLu().solve(kl::Vec::Ones(k));
  p /= p.sum();
  const kl::Vec got = kl::pairwise_coupling(r);
  CHECK_EQUAL(got, p, 5e-3);
  CHECK_EQUAL(got.sum(), 1.0, 1e-12);
}
