// Discriminant Information learning: the gradients of the DI, LS and CE objectives against
// central differences, the DI against the ridge loss it equals and against kernel DCA, the
// ridge head, and training moving a landmark to the optimum.
#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <cmath>

#include "backend/backend.hpp"
#include "harness.hpp"
#include "helpers.hpp"
#include "learners/dikl.hpp"

namespace {

struct Toy {
  kl::Mat x, Y;
  kl::IVec cl;
};

// n rows of d uniform inputs; class (x1 + x2 > 1) + (x3 > 0.6), at most L - 1; Y one-hot.
Toy toy(int n, int d, int L, std::uint64_t seed) {
  kl::Rng rng(seed);
  Toy t;
  t.x = ct::runif(rng, n, d);
  t.cl.resize(n);
  t.Y = kl::Mat::Zero(n, L);
  for (int i = 0; i < n; ++i) {
    const int c = (t.x(i, 0) + t.x(i, 1) > 1) + (t.x(i, 2) > 0.6);
    t.cl[i] = std::min(c, L - 1);
    t.Y(i, t.cl[i]) = 1;
  }
  return t;
}

kl::DiklMapParams map_params(int map, double gamma, const kl::Mat& P, const kl::Vec& b) {
  kl::DiklMapParams p;
  p.map = static_cast<kl::DiklMap>(map);
  p.gamma = gamma;
  p.P = P;
  if (map == 1) p.b = b;
  return p;
}

// The objective's value and, with g, its gradient (one thread, as the R tests ran it).
double obj(const Toy& t, int map, double gamma, const kl::Mat& P, const kl::Vec& b, int objective,
           double rho, const kl::Mat& V, const kl::Vec& c, kl::DiklGradient* g = nullptr,
           double jitter = 0) {
  ct::EigenThreads one(1);
  return kl::dikl_objective(static_cast<kl::DiklObjective>(objective), map_params(map, gamma, P, b),
                            t.x, t.Y, &t.cl, rho, jitter, V, c, g, kl::cpu_backend(), 1);
}

kl::Mat rows_of(const kl::Mat& x, const std::vector<int>& rows) {
  kl::Mat out(static_cast<Eigen::Index>(rows.size()), x.cols());
  for (std::size_t i = 0; i < rows.size(); ++i)
    out.row(static_cast<Eigen::Index>(i)) = x.row(rows[i]);
  return out;
}

// k(Z, Z) of the Gaussian kernel by plain loops.
kl::Mat gauss(const kl::Mat& A, const kl::Mat& B, double gamma) {
  kl::Mat K(A.rows(), B.rows());
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < B.rows(); ++j)
      K(i, j) = std::exp(-gamma * (A.row(i) - B.row(j)).squaredNorm());
  return K;
}

kl::Mat centred(const kl::Mat& M) { return M.rowwise() - M.colwise().mean(); }

kl::Mat flat(const kl::Vec& v) { return kl::Mat(v); }

}  // namespace

TEST_CASE("dikl: DI, LS and CE gradients match central finite differences") {
  const Toy t = toy(40, 3, 3, ct::seed2(1, 1));
  const int J = 6, d = 3, L = 3;
  kl::Rng rng(ct::seed2(2, 1));
  for (int map = 0; map <= 1; ++map) {
    const kl::Mat P = map == 0 ? ct::runif(rng, J, d) : ct::rnorm(rng, J, d, 0, 2);
    const kl::Vec b = map == 0 ? kl::Vec() : ct::runif_vec(rng, J, 0, 2 * ct::kPi);
    const kl::Mat V = ct::rnorm(rng, J, L);
    const kl::Vec cc = ct::rnorm_vec(rng, L);
    const double gamma = 1.7;
    for (int o = 0; o <= 2; ++o) {
      const double rho = 0.3;  // large enough that the rho * k(Z, Z) term matters
      kl::DiklGradient g;
      obj(t, map, gamma, P, b, o, rho, V, cc, &g);
      const auto fP = [&](const kl::Mat& v) { return obj(t, map, gamma, v, b, o, rho, V, cc); };
      CHECK_LT(ct::rel_err(g.gP, ct::central_diff(fP, P)), 1e-6);
      if (map == 1) {
        const auto fb = [&](const kl::Mat& v) {
          return obj(t, map, gamma, P, v.col(0), o, rho, V, cc);
        };
        CHECK_LT(ct::rel_err(flat(g.gb), ct::central_diff(fb, flat(b))), 1e-6);
      }
      if (o == 2) {
        const auto fV = [&](const kl::Mat& v) { return obj(t, map, gamma, P, b, o, rho, v, cc); };
        const auto fc = [&](const kl::Mat& v) {
          return obj(t, map, gamma, P, b, o, rho, V, v.col(0));
        };
        CHECK_LT(ct::rel_err(g.gV, ct::central_diff(fV, V)), 1e-6);
        CHECK_LT(ct::rel_err(flat(g.gc), ct::central_diff(fc, flat(cc))), 1e-6);
      }
    }
  }
}

TEST_CASE("dikl: the rho * k(Z, Z) term of the Nystrom DI gradient is needed") {
  const Toy t = toy(40, 3, 3, ct::seed2(1, 1));
  kl::Rng rng(ct::seed2(3, 1));
  const kl::Mat P = ct::runif(rng, 6, 3);
  const kl::Mat V0 = kl::Mat::Zero(6, 3);
  const kl::Vec c0 = kl::Vec::Zero(3);
  kl::DiklGradient g1, g0;
  obj(t, 0, 1.7, P, kl::Vec(), 0, 0.3, V0, c0, &g1);
  const auto fP = [&](const kl::Mat& v) { return obj(t, 0, 1.7, v, kl::Vec(), 0, 0.3, V0, c0); };
  const kl::Mat num = ct::central_diff(fP, P);
  // The gradient of the data term alone, from a DI with the penalty held at the start value,
  // differs from the full gradient: check the full one matches and the difference is sizeable.
  CHECK_LT(ct::rel_err(g1.gP, num), 1e-6);
  obj(t, 0, 1.7, P, kl::Vec(), 0, 1e-12, V0, c0, &g0);
  CHECK_GT(ct::rel_err(g0.gP, g1.gP), 1e-3);
}

TEST_CASE("dikl: ||Ybar||^2 - DI equals the minimum ridge loss with intercept (eq. 5)") {
  const Toy t = toy(50, 3, 3, ct::seed2(1, 2));
  const int J = 8;
  const double rho = 0.05, gamma = 2;
  kl::Rng rng(ct::seed2(4, 1));
  const kl::Mat Yb = centred(t.Y);
  for (int map = 0; map <= 1; ++map) {
    std::vector<int> perm = rng.permutation(50);
    perm.resize(J);
    const kl::Mat P = map == 0 ? rows_of(t.x, perm) : ct::rnorm(rng, J, 3, 0, 2);
    const kl::Vec b = map == 0 ? kl::Vec() : ct::runif_vec(rng, J, 0, 2 * ct::kPi);
    kl::Mat F;
    kl::dikl_features(map_params(map, gamma, P, b), t.x, F, nullptr, kl::cpu_backend(), 1);
    const double DI = obj(t, map, gamma, P, b, 0, rho, kl::Mat::Zero(J, 3), kl::Vec::Zero(3));
    // Independent: least squares on an augmented system, [1 F] with penalty rows.
    const kl::Mat R =
        map == 0 ? kl::Mat(gauss(P, P, gamma).llt().matrixU()) : kl::Mat(kl::Mat::Identity(J, J));
    kl::Mat A = kl::Mat::Zero(50 + J, J + 1), B = kl::Mat::Zero(50 + J, 3);
    A.topLeftCorner(50, 1).setOnes();
    A.topRightCorner(50, J) = F;
    A.bottomRightCorner(J, J) = std::sqrt(rho) * R;
    B.topRows(50) = t.Y;
    const kl::Mat coef = A.colPivHouseholderQr().solve(B);
    const double loss = (B - A * coef).squaredNorm();
    CHECK_EQUAL(Yb.squaredNorm() - DI, loss, 1e-8);
  }
}

TEST_CASE("dikl: with landmarks equal to the training points KDI equals the kernel DCA value") {
  const Toy t = toy(30, 3, 3, ct::seed2(1, 3));
  const double gamma = 1, rho = 0.1;
  const kl::Mat K = gauss(t.x, t.x, gamma);
  const kl::Mat Kb = centred(K);
  const kl::Mat Num = Kb.transpose() * t.Y * t.Y.transpose() * Kb;
  const kl::Mat Den = Kb.transpose() * Kb + rho * K;
  const kl::Mat U = Den.llt().matrixU();
  const kl::Mat Ui = U.triangularView<Eigen::Upper>().solve(kl::Mat::Identity(30, 30));
  const kl::Mat S = Ui.transpose() * Num * Ui;
  const kl::Vec ev = ct::sym_eigenvalues((S + S.transpose()) / 2);
  const double kdca = ev.head(3).sum();  // at most L nonzero generalized eigenvalues
  const double kdi =
      obj(t, 0, gamma, t.x, kl::Vec(), 0, rho, kl::Mat::Zero(30, 3), kl::Vec::Zero(3));
  CHECK_EQUAL(kdi, kdca, 1e-8);
}

TEST_CASE("dikl: the ridge head on all rows is the batch-optimal solution and its DI") {
  const Toy t = toy(60, 3, 3, ct::seed2(1, 4));
  kl::Rng rng(ct::seed2(5, 1));
  std::vector<int> perm = rng.permutation(60);
  perm.resize(7);
  const kl::Mat P = rows_of(t.x, perm);
  kl::Mat V;
  kl::Vec c;
  double di;
  {
    ct::EigenThreads one(1);
    di = kl::dikl_ridge_head(map_params(0, 2, P, kl::Vec()), t.x, t.Y, 0.01, 0, V, c,
                             kl::cpu_backend(), 1);
  }
  const double DI = obj(t, 0, 2, P, kl::Vec(), 0, 0.01, kl::Mat::Zero(7, 3), kl::Vec::Zero(3));
  CHECK_EQUAL(di, DI, 1e-9);
  // At the head that minimises it, the LS loss is ||Ybar||^2 - DI.
  const double ls = obj(t, 0, 2, P, kl::Vec(), 1, 0.01, V, c);
  CHECK_EQUAL(ls, centred(t.Y).squaredNorm() - DI, 1e-8);
}

TEST_CASE(
    "dikl: DI training moves a landmark to where the optimum is and increases the full-data DI") {
  // One feature on one input: class "a" sits at 0.1 and 0.9, class "b" at 0.5. A landmark at
  // 0.5 separates them (DI about 130 of at most ||Ybar||^2 = 133); started at 0.3 (DI about 32),
  // the landmark has to travel to 0.5.
  kl::Rng rng(ct::seed2(6, 1));
  const int n = 300;
  kl::Mat x(n, 1);
  kl::IVec cls(n);
  kl::Mat Y = kl::Mat::Zero(n, 2);
  const double centre[3] = {0.1, 0.9, 0.5};
  for (int i = 0; i < n; ++i) {
    x(i, 0) = rng.normal(centre[i / 100], 0.04);
    cls[i] = i < 200 ? 0 : 1;
    Y(i, cls[i]) = 1;
  }
  auto di = [&](const kl::Mat& P) {
    kl::Mat V;
    kl::Vec c;
    ct::EigenThreads one(1);
    return kl::dikl_ridge_head(map_params(0, 10, P, kl::Vec()), x, Y, 1e-4, 1e-10, V, c,
                               kl::cpu_backend(), 1);
  };
  kl::DiklTrainOptions opt;
  opt.objective = kl::DiklObjective::di;
  opt.rho = 1e-4;
  opt.jitter = 1e-10;
  opt.batch_size = 100;
  opt.lr = 0.01;
  opt.plateau.max_epochs = 300;
  opt.plateau.patience = 5;
  opt.plateau.rel_tol = 1e-5;
  opt.plateau.factor = 0.1;
  opt.threads = 1;
  kl::Rng train_rng(ct::seed2(1, 2));
  const kl::Mat P0 = kl::Mat::Constant(1, 1, 0.3);
  kl::DiklTrainResult r;
  {
    ct::EigenThreads one(1);
    r = kl::dikl_train(map_params(0, 10, P0, kl::Vec()), x, Y, cls, opt, train_rng,
                       kl::cpu_backend());
  }
  CHECK_LT(std::fabs(r.params.P(0, 0) - 0.5), 0.05);
  CHECK_GT(di(r.params.P), di(P0) + 80);
  CHECK_GT(r.trace.back(), r.trace.front() + 0.2);
}
