// Dense algebra: the vectorised tiled GEMM, the backend's products, the blocked Cholesky
// factorisation and solves, and the Gram matrix and products of calibrated least squares,
// against plain loops and Eigen's own routines, and across thread counts.
#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/backend.hpp"
#include "backend/expansion.hpp"
#include "harness.hpp"
#include "heads/cls.hpp"
#include "helpers.hpp"
#include "linalg/chol.hpp"
#include "linalg/simd.hpp"
#include "machines/kernel_ridge.hpp"
#include "kernels/standard.hpp"

namespace {

// A B' (tn = false) or A'B (tn = true) by the tiled GEMM with the widest kernel up to `simd`
// that the processor has, or by Eigen (simd = 0, or no such kernel).
kl::Mat simd_gemm(const kl::Mat& a, const kl::Mat& b, bool tn, int threads, int simd) {
  const Eigen::Index m = tn ? a.cols() : a.rows(), n = tn ? b.cols() : b.rows();
  const Eigen::Index k = tn ? a.rows() : a.cols();
  kl::Mat C(m, n);
  const kl::SimdLevel level = std::min(static_cast<kl::SimdLevel>(simd), kl::simd_level());
  if (level == kl::SimdLevel::none) {
    if (tn)
      C.noalias() = a.transpose() * b;
    else
      C.noalias() = a * b.transpose();
  } else if (tn) {
    kl::gemm_parallel(level, m, n, k, a.data(), a.rows(), 1, b.data(), 1, b.rows(), C.data(), m,
                      threads);
  } else {
    kl::gemm_parallel(level, m, n, k, a.data(), 1, a.rows(), b.data(), b.rows(), 1, C.data(), m,
                      threads);
  }
  return C;
}

kl::Mat gemm_nt(const kl::Mat& a, const kl::Mat& b, int threads) {
  kl::Mat C(a.rows(), b.rows());
  kl::cpu_backend().gemm_nt(a, b, C, threads);
  return C;
}

// The lower Cholesky factor with the strict upper triangle zeroed (as the R glue returned it),
// Eigen's threads off as there; false when a pivot is not positive.
bool chol_lower(const kl::Mat& A, int threads, int simd, kl::Mat* L) {
  ct::EigenThreads one(1);
  *L = A;
  if (!kl::cholesky_lower(*L, threads, static_cast<kl::SimdLevel>(simd))) return false;
  L->triangularView<Eigen::StrictlyUpper>().setZero();
  return true;
}

bool chol_lower_single(const kl::Mat& A, int threads, int simd, kl::Mat* L) {
  ct::EigenThreads one(1);
  Eigen::MatrixXf Lf = A.cast<float>();
  if (!kl::cholesky_lower(Lf, threads, static_cast<kl::SimdLevel>(simd))) return false;
  Lf.triangularView<Eigen::StrictlyUpper>().setZero();
  *L = Lf.cast<double>();
  return true;
}

kl::Mat gram(const kl::Mat& X, bool single, int threads, int simd = 2) {
  ct::EigenThreads one(1);
  if (!single) return kl::gram_with_intercept(X, threads);
  return kl::gram_with_intercept(ct::to_single(X), threads, static_cast<kl::SimdLevel>(simd));
}

kl::Mat with_ones(const kl::Mat& X) {
  kl::Mat X1(X.rows(), X.cols() + 1);
  X1 << X, kl::Vec::Ones(X.rows());
  return X1;
}

const double kEps = std::numeric_limits<double>::epsilon();

// The kernel ridge fit with a bias by a direct solve of the bordered system
// [K + c I, 1; 1', 0] [alpha; b] = [Y; 0]: alpha in the first rows, b in the last.
kl::Mat bordered_ridge_solve(const kl::Mat& K, const kl::Mat& Y, double c) {
  const Eigen::Index m = K.rows();
  kl::Mat S = kl::Mat::Zero(m + 1, m + 1);
  S.topLeftCorner(m, m) = K + c * kl::Mat::Identity(m, m);
  S.topRightCorner(m, 1).setOnes();
  S.bottomLeftCorner(1, m).setOnes();
  kl::Mat R = kl::Mat::Zero(m + 1, Y.cols());
  R.topRows(m) = Y;
  return Eigen::PartialPivLU<kl::Mat>(S).solve(R);
}

}  // namespace

TEST_CASE("linalg: the vectorised tiled GEMM agrees with plain products for every kernel level") {
  // more than one 512 tile of C in each direction, more than one 256-row block of the inner
  // dimension, and sizes that are not multiples of the micro-tiles
  kl::Rng rng(ct::seed2(11, 1));
  const kl::Mat a = ct::rnorm(rng, 1030, 301), b = ct::rnorm(rng, 530, 301);
  const kl::Mat ref_nt = ct::naive_nt(a, b);
  const kl::Mat a2 = ct::rnorm(rng, 301, 1030), b2 = ct::rnorm(rng, 301, 7);
  const kl::Mat ref_tn = ct::naive_tn(a2, b2);
  for (int simd = 0; simd <= 2; ++simd) {
    const kl::Mat nt = simd_gemm(a, b, false, 2, simd);
    CHECK_EQUAL(nt, ref_nt, 1e-12);
    CHECK_IDENTICAL(simd_gemm(a, b, false, 1, simd), nt);
    const kl::Mat tn = simd_gemm(a2, b2, true, 2, simd);
    CHECK_EQUAL(tn, ref_tn, 1e-12);
    CHECK_IDENTICAL(simd_gemm(a2, b2, true, 1, simd), tn);
  }
  // an empty inner dimension gives zeros
  CHECK_EQUAL(simd_gemm(kl::Mat(3, 0), kl::Mat(4, 0), false, 1, 2), kl::Mat::Zero(3, 4),
              1.490116119384765625e-8);
}

TEST_CASE(
    "linalg: the backend's products agree with plain products on shapes that are not block "
    "multiples") {
  // several 256-deep k blocks, several 144-row blocks of A, partial micro-tiles on both sides
  kl::Rng rng(ct::seed2(11, 2));
  const int shapes[3][3] = {{1003, 517, 300}, {37, 5, 3}, {290, 1030, 513}};
  for (const auto& sh : shapes) {
    const kl::Mat a = ct::runif(rng, sh[0], sh[2]), b = ct::runif(rng, sh[1], sh[2]);
    const kl::Mat P = gemm_nt(a, b, 2);
    CHECK_EQUAL(P, ct::naive_nt(a, b), 1e-13);
    CHECK_IDENTICAL(gemm_nt(a, b, 1), P);
  }
}

TEST_CASE("linalg: the portable paths (KERNLEARN_SIMD=none) give the vectorised paths' results") {
  // With KERNLEARN_SIMD=none the backend's product is Eigen's and the Cholesky factorisation
  // runs without vector kernels (level none); both agree with the vectorised ones.
  kl::Rng rng(ct::seed2(3, 1));
  const kl::Mat x = ct::runif(rng, 700, 5), z = ct::runif(rng, 300, 5);
  const kl::Mat M = ct::rnorm(rng, 900, 800);
  const kl::Mat A = (M.transpose() * M) / 900.0 + kl::Mat::Identity(800, 800);
  kl::Mat P_portable(700, 300);
  P_portable.noalias() = x * z.transpose();
  CHECK_EQUAL(P_portable, gemm_nt(x, z, 2), 1e-13);
  kl::Mat C_portable, C;
  CHECK(chol_lower(A, 2, 0, &C_portable));
  CHECK(chol_lower(A, 2, static_cast<int>(kl::simd_level()), &C));
  kl::Vec lp(800 * 801 / 2), lv(800 * 801 / 2);
  Eigen::Index t = 0;
  for (Eigen::Index j = 0; j < 800; ++j)
    for (Eigen::Index i = j; i < 800; ++i, ++t) {
      lp[t] = C_portable(i, j);
      lv[t] = C(i, j);
    }
  CHECK_EQUAL(lp, lv, 1e-12);
}

TEST_CASE(
    "linalg: the blocked Cholesky factor agrees with Eigen's for every kernel level; semi-definite "
    "matrices are refused") {
  // sizes that are not block multiples (several trailing tiles, a partial column block)
  kl::Rng rng(ct::seed2(3, 2));
  const kl::Mat M = ct::rnorm(rng, 600, 900);
  const kl::Mat A = (M.transpose() * M) / 600.0 + 0.01 * kl::Mat::Identity(900, 900);
  const kl::Mat Lref = A.llt().matrixL();
  const double maxR = ct::max_abs(Lref);
  for (int simd = 0; simd <= 2; ++simd) {
    kl::Mat L, L1, Lf, Lf1;
    CHECK(chol_lower(A, 2, simd, &L));
    CHECK_EQUAL(L, Lref, 1e-10);
    CHECK(chol_lower(A, 1, simd, &L1));
    CHECK_IDENTICAL(L1, L);
    // in single precision: the factor of A to single-precision rounding (A's condition number
    // is about 300), the same for 1 and 2 threads
    CHECK(chol_lower_single(A, 2, simd, &Lf));
    CHECK_LT(ct::max_abs(Lf - Lref) / maxR, 1e-5);
    CHECK(chol_lower_single(A, 1, simd, &Lf1));
    CHECK_IDENTICAL(Lf1, Lf);
  }
  const kl::Mat N = ct::rnorm(rng, 600, 3);
  const kl::Mat S = N * N.transpose() - 1e-3 * kl::Mat::Identity(600, 600);
  kl::Mat L;
  CHECK(!chol_lower(S, 2, 2, &L));
  CHECK(!chol_lower_single(S, 2, 2, &L));
}

TEST_CASE("linalg: the blocked Cholesky solve agrees with an LU solve and across threads") {
  // several 256-row blocks, a partial last one
  kl::Rng rng(ct::seed2(12, 1));
  const kl::Mat M = ct::rnorm(rng, 1400, 1300);
  const kl::Mat A = (M.transpose() * M) / 1400.0 + kl::Mat::Identity(1300, 1300);
  const kl::Mat L = A.llt().matrixL();
  const kl::Mat B = ct::rnorm(rng, 1300, 7);
  const Eigen::PartialPivLU<kl::Mat> lu(A);
  const kl::Mat X2 = kl::cholesky_solve(L, B, 2);
  CHECK_IDENTICAL(kl::cholesky_solve(L, B, 1), X2);
  CHECK_EQUAL(X2, lu.solve(B), 1e-10);
  // in single precision (A's condition number is about 4): to single-precision rounding
  const Eigen::MatrixXf Lf = L.cast<float>(), Bf = B.cast<float>();
  const kl::Mat Xf = kl::cholesky_solve(Lf, Bf, 2).cast<double>();
  CHECK_IDENTICAL(kl::Mat(kl::cholesky_solve(Lf, Bf, 1).cast<double>()), Xf);
  CHECK_LT(ct::max_abs(Xf - X2) / ct::max_abs(X2), 1e-5);
  // with fewer than 4 right-hand sides, the unblocked substitution
  const kl::Mat B3 = B.leftCols(3);
  const kl::Mat X3 = kl::cholesky_solve(L, B3, 2);
  CHECK_EQUAL(X3, lu.solve(B3), 1e-10);
  CHECK_IDENTICAL(kl::cholesky_solve(L, B3, 1), X3);
  const Eigen::MatrixXf B1f = B.leftCols(1).cast<float>();
  const kl::Mat X1 = kl::cholesky_solve(Lf, B1f, 2).cast<double>();
  CHECK_LT(ct::max_abs(X1 - X2.col(0)) / ct::max_abs(X2.col(0)), 1e-5);
}

TEST_CASE("linalg: axpy_sub and dot at every kernel level against plain loops") {
  kl::Rng rng(ct::seed2(12, 3));
  for (std::ptrdiff_t n : {0, 1, 7, 8, 15, 16, 17, 31, 33, 100}) {
    const kl::Vec x = ct::rnorm(rng, n + 1, 1), y0 = ct::rnorm(rng, n + 1, 1);
    const Eigen::VectorXf xf = x.cast<float>(), yf0 = y0.cast<float>();
    double dref = 0.0;
    for (std::ptrdiff_t i = 0; i < n; ++i) dref += x[i] * y0[i];
    for (int level = 0; level <= static_cast<int>(kl::simd_level()); ++level) {
      const auto lv = static_cast<kl::SimdLevel>(level);
      kl::Vec y = y0;
      kl::axpy_sub(lv, y.data(), x.data(), 0.7, n);
      kl::Vec want = y0;
      want.head(n) -= 0.7 * x.head(n);
      CHECK_EQUAL(y, want, 1e-15);  // the element after the n-th is untouched
      CHECK_EQUAL(kl::dot(lv, x.data(), y0.data(), n), dref, 1e-13);
      Eigen::VectorXf yf = yf0, wantf = yf0;
      kl::axpy_sub(lv, yf.data(), xf.data(), 0.7f, n);
      wantf.head(n) -= 0.7f * xf.head(n);
      CHECK_EQUAL(kl::Vec(yf.cast<double>()), kl::Vec(wantf.cast<double>()), 1e-6);
      CHECK_EQUAL(static_cast<double>(kl::dot(lv, xf.data(), yf0.data(), n)), dref, 1e-4);
    }
  }
}

namespace {

// axpy_sub_cols and dot_cols at `level` against the K m calls of axpy_sub and dot they stand
// for, which they must equal exactly.
template <class T>
void check_cols(kl::SimdLevel level, kl::Rng& rng) {
  using MT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  for (std::ptrdiff_t n : {0, 1, 15, 16, 17, 33, 100})
    for (std::ptrdiff_t K : {1, 3, 4, 5, 9})
      for (int m = 1; m <= 4; ++m) {
        const MT A = ct::rnorm(rng, n + 3, K).cast<T>();  // leading dimension n + 3
        const MT Z = ct::rnorm(rng, K + 2, m).cast<T>();
        const MT Y0 = ct::rnorm(rng, n + 1, m).cast<T>();
        MT Y = Y0, want = Y0;
        kl::axpy_sub_cols(level, Y.data(), Y.outerStride(), m, A.data(), A.outerStride(), K,
                          Z.data(), Z.outerStride(), n);
        for (std::ptrdiff_t k = 0; k < K; ++k)
          for (int j = 0; j < m; ++j)
            kl::axpy_sub(level, want.data() + j * want.outerStride(), A.data() + k * A.outerStride(),
                         Z(k, j), n);
        CHECK_IDENTICAL(kl::Mat(Y.template cast<double>()), kl::Mat(want.template cast<double>()));
        MT D = MT::Constant(K + 1, m, T(-7)), dwant = D;
        kl::dot_cols(level, A.data(), A.outerStride(), K, Y0.data(), Y0.outerStride(), m, n,
                     D.data(), D.outerStride());
        for (std::ptrdiff_t k = 0; k < K; ++k)
          for (int j = 0; j < m; ++j)
            dwant(k, j) = kl::dot(level, A.data() + k * A.outerStride(),
                                  Y0.data() + j * Y0.outerStride(), n);
        CHECK_IDENTICAL(kl::Mat(D.template cast<double>()), kl::Mat(dwant.template cast<double>()));
      }
}

}  // namespace

TEST_CASE("linalg: axpy_sub_cols and dot_cols at every kernel level equal the axpy_sub and dot "
          "calls they stand for") {
  kl::Rng rng(ct::seed2(12, 6));
  for (int level = 0; level <= static_cast<int>(kl::simd_level()); ++level) {
    check_cols<double>(static_cast<kl::SimdLevel>(level), rng);
    check_cols<float>(static_cast<kl::SimdLevel>(level), rng);
  }
}

TEST_CASE("linalg: sym_columns_f32 at every kernel level against a product in double") {
  kl::Rng rng(ct::seed2(12, 7));
  for (Eigen::Index n : {5, 16, 37, 100}) {
    Eigen::MatrixXf A = ct::rnorm(rng, n + 2, n).cast<float>();  // leading dimension n + 2
    for (Eigen::Index j = 1; j < n; ++j)  // the upper triangle is never read
      A.col(j).head(j).setConstant(std::numeric_limits<float>::quiet_NaN());
    const kl::Mat S = A.topRows(n).cast<double>().selfadjointView<Eigen::Lower>();
    for (int m = 1; m <= 4; ++m) {
      const kl::Mat X = ct::rnorm(rng, n, m);
      for (int g = 1; g <= 4; ++g)
        for (Eigen::Index j0 : {Eigen::Index(0), Eigen::Index(1), n - g}) {
          // the columns j0 .. j0 + g - 1 of (S + 0.3 I) X's sum over the columns of S
          kl::Mat want = kl::Mat::Zero(n, m);
          for (Eigen::Index j = j0; j < j0 + g; ++j)
            for (int c = 0; c < m; ++c) {
              for (Eigen::Index i = j + 1; i < n; ++i) {
                want(i, c) += S(i, j) * X(j, c);
                want(j, c) += S(i, j) * X(i, c);
              }
              want(j, c) += (S(j, j) + 0.3) * X(j, c);
            }
          for (int level = 0; level <= static_cast<int>(kl::simd_level()); ++level) {
            kl::Mat Y = kl::Mat::Zero(n, m);
            kl::sym_columns_f32(static_cast<kl::SimdLevel>(level), A.data(), A.outerStride(), n,
                                j0, g, 0.3, X.data(), X.outerStride(), Y.data(), Y.outerStride(),
                                m);
            CHECK_EQUAL(Y, want, 1e-12);
          }
        }
    }
  }
  CHECK_THROWS(kl::sym_columns_f32(kl::SimdLevel::none, nullptr, 4, 4, 2, 3, 0.0, nullptr, 4,
                                   nullptr, 4, 1),
               kl::Error, "1 to 4 columns inside the matrix");
}

TEST_CASE("linalg: the symmetric product of a single-precision lower triangle, any thread count") {
  kl::Rng rng(ct::seed2(12, 4));
  const Eigen::Index n = 700;
  Eigen::MatrixXf A = ct::rnorm(rng, n, n).cast<float>();
  // only the lower triangle is read: the upper one holds NaN
  for (Eigen::Index j = 1; j < n; ++j)
    A.col(j).head(j).setConstant(std::numeric_limits<float>::quiet_NaN());
  const kl::Mat S = A.cast<double>().selfadjointView<Eigen::Lower>();
  for (Eigen::Index m : {1, 3, 5}) {
    const kl::Mat X = ct::rnorm(rng, n, m);
    const kl::Mat want = (S + 0.3 * kl::Mat::Identity(n, n)) * X;
    const kl::Mat got = kl::symmetric_lower_product(A, 0.3, X, 2);
    CHECK_EQUAL(got, want, 1e-12);
    CHECK_IDENTICAL(kl::symmetric_lower_product(A, 0.3, X, 1), got);
  }
}

TEST_CASE("linalg: MixedCholesky refines a single-precision factor to double accuracy and "
          "reports the systems it cannot solve") {
  // a Gaussian kernel matrix of 1-d points in single precision: its eigenvalues fall fast, so
  // the shift sets the condition number (about 900 / shift)
  kl::Rng rng(ct::seed2(12, 5));
  const Eigen::Index n = 900;
  const kl::Mat x = ct::runif(rng, n, 1);
  Eigen::MatrixXf A(n, n);
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = 0; i < n; ++i)
      A(i, j) = static_cast<float>(std::exp(-3.0 * std::pow(x(i, 0) - x(j, 0), 2)));
  const kl::Mat Ad = A.cast<double>();
  const kl::Mat B = ct::rnorm(rng, n, 3);
  {
    kl::MixedCholesky mc;
    kl::Mat X;
    CHECK_THROWS(mc.solve(B, X, 1e-9, 2), kl::Error, "before a successful factor");
  }
  int refused = 0;
  for (double shift : {1.0, 1e-2, 1e-10}) {
    const kl::Mat M = Ad + shift * kl::Mat::Identity(n, n);
    const kl::Mat want = M.llt().solve(B);
    kl::MixedCholesky mc;
    kl::Mat X, X1;
    int steps = 0;
    if (!mc.factor(A, shift, 2) || !mc.solve(B, X, 1e-9, 2, 10, &steps)) {
      ++refused;
      continue;
    }
    CHECK(steps >= 1);
    // the error left: about the contraction times 1e-9 of each column's largest entry
    for (Eigen::Index j = 0; j < 3; ++j)
      CHECK_LT((X.col(j) - want.col(j)).cwiseAbs().maxCoeff() / want.col(j).cwiseAbs().maxCoeff(),
               1e-9);
    // the residual in double is at the level of the double solve's
    CHECK_LT(ct::max_abs(M * X - B) / ct::max_abs(B), 1e-6);
    kl::MixedCholesky mc1;
    CHECK(mc1.factor(A, shift, 1));
    CHECK(mc1.solve(B, X1, 1e-9, 1));
    CHECK_IDENTICAL(X1, X);
  }
  // condition number ~1e13: refused (not a wrong answer; at 1e-4, ~1e7, it is refused too)
  CHECK_EQUAL(refused, 1, 0);
  // an indefinite matrix: the factor says so
  Eigen::MatrixXf N = A;
  N.diagonal().array() -= 2.0f;
  kl::MixedCholesky mc;
  CHECK(!mc.factor(N, 0.0, 2));
  CHECK(!mc.ready());
}

TEST_CASE("linalg: mirror_lower copies the lower triangle of the leading block, any thread count") {
  kl::Rng rng(ct::seed2(12, 7));
  for (Eigen::Index p : {1, 63, 64, 65, 300}) {
    const kl::Mat G0 = ct::rnorm(rng, p + 3, p + 2);
    kl::Mat want = G0;
    want.topLeftCorner(p, p).triangularView<Eigen::StrictlyUpper>() =
        G0.topLeftCorner(p, p).transpose();
    for (int threads : {1, 2}) {
      kl::Mat G = G0;
      kl::mirror_lower(G.data(), G.rows(), p, threads);
      CHECK_IDENTICAL(G, want);
    }
  }
}

TEST_CASE("linalg: the backend's Cholesky solve (CPU) factors, solves and refuses indefinite") {
  kl::Rng rng(ct::seed2(12, 3));
  const kl::Mat M = ct::rnorm(rng, 700, 600);
  const kl::Mat A = (M.transpose() * M) / 700.0 + 0.5 * kl::Mat::Identity(600, 600);
  const kl::Mat B = ct::rnorm(rng, 600, 4);
  const Eigen::PartialPivLU<kl::Mat> lu(A);
  kl::Backend& cpu = kl::cpu_backend();
  kl::Mat F = A, X = B;
  CHECK(cpu.cholesky_solve(F, X, true, 2, kl::Callbacks()));
  CHECK_EQUAL(X, lu.solve(B), 1e-10);
  const kl::Mat L = F.triangularView<Eigen::Lower>();
  CHECK_EQUAL(kl::Mat(L * L.transpose()), A, 1e-10);
  // the same on one thread, bit for bit
  kl::Mat F1 = A, X1 = B;
  CHECK(cpu.cholesky_solve(F1, X1, false, 1, kl::Callbacks()));
  CHECK_IDENTICAL(X1, X);
  // no right-hand side: the factor only
  kl::Mat F0 = A, X0(600, 0);
  CHECK(cpu.cholesky_solve(F0, X0, true, 2, kl::Callbacks()));
  CHECK_IDENTICAL(kl::Mat(F0.triangularView<Eigen::Lower>()), L);
  // not positive definite: false, B unchanged
  kl::Mat N = A, Y = B;
  N(300, 300) = -1.0;
  CHECK(!cpu.cholesky_solve(N, Y, true, 2, kl::Callbacks()));
  CHECK_IDENTICAL(Y, B);
  kl::Mat W(5, 5), Z(4, 1);
  CHECK_THROWS(cpu.cholesky_solve(W, Z, true, 1, kl::Callbacks()), kl::Error, "do not conform");
}

TEST_CASE("linalg: the kernel ridge solve through a backend against a direct solve") {
  kl::Rng rng(ct::seed2(12, 4));
  const int n = 300;
  const kl::Mat X = ct::rnorm(rng, n, 3);
  kl::Mat Y = ct::rnorm(rng, n, 2);
  const kl::KernelPtr k = kl::make_standard_kernel([] {
    kl::KernelSpec s;
    s.type = kl::KernelType::Gaussian;
    s.gamma = 0.5;
    return s;
  }());
  kl::Mat K(n, n);
  k->block(X, X, K, 1, kl::Callbacks());
  const double lambda = 0.3;
  // with a bias
  const kl::Mat sol = bordered_ridge_solve(K, Y, lambda);
  kl::Mat Kw = K;
  const kl::KrrFit fit = kl::kernel_ridge_solve(Kw, Y, lambda, true, 2, kl::Callbacks(),
                                                kl::cpu_backend());
  CHECK_EQUAL(fit.alpha, kl::Mat(sol.topRows(n)), 1e-9);
  CHECK_EQUAL(kl::Mat(fit.bias.transpose()), kl::Mat(sol.bottomRows(1)), 1e-9);
  // without a bias: (K + lambda I) alpha = Y
  kl::Mat Kw2 = K;
  const kl::KrrFit fit0 = kl::kernel_ridge_solve(Kw2, Y, lambda, false, 1);
  CHECK_EQUAL(fit0.alpha, kl::Mat((K + lambda * kl::Mat::Identity(n, n)).llt().solve(Y)), 1e-10);
  CHECK_EQ(fit0.bias.cwiseAbs().maxCoeff(), 0.0);
  kl::Mat Kn = -K;
  CHECK_THROWS(kl::kernel_ridge_solve(Kn, Y, 0.0, true, 1), kl::Error, "not positive definite");
}

TEST_CASE("linalg: the kernel ridge grid of folds x widths x penalties equals the fits one by one") {
  kl::Rng rng(ct::seed2(12, 5));
  const int n = 330, folds = 3;
  const kl::Mat X = ct::runif(rng, n, 4);
  const kl::Mat Y = ct::rnorm(rng, n, 2);
  std::vector<kl::KernelPtr> ks;
  for (double g : {0.7, 3.0}) ks.push_back(kl::make_standard_kernel(kl::gaussian_spec(g)));
  std::vector<int> fold(n);
  for (int i = 0; i < n; ++i) fold[i] = (i * 7) % folds;
  const std::vector<double> lam = {1e-4, 1e-2, 0.3};
  CHECK_EQ(kl::kernel_ridge_grid_workers(6, 220, 2, kl::cpu_backend()), 2);
  CHECK_EQ(kl::kernel_ridge_grid_workers(6, 220, 1, kl::cpu_backend()), 1);
  CHECK_EQ(kl::kernel_ridge_grid_workers(6, 20000, 2, kl::cpu_backend()), 1);
  for (int threads : {1, 2}) {
    const std::vector<kl::Mat> got = kl::kernel_ridge_grid(ks, X, Y, fold, folds, lam, true,
                                                           threads, kl::cpu_backend(),
                                                           kl::Callbacks());
    CHECK_EQ(got.size(), ks.size() * folds * lam.size());
    for (std::size_t g = 0; g < ks.size(); ++g)
      for (int f = 0; f < folds; ++f) {
        std::vector<int> tr, te;
        for (int i = 0; i < n; ++i) (fold[i] == f ? te : tr).push_back(i);
        kl::Mat Xtr(tr.size(), 4), Ytr(tr.size(), 2), Xte(te.size(), 4);
        for (std::size_t i = 0; i < tr.size(); ++i) {
          Xtr.row(i) = X.row(tr[i]);
          Ytr.row(i) = Y.row(tr[i]);
        }
        for (std::size_t i = 0; i < te.size(); ++i) Xte.row(i) = X.row(te[i]);
        for (std::size_t l = 0; l < lam.size(); ++l) {
          // the one-by-one fit, and a direct solve of the bordered system
          kl::Mat K(tr.size(), tr.size());
          kl::cpu_backend().kernel_matrix(*ks[g], Xtr, Xtr, K, 1, kl::Callbacks());
          const kl::Mat K0 = K;
          const double c = static_cast<double>(tr.size()) * lam[l];
          const kl::KrrFit fit = kl::kernel_ridge_solve(K, Ytr, c, true, 1);
          kl::Mat F(te.size(), 2);
          kl::kernel_expansion(kl::cpu_backend(), *ks[g], Xte, Xtr,
                               kl::dense_machines(fit.alpha, fit.bias), F, 1, kl::Callbacks());
          const kl::Mat& G = got[(g * folds + f) * lam.size() + l];
          CHECK_IDENTICAL(G, F);
          const Eigen::Index m = static_cast<Eigen::Index>(tr.size());
          const kl::Mat sol = bordered_ridge_solve(K0, Ytr, c);
          kl::Mat Kte(te.size(), m);
          ks[g]->block(Xte, Xtr, Kte, 1, kl::Callbacks());
          const kl::Mat direct = (Kte * sol.topRows(m)).rowwise() + sol.row(m);
          CHECK_EQUAL(G, direct, 1e-6 * (1 + direct.cwiseAbs().maxCoeff()));
        }
      }
  }
  std::vector<int> bad = fold;
  bad[5] = folds;
  CHECK_THROWS(kl::kernel_ridge_grid(ks, X, Y, bad, folds, lam, true, 2, kl::cpu_backend(),
                                     kl::Callbacks()),
               kl::Error, "fold number");
}

TEST_CASE(
    "linalg: the products of calibrated least squares agree with double-precision products and "
    "across threads") {
  kl::Rng rng(ct::seed2(12, 2));
  const int shapes[3][3] = {{1031, 37, 10}, {517, 200, 3}, {9, 16, 5}};
  for (const auto& sh : shapes) {
    const int n = sh[0], p = sh[1], K = sh[2];
    const kl::Mat X = ct::rnorm(rng, n, p);
    const kl::Mat W = ct::rnorm(rng, p + 1, K), R = ct::rnorm(rng, n, K);
    const kl::RowMajorF32 F = ct::to_single(X);
    ct::EigenThreads one(1);
    const kl::Mat prod2 = kl::cls_product(F, W, 2), cross2 = kl::cls_crossprod(F, R, 2);
    CHECK_IDENTICAL(kl::cls_product(F, W, 1), prod2);
    CHECK_IDENTICAL(kl::cls_crossprod(F, R, 1), cross2);
    CHECK_EQUAL(prod2, with_ones(X) * W, 1e-5);
    CHECK_EQUAL(cross2, with_ones(X).transpose() * R, 1e-5);
  }
}

TEST_CASE("linalg: the tiled Gram matrix [X 1]'[X 1] in double and single precision") {
  // column counts that are not multiples of the tile
  kl::Rng rng(ct::seed2(3, 3));
  kl::Mat X = ct::rnorm(rng, 2100, 530);
  kl::Mat X1 = with_ones(X);
  kl::Mat G = X1.transpose() * X1;
  CHECK_EQUAL(gram(X, false, 2), G, 1e-12);
  CHECK_IDENTICAL(gram(X, false, 1), gram(X, false, 2));
  CHECK_LT(ct::max_abs(gram(X, true, 2) - G) / ct::max_abs(G), 1e-5);
  // in single precision, the products of each block of 2048 rows are summed in single
  // precision and the blocks added in double: exactly the sum of the blocks' own Gram matrices
  const kl::Mat X2 = ct::rnorm(rng, 4400, 70);
  for (int simd = 0; simd <= 2; ++simd) {
    kl::Mat Gb = gram(X2.middleRows(0, 2048), true, 2, simd).topLeftCorner(70, 70);
    Gb += gram(X2.middleRows(2048, 2048), true, 2, simd).topLeftCorner(70, 70);
    Gb += gram(X2.middleRows(4096, 304), true, 2, simd).topLeftCorner(70, 70);
    CHECK_IDENTICAL(kl::Mat(gram(X2, true, 2, simd).topLeftCorner(70, 70)), Gb);
  }
  // single precision through Eigen and through each vectorised kernel this processor has, each
  // against the double-precision product, and thread-count independent
  X.col(6) *= 300;
  X1 = with_ones(X);
  G = X1.transpose() * X1;
  const kl::Vec dg = G.diagonal();
  for (int simd = 0; simd <= 2; ++simd) {
    const kl::Mat Gs = gram(X, true, 2, simd);
    CHECK_EQUAL(kl::Mat(Gs.transpose()), Gs, 100 * kEps);
    const kl::Mat scaled = ((Gs - G).array() / (dg * dg.transpose()).array().sqrt()).abs().matrix();
    CHECK_LT(scaled.maxCoeff(), 1e-5);
    CHECK_IDENTICAL(gram(X, true, 1, simd), Gs);
  }
}

TEST_CASE(
    "linalg: the Gram matrix of single-precision rows summed in double is the exact one, and a "
    "least-squares fit the single-precision sums leave indefinite falls back to it") {
  kl::Rng rng(ct::seed2(14, 1));
  // rows over several blocks, columns over several tiles
  const kl::Mat X = ct::rnorm(rng, 5000, 600);
  const kl::RowMajorF32 F = ct::to_single(X);
  kl::Mat Xr(X.rows(), X.cols());  // the rows as stored, in double
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      Xr(i, j) = static_cast<double>(F.data[static_cast<std::size_t>(i * F.p + j)]);
  const kl::Mat ref = with_ones(Xr).transpose() * with_ones(Xr);
  const kl::Mat Ge = kl::gram_with_intercept_double_sums(F, 2);
  CHECK_EQUAL(Ge, ref, 1e-12);
  CHECK_IDENTICAL(kl::gram_with_intercept_double_sums(F, 1), Ge);
  // 40 distinct columns, each repeated 8 times through a different affine map (as a 0/1 input
  // and its powers, standardised): collinear with each other and the intercept up to the
  // rounding of the stored values, so that the single-precision sums leave the system
  // indefinite by far more than lambda sqrt(n)
  const int n = 20000, p = 320;
  const kl::Mat N = ct::rnorm(rng, n, 40);
  kl::Mat D(n, p);
  for (int j = 0; j < p; ++j)
    D.col(j) = (N.col(j % 40) * (1.0 + 0.1 * (j / 40))).array() + 0.3 * (j / 40);
  kl::IVec y(n);
  for (int i = 0; i < n; ++i) y[i] = (N(i, 0) + N(i, 1) > 0) + (N(i, 2) > 1);
  const kl::RowMajorF32 DF = ct::to_single(D);
  kl::ClsOptions o;
  o.lambda = 1e-6;
  o.max_iter = 3;
  o.tol = 0;
  o.threads = 2;
  const kl::ClsFit f = kl::cls_fit(DF, y, 3, o);
  CHECK(f.exact_gram);
  // the scores of the fit on the double-precision design (its Gram matrix summed in double)
  kl::Mat Dr(n, p);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < p; ++j) Dr(i, j) = static_cast<double>(DF.data[static_cast<std::size_t>(i * p + j)]);
  const kl::ClsFit g = kl::cls_fit(Dr, y, 3, o);
  CHECK(!g.exact_gram);
  CHECK_LT(ct::max_abs(kl::Mat(f.scores - g.scores)), 1e-3);
  // a penalty search on the same rows goes below the value where the single-precision sums fail
  kl::HeadSearch search;
  const std::vector<double> grid = {1e-6, 1e-4, 1e-2, 1};
  kl::ClsOptions os = o;
  const kl::ClsFit fs = kl::cls_fit_select(DF, 16000, y, 3, os, grid, 3, true, search);
  CHECK_EQ(search.lambda.size(), grid.size());
  CHECK(fs.exact_gram);
}

