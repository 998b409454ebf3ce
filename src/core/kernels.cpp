#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

void validate(const KernelSpec& s) {
  switch (s.type) {
    case KernelType::Gaussian:
    case KernelType::Laplacian:
      if (!(s.gamma > 0) || !std::isfinite(s.gamma))
        throw Error("gamma must be a positive finite number");
      break;
    case KernelType::Linear:
      break;
    case KernelType::Polynomial:
      if (!(s.degree >= 1) || s.degree != std::floor(s.degree) || s.degree > 1000)
        throw Error("degree must be an integer >= 1");
      if (!std::isfinite(s.scale) || !std::isfinite(s.offset))
        throw Error("scale and offset must be finite");
      break;
    default:
      throw Error("unknown kernel type");
  }
}


double kernel_value(const KernelSpec& s, const double* x, std::ptrdiff_t incx, const double* z,
                    std::ptrdiff_t incz, int d) {
  switch (s.type) {
    case KernelType::Gaussian:
    case KernelType::Laplacian: {
      double d2 = 0.0;
      for (int k = 0; k < d; ++k) {
        const double t = x[k * incx] - z[k * incz];
        d2 += t * t;
      }
      return s.type == KernelType::Gaussian ? std::exp(-s.gamma * d2)
                                            : std::exp(-s.gamma * std::sqrt(d2));
    }
    case KernelType::Linear:
    case KernelType::Polynomial: {
      double ip = 0.0;
      for (int k = 0; k < d; ++k) ip += x[k * incx] * z[k * incz];
      if (s.type == KernelType::Linear) return ip;
      return ipow(s.scale * ip + s.offset, static_cast<int>(s.degree));
    }
  }
  return 0.0;
}

void finish_kernel_block(const KernelSpec& s, const double* xn, const double* zn, MatRef G) {
  const Eigen::Index r = G.rows(), c = G.cols();
  switch (s.type) {
    case KernelType::Gaussian:
      for (Eigen::Index j = 0; j < c; ++j) {
        double* g = G.col(j).data();
        const double zj = zn[j];
        for (Eigen::Index i = 0; i < r; ++i) {
          const double d2 = std::max(xn[i] + zj - 2.0 * g[i], 0.0);
          g[i] = std::exp(-s.gamma * d2);
        }
      }
      break;
    case KernelType::Laplacian:
      for (Eigen::Index j = 0; j < c; ++j) {
        double* g = G.col(j).data();
        const double zj = zn[j];
        for (Eigen::Index i = 0; i < r; ++i) {
          const double d2 = std::max(xn[i] + zj - 2.0 * g[i], 0.0);
          g[i] = std::exp(-s.gamma * std::sqrt(d2));
        }
      }
      break;
    case KernelType::Linear:
      break;
    case KernelType::Polynomial: {
      const int deg = static_cast<int>(s.degree);
      for (Eigen::Index j = 0; j < c; ++j) {
        double* g = G.col(j).data();
        for (Eigen::Index i = 0; i < r; ++i) g[i] = ipow(s.scale * g[i] + s.offset, deg);
      }
      break;
    }
  }
}

namespace {
// Block sizes: fixed (never derived from the thread count) so results are reproducible.
constexpr Eigen::Index kRowBlock = 512;
constexpr Eigen::Index kColBlock = 1024;
}  // namespace

void kernel_matrix(const KernelSpec& s, CMatRef X, CMatRef Z, MatRef K, int threads,
                   const Callbacks& cb) {
  validate(s);
  const Eigen::Index n = X.rows(), m = Z.rows(), d = X.cols();
  if (Z.cols() != d) throw Error("X and Z must have the same number of columns");
  if (K.rows() != n || K.cols() != m) throw Error("K has the wrong shape");
  if (n == 0 || m == 0) return;
  threads = clamp_threads(threads);

  const bool needs_norms = s.type == KernelType::Gaussian || s.type == KernelType::Laplacian;
  Vec xn, zn;
  if (needs_norms) {
    xn = X.rowwise().squaredNorm();
    zn = Z.rowwise().squaredNorm();
  }
  const Eigen::Index nrb = (n + kRowBlock - 1) / kRowBlock;
  const Eigen::Index ncb = (m + kColBlock - 1) / kColBlock;
  const Eigen::Index nblocks = nrb * ncb;
  const SimdLevel level = simd_level();

  // Sweeps of a bounded number of blocks let the caller interrupt long computations.
  const Eigen::Index sweep = std::max<Eigen::Index>(1, 8 * threads);
  for (Eigen::Index start = 0; start < nblocks; start += sweep) {
    const Eigen::Index stop = std::min(nblocks, start + sweep);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
#endif
    for (Eigen::Index b = start; b < stop; ++b) {
      try {
        const Eigen::Index rb = b / ncb, cbk = b % ncb;
        const Eigen::Index r0 = rb * kRowBlock, c0 = cbk * kColBlock;
        const Eigen::Index nr = std::min(kRowBlock, n - r0), nc = std::min(kColBlock, m - c0);
        Mat G(nr, nc);
        if (level != SimdLevel::none)  // G(i, j) = sum_k X(r0 + i, k) Z(c0 + j, k)
          gemm_block(level, nr, nc, d, X.data() + r0, 1, X.outerStride(), Z.data() + c0,
                     Z.outerStride(), 1, G.data(), 1, nr);
        else
          G.noalias() = X.middleRows(r0, nr) * Z.middleRows(c0, nc).transpose();
        if (needs_norms)
          finish_kernel_block(s, xn.data() + r0, zn.data() + c0, G);
        else
          finish_kernel_block(s, nullptr, nullptr, G);
        K.block(r0, c0, nr, nc) = G;
      } catch (...) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
        failed = true;
      }
    }
    if (failed) throw Error("kernel matrix: out of memory while computing a block");
    cb.check();
    cb.report(static_cast<double>(stop) / static_cast<double>(nblocks));
  }
}

}  // namespace kl
