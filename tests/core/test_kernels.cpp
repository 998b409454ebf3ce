// Kernels: the blocked kernel matrices of the standard kernels against the plain-loop values,
// and the parameter-derivative contractions of the learned kernels (hierarchical Gaussian,
// tessellated) against central differences and their identities.
#include <cmath>

#include "backend/backend.hpp"
#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/standard.hpp"
#include "kernels/tessellated.hpp"

namespace {

kl::Mat block(const kl::Kernel& k, const kl::Mat& x, const kl::Mat& z, int threads = 2) {
  kl::Mat K(x.rows(), z.rows());
  k.block(x, z, K, threads, kl::Callbacks());
  return K;
}

kl::Vec derivs(const kl::Kernel& k, const kl::Mat& x, const kl::Mat& z, const kl::Mat& E,
               int threads = 1) {
  kl::Vec g(k.num_params());
  k.contract_derivatives(x, z, E, g, threads, kl::Callbacks());
  return g;
}

kl::Mat naive(const kl::Kernel& k, const kl::Mat& x, const kl::Mat& z) {
  kl::Mat K(x.rows(), z.rows());
  for (Eigen::Index j = 0; j < z.rows(); ++j)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      K(i, j) = k.value(x.data() + i, x.rows(), z.data() + j, z.rows(), static_cast<int>(x.cols()));
  return K;
}

kl::KernelSpec spec(kl::KernelType type, double gamma, double degree, double scale, double offset) {
  kl::KernelSpec s;
  s.type = type;
  s.gamma = gamma;
  s.degree = degree;
  s.scale = scale;
  s.offset = offset;
  return s;
}

// The kernels of the R tests (test-kernels-learned.R): k2 and k3 on 4 columns.
ct::HTree k2_tree() {
  ct::HTree k;
  k.nodes = {
      {{1, 2}, {1.5, 0.7}, nullptr}, {{2, 3, 4}, {0.4, 2, 1}, nullptr}, {{3}, {1.1}, nullptr}};
  k.node_weights = {0.8, 1.3, 0.5};
  k.gamma = 1.7;
  return k;
}

ct::HTree k3_tree() {
  ct::HTree k;
  k.nodes = {{{}, {}, std::make_shared<ct::HTree>(k2_tree())},
             {{4, 1}, {0.9, 1.2}, nullptr},
             {{}, {}, std::make_shared<ct::HTree>(ct::HTree::leaf({1, 0.5, 2}, 0.6))}};
  k.node_weights = {1.2, 0.6, 0.9};
  k.gamma = 0.8;
  return k;
}

kl::Mat rand_psd(kl::Rng& rng, int m) { return ct::crossprod(ct::rnorm(rng, m, m)); }

double sum_prod(const kl::Mat& a, const kl::Mat& b) { return (a.array() * b.array()).sum(); }

}  // namespace

TEST_CASE("kernels: blocked kernel matrices equal the plain-loop values across block edges") {
  kl::Rng rng(ct::seed2(2, 1));
  const kl::Mat x = ct::runif(rng, 1100, 5);  // more rows than one row block (512)
  const kl::Mat z = ct::runif(rng, 1030, 5);  // more columns than one column block (1024)
  const kl::KernelSpec specs[] = {
      spec(kl::KernelType::Gaussian, 2, 1, 1, 0), spec(kl::KernelType::Laplacian, 1, 1, 1, 0),
      spec(kl::KernelType::Linear, 1, 1, 1, 0), spec(kl::KernelType::Polynomial, 1, 2, 1, 1)};
  for (const auto& s : specs) {
    const kl::KernelPtr k = kl::make_standard_kernel(s);
    kl::Mat K(x.rows(), z.rows());
    kl::cpu_backend().kernel_matrix(*k, x, z, K, 2, kl::Callbacks());
    CHECK_EQUAL(K, naive(*k, x, z), 1e-10);
  }
}

TEST_CASE(
    "kernels: hierarchical derivative contractions match central differences at depth 1, 2 and 3") {
  kl::Rng rng(ct::seed2(11, 1));
  const kl::Mat x = ct::runif(rng, 30, 4), z = ct::runif(rng, 17, 4);
  const kl::Mat E = ct::rnorm(rng, 30, 17);
  const ct::HTree trees[] = {ct::HTree::leaf({0.5, 1.2, 2, 0.8}, 1.4), k2_tree(), k3_tree()};
  for (const auto& k : trees) {
    const kl::Vec g = derivs(*k.kernel(4), x, z, E);
    const std::vector<double> th = k.params();
    CHECK_EQ(g.size(), static_cast<Eigen::Index>(th.size()));
    kl::Vec fd(static_cast<Eigen::Index>(th.size()));
    const double h = 1e-6;
    for (std::size_t t = 0; t < th.size(); ++t) {
      std::vector<double> tp = th, tm = th;
      tp[t] += h;
      tm[t] -= h;
      ct::HTree kp = k, km = k;
      kp.set_params(tp);
      km.set_params(tm);
      fd[static_cast<Eigen::Index>(t)] =
          (sum_prod(E, block(*kp.kernel(4), x, z)) - sum_prod(E, block(*km.kernel(4), x, z))) /
          (2 * h);
    }
    CHECK_LT(ct::max_abs(g - fd) / ct::max_abs(fd), 1e-6);
  }
}

TEST_CASE(
    "kernels: hierarchical derivative contractions are the same for 1 and 2 threads over several "
    "tiles") {
  kl::Rng rng(ct::seed2(11, 2));
  const kl::Mat xb = ct::runif(rng, 700, 4), zb = ct::runif(rng, 600, 4);
  const kl::Mat E = ct::rnorm(rng, 700, 600);
  const kl::KernelPtr k3 = k3_tree().kernel(4);
  CHECK_IDENTICAL(derivs(*k3, xb, zb, E, 1), derivs(*k3, xb, zb, E, 2));
}

TEST_CASE(
    "kernels: the tessellated gradient blocks C(w) satisfy trace(C P) = -w'K(P)w/2 and C <= 0") {
  kl::Rng rng(ct::seed2(4, 1));
  const kl::Mat xt = ct::runif(rng, 80, 2), zt = ct::runif(rng, 50, 2);
  // the default box of tessellated_kernel() in R
  const kl::Vec lo = kl::Vec::Constant(2, -0.1), hi = kl::Vec::Constant(2, 1.1);
  for (int q = 0; q <= 2; ++q) {
    const int h = static_cast<int>(kl::monomial_count(2, q));
    const kl::Mat P = rand_psd(rng, 2 * h);
    const kl::KernelPtr k = kl::make_tessellated_kernel(P, q, lo, hi);
    const kl::Vec w = ct::rnorm_vec(rng, 80);
    const kl::Mat C = ct::reshape(derivs(*k, xt, xt, -w * w.transpose() / 2), 2 * h, 2 * h);
    const kl::Mat K = block(*k, xt, xt);
    CHECK_EQUAL(sum_prod(C, P), -w.dot(K * w) / 2, 1e-10);
    CHECK_EQUAL(kl::Mat(C.transpose()), C, 1e-10);
    CHECK_LT(ct::sym_eigenvalues((C + C.transpose()) / 2)[0], 1e-8 * ct::max_abs(C));
    // any weight matrix, on a cross block: the contraction is the gradient of a linear map
    const kl::Mat E = ct::rnorm(rng, 80, 50);
    const kl::Mat G = ct::reshape(derivs(*k, xt, zt, E), 2 * h, 2 * h);
    CHECK_EQUAL(sum_prod(G, P), sum_prod(E, block(*k, xt, zt)), 1e-10);
    const kl::Mat P2 = rand_psd(rng, 2 * h);
    CHECK_EQUAL(sum_prod(G, P2),
                sum_prod(E, block(*kl::make_tessellated_kernel(P2, q, lo, hi), xt, zt)), 1e-10);
  }
}

TEST_CASE("kernels: a kernel without parameters has no derivative contraction") {
  kl::Rng rng(ct::seed2(11, 3));
  const kl::Mat x = ct::runif(rng, 30, 4);
  const kl::KernelPtr k = kl::make_standard_kernel(kl::gaussian_spec(1));
  CHECK_EQ(k->num_params(), 0);
  kl::Vec g(1);
  CHECK_THROWS(k->contract_derivatives(x, x, kl::Mat::Identity(30, 30), g, 1, kl::Callbacks()),
               kl::Error, "no parameter derivatives");
}
