// Generalized eigenvector features: class moments against plain products, the single-precision
// feature map against the double-precision one, the random Fourier input map, and the error
// about a singular class.
#include <cmath>

#include "harness.hpp"
#include "helpers.hpp"
#include "learners/gem.hpp"

namespace {

kl::ClassMoments moments(const kl::Mat& x, const kl::IVec& y, int K, int threads,
                         const kl::InputMap& map = kl::InputMap()) {
  ct::EigenThreads one(1);
  return kl::class_moments(x, y, K, threads, kl::Callbacks(), map);
}

kl::InputMap input_map(const kl::Mat& W, const kl::Vec& b) {
  kl::InputMap m;
  m.W = W.data();
  m.b = b.data();
  m.d = W.rows();
  m.D = W.cols();
  return m;
}

}  // namespace

TEST_CASE(
    "gem: class moments equal plain cross-products over several row chunks and column tiles") {
  kl::Rng rng(ct::seed2(21, 1));
  kl::Mat x = ct::rnorm(rng, 5000, 300);
  x.col(4) *= 50;
  kl::IVec y(5000);
  y.head(4500).setConstant(0);
  y.segment(4500, 400).setConstant(1);
  y.tail(100).setConstant(2);
  const kl::ClassMoments m = moments(x, y, 3, 2);
  const Eigen::Index start[3] = {0, 4500, 4900}, len[3] = {4500, 400, 100};
  for (int k = 0; k < 3; ++k) {
    const kl::Mat xk = x.middleRows(start[k], len[k]);
    CHECK_EQUAL(m.second[static_cast<std::size_t>(k)],
                kl::Mat(xk.transpose() * xk / static_cast<double>(len[k])), 1e-12);
    CHECK_EQUAL(m.mean.col(k), kl::Vec(xk.colwise().mean().transpose()), 1e-12);
    CHECK_EQ(m.count[k], static_cast<int>(len[k]));
  }
  const kl::ClassMoments m1 = moments(x, y, 3, 1);
  for (int k = 0; k < 3; ++k)
    CHECK_IDENTICAL(m1.second[static_cast<std::size_t>(k)], m.second[static_cast<std::size_t>(k)]);
  CHECK_IDENTICAL(m1.mean, m.mean);
  CHECK_IDENTICAL(m1.count, m.count);
}

TEST_CASE("gem: single-precision features are the double-precision ones rounded, row by row") {
  kl::Rng rng(ct::seed2(5, 1));
  const int d = 6;
  // 8200 rows: blocks of 1024 rows and a short last one; 700 rows: blocks of 256
  for (int n : {700, 8200}) {
    const kl::Mat x = ct::rnorm(rng, n, d);
    const kl::Mat V = ct::rnorm(rng, d, 7);
    const kl::Mat W = ct::rnorm(rng, d, 9);
    const kl::Vec b = ct::runif_vec(rng, 9, 0, 2 * ct::kPi);
    for (int base = 0; base <= 1; ++base)
      for (int degree : {1, 3})
        for (bool ki : {false, true})
          for (bool rff : {false, true}) {
            const kl::Mat Vm = rff ? ct::rnorm(rng, 9, 7) : V;
            const kl::InputMap map = rff ? input_map(W, b) : kl::InputMap();
            ct::EigenThreads one(1);
            const Eigen::Index p =
                kl::gem_feature_count(map.out_dim(d), Vm.cols(), degree, ki, true);
            kl::Mat Fd(n, p);
            kl::gem_features(x, Vm, base, degree, ki, true, Fd, 2, kl::Callbacks(), map);
            kl::RowMajorF32 F2, F1;
            kl::gem_features_f32(x, Vm, base, degree, ki, true, F2, 2, kl::Callbacks(), map);
            kl::gem_features_f32(x, Vm, base, degree, ki, true, F1, 1, kl::Callbacks(), map);
            CHECK_EQ(F2.n, Fd.rows());
            CHECK_EQ(F2.p, Fd.cols());
            // rounding to the nearest float: within half a unit in the last place
            bool rounded = F2.n == Fd.rows() && F2.p == Fd.cols();
            for (Eigen::Index i = 0; rounded && i < F2.n; ++i)
              for (Eigen::Index j = 0; j < F2.p; ++j)
                if (!(std::fabs(double(F2.row(i)[j]) - Fd(i, j)) <=
                      std::ldexp(1.0, -24) * std::fabs(Fd(i, j))))
                  rounded = false;
            CHECK(rounded);
            CHECK(F1.data == F2.data);
          }
  }
}

TEST_CASE(
    "gem: the random Fourier input map is sqrt(2 / D) cos(x W + b); moments and directions through "
    "it are those of the mapped rows") {
  kl::Rng rng(ct::seed2(8, 1));
  const int n = 500, d = 4, D = 40, K = 3;
  const kl::Mat x = ct::runif(rng, n, d);
  kl::IVec y(n);
  for (int i = 0; i < n; ++i) y[i] = static_cast<int>(rng.below(K));
  const kl::Mat W = ct::rnorm(rng, d, D, 0, 2);
  const kl::Vec b = ct::runif_vec(rng, D, 0, 2 * ct::kPi);
  const kl::InputMap map = input_map(W, b);
  kl::Mat Zr(n, D);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < D; ++j) {
      double s = b[j];
      for (int k = 0; k < d; ++k) s += x(i, k) * W(k, j);
      Zr(i, j) = std::sqrt(2.0 / D) * std::cos(s);
    }
  kl::Mat Z(n, D);
  map.apply(x, Z);
  CHECK_EQUAL(Z, Zr, 1e-12);
  // The map is applied a block of rows at a time inside the moments; the same computation on
  // the explicitly mapped rows agrees, and so do the directions.
  const kl::ClassMoments Mm = moments(x, y, K, 2, map), Mr = moments(Zr, y, K, 2);
  for (int k = 0; k < K; ++k)
    CHECK_EQUAL(Mm.second[static_cast<std::size_t>(k)], Mr.second[static_cast<std::size_t>(k)],
                1e-12);
  kl::GemOptions opt;
  opt.ridge = 0.1;
  opt.relative = true;
  opt.top = 3;
  opt.threshold = 1;
  opt.method = 1;
  opt.tol = 1e-8;
  opt.threads = 2;
  opt.seed = ct::seed2(1, 1);
  const std::vector<int> num = {0, 0, 1, 1, 2, 2}, den = {1, 2, 0, 2, 0, 1};
  ct::EigenThreads one(1);
  const auto pm = kl::gem_directions(Mm, num, den, opt), pr = kl::gem_directions(Mr, num, den, opt);
  CHECK_EQ(pm.size(), pr.size());
  for (std::size_t q = 0; q < pm.size() && q < pr.size(); ++q)
    CHECK_EQUAL(pm[q].spectrum, pr[q].spectrum, 1e-8);
}

TEST_CASE("gem: a singular regularised second-moment matrix is an error about its class") {
  // a repeated column: every second-moment matrix is singular
  kl::Rng rng(ct::seed2(1, 3));
  kl::Mat x(300, 5);
  x.leftCols(4) = ct::rnorm(rng, 300, 4);
  x.col(4) = x.col(1);
  kl::IVec y(300);
  for (int i = 0; i < 300; ++i) y[i] = i % 3;
  const kl::ClassMoments M = moments(x, y, 3, 1);
  kl::GemOptions opt;
  opt.ridge = 0;
  opt.relative = false;
  opt.top = 2;
  opt.threshold = 0;
  opt.method = 0;
  opt.tol = 1e-8;
  opt.threads = 1;
  opt.seed = ct::seed2(1, 2);
  bool thrown = false;
  try {
    kl::gem_directions(M, {0}, {1}, opt);
  } catch (const kl::ClassError& e) {
    thrown = true;
    CHECK_EQ(e.index, 1);
    CHECK(std::string(e.what()).find("class 2 is singular") != std::string::npos);
  }
  CHECK(thrown);
}
