#include "linalg/optim.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace kl {

// ---------------------------------------------------------------------------------------------
// Adam

Adam::Adam(Eigen::Index n, const AdamOptions& opt) : opt_(opt), m_(Vec::Zero(n)), v_(Vec::Zero(n)) {
  if (n < 0) throw Error("Adam: negative dimension");
  if (!(opt.lr > 0.0)) throw Error("Adam: lr must be positive");
  if (!(opt.beta1 >= 0.0 && opt.beta1 < 1.0)) throw Error("Adam: beta1 must be in [0, 1)");
  if (!(opt.beta2 >= 0.0 && opt.beta2 < 1.0)) throw Error("Adam: beta2 must be in [0, 1)");
  if (!(opt.eps > 0.0)) throw Error("Adam: eps must be positive");
}

void Adam::reset() {
  m_.setZero();
  v_.setZero();
  t_ = 0;
  b1t_ = b2t_ = 1.0;
}

void Adam::step(VecRef x, const CVecRef& grad) {
  if (x.size() != m_.size() || grad.size() != m_.size())
    throw Error("Adam: parameter and gradient sizes differ from the optimiser's");
  ++t_;
  b1t_ *= opt_.beta1;
  b2t_ *= opt_.beta2;
  const double c1 = 1.0 / (1.0 - b1t_);
  const double c2 = 1.0 / (1.0 - b2t_);
  const double b1 = opt_.beta1, b2 = opt_.beta2;
  for (Eigen::Index j = 0; j < x.size(); ++j) {
    const double g = grad[j];
    m_[j] = b1 * m_[j] + (1.0 - b1) * g;
    v_[j] = b2 * v_[j] + (1.0 - b2) * g * g;
    x[j] -= opt_.lr * (m_[j] * c1) / (std::sqrt(v_[j] * c2) + opt_.eps);
  }
}

// ---------------------------------------------------------------------------------------------
// Plateau scheduler

PlateauScheduler::PlateauScheduler(double lr, const PlateauOptions& opt) : opt_(opt), lr_(lr) {
  if (!(lr > 0.0)) throw Error("PlateauScheduler: lr must be positive");
  if (!(opt.factor > 0.0 && opt.factor < 1.0))
    throw Error("PlateauScheduler: factor must be in (0, 1)");
  if (opt.patience < 1) throw Error("PlateauScheduler: patience must be at least 1");
  if (!(opt.rel_tol >= 0.0)) throw Error("PlateauScheduler: rel_tol must be non-negative");
  if (opt.max_epochs < 1) throw Error("PlateauScheduler: max_epochs must be at least 1");
}

bool PlateauScheduler::update(double objective) {
  if (stop_ != Stop::none) return true;
  ++epochs_;
  const bool improved =
      !std::isnan(objective) &&
      (std::isinf(best_) ? objective < best_ : objective < best_ - opt_.rel_tol * std::abs(best_));
  if (improved) {
    best_ = objective;
    best_epoch_ = epochs_;
    bad_ = 0;
    improved_since_decay_ = true;
  } else {
    ++bad_;
  }
  if (bad_ >= opt_.patience) {
    if (decays_ > 0 && !improved_since_decay_) {
      stop_ = Stop::plateau;
    } else {
      lr_ *= opt_.factor;
      ++decays_;
      bad_ = 0;
      improved_since_decay_ = false;
      if (lr_ < opt_.min_lr) stop_ = Stop::min_lr;
    }
  }
  if (stop_ == Stop::none && epochs_ >= opt_.max_epochs) stop_ = Stop::max_epochs;
  return stop_ != Stop::none;
}

std::string PlateauScheduler::reason_text() const {
  switch (stop_) {
    case Stop::plateau: return "no improvement after a learning-rate decay";
    case Stop::min_lr: return "learning rate below its minimum";
    case Stop::max_epochs: return "maximum number of epochs reached";
    default: return "running";
  }
}

// ---------------------------------------------------------------------------------------------
// Line searches

namespace {

void check_ls_args(const CVecRef& x, const CVecRef& grad, const CVecRef& dir, double step0) {
  if (grad.size() != x.size() || dir.size() != x.size())
    throw Error("line search: x, gradient and direction sizes differ");
  if (!(step0 > 0.0) || !std::isfinite(step0))
    throw Error("line search: the initial step must be positive and finite");
}

// Minimiser of the cubic interpolating (a, fa, da) and (b, fb, db), kept inside the interval
// shrunk by 10% at both ends; bisection when the cubic is unusable.
double cubic_step(double a, double fa, double da, double b, double fb, double db) {
  const double lo = std::min(a, b), hi = std::max(a, b), w = hi - lo;
  const double mid = 0.5 * (a + b);
  if (!(w > 0.0) || !std::isfinite(fa) || !std::isfinite(fb) || !std::isfinite(da) ||
      !std::isfinite(db))
    return mid;
  const double d1 = da + db - 3.0 * (fa - fb) / (a - b);
  const double disc = d1 * d1 - da * db;
  if (!(disc >= 0.0)) return mid;
  const double d2 = (b > a ? 1.0 : -1.0) * std::sqrt(disc);
  const double den = db - da + 2.0 * d2;
  if (den == 0.0) return mid;
  const double t = b - (b - a) * (db + d2 - d1) / den;
  if (!std::isfinite(t) || t < lo + 0.1 * w || t > hi - 0.1 * w) return mid;
  return t;
}

}  // namespace

LineSearchResult armijo_search(const ValueFn& f, const CVecRef& x, double fx, const CVecRef& grad,
                               const CVecRef& dir, double step0, const LineSearchOptions& opt) {
  check_ls_args(x, grad, dir, step0);
  LineSearchResult res;
  res.value = fx;
  const double slope = grad.dot(dir);
  if (!(slope < 0.0)) return res;
  Vec xt(x.size());
  double a = step0;
  for (int k = 0; k < opt.max_steps; ++k) {
    xt.noalias() = x + a * dir;
    const double ft = f(xt);
    ++res.evaluations;
    if (std::isfinite(ft) && ft <= fx + opt.c1 * a * slope) {
      res.step = a;
      res.value = ft;
      res.success = true;
      return res;
    }
    a *= opt.shrink;
  }
  return res;
}

LineSearchResult armijo_search(const ValueGradFn& fg, const CVecRef& x, double fx,
                               const CVecRef& grad, const CVecRef& dir, double step0, Vec& x_new,
                               Vec& g_new, const LineSearchOptions& opt) {
  check_ls_args(x, grad, dir, step0);
  LineSearchResult res;
  res.value = fx;
  const double slope = grad.dot(dir);
  if (!(slope < 0.0)) return res;
  Vec xt(x.size()), gt(x.size());
  double a = step0;
  for (int k = 0; k < opt.max_steps; ++k) {
    xt.noalias() = x + a * dir;
    const double ft = fg(xt, gt);
    ++res.evaluations;
    if (std::isfinite(ft) && ft <= fx + opt.c1 * a * slope) {
      res.step = a;
      res.value = ft;
      res.success = true;
      x_new = std::move(xt);
      g_new = std::move(gt);
      return res;
    }
    a *= opt.shrink;
  }
  return res;
}

LineSearchResult wolfe_search(const ValueGradFn& fg, const CVecRef& x, double fx,
                              const CVecRef& grad, const CVecRef& dir, double step0, Vec& x_new,
                              Vec& g_new, const LineSearchOptions& opt) {
  check_ls_args(x, grad, dir, step0);
  LineSearchResult res;
  res.value = fx;
  const double d0 = grad.dot(dir);
  if (!(d0 < 0.0)) return res;
  const double c1 = opt.c1, c2 = opt.c2;
  const Eigen::Index n = x.size();

  struct Point {
    double a, f, d;
    Vec x, g;
  };
  auto eval = [&](double a, Point& p) {
    p.a = a;
    p.x.resize(n);
    p.g.resize(n);
    p.x.noalias() = x + a * dir;
    p.f = fg(p.x, p.g);
    p.d = std::isfinite(p.f) ? p.g.dot(dir) : std::numeric_limits<double>::quiet_NaN();
    ++res.evaluations;
  };
  auto sufficient = [&](const Point& p) { return std::isfinite(p.f) && p.f <= fx + c1 * p.a * d0; };
  auto curvature = [&](const Point& p) { return std::abs(p.d) <= -c2 * d0; };
  auto accept = [&](Point& p, bool ok) {
    res.step = p.a;
    res.value = p.f;
    res.success = ok;
    x_new = std::move(p.x);
    g_new = std::move(p.g);
  };

  // Zoom between lo (satisfies sufficient decrease, lowest value so far) and hi.
  auto zoom = [&](Point lo, Point hi) {
    Point t;
    while (res.evaluations < opt.max_steps) {
      const double width = std::abs(hi.a - lo.a);
      if (width <= 1e-15 * std::max(1.0, std::abs(lo.a))) break;
      const double a = cubic_step(lo.a, lo.f, lo.d, hi.a, hi.f, hi.d);
      eval(a, t);
      if (!sufficient(t) || t.f >= lo.f) {
        hi = std::move(t);
        t = Point();
      } else {
        if (curvature(t)) {
          accept(t, true);
          return;
        }
        if (t.d * (hi.a - lo.a) >= 0.0) hi = lo;
        lo = std::move(t);
        t = Point();
      }
    }
    // Out of evaluations: fall back to the best point with sufficient decrease, if any.
    if (lo.a > 0.0) accept(lo, true);
  };

  Point prev{0.0, fx, d0, Vec(x), Vec(grad)};
  Point cur;
  double a = std::min(step0, opt.max_step);
  for (int i = 0; res.evaluations < opt.max_steps; ++i) {
    eval(a, cur);
    if (!sufficient(cur) || (i > 0 && cur.f >= prev.f)) {
      zoom(std::move(prev), std::move(cur));
      return res;
    }
    if (curvature(cur)) {
      accept(cur, true);
      return res;
    }
    if (cur.d >= 0.0) {
      zoom(std::move(cur), std::move(prev));
      return res;
    }
    if (a >= opt.max_step) {
      accept(cur, true);
      return res;
    }
    prev = std::move(cur);
    cur = Point();
    a = std::min(2.0 * a, opt.max_step);
  }
  if (prev.a > 0.0) accept(prev, true);
  return res;
}

// ---------------------------------------------------------------------------------------------
// L-BFGS

LbfgsResult lbfgs(const ValueGradFn& fg, const CVecRef& x0, const LbfgsOptions& opt,
                  const Callbacks& cb) {
  if (opt.memory < 1) throw Error("L-BFGS: memory must be at least 1");
  if (opt.max_iter < 0) throw Error("L-BFGS: max_iter must be non-negative");
  const Eigen::Index n = x0.size();
  const int m = opt.memory;

  LbfgsResult res;
  res.x = x0;
  res.grad.resize(n);
  res.value = fg(res.x, res.grad);
  res.evaluations = 1;
  if (!std::isfinite(res.value) || !res.grad.allFinite())
    throw Error("L-BFGS: objective or gradient is not finite at the starting point");

  Mat S(n, m), Y(n, m);
  Vec rho(m), alpha(m);
  int stored = 0, newest = -1;
  Vec d(n), x_new(n), g_new(n), s_new(n), y_new(n);

  auto gnorm = [](const Vec& g) { return g.size() ? g.cwiseAbs().maxCoeff() : 0.0; };
  if (gnorm(res.grad) <= opt.gtol) {
    res.converged = true;
    res.message = "gradient norm below tolerance";
    return res;
  }

  for (int iter = 1; iter <= opt.max_iter; ++iter) {
    cb.check();
    bool done_step = false;
    for (int attempt = 0; attempt < 2 && !done_step; ++attempt) {
      // Two-loop recursion: d = -H g.
      d = -res.grad;
      if (stored > 0) {
        for (int k = 0, j = newest; k < stored; ++k, j = (j - 1 + m) % m) {
          alpha[j] = rho[j] * S.col(j).dot(d);
          d.noalias() -= alpha[j] * Y.col(j);
        }
        const double gamma = S.col(newest).dot(Y.col(newest)) / Y.col(newest).squaredNorm();
        d *= gamma;
        for (int k = 0, j = (newest - stored + 1 + m) % m; k < stored; ++k, j = (j + 1) % m) {
          const double beta = rho[j] * Y.col(j).dot(d);
          d.noalias() += (alpha[j] - beta) * S.col(j);
        }
      }
      double slope = res.grad.dot(d);
      if (!(slope < 0.0) || !d.allFinite()) {
        stored = 0;
        newest = -1;
        d = -res.grad;
        slope = res.grad.dot(d);
      }
      const double step0 = stored > 0 ? 1.0 : std::min(1.0, 1.0 / d.norm());
      LineSearchResult ls =
          opt.line_search == LineSearchKind::wolfe
              ? wolfe_search(fg, res.x, res.value, res.grad, d, step0, x_new, g_new, opt.ls)
              : armijo_search(fg, res.x, res.value, res.grad, d, step0, x_new, g_new, opt.ls);
      res.evaluations += ls.evaluations;
      if (!ls.success) {
        if (stored > 0) {  // retry from steepest descent
          stored = 0;
          newest = -1;
          continue;
        }
        res.iterations = iter - 1;
        res.message = "line search failed to decrease the objective";
        return res;
      }
      done_step = true;
      const double f_old = res.value;
      // Curvature pair.
      s_new.noalias() = x_new - res.x;
      y_new.noalias() = g_new - res.grad;
      const double sy = s_new.dot(y_new);
      if (sy > 0.0 && sy > 1e-12 * y_new.squaredNorm()) {
        const int slot = (newest + 1) % m;
        S.col(slot) = s_new;
        Y.col(slot) = y_new;
        rho[slot] = 1.0 / sy;
        newest = slot;
        stored = std::min(stored + 1, m);
      }
      res.x.swap(x_new);
      res.grad.swap(g_new);
      res.value = ls.value;
      res.iterations = iter;
      if (gnorm(res.grad) <= opt.gtol) {
        res.converged = true;
        res.message = "gradient norm below tolerance";
        return res;
      }
      const double scale = std::max({std::abs(f_old), std::abs(res.value), 1.0});
      if (std::abs(f_old - res.value) <= opt.ftol * scale) {
        res.converged = true;
        res.message = "relative change in the objective below tolerance";
        return res;
      }
    }
  }
  res.message = "maximum number of iterations reached";
  return res;
}

}  // namespace kl
