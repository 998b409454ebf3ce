#include "kernels/kernel.hpp"

#include <algorithm>
#include <new>

#include "linalg/simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

// Kernel rows through Kernel::block: a copy of the points, the diagonal, and rows computed as
// 1 x n blocks (parallel over the kernel's own tiles).
class GenericRows final : public KernelRows {
 public:
  GenericRows(KernelPtr k, Mat X) : k_(std::move(k)), X_(std::move(X)), diag_(X_.rows()) {
    const int d = static_cast<int>(X_.cols());
    for (Eigen::Index i = 0; i < X_.rows(); ++i)
      diag_[i] = k_->value(X_.data() + i, X_.rows(), X_.data() + i, X_.rows(), d);
  }
  int size() const override { return static_cast<int>(X_.rows()); }
  double diag(int p) const override { return diag_[p]; }
  double value(int i, int j) const override {
    return k_->value(X_.data() + i, X_.rows(), X_.data() + j, X_.rows(),
                     static_cast<int>(X_.cols()));
  }
  void row(int p, float* out, int threads) const override {
    const Eigen::Index n = X_.rows();
    Mat r(1, n);
    k_->block(X_.row(p), X_, r, threads, Callbacks());
    for (Eigen::Index q = 0; q < n; ++q) out[q] = static_cast<float>(r(0, q));
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const override {
    Mat A(rows.size(), X_.cols()), B(cols.size(), X_.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) A.row(i) = X_.row(rows[i]);
    for (std::size_t j = 0; j < cols.size(); ++j) B.row(j) = X_.row(cols[j]);
    k_->block(A, B, out, threads, Callbacks());
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    Mat S(rows.size(), X_.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) S.row(i) = X_.row(rows[i]);
    return std::unique_ptr<KernelRows>(new GenericRows(k_, std::move(S)));
  }

 private:
  KernelPtr k_;
  Mat X_;
  Vec diag_;
};

}  // namespace

KernelPtr share(const Kernel& k) {
  std::shared_ptr<const Kernel> p = k.weak_from_this().lock();
  if (p) return p;
  return KernelPtr(&k, [](const Kernel*) {});
}

std::unique_ptr<KernelRows> generic_rows(KernelPtr kernel, CMatRef X) {
  return std::unique_ptr<KernelRows>(new GenericRows(std::move(kernel), Mat(X)));
}

std::unique_ptr<KernelRows> Kernel::rows(CMatRef X) const { return generic_rows(share(*this), X); }

void Kernel::contract_derivatives(CMatRef, CMatRef, CMatRef, VecRef, int,
                                  const Callbacks&) const {
  throw Error("the " + name() + " kernel has no parameter derivatives");
}

void Kernel::check_dim(Eigen::Index d, const char* what) const {
  const int want = input_dim();
  if (want >= 0 && d != want)
    throw Error("the " + name() + " kernel is defined on " + std::to_string(want) +
                " columns but " + what + " has " + std::to_string(d));
}

void tile_product_nt(CMatRef A, Eigen::Index r0, Eigen::Index nr, CMatRef B, Eigen::Index c0,
                     Eigen::Index nc, Mat& C) {
  C.resize(nr, nc);
  const Eigen::Index p = A.cols();
  const SimdLevel level = simd_level();
  if (p == 0) {
    C.setZero();
  } else if (level != SimdLevel::none) {
    gemm_block(level, nr, nc, p, A.data() + r0, 1, A.outerStride(), B.data() + c0,
               B.outerStride(), 1, C.data(), 1, nr);
  } else {
    C.noalias() = A.middleRows(r0, nr) * B.middleRows(c0, nc).transpose();
  }
}

void for_each_tile(Eigen::Index n, Eigen::Index m, int threads, const Callbacks& cb,
                   const std::function<void(Eigen::Index, Eigen::Index, Eigen::Index,
                                            Eigen::Index)>& fn) {
  if (n == 0 || m == 0) return;
  threads = clamp_threads(threads);
  const Eigen::Index nrb = (n + kTileRows - 1) / kTileRows;
  const Eigen::Index ncb = (m + kTileCols - 1) / kTileCols;
  const Eigen::Index ntiles = nrb * ncb;
  const Eigen::Index sweep = std::max<Eigen::Index>(1, 8 * threads);
  const int nt = ntiles > 1 ? threads : 1;
  (void)nt;
  for (Eigen::Index start = 0; start < ntiles; start += sweep) {
    const Eigen::Index stop = std::min(ntiles, start + sweep);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
#endif
    for (Eigen::Index t = start; t < stop; ++t) {
      try {
        const Eigen::Index r0 = (t / ncb) * kTileRows, c0 = (t % ncb) * kTileCols;
        fn(r0, std::min(kTileRows, n - r0), c0, std::min(kTileCols, m - c0));
      } catch (...) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
        failed = true;
      }
    }
    if (failed) throw Error("kernel computation: out of memory while computing a tile");
    cb.check();
    cb.report(static_cast<double>(stop) / static_cast<double>(ntiles));
  }
}

}  // namespace kl
