// Kernel support vector machines: C-classification (binary, and one-vs-one for more classes,
// the pairs solved in parallel) and epsilon-regression on the SMO solver (smo.hpp) over cached
// kernel rows (svm_rows.hpp); probabilities and votes in svm_multiclass.hpp; decision values of
// new points through the kernel expansion (expansion.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common.hpp"
#include "backend.hpp"
#include "kernels.hpp"
#include "expansion.hpp"
#include "smo.hpp"
#include "svm_rows.hpp"
#include "svm_multiclass.hpp"

namespace kl {

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
// calling thread (the one of the lowest task index first). With one worker the tasks run on the
// calling thread itself, which the solver's loops then hand back to now and then through
// poll_caller(): the OpenMP threads of a solve are then the caller's own, shared with all its
// other parallel work (OpenMP keeps threads per calling thread, and stops spinning between
// parallel regions once it holds more threads than there are processors).
void run_tasks(int ntasks, int workers, const std::function<void(int, const std::atomic<bool>&)>& fn,
               const Callbacks& cb, std::atomic<double>* single_gap = nullptr, double eps = 1e-3);

// Inside a task that run_tasks runs on its calling thread: checks the caller's callbacks for an
// interrupt (throwing Interrupted) and reports progress, at most every few milliseconds. Does
// nothing elsewhere. Never call it inside a parallel region.
void poll_caller();


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

// The compact form of one-vs-one machines fitted on rows with classes y (0..k-1): support
// vector rows (by class, then row), their count per class, and the coefficient matrix.
void compact_ovo(const std::vector<BinaryMachine>& m, const std::vector<int>& y, int k,
                 std::vector<int>* sv_rows, std::vector<int>* nsv, Mat* coef);

}  // namespace kl
