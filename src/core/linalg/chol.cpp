#include "linalg/chol.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace kl {
namespace {
const Eigen::Index kCholBlock = 256;  // columns factored per step
const Eigen::Index kCholTile = 512;   // side of a trailing-update tile
const Eigen::Index kTrsmBlock = 64;   // panel columns solved by substitution at a time

template <class T>
bool cholesky_lower_impl(Eigen::Ref<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> A,
                         int threads, SimdLevel max_level, const Callbacks& cb) {
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index N = A.rows();
  if (A.cols() != N) throw Error("cholesky: the matrix is not square");
  const SimdLevel level = std::min(max_level, simd_level());
  const Eigen::Index ld = A.outerStride();
  const int nthreads = clamp_threads(threads);
#ifndef _OPENMP
  (void)nthreads;
#endif
  std::vector<T> store;  // the packed panel of each step's trailing update
  for (Eigen::Index k0 = 0; k0 < N; k0 += kCholBlock) {
    cb.check();
    const Eigen::Index kb = std::min(kCholBlock, N - k0), k1 = k0 + kb, rest = N - k1;
    Eigen::Ref<MT> D11 = A.block(k0, k0, kb, kb);
    Eigen::LLT<Eigen::Ref<MT>> diag(D11);  // in place
    if (diag.info() != Eigen::Success) return false;
    if (rest == 0) break;
    // Panel: A21 <- A21 L11^-T, in row chunks.
    const auto L11 = A.block(k0, k0, kb, kb).template triangularView<Eigen::Lower>();
    const Eigen::Index nchunk = (rest + kCholTile - 1) / kCholTile;
    const EigenSerial eigen_serial(!(nchunk > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (nchunk > 1)
#endif
    for (Eigen::Index c = 0; c < nchunk; ++c) {
      const Eigen::Index r0 = k1 + c * kCholTile, len = std::min(kCholTile, N - r0);
      if (level != SimdLevel::none) {
        // Blocks of kTrsmBlock columns: each solved by substitution, then subtracted from the
        // columns after it through the matrix product (most of the work).
        T* P = A.data() + r0 + k0 * ld;
        const T* L = A.data() + k0 + k0 * ld;
        for (Eigen::Index c0 = 0; c0 < kb; c0 += kTrsmBlock) {
          const Eigen::Index cb = std::min(kTrsmBlock, kb - c0), c1 = c0 + cb;
          trsm_right_lower_t(level, len, cb, L + c0 + c0 * ld, ld, P + c0 * ld, ld);
          if (c1 < kb)  // P(:, c1:) -= P(:, c0:c1) L(c1:, c0:c1)'
            gemm_block_sub(level, len, kb - c1, cb, P + c0 * ld, 1, ld, L + c1 + c0 * ld, ld, 1,
                           P + c1 * ld, 1, ld);
        }
      } else {
        auto panel = A.block(r0, k0, len, kb);
        L11.transpose().template solveInPlace<Eigen::OnTheRight>(panel);
      }
    }
    // Trailing update: A22 <- A22 - A21 A21' on the lower triangle of tiles, through the
    // packed vectorised kernels, or through Eigen's products on a processor without them.
    if (level != SimdLevel::none) {
      cholesky_update(level, A.data(), ld, N, k0, kb, k1, kCholTile, nthreads, store);
      cb.report(1.0 - std::pow(static_cast<double>(rest) / static_cast<double>(N), 3));
      continue;
    }
    std::vector<std::pair<Eigen::Index, Eigen::Index>> tiles;
    for (Eigen::Index a = 0; a < nchunk; ++a)
      for (Eigen::Index b = 0; b <= a; ++b) tiles.emplace_back(a, b);
    const long ntasks = static_cast<long>(tiles.size());
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (ntasks > 1)
#endif
    for (long t = 0; t < ntasks; ++t) {
      const Eigen::Index i0 = k1 + tiles[static_cast<std::size_t>(t)].first * kCholTile;
      const Eigen::Index j0 = k1 + tiles[static_cast<std::size_t>(t)].second * kCholTile;
      const Eigen::Index wi = std::min(kCholTile, N - i0), wj = std::min(kCholTile, N - j0);
      MT prod(wi, wj);
      prod.noalias() = A.block(i0, k0, wi, kb) * A.block(j0, k0, wj, kb).transpose();
      auto target = A.block(i0, j0, wi, wj);
      if (i0 == j0)
        target.template triangularView<Eigen::Lower>() -= prod;
      else
        target -= prod;
    }
    cb.report(1.0 - std::pow(static_cast<double>(rest) / static_cast<double>(N), 3));
  }
  cb.report(1.0);
  return true;
}

}  // namespace

bool cholesky_lower(MatRef A, int threads, SimdLevel max_level, const Callbacks& cb) {
  return cholesky_lower_impl<double>(A, threads, max_level, cb);
}

bool cholesky_lower(MatFRef A, int threads, SimdLevel max_level, const Callbacks& cb) {
  return cholesky_lower_impl<float>(A, threads, max_level, cb);
}

namespace {

// (L L')^-1 B by Eigen's triangular solves.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> eigen_cholesky_solve(
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& L,
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& B) {
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> X = B;
  L.template triangularView<Eigen::Lower>().solveInPlace(X);
  L.template triangularView<Eigen::Lower>().adjoint().solveInPlace(X);
  return X;
}

}  // namespace

Mat cholesky_solve(const CMatRef& L, const CMatRef& B) { return eigen_cholesky_solve<double>(L, B); }

namespace {

// y -= a x and x'y over n elements, through Eigen's vectorised maps (a plain loop stays
// scalar: the compiler does not reorder a floating-point sum, and at -O2 it leaves loops with
// a remainder unvectorised).
template <class T>
void sub_scaled(T* y, const T* x, T a, std::ptrdiff_t n) {
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  Eigen::Map<V>(y, n) -= a * Eigen::Map<const V>(x, n);
}

template <class T>
T dot(const T* x, const T* y, std::ptrdiff_t n) {
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  return n > 0 ? Eigen::Map<const V>(x, n).dot(Eigen::Map<const V>(y, n)) : T(0);
}

// Fewer right-hand sides than this are solved column by column of L.
const std::ptrdiff_t kBlockedRhs = 4;

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> cholesky_solve_impl(
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& L,
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& B, int threads) {
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const SimdLevel level = simd_level();
  const std::ptrdiff_t n = L.rows(), m = B.cols();
  if (L.cols() != n || B.rows() != n) throw Error("cholesky_solve: shapes do not match");
  if (level == SimdLevel::none || n < 512) return eigen_cholesky_solve<T>(L, B);
  const std::ptrdiff_t nb = 256, ldl = L.outerStride();
  const T* l = L.data();
  MT X = B;
  const std::ptrdiff_t ldx = X.outerStride();
  T* x = X.data();
  if (m < kBlockedRhs) {
    // Few right-hand sides: column by column of L, each read once per substitution (the
    // blocked products below would pack blocks of L that they then use only m times).
    for (std::ptrdiff_t k = 0; k < n; ++k) {
      const T* col = l + k * ldl;  // L(k:n, k) from col[k]
      for (std::ptrdiff_t j = 0; j < m; ++j) {
        T* z = x + j * ldx;
        const T zk = z[k] / col[k];
        z[k] = zk;
        sub_scaled(z + k + 1, col + k + 1, zk, n - k - 1);
      }
    }
    for (std::ptrdiff_t k = n - 1; k >= 0; --k) {
      const T* col = l + k * ldl;
      for (std::ptrdiff_t j = 0; j < m; ++j) {
        T* z = x + j * ldx;
        z[k] = (z[k] - dot(col + k + 1, z + k + 1, n - k - 1)) / col[k];
      }
    }
    return X;
  }
  const int nt = clamp_threads(threads);
  // rows [i0, i0 + h) of the block share the product among the threads in fixed halves
  const auto split = [&](std::ptrdiff_t h, const auto& f) {
    const std::ptrdiff_t half = (h / 2 + 7) / 8 * 8;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(nt) if (nt > 1 && h >= 64)
#endif
    for (int part = 0; part < 2; ++part) {
      const std::ptrdiff_t a = part == 0 ? 0 : std::min(half, h), b = part == 0 ? std::min(half, h) : h;
      if (b > a) f(a, b - a);
    }
  };
  // Forward: L Z = B.
  for (std::ptrdiff_t b0 = 0; b0 < n; b0 += nb) {
    const std::ptrdiff_t h = std::min(nb, n - b0);
    if (b0 > 0)  // Z_b -= L(b, 0:b0) Z(0:b0)
      split(h, [&](std::ptrdiff_t a, std::ptrdiff_t r) {
        gemm_block_sub(level, r, m, b0, l + b0 + a, 1, ldl, x, 1, ldx, x + b0 + a, 1, ldx);
      });
    // column-oriented, so that L is read down its columns (a row of L is a stride apart)
    for (std::ptrdiff_t j = 0; j < m; ++j) {
      T* z = x + b0 + j * ldx;
      for (std::ptrdiff_t k = 0; k < h; ++k) {
        const T* col = l + (b0 + k) * ldl + b0;  // L(b0 + i, b0 + k), i >= k
        const T zk = z[k] / col[k];
        z[k] = zk;
        sub_scaled(z + k + 1, col + k + 1, zk, h - k - 1);
      }
    }
  }
  // Backward: L' X = Z, blocks from the last.
  const std::ptrdiff_t last = ((n - 1) / nb) * nb;
  for (std::ptrdiff_t b0 = last; b0 >= 0; b0 -= nb) {
    const std::ptrdiff_t h = std::min(nb, n - b0), b1 = b0 + h;
    if (b1 < n)  // X_b -= L(b1:n, b)' X(b1:n)
      split(h, [&](std::ptrdiff_t a, std::ptrdiff_t r) {
        gemm_block_sub(level, r, m, n - b1, l + b1 + (b0 + a) * ldl, ldl, 1, x + b1, 1, ldx,
                       x + b0 + a, 1, ldx);
      });
    for (std::ptrdiff_t j = 0; j < m; ++j) {
      T* z = x + b0 + j * ldx;
      for (std::ptrdiff_t i = h - 1; i >= 0; --i) {
        const T* col = l + (b0 + i) * ldl + b0;  // L(b0 + k, b0 + i), k > i
        z[i] = (z[i] - dot(col + i + 1, z + i + 1, h - i - 1)) / col[i];
      }
    }
  }
  return X;
}

}  // namespace

Mat cholesky_solve(const CMatRef& L, const CMatRef& B, int threads) {
  return cholesky_solve_impl<double>(L, B, threads);
}

Eigen::MatrixXf cholesky_solve(const CMatFRef& L, const CMatFRef& B, int threads) {
  return cholesky_solve_impl<float>(L, B, threads);
}

}  // namespace kl
