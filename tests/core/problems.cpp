#include "problems.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ct {

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

double rastrigin(const kl::Vec& x) {
  const double two_pi = 6.283185307179586;
  double f = 10.0 * static_cast<double>(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) f += x[i] * x[i] - 10.0 * std::cos(two_pi * x[i]);
  return f;
}

kl::LbfgsResult rosenbrock_lbfgs(const kl::Vec& x0, kl::LineSearchKind search, int max_iter,
                                 int memory, double gtol, double ftol) {
  kl::ValueGradFn fg = [](const kl::CVecRef& x, kl::VecRef grad) {
    kl::Vec g;
    const double f = rosenbrock(x, &g);
    grad = g;
    return f;
  };
  kl::LbfgsOptions opt;
  opt.memory = memory;
  opt.max_iter = max_iter;
  opt.gtol = gtol;
  opt.ftol = ftol;
  opt.line_search = search;
  return kl::lbfgs(fg, x0, opt);
}

DescentResult rosenbrock_descent(const kl::Vec& x0, int max_iter, double gtol) {
  kl::ValueFn f = [](const kl::CVecRef& x) { return rosenbrock(x, nullptr); };
  DescentResult r;
  r.x = x0;
  r.value = rosenbrock(r.x, &r.grad);
  r.evaluations = 1;
  double step = 1.0;
  int it = 0;
  for (; it < max_iter; ++it) {
    if (r.grad.cwiseAbs().maxCoeff() <= gtol) {
      r.converged = true;
      break;
    }
    const kl::Vec d = -r.grad;
    kl::LineSearchResult ls =
        kl::armijo_search(f, r.x, r.value, r.grad, d, std::min(1.0, 2.0 * step));
    r.evaluations += ls.evaluations;
    if (!ls.success) break;
    if (!(ls.value <= r.value + 1e-4 * ls.step * r.grad.dot(d))) r.armijo_ok = false;
    step = ls.step;
    r.x += step * d;
    r.value = rosenbrock(r.x, &r.grad);
    ++r.evaluations;
    if (r.value != ls.value) r.armijo_ok = false;
  }
  r.iterations = it;
  return r;
}

AdamRun least_squares_adam(const kl::Mat& A, const kl::Vec& y, const kl::Vec& x0, int batch,
                           double lr, const kl::PlateauOptions& po, kl::Rng& rng) {
  const Eigen::Index n = A.rows(), p = A.cols();
  batch = std::max(1, std::min<int>(batch, static_cast<int>(n)));
  kl::AdamOptions ao;
  ao.lr = lr;
  kl::Adam adam(p, ao);
  kl::PlateauScheduler sched(ao.lr, po);
  AdamRun out;
  kl::Vec x = x0, g(p);
  while (true) {
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
    out.history.push_back(epoch_sum / static_cast<double>(n));
    out.lr_history.push_back(adam.lr());
    const bool stop = sched.update(out.history.back());
    adam.set_lr(sched.lr());
    if (stop) break;
  }
  const kl::Vec r = A * x - y;
  out.x = x;
  out.value = 0.5 * r.squaredNorm() / static_cast<double>(n);
  out.epochs = sched.epochs();
  out.decays = sched.decays();
  out.lr = sched.lr();
  out.best = sched.best();
  out.reason = sched.reason_text();
  out.steps = adam.steps();
  return out;
}

kl::AnnealResult<kl::Vec> rastrigin_anneal(const kl::Vec& x0, const kl::AnnealOptions& opt,
                                           double step, kl::Rng& rng) {
  auto f = [](const kl::Vec& x) { return rastrigin(x); };
  auto propose = [step](const kl::Vec& x, kl::Rng& g, double) {
    kl::Vec y = x;
    for (Eigen::Index i = 0; i < y.size(); ++i) y[i] += step * g.normal();
    return y;
  };
  return kl::anneal(f, propose, x0, opt, rng);
}

PlateauRun plateau_sequence(const std::vector<double>& values, double lr,
                            const kl::PlateauOptions& po) {
  kl::PlateauScheduler sched(lr, po);
  PlateauRun out;
  out.lr.assign(values.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const bool stop = sched.update(values[i]);
    out.lr[i] = sched.lr();
    if (stop) {
      out.stop_epoch = static_cast<int>(i) + 1;
      break;
    }
  }
  out.decays = sched.decays();
  out.best = sched.best();
  out.best_epoch = sched.best_epoch();
  out.reason = sched.reason_text();
  return out;
}

}  // namespace ct
