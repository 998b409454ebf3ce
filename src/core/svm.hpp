// Kernel support vector machines: an SMO solver with second-order working-set selection
// (Fan, Chen & Lin 2005), shrinking and an LRU cache of kernel rows; C-classification (binary,
// and one-vs-one for more classes, the pairs solved in parallel), epsilon-regression, Platt
// scaling on internal cross-validation folds and pairwise coupling (Wu, Lin & Weng 2004).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common.hpp"
#include "backend.hpp"
#include "kernels.hpp"

namespace kl {

// ---------------------------------------------------------------------------------------------
// Kernel values between training rows.

// Kernel between the rows of one (sub)problem, local indices 0..size()-1.
class KernelSource {
 public:
  virtual ~KernelSource() = default;
  virtual int size() const = 0;
  virtual double diag(int p) const = 0;
  // out[q] = k(p, q) for every q, rounded to float. `threads` may be used for long rows.
  virtual void row(int p, float* out, int threads) const = 0;
};

// Kernel over the n rows of the training data: features with a kernel function, or a
// precomputed n x n matrix. Subsets make the KernelSource of a subproblem.
class TrainingKernel {
 public:
  // X: n x d (column-major, as R stores it). The rows are copied.
  TrainingKernel(const KernelSpec& spec, CMatRef X);
  // K: n x n symmetric, column-major; not copied, must outlive this object.
  TrainingKernel(const double* K, int n);

  int n() const { return n_; }
  bool precomputed() const { return K_ != nullptr; }
  double value(int i, int j) const;
  std::unique_ptr<KernelSource> subset(const std::vector<int>& rows) const;
  // out (rows.size() x cols.size()) = k(row_i, col_j), in double precision.
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const;

 private:
  friend class FeatureSource;
  friend class MatrixSource;
  KernelSpec spec_;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> X_;
  Vec norms_;
  const double* K_ = nullptr;
  int n_ = 0;
};

// LRU cache of kernel rows (full length) of a KernelSource, with a memory budget.
class RowCache {
 public:
  RowCache(const KernelSource& src, double megabytes, int threads);
  // The row of point p. The pointer stays valid until two more distinct rows are requested.
  const float* get(int p);
  double diag(int p) const { return diag_[p]; }
  int size() const { return n_; }
  long computed() const { return computed_; }

 private:
  void unlink(int p);
  void push_back(int p);
  const KernelSource& src_;
  int n_, threads_;
  std::size_t capacity_;  // rows
  std::vector<double> diag_;
  std::vector<std::unique_ptr<float[]>> slots_;
  std::vector<int> slot_of_;  // -1 when not cached
  std::vector<int> prev_, next_;
  int head_ = -1, tail_ = -1;  // least / most recently used
  long computed_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The dual problem
//   min_a 0.5 a'Qa + p'a   s.t.  y'a = y'a0,  0 <= a_v <= C_v,
// with Q_uv = y_u y_v k(pt_u, pt_v), y_v = +-1, over L variables that map to the points of a
// RowCache (several variables may share a point, as in regression).

struct SolverOptions {
  double eps = 1e-3;            // stopping tolerance on the maximal violating pair
  bool shrinking = true;
  long max_iter = 10000000;
  const std::atomic<bool>* stop = nullptr;  // polled; throws Interrupted when set
  std::atomic<double>* gap = nullptr;       // current maximal violation, for progress
};

struct SolverResult {
  std::vector<double> alpha;
  double rho = 0.0;   // decision f(x) = sum_v y_v a_v k(pt_v, x) - rho
  double obj = 0.0;   // 0.5 a'Qa + p'a at the solution
  long iter = 0;
  bool converged = true;
};

SolverResult smo_solve(RowCache& cache, const std::vector<int>& pt,
                       const std::vector<signed char>& y, const std::vector<double>& p,
                       const std::vector<double>& C, std::vector<double> alpha0,
                       const SolverOptions& opt);

// Makes a warm start feasible for the box [0, C] and y'a = 0: clips to the box, then scales
// the side of larger total down. Empty input gives zeros.
std::vector<double> feasible_start(const std::vector<double>& a0,
                                   const std::vector<signed char>& y,
                                   const std::vector<double>& C);

// ---------------------------------------------------------------------------------------------
// Models.

struct SvmParams {
  double cost = 1.0;
  double epsilon = 0.1;     // regression tube
  double tol = 1e-3;
  bool shrinking = true;
  double cache_mb = 1024;   // kernel row cache for the whole fit, shared by concurrent solves
  long max_iter = 0;        // 0: max(1e7, 100 L)
  int threads = 1;
  bool probability = false;
  int prob_folds = 5;
  std::uint64_t seed = 1;   // folds of the probability model
};

// One binary machine: decision f(x) = sum_s coef_s k(x_sv[s], x) - rho, positive for the
// second class of the pair (classification) or the fitted value (regression).
struct BinaryMachine {
  int first = 0, second = 1;       // classes of the pair (classification)
  std::vector<int> sv;             // training rows, ascending
  std::vector<double> coef;        // y_s a_s (classification) or a_s - a*_s (regression)
  double rho = 0.0;
  double obj = 0.0;
  long iter = 0;
  bool converged = true;
  long kernel_rows = 0;            // kernel rows computed
  double probA = 0.0, probB = 0.0; // Platt: P(second | x) = 1 / (1 + exp(A f + B))
  bool has_prob = false;
};

// Runs tasks 0..n-1 on worker threads while the calling thread polls cb for interrupts and
// reports progress; `fn(task, stop)` must poll stop. Exceptions of a task are rethrown on the
// calling thread (the one of the lowest task index first).
void run_tasks(int ntasks, int workers, const std::function<void(int, const std::atomic<bool>&)>& fn,
               const Callbacks& cb, std::atomic<double>* single_gap = nullptr, double eps = 1e-3);

// C-classification, one-vs-one. y: class codes 0..k-1 (every class present). weight: k class
// weights multiplying cost. warm: optional per pair (in pair order (0,1), (0,2), ..., (k-2,k-1))
// dual coefficients y_s a_s over all n training rows, or empty.
std::vector<BinaryMachine> svm_classify(const TrainingKernel& K, const std::vector<int>& y, int k,
                                        const std::vector<double>& weight,
                                        const SvmParams& par,
                                        const std::vector<std::vector<double>>& warm,
                                        const Callbacks& cb);

// epsilon-regression. warm: optional coefficients a - a* over the n rows.
BinaryMachine svm_regress(const TrainingKernel& K, const std::vector<double>& z,
                          const SvmParams& par, const std::vector<double>& warm,
                          const Callbacks& cb);

// Classification over a path of costs (ascending), each solve warm-started from the last,
// on the rows `train`; returns for every cost the decision values of the rows `test`
// (test.size() x pairs, column-major), for fast cross-validation.
std::vector<Mat> svm_classify_path(const TrainingKernel& K, const std::vector<int>& y, int k,
                                   const std::vector<double>& weight,
                                   const std::vector<int>& train, const std::vector<int>& test,
                                   const std::vector<double>& costs, const SvmParams& par,
                                   const Callbacks& cb, bool* converged = nullptr);
std::vector<Vec> svm_regress_path(const TrainingKernel& K, const std::vector<double>& z,
                                  const std::vector<int>& train, const std::vector<int>& test,
                                  const std::vector<double>& costs, const SvmParams& par,
                                  const Callbacks& cb, bool* converged = nullptr);

// Platt scaling fit (Lin, Lin & Weng 2007): A, B minimising the regularised cross-entropy
// of P(y = +1 | f) = 1 / (1 + exp(A f + B)).
void platt_fit(const std::vector<double>& f, const std::vector<signed char>& y, double* A,
               double* B);

// Pairwise coupling (Wu, Lin & Weng 2004, second method). r: k x k, r(i, j) = P(i | i or j).
Vec pairwise_coupling(const Mat& r);

// A machine in sparse form over the columns of a kernel block: f = sum_s coef_s K(., col_s) - rho.
struct SparseMachine {
  std::vector<int> col;
  std::vector<double> coef;
  double rho = 0.0;
};

// The one-vs-one machines of a compact model: support vectors ordered by class (nsv[c] of
// class c), coef (nSV x (k - 1)) holding for a support vector of class c its coefficient in
// the pair with class o in column o (o < c) or o - 1 (o > c), as LIBSVM stores them.
std::vector<SparseMachine> ovo_machines(CMatRef coef, const std::vector<int>& nsv,
                                        CVecRef rho);

// The compact form of one-vs-one machines fitted on rows with classes y (0..k-1): support
// vector rows (by class, then row), their count per class, and the coefficient matrix.
void compact_ovo(const std::vector<BinaryMachine>& m, const std::vector<int>& y, int k,
                 std::vector<int>* sv_rows, std::vector<int>* nsv, Mat* coef);

// Decision values of new points: dec (m x machines) from k(X, SV), computed in row blocks.
void svm_decision(Backend& be, const KernelSpec& spec, CMatRef X, CMatRef SV,
                  const std::vector<SparseMachine>& machines, MatRef dec, int threads,
                  const Callbacks& cb);
// The same from a precomputed kernel block Kx (m x nSV).
void svm_decision_pre(CMatRef Kx, const std::vector<SparseMachine>& machines, MatRef dec,
                      int threads);

// One-vs-one votes -> class (0-based); ties go to the lower class. dec columns are the pairs
// (0,1), (0,2), ..., positive meaning the second class.
std::vector<int> ovo_vote(CMatRef dec, int k);

// Class probabilities (m x k) from pairwise decision values and Platt parameters.
Mat ovo_probabilities(CMatRef dec, int k, CVecRef A, CVecRef B);

}  // namespace kl
