// The reusable optimisers of linalg/optim.hpp on problems with known minima (problems.hpp).
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <set>

#include "harness.hpp"
#include "helpers.hpp"
#include "problems.hpp"

namespace {

kl::Vec vec(std::initializer_list<double> v) {
  kl::Vec out(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (double x : v) out[i++] = x;
  return out;
}

}  // namespace

TEST_CASE("optim: L-BFGS with a strong-Wolfe line search minimises Rosenbrock") {
  const kl::LbfgsResult r = ct::rosenbrock_lbfgs(vec({-1.2, 1}), kl::LineSearchKind::wolfe, 1000);
  CHECK(r.converged);
  CHECK_EQUAL(r.x, vec({1, 1}), 1e-6);
  CHECK_LT(r.value, 1e-12);
  CHECK_LT(r.grad.cwiseAbs().maxCoeff(), 1e-8);
  CHECK_LT(r.iterations, 200);
  const kl::LbfgsResult r5 =
      ct::rosenbrock_lbfgs(vec({-1, 2, -1, 0.5, 2}), kl::LineSearchKind::wolfe, 5000);
  CHECK(r5.converged);
  CHECK_EQUAL(r5.x, kl::Vec::Ones(5), 1e-5);
}

TEST_CASE("optim: L-BFGS with Armijo backtracking minimises Rosenbrock") {
  const kl::LbfgsResult r = ct::rosenbrock_lbfgs(vec({-1.2, 1}), kl::LineSearchKind::armijo, 5000);
  CHECK(r.converged);
  CHECK_EQUAL(r.x, vec({1, 1}), 1e-6);
  CHECK_LT(r.value, 1e-12);
}

TEST_CASE("optim: L-BFGS stops at the iteration cap without claiming convergence") {
  const kl::LbfgsResult r = ct::rosenbrock_lbfgs(vec({-1.2, 1}), kl::LineSearchKind::wolfe, 3);
  CHECK(!r.converged);
  CHECK_EQ(r.iterations, 3);
  CHECK_GT(r.value, 1e-3);
}

TEST_CASE("optim: steepest descent with Armijo backtracking makes sufficient-decrease steps") {
  const ct::DescentResult r = ct::rosenbrock_descent(vec({-1.2, 1}), 100000, 1e-5);
  CHECK(r.armijo_ok);
  CHECK(r.converged);
  CHECK_EQUAL(r.x, vec({1, 1}), 1e-4);
  const ct::DescentResult s = ct::rosenbrock_descent(vec({-1.2, 1}), 50, 1e-6);
  CHECK(!s.converged);
  CHECK_LT(s.value, 24.2);  // f(-1.2, 1) = 24.2
}

TEST_CASE("optim: Adam with plateau decay solves a least-squares problem") {
  kl::Rng data(ct::seed2(1, 1));
  const kl::Mat A = ct::rnorm(data, 400, 5);
  const kl::Vec beta = vec({1, -2, 0.5, 3, 0});
  const kl::Vec y = A * beta + ct::rnorm_vec(data, 400, 0, 0.1);
  const kl::Vec exact = A.colPivHouseholderQr().solve(y);
  kl::PlateauOptions po;
  po.factor = 0.1;
  po.patience = 3;
  po.rel_tol = 1e-4;
  po.max_epochs = 2000;
  kl::Rng rng(ct::seed2(1, 2));
  const ct::AdamRun r = ct::least_squares_adam(A, y, kl::Vec::Zero(5), 20, 0.05, po, rng);
  CHECK_EQUAL(r.x, exact, 1e-3);
  CHECK_GE(r.decays, 1);
  CHECK_LT(r.lr, 0.05);
  CHECK(r.reason == "no improvement after a learning-rate decay" ||
        r.reason == "learning rate below its minimum");
  CHECK_LT(r.epochs, 2000);
  CHECK_LT(r.history.back(), r.history.front() / 100);
  // The learning rate only ever decreases, by the factor.
  std::vector<double> lr;
  for (double v : r.lr_history)
    if (std::find(lr.begin(), lr.end(), v) == lr.end()) lr.push_back(v);
  for (std::size_t i = 0; i < lr.size(); ++i)
    CHECK_EQUAL(lr[i], 0.05 * std::pow(0.1, static_cast<double>(i)), 1.490116119384765625e-8);
  // Reproducible with the seed of the mini-batch order.
  kl::Rng rng2(ct::seed2(1, 2));
  const ct::AdamRun r2 = ct::least_squares_adam(A, y, kl::Vec::Zero(5), 20, 0.05, po, rng2);
  CHECK_IDENTICAL(r.x, r2.x);
}

TEST_CASE("optim: the plateau scheduler decays and stops as specified") {
  kl::PlateauOptions po;
  po.patience = 2;
  po.max_epochs = 1000;
  const ct::PlateauRun s = ct::plateau_sequence({10, 9, 8, 8, 8, 7, 7, 7, 7, 7, 6, 5}, 1.0, po);
  const std::vector<double> want = {1, 1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01};
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK_EQUAL(s.lr[i], want[i], 1.490116119384765625e-8);
  CHECK_EQ(s.stop_epoch, 10);
  CHECK_EQ(s.decays, 2);
  CHECK_EQ(s.best, 7.0);
  CHECK_EQ(s.best_epoch, 6);
  CHECK(s.reason == "no improvement after a learning-rate decay");
  // A relative change below rel_tol is not an improvement.
  kl::PlateauOptions p3;
  p3.patience = 3;
  const ct::PlateauRun t = ct::plateau_sequence({1, 0.99999, 0.99998, 0.99997}, 1.0, p3);
  const std::vector<double> want_t = {1, 1, 1, 0.1};
  for (std::size_t i = 0; i < want_t.size(); ++i)
    CHECK_EQUAL(t.lr[i], want_t[i], 1.490116119384765625e-8);
  // Minimum learning rate.
  kl::PlateauOptions pm;
  pm.patience = 2;
  pm.min_lr = 0.05;
  const ct::PlateauRun m = ct::plateau_sequence({5, 5, 5, 4, 4, 4, 3}, 1.0, pm);
  CHECK_EQ(m.stop_epoch, 6);
  CHECK(m.reason == "learning rate below its minimum");
  // Maximum number of epochs.
  kl::PlateauOptions pe;
  pe.patience = 2;
  pe.max_epochs = 4;
  const ct::PlateauRun e = ct::plateau_sequence({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 1.0, pe);
  CHECK_EQ(e.stop_epoch, 4);
  CHECK_EQ(e.decays, 0);
  CHECK(e.reason == "maximum number of epochs reached");
}

TEST_CASE("optim: simulated annealing finds the global minimum of Rastrigin") {
  kl::AnnealOptions opt;
  opt.T0 = 10;
  opt.cooling = 0.9995;
  opt.max_iter = 20000;
  const kl::Vec x0 = vec({3.4, -2.6});
  kl::Rng rng(ct::seed2(5, 6));
  const auto r = ct::rastrigin_anneal(x0, opt, 0.5, rng);
  CHECK_EQ(r.iterations, 20000);
  CHECK_LT(r.best_value, 0.05);
  CHECK_EQ(std::round(r.best[0]), 0.0);
  CHECK_EQ(std::round(r.best[1]), 0.0);
  CHECK_LT(r.best.cwiseAbs().maxCoeff(), 0.02);
  CHECK_GT(r.accepted, 0);
  CHECK_LT(r.accepted, r.iterations);
  // The kept state is the best one seen.
  CHECK_LE(r.best_value, r.last_value);
  // Same seed, same path; another seed, another path.
  kl::Rng rng2(ct::seed2(5, 6));
  const auto r2 = ct::rastrigin_anneal(x0, opt, 0.5, rng2);
  CHECK_IDENTICAL(r.best, r2.best);
  kl::Rng rng3(ct::seed2(7, 8));
  const auto r3 = ct::rastrigin_anneal(x0, opt, 0.5, rng3);
  CHECK(r.best != r3.best);
  CHECK_LT(r3.best_value, 0.05);
  // With almost no iterations it cannot get there from a far start.
  kl::AnnealOptions few;
  few.T0 = 10;
  few.cooling = 0.999;
  few.max_iter = 5;
  kl::Rng rng4(ct::seed2(1, 2));
  const auto s = ct::rastrigin_anneal(x0, few, 0.01, rng4);
  CHECK_GT(s.best_value, 10);
}
