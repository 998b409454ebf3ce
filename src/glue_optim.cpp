// Glue: the optimisers on built-in test problems, and draws from the core's random engine.
#include <cmath>
#include <string>
#include <vector>

#include "glue.hpp"
#include "core/linalg/optim.hpp"
#include "core/base/rng.hpp"

namespace {

template <class T>
T control_or(const Rcpp::List& control, const char* name, T fallback) {
  if (!control.containsElementNamed(name)) return fallback;
  return Rcpp::as<T>(control[name]);
}

// sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, minimum 0 at (1, ..., 1).
double rosenbrock(const kl::CVecRef& x, kl::Vec* g) {
  const Eigen::Index n = x.size();
  double f = 0.0;
  if (g) g->setZero(n);
  for (Eigen::Index i = 0; i + 1 < n; ++i) {
    const double a = x[i + 1] - x[i] * x[i];
    const double c = 1.0 - x[i];
    f += 100.0 * a * a + c * c;
    if (g) {
      (*g)[i] += -400.0 * a * x[i] - 2.0 * c;
      (*g)[i + 1] += 200.0 * a;
    }
  }
  return f;
}

// 10 d + sum_i (x_i^2 - 10 cos(2 pi x_i)), minimum 0 at the origin, local minima near integers.
double rastrigin(const kl::Vec& x) {
  const double two_pi = 6.283185307179586;
  double f = 10.0 * static_cast<double>(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) f += x[i] * x[i] - 10.0 * std::cos(two_pi * x[i]);
  return f;
}

Rcpp::List run_rosenbrock(const std::string& method, const kl::Vec& x0, const Rcpp::List& control,
                          const kl::Callbacks& cb) {
  kl::ValueGradFn fg = [](const kl::CVecRef& x, kl::VecRef grad) {
    kl::Vec g;
    const double f = rosenbrock(x, &g);
    grad = g;
    return f;
  };
  if (method == "lbfgs_wolfe" || method == "lbfgs_armijo") {
    kl::LbfgsOptions opt;
    opt.memory = control_or<int>(control, "memory", 10);
    opt.max_iter = control_or<int>(control, "max_iter", 1000);
    opt.gtol = control_or<double>(control, "gtol", 1e-8);
    opt.ftol = control_or<double>(control, "ftol", 0.0);
    opt.line_search =
        method == "lbfgs_wolfe" ? kl::LineSearchKind::wolfe : kl::LineSearchKind::armijo;
    kl::LbfgsResult r = kl::lbfgs(fg, x0, opt, cb);
    return Rcpp::List::create(
        Rcpp::Named("x") = Rcpp::wrap(r.x), Rcpp::Named("value") = r.value,
        Rcpp::Named("grad") = Rcpp::wrap(r.grad), Rcpp::Named("iterations") = r.iterations,
        Rcpp::Named("evaluations") = r.evaluations, Rcpp::Named("converged") = r.converged,
        Rcpp::Named("message") = r.message);
  }
  if (method == "gd_armijo") {
    // Steepest descent with the value-only Armijo search; each search starts from twice the
    // previous accepted step.
    const int max_iter = control_or<int>(control, "max_iter", 50000);
    const double gtol = control_or<double>(control, "gtol", 1e-6);
    kl::ValueFn f = [](const kl::CVecRef& x) { return rosenbrock(x, nullptr); };
    kl::Vec x = x0, g;
    double fx = rosenbrock(x, &g);
    double step = 1.0;
    int it = 0, evals = 1;
    bool converged = false, sufficient = true;
    for (; it < max_iter; ++it) {
      if (g.cwiseAbs().maxCoeff() <= gtol) {
        converged = true;
        break;
      }
      if (it % 1000 == 0) cb.check();
      const kl::Vec d = -g;
      kl::LineSearchResult ls = kl::armijo_search(f, x, fx, g, d, std::min(1.0, 2.0 * step));
      evals += ls.evaluations;
      if (!ls.success) break;
      // The accepted step satisfies the sufficient-decrease condition.
      if (!(ls.value <= fx + 1e-4 * ls.step * g.dot(d))) sufficient = false;
      step = ls.step;
      x += step * d;
      fx = rosenbrock(x, &g);
      ++evals;
      if (fx != ls.value) sufficient = false;
    }
    return Rcpp::List::create(
        Rcpp::Named("x") = Rcpp::wrap(x), Rcpp::Named("value") = fx,
        Rcpp::Named("grad") = Rcpp::wrap(g), Rcpp::Named("iterations") = it,
        Rcpp::Named("evaluations") = evals, Rcpp::Named("converged") = converged,
        Rcpp::Named("armijo_ok") = sufficient);
  }
  Rcpp::stop("unknown method '%s' for the rosenbrock problem", method);
}

// Least squares 0.5 / n * ||A x - y||^2 by mini-batch Adam with the plateau scheduler.
Rcpp::List run_least_squares(const std::string& method, const kl::Vec& x0,
                             const Rcpp::List& control, kl::Rng& rng, const kl::Callbacks& cb) {
  if (method != "adam") Rcpp::stop("unknown method '%s' for the least_squares problem", method);
  if (!control.containsElementNamed("A") || !control.containsElementNamed("y"))
    Rcpp::stop("control must hold the matrix A and the vector y");
  const kl::Mat A = Rcpp::as<kl::Mat>(control["A"]);
  const kl::Vec y = Rcpp::as<kl::Vec>(control["y"]);
  const Eigen::Index n = A.rows(), p = A.cols();
  if (y.size() != n || x0.size() != p) Rcpp::stop("A, y and x0 have inconsistent sizes");
  const int batch = std::max(1, std::min<int>(control_or<int>(control, "batch", 32),
                                               static_cast<int>(n)));
  kl::AdamOptions ao;
  ao.lr = control_or<double>(control, "lr", 0.05);
  kl::PlateauOptions po;
  po.factor = control_or<double>(control, "factor", 0.1);
  po.patience = control_or<int>(control, "patience", 3);
  po.rel_tol = control_or<double>(control, "rel_tol", 1e-4);
  po.min_lr = control_or<double>(control, "min_lr", 1e-10);
  po.max_epochs = control_or<int>(control, "max_epochs", 500);

  kl::Adam adam(p, ao);
  kl::PlateauScheduler sched(ao.lr, po);
  kl::Vec x = x0, g(p), r;
  std::vector<double> history, lrs;
  while (true) {
    cb.check();
    const std::vector<int> perm = rng.permutation(static_cast<int>(n));
    double epoch_sum = 0.0;
    for (Eigen::Index start = 0; start < n; start += batch) {
      const Eigen::Index len = std::min<Eigen::Index>(batch, n - start);
      g.setZero();
      double loss = 0.0;
      for (Eigen::Index j = start; j < start + len; ++j) {
        const Eigen::Index i = perm[static_cast<std::size_t>(j)];
        const double e = A.row(i).dot(x) - y[i];
        loss += 0.5 * e * e;
        g.noalias() += e * A.row(i).transpose();
      }
      epoch_sum += loss;
      g /= static_cast<double>(len);
      adam.step(x, g);
    }
    history.push_back(epoch_sum / static_cast<double>(n));
    lrs.push_back(adam.lr());
    const bool stop = sched.update(history.back());
    adam.set_lr(sched.lr());
    if (stop) break;
  }
  r = A * x - y;
  return Rcpp::List::create(
      Rcpp::Named("x") = Rcpp::wrap(x), Rcpp::Named("value") = 0.5 * r.squaredNorm() / n,
      Rcpp::Named("epochs") = sched.epochs(), Rcpp::Named("decays") = sched.decays(),
      Rcpp::Named("lr") = sched.lr(), Rcpp::Named("best") = sched.best(),
      Rcpp::Named("reason") = sched.reason_text(), Rcpp::Named("history") = Rcpp::wrap(history),
      Rcpp::Named("lr_history") = Rcpp::wrap(lrs), Rcpp::Named("steps") = adam.steps());
}

Rcpp::List run_rastrigin(const std::string& method, const kl::Vec& x0, const Rcpp::List& control,
                         kl::Rng& rng, const kl::Callbacks& cb) {
  if (method != "anneal") Rcpp::stop("unknown method '%s' for the rastrigin problem", method);
  kl::AnnealOptions opt;
  opt.T0 = control_or<double>(control, "T0", 10.0);
  opt.cooling = control_or<double>(control, "cooling", 0.999);
  opt.max_iter = control_or<int>(control, "max_iter", 20000);
  opt.check_every = control_or<int>(control, "check_every", 100);
  const double step = control_or<double>(control, "step", 0.5);
  auto f = [](const kl::Vec& x) { return rastrigin(x); };
  auto propose = [step](const kl::Vec& x, kl::Rng& g, double) {
    kl::Vec y = x;
    for (Eigen::Index i = 0; i < y.size(); ++i) y[i] += step * g.normal();
    return y;
  };
  kl::AnnealResult<kl::Vec> r = kl::anneal(f, propose, x0, opt, rng, cb);
  return Rcpp::List::create(
      Rcpp::Named("x") = Rcpp::wrap(r.best), Rcpp::Named("value") = r.best_value,
      Rcpp::Named("last") = Rcpp::wrap(r.last), Rcpp::Named("last_value") = r.last_value,
      Rcpp::Named("iterations") = r.iterations, Rcpp::Named("accepted") = r.accepted);
}

// Feeds control$values to the plateau scheduler one epoch at a time.
Rcpp::List run_plateau(const std::string& method, const Rcpp::List& control) {
  if (method != "sequence") Rcpp::stop("unknown method '%s' for the plateau problem", method);
  if (!control.containsElementNamed("values")) Rcpp::stop("control must hold the vector values");
  const Rcpp::NumericVector values = control["values"];
  kl::PlateauOptions po;
  po.factor = control_or<double>(control, "factor", 0.1);
  po.patience = control_or<int>(control, "patience", 2);
  po.rel_tol = control_or<double>(control, "rel_tol", 1e-4);
  po.min_lr = control_or<double>(control, "min_lr", 1e-10);
  po.max_epochs = control_or<int>(control, "max_epochs", 1000);
  kl::PlateauScheduler sched(control_or<double>(control, "lr", 1.0), po);
  Rcpp::NumericVector lr(values.size(), NA_REAL);
  int stop_epoch = NA_INTEGER;
  for (R_xlen_t i = 0; i < values.size(); ++i) {
    const bool stop = sched.update(values[i]);
    lr[i] = sched.lr();
    if (stop) {
      stop_epoch = static_cast<int>(i) + 1;
      break;
    }
  }
  return Rcpp::List::create(Rcpp::Named("lr") = lr, Rcpp::Named("stop_epoch") = stop_epoch,
                            Rcpp::Named("decays") = sched.decays(),
                            Rcpp::Named("best") = sched.best(),
                            Rcpp::Named("best_epoch") = sched.best_epoch(),
                            Rcpp::Named("reason") = sched.reason_text());
}

}  // namespace

// Runs an optimiser on a built-in problem: "rosenbrock" (methods "lbfgs_wolfe",
// "lbfgs_armijo", "gd_armijo"), "least_squares" ("adam", with control$A and control$y) or
// "rastrigin" ("anneal") or "plateau" ("sequence": the scheduler fed control$values).
// [[Rcpp::export]]
Rcpp::List cpp_optim_test(std::string problem, std::string method, Rcpp::NumericVector x0,
                          Rcpp::List control, Rcpp::IntegerVector seed) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::Vec x = Eigen::Map<const Eigen::VectorXd>(x0.begin(), x0.size());
    kl::Rng rng(klr::seed_from_r(seed));
    kl::Callbacks cb = klr::make_callbacks();
    if (problem == "rosenbrock") return run_rosenbrock(method, x, control, cb);
    if (problem == "least_squares") return run_least_squares(method, x, control, rng, cb);
    if (problem == "rastrigin") return run_rastrigin(method, x, control, rng, cb);
    if (problem == "plateau") return run_plateau(method, control);
    Rcpp::stop("unknown problem '%s'", problem);
  });
}

// n draws from the core's engine: "uniform", "uniform_open", "normal", "below" (integers in
// [0, bound)), "permutation" (of 0..n-1) or "split" (uniforms from a derived stream).
// [[Rcpp::export]]
SEXP cpp_rng_draw(Rcpp::IntegerVector seed, int n, std::string what, double bound = 0) {
  return klr::guard([&]() -> SEXP {
    if (n < 0) Rcpp::stop("'n' must be non-negative");
    kl::Rng rng(klr::seed_from_r(seed));
    if (what == "uniform" || what == "uniform_open" || what == "normal" || what == "split") {
      Rcpp::NumericVector out(n);
      if (what == "split") {
        kl::Rng child = rng.split();
        for (int i = 0; i < n; ++i) out[i] = child.uniform();
      } else {
        for (int i = 0; i < n; ++i)
          out[i] = what == "uniform" ? rng.uniform()
                   : what == "uniform_open" ? rng.uniform_open()
                   : rng.normal();
      }
      return out;
    }
    if (what == "below") {
      if (!(bound >= 1.0) || bound > 9007199254740992.0 || bound != std::floor(bound))
        Rcpp::stop("'bound' must be a whole number >= 1");
      Rcpp::NumericVector out(n);
      const auto m = static_cast<std::uint64_t>(bound);
      for (int i = 0; i < n; ++i) out[i] = static_cast<double>(rng.below(m));
      return out;
    }
    if (what == "permutation") {
      const std::vector<int> p = rng.permutation(n);
      return Rcpp::IntegerVector(p.begin(), p.end());
    }
    Rcpp::stop("unknown draw '%s'", what);
  });
}
