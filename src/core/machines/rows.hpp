// Kernel values between the training rows of an SVM problem: the training kernel (a kernel
// object over the rows, or a precomputed n x n matrix) and the LRU cache of its rows.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "base/common.hpp"
#include "kernels/kernel.hpp"

namespace kl {

class Backend;

// Kernel over the n rows of the training data: a kernel object bound to the rows, or a
// precomputed n x n matrix. Subsets give the KernelRows of a subproblem.
class TrainingKernel {
 public:
  // X: n x d (column-major, as R stores it), copied as the kernel needs. With a backend, the
  // rows come from backend->kernel_rows() when it offers them (the GPU), else from the kernel.
  TrainingKernel(KernelPtr kernel, CMatRef X, Backend* backend = nullptr);
  // K: n x n symmetric, column-major; not copied, must outlive this object.
  TrainingKernel(const double* K, int n);
  // Any kernel over the n training rows (such as one computed from a precomputed matrix).
  explicit TrainingKernel(std::unique_ptr<KernelRows> rows);

  int n() const { return n_; }
  bool precomputed() const { return K_ != nullptr; }
  double value(int i, int j) const { return all_->value(i, j); }
  // The kernel on the rows `rows` (all rows in order: no copy).
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const;
  // out (rows.size() x cols.size()) = k(row_i, col_j), in double precision.
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const {
    all_->block(rows, cols, out, threads);
  }

 private:
  KernelPtr kernel_;
  std::unique_ptr<KernelRows> all_;
  const double* K_ = nullptr;
  int n_ = 0;
};

// LRU cache of kernel rows (full length) of a KernelRows, with a memory budget.
class RowCache {
 public:
  RowCache(const KernelRows& src, double megabytes, int threads);
  // The row of point p. The pointer stays valid until two more distinct rows are requested.
  const float* get(int p);
  double diag(int p) const { return diag_[p]; }
  int size() const { return n_; }
  int threads() const { return threads_; }
  long computed() const { return computed_; }
  // Threads for the rows computed from now on (1 to threads(); the rows are the same).
  void set_row_threads(int t) { row_threads_ = std::max(1, std::min(t, threads_)); }

 private:
  void unlink(int p);
  void push_back(int p);
  const KernelRows& src_;
  int n_, threads_;
  std::size_t capacity_;  // rows
  std::vector<double> diag_;
  std::vector<std::unique_ptr<float[]>> slots_;
  std::vector<int> slot_of_;  // -1 when not cached
  std::vector<int> prev_, next_;
  int head_ = -1, tail_ = -1;  // least / most recently used
  long computed_ = 0;
  int row_threads_;  // threads per row (set_row_threads)
};

}  // namespace kl
