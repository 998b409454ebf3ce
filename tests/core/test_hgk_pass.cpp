// The fused pass of the hierarchical Gaussian kernel (kernels/hgk_pass.hpp) against independent
// computations: its rows and row sums against the recursive evaluation of the tree, its
// derivative contractions against the kernel's general tile contraction with the explicit
// weight matrix, per-row factors, the triangle of a symmetric block, the thread count, and the
// single-precision mode against the double one.
#include <algorithm>
#include <cmath>
#include <vector>

#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/hgk_pass.hpp"
#include "linalg/vexp.hpp"

namespace {

ct::HTree depth2() {
  ct::HTree k;
  k.nodes = {{{1, 2}, {1.5, 0.7}, nullptr},
             {{2, 3, 5}, {0.4, 2, 1}, nullptr},
             {{4}, {1.1}, nullptr},
             {{5, 1}, {0.9, 0.6}, nullptr}};
  k.node_weights = {0.8, 1.3, 0.5, 0.7};
  k.gamma = 1.7;
  return k;
}

ct::HTree depth3() {
  ct::HTree k;
  k.nodes = {{{}, {}, std::make_shared<ct::HTree>(depth2())},
             {{4, 1}, {0.9, 1.2}, nullptr},
             {{}, {}, std::make_shared<ct::HTree>(ct::HTree::leaf({1, 0.5, 2}, 0.6))}};
  k.node_weights = {1.2, 0.6, 0.9};
  k.gamma = 0.8;
  return k;
}

kl::Vec contract(const ct::HTree& t, const kl::Mat& x, const kl::Mat& z, const kl::Mat& E) {
  const kl::KernelPtr k = t.kernel(5);
  kl::Vec g(k->num_params());
  k->contract_derivatives(x, z, E, g, 1, kl::Callbacks());
  return g;
}

double rel(const kl::Vec& a, const kl::Vec& b) { return ct::max_abs(a - b) / ct::max_abs(b); }

}  // namespace

TEST_CASE("hgk pass: rows, row sums and contractions equal the tree's values and the tile "
          "contraction") {
  if (!kl::hgk_pass_available(depth2().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  kl::Rng rng(ct::seed2(31, 1));
  // sizes that are not multiples of the vector width, the unrolled step or the row blocks
  const kl::Mat x = ct::runif(rng, 203, 5), z = ct::runif(rng, 77, 5);
  for (const ct::HTree& t : {depth2(), depth3()}) {
    const std::vector<kl::HgkNode> nodes = t.flatten();
    const kl::Mat K = t.gram(x, z);
    for (int L : {1, 3}) {
      const kl::Mat V = ct::rnorm(rng, 77, L), U = ct::rnorm(rng, 203, L);
      kl::Mat KV(203, L), R(203, 77);
      kl::Vec g;
      kl::HgkPassJob job;
      job.V = &V;
      job.KV = &KV;
      job.U = &U;
      job.grad = &g;
      job.want_row = true;
      job.row_end = [&](Eigen::Index a, int, const double*, const double* krow) {
        R.row(a) = Eigen::Map<const kl::Vec>(krow, 77).transpose();
        return 1.0;
      };
      kl::hgk_pass(nodes, 5, x, z, job, 2, kl::Callbacks());
      CHECK_EQUAL(R, K, 1e-14);
      CHECK_EQUAL(KV, kl::Mat(K * V), 1e-12);
      CHECK_LT(rel(g, contract(t, x, z, U * V.transpose())), 1e-12);
    }
  }
}

TEST_CASE("hgk pass: a row factor from the row's own sums, and the triangle of a symmetric "
          "block") {
  if (!kl::hgk_pass_available(depth3().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  kl::Rng rng(ct::seed2(31, 2));
  const kl::Mat x = ct::runif(rng, 150, 5), z = ct::runif(rng, 91, 5);
  const ct::HTree t = depth3();
  const std::vector<kl::HgkNode> nodes = t.flatten();
  // deferred factor f_a = 0.3 - (K v)_a: the contraction with E = diag(f) 1 v'
  const kl::Mat v = ct::rnorm(rng, 91, 1);
  const kl::Vec f = (0.3 - (t.gram(x, z) * v).array()).matrix();
  kl::Vec g;
  kl::HgkPassJob job;
  job.V = &v;
  job.grad = &g;
  job.row_end = [](Eigen::Index, int, const double* kv, const double*) { return 0.3 - kv[0]; };
  kl::hgk_pass(nodes, 5, x, z, job, 2, kl::Callbacks());
  CHECK_LT(rel(g, contract(t, x, z, f * v.transpose())), 1e-12);
  // triangle: the pairs b > a with the adjoint U_a V_b'; rows below the diagonal
  const kl::Mat U = ct::rnorm(rng, 150, 2), V = ct::rnorm(rng, 150, 2);
  kl::Mat E = U * V.transpose();
  E.triangularView<Eigen::Lower>().setZero();
  const kl::Mat K = t.gram(x, x);
  kl::Mat low = kl::Mat::Zero(150, 150);
  kl::HgkPassJob tri;
  tri.triangle = true;
  tri.V = &V;
  tri.U = &U;
  tri.grad = &g;
  tri.want_row = true;
  tri.row_end = [&](Eigen::Index a, int, const double*, const double* krow) {
    for (Eigen::Index b = a + 1; b < 150; ++b) low(b, a) = krow[b];
    return 1.0;
  };
  kl::hgk_pass(nodes, 5, x, x, tri, 2, kl::Callbacks());
  CHECK_LT(rel(g, contract(t, x, x, E)), 1e-12);
  kl::Mat want = K;
  want.triangularView<Eigen::Upper>().setZero();
  CHECK_EQUAL(low, want, 1e-14);
  // the kernel's own symmetric and cross blocks go through the pass
  kl::Mat B(150, 150), C(150, 91);
  t.kernel(5)->block(x, x, B, 2, kl::Callbacks());
  t.kernel(5)->block(x, z, C, 2, kl::Callbacks());
  CHECK_EQUAL(B, K, 1e-14);
  CHECK_EQUAL(C, t.gram(x, z), 1e-14);
  // the lower triangle alone (what the factorisation reads): the strict upper one untouched
  kl::Mat Lo = kl::Mat::Constant(150, 150, -7.0);
  kl::hgk_pass_lower(nodes, 5, x, Lo, 2, kl::Callbacks());
  kl::Mat lower_want = K;
  lower_want.triangularView<Eigen::StrictlyUpper>().setConstant(-7.0);
  CHECK_EQUAL(Lo, lower_want, 1e-14);
  kl::Mat wrong(150, 149);
  CHECK_THROWS(kl::hgk_pass_lower(nodes, 5, x, wrong, 2, kl::Callbacks()), kl::Error, "wrong shape");
}

TEST_CASE("hgk pass: results do not depend on the thread count; far pairs give 0") {
  if (!kl::hgk_pass_available(depth2().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  kl::Rng rng(ct::seed2(31, 3));
  const kl::Mat x = ct::runif(rng, 1500, 5), z = ct::runif(rng, 300, 5);
  const std::vector<kl::HgkNode> nodes = depth2().flatten();
  const kl::Mat V = ct::rnorm(rng, 300, 1);
  auto run = [&](int threads) {
    kl::Vec g;
    kl::Mat KV(1500, 1);
    kl::HgkPassJob job;
    job.V = &V;
    job.KV = &KV;
    job.grad = &g;
    job.row_end = [](Eigen::Index, int, const double* kv, const double*) { return kv[0]; };
    kl::hgk_pass(nodes, 5, x, z, job, threads, kl::Callbacks());
    return std::make_pair(g, KV);
  };
  const auto one = run(1), two = run(2);
  CHECK_IDENTICAL(one.first, two.first);
  CHECK_IDENTICAL(one.second, two.second);
  // a width that puts most pairs past the normal range: 0 there, the tree's values elsewhere
  ct::HTree wide = ct::HTree::leaf({1, 1, 1}, 1.0);
  ct::HTree t;
  t.nodes = {{{1, 2}, {30, 30}, nullptr}, {{}, {}, std::make_shared<ct::HTree>(wide)}};
  t.node_weights = {1, 1};
  t.gamma = 1000;
  const kl::Mat xs = ct::runif(rng, 40, 3), zs = ct::runif(rng, 33, 3);
  kl::Mat Kb(40, 33);
  t.kernel(3)->block(xs, zs, Kb, 1, kl::Callbacks());
  const kl::Mat G = t.gram(xs, zs);
  CHECK_EQUAL(Kb, G, 1e-12);
  CHECK((Kb.array() >= 0).all());
  CHECK_GT((G.array() < 1e-300).count(), 100);  // the regime is exercised
  CHECK_EQ(((G.array() < 1e-300) && (Kb.array() != 0)).count(), 0);
}

TEST_CASE("hgk pass: not offered for wide leaves; bad jobs are refused") {
  ct::HTree t = ct::HTree::leaf(std::vector<double>(17, 1.0), 1.0);
  ct::HTree two;
  two.nodes = {{{}, {}, std::make_shared<ct::HTree>(t)}, {{1}, {1}, nullptr}};
  two.node_weights = {1, 1};
  CHECK(!kl::hgk_pass_available(two.flatten()));
  if (!kl::hgk_pass_available(depth2().flatten())) return;
  const kl::Mat x = kl::Mat::Zero(10, 5), V = kl::Mat::Zero(10, 2);
  kl::Vec g;
  kl::HgkPassJob job;
  job.V = &V;
  job.grad = &g;  // a per-row factor needs one output
  CHECK_THROWS(kl::hgk_pass(depth2().flatten(), 5, x, x, job, 1, kl::Callbacks()), kl::Error,
               "single output");
  kl::HgkPassJob none;
  none.grad = &g;
  CHECK_THROWS(kl::hgk_pass(depth2().flatten(), 5, x, x, none, 1, kl::Callbacks()), kl::Error,
               "column weights");
}

TEST_CASE("hgk pass: the vectorised exponential pair against std::exp and std::expm1") {
  // from 1e-12 (where 1 - exp(-s) would cancel) to past the normal range
  std::vector<double> S;
  for (int i = 0; i <= 4000; ++i) S.push_back(1e-12 * std::pow(1e13, i / 4000.0));
  for (int i = 0; i <= 4000; ++i) S.push_back(10.0 + 0.19 * i);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(S.size());
  std::vector<double> K(S.size()), O(S.size());
  kl::hgk_exp_pair(S.data(), K.data(), O.data(), n);
  double ek = 0.0, eo = 0.0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    const double k = std::exp(-S[i]), o = -std::expm1(-S[i]);
    if (k > 1e-300) ek = std::max(ek, std::fabs(K[i] - k) / k);
    else CHECK_LE(K[i], 1e-300);
    eo = std::max(eo, std::fabs(O[i] - o) / o);
  }
  CHECK_LE(ek, 4.5e-16);
  CHECK_LE(eo, 3e-15);
}

TEST_CASE("hgk pass: the single-precision exponential pair against std::exp and std::expm1") {
  std::vector<float> S;
  for (int i = 0; i <= 4000; ++i) S.push_back(static_cast<float>(1e-6 * std::pow(1e8, i / 4000.0)));
  for (int i = 0; i <= 1000; ++i) S.push_back(static_cast<float>(80.0 + 0.01 * i));
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(S.size());
  std::vector<float> K(S.size()), O(S.size());
  if (!kl::hgk_exp_pair_f(S.data(), K.data(), O.data(), n)) {
    ct::note("no vectorised instruction set");
    return;
  }
  // K: a few float roundings (6e-8 each) and the reduction's rounded ln 2 / N, whose error of
  // s 2^-24 in the exponent is that of one rounding of s (the pass computes s in float sums);
  // ek is the error in units of that bound. 1 - K: the table's rounding times
  // 1 / (1 - 2^(-1/N)) (47 for N = 32, 12 for N = 8) at most.
  double ek = 0.0, eo = 0.0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    const double s = S[i], k = std::exp(-s), o = -std::expm1(-s);
    if (k > 1.2e-38) ek = std::max(ek, std::fabs(K[i] - k) / k / (3e-7 + s * 0x1p-24));
    else CHECK_LE(K[i], 1.2e-38f);
    CHECK(K[i] >= 0.0f);
    // beyond the normal range exactly 0: far pairs bring no subnormal number into the pass
    if (s >= 87.5) CHECK(K[i] == 0.0f);
    eo = std::max(eo, std::fabs(O[i] - o) / o);
  }
  CHECK_LE(ek, 1.0);
  CHECK_LE(eo, 3e-6);
}

TEST_CASE("hgk pass: single precision agrees with double to float accuracy") {
  if (!kl::hgk_pass_available(depth3().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  kl::Rng rng(ct::seed2(31, 9));
  // sizes off the column steps (64 or 128 in single precision)
  const kl::Mat x = ct::runif(rng, 211, 5), z = ct::runif(rng, 133, 5);
  for (const ct::HTree& t : {depth2(), depth3()}) {
    const std::vector<kl::HgkNode> nodes = t.flatten();
    const kl::Mat K = t.gram(x, z);
    for (int L : {1, 3}) {
      const kl::Mat V = ct::rnorm(rng, 133, L), U = ct::rnorm(rng, 211, L);
      kl::Mat KVd(211, L), KVs(211, L), rows_s(211, 133);
      kl::Vec gd, gs;
      for (bool single : {false, true}) {
        kl::HgkPassJob job;
        job.single = single;
        job.V = &V;
        job.U = &U;
        job.KV = single ? &KVs : &KVd;
        job.grad = single ? &gs : &gd;
        job.want_row = single;
        job.row_end = [&](Eigen::Index a, int, const double*, const double* krow) {
          if (krow) rows_s.row(a) = Eigen::Map<const kl::Vec>(krow, 133).transpose();
          return 1.0;
        };
        kl::hgk_pass(nodes, 5, x, z, job, 2, kl::Callbacks());
      }
      CHECK_LT(ct::max_abs(rows_s - K), 2e-6);
      CHECK_LT(ct::max_abs(KVs - KVd) / ct::max_abs(KVd), 2e-6);
      CHECK_LT(rel(gs, gd), 2e-5);
      CHECK_LT(rel(gd, contract(t, x, z, U * V.transpose())), 1e-12);
    }
  }
  // rows longer than the float lanes' flush interval (16 steps of 64 or 128 columns)
  {
    const kl::Mat zl = ct::runif(rng, 2300, 5), xs = x.topRows(40);
    const kl::Mat V = ct::rnorm(rng, 2300, 1), U = ct::rnorm(rng, 40, 1);
    kl::Vec gd, gs;
    for (bool single : {false, true}) {
      kl::HgkPassJob job;
      job.single = single;
      job.V = &V;
      job.U = &U;
      job.grad = single ? &gs : &gd;
      kl::hgk_pass(depth2().flatten(), 5, xs, zl, job, 2, kl::Callbacks());
    }
    CHECK_LT(rel(gs, gd), 2e-5);
  }
  // the lower triangle in single precision, and its thread count does not matter
  const ct::HTree t = depth3();
  kl::Mat A = kl::Mat::Zero(211, 211), B = kl::Mat::Zero(211, 211);
  kl::hgk_pass_lower(t.flatten(), 5, x, A, 1, kl::Callbacks(), true);
  kl::hgk_pass_lower(t.flatten(), 5, x, B, 2, kl::Callbacks(), true);
  CHECK_IDENTICAL(A, B);
  kl::Mat want = t.gram(x, x);
  want.triangularView<Eigen::StrictlyUpper>().setZero();
  CHECK_LT(ct::max_abs(A - want), 2e-6);
}
