// Learning the weights of a hierarchical Gaussian kernel (Steinwart, Thomann and Schmid, 2016,
// Algorithm 1): the validation risk of a least-squares SVM as a function of the kernel's
// log-weights, minimised by gradient descent with an Armijo line search alternating with
// simulated annealing, with early stopping on a third part of the data.
//
// The least-squares SVM on rows (X1, Y1) with penalty c = n1 lambda and an unpenalised bias:
//   (K11 + c I) alpha = Y1 - 1 b',  1' alpha = 0,
// and its risk on (X2, Y2): R = ||Y2 - K21 alpha - 1 b'||_F^2 / (n2 L), L outputs.
//
// Gradient in the weights (bilevel: alpha and b re-solved at every weight vector). With
// M = K11 + c I, v = M^-1 1, s = 1'v, Res = Y2 - K21 alpha - 1 b', G = K21' Res:
//   dR = <E21, dK21> + <E11, dK11>,
//   E21 = -2/(n2 L) Res alpha',
//   E11 =  2/(n2 L) (M^-1 G - v (v'G - 1'Res) / s) alpha'.
// The fixed variant holds alpha and b at their last fit: dR = <E21, dK21> only.
// Where the fused pass of kernels/hgk_pass.hpp handles the tree, the validation pairs are swept
// once: each pair's node values give K21 alpha, the rows of K21 for G, and (for one output) the
// derivative sums weighted by alpha, which the row's residual multiplies at the end of the row;
// <E11, dK11> is one pass over the pairs b > a of the fit rows with the symmetric adjoint
// B alpha' + alpha B'. Elsewhere both contract through Kernel::contract_derivatives (one
// product per node). The chain rule to log-weights multiplies by the weights.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "kernels/hierarchical.hpp"
#include "linalg/chol.hpp"
#include "base/rng.hpp"

namespace kl {

// A hierarchical Gaussian kernel with free weights: the tree (its nodes and the widths of
// subtrees) is fixed; theta holds the log of every node weight in the kernel's parameter order
// and gamma is the width at the root.
class HgkFamily {
 public:
  HgkFamily(std::vector<HgkNode> nodes, int d);
  int num_params() const { return nparams_; }
  int input_dim() const { return d_; }
  // log |w| of the weights the tree was given (an error when one is 0).
  Vec start() const;
  Vec weights(const CVecRef& theta) const { return theta.array().exp().matrix(); }
  KernelPtr kernel(const CVecRef& theta, double gamma) const;
  // The tree with the weights exp(theta) and the width gamma at the root.
  std::vector<HgkNode> nodes_at(const CVecRef& theta, double gamma) const;
  const std::vector<HgkNode>& nodes() const { return nodes_; }

 private:
  std::vector<HgkNode> nodes_;
  int d_ = 0;
  int nparams_ = 0;
};

// A least-squares SVM solution: f(x) = sum_i alpha_i k(x_i, x) + b.
struct LsFit {
  Mat alpha;  // n x L
  Vec bias;   // L
};

// Solves the least-squares SVM with penalty c on the kernel matrix K (overwritten).
LsFit ls_svm_fit(Mat& K, CMatRef Y, double c, int threads, const Callbacks& cb);

// The validation risk on a fixed split, at a fixed (gamma, lambda), as a function of theta.
class HgkObjective {
 public:
  // single: the pairs' work of the fused pass in single precision (HgkPassJob::single), and
  // the fit block K11 held in single precision and factored by MixedCholesky: its systems are
  // solved to a relative accuracy of 1e-9 by refinement in double; where refinement does not
  // converge (K11 + c I too ill-conditioned for a single-precision factor) the objective
  // factors the same values in double from then on. Without the pass, double throughout.
  HgkObjective(const HgkFamily& family, CMatRef X1, CMatRef Y1, CMatRef X2, CMatRef Y2,
               double gamma, double lambda, int threads, const Callbacks& cb,
               bool single = false);
  // not copied: the mixed factorisation refers to this object's own K11
  HgkObjective(const HgkObjective&) = delete;
  HgkObjective& operator=(const HgkObjective&) = delete;

  // Bilevel risk (alpha re-solved at theta); the gradient w.r.t. theta when grad is non-null.
  // Repeated calls at the last theta reuse its factorisation.
  double bilevel(const CVecRef& theta, Vec* grad);
  // Risk with alpha, b held at `fit`; gradient w.r.t. theta when grad is non-null.
  double fixed(const CVecRef& theta, const LsFit& fit, Vec* grad);
  // The least-squares SVM on (X1, Y1) at theta.
  LsFit fit(const CVecRef& theta);
  // The fit of the last bilevel() evaluation at theta (computed when it is not cached).
  const LsFit& fit_at(const CVecRef& theta);

  // The passes over pairs (the row sums K21 alpha and K12 Res, the derivative contractions)
  // through `backend` where it takes them (Backend::hgk_pass: the GPU with its hgk_pass
  // operation on; every pair in double precision there), else on the CPU; in double precision
  // the block K11 too where the backend computes the kernel (Backend::kernel_matrix), and the
  // factorisation of K11 + c I with its solves where it takes them (Backend::device_cholesky,
  // in double precision; the mixed-precision factorisation of `single` stays on the CPU).
  // nullptr: the CPU.
  void set_backend(Backend* backend) { backend_ = backend; }

  // Whether the last factorisation is the mixed-precision one (single precision with the
  // pass, and refinement converging so far).
  bool mixed() const { return use_mixed_; }
  double gamma() const { return gamma_; }
  double lambda() const { return lambda_; }

 private:
  void factor(const CVecRef& theta);
  // M^-1 B through the current factorisation (mixed or double)
  Mat solve(const Mat& B);
  // the double factor of the single-precision K11 + c I (the fallback of the mixed one)
  void factor_double_from_single();
  // Residuals on (X2, Y2) of the last factorisation (the fused pass, value only).
  void residuals();
  // Y2 - K21 alpha - 1 b' for the tree `nodes` through the backend; false when it does not
  // take the pass.
  bool device_residuals(const std::vector<HgkNode>& nodes, const LsFit& fit, Mat& res);
  // <E21, dK21> with E21 = -2/(n2 L) res alpha' for the tree `nodes`: through the backend when
  // it takes it, else by the fused pass or the kernel's contraction on the CPU.
  void e21(const std::vector<HgkNode>& nodes, const KernelPtr& kernel, const Mat& res,
           const Mat& alpha, Vec& g);

  const HgkFamily& fam_;
  Backend* backend_ = nullptr;
  CMatRef X1_, Y1_, X2_, Y2_;
  double gamma_, lambda_;
  int threads_;
  Callbacks cb_;
  bool single_;
  // cache of the last bilevel factorisation
  bool have_ = false;
  Vec theta_;
  KernelPtr kernel_;
  Mat L_;     // Cholesky factor of K11 + c I (double)
  Eigen::MatrixXf Kf_;     // K11, lower triangle, single precision (mixed factorisation)
  MixedCholesky mixed_;
  bool use_mixed_ = false;     // the current factorisation is mixed_
  std::unique_ptr<DeviceCholesky> dev_;  // the current factorisation, on the backend's device
  bool mixed_failed_ = false;  // refinement failed once: double factors from then on
  Vec v_;     // M^-1 1
  double s_ = 0.0;
  LsFit fit_;
  bool pass_ = false;       // the fused pass handles this tree
  std::vector<HgkNode> nodes_;
  Mat K21_;   // the validation block (only without the fused pass)
  bool have_res_ = false;
  Mat res_;   // Y2 - K21 alpha - 1 b'
};

enum class HgkGradient { bilevel, fixed };

struct HgkOptions {
  HgkGradient gradient = HgkGradient::bilevel;
  double split1 = 0.4;          // fraction of the rows in D1 (fit)
  double split2 = 0.4;          // in D2 (the objective); the rest is D3 (early stopping)
  int maxit = 30;               // optimisation steps: gradient steps and annealing phases
  int anneal_steps = 5;         // proposals per annealing phase
  double perturbation = 0.5;    // a proposal multiplies one weight by U[1 - p, 1 + p]
  double temperature = 0.01;    // T0, on the relative change of the risk
  double cooling = 0.9;         // T = T0 cooling^step
  int patience = 5;             // steps without a better D3 error before D1/D2 are reshuffled
  int reshuffles = 2;           // reshuffles at most; the run stops at the next stall
  double rel_tol = 1e-4;        // a gradient step that gains less is a local minimum
  bool single = false;          // the objective's pairs in single precision (HgkObjective)
  std::vector<double> gammas;   // candidate widths; empty: gamma_0 * gamma_factors
  std::vector<double> gamma_factors{0.25, 0.5, 1, 2, 4, 8};
  std::vector<double> lambdas;  // candidate penalties; empty: 6 values from 1e-3/n1 to 0.1
  int threads = 1;
  Backend* backend = nullptr;   // the objective's passes (HgkObjective::set_backend)
};

struct HgkTraceRow {
  int step = 0;
  int kind = 0;  // 0 start, 1 gradient, 2 annealing proposal, 3 reshuffle, 4 final selection
  bool accepted = false;
  double risk = 0.0;   // D2 validation risk at the current weights
  double error = 0.0;  // D3 risk at the current weights
  double seconds = 0.0;
};

struct HgkResult {
  Vec theta;          // learned log-weights (those with the smallest D3 risk)
  double gamma = 0.0;
  double lambda = 0.0;
  double gamma0 = 0.0;  // the reference width of the grid: 1 / median root distance
  LsFit fit;          // the least-squares SVM on all rows at (theta, gamma, lambda)
  std::vector<HgkTraceRow> trace;
  int steps = 0;
  int reshuffles = 0;
  std::string stop;
};

// Algorithm 1 on the rows of (X, Y) (inputs scaled, targets centred or +-1), from theta0.
// With maxit = 0 the weights stay at theta0 and only (gamma, lambda) are chosen (on D1 / D2).
HgkResult hgk_learn(const HgkFamily& family, CMatRef X, CMatRef Y, const CVecRef& theta0,
                    const HgkOptions& opt, Rng& rng, const Callbacks& cb);

// One run of Algorithm 1 among several (hgk_learn_runs): its rows of (X, Y) (0-based), its
// start, its number of steps and its own generator.
struct HgkRun {
  const HgkFamily* family = nullptr;
  std::vector<int> rows;
  Vec theta0;
  int maxit = 0;
  std::uint64_t seed = 0;
};

// The worker threads hgk_learn_runs uses: 1 (the runs in order, each on opt.threads) with
// one run, fewer than two threads, a backend, or a run whose D1 has more than
// kHgkRunsMaxRows rows (two such runs at once would hold two sets of its n1 x n1 matrices);
// else min(opt.threads, runs).
constexpr Eigen::Index kHgkRunsMaxRows = 4000;
int hgk_runs_workers(const std::vector<HgkRun>& runs, const HgkOptions& opt);

// Several runs of Algorithm 1, such as the learning runs of a cross-validation: run i is
// hgk_learn(*family, X[rows], Y[rows], theta0, opt with maxit, Rng(seed)). With more than one
// worker (hgk_runs_workers) the runs are tasks on the workers (base/tasks.hpp), one thread
// each: the steps of a small run are too short for each parallel region's fork and join to
// pay, and whole runs side by side keep both processors busy without them. Since a run's
// results do not depend on its thread count, they equal those of the runs one after another.
// The caller keeps Eigen's own threads at 1 while the workers run.
std::vector<HgkResult> hgk_learn_runs(CMatRef X, CMatRef Y, const std::vector<HgkRun>& runs,
                                      const HgkOptions& opt, const Callbacks& cb);

// The reference width: 1 / median over (up to 1000) random pairs of rows of the root's
// argument sum_j u_j^2 (1 - K_j) (||W (x - z)||^2 at depth 1), at gamma = 1.
double hgk_reference_gamma(const HgkFamily& family, const CVecRef& theta, CMatRef X, Rng& rng);

}  // namespace kl
