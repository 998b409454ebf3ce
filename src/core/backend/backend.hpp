// The Backend interface: the heavy dense operations that a GPU can take over. The CPU backend
// (OpenMP over tiles; products through the AVX2 / AVX-512 kernels of linalg/simd.hpp when the
// processor has them, Eigen otherwise) is always there; the CUDA backend lives in a separate
// shared library that is loaded at run time (backend/gpu.cpp) and falls back to the CPU for
// what it does not implement.
#pragma once

#include <memory>
#include <string>

#include "base/common.hpp"
#include "kernels/standard.hpp"

namespace kl {

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
};

CpuBackend& cpu_backend();

// The GPU backend, loaded from the shared library at `path` on first use. Returns nullptr and
// sets `why` (one line) when the library cannot be loaded or no usable device is found. The
// result of the first attempt for a path is remembered.
Backend* gpu_backend(const std::string& path, std::string* why);

// Drops the loaded GPU library state (device buffers); the next gpu_backend() call reloads.
void release_gpu_backend();

}  // namespace kl
