// Multinomial logistic regression on a large row-major single-precision design matrix: the
// objective of logistic.hpp (unit weights), with the data term computed by one fused pass
// over each row block (linear predictors, softmax, gradient) so that the matrix is read from
// memory once per evaluation. On x86-64 processors with AVX2 and FMA a vectorised kernel is
// chosen at run time; elsewhere a portable one. Block sums are accumulated in double in a fixed
// order, so results do not depend on the thread count.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/common.hpp"
#include "heads/logistic.hpp"

namespace kl {

// An allocator whose value-initialisation leaves numbers uninitialised: resize() of a large
// matrix that is then filled in parallel does not first zero it on one thread.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* ptr) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(ptr)) U;
  }
  template <class U, class... Args>
  void construct(U* ptr, Args&&... args) {
    ::new (static_cast<void*>(ptr)) U(std::forward<Args>(args)...);
  }
};

struct RowMajorF32 {
  // n x p, row i at data[i * p]; resize() leaves new elements uninitialised
  std::vector<float, DefaultInitAllocator<float>> data;
  Eigen::Index n = 0, p = 0;
  const float* row(Eigen::Index i) const { return data.data() + i * p; }
  float* row(Eigen::Index i) { return data.data() + i * p; }
};

// Column means and 1 / standard deviations (0 for constant columns), then the columns
// standardised in place.
void standardize_f32(RowMajorF32& X, Vec& center, Vec& scale, int threads);
// The same centring and scaling by given statistics (the arithmetic of standardize_f32).
void standardize_f32_apply(RowMajorF32& X, const Vec& center, const Vec& scale, int threads);

// Fits on the rows `rows` (all rows when empty). y: classes 0..K-1 for every row of X.
// opt.init_coef / init_intercept give an optional starting point.
LogisticFit logistic_fit_f32(const RowMajorF32& X, const IVec& y, int K,
                             const std::vector<Eigen::Index>& rows, const LogisticOptions& opt,
                             const Callbacks& cb = Callbacks());

// True when the vectorised kernel is in use on this processor.
bool logistic_f32_vectorised();

}  // namespace kl
