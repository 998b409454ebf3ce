// Loads the optional GPU library with dlopen() and wraps it as a Backend. The main library has
// no link-time dependency on CUDA; without the library, a driver or a device, the caller gets
// nullptr and a one-line reason, and uses the CPU backend.
#include "backend.hpp"

#include <cstring>
#include <map>
#include <mutex>

#if defined(_WIN32)
#define KL_NO_DLOPEN 1
#else
#include <dlfcn.h>
#endif

#include "../cuda/kl_cuda_api.h"

namespace kl {

namespace {

using fn_version = int (*)();
using fn_init = int (*)(int, char*, int, char*, int);
using fn_gauss = int (*)(const double*, int, const double*, int, int, double, double*, char*, int);
using fn_release = void (*)();

class GpuBackend final : public Backend {
 public:
  GpuBackend(fn_gauss gauss, fn_release release, std::string device)
      : gauss_(gauss), release_(release), device_(std::move(device)) {}
  ~GpuBackend() override {
    if (release_) release_();
  }
  std::string name() const override { return "cuda: " + device_; }
  bool is_gpu() const override { return true; }

  void kernel_matrix(const KernelSpec& spec, CMatRef X, CMatRef Z, MatRef K, int threads,
                     const Callbacks& cb) override {
    // The GPU routine covers the Gaussian kernel; the others run on the CPU.
    if (spec.type != KernelType::Gaussian) {
      cpu_backend().kernel_matrix(spec, X, Z, K, threads, cb);
      return;
    }
    validate(spec);
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

  void gemm_nt(CMatRef A, CMatRef B, MatRef C, int threads) override {
    cpu_backend().gemm_nt(A, B, C, threads);
  }

  void gemm_tn(CMatRef A, CMatRef B, MatRef C, int threads) override {
    cpu_backend().gemm_tn(A, B, C, threads);
  }

 private:
  fn_gauss gauss_;
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
      if (!version || !init || !gauss || !release) {
        s.why = "the GPU library lacks expected symbols";
      } else if (version() != KL_CUDA_API_VERSION) {
        s.why = "the GPU library has a different interface version; reinstall kernlearn";
      } else {
        char name[256] = {0}, err[512] = {0};
        if (init(0, name, sizeof(name), err, sizeof(err)) != 0) {
          s.why = err[0] ? err : "no usable CUDA device";
        } else {
          s.backend.reset(new GpuBackend(gauss, release, name));
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
