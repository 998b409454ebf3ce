// The Backend interface: the heavy dense operations that a GPU can take over. The CPU backend
// (OpenMP over tiles; products through the AVX2 / AVX-512 kernels of linalg/simd.hpp when the
// processor has them, Eigen otherwise) is always there; the CUDA backend lives in a separate
// shared library that is loaded at run time (backend/gpu.cpp) and falls back to the CPU for
// what it does not implement.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/common.hpp"
#include "kernels/standard.hpp"

namespace kl {

// The operations the GPU backend can take over, as bit flags. The GPU backend runs on the GPU
// only those of its current set (set_gpu_ops); the others, and problems too small to gain from
// the transfers, stay on the CPU.
enum GpuOp : unsigned {
  kGpuKernelMatrix = 1u,  // Gaussian kernel matrices
  kGpuGemm = 2u,          // the matrix products gemm_nt / gemm_tn
  kGpuCholesky = 4u,      // cholesky_solve and device_cholesky (cuSOLVER potrf / potrs)
  kGpuGram = 8u,          // gram_f32 (cuBLAS SSYRK)
  kGpuKernelRows = 16u,   // kernel_rows (the SVM solver's kernel rows, the training points
                          // held on the GPU) and the kernel matrices of the Laplacian, linear
                          // and polynomial kernels
  kGpuHgkPass = 32u,      // the hierarchical Gaussian kernel's passes over pairs in hgk()'s
                          // learning: the row sums K V and the derivative contractions
  kGpuTklBlock = 64u,     // kernel matrices of the tessellated kernel (tkl())
};
// The operations the GPU runs unless told otherwise: those whose GPU timings and parity with
// the CPU have been recorded (bench/results/cuda_*.txt). The others are opt-in.
constexpr unsigned kGpuOpsDefault = kGpuKernelMatrix | kGpuGemm;
constexpr unsigned kGpuOpsAll =
    kGpuKernelMatrix | kGpuGemm | kGpuCholesky | kGpuGram | kGpuKernelRows | kGpuHgkPass | kGpuTklBlock;

struct HgkNode;

// A Cholesky factor L L' kept on the GPU for repeated solves.
class DeviceCholesky {
 public:
  virtual ~DeviceCholesky() = default;
  // The diagonal of L.
  virtual const Vec& diagonal() const = 0;
  // (L L')^-1 B (through single precision for a single-precision factor).
  virtual Mat solve(const Mat& B) = 0;
};

struct DeviceFactor {
  bool handled = false;            // false: the caller factors the matrix itself (on the CPU)
  bool positive_definite = false;  // when handled
  std::unique_ptr<DeviceCholesky> factor;  // when handled and positive definite
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda: <device name>".
  virtual std::string name() const = 0;
  virtual bool is_gpu() const = 0;
  // K (n x m) = k(X, Z). A backend computes the kernels it has a routine for and leaves the
  // others to the kernel's own block() on the CPU.
  virtual void kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K, int threads,
                             const Callbacks& cb) = 0;
  // Whether this backend computes `kernel` itself (rather than the CPU).
  virtual bool computes(const Kernel& kernel) const = 0;
  // C (n x m) = A (n x k) * B' (m x k).
  virtual void gemm_nt(CMatRef A, CMatRef B, MatRef C, int threads) = 0;
  // C (k x m) = A' (k x n) * B (n x m).
  virtual void gemm_tn(CMatRef A, CMatRef B, MatRef C, int threads) = 0;
  // Factors the symmetric positive definite A (n x n; its lower triangle is read) as L L' and
  // overwrites B (n x r, r may be 0) with A^-1 B. Afterwards the lower triangle of A holds L
  // when write_factor is true; otherwise A's contents are unspecified (the CPU leaves L, the
  // GPU leaves A as it was). Returns false, with B unchanged, when A is not positive definite.
  virtual bool cholesky_solve(MatRef A, MatRef B, bool write_factor, int threads,
                              const Callbacks& cb) = 0;
  // The lower triangle of G (p x p) = X'X for the n single-precision rows of X (row i at
  // X + i * row_stride), the products of each block of `block` consecutive rows summed in
  // single precision and the blocks in double. Returns false, leaving G alone, when the caller
  // is to compute it on the CPU (the CPU backend always; the GPU backend when the operation is
  // off or the problem small).
  virtual bool gram_f32(const float*, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index,
                        MatRef) {
    return false;
  }
  // Factors scale * S + shift * I (S symmetric, its lower triangle read) on the GPU, in single
  // or double precision, and keeps the factor there. Not handled (the caller factors on the
  // CPU) by the CPU backend, or when the operation is off or the matrix small.
  virtual DeviceFactor device_cholesky(CMatRef, double, double, bool) { return DeviceFactor(); }
  // The kernel bound to the rows of X (n x d) for the SVM solver's row cache, with its rows
  // computed by this backend; nullptr when the caller is to use kernel.rows(X) (the CPU
  // backend always; the GPU backend when the operation is off, the kernel is not a standard
  // one, the problem is small or the points do not fit on the device). Subsets of the result
  // stay on the GPU while they are large enough; a GPU failure in the middle of a solve
  // switches the remaining rows to the CPU.
  virtual std::unique_ptr<KernelRows> kernel_rows(const Kernel&, CMatRef) { return nullptr; }
  // A pass of the hierarchical Gaussian kernel given by `nodes` over the pairs (x_a, z_b) of the
  // rows of X and Z, as hgk_pass() (kernels/hgk_pass.hpp) computes it without a row factor:
  // KV (nx x L) = K(X, Z) V when KV is non-null (not with triangle); when grad is non-null,
  // grad = sum_{a, b} (sum_l U_al V_bl) dK(x_a, z_b) / dw for the tree's weights w (U is then
  // required); triangle: X and Z are the same points and only the pairs b > a count. Returns
  // false, having written nothing, when the caller is to run the pass on the CPU (the CPU
  // backend always; the GPU backend when the operation is off, the problem small, the tree too
  // large for the GPU routine or a GPU call failed). Every pair in double precision.
  virtual bool hgk_pass(const std::vector<HgkNode>&, CMatRef /*X*/, CMatRef /*Z*/,
                        CMatRef /*V*/, const Mat* /*U*/, bool /*triangle*/, Mat* /*KV*/,
                        Vec* /*grad*/) {
    return false;
  }
  // The GpuOp flags of the operations to run on the GPU from now on (GPU backend only).
  virtual void set_gpu_ops(unsigned) {}
  virtual unsigned gpu_ops() const { return 0u; }
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool is_gpu() const override { return false; }
  void kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K, int threads,
                     const Callbacks& cb) override;
  bool computes(const Kernel&) const override { return true; }
  void gemm_nt(CMatRef A, CMatRef B, MatRef C, int threads) override;
  void gemm_tn(CMatRef A, CMatRef B, MatRef C, int threads) override;
  bool cholesky_solve(MatRef A, MatRef B, bool write_factor, int threads,
                      const Callbacks& cb) override;
};

CpuBackend& cpu_backend();

// The GPU backend, loaded from the shared library at `path` on first use. Returns nullptr and
// sets `why` (one line) when the library cannot be loaded or no usable device is found. The
// result of the first attempt for a path is remembered.
Backend* gpu_backend(const std::string& path, std::string* why);

// Drops the loaded GPU library state (device buffers); the next gpu_backend() call reloads.
void release_gpu_backend();

}  // namespace kl
