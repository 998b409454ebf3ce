// Reusable optimisers: Adam with a plateau learning-rate scheduler, Armijo and strong-Wolfe
// line searches, L-BFGS, and a simulated-annealing driver.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "base/common.hpp"
#include "base/rng.hpp"

namespace kl {

// f(x) only.
using ValueFn = std::function<double(const CVecRef& x)>;
// f(x), with the gradient written into grad (already sized like x).
using ValueGradFn = std::function<double(const CVecRef& x, VecRef grad)>;

// ---------------------------------------------------------------------------------------------
// Adam (Kingma & Ba): a stateful stepper for one parameter vector.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class Adam {
 public:
  Adam(Eigen::Index n, const AdamOptions& opt = AdamOptions());

  // x <- x - lr * mhat / (sqrt(vhat) + eps), with bias-corrected moment estimates.
  void step(VecRef x, const CVecRef& grad);
  void reset();

  double lr() const { return opt_.lr; }
  void set_lr(double lr) { opt_.lr = lr; }
  long steps() const { return t_; }
  const AdamOptions& options() const { return opt_; }

 private:
  AdamOptions opt_;
  Vec m_, v_;
  long t_ = 0;
  double b1t_ = 1.0, b2t_ = 1.0;  // beta1^t, beta2^t
};

// Reduce-on-plateau scheduler. Fed the objective of each epoch (lower is better). An epoch
// improves when objective < best - rel_tol * |best|. After `patience` epochs in a row without
// improvement the learning rate is multiplied by `factor`; if the objective has not improved at
// all since the previous decay, it signals stop instead. It also signals stop when the learning
// rate falls below min_lr or after max_epochs epochs.
struct PlateauOptions {
  double factor = 0.1;
  int patience = 5;
  double rel_tol = 1e-4;
  double min_lr = 1e-10;
  int max_epochs = 1000;
};

class PlateauScheduler {
 public:
  enum class Stop { none, plateau, min_lr, max_epochs };

  PlateauScheduler(double lr, const PlateauOptions& opt = PlateauOptions());

  // Records one epoch; returns true when training should stop.
  bool update(double objective);

  double lr() const { return lr_; }
  double best() const { return best_; }
  int epochs() const { return epochs_; }
  int decays() const { return decays_; }
  int best_epoch() const { return best_epoch_; }  // 1-based; 0 before any finite objective
  bool stopped() const { return stop_ != Stop::none; }
  Stop reason() const { return stop_; }
  std::string reason_text() const;

 private:
  PlateauOptions opt_;
  double lr_;
  double best_ = std::numeric_limits<double>::infinity();
  int epochs_ = 0, bad_ = 0, decays_ = 0, best_epoch_ = 0;
  bool improved_since_decay_ = false;
  Stop stop_ = Stop::none;
};

// ---------------------------------------------------------------------------------------------
// Line searches along a descent direction d from x (slope g'd < 0).
struct LineSearchOptions {
  double c1 = 1e-4;      // sufficient decrease
  double c2 = 0.9;       // curvature (strong Wolfe only)
  double shrink = 0.5;   // backtracking factor (Armijo only)
  int max_steps = 40;    // function evaluations at most
  double max_step = 1e20;
};

struct LineSearchResult {
  double step = 0.0;
  double value = 0.0;
  int evaluations = 0;
  bool success = false;
};

// Armijo backtracking with a value-only function: the first step = step0 * shrink^j with
// f(x + step d) <= f(x) + c1 step g'd. On failure, step = 0 and value = fx.
LineSearchResult armijo_search(const ValueFn& f, const CVecRef& x, double fx, const CVecRef& grad,
                               const CVecRef& dir, double step0,
                               const LineSearchOptions& opt = LineSearchOptions());

// The same with a value-and-gradient function; x_new and g_new receive the accepted point and
// its gradient (x and g unchanged on failure).
LineSearchResult armijo_search(const ValueGradFn& fg, const CVecRef& x, double fx,
                               const CVecRef& grad, const CVecRef& dir, double step0, Vec& x_new,
                               Vec& g_new, const LineSearchOptions& opt = LineSearchOptions());

// Strong Wolfe conditions by bracketing and zoom with safeguarded cubic interpolation
// (Nocedal & Wright, algorithms 3.5 and 3.6).
LineSearchResult wolfe_search(const ValueGradFn& fg, const CVecRef& x, double fx,
                              const CVecRef& grad, const CVecRef& dir, double step0, Vec& x_new,
                              Vec& g_new, const LineSearchOptions& opt = LineSearchOptions());

// ---------------------------------------------------------------------------------------------
// L-BFGS with the two-loop recursion.
enum class LineSearchKind { armijo, wolfe };

struct LbfgsOptions {
  int memory = 10;
  int max_iter = 1000;
  double gtol = 1e-6;    // stop when max |grad_j| <= gtol
  double ftol = 1e-12;   // stop when |f_old - f_new| <= ftol * max(|f_old|, |f_new|, 1)
  LineSearchKind line_search = LineSearchKind::wolfe;
  LineSearchOptions ls;
};

struct LbfgsResult {
  Vec x;
  Vec grad;
  double value = 0.0;
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;
  std::string message;
};

// Minimises fg from x0. Calls cb.check() once per iteration.
LbfgsResult lbfgs(const ValueGradFn& fg, const CVecRef& x0, const LbfgsOptions& opt,
                  const Callbacks& cb = Callbacks());

// ---------------------------------------------------------------------------------------------
// Simulated annealing over a user state. At iteration k (0-based) the temperature is
// T0 * cooling^k; a proposal with change delta in f is accepted when delta <= 0 or with
// probability exp(-delta / T). The best state seen is kept.
struct AnnealOptions {
  double T0 = 1.0;
  double cooling = 0.999;
  int max_iter = 10000;
  double min_temp = 0.0;   // stop once the temperature falls below this
  int check_every = 100;   // cb.check() and cb.report() every this many iterations
};

template <class State>
struct AnnealResult {
  State best;
  double best_value = 0.0;
  State last;
  double last_value = 0.0;
  int iterations = 0;
  int accepted = 0;
};

// f(state) -> value; propose(current, rng, temperature) -> candidate state.
template <class State, class F, class P>
AnnealResult<State> anneal(F&& f, P&& propose, const State& init, const AnnealOptions& opt,
                           Rng& rng, const Callbacks& cb = Callbacks()) {
  if (!(opt.T0 > 0.0)) throw Error("anneal: T0 must be positive");
  if (!(opt.cooling > 0.0 && opt.cooling <= 1.0)) throw Error("anneal: cooling must be in (0, 1]");
  if (opt.max_iter < 0) throw Error("anneal: max_iter must be non-negative");
  const int check_every = opt.check_every > 0 ? opt.check_every : 1;

  AnnealResult<State> res;
  State current = init;
  double fc = f(current);
  if (std::isnan(fc)) throw Error("anneal: objective is NaN at the initial state");
  res.best = current;
  res.best_value = fc;

  double T = opt.T0;
  int k = 0;
  for (; k < opt.max_iter; ++k) {
    if (k % check_every == 0) {
      cb.check();
      cb.report(static_cast<double>(k) / opt.max_iter);
    }
    if (T < opt.min_temp) break;
    State cand = propose(static_cast<const State&>(current), rng, T);
    const double fn = f(static_cast<const State&>(cand));
    if (!std::isnan(fn)) {
      const double delta = fn - fc;
      bool accept = delta <= 0.0;
      if (!accept) accept = rng.uniform() < std::exp(-delta / T);
      if (accept) {
        current = std::move(cand);
        fc = fn;
        ++res.accepted;
        if (fc < res.best_value) {
          res.best = current;
          res.best_value = fc;
        }
      }
    }
    T *= opt.cooling;
  }
  cb.report(1.0);
  res.iterations = k;
  res.last = std::move(current);
  res.last_value = fc;
  return res;
}

}  // namespace kl
