#include "linalg/chol.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace kl {
namespace {
const Eigen::Index kCholBlock = 256;  // columns factored per step
const Eigen::Index kCholTile = 512;   // side of a trailing-update tile
const Eigen::Index kTrsmBlock = 64;   // panel columns solved by substitution at a time

// The side of the trailing-update tiles and of the panel's row chunks: 512, or about an eighth
// of a smaller matrix, a multiple of 32 (so that the threads share enough tiles in the last
// steps, where the trailing matrix is a few tiles wide: at n = 2500, tiles of 320 took 12%
// less time than tiles of 512 on two threads). Each element's sums run in the same order
// whatever the tiling, so this changes no result.
Eigen::Index cholesky_tile(Eigen::Index N) {
  return std::min<Eigen::Index>(kCholTile, std::max<Eigen::Index>(64, (N / 8 + 31) / 32 * 32));
}

// Columns factored per step inside a diagonal block (through the vectorised kernels, serially).
const Eigen::Index kCholInner = 32;

template <class T>
bool cholesky_lower_impl(Eigen::Ref<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> A,
                         int threads, SimdLevel max_level, const Callbacks& cb,
                         Eigen::Index block = kCholBlock) {
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index N = A.rows();
  if (A.cols() != N) throw Error("cholesky: the matrix is not square");
  const SimdLevel level = std::min(max_level, simd_level());
  const Eigen::Index tile = cholesky_tile(N);
  const Eigen::Index ld = A.outerStride();
  const int nthreads = clamp_threads(threads);
#ifndef _OPENMP
  (void)nthreads;
#endif
  std::vector<T> store;  // the packed panel of each step's trailing update
  for (Eigen::Index k0 = 0; k0 < N; k0 += block) {
    cb.check();
    const Eigen::Index kb = std::min(block, N - k0), k1 = k0 + kb, rest = N - k1;
    Eigen::Ref<MT> D11 = A.block(k0, k0, kb, kb);
    if (level != SimdLevel::none && kb > kCholInner) {
      // the diagonal block by the same steps in columns of kCholInner, on this thread
      if (!cholesky_lower_impl<T>(D11, 1, level, Callbacks(), kCholInner)) return false;
    } else {
      Eigen::LLT<Eigen::Ref<MT>> diag(D11);  // in place
      if (diag.info() != Eigen::Success) return false;
    }
    if (rest == 0) break;
    // Panel: A21 <- A21 L11^-T, in row chunks.
    const auto L11 = A.block(k0, k0, kb, kb).template triangularView<Eigen::Lower>();
    const Eigen::Index nchunk = (rest + tile - 1) / tile;
    const EigenSerial eigen_serial(!(nchunk > 1));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (nchunk > 1)
#endif
    for (Eigen::Index c = 0; c < nchunk; ++c) {
      const Eigen::Index r0 = k1 + c * tile, len = std::min(tile, N - r0);
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
      cholesky_update(level, A.data(), ld, N, k0, kb, k1, tile, nthreads, store);
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
      const Eigen::Index i0 = k1 + tiles[static_cast<std::size_t>(t)].first * tile;
      const Eigen::Index j0 = k1 + tiles[static_cast<std::size_t>(t)].second * tile;
      const Eigen::Index wi = std::min(tile, N - i0), wj = std::min(tile, N - j0);
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

// y -= a x and x'y over n elements, through the vectorised kernels of simd.hpp (callers come
// here only when the processor has them).
template <class T>
void sub_scaled(T* y, const T* x, T a, std::ptrdiff_t n) {
  axpy_sub(simd_level(), y, x, a, n);
}

template <class T>
T dot_n(const T* x, const T* y, std::ptrdiff_t n) {
  return dot(simd_level(), x, y, n);
}

// Fewer right-hand sides than this are solved column by column of L.
const std::ptrdiff_t kBlockedRhs = 4;
// Columns of L per block of the substitutions.
constexpr std::ptrdiff_t kSolveBlock = 256;

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> cholesky_solve_impl(
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& L,
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>>& B, int threads) {
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const SimdLevel level = simd_level();
  const std::ptrdiff_t n = L.rows(), m = B.cols();
  if (L.cols() != n || B.rows() != n) throw Error("cholesky_solve: shapes do not match");
  if (level == SimdLevel::none || n < 512) return eigen_cholesky_solve<T>(L, B);
  const std::ptrdiff_t nb = kSolveBlock, ldl = L.outerStride();
  const T* l = L.data();
  MT X = B;
  const std::ptrdiff_t ldx = X.outerStride();
  T* x = X.data();
  const int nt = clamp_threads(threads);
  if (m < kBlockedRhs) {
    // Few right-hand sides: a sweep down the columns of L for each substitution, L read once
    // (the blocked products below would pack blocks of L that they then use only m times). In
    // blocks of nb columns: the triangle on the diagonal by one thread, the rest of the block's
    // columns shared among the threads (rows below it going forward, whole columns going
    // back), so that both threads stream L. Each element is computed in the same order at any
    // thread count.
    const auto share = [&](std::ptrdiff_t len, const auto& f) {
      const int parts = len >= 256 ? nt : 1;
      (void)parts;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(parts) if (parts > 1)
#endif
      for (int t = 0; t < parts; ++t) {
        const std::ptrdiff_t step = (len / parts + 7) / 8 * 8;
        const std::ptrdiff_t a = std::min(len, t * step);
        const std::ptrdiff_t b = t + 1 == parts ? len : std::min(len, a + step);
        if (b > a) f(a, b - a);
      }
    };
    for (std::ptrdiff_t b0 = 0; b0 < n; b0 += nb) {
      const std::ptrdiff_t h = std::min(nb, n - b0), b1 = b0 + h;
      for (std::ptrdiff_t k = b0; k < b1; ++k) {
        const T* col = l + k * ldl;  // L(k:n, k) from col[k]
        for (std::ptrdiff_t j = 0; j < m; ++j) {
          T* z = x + j * ldx;
          z[k] /= col[k];
          sub_scaled(z + k + 1, col + k + 1, z[k], b1 - k - 1);
        }
      }
      if (b1 < n)  // Z(b1:n) -= L(b1:n, b) Z_b, rows shared
        share(n - b1, [&](std::ptrdiff_t a, std::ptrdiff_t r) {
          axpy_sub_cols(level, x + b1 + a, ldx, static_cast<int>(m), l + b0 * ldl + b1 + a, ldl,
                        h, x + b0, ldx, r);
        });
    }
    const std::ptrdiff_t last = ((n - 1) / nb) * nb;
    for (std::ptrdiff_t b0 = last; b0 >= 0; b0 -= nb) {
      const std::ptrdiff_t h = std::min(nb, n - b0), b1 = b0 + h;
      if (b1 < n)  // X_b -= L(b1:n, b)' X(b1:n), columns shared
        share(h, [&](std::ptrdiff_t a, std::ptrdiff_t r) {
          T d[kSolveBlock * kBlockedRhs];  // D(k, j) at d[k + j r]
          dot_cols(level, l + (b0 + a) * ldl + b1, ldl, r, x + b1, ldx, static_cast<int>(m),
                   n - b1, d, r);
          for (std::ptrdiff_t j = 0; j < m; ++j)
            for (std::ptrdiff_t k = 0; k < r; ++k) x[j * ldx + b0 + a + k] -= d[k + j * r];
        });
      for (std::ptrdiff_t k = b1 - 1; k >= b0; --k) {
        const T* col = l + k * ldl;
        for (std::ptrdiff_t j = 0; j < m; ++j) {
          T* z = x + j * ldx;
          z[k] = (z[k] - dot_n(col + k + 1, z + k + 1, b1 - k - 1)) / col[k];
        }
      }
    }
    return X;
  }
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
        z[i] = (z[i] - dot_n(col + i + 1, z + i + 1, h - i - 1)) / col[i];
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

Mat symmetric_lower_product(const CMatFRef& A, double shift, const CMatRef& X, int threads) {
  const Eigen::Index n = A.rows(), m = X.cols();
  if (A.cols() != n || X.rows() != n) throw Error("symmetric_lower_product: shapes do not match");
  const SimdLevel level = simd_level();
  const Eigen::Index lda = A.outerStride();
  // columns [0, c) hold about half of the triangle's entries
  const Eigen::Index c =
      std::min<Eigen::Index>(n, static_cast<Eigen::Index>(std::ceil(n * (1.0 - std::sqrt(0.5)))));
  const Eigen::Index bounds[3] = {0, c, n};
  Mat Y[2];
  const int nt = clamp_threads(threads);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(nt) if (nt > 1 && n >= 256)
#endif
  for (int part = 0; part < 2; ++part) {
    Mat& Yp = Y[part];
    Yp = Mat::Zero(n, m);
    for (Eigen::Index m0 = 0; m0 < m; m0 += 4) {
      const int mm = static_cast<int>(std::min<Eigen::Index>(4, m - m0));
      // four columns of A at a time (their rows below swept once), from the part's start
      for (Eigen::Index j = bounds[part]; j < bounds[part + 1]; j += 4) {
        const int g = static_cast<int>(std::min<Eigen::Index>(4, bounds[part + 1] - j));
        sym_columns_f32(level, A.data(), lda, n, j, g, shift, X.data() + m0 * X.outerStride(),
                        X.outerStride(), Yp.data() + m0 * n, n, mm);
      }
    }
  }
  Y[0] += Y[1];
  return Y[0];
}

void MixedCholesky::clear() {
  A_ = nullptr;
  L_.resize(0, 0);
}

bool MixedCholesky::factor(const Eigen::MatrixXf& A, double shift, int threads,
                           const Callbacks& cb) {
  const Eigen::Index n = A.rows();
  if (A.cols() != n) throw Error("cholesky: the matrix is not square");
  if (!std::isfinite(shift)) throw Error("cholesky: the shift is not finite");
  A_ = nullptr;
  L_.resize(n, n);
  const float sf = static_cast<float>(shift);
  for (Eigen::Index j = 0; j < n; ++j) {
    L_.col(j).tail(n - j) = A.col(j).tail(n - j);
    L_(j, j) += sf;
  }
  if (!cholesky_lower(L_, threads, SimdLevel::avx512, cb)) return false;
  A_ = &A;
  shift_ = shift;
  return true;
}

bool MixedCholesky::solve(const CMatRef& B, Mat& X, double tol, int threads, int max_steps,
                          int* steps) const {
  if (!A_) throw Error("MixedCholesky: solve before a successful factor");
  const Eigen::Index n = L_.rows(), m = B.cols();
  if (B.rows() != n) throw Error("cholesky_solve: shapes do not match");
  if (steps) *steps = 0;
  // a correction through the single-precision factor, its right-hand side scaled to the
  // float range column by column
  const auto correct = [&](const Mat& R, Mat& D) {
    Eigen::MatrixXf Rf(n, m);
    Vec scale(m);
    for (Eigen::Index j = 0; j < m; ++j) {
      const double big = R.col(j).cwiseAbs().maxCoeff();
      scale[j] = big > 0.0 ? big : 1.0;
      Rf.col(j) = (R.col(j) / scale[j]).cast<float>();
    }
    const Eigen::MatrixXf Df = cholesky_solve(CMatFRef(L_), CMatFRef(Rf), threads);
    D = Df.cast<double>() * scale.asDiagonal();
  };
  if (!B.allFinite()) throw Error("cholesky_solve: the right-hand side is not finite");
  correct(Mat(B), X);
  Vec last = Vec::Constant(m, std::numeric_limits<double>::infinity());
  std::vector<bool> settled(static_cast<std::size_t>(m), false);
  Mat D;
  for (int k = 1; k <= max_steps; ++k) {
    const Mat R = B - symmetric_lower_product(CMatFRef(*A_), shift_, X, threads);
    correct(R, D);
    X += D;
    if (steps) *steps = k;
    bool done = true;
    for (Eigen::Index j = 0; j < m; ++j) {
      if (settled[static_cast<std::size_t>(j)]) continue;
      const double dj = D.col(j).cwiseAbs().maxCoeff();
      if (!std::isfinite(dj) || dj > 0.5 * last[j]) return false;
      // the error left is about the contraction (the last two corrections' ratio) times dj
      const double left = k > 1 ? dj / last[j] * dj : dj;
      const double big = X.col(j).cwiseAbs().maxCoeff();
      last[j] = dj;
      settled[static_cast<std::size_t>(j)] = dj <= tol * big || left <= 0.1 * tol * big;
      done = done && settled[static_cast<std::size_t>(j)];
    }
    if (done) return true;
  }
  return false;
}

}  // namespace kl
