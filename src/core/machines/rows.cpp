#include "machines/rows.hpp"

#include "backend/backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kl {

namespace {

// Rows of a precomputed matrix (not copied).
class MatrixRows final : public KernelRows {
 public:
  MatrixRows(const double* K, int ld, std::vector<int> rows)
      : K_(K), ld_(ld), rows_(std::move(rows)) {}
  int size() const override { return static_cast<int>(rows_.size()); }
  double diag(int p) const override { return at(rows_[p], rows_[p]); }
  double value(int i, int j) const override { return at(rows_[i], rows_[j]); }
  void row(int p, float* out, int) const override {
    const double* col = K_ + static_cast<std::size_t>(rows_[p]) * ld_;
    const int n = size();
    for (int q = 0; q < n; ++q) out[q] = static_cast<float>(col[rows_[q]]);
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int) const override {
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t i = 0; i < rows.size(); ++i) out(i, j) = at(rows_[rows[i]], rows_[cols[j]]);
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    std::vector<int> r(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) r[i] = rows_[rows[i]];
    return std::unique_ptr<KernelRows>(new MatrixRows(K_, ld_, std::move(r)));
  }

 private:
  double at(int i, int j) const { return K_[static_cast<std::size_t>(j) * ld_ + i]; }
  const double* K_;
  int ld_;
  std::vector<int> rows_;
};

// All the rows of a KernelRows, in order, without a copy.
class RowsView final : public KernelRows {
 public:
  explicit RowsView(const KernelRows& r) : r_(r) {}
  int size() const override { return r_.size(); }
  double diag(int p) const override { return r_.diag(p); }
  double value(int i, int j) const override { return r_.value(i, j); }
  void row(int p, float* out, int threads) const override { r_.row(p, out, threads); }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const override {
    r_.block(rows, cols, out, threads);
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    return r_.subset(rows);
  }

 private:
  const KernelRows& r_;
};

}  // namespace

TrainingKernel::TrainingKernel(KernelPtr kernel, CMatRef X, Backend* backend)
    : kernel_(std::move(kernel)), n_(static_cast<int>(X.rows())) {
  if (!kernel_) throw Error("no kernel");
  kernel_->check_dim(X.cols(), "the training data");
  if (backend) all_ = backend->kernel_rows(*kernel_, X);
  if (!all_) all_ = kernel_->rows(X);
}

TrainingKernel::TrainingKernel(const double* K, int n) : K_(K), n_(n) {
  std::vector<int> rows(n);
  for (int i = 0; i < n; ++i) rows[i] = i;
  all_.reset(new MatrixRows(K, n, std::move(rows)));
}

TrainingKernel::TrainingKernel(std::unique_ptr<KernelRows> rows)
    : all_(std::move(rows)), n_(all_ ? all_->size() : 0) {
  if (!all_) throw Error("no kernel");
}

std::unique_ptr<KernelRows> TrainingKernel::subset(const std::vector<int>& rows) const {
  bool all = static_cast<int>(rows.size()) == n_;
  for (int i = 0; all && i < n_; ++i) all = rows[i] == i;
  if (all) return std::unique_ptr<KernelRows>(new RowsView(*all_));
  return all_->subset(rows);
}


RowCache::RowCache(const KernelRows& src, double megabytes, int threads)
    : src_(src), n_(src.size()), threads_(clamp_threads(threads)), row_threads_(threads_) {
  const double bytes_per_row = 4.0 * std::max(n_, 1);
  double rows = std::floor(megabytes * 1048576.0 / bytes_per_row);
  if (!(rows >= 2)) rows = 2;
  if (rows > n_) rows = n_;
  capacity_ = static_cast<std::size_t>(std::max(rows, 2.0));
  diag_.resize(n_);
  for (int p = 0; p < n_; ++p) diag_[p] = src.diag(p);
  slot_of_.assign(n_, -1);
  prev_.assign(n_, -1);
  next_.assign(n_, -1);
}

void RowCache::unlink(int p) {
  const int a = prev_[p], b = next_[p];
  if (a >= 0) next_[a] = b; else head_ = b;
  if (b >= 0) prev_[b] = a; else tail_ = a;
  prev_[p] = next_[p] = -1;
}

void RowCache::push_back(int p) {
  prev_[p] = tail_;
  next_[p] = -1;
  if (tail_ >= 0) next_[tail_] = p; else head_ = p;
  tail_ = p;
}

const float* RowCache::get(int p) {
  int s = slot_of_[p];
  if (s >= 0) {
    if (tail_ != p) {
      unlink(p);
      push_back(p);
    }
    return slots_[s].get();
  }
  if (slots_.size() < capacity_) {
    slots_.emplace_back(new float[std::max(n_, 1)]);
    s = static_cast<int>(slots_.size()) - 1;
  } else {
    const int victim = head_;
    s = slot_of_[victim];
    unlink(victim);
    slot_of_[victim] = -1;
  }
  float* row = slots_[s].get();
  src_.row(p, row, row_threads_);
  ++computed_;
  // finite: no exponent field all ones (a vectorisable maximum over the bits)
  std::uint32_t top = 0;
  for (int q = 0; q < n_; ++q) {
    std::uint32_t b;
    std::memcpy(&b, row + q, sizeof b);
    b &= 0x7f800000u;
    top = b > top ? b : top;
  }
  const bool finite = top != 0x7f800000u;
  if (!finite || !std::isfinite(diag_[p]) || std::fabs(diag_[p]) > 3.0e38) {
    slot_of_[p] = -1;
    throw Error("kernel values are not finite or exceed the single-precision range (about "
                "3.4e38) in which they are cached; use a kernel with smaller values (a lower "
                "degree, a smaller scale) or rescale the inputs");
  }
  slot_of_[p] = s;
  push_back(p);
  return slots_[s].get();
}

}  // namespace kl
