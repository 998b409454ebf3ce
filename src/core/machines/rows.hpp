// Kernel values between the training rows of an SVM problem: the training kernel (a kernel
// object over the rows, or a precomputed n x n matrix) and the LRU cache of its rows.
#pragma once

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

 private:
  void unlink(int p);
  void push_back(int p);
  // Computes row p into out with the thread count that has been faster lately (see get()).
  void compute_row(int p, float* out);
  const KernelRows& src_;
  int n_, threads_;
  std::size_t capacity_;  // rows
  std::vector<double> diag_;
  std::vector<std::unique_ptr<float[]>> slots_;
  std::vector<int> slot_of_;  // -1 when not cached
  std::vector<int> prev_, next_;
  int head_ = -1, tail_ = -1;  // least / most recently used
  long computed_ = 0;
  // Threads per row, chosen by timing: a probe of kProbeRows rows alternates one thread and
  // threads_ (the rows are the same either way) and the faster count is used until the next
  // probe. A parallel row costs a fork and join; on a machine whose cores are all busy the
  // join can wait a scheduler time slice, far longer than the row itself.
  int row_threads_ = 1;
  int probe_ = 0;         // rows of the current probe done (0: not probing)
  long next_probe_ = 0;   // computed_ at which the next probe starts
  double probe_time_[2] = {0.0, 0.0};  // one thread, threads_
};

}  // namespace kl
