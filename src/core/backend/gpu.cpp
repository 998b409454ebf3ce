// Loads the optional GPU library with dlopen() and wraps it as a Backend. The main library has
// no link-time dependency on CUDA; without the library, a driver or a device, the caller gets
// nullptr and a one-line reason, and uses the CPU backend.
#include "backend/backend.hpp"

#include "kernels/hierarchical.hpp"
#include "kernels/tessellated.hpp"

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
using fn_chol = int (*)(double*, int, int, int, double*, int, int, int*, char*, int);
using fn_gram = int (*)(const float*, long long, int, long long, int, double*, int, char*, int);
using fn_fcreate = int (*)(const double*, int, int, double, double, int, kl_cuda_factor**, double*,
                           int*, char*, int);
using fn_fsolve = int (*)(kl_cuda_factor*, double*, int, int, char*, int);
using fn_ffree = void (*)(kl_cuda_factor*);
using fn_rcreate = int (*)(const double*, int, int, int, int, double, double, double, double,
                           kl_cuda_rows**, char*, int);
using fn_rcompute = int (*)(kl_cuda_rows*, const int*, int, float*, long long, char*, int);
using fn_rblock = int (*)(kl_cuda_rows*, const double*, int, int, double*, int, char*, int);
using fn_rfree = void (*)(kl_cuda_rows*);
using fn_rtree = int (*)(const double*, int, int, int, int, const int*, const int*, const int*,
                         const double*, const double*, kl_cuda_rows**, char*, int);
using fn_rtpass = int (*)(kl_cuda_rows*, const double*, int, int, int, const double*, int, int,
                          const double*, int, double*, int, double*, char*, int);
using fn_tblock = int (*)(const double*, const double*, const double*, int, const double*,
                          const double*, const double*, int, int, int, const double*, double*,
                          int, char*, int);

// The entry points of the GPU library.
struct GpuApi {
  fn_gauss gauss = nullptr;
  fn_gemm gemm = nullptr;
  fn_chol chol = nullptr;
  fn_gram gram = nullptr;
  fn_fcreate fcreate = nullptr;
  fn_fsolve fsolve = nullptr;
  fn_ffree ffree = nullptr;
  fn_rcreate rcreate = nullptr;
  fn_rcompute rcompute = nullptr;
  fn_rblock rblock = nullptr;
  fn_rfree rfree = nullptr;
  fn_rtree rtree = nullptr;
  fn_rtpass rtpass = nullptr;
  fn_tblock tblock = nullptr;
  fn_release release = nullptr;
  bool complete() const {
    return gauss && gemm && chol && gram && fcreate && fsolve && ffree && rcreate && rcompute &&
           rblock && rfree && rtree && rtpass && tblock && release;
  }
};

bool fits_int(Eigen::Index v) { return v >= 0 && v <= 2147483647; }

// Products with fewer multiply-adds than this stay on the CPU: the transfers would cost more
// than the arithmetic.
constexpr double kGpuGemmMinFlops = 2e7;
// Factorisations of fewer rows than this stay on the CPU (n^3 / 3 multiply-adds against 8 n^2
// bytes moved each way; the break-even is still to be measured on a GPU).
constexpr Eigen::Index kGpuCholeskyMinRows = 2048;
// Gram matrices with fewer columns or multiply-adds than these stay on the CPU.
constexpr Eigen::Index kGpuGramMinCols = 512;
constexpr double kGpuGramMinFlops = 1e10;
// SVM problems with fewer training rows than this compute their kernel rows on the CPU (a row
// costs about n d multiply-adds there; on the GPU mostly the copy of 4 n bytes and the
// latency of a few calls: the break-even is still to be measured on a GPU).
constexpr Eigen::Index kGpuRowsMinRows = 2048;
// Passes of the hierarchical kernel over fewer pairs than this stay on the CPU (the CPU's fused
// pass does about 1.5e8 pairs a second on 2 threads for a depth-2 tree of 8 nodes; the
// break-even is still to be measured on a GPU).
constexpr double kGpuHgkMinPairs = 1e6;
// Tessellated kernel matrices with fewer entries than this stay on the CPU (its block is
// matrix products of h and 2h columns and an elementwise box product; the break-even is still
// to be measured on a GPU).
constexpr double kGpuTklMinEntries = 1e6;

// The kernel type code of kl_cuda_rows_create for a standard kernel.
int rows_type(const KernelSpec& s) {
  switch (s.type) {
    case KernelType::Gaussian: return 0;
    case KernelType::Laplacian: return 1;
    case KernelType::Linear: return 2;
    case KernelType::Polynomial: return 3;
  }
  return -1;
}

// The GPU library keeps one stream and one cuBLAS handle: its calls from concurrent solves
// (the pairs of a one-vs-one problem) take turns.
std::mutex& device_call_mutex() {
  static std::mutex mu;
  return mu;
}

// A kernel the GPU library computes from held points: a standard kernel, or the hierarchical
// Gaussian kernel's tree (flattened as kl_cuda_rows_create_tree takes it).
struct DeviceKernel {
  bool tree = false;
  KernelSpec spec;
  std::vector<int> leaf, offsets, members;
  std::vector<double> weights, scales;
  // The description of `kernel`, or false when the library has no routine for it.
  static bool of(const Kernel& kernel, DeviceKernel* out) {
    if (const KernelSpec* s = kernel.standard()) {
      out->tree = false;
      out->spec = *s;
      return true;
    }
    const std::vector<HgkNode>* nodes = kernel.hierarchical();
    return nodes && of_tree(*nodes, out);
  }
  // The description of a hierarchical kernel's tree, or false when the library cannot take it.
  static bool of_tree(const std::vector<HgkNode>& tree, DeviceKernel* out) {
    const std::vector<HgkNode>* nodes = &tree;
    if (nodes->empty() || nodes->size() > KL_CUDA_MAX_TREE_NODES) return false;
    out->tree = true;
    out->offsets.push_back(0);
    for (const HgkNode& v : *nodes) {
      if (v.members.size() != v.weights.size()) return false;
      out->leaf.push_back(v.leaf ? 1 : 0);
      out->members.insert(out->members.end(), v.members.begin(), v.members.end());
      out->weights.insert(out->weights.end(), v.weights.begin(), v.weights.end());
      out->scales.push_back(v.scale);
      out->offsets.push_back(static_cast<int>(out->members.size()));
    }
    return true;
  }
};

// Points held by the GPU library (kl_cuda_rows), freed with the object.
class DevicePoints {
 public:
  DevicePoints(const GpuApi& api, kl_cuda_rows* h) : api_(api), h_(h) {}
  ~DevicePoints() {
    std::lock_guard<std::mutex> lock(device_call_mutex());
    api_.rfree(h_);
  }
  DevicePoints(const DevicePoints&) = delete;
  DevicePoints& operator=(const DevicePoints&) = delete;
  // Uploads the rows of X for the kernel `k`; nullptr (with the reason in *why) on failure.
  static std::unique_ptr<DevicePoints> create(const GpuApi& api, const DeviceKernel& k,
                                              CMatRef X, std::string* why) {
    if (!fits_int(X.rows()) || !fits_int(X.cols()) || !fits_int(X.outerStride()) ||
        X.rows() < 1 || X.cols() < 1) {
      if (why) *why = "points too many or too few for the GPU routine";
      return nullptr;
    }
    char err[512] = {0};
    kl_cuda_rows* h = nullptr;
    std::lock_guard<std::mutex> lock(device_call_mutex());
    const int n = static_cast<int>(X.rows()), d = static_cast<int>(X.cols()),
              ld = static_cast<int>(std::max<Eigen::Index>(X.outerStride(), X.rows()));
    const KernelSpec& spec = k.spec;
    const int rc =
        k.tree ? api.rtree(X.data(), n, d, ld, static_cast<int>(k.leaf.size()), k.leaf.data(),
                           k.offsets.data(), k.members.data(), k.weights.data(), k.scales.data(),
                           &h, err, sizeof(err))
               : api.rcreate(X.data(), n, d, ld, rows_type(spec), spec.gamma, spec.degree,
                             spec.scale, spec.offset, &h, err, sizeof(err));
    if (rc != 0 || !h) {
      if (why) *why = err;
      return nullptr;
    }
    return std::unique_ptr<DevicePoints>(new DevicePoints(api, h));
  }
  // out (count rows of n floats, row r at out + r * ldo) = the kernel rows of points idx.
  bool rows(const int* idx, int count, float* out, long long ldo, std::string* why) const {
    char err[512] = {0};
    std::lock_guard<std::mutex> lock(device_call_mutex());
    if (api_.rcompute(h_, idx, count, out, ldo, err, sizeof(err)) == 0) return true;
    if (why) *why = err;
    return false;
  }
  // kl_cuda_rows_tree_pass over these points (the columns) and the rows of Z (or, with
  // triangle, these points themselves); results into KV (m x L) and grad when non-null.
  bool tree_pass(CMatRef Z, bool triangle, CMatRef V, const Mat* U, Mat* KV, Vec* grad,
                 std::string* why) const {
    const Eigen::Index m = triangle ? V.rows() : Z.rows();
    if (!fits_int(m) || !fits_int(V.cols()) || !fits_int(Z.outerStride()) ||
        !fits_int(V.outerStride())) {
      if (why) *why = "matrix too large for the GPU routine";
      return false;
    }
    char err[512] = {0};
    const auto ld = [](Eigen::Index stride, Eigen::Index rows) {
      return static_cast<int>(std::max<Eigen::Index>(stride, std::max<Eigen::Index>(rows, 1)));
    };
    std::lock_guard<std::mutex> lock(device_call_mutex());
    if (api_.rtpass(h_, triangle ? nullptr : Z.data(), static_cast<int>(m),
                    triangle ? 1 : ld(Z.outerStride(), Z.rows()), triangle ? 1 : 0, V.data(),
                    ld(V.outerStride(), V.rows()), static_cast<int>(V.cols()),
                    U ? U->data() : nullptr, U ? ld(U->outerStride(), U->rows()) : 1,
                    KV ? KV->data() : nullptr, KV ? ld(KV->outerStride(), KV->rows()) : 1,
                    grad ? grad->data() : nullptr, err, sizeof(err)) == 0)
      return true;
    if (why) *why = err;
    return false;
  }
  // K (m x n) = k(Z_i, x_q).
  bool block(CMatRef Z, MatRef K, std::string* why) const {
    if (!fits_int(Z.rows()) || !fits_int(Z.outerStride()) || !fits_int(K.outerStride())) {
      if (why) *why = "matrix too large for the GPU routine";
      return false;
    }
    char err[512] = {0};
    const int ld = static_cast<int>(std::max<Eigen::Index>(Z.outerStride(), std::max<Eigen::Index>(Z.rows(), 1)));
    const int ldk = static_cast<int>(std::max<Eigen::Index>(K.outerStride(), std::max<Eigen::Index>(K.rows(), 1)));
    std::lock_guard<std::mutex> lock(device_call_mutex());
    if (api_.rblock(h_, Z.data(), static_cast<int>(Z.rows()), ld, K.data(), ldk, err,
                    sizeof(err)) == 0)
      return true;
    if (why) *why = err;
    return false;
  }

 private:
  GpuApi api_;
  kl_cuda_rows* h_;
};

// The rows of a standard kernel over training points held on the GPU: each row the solver's
// cache misses is computed there (double-precision products, one rounding to float); diagonal,
// single values and blocks come from the CPU rows of the same points. Subsets (the pairs of a
// one-vs-one problem) upload their points again while they have at least `min_rows` rows. When
// a GPU call fails the object switches to the CPU rows for good (the results agree up to the
// rounding of the products).
class GpuKernelRows final : public KernelRows {
 public:
  GpuKernelRows(const GpuApi& api, std::shared_ptr<const DeviceKernel> kernel, Mat X,
                std::unique_ptr<KernelRows> cpu, std::unique_ptr<DevicePoints> dev,
                Eigen::Index min_rows)
      : api_(api), kernel_(std::move(kernel)), X_(std::move(X)), cpu_(std::move(cpu)),
        dev_(std::move(dev)), min_rows_(min_rows) {}
  int size() const override { return cpu_->size(); }
  double diag(int p) const override { return cpu_->diag(p); }
  double value(int i, int j) const override { return cpu_->value(i, j); }
  void row(int p, float* out, int threads) const override {
    if (dev_ && dev_->rows(&p, 1, out, static_cast<long long>(std::max(size(), 1)), nullptr)) return;
    dev_.reset();  // from now on the CPU
    cpu_->row(p, out, threads);
  }
  void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
             int threads) const override {
    cpu_->block(rows, cols, out, threads);
  }
  std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const override {
    std::unique_ptr<KernelRows> cpu = cpu_->subset(rows);
    if (!dev_ || static_cast<Eigen::Index>(rows.size()) < min_rows_) return cpu;
    Mat Xs(static_cast<Eigen::Index>(rows.size()), X_.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) Xs.row(static_cast<Eigen::Index>(i)) = X_.row(rows[i]);
    std::unique_ptr<DevicePoints> dev = DevicePoints::create(api_, *kernel_, Xs, nullptr);
    if (!dev) return cpu;
    return std::unique_ptr<KernelRows>(
        new GpuKernelRows(api_, kernel_, std::move(Xs), std::move(cpu), std::move(dev), min_rows_));
  }

 private:
  GpuApi api_;
  std::shared_ptr<const DeviceKernel> kernel_;
  Mat X_;
  std::unique_ptr<KernelRows> cpu_;
  mutable std::unique_ptr<DevicePoints> dev_;
  Eigen::Index min_rows_;
};

// A factor held by the GPU library.
class GpuCholesky final : public DeviceCholesky {
 public:
  GpuCholesky(kl_cuda_factor* f, Eigen::Index n, Vec diag, fn_fsolve solve, fn_ffree free)
      : f_(f), n_(n), diag_(std::move(diag)), solve_(solve), free_(free) {}
  ~GpuCholesky() override { free_(f_); }
  GpuCholesky(const GpuCholesky&) = delete;
  GpuCholesky& operator=(const GpuCholesky&) = delete;
  const Vec& diagonal() const override { return diag_; }
  Mat solve(const Mat& B) override {
    if (B.rows() != n_) throw Error("device Cholesky solve: B has the wrong number of rows");
    if (!fits_int(B.cols())) throw Error("device Cholesky solve: too many right-hand sides");
    Mat X = B;
    char err[512] = {0};
    if (solve_(f_, X.data(), static_cast<int>(X.cols()), static_cast<int>(std::max<Eigen::Index>(n_, 1)),
               err, sizeof(err)) != 0)
      throw Error(std::string("CUDA Cholesky solve failed: ") + err);
    return X;
  }

 private:
  kl_cuda_factor* f_;
  Eigen::Index n_;
  Vec diag_;
  fn_fsolve solve_;
  fn_ffree free_;
};


class GpuBackend final : public Backend {
 public:
  GpuBackend(const GpuApi& api, std::string device)
      : api_(api), device_(std::move(device)) {}
  ~GpuBackend() override {
    if (api_.release) api_.release();
  }
  std::string name() const override { return "cuda: " + device_; }
  bool is_gpu() const override { return true; }

  void set_gpu_ops(unsigned ops) override { ops_ = ops & kGpuOpsAll; }
  unsigned gpu_ops() const override { return ops_; }

  // The Gaussian kernel with kernel_matrix on (kl_cuda_gaussian_kernel), the other standard
  // kernels with kernel_rows on (kl_cuda_rows_block); the rest runs on the CPU.
  bool computes(const Kernel& kernel) const override {
    if (kernel.tessellated()) return (ops_ & kGpuTklBlock) != 0;
    const KernelSpec* s = kernel.standard();
    if (s && s->type == KernelType::Gaussian) return (ops_ & kGpuKernelMatrix) != 0;
    DeviceKernel k;
    return (ops_ & kGpuKernelRows) != 0 && DeviceKernel::of(kernel, &k);
  }

  void kernel_matrix(const Kernel& kernel, CMatRef X, CMatRef Z, MatRef K, int threads,
                     const Callbacks& cb) override {
    if (!computes(kernel)) {
      cpu_backend().kernel_matrix(kernel, X, Z, K, threads, cb);
      return;
    }
    if (const TessellatedForm* tf = kernel.tessellated()) {
      if (!tessellated_block(*tf, X, Z, K)) cpu_backend().kernel_matrix(kernel, X, Z, K, threads, cb);
      cb.check();
      return;
    }
    const KernelSpec* sp = kernel.standard();
    if (!sp || sp->type != KernelType::Gaussian) {
      DeviceKernel dk;
      DeviceKernel::of(kernel, &dk);
      if (Z.cols() != X.cols()) throw Error("X and Z must have the same number of columns");
      if (K.rows() != X.rows() || K.cols() != Z.rows()) throw Error("K has the wrong shape");
      if (X.rows() == 0 || Z.rows() == 0) return;
      // K(X, Z): the points Z on the device, X as the new points; a matrix without columns
      // (or one the device cannot hold) stays on the CPU
      std::string why;
      std::unique_ptr<DevicePoints> dev =
          X.cols() > 0 ? DevicePoints::create(api_, dk, Z, &why) : nullptr;
      if (!dev) {
        cpu_backend().kernel_matrix(kernel, X, Z, K, threads, cb);
        return;
      }
      if (!dev->block(X, K, &why)) throw Error("CUDA kernel matrix failed: " + why);
      cb.check();
      return;
    }
    const KernelSpec& spec = *sp;
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
    const int rc = api_.gauss(Xc.data(), static_cast<int>(n), Zc.data(), static_cast<int>(m),
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
    if (!(ops_ & kGpuGemm) ||
        !on_gpu(A.rows(), B.rows(), A.cols(), A.outerStride(), B.outerStride(), C.outerStride())) {
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
    if (!(ops_ & kGpuGemm) ||
        !on_gpu(A.cols(), B.cols(), A.rows(), A.outerStride(), B.outerStride(), C.outerStride())) {
      cpu_backend().gemm_tn(A, B, C, threads);
      return;
    }
    gemm(1, 0, A.cols(), B.cols(), A.rows(), A.data(), A.outerStride(), B.data(),
         B.outerStride(), C.data(), C.outerStride());
  }

  // cuSOLVER's factorisation and solve when enabled and large enough; the CPU otherwise, and
  // also when the GPU call fails before writing the results (no device memory for A, say).
  bool cholesky_solve(MatRef A, MatRef B, bool write_factor, int threads,
                      const Callbacks& cb) override {
    const Eigen::Index n = A.rows();
    if (A.cols() != n || B.rows() != n) throw Error("cholesky_solve: shapes do not conform");
    if (!(ops_ & kGpuCholesky) || n < kGpuCholeskyMinRows || !fits_int(n) || !fits_int(B.cols()) ||
        !fits_int(A.outerStride()) || !fits_int(B.outerStride()))
      return cpu_backend().cholesky_solve(A, B, write_factor, threads, cb);
    cb.check();
    char err[512] = {0};
    int info = 0;
    const int nrhs = static_cast<int>(B.cols());
    const int rc = api_.chol(A.data(), static_cast<int>(n), static_cast<int>(A.outerStride()),
                         write_factor ? 1 : 0, nrhs > 0 ? B.data() : nullptr, nrhs,
                         static_cast<int>(std::max<Eigen::Index>(B.outerStride(), n)), &info, err,
                         sizeof(err));
    if (rc == 1) return cpu_backend().cholesky_solve(A, B, write_factor, threads, cb);
    if (rc != 0) throw Error(std::string("CUDA Cholesky factorisation failed: ") + err);
    cb.check();
    return info == 0;
  }

  bool gram_f32(const float* X, Eigen::Index n, Eigen::Index p, Eigen::Index row_stride,
                Eigen::Index block, MatRef G) override {
    if (!(ops_ & kGpuGram) || p < kGpuGramMinCols ||
        static_cast<double>(n) * static_cast<double>(p) * static_cast<double>(p) < kGpuGramMinFlops ||
        !fits_int(p) || !fits_int(block) || !fits_int(G.outerStride()) || G.rows() < p ||
        G.cols() < p)
      return false;
    char err[512] = {0};
    const int rc = api_.gram(X, static_cast<long long>(n), static_cast<int>(p),
                             static_cast<long long>(row_stride), static_cast<int>(block), G.data(),
                             static_cast<int>(G.outerStride()), err, sizeof(err));
    // nothing is written to G before the last copy: a failure leaves the CPU to do it
    return rc == 0;
  }

  std::unique_ptr<KernelRows> kernel_rows(const Kernel& kernel, CMatRef X) override {
    auto dk = std::make_shared<DeviceKernel>();
    if (!(ops_ & kGpuKernelRows) || X.rows() < kGpuRowsMinRows || X.cols() < 1 ||
        !DeviceKernel::of(kernel, dk.get()))
      return nullptr;
    std::unique_ptr<DevicePoints> dev = DevicePoints::create(api_, *dk, X, nullptr);
    if (!dev) return nullptr;  // (no device memory, say) the CPU computes the rows
    return std::unique_ptr<KernelRows>(new GpuKernelRows(api_, std::move(dk), Mat(X),
                                                         kernel.rows(X), std::move(dev),
                                                         kGpuRowsMinRows));
  }

  bool hgk_pass(const std::vector<HgkNode>& nodes, CMatRef X, CMatRef Z, CMatRef V, const Mat* U,
                bool triangle, Mat* KV, Vec* grad) override {
    if (!(ops_ & kGpuHgkPass) || (!KV && !grad)) return false;
    const double pairs = static_cast<double>(X.rows()) * static_cast<double>(Z.rows()) /
                         (triangle ? 2.0 : 1.0);
    if (pairs < kGpuHgkMinPairs || X.cols() < 1 || Z.cols() != X.cols() ||
        V.rows() != Z.rows() || V.cols() < 1 || V.cols() > KL_CUDA_MAX_TREE_OUTPUTS ||
        (U && (U->rows() != X.rows() || U->cols() != V.cols())) || (grad && !U) ||
        (triangle && (X.rows() != Z.rows() || KV)))
      return false;
    DeviceKernel dk;
    if (!DeviceKernel::of_tree(nodes, &dk)) return false;
    const Eigen::Index nw = static_cast<Eigen::Index>(dk.weights.size());
    if (grad && nw > KL_CUDA_MAX_TREE_WEIGHTS) return false;
    std::unique_ptr<DevicePoints> dev = DevicePoints::create(api_, dk, Z, nullptr);
    if (!dev) return false;  // (no device memory, say) the CPU runs the pass
    Mat kv(KV ? X.rows() : 0, KV ? V.cols() : 0);
    Vec g(grad ? nw : 0);
    if (!dev->tree_pass(X, triangle, V, U, KV ? &kv : nullptr, grad ? &g : nullptr, nullptr))
      return false;
    if (KV) *KV = std::move(kv);
    if (grad) *grad = std::move(g);
    return true;
  }

  DeviceFactor device_cholesky(CMatRef S, double scale, double shift, bool single) override {
    DeviceFactor out;
    const Eigen::Index n = S.rows();
    if (S.cols() != n) throw Error("device_cholesky: the matrix must be square");
    if (!(ops_ & kGpuCholesky) || n < kGpuCholeskyMinRows || !fits_int(n) ||
        !fits_int(S.outerStride()))
      return out;
    char err[512] = {0};
    int info = 0;
    kl_cuda_factor* f = nullptr;
    Vec diag(n);
    const int rc = api_.fcreate(S.data(), static_cast<int>(n), static_cast<int>(S.outerStride()),
                                scale, shift, single ? 1 : 0, &f, diag.data(), &info, err,
                                sizeof(err));
    if (rc != 0) return out;  // (no device memory, say) the CPU factors it
    out.handled = true;
    out.positive_definite = info == 0 && f;
    if (f) out.factor.reset(new GpuCholesky(f, n, std::move(diag), api_.fsolve, api_.ffree));
    return out;
  }

 private:
  // K = k(X, Z) for the tessellated kernel by kl_cuda_tessellated_block; false (the caller
  // computes K on the CPU, overwriting whatever was written) when the block is small or the
  // call fails.
  bool tessellated_block(const TessellatedForm& tf, CMatRef X, CMatRef Z, MatRef K) {
    if (Z.cols() != X.cols()) throw Error("X and Z must have the same number of columns");
    if (K.rows() != X.rows() || K.cols() != Z.rows()) throw Error("K has the wrong shape");
    if (X.rows() == 0 || Z.rows() == 0) return true;
    if (static_cast<double>(X.rows()) * static_cast<double>(Z.rows()) < kGpuTklMinEntries ||
        !fits_int(X.rows()) || !fits_int(Z.rows()) || !fits_int(K.outerStride()))
      return false;
    Mat Xc, F, G, Zc, Zm, Zt;
    tf.left(X, Xc, F, G);
    tf.right(Z, Zc, Zm, Zt);
    if (!fits_int(F.cols())) return false;
    char err[512] = {0};
    std::lock_guard<std::mutex> lock(device_call_mutex());
    return api_.tblock(Xc.data(), F.data(), G.data(), static_cast<int>(X.rows()), Zc.data(),
                       Zm.data(), Zt.data(), static_cast<int>(Z.rows()),
                       static_cast<int>(X.cols()), static_cast<int>(F.cols()),
                       tf.upper().data(), K.data(),
                       static_cast<int>(std::max<Eigen::Index>(K.outerStride(), K.rows())), err,
                       sizeof(err)) == 0;
  }

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
    const int rc = api_.gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), A,
                         static_cast<int>(std::max<Eigen::Index>(lda, 1)), B,
                         static_cast<int>(std::max<Eigen::Index>(ldb, 1)), C,
                         static_cast<int>(std::max<Eigen::Index>(ldc, 1)), err, sizeof(err));
    if (rc != 0) throw Error(std::string("CUDA matrix product failed: ") + err);
  }

  GpuApi api_;
  std::string device_;
  unsigned ops_ = kGpuOpsDefault;
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
      GpuApi api;
      api.gauss = reinterpret_cast<fn_gauss>(dlsym(h, "kl_cuda_gaussian_kernel"));
      api.release = reinterpret_cast<fn_release>(dlsym(h, "kl_cuda_release"));
      api.gemm = reinterpret_cast<fn_gemm>(dlsym(h, "kl_cuda_dgemm"));
      api.chol = reinterpret_cast<fn_chol>(dlsym(h, "kl_cuda_cholesky_solve"));
      api.gram = reinterpret_cast<fn_gram>(dlsym(h, "kl_cuda_gram_f32"));
      api.fcreate = reinterpret_cast<fn_fcreate>(dlsym(h, "kl_cuda_factor_create"));
      api.fsolve = reinterpret_cast<fn_fsolve>(dlsym(h, "kl_cuda_factor_solve"));
      api.ffree = reinterpret_cast<fn_ffree>(dlsym(h, "kl_cuda_factor_free"));
      api.rcreate = reinterpret_cast<fn_rcreate>(dlsym(h, "kl_cuda_rows_create"));
      api.rcompute = reinterpret_cast<fn_rcompute>(dlsym(h, "kl_cuda_rows_compute"));
      api.rblock = reinterpret_cast<fn_rblock>(dlsym(h, "kl_cuda_rows_block"));
      api.rfree = reinterpret_cast<fn_rfree>(dlsym(h, "kl_cuda_rows_free"));
      api.rtree = reinterpret_cast<fn_rtree>(dlsym(h, "kl_cuda_rows_create_tree"));
      api.rtpass = reinterpret_cast<fn_rtpass>(dlsym(h, "kl_cuda_rows_tree_pass"));
      api.tblock = reinterpret_cast<fn_tblock>(dlsym(h, "kl_cuda_tessellated_block"));
      if (!version) {
        s.why = "the GPU library lacks expected symbols";
      } else if (version() != KL_CUDA_API_VERSION) {
        s.why = "the GPU library has a different interface version; reinstall kernlearn";
      } else if (!init || !api.complete()) {
        s.why = "the GPU library lacks expected symbols";
      } else {
        char name[256] = {0}, err[512] = {0};
        if (init(0, name, sizeof(name), err, sizeof(err)) != 0) {
          s.why = err[0] ? err : "no usable CUDA device";
        } else {
          s.backend.reset(new GpuBackend(api, name));
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
