#include "backend/backend.hpp"

#include <Eigen/Core>
#include <algorithm>

#include "linalg/chol.hpp"
#include "linalg/simd.hpp"

namespace kl {

void CpuBackend::kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K,
                               int threads, const Callbacks& cb) {
  kernel.block(X, Z, K, threads, cb);
}

namespace {

// C = A B' (tn false) or A'B (tn true) without the vectorised kernels: Eigen's products over
// fixed blocks of 256 columns of C, each on one thread, so that every element's sums depend
// on the shapes alone and not on the thread count (Eigen's own threaded product splits the
// work by threads, and its sums with it).
void portable_product(CMatRef A, CMatRef B, MatRef C, bool tn, int threads) {
  const Eigen::Index n = C.cols(), nb = 256;
  const long blocks = static_cast<long>((n + nb - 1) / nb);
  const int nt = clamp_threads(threads);
  (void)nt;
  const EigenSerial serial(true);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1 && blocks > 1)
#endif
  for (long b = 0; b < blocks; ++b) {
    const Eigen::Index j0 = static_cast<Eigen::Index>(b) * nb, w = std::min(nb, n - j0);
    if (tn)
      C.middleCols(j0, w).noalias() = A.transpose() * B.middleCols(j0, w);
    else
      C.middleCols(j0, w).noalias() = A * B.middleRows(j0, w).transpose();
  }
}

}  // namespace

void CpuBackend::gemm_nt(CMatRef A, CMatRef B, MatRef C, int threads) {
  if (A.cols() != B.cols() || C.rows() != A.rows() || C.cols() != B.rows())
    throw Error("gemm_nt: shapes do not conform");
  const SimdLevel level = simd_level();
  if (level != SimdLevel::none) {
    // C(i, j) = sum_k A(i, k) B(j, k)
    gemm_parallel(level, A.rows(), B.rows(), A.cols(), A.data(), 1, A.outerStride(), B.data(),
                  B.outerStride(), 1, C.data(), C.outerStride(), threads);
    return;
  }
  portable_product(A, B, C, false, threads);
}

void CpuBackend::gemm_tn(CMatRef A, CMatRef B, MatRef C, int threads) {
  if (A.rows() != B.rows() || C.rows() != A.cols() || C.cols() != B.cols())
    throw Error("gemm_tn: shapes do not conform");
  const SimdLevel level = simd_level();
  if (level != SimdLevel::none) {
    // C(i, j) = sum_k A(k, i) B(k, j)
    gemm_parallel(level, A.cols(), B.cols(), A.rows(), A.data(), A.outerStride(), 1, B.data(),
                  1, B.outerStride(), C.data(), C.outerStride(), threads);
    return;
  }
  portable_product(A, B, C, true, threads);
}

bool CpuBackend::cholesky_solve(MatRef A, MatRef B, bool, int threads, const Callbacks& cb) {
  if (A.rows() != A.cols() || B.rows() != A.rows())
    throw Error("cholesky_solve: shapes do not conform");
  if (!cholesky_lower(A, threads, SimdLevel::avx512, cb)) return false;
  cb.check();
  if (B.cols() > 0) {
    const Mat X = kl::cholesky_solve(CMatRef(A), CMatRef(B), threads);
    B = X;
  }
  return true;
}

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace kl
