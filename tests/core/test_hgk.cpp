// Learning hierarchical Gaussian kernels: the bilevel and fixed validation risks against an
// independent least-squares SVM computation, their gradients against central differences and
// against a plain loop over the weights, and thread-count independence.
#include <Eigen/LU>
#include <cmath>

#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/hgk_pass.hpp"
#include "learners/hgk.hpp"

namespace {

struct ObjData {
  kl::Mat x1, y1, x2, y2;
};

// Inputs uniform on [0, 1]^d; L of the outputs sin(3 x1) + x2, x2 x3 - x1, cos(2 x_d), with
// noise of sd 0.1.
ObjData obj_data(int n1, int n2, int d, int L, std::uint64_t seed) {
  kl::Rng rng(seed);
  ObjData o;
  o.x1 = ct::runif(rng, n1, d);
  o.x2 = ct::runif(rng, n2, d);
  auto f = [&](const kl::Mat& x) {
    kl::Mat y(x.rows(), L);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double v[3] = {std::sin(3 * x(i, 0)) + x(i, 1), x(i, 1) * x(i, 2) - x(i, 0),
                           std::cos(2 * x(i, d - 1))};
      for (int l = 0; l < L; ++l) y(i, l) = v[l];
    }
    return y;
  };
  o.y1 = f(o.x1) + ct::rnorm(rng, n1, L, 0, 0.1);
  o.y2 = f(o.x2) + ct::rnorm(rng, n2, L, 0, 0.1);
  return o;
}

// Kernels of depth 1, 2 (overlapping nodes) and 3 (a root over depth-2 subtrees) on 5 columns.
ct::HTree k_d1() { return ct::HTree::leaf({0.5, 1.2, 2, 0.8, 1.1}); }
ct::HTree k_d2() {
  ct::HTree k;
  k.nodes = {{{1, 2}, {1.5, 0.7}, nullptr},
             {{2, 3, 4}, {0.4, 2, 1}, nullptr},
             {{3, 5}, {1.1, 0.6}, nullptr}};
  k.node_weights = {0.8, 1.3, 0.5};
  return k;
}
ct::HTree k_sub() {
  ct::HTree k;
  k.nodes = {{{4, 1}, {0.9, 1.2}, nullptr}, {{2, 3, 5}, {1.4, 0.5, 0.8}, nullptr}};
  k.node_weights = {1.1, 0.7};
  k.gamma = 0.6;
  return k;
}
ct::HTree k_d3() {
  ct::HTree k;
  k.nodes = {{{}, {}, std::make_shared<ct::HTree>(k_d2())},
             {{}, {}, std::make_shared<ct::HTree>(k_sub())},
             {{1, 5}, {0.7, 1.3}, nullptr}};
  k.node_weights = {1.2, 0.6, 0.9};
  return k;
}

kl::Vec log_params(const ct::HTree& k) {
  const std::vector<double> p = k.params();
  kl::Vec t(static_cast<Eigen::Index>(p.size()));
  for (std::size_t i = 0; i < p.size(); ++i) t[static_cast<Eigen::Index>(i)] = std::log(p[i]);
  return t;
}

// The tree with the weights exp(theta) and the root width gamma.
ct::HTree at(const ct::HTree& k, const kl::Vec& theta, double gamma) {
  ct::HTree out = k;
  std::vector<double> w(static_cast<std::size_t>(theta.size()));
  for (Eigen::Index i = 0; i < theta.size(); ++i)
    w[static_cast<std::size_t>(i)] = std::exp(theta[i]);
  out.set_params(w);
  out.gamma = gamma;
  return out;
}

// The LS-SVM (K11 + c I) alpha + 1 b' = Y1, 1'alpha = 0 as one bordered system, by LU.
struct LsRef {
  kl::Mat alpha, A;
  kl::Vec bias;
};
LsRef ls_svm_ref(const kl::Mat& K11, const kl::Mat& Y1, double c) {
  const Eigen::Index n1 = K11.rows(), L = Y1.cols();
  LsRef r;
  r.A = kl::Mat::Zero(n1 + 1, n1 + 1);
  r.A.topLeftCorner(n1, n1) = K11 + c * kl::Mat::Identity(n1, n1);
  r.A.topRightCorner(n1, 1).setOnes();
  r.A.bottomLeftCorner(1, n1).setOnes();
  kl::Mat rhs = kl::Mat::Zero(n1 + 1, L);
  rhs.topRows(n1) = Y1;
  const kl::Mat sol = r.A.partialPivLu().solve(rhs);
  r.alpha = sol.topRows(n1);
  r.bias = sol.row(n1).transpose();
  return r;
}

kl::Mat residual(const kl::Mat& K21, const kl::Mat& Y2, const kl::Mat& alpha, const kl::Vec& bias) {
  return (Y2 - K21 * alpha).rowwise() - bias.transpose();
}

double risk_ref(const kl::Mat& K21, const kl::Mat& Y2, const kl::Mat& alpha, const kl::Vec& bias) {
  return residual(K21, Y2, alpha, bias).squaredNorm() / static_cast<double>(Y2.size());
}

// (x_i - z_i)^2 for all pairs of rows (column i, 0-based).
kl::Mat sqdist_col(const kl::Mat& x, const kl::Mat& z, int i) {
  kl::Mat D(x.rows(), z.rows());
  for (Eigen::Index a = 0; a < x.rows(); ++a)
    for (Eigen::Index b = 0; b < z.rows(); ++b) D(a, b) = std::pow(x(a, i) - z(b, i), 2);
  return D;
}

struct Eval {
  double value;
  kl::LsFit fit;
  kl::Vec gradient;
};

Eval bilevel(const ObjData& dd, const ct::HTree& k, const kl::Vec& theta, double g, double lam,
             bool gradient, int threads = 1, bool single = false) {
  const kl::HgkFamily fam(k.flatten(), 5);
  kl::HgkObjective obj(fam, dd.x1, dd.y1, dd.x2, dd.y2, g, lam, threads, kl::Callbacks(),
                       single);
  Eval e;
  e.value = obj.bilevel(theta, gradient ? &e.gradient : nullptr);
  e.fit = obj.fit_at(theta);
  return e;
}

Eval fixed(const ObjData& dd, const ct::HTree& k, const kl::Vec& theta, double g, double lam,
           const kl::Mat& alpha, const kl::Vec& bias, bool gradient, bool single = false) {
  const kl::HgkFamily fam(k.flatten(), 5);
  kl::HgkObjective obj(fam, dd.x1, dd.y1, dd.x2, dd.y2, g, lam, 1, kl::Callbacks(), single);
  Eval e;
  e.fit.alpha = alpha;
  e.fit.bias = bias;
  e.value = obj.fixed(theta, e.fit, gradient ? &e.gradient : nullptr);
  return e;
}

kl::Mat flat(const kl::Vec& v) { return kl::Mat(v); }

// The bilevel gradient from the derivative of the bordered system, one weight at a time:
// A [dalpha; db'] = -[dK11 alpha; 0], dRes = -(dK21 alpha + K21 dalpha + 1 db'),
// dR = 2 <Res, dRes> / (n2 L).
kl::Vec loop_gradient(const std::vector<kl::Mat>& dK11, const std::vector<kl::Mat>& dK21,
                      const kl::Mat& K21, const LsRef& sol, const kl::Mat& Y2) {
  const Eigen::Index n1 = sol.alpha.rows(), L = Y2.cols();
  const kl::Mat res = residual(K21, Y2, sol.alpha, sol.bias);
  const Eigen::PartialPivLU<kl::Mat> lu(sol.A);
  kl::Vec out(static_cast<Eigen::Index>(dK11.size()));
  for (std::size_t t = 0; t < dK11.size(); ++t) {
    kl::Mat rhs = kl::Mat::Zero(n1 + 1, L);
    rhs.topRows(n1) = -dK11[t] * sol.alpha;
    const kl::Mat dsol = lu.solve(rhs);
    const kl::Mat dres = -((dK21[t] * sol.alpha + K21 * dsol.topRows(n1)).rowwise() + dsol.row(n1));
    out[static_cast<Eigen::Index>(t)] =
        2 * (res.array() * dres.array()).sum() / static_cast<double>(Y2.size());
  }
  return out;
}

}  // namespace

TEST_CASE("hgk: the bilevel and fixed objectives equal an independent LS-SVM computation") {
  for (int L = 1; L <= 3; ++L) {
    const ObjData dd = obj_data(45, 35, 5, L, ct::seed2(L, 1));
    kl::Rng rng(ct::seed2(10 + L, 1));
    for (const ct::HTree& k : {k_d1(), k_d2(), k_d3()}) {
      const kl::Vec theta0 = log_params(k);
      const kl::Vec theta = theta0 + ct::rnorm_vec(rng, theta0.size(), 0, 0.2);
      const double g = 1.7, lam = 0.02;
      const ct::HTree kk = at(k, theta, g);
      const kl::Mat K11 = kk.gram(dd.x1, dd.x1), K21 = kk.gram(dd.x2, dd.x1);
      const LsRef sol = ls_svm_ref(K11, dd.y1, dd.x1.rows() * lam);
      const double ref = risk_ref(K21, dd.y2, sol.alpha, sol.bias);
      const Eval b = bilevel(dd, k, theta, g, lam, false);
      CHECK_EQUAL(b.value, ref, 1e-10);
      CHECK_EQUAL(b.fit.alpha, sol.alpha, 1e-8);
      CHECK_EQUAL(b.fit.bias, sol.bias, 1e-8);
      CHECK_EQUAL(kl::Vec(b.fit.alpha.colwise().sum().transpose()), kl::Vec::Zero(L), 1e-10);
      // fixed: any alpha and bias, the risk of K21 alpha + b on D2
      const kl::Mat a = ct::rnorm(rng, dd.x1.rows(), L);
      const kl::Vec bb = ct::rnorm_vec(rng, L);
      const Eval f = fixed(dd, k, theta, g, lam, a, bb, false);
      CHECK_EQUAL(f.value, risk_ref(K21, dd.y2, a, bb), 1e-10);
      // fixed at the bilevel solution is the bilevel value
      const Eval f2 = fixed(dd, k, theta, g, lam, b.fit.alpha, b.fit.bias, false);
      CHECK_EQUAL(f2.value, b.value, 1e-12);
    }
  }
  // the width argument replaces the kernel's own gamma at the root
  const ObjData dd = obj_data(50, 40, 5, 1, ct::seed2(1, 2));
  ct::HTree k = k_d1();
  k.gamma = 123;
  const kl::Vec th = log_params(k);
  CHECK_EQUAL(bilevel(dd, k, th, 0.8, 0.01, false).value,
              bilevel(dd, k_d1(), th, 0.8, 0.01, false).value, 1e-14);
  const kl::HgkFamily fam(k.flatten(), 5);
  kl::HgkObjective obj(fam, dd.x1, dd.y1, dd.x2, dd.y2, 0.8, 0.01, 1, kl::Callbacks());
  CHECK_THROWS(obj.bilevel(th.head(th.size() - 1), nullptr), kl::Error,
               "wrong number of kernel weights");
}

TEST_CASE("hgk: bilevel and fixed gradients match central differences at depth 1, 2, 3, L = 1, 3") {
  for (int L : {1, 3}) {
    const ObjData dd = obj_data(50, 40, 5, L, ct::seed2(20 + L, 1));
    kl::Rng rng(ct::seed2(30 + L, 1));
    for (const ct::HTree& k : {k_d1(), k_d2(), k_d3()}) {
      const kl::Vec theta0 = log_params(k);
      const Eigen::Index p = theta0.size();
      const kl::Vec theta = theta0 + ct::rnorm_vec(rng, p, 0, 0.3);
      const double g = 1.3, lam = 0.01;
      const Eval b = bilevel(dd, k, theta, g, lam, true);
      CHECK_EQ(b.gradient.size(), p);
      const auto fb = [&](const kl::Mat& t) {
        return bilevel(dd, k, t.col(0), g, lam, false).value;
      };
      CHECK_LT(ct::rel_err(flat(b.gradient), ct::central_diff(fb, flat(theta))), 1e-6);
      // fixed: alpha and b held (here at a perturbed fit, so that they are not the optimum)
      const kl::Mat a =
          b.fit.alpha + ct::rnorm(rng, b.fit.alpha.rows(), b.fit.alpha.cols(), 0, 0.1);
      const Eval f = fixed(dd, k, theta, g, lam, a, b.fit.bias, true);
      const auto ff = [&](const kl::Mat& t) {
        return fixed(dd, k, t.col(0), g, lam, a, b.fit.bias, false).value;
      };
      CHECK_LT(ct::rel_err(flat(f.gradient), ct::central_diff(ff, flat(theta))), 1e-6);
      // the two gradients differ: the bilevel one carries the re-solved alpha
      CHECK_GT(ct::rel_err(flat(f.gradient), flat(b.gradient)), 1e-3);
    }
  }
}

TEST_CASE(
    "hgk: the one-GEMM bilevel gradient equals a plain loop over the weights (depth 1 and 2)") {
  const ObjData dd = obj_data(45, 35, 5, 2, ct::seed2(41, 1));
  const double g = 0.9, lam = 0.005;
  const double c1 = dd.x1.rows() * lam;
  // depth 1: dK/dlog w_i = -2 gamma w_i^2 (x_i - z_i)^2 K
  {
    kl::Rng rng(ct::seed2(42, 1));
    const kl::Vec theta = log_params(k_d1()) + ct::rnorm_vec(rng, 5, 0, 0.3);
    const kl::Vec w = theta.array().exp().matrix();
    const ct::HTree kk = at(k_d1(), theta, g);
    const kl::Mat K11 = kk.gram(dd.x1, dd.x1), K21 = kk.gram(dd.x2, dd.x1);
    const LsRef sol = ls_svm_ref(K11, dd.y1, c1);
    std::vector<kl::Mat> dK11, dK21;
    for (int i = 0; i < 5; ++i) {
      dK11.push_back(-2 * g * w[i] * w[i] * sqdist_col(dd.x1, dd.x1, i).cwiseProduct(K11));
      dK21.push_back(-2 * g * w[i] * w[i] * sqdist_col(dd.x2, dd.x1, i).cwiseProduct(K21));
    }
    const kl::Vec ref = loop_gradient(dK11, dK21, K21, sol, dd.y2);
    const kl::Vec got = bilevel(dd, k_d1(), theta, g, lam, true).gradient;
    CHECK_LT(ct::rel_err(flat(got), flat(ref)), 1e-8);
    // the fixed gradient is the first term alone: -2/(n2 L) <Res, dK21 alpha>
    const kl::Mat res = residual(K21, dd.y2, sol.alpha, sol.bias);
    kl::Vec ref_fixed(5);
    for (int i = 0; i < 5; ++i)
      ref_fixed[i] = -2 *
                     (res.array() * (dK21[static_cast<std::size_t>(i)] * sol.alpha).array()).sum() /
                     static_cast<double>(dd.y2.size());
    const kl::Vec got_fixed = fixed(dd, k_d1(), theta, g, lam, sol.alpha, sol.bias, true).gradient;
    CHECK_LT(ct::rel_err(flat(got_fixed), flat(ref_fixed)), 1e-8);
  }
  // depth 2 by the chain rule, k = exp(-gamma S), S = sum_j u_j^2 (1 - K_j):
  //   dk/dlog u_j = -2 gamma u_j^2 (1 - K_j) k,
  //   dk/dlog w_ji = -2 gamma u_j^2 w_ji^2 (x_i - z_i)^2 K_j k.
  // Parameters: the leaf weights node by node, then the node weights u.
  {
    kl::Rng rng(ct::seed2(43, 1));
    const Eigen::Index p = log_params(k_d2()).size();
    const kl::Vec theta = log_params(k_d2()) + ct::rnorm_vec(rng, p, 0, 0.3);
    const ct::HTree kk = at(k_d2(), theta, g);
    const kl::Mat K11 = kk.gram(dd.x1, dd.x1), K21 = kk.gram(dd.x2, dd.x1);
    const LsRef sol = ls_svm_ref(K11, dd.y1, c1);
    auto leaf_gram = [&](std::size_t j, const kl::Mat& x, const kl::Mat& z) {
      kl::Mat S = kl::Mat::Zero(x.rows(), z.rows());
      const auto& nd = kk.nodes[j];
      for (std::size_t t = 0; t < nd.cols.size(); ++t)
        S += nd.weights[t] * nd.weights[t] * sqdist_col(x, z, nd.cols[t] - 1);
      return kl::Mat((-S).array().exp().matrix());
    };
    auto dK = [&](const kl::Mat& x, const kl::Mat& z, const kl::Mat& K) {
      std::vector<kl::Mat> out;
      const auto& u = kk.node_weights;
      for (std::size_t j = 0; j < kk.nodes.size(); ++j) {
        const kl::Mat Kj = leaf_gram(j, x, z);
        const auto& nd = kk.nodes[j];
        for (std::size_t t = 0; t < nd.cols.size(); ++t)
          out.push_back(-2 * g * u[j] * u[j] * nd.weights[t] * nd.weights[t] *
                        sqdist_col(x, z, nd.cols[t] - 1).cwiseProduct(Kj).cwiseProduct(K));
      }
      for (std::size_t j = 0; j < kk.nodes.size(); ++j)
        out.push_back(-2 * g * u[j] * u[j] *
                      (1 - leaf_gram(j, x, z).array()).matrix().cwiseProduct(K));
      return out;
    };
    const kl::Vec ref =
        loop_gradient(dK(dd.x1, dd.x1, K11), dK(dd.x2, dd.x1, K21), K21, sol, dd.y2);
    CHECK_EQ(ref.size(), p);
    const kl::Vec got = bilevel(dd, k_d2(), theta, g, lam, true).gradient;
    CHECK_LT(ct::rel_err(flat(got), flat(ref)), 1e-8);
  }
}

TEST_CASE("hgk: the objective and its gradient do not depend on the thread count") {
  const ObjData dd = obj_data(300, 200, 5, 2, ct::seed2(51, 1));
  const kl::Vec theta = log_params(k_d3());
  const Eval a = bilevel(dd, k_d3(), theta, 1.1, 0.01, true, 1);
  const Eval b = bilevel(dd, k_d3(), theta, 1.1, 0.01, true, 2);
  CHECK_EQUAL(a.value, b.value, 1e-13);
  CHECK_EQUAL(a.fit.alpha, b.fit.alpha, 1e-13);
  CHECK_EQUAL(a.fit.bias, b.fit.bias, 1e-13);
  CHECK_EQUAL(a.gradient, b.gradient, 1e-13);
}

TEST_CASE("hgk: single-precision passes give the double objective and gradients to float "
          "accuracy, L = 1, 3") {
  if (!kl::hgk_pass_available(k_d3().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  for (int L : {1, 3}) {
    const ObjData dd = obj_data(300, 200, 5, L, ct::seed2(51, 2 + L));
    const kl::Vec theta = log_params(k_d3());
    const Eval d = bilevel(dd, k_d3(), theta, 1.1, 0.01, true);
    const Eval s = bilevel(dd, k_d3(), theta, 1.1, 0.01, true, 2, true);
    CHECK_LT(std::fabs(s.value - d.value) / d.value, 1e-5);
    CHECK_LT(ct::max_abs(s.gradient - d.gradient) / ct::max_abs(d.gradient), 1e-4);
    CHECK_LT(ct::max_abs(s.fit.alpha - d.fit.alpha) / ct::max_abs(d.fit.alpha), 1e-4);
    const Eval fd = fixed(dd, k_d3(), theta, 1.1, 0.01, d.fit.alpha, d.fit.bias, true);
    const Eval fs = fixed(dd, k_d3(), theta, 1.1, 0.01, d.fit.alpha, d.fit.bias, true, true);
    CHECK_LT(std::fabs(fs.value - fd.value) / fd.value, 1e-5);
    CHECK_LT(ct::max_abs(fs.gradient - fd.gradient) / ct::max_abs(fd.gradient), 1e-4);
    // and the double ones are the same whether or not a single-precision objective ran before
    CHECK_EQUAL(fd.value, d.value, 1e-12);
  }
}

TEST_CASE("hgk: single precision factors K11 in single precision with refinement, and in "
          "double where the penalty is too small for that") {
  if (!kl::hgk_pass_available(k_d3().flatten())) {
    ct::note("no vectorised instruction set");
    return;
  }
  const ObjData dd = obj_data(600, 200, 5, 2, ct::seed2(52, 1));
  const kl::HgkFamily fam(k_d3().flatten(), 5);
  const kl::Vec theta = log_params(k_d3());
  // a narrow kernel and a moderate penalty; a wide kernel and a tiny one
  for (const auto& [g, lam] : {std::pair{1.1, 1e-3}, std::pair{0.02, 1e-13}}) {
    // the reference: the single-precision values of K11, factored and solved in double
    const std::vector<kl::HgkNode> nodes = fam.nodes_at(theta, g);
    Eigen::MatrixXf Kf(600, 600);
    kl::hgk_pass_lower(nodes, 5, dd.x1, Kf, 2, kl::Callbacks());
    const kl::Mat K = Kf.cast<double>().selfadjointView<Eigen::Lower>();
    kl::Mat M = K;
    M.diagonal().array() += 600 * lam;
    const Eigen::LLT<kl::Mat> llt(M);
    kl::Mat rhs(600, 3);
    rhs << dd.y1, kl::Vec::Ones(600);
    const kl::Mat sol = llt.solve(rhs);
    const kl::Vec v = sol.col(2);
    const kl::Vec bias = sol.leftCols(2).colwise().sum().transpose() / v.sum();
    const kl::Mat alpha = sol.leftCols(2) - v * bias.transpose();
    kl::HgkObjective obj(fam, dd.x1, dd.y1, dd.x2, dd.y2, g, lam, 2, kl::Callbacks(), true);
    kl::Vec grad;
    obj.bilevel(theta, &grad);
    const kl::LsFit& fit = obj.fit_at(theta);
    if (lam > 1e-6) {
      // refined to 1e-9 per column (the error left is below that)
      CHECK(obj.mixed());
      CHECK_LT(ct::max_abs(fit.alpha - alpha) / ct::max_abs(alpha), 1e-8);
      CHECK_LT(ct::max_abs(fit.bias - bias), 1e-8 * (1.0 + ct::max_abs(bias)));
    } else {
      // condition number ~1e13: the single-precision factor fails or does not refine, and the
      // same values are factored in double (the reference's own accuracy is then ~1e-4)
      CHECK(!obj.mixed());
      CHECK_LT(ct::max_abs(fit.alpha - alpha) / ct::max_abs(alpha), 1e-3);
    }
    // the same evaluation at 1 thread: identical
    kl::HgkObjective obj1(fam, dd.x1, dd.y1, dd.x2, dd.y2, g, lam, 1, kl::Callbacks(), true);
    kl::Vec grad1;
    obj1.bilevel(theta, &grad1);
    CHECK_IDENTICAL(flat(grad1), flat(grad));
    CHECK_IDENTICAL(obj1.fit_at(theta).alpha, fit.alpha);
  }
}

TEST_CASE("hgk: with a leaf too wide for the fused pass, the tile path's objective and gradients "
          "are right") {
  // a leaf over 17 columns: the objective takes the kernel's blocks and tile contractions
  ct::HTree k;
  std::vector<int> cols;
  std::vector<double> w;
  for (int c = 1; c <= 17; ++c) {
    cols.push_back(c);
    w.push_back(0.3 + 0.05 * c);
  }
  k.nodes = {{cols, w, nullptr}, {{18}, {1.2}, nullptr}};
  k.node_weights = {0.9, 0.6};
  CHECK(!kl::hgk_pass_available(k.flatten()));
  for (int L : {1, 2}) {
    const ObjData dd = obj_data(40, 30, 18, L, ct::seed2(60 + L, 1));
    const kl::HgkFamily fam(k.flatten(), 18);
    const kl::Vec theta = log_params(k);
    const double g = 0.9, lam = 0.01;
    auto value = [&](const kl::Vec& t, kl::Vec* grad, const kl::LsFit* fit) {
      kl::HgkObjective obj(fam, dd.x1, dd.y1, dd.x2, dd.y2, g, lam, 1, kl::Callbacks());
      return fit ? obj.fixed(t, *fit, grad) : obj.bilevel(t, grad);
    };
    // the value against the independent LS-SVM on the tree's recursive Gram matrices
    const ct::HTree kk = at(k, theta, g);
    const LsRef sol = ls_svm_ref(kk.gram(dd.x1, dd.x1), dd.y1, dd.x1.rows() * lam);
    CHECK_EQUAL(value(theta, nullptr, nullptr),
                risk_ref(kk.gram(dd.x2, dd.x1), dd.y2, sol.alpha, sol.bias), 1e-10);
    kl::Vec gb, gf;
    value(theta, &gb, nullptr);
    const auto fb = [&](const kl::Mat& t) { return value(t.col(0), nullptr, nullptr); };
    CHECK_LT(ct::rel_err(flat(gb), ct::central_diff(fb, flat(theta))), 1e-6);
    kl::LsFit fit;
    fit.alpha = sol.alpha.array() + 0.05;
    fit.bias = sol.bias;
    value(theta, &gf, &fit);
    const auto ff = [&](const kl::Mat& t) { return value(t.col(0), nullptr, &fit); };
    CHECK_LT(ct::rel_err(flat(gf), ct::central_diff(ff, flat(theta))), 1e-6);
  }
}

TEST_CASE("hgk: learning runs side by side on worker threads equal the same runs one by one") {
  kl::Rng rng(ct::seed2(61, 1));
  const int n = 260, d = 5;
  const kl::Mat X = ct::runif(rng, n, d);
  kl::Mat Y(n, 1);
  Y.col(0) = (X.col(0) * 3.0).array().sin() + X.col(1).array() * X.col(2).array();
  Y += ct::rnorm(rng, n, 1, 0, 0.1);
  const kl::HgkFamily f1(k_d1().flatten(), d), f2(k_d2().flatten(), d);
  // three folds of two architectures, and a run that keeps its start weights
  std::vector<kl::HgkRun> runs;
  for (int a = 0; a < 2; ++a)
    for (int f = 0; f < 3; ++f) {
      kl::HgkRun r;
      r.family = a == 0 ? &f1 : &f2;
      for (int i = 0; i < n; ++i)
        if (i % 3 != f) r.rows.push_back(i);
      r.theta0 = log_params(a == 0 ? k_d1() : k_d2());
      r.maxit = 4;
      r.seed = 100 + 10 * a + f;
      runs.push_back(r);
    }
  runs.push_back(runs[3]);
  runs.back().maxit = 0;
  kl::HgkOptions opt;
  opt.anneal_steps = 2;
  opt.threads = 2;
  CHECK_EQ(kl::hgk_runs_workers(runs, opt), 2);
  const std::vector<kl::HgkResult> side = kl::hgk_learn_runs(X, Y, runs, opt, kl::Callbacks());
  opt.threads = 1;
  CHECK_EQ(kl::hgk_runs_workers(runs, opt), 1);
  for (std::size_t t = 0; t < runs.size(); ++t) {
    const kl::HgkRun& r = runs[t];
    kl::Mat Xr(r.rows.size(), d), Yr(r.rows.size(), 1);
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      Xr.row(i) = X.row(r.rows[i]);
      Yr.row(i) = Y.row(r.rows[i]);
    }
    kl::HgkOptions o = opt;
    o.maxit = r.maxit;
    kl::Rng g(r.seed);
    const kl::HgkResult one = kl::hgk_learn(*r.family, Xr, Yr, r.theta0, o, g, kl::Callbacks());
    CHECK_EQ(side[t].steps, one.steps);
    CHECK_EQ(side[t].gamma, one.gamma);
    CHECK_EQ(side[t].lambda, one.lambda);
    CHECK_IDENTICAL(side[t].theta, one.theta);
    CHECK_IDENTICAL(side[t].fit.alpha, one.fit.alpha);
    CHECK_IDENTICAL(side[t].fit.bias, one.fit.bias);
  }
  // the learned runs moved their weights; the last kept its start
  CHECK(!(side[3].theta.array() == runs[3].theta0.array()).all());
  CHECK_IDENTICAL(side.back().theta, runs.back().theta0);
  // a failing run's error reaches the caller; a large D1 runs the runs one after another
  std::vector<kl::HgkRun> bad = runs;
  bad[2].rows.resize(3);
  opt.threads = 2;
  CHECK_THROWS(kl::hgk_learn_runs(X, Y, bad, opt, kl::Callbacks()), kl::Error, "too few rows");
  bad[2].rows.assign(static_cast<std::size_t>(kl::kHgkRunsMaxRows * 3), 0);
  CHECK_EQ(kl::hgk_runs_workers(bad, opt), 1);
}
