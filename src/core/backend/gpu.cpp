// Loads the optional GPU library with dlopen() and wraps it as a Backend. The main library has
// no link-time dependency on CUDA; without the library, a driver or a device, the caller gets
// nullptr and a one-line reason, and uses the CPU backend.
#include "backend/backend.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#if defined(_WIN32)
#define KL_NO_DLOPEN 1
#else
#include <dlfcn.h>
#endif

#include "../../cuda/kl_cuda_api.h"

namespace kl {

namespace {

using fn_version = int (*)();
using fn_init = int (*)(int, char*, int, char*, int);
using fn_gauss = int (*)(const double*, int, const double*, int, int, double, double*, char*, int);
using fn_release = void (*)();
using fn_gemm = int (*)(int, int, int, int, int, const double*, int, const double*, int, double*,
                        int, char*, int);

// Products with fewer multiply-adds than this stay on the CPU: the transfers would cost more
// than the arithmetic.
constexpr double kGpuGemmMinFlops = 2e7;

bool fits_int(Eigen::Index v) { return v >= 0 && v <= 2147483647; }

class GpuBackend final : public Backend {
 public:
  GpuBackend(fn_gauss gauss, fn_gemm gemm, fn_release release, std::string device)
      : gauss_(gauss), gemm_(gemm), release_(release), device_(std::move(device)) {}
  ~GpuBackend() override {
    if (release_) release_();
  }
  std::string name() const override { return "cuda: " + device_; }
  bool is_gpu() const override { return true; }

  // The GPU routine covers the Gaussian kernel; the others run on the CPU.
  bool computes(const Kernel& kernel) const override {
    const KernelSpec* s = kernel.standard();
    return s && s->type == KernelType::Gaussian;
  }

  void kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K, int threads,
                     const Callbacks& cb) override {
    if (!computes(kernel)) {
      cpu_backend().kernel_matrix(kernel, X, Z, K, threads, cb);
      return;
    }
    const KernelSpec& spec = *kernel.standard();
    const Eigen::Index n = X.rows(), m = Z.rows(), d = X.cols();
    if (Z.cols() != d) throw Error("X and Z must have the same number of columns");
    if (K.rows() != n || K.cols() != m) throw Error("K has the wrong shape");
    if (n == 0 || m == 0) return;
    const long long lim = 2147483647LL;
    if (n > lim || m > lim || d > lim) throw Error("matrix too large for the GPU routine");
    // The GPU routine wants plain column-major storage.
    const Mat Xc = X, Zc = Z;
    Mat Kc;
    const bool direct = K.outerStride() == n;
    if (!direct) Kc.resize(n, m);
    char err[512] = {0};
    const int rc = gauss_(Xc.data(), static_cast<int>(n), Zc.data(), static_cast<int>(m),
                          static_cast<int>(d), spec.gamma, direct ? K.data() : Kc.data(), err,
                          sizeof(err));
    if (rc != 0) throw Error(std::string("CUDA kernel matrix failed: ") + err);
    if (!direct) K = Kc;
    cb.check();
  }

  // C = A B': op(A) = A (m x k), op(B) = B' with B n x k.
  void gemm_nt(CMatRef A, CMatRef B, MatRef C, int threads) override {
    if (A.cols() != B.cols() || C.rows() != A.rows() || C.cols() != B.rows())
      throw Error("gemm_nt: shapes do not conform");
    if (!on_gpu(A.rows(), B.rows(), A.cols(), A.outerStride(), B.outerStride(), C.outerStride())) {
      cpu_backend().gemm_nt(A, B, C, threads);
      return;
    }
    gemm(0, 1, A.rows(), B.rows(), A.cols(), A.data(), A.outerStride(), B.data(),
         B.outerStride(), C.data(), C.outerStride());
  }

  // C = A' B: op(A) = A' with A k x m, op(B) = B (k x n).
  void gemm_tn(CMatRef A, CMatRef B, MatRef C, int threads) override {
    if (A.rows() != B.rows() || C.rows() != A.cols() || C.cols() != B.cols())
      throw Error("gemm_tn: shapes do not conform");
    if (!on_gpu(A.cols(), B.cols(), A.rows(), A.outerStride(), B.outerStride(), C.outerStride())) {
      cpu_backend().gemm_tn(A, B, C, threads);
      return;
    }
    gemm(1, 0, A.cols(), B.cols(), A.rows(), A.data(), A.outerStride(), B.data(),
         B.outerStride(), C.data(), C.outerStride());
  }

 private:
  static bool on_gpu(Eigen::Index m, Eigen::Index n, Eigen::Index k, Eigen::Index lda,
                     Eigen::Index ldb, Eigen::Index ldc) {
    return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >=
               kGpuGemmMinFlops &&
           fits_int(m) && fits_int(n) && fits_int(k) && fits_int(lda) && fits_int(ldb) &&
           fits_int(ldc);
  }

  void gemm(int ta, int tb, Eigen::Index m, Eigen::Index n, Eigen::Index k, const double* A,
            Eigen::Index lda, const double* B, Eigen::Index ldb, double* C, Eigen::Index ldc) {
    char err[512] = {0};
    const int rc = gemm_(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), A,
                         static_cast<int>(std::max<Eigen::Index>(lda, 1)), B,
                         static_cast<int>(std::max<Eigen::Index>(ldb, 1)), C,
                         static_cast<int>(std::max<Eigen::Index>(ldc, 1)), err, sizeof(err));
    if (rc != 0) throw Error(std::string("CUDA matrix product failed: ") + err);
  }

  fn_gauss gauss_;
  fn_gemm gemm_;
  fn_release release_;
  std::string device_;
};

struct GpuState {
  std::mutex mu;
  std::string path;
  bool tried = false;
  std::string why;
  std::unique_ptr<GpuBackend> backend;
};

GpuState& state() {
  static GpuState s;
  return s;
}

}  // namespace

Backend* gpu_backend(const std::string& path, std::string* why) {
  GpuState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.tried && s.path == path) {
    if (!s.backend && why) *why = s.why;
    return s.backend.get();
  }
  s.tried = true;
  s.path = path;
  s.backend.reset();
  s.why.clear();
#ifdef KL_NO_DLOPEN
  s.why = "the GPU library is not supported on this platform";
#else
  if (path.empty()) {
    s.why = "kernlearn was built without CUDA (reinstall with KERNLEARN_CUDA=yes)";
  } else {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      s.why = std::string("the GPU library could not be loaded: ") + (e ? e : "unknown error");
    } else {
      auto version = reinterpret_cast<fn_version>(dlsym(h, "kl_cuda_api_version"));
      auto init = reinterpret_cast<fn_init>(dlsym(h, "kl_cuda_init"));
      auto gauss = reinterpret_cast<fn_gauss>(dlsym(h, "kl_cuda_gaussian_kernel"));
      auto release = reinterpret_cast<fn_release>(dlsym(h, "kl_cuda_release"));
      auto gemm = reinterpret_cast<fn_gemm>(dlsym(h, "kl_cuda_dgemm"));
      if (!version) {
        s.why = "the GPU library lacks expected symbols";
      } else if (version() != KL_CUDA_API_VERSION) {
        s.why = "the GPU library has a different interface version; reinstall kernlearn";
      } else if (!init || !gauss || !release || !gemm) {
        s.why = "the GPU library lacks expected symbols";
      } else {
        char name[256] = {0}, err[512] = {0};
        if (init(0, name, sizeof(name), err, sizeof(err)) != 0) {
          s.why = err[0] ? err : "no usable CUDA device";
        } else {
          s.backend.reset(new GpuBackend(gauss, gemm, release, name));
        }
      }
      // The library stays loaded even when unusable: unloading CUDA runtimes is unsafe.
    }
  }
#endif
  if (!s.backend && why) *why = s.why;
  return s.backend.get();
}

void release_gpu_backend() {
  GpuState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.backend.reset();
  s.tried = false;
}

}  // namespace kl
