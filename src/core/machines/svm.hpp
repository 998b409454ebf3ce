// Kernel support vector machines: C-classification (binary, and one-vs-one for more classes,
// the pairs solved in parallel) and epsilon-regression on the SMO solver (machines/smo.hpp) over
// cached kernel rows (machines/rows.hpp); probabilities and votes in machines/multiclass.hpp;
// decision values of new points through the kernel expansion (backend/expansion.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/common.hpp"
#include "base/tasks.hpp"
#include "backend/backend.hpp"
#include "kernels/standard.hpp"
#include "backend/expansion.hpp"
#include "machines/smo.hpp"
#include "machines/rows.hpp"
#include "machines/types.hpp"
#include "machines/multiclass.hpp"

namespace kl {

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

}  // namespace kl
