// Tessellated kernel learning (TKL): the matrix P of a tessellated kernel (kernels/tessellated.hpp) is
// learned together with an SVM by the two-step algorithm of the paper (alpha-step and
// P-step; the P-step by Frank-Wolfe as in the paper, or by exponentiated gradient),
//   min_{P >= 0, trace P = q}  OPT_A(P),  OPT_A(P) = max_alpha  SVM dual at the kernel K(P),
// which is convex in P (a maximum of functions linear in P).
//
// One iteration at P_k, with alpha_k the SVM solution on K(P_k) and w its coefficients
// (y .* alpha for C-SVC, alpha - alpha* for epsilon-SVR; summed over the one-vs-one pairs for
// more classes, which share P):
//   - the gradient of OPT_A in P is C(w) = sum_kl (-w_k w_l / 2) dK_kl/dP (its 2h x 2h blocks
//     in kernels/tessellated.hpp), over the support vectors only;
//   - the Frank-Wolfe vertex P* = q v v', v the unit eigenvector of the smallest eigenvalue of C; the
//     lower bound OPT_P = OPT_A(P_k) - gap, gap = trace(C P_k) - q lambda_min(C) >= 0;
//   - Frank-Wolfe (the paper's P-step): a line search on OPT_A over P_k + eta (P* - P_k): K is
//     linear in P, so the trial Gram
//     matrix is (1 - eta) K(P_k) + eta K(P*), with K(P*) a rank-one form computed from the box
//     matrix A, which is formed once. The solver computes the rows of a trial matrix it needs
//     on demand; the accepted one is formed once per iteration, in place of K(P_k), so the fit
//     holds two n x n matrices (A and K). Each trial is one SVM solve, warm-started
//     from alpha_k (cold at eta = 1, where the trial kernel is K(P*) alone). The first trial
//     step is the mean of the earlier accepted steps (1 at first), divided by 5 while OPT_A
//     does not decrease.
//   - or (par.mirror) exponentiated gradient, mirror descent with the von Neumann entropy:
//     P_{k+1} = q exp(log P_k - t C) / trace(exp(log P_k - t C)), which moves every
//     eigenvalue of P at once where Frank-Wolfe adds one rank-one direction per iteration
//     (and so needs many iterations when the optimal P has many directions: with 30 to 100
//     inputs it stopped at maxit with relative gaps up to 1.2 in bench/tkl_dims.R). The trial step t is twice
//     the last accepted one (1 / ||C||_2 at first), divided by 4 while OPT_A does not
//     decrease; the trial's rows are computed on demand from the factors of K(P)
//     (TklGram::form_rows(), O(n h) a row) and K(P) is formed once, at the end. The gap, its
//     stopping rule and the lower bound are Frank-Wolfe's, computed at each P_k as before.
// Smoothing (par.ridge > 0, with iterations): OPT_A(P) is a maximum over the SVM's dual
// variables and is not differentiable where the maximiser is not unique (K(P) nearly singular
// on the support vectors); the gradient is then only a subgradient and the line search stalls
// far above the gap. The optimisation's solves therefore use K(P) + mu I, mu = ridge times the
// mean diagonal of the start K(P0), which makes the maximiser unique; the objective, the gap
// and tol are those of the smoothed problem, and the final SVM is solved on K(P) itself (warm).
// Normalisation (par.normalize): the diagonal of K(I) is V |Z(x)|^2 (V the box's volume), which
// grows geometrically with the number of inputs (about 1e6 at d = 60), so a given cost, and the
// SVM's own tolerance, would mean something different at every d. With normalize the start is
// P0 = I / s and the trace q = 2h / s, s the mean diagonal of K(I) over the training rows, so the
// start kernel has mean diagonal 1, as a Gaussian kernel has. K is linear in P and the SVM with
// kernel K / s and cost C is the SVM with K and cost C / s (the same decision values), so this is
// a reparametrisation of cost; the relative gap, tol and the relative ridge are unchanged by it.
// The run stops when the gap falls below tol |OPT_A|, after maxit iterations, when an accepted
// Frank-Wolfe step is below tol / 100, or when no trial down to 1/1000 of the first step
// (exponentiated gradient: 1e-9) decreases OPT_A (the authors accept such a step; here P
// stays, so OPT_A never increases).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "machines/svm.hpp"

namespace kl {

struct TklParams {
  int degree = 1;
  double tol = 1e-2;   // relative duality gap
  int maxit = 100;
  bool warm = true;    // line-search solves with eta < 1 start from the current alpha
  double ridge = 0;    // the solves of the optimisation use K + ridge * mean(diag K(P0)) * I
  bool normalize = false;  // start from P0 = I / s, s the mean diagonal of K(I) (see above)
  bool single = false;     // the n x n matrices in single precision (see TklGram)
  bool mirror = false;     // the P-step by exponentiated gradient instead of Frank-Wolfe
                           // (see above; the R interface's default)
  bool subspace = true;    // exponentiated gradient in the span of the training rows'
                           // monomials where that is well below 2h (the same iterates)
  Backend* backend = nullptr;  // the start kernel K(P0) (double precision) through this
                               // backend's kernel_matrix (the GPU's tkl_block operation)
  SvmParams svm;       // cost, epsilon, solver tolerance, cache, threads, probability
};

// One row per P_k: OPT_A(P_k), the duality gap there, the best lower bound so far, and the line
// search that left P_k (accepted step, 0 when none; SVM solves and their SMO iterations; time
// in the solves and in the rest of the iteration).
struct TklIteration {
  double objective = 0, gap = 0, lower = 0, step = 0;
  int solves = 0;
  long svm_iter = 0;
  double seconds_alpha = 0, seconds_p = 0;
};

struct TklResult {
  Mat P;                               // 2h x 2h, symmetric PSD, trace q
  double q = 0;                        // trace of P (2h, or 2h / s with normalize)
  double scale = 1;                    // s with normalize (1 without)
  std::vector<BinaryMachine> machines; // the SVM on K(P)
  std::vector<TklIteration> trace;
  std::string stop;                    // "gap", "maxit", "step", "no decrease"
  double seconds_start = 0;            // the box matrix and the Gram matrix at P = I (on a
                                       // path: the first cost's result only)
  double seconds_first = 0;            // the first (cold) SVM solve
  long iter_first = 0;
  int subspace = 0;                    // exponentiated gradient: the dimension of the span
                                       // its steps worked in (0: all of P)
};

// Classification: y codes 0..k-1 (every class present), weight k class weights of the cost.
// X: n x d inputs (the box [lower, upper] per column; points are clamped into it).
TklResult tkl_classify(CMatRef X, const std::vector<int>& y, int k,
                       const std::vector<double>& weight, const Vec& lower, const Vec& upper,
                       const TklParams& par, const Callbacks& cb);
// epsilon-regression.
TklResult tkl_regress(CMatRef X, const std::vector<double>& z, const Vec& lower,
                      const Vec& upper, const TklParams& par, const Callbacks& cb);

// A path of increasing costs on the same rows (cross-validation): the box matrix and the start
// Gram matrix are formed once (and the start matrix kept: three n x n matrices), every cost's
// run starts from the start P, and its first SVM solve from the previous cost's solution on the
// start kernel (feasible, since the costs increase), as kernel_svm's cost path does. The runs
// are then the fits at each cost alone, up to where the warm-started solves stop.
std::vector<TklResult> tkl_classify_path(CMatRef X, const std::vector<int>& y, int k,
                                         const std::vector<double>& weight, const Vec& lower,
                                         const Vec& upper, const TklParams& par,
                                         const std::vector<double>& costs, const Callbacks& cb);
std::vector<TklResult> tkl_regress_path(CMatRef X, const std::vector<double>& z,
                                        const Vec& lower, const Vec& upper, const TklParams& par,
                                        const std::vector<double>& costs, const Callbacks& cb);

// The learner's algebra on the training rows, exposed so tests can check it against the kernel
// object: the box matrix A(x_k, x_l) is formed once; rank-one Gram matrices and the gradient
// blocks use it.
// With single = true the box matrix is held in single precision (and the learner then keeps
// its Gram matrix in single precision too: the n x n matrices take half the memory); every
// sum and product is still computed in double precision, and the SVM solver's kernel rows are
// single precision in either case.
class TklGram {
 public:
  TklGram(CMatRef X, int degree, const Vec& lower, const Vec& upper, int threads,
          const Callbacks& cb, bool single = false);
  int n() const { return static_cast<int>(Zm_.rows()); }
  int h() const { return static_cast<int>(Zm_.cols()); }
  // The monomials of the training rows (n x h).
  const Mat& row_monomials() const { return Zm_; }
  bool single() const { return single_; }
  // out = (1 - eta) K + eta K(q v v'), v of length 2h; K and out n x n (they may alias).
  void blend_rank_one(const Vec& v, double q, double eta, const double* K, double* out) const;
  void blend_rank_one(const Vec& v, double q, double eta, const float* K, float* out) const;
  // The same matrix as kernel rows computed on demand (for the SVM solver), without forming
  // it; bitwise the values blend_rank_one() writes. K must outlive the result.
  // mu is added to the diagonal (a ridge on the solves; not in K).
  std::unique_ptr<KernelRows> blended_rows(const Vec& v, double q, double eta,
                                           const double* K, double mu = 0) const;
  std::unique_ptr<KernelRows> blended_rows(const Vec& v, double q, double eta,
                                           const float* K, double mu = 0) const;
  // K(P) for any symmetric 2h x 2h P, written n x n into out (double with the double box
  // matrix, float with the single one): with the h x h blocks of P,
  //   K(P) = A .* (Z M1 Z') + diag(B) Z M2 Z' + Z M2' Z' diag(B) + V Z P22 Z',
  //   M1 = P11 - P12 - P21 + P22, M2 = P12 - P22
  // (the rank-one form below summed over the eigenvectors of P).
  void form(const Mat& P, double* out) const;
  void form(const Mat& P, float* out) const;
  // The same matrix as kernel rows computed on demand (O(n h) a row), plus mu on the diagonal.
  std::unique_ptr<KernelRows> form_rows(const Mat& P, double mu = 0) const;
  // K(I) on the training rows from the box matrix: (Z Z')_kl (2 A_kl - B_k - B_l + V).
  void start_kernel(float* out) const;
  // C(w) = sum over the coefficient vectors of sum_kl (-w_k w_l / 2) dK_kl / dP; each vector
  // given by its rows and values (zeros left out).
  Mat gradient(const std::vector<std::vector<int>>& rows,
               const std::vector<std::vector<double>>& w) const;

 private:
  template <typename T>
  void blend_impl(const Vec& v, double q, double eta, const T* K, T* out) const;
  template <typename T>
  std::unique_ptr<KernelRows> rows_impl(const Vec& v, double q, double eta, const T* K,
                                        double mu) const;
  template <typename TA>
  void fill_box(TA* A, const Vec& upper, const Callbacks& cb);
  template <typename T>
  void form_impl(const Mat& P, T* out) const;

  Mat Xc_, Zm_;
  Vec B_;
  Mat A_;                  // double precision box matrix (single = false)
  Eigen::MatrixXf Af_;     // single precision box matrix (single = true)
  double V_ = 1;
  int threads_ = 1;
  bool single_ = false;
};

}  // namespace kl
