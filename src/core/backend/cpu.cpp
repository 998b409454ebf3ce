#include "backend/backend.hpp"

#include <Eigen/Core>

#include "linalg/chol.hpp"
#include "linalg/simd.hpp"

namespace kl {

void CpuBackend::kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K,
                               int threads, const Callbacks& cb) {
  kernel.block(X, Z, K, threads, cb);
}

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
  const int old = Eigen::nbThreads();
  Eigen::setNbThreads(clamp_threads(threads));
  C.noalias() = A * B.transpose();
  Eigen::setNbThreads(old);
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
  const int old = Eigen::nbThreads();
  Eigen::setNbThreads(clamp_threads(threads));
  C.noalias() = A.transpose() * B;
  Eigen::setNbThreads(old);
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
