// The optional GPU library (kernlearn_cuda.so): implements kl_cuda_api.h with the CUDA runtime
// and cuBLAS. It is loaded into the R process at run time, so it never prints, never exits and
// never aborts: every failure is returned as a status with a one-line reason.
//
// Environment overrides (for tests of the tiling; all optional):
//   KL_CUDA_TILE_ROWS  largest number of rows of X processed per tile
//   KL_CUDA_TILE_COLS  largest number of rows of Z (columns of K) processed per tile
//   KL_CUDA_GEMM_TILE  largest tile edge (rows, columns and inner dimension) of kl_cuda_dgemm
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "kl_cuda_api.h"

#define KL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------
// State kept between calls (single caller thread).

struct State {
  int device = -1;               // selected device, -1 before a successful kl_cuda_init
  cudaStream_t stream = nullptr;  // created with the cuBLAS handle
  cublasHandle_t blas = nullptr;  // created lazily on the first kernel call
  cusolverDnHandle_t solver = nullptr;  // created lazily on the first factorisation
  double* buf = nullptr;          // one workspace, reused while large enough
  std::size_t buf_bytes = 0;
};

State g;

// Upper bound on the workspace, and the fraction of free device memory it may take.
const std::size_t kMaxWorkspaceBytes = std::size_t(1) << 30;  // 1 GiB
const std::size_t kMaxGemmWorkspaceBytes = std::size_t(4) << 30;  // 4 GiB
const double kFreeFraction = 0.5;

// ---------------------------------------------------------------------------------------------
// Error reporting.

void set_err(char* err, int err_len, const char* fmt, ...) {
  if (!err || err_len <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(err, static_cast<std::size_t>(err_len), fmt, ap);
  va_end(ap);
  err[err_len - 1] = '\0';
  // Keep it to one line.
  for (char* p = err; *p; ++p)
    if (*p == '\n' || *p == '\r') *p = ' ';
}

// Fills err with "<what> (<error name>: <error string>)" and returns 1.
int cuda_fail(char* err, int err_len, const char* what, cudaError_t e) {
  set_err(err, err_len, "%s (%s: %s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return 1;
}

int blas_fail(char* err, int err_len, const char* what, cublasStatus_t s) {
  set_err(err, err_len, "%s (%s)", what, cublasGetStatusString(s));
  return 1;
}

int solver_fail(char* err, int err_len, const char* what, cusolverStatus_t s) {
  set_err(err, err_len, "%s (cuSOLVER status %d)", what, static_cast<int>(s));
  return 1;
}

#define KL_CUDA_TRY(call, what)                         \
  do {                                                  \
    cudaError_t kl_e_ = (call);                         \
    if (kl_e_ != cudaSuccess) return cuda_fail(err, err_len, what, kl_e_); \
  } while (0)

#define KL_BLAS_TRY(call, what)                         \
  do {                                                  \
    cublasStatus_t kl_s_ = (call);                      \
    if (kl_s_ != CUBLAS_STATUS_SUCCESS) return blas_fail(err, err_len, what, kl_s_); \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Device code.

// out[i] = sum_k A[i + k * lda]^2 for i < rows. One thread per row; consecutive threads read
// consecutive addresses of each column.
__global__ void row_sqnorms(const double* __restrict__ A, int rows, int cols, int lda,
                            double* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  double s = 0.0;
  const double* p = A + i;
  for (int k = 0; k < cols; ++k, p += lda) {
    const double v = *p;
    s += v * v;
  }
  out[i] = s;
}

// On entry G (rows x cols, leading dimension rows) holds -2 X Z'; on exit
// G_ij = exp(-gamma * max(xn_i + zn_j + G_ij, 0)). A NaN distance stays NaN.
__global__ void gaussian_finish(double* __restrict__ G, int rows, int cols,
                                const double* __restrict__ xn, const double* __restrict__ zn,
                                double gamma) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const double xi = xn[i];
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < cols; j += gridDim.y * blockDim.y) {
    double* g = G + static_cast<std::size_t>(j) * rows + i;
    double d2 = xi + zn[j] + *g;
    if (d2 < 0.0) d2 = 0.0;
    *g = exp(-gamma * d2);
  }
}

// G (lower triangle, p x p, leading dimension p) += C (single precision, same layout).
__global__ void add_lower_f32(double* __restrict__ G, const float* __restrict__ C, int p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p) return;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j <= i && j < p; j += gridDim.y * blockDim.y) {
    const std::size_t k = static_cast<std::size_t>(j) * p + i;
    G[k] += static_cast<double>(C[k]);
  }
}

// A (n x n, leading dimension n) = scale * S + shift * I on the lower triangle, 0 above, with
// S (double, leading dimension n) on the device; T is float or double.
template <class T>
__global__ void scaled_shifted_lower(T* __restrict__ A, const double* __restrict__ S, int n,
                                     double scale, double shift) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
    const std::size_t k = static_cast<std::size_t>(j) * n + i;
    double v = 0.0;
    if (i >= j) v = scale * S[k] + (i == j ? shift : 0.0);
    A[k] = static_cast<T>(v);
  }
}

// out[i] = A[i + i * n] (as double).
template <class T>
__global__ void diagonal_of(const T* __restrict__ A, int n, double* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<double>(A[static_cast<std::size_t>(i) * n + i]);
}

// dst[k] = src[k] for k < count, converting the type.
template <class To, class From>
__global__ void convert(To* __restrict__ dst, const From* __restrict__ src, std::size_t count) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[k] = static_cast<To>(src[k]);
}

// A standard kernel (kl_cuda_rows_create): type 0 Gaussian, 1 Laplacian, 2 linear,
// 3 polynomial with the integer degree `degree`.
struct KernelParams {
  int type;
  int degree;
  double gamma, scale, offset;
};

// k from the inner product and the two squared norms; distances clamped at 0 (NaN stays NaN).
__device__ __forceinline__ double kernel_from_dot(const KernelParams& k, double dot, double an,
                                                  double bn) {
  if (k.type == 2) return dot;
  if (k.type == 3) {
    double b = k.scale * dot + k.offset, r = 1.0;
    for (int e = k.degree; e > 0; e >>= 1) {
      if (e & 1) r *= b;
      b *= b;
    }
    return r;
  }
  double d2 = an + bn - 2.0 * dot;
  if (d2 < 0.0) d2 = 0.0;
  return exp(-k.gamma * (k.type == 1 ? sqrt(d2) : d2));
}

// out[i + j * rows] = k(G[i + j * rows], an[i], bn[j]) for the inner products G (rows x cols,
// leading dimension rows); out may be G itself (T = double).
template <class T>
__global__ void kernel_finish(const double* G, int rows, int cols, const double* __restrict__ an,
                              const double* __restrict__ bn, KernelParams k, T* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const double ai = an[i];
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < cols; j += gridDim.y * blockDim.y) {
    const std::size_t at = static_cast<std::size_t>(j) * rows + i;
    out[at] = static_cast<T>(kernel_from_dot(k, G[at], ai, bn[j]));
  }
}

// Q (count x d, leading dimension count) = the rows idx of X (n x d, leading dimension n), and
// qn[r] = xn[idx[r]].
__global__ void gather_rows(const double* __restrict__ X, int n, int d,
                            const double* __restrict__ xn, const int* __restrict__ idx, int count,
                            double* __restrict__ Q, double* __restrict__ qn) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= count) return;
  const std::size_t p = static_cast<std::size_t>(idx[r]);
  qn[r] = xn[p];
  for (int k = blockIdx.y * blockDim.y + threadIdx.y; k < d; k += gridDim.y * blockDim.y)
    Q[static_cast<std::size_t>(k) * count + r] = X[static_cast<std::size_t>(k) * n + p];
}

// A hierarchical Gaussian kernel on the device (kl_cuda_rows_create_tree): nodes in order,
// children before parents, the root last.
struct TreeParams {
  int nnodes;
  const int* leaf;      // nnodes flags
  const int* offsets;   // nnodes + 1
  const int* members;   // input columns (leaves) or child nodes (inner nodes)
  const double* weights;
  const double* scales;
};

// The tree's kernel between the point a (coordinates a[i * lda]) and b (b[i * ldb]), node by
// node: om[v] = 1 - K_v (as -expm1) for the nodes below the root, and with Keep also for the
// root and kval[v] = K_v for every node (the backward pass of tree_pass reads them).
template <bool Keep>
__device__ __forceinline__ double tree_forward(const TreeParams& t, const double* a,
                                               std::size_t lda, const double* b,
                                               std::size_t ldb, double* kval, double* om) {
  double e = 0.0;
  for (int v = 0; v < t.nnodes; ++v) {
    double acc = 0.0;
    const bool leaf = t.leaf[v] != 0;
    for (int k = t.offsets[v]; k < t.offsets[v + 1]; ++k) {
      const double w = t.weights[k];
      const int m = t.members[k];
      if (leaf) {
        const double df = a[static_cast<std::size_t>(m) * lda] - b[static_cast<std::size_t>(m) * ldb];
        acc += w * w * df * df;
      } else {
        acc += w * w * om[m];
      }
    }
    e = t.scales[v] * acc;
    if (Keep) {
      kval[v] = exp(-e);
      om[v] = -expm1(-e);
    } else if (v + 1 < t.nnodes) {
      om[v] = -expm1(-e);
    }
  }
  return Keep ? kval[t.nnodes - 1] : exp(-e);
}

__device__ double tree_value(const TreeParams& t, const double* a, std::size_t lda,
                             const double* b, std::size_t ldb) {
  double om[KL_CUDA_MAX_TREE_NODES];
  return tree_forward<false>(t, a, lda, b, ldb, nullptr, om);
}

// out[i + j * rows] = k(A_i, B_j) for the points A (rows x d, leading dimension lda) and
// B (cols x d, leading dimension ldb).
template <class T>
__global__ void tree_block(const double* __restrict__ A, int rows, int lda,
                           const double* __restrict__ B, int cols, int ldb, TreeParams t,
                           T* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < cols; j += gridDim.y * blockDim.y)
    out[static_cast<std::size_t>(j) * rows + i] =
        static_cast<T>(tree_value(t, A + i, static_cast<std::size_t>(lda), B + j,
                                  static_cast<std::size_t>(ldb)));
}

// The pass of kl_cuda_rows_tree_pass over the pairs (a_i, b_j), i < rows, j in the columns of
// this block's chunk [blockIdx.y * chunk, +chunk): one thread per row i, which keeps every
// node's value of the pair (forward) and its adjoint (backward) in per-thread arrays. With
// Sums, the chunk's share of (K V)_i goes to kv_part[(blockIdx.y * L + l) * rows + i]; with
// Grad, the block's sums over its rows of sum_j G_v t_m (G_v = Kbar_v K_v, before the factor
// -2 s_v w_m) go to g_part[block * nw + t], block = blockIdx.y * gridDim.x + blockIdx.x,
// added over the threads in a fixed order. triangle: a and b are the same points (row i of a
// is point row0 + i of b) and only the pairs j > row0 + i count.
constexpr int kPassThreads = 128;

template <bool Sums, bool Grad>
__global__ void __launch_bounds__(kPassThreads)
tree_pass(const double* __restrict__ A, int rows, int lda, const double* __restrict__ B,
          int cols, int ldb, TreeParams t, int nw, int chunk, int triangle, int row0,
          const double* __restrict__ V, int ldv, int L, const double* __restrict__ U, int ldu,
          double* __restrict__ kv_part, double* __restrict__ g_part) {
  __shared__ double red[kPassThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * chunk;
  const int j1 = min(cols, j0 + chunk);
  const int nn = t.nnodes, root = nn - 1;
  double kval[KL_CUDA_MAX_TREE_NODES], om[KL_CUDA_MAX_TREE_NODES], gb[KL_CUDA_MAX_TREE_NODES];
  double kvacc[KL_CUDA_MAX_TREE_OUTPUTS], ua[KL_CUDA_MAX_TREE_OUTPUTS];
  double gacc[Grad ? KL_CUDA_MAX_TREE_WEIGHTS : 1];
  for (int l = 0; l < L; ++l) kvacc[l] = 0.0;
  if (Grad) {
    for (int k = 0; k < nw; ++k) gacc[k] = 0.0;
  }
  if (i < rows) {
    if (Grad)
      for (int l = 0; l < L; ++l) ua[l] = U[i + static_cast<std::size_t>(l) * ldu];
    const double* a = A + i;
    const int jstart = triangle ? max(j0, row0 + i + 1) : j0;
    for (int j = jstart; j < j1; ++j) {
      const double* b = B + j;
      tree_forward<true>(t, a, static_cast<std::size_t>(lda), b, static_cast<std::size_t>(ldb),
                         kval, om);
      const double kr = kval[root];
      if (Sums)
        for (int l = 0; l < L; ++l) kvacc[l] += kr * V[j + static_cast<std::size_t>(l) * ldv];
      if (Grad) {
        double adj = 0.0;
        for (int l = 0; l < L; ++l) adj += ua[l] * V[j + static_cast<std::size_t>(l) * ldv];
        gb[root] = adj * kr;
        for (int v = root; v >= 0; --v) {
          const double G = gb[v], s = t.scales[v];
          const bool leaf = t.leaf[v] != 0;
          for (int k = t.offsets[v]; k < t.offsets[v + 1]; ++k) {
            const int m = t.members[k];
            if (leaf) {
              const double df = a[static_cast<std::size_t>(m) * lda] - b[static_cast<std::size_t>(m) * ldb];
              gacc[k] += G * df * df;
            } else {
              const double w = t.weights[k];
              gacc[k] += G * om[m];
              gb[m] = G * s * w * w * kval[m];
            }
          }
        }
      }
    }
    if (Sums)
      for (int l = 0; l < L; ++l)
        kv_part[(static_cast<std::size_t>(blockIdx.y) * L + l) * rows + i] = kvacc[l];
  }
  if (Grad) {
    const std::size_t blk = static_cast<std::size_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    for (int k = 0; k < nw; ++k) {
      red[threadIdx.x] = gacc[k];
      __syncthreads();
      for (int h = kPassThreads / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
      }
      if (threadIdx.x == 0) g_part[blk * nw + k] = red[0];
      __syncthreads();
    }
  }
}

// out[i + l * rows] = sum over c < chunks of part[(c * L + l) * rows + i], in the order of c.
__global__ void sum_chunks(const double* __restrict__ part, int rows, int L, int chunks,
                           double* __restrict__ out) {
  const std::size_t n = static_cast<std::size_t>(rows) * L;
  for (std::size_t q = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; q < n;
       q += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int c = 0; c < chunks; ++c) s += part[static_cast<std::size_t>(c) * n + q];
    out[q] = s;
  }
}

// K[i + j * rows] += A_ij T1[i + j * rows], A_ij = prod_c (upper_c - max(X_ic, Y_jc)) for the
// points X (rows x d, leading dimension rows) and Y (cols x d, leading dimension cols).
__global__ void tessellated_finish(const double* __restrict__ X, int rows,
                                   const double* __restrict__ Y, int cols, int d,
                                   const double* __restrict__ upper,
                                   const double* __restrict__ T1, double* __restrict__ K) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < cols; j += gridDim.y * blockDim.y) {
    double a = 1.0;
    for (int c = 0; c < d; ++c) {
      const double x = X[i + static_cast<std::size_t>(c) * rows];
      const double y = Y[j + static_cast<std::size_t>(c) * cols];
      a *= upper[c] - (x > y ? x : y);
    }
    const std::size_t at = static_cast<std::size_t>(j) * rows + i;
    K[at] += a * T1[at];
  }
}

// Grid for the column loops above: one thread per row, columns strided over at most 65535
// blocks.
dim3 grid_2d(long rows, long cols, dim3 block) {
  const long gy = (cols + block.y - 1) / block.y;
  return dim3(static_cast<unsigned>((rows + block.x - 1) / block.x),
              static_cast<unsigned>(gy < 65535 ? (gy > 0 ? gy : 1) : 65535));
}

// ---------------------------------------------------------------------------------------------
// Host helpers.

// Positive integer from the environment, or 0 when unset or not a positive integer.
long env_positive(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x <= 0) return 0;
  return x;
}

void free_workspace() {
  if (g.buf) cudaFree(g.buf);
  g.buf = nullptr;
  g.buf_bytes = 0;
}

void release_all() {
  free_workspace();
  if (g.solver) cusolverDnDestroy(g.solver);
  g.solver = nullptr;
  if (g.blas) cublasDestroy(g.blas);
  g.blas = nullptr;
  if (g.stream) cudaStreamDestroy(g.stream);
  g.stream = nullptr;
}

// Reason text for a failed cudaGetDeviceCount.
const char* count_failure_text(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice:
      return "no CUDA device";
    case cudaErrorInsufficientDriver:
      return "no CUDA driver found";
    case cudaErrorSystemDriverMismatch:
      return "CUDA driver and kernel module versions do not match";
    case cudaErrorCompatNotSupportedOnDevice:
      return "CUDA forward-compatibility is not supported on this device";
    case cudaErrorDevicesUnavailable:
      return "all CUDA devices are busy or unavailable";
    default:
      return "CUDA is not usable";
  }
}

// Selects device `device` and checks that this library has code for it. On success g.device is
// set; on failure all state is released.
int select_device(int device, char* name, int name_len, char* err, int err_len) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e == cudaErrorInsufficientDriver) {
      // 0 when no driver is installed at all.
      int drv = 0, rt = 0;
      cudaDriverGetVersion(&drv);
      cudaRuntimeGetVersion(&rt);
      if (drv > 0) {
        set_err(err, err_len,
                "the CUDA driver is too old: it supports CUDA %d.%d, this library needs CUDA "
                "%d.%d or a newer driver (%s)",
                drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, cudaGetErrorName(e));
        return 1;
      }
    }
    return cuda_fail(err, err_len, count_failure_text(e), e);
  }
  if (count <= 0) {
    set_err(err, err_len, "no CUDA device");
    return 1;
  }
  if (device < 0 || device >= count) {
    set_err(err, err_len, "CUDA device %d does not exist (%d device%s found)", device, count,
            count == 1 ? "" : "s");
    return 1;
  }
  cudaDeviceProp prop;
  KL_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cannot read CUDA device properties");
  int mode = cudaComputeModeDefault;
  KL_CUDA_TRY(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device),
              "cannot read the CUDA compute mode");
  if (mode == cudaComputeModeProhibited) {
    set_err(err, err_len, "CUDA device %d (%s) is in prohibited compute mode", device, prop.name);
    return 1;
  }
  e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context now, so failures show here
  if (e != cudaSuccess) {
    cudaGetLastError();
    set_err(err, err_len, "cannot use CUDA device %d (%s) (%s: %s)", device, prop.name,
            cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  // Fails with cudaErrorNoKernelImageForDevice when no build target fits this device.
  cudaFuncAttributes attr;
  e = cudaFuncGetAttributes(&attr, gaussian_finish);
  if (e != cudaSuccess) {
    cudaGetLastError();
    set_err(err, err_len,
            "no GPU code for CUDA device %d (%s, compute capability %d.%d) in this build (%s: %s)",
            device, prop.name, prop.major, prop.minor, cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  g.device = device;
  if (name && name_len > 0) {
    std::snprintf(name, static_cast<std::size_t>(name_len), "%s", prop.name);
    name[name_len - 1] = '\0';
  }
  return 0;
}

// Creates the stream and cuBLAS handle on the selected device if not there yet.
int ensure_blas(char* err, int err_len) {
  if (g.blas) return 0;
  if (!g.stream)
    KL_CUDA_TRY(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking),
                "cannot create a CUDA stream");
  cublasHandle_t h = nullptr;
  KL_BLAS_TRY(cublasCreate(&h), "cannot create the cuBLAS handle");
  const char* what = nullptr;
  cublasStatus_t s = cublasSetStream(h, g.stream);
  if (s != CUBLAS_STATUS_SUCCESS) what = "cannot set the cuBLAS stream";
  if (!what) {
    s = cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST);
    if (s != CUBLAS_STATUS_SUCCESS) what = "cannot set the cuBLAS pointer mode";
  }
  if (!what) {
    // Plain IEEE double GEMM: no fixed-point emulation of FP64.
    s = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) what = "cannot set the cuBLAS math mode";
  }
  if (what) {
    cublasDestroy(h);
    return blas_fail(err, err_len, what, s);
  }
  g.blas = h;
  return 0;
}

// Creates the cuSOLVER handle on the library's stream if not there yet (after ensure_blas).
int ensure_solver(char* err, int err_len) {
  if (g.solver) return 0;
  cusolverDnHandle_t h = nullptr;
  cusolverStatus_t s = cusolverDnCreate(&h);
  if (s != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cannot create the cuSOLVER handle", s);
  s = cusolverDnSetStream(h, g.stream);
  if (s != CUSOLVER_STATUS_SUCCESS) {
    cusolverDnDestroy(h);
    return solver_fail(err, err_len, "cannot set the cuSOLVER stream", s);
  }
  g.solver = h;
  return 0;
}

// Device memory owned for the length of one call.
struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

// Allocates `bytes` of device memory into b, or fills err and returns 1.
int device_alloc(DeviceBuffer* b, std::size_t bytes, const char* what, char* err, int err_len) {
  if (bytes == 0) bytes = 1;
  const cudaError_t e = cudaMalloc(&b->p, bytes);
  if (e != cudaSuccess) {
    b->p = nullptr;
    cudaGetLastError();
    set_err(err, err_len, "cannot allocate %.1f MiB of GPU memory for %s (%s: %s)",
            static_cast<double>(bytes) / 1048576.0, what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

// cuSOLVER's parameter object for one call.
struct SolverParams {
  cusolverDnParams_t p = nullptr;
  ~SolverParams() {
    if (p) cusolverDnDestroyParams(p);
  }
};

// A = L L' in place on the device (A n x n, leading dimension n, lower triangle; type CUDA_R_32F
// or CUDA_R_64F), with cuSOLVER's 64-bit potrf; dinfo is one int on the device. *h_info gets 0,
// or the order of the first leading minor that is not positive definite.
int device_potrf(void* A, int n, cudaDataType type, int* dinfo, int* h_info, char* err,
                 int err_len) {
  SolverParams params;
  cusolverStatus_t st = cusolverDnCreateParams(&params.p);
  if (st != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cannot create cuSOLVER parameters", st);
  std::size_t dev_bytes = 0, host_bytes = 0;
  st = cusolverDnXpotrf_bufferSize(g.solver, params.p, CUBLAS_FILL_MODE_LOWER, n, type, A, n, type,
                                   &dev_bytes, &host_bytes);
  if (st != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cuSOLVER potrf workspace query failed", st);
  DeviceBuffer work;
  if (device_alloc(&work, dev_bytes, "the factorisation's workspace", err, err_len) != 0) return 1;
  std::vector<unsigned char> host_work(host_bytes > 0 ? host_bytes : 1);
  st = cusolverDnXpotrf(g.solver, params.p, CUBLAS_FILL_MODE_LOWER, n, type, A, n, type, work.p,
                        dev_bytes, host_work.data(), host_bytes, dinfo);
  if (st != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cuSOLVER potrf failed", st);
  KL_CUDA_TRY(cudaMemcpyAsync(h_info, dinfo, sizeof(int), cudaMemcpyDeviceToHost, g.stream),
              "cannot copy the factorisation's status from the GPU");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "the GPU factorisation failed");
  if (*h_info < 0) {
    set_err(err, err_len, "cuSOLVER potrf rejected argument %d", -*h_info);
    return 1;
  }
  return 0;
}

// B := (L L')^-1 B on the device (L from device_potrf, B n x nrhs with leading dimension n, both
// of `type`), with cuSOLVER's 64-bit potrs.
int device_potrs(const void* L, int n, int nrhs, cudaDataType type, void* B, int* dinfo,
                 char* err, int err_len) {
  SolverParams params;
  cusolverStatus_t st = cusolverDnCreateParams(&params.p);
  if (st != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cannot create cuSOLVER parameters", st);
  st = cusolverDnXpotrs(g.solver, params.p, CUBLAS_FILL_MODE_LOWER, n, nrhs, type, L, n, type, B,
                        n, dinfo);
  if (st != CUSOLVER_STATUS_SUCCESS) return solver_fail(err, err_len, "cuSOLVER potrs failed", st);
  int h_info = 0;
  KL_CUDA_TRY(cudaMemcpyAsync(&h_info, dinfo, sizeof(int), cudaMemcpyDeviceToHost, g.stream),
              "cannot copy the solve's status from the GPU");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "the GPU solve failed");
  if (h_info != 0) {
    set_err(err, err_len, "cuSOLVER potrs rejected argument %d", -h_info);
    return 1;
  }
  return 0;
}

}  // namespace

// The device factor of kl_cuda_factor_create.
struct kl_cuda_factor {
  int n = 0;
  bool single = false;
  void* L = nullptr;  // n x n, float or double, lower triangle
  int* info = nullptr;
};

// The points of kl_cuda_rows_create on the device, and scratch space for kernel rows.
struct kl_cuda_rows {
  int n = 0, d = 0;
  KernelParams k{};
  double* X = nullptr;    // n x d, leading dimension n
  double* xn = nullptr;   // n squared norms
  void* scratch = nullptr;  // grows as needed by kl_cuda_rows_compute
  std::size_t scratch_bytes = 0;
  bool tree = false;        // the hierarchical Gaussian kernel (t) instead of k
  TreeParams t{};
  int* tree_int = nullptr;  // device copies of the tree: leaf flags, offsets, members
  double* tree_dbl = nullptr;  // weights, scales
  std::vector<int> tree_offsets;    // host copies: the offsets,
  std::vector<double> tree_factor;  // and -2 s_v w_m for every weight m of node v
};

namespace {

// Makes g.buf at least `bytes` long.
int ensure_workspace(std::size_t bytes, char* err, int err_len) {
  if (g.buf && g.buf_bytes >= bytes) return 0;
  free_workspace();
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    set_err(err, err_len, "cannot allocate %.1f MiB of GPU memory (%s: %s)",
            static_cast<double>(bytes) / 1048576.0, cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  g.buf = static_cast<double*>(p);
  g.buf_bytes = bytes;
  return 0;
}

// Doubles needed for a tile of tr rows of X and tc rows of Z: Z block and its norms, X tile and
// its norms, and the tr x tc result block.
std::size_t tile_doubles(std::size_t tr, std::size_t tc, std::size_t d) {
  return tc * d + tc + tr * d + tr + tr * tc;
}

// Chooses tile sizes so the workspace stays within `budget` bytes: all of Z when it fits in half
// of the budget, then as many rows of X as fit in the rest.
void choose_tiles(long n, long m, long d, std::size_t budget, long* tr_out, long* tc_out) {
  const std::size_t cap = budget / sizeof(double);
  const std::size_t per_row = static_cast<std::size_t>(d) + 1;
  long tc = m;
  if (static_cast<std::size_t>(m) * per_row > cap / 2) {
    tc = static_cast<long>((cap / 2) / per_row);
    if (tc < 1) tc = 1;
  }
  const long tc_env = env_positive("KL_CUDA_TILE_COLS");
  if (tc_env > 0 && tc_env < tc) tc = tc_env;

  const std::size_t used = static_cast<std::size_t>(tc) * per_row;
  long tr = 1;
  if (cap > used) {
    const std::size_t rows = (cap - used) / (per_row + static_cast<std::size_t>(tc));
    tr = rows > static_cast<std::size_t>(n) ? n : static_cast<long>(rows);
    if (tr < 1) tr = 1;
  }
  const long tr_env = env_positive("KL_CUDA_TILE_ROWS");
  if (tr_env > 0 && tr_env < tr) tr = tr_env;
  *tr_out = tr;
  *tc_out = tc;
}

// Copies rows r0 .. r0+nr-1 of columns c0 .. c0+nc-1 of the column-major host matrix src
// (leading dimension ld) into dst as an nr x nc matrix with leading dimension nr.
int upload_block(double* dst, const double* src, std::size_t ld, std::size_t r0, std::size_t c0,
                 std::size_t nr, std::size_t nc, const char* name, char* err, int err_len) {
  const std::size_t w = sizeof(double);
  const cudaError_t e = cudaMemcpy2DAsync(dst, nr * w, src + c0 * ld + r0, ld * w, nr * w, nc,
                                          cudaMemcpyHostToDevice, g.stream);
  if (e != cudaSuccess) {
    set_err(err, err_len, "cannot copy %s to the GPU (%s: %s)", name, cudaGetErrorName(e),
            cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

// Tile edges for C (m x n) = op(A) op(B) with inner dimension k: the whole problem when it fits
// in `budget` bytes (A and B blocks and the C block), else the largest edge is halved until it
// fits. KL_CUDA_GEMM_TILE caps every edge (for tests).
void choose_gemm_tiles(long m, long n, long k, std::size_t budget, long* tm, long* tn, long* tk) {
  long a = m, b = n, c = k;
  const long cap = env_positive("KL_CUDA_GEMM_TILE");
  if (cap > 0) {
    if (a > cap) a = cap;
    if (b > cap) b = cap;
    if (c > cap) c = cap;
  }
  const std::size_t words = budget / sizeof(double);
  auto need = [](long x, long y, long z) {
    const std::size_t X = static_cast<std::size_t>(x), Y = static_cast<std::size_t>(y),
                      Z = static_cast<std::size_t>(z);
    return Z * (X + Y) + X * Y;
  };
  while (need(a, b, c) > words && (a > 1 || b > 1 || c > 1)) {
    if (c >= a && c >= b) c = (c + 1) / 2;
    else if (a >= b) a = (a + 1) / 2;
    else b = (b + 1) / 2;
  }
  *tm = a;
  *tn = b;
  *tk = c;
}

}  // namespace

// Selects the device (initialising device 0 when nothing was selected yet), creates the cuBLAS
// handle, and returns in *budget the workspace bytes allowed: at most `cap` and half of the free
// memory (counting our own buffer, which would be reused). *free_out gets the free bytes.
static int prepare_call(std::size_t cap, std::size_t* budget, std::size_t* free_out, char* err,
                 int err_len) {
  if (g.device < 0) {
    char name[8];
    if (kl_cuda_init(0, name, sizeof(name), err, err_len) != 0) return 1;
  }
  cudaGetLastError();  // clear a stale, non-sticky error left by someone else
  KL_CUDA_TRY(cudaSetDevice(g.device), "cannot select the CUDA device");
  if (ensure_blas(err, err_len) != 0) return 1;
  std::size_t free_b = 0, total_b = 0;
  KL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), "cannot query free GPU memory");
  std::size_t b = static_cast<std::size_t>(kFreeFraction * static_cast<double>(free_b + g.buf_bytes));
  if (b > cap) b = cap;
  *budget = b;
  *free_out = free_b;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// C interface.

KL_EXPORT int kl_cuda_api_version(void) { return KL_CUDA_API_VERSION; }

KL_EXPORT int kl_cuda_init(int device, char* name, int name_len, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (name && name_len > 0) name[0] = '\0';
  // A new selection drops what belongs to the previous device.
  if (g.device >= 0 && g.device != device) release_all();
  g.device = -1;
  if (select_device(device, name, name_len, err, err_len) != 0) {
    release_all();
    return 1;
  }
  return 0;
}

KL_EXPORT int kl_cuda_gaussian_kernel(const double* X, int n, const double* Z, int m, int d,
                                      double gamma, double* K, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (n < 0 || m < 0 || d < 0) {
    set_err(err, err_len, "negative dimension (n = %d, m = %d, d = %d)", n, m, d);
    return 1;
  }
  if (!std::isfinite(gamma) || gamma <= 0.0) {
    set_err(err, err_len, "gamma must be finite and positive (got %g)", gamma);
    return 1;
  }
  if (n == 0 || m == 0) return 0;
  if (!K || (d > 0 && (!X || !Z))) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  if (d == 0) {  // every distance is 0
    const std::size_t total = static_cast<std::size_t>(n) * static_cast<std::size_t>(m);
    for (std::size_t k = 0; k < total; ++k) K[k] = 1.0;
    return 0;
  }

  // Workspace budget: at most 1 GiB and half of the free memory.
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;

  long tr = 0, tc = 0;
  choose_tiles(n, m, d, budget, &tr, &tc);
  const std::size_t D = static_cast<std::size_t>(d);
  const std::size_t TR = static_cast<std::size_t>(tr), TC = static_cast<std::size_t>(tc);
  const std::size_t need = tile_doubles(TR, TC, D) * sizeof(double);
  if (need > budget && need > free_b + g.buf_bytes) {
    set_err(err, err_len,
            "not enough GPU memory: one tile needs %.1f MiB, %.1f MiB free (d = %d too large)",
            static_cast<double>(need) / 1048576.0,
            static_cast<double>(free_b) / 1048576.0, d);
    return 1;
  }
  if (ensure_workspace(need, err, err_len) != 0) return 1;

  double* dZ = g.buf;            // tc x d
  double* dzn = dZ + TC * D;     // tc
  double* dX = dzn + TC;         // tr x d
  double* dxn = dX + TR * D;     // tr
  double* dG = dxn + TR;         // tr x tc

  const std::size_t ld_x = static_cast<std::size_t>(n) * sizeof(double);
  const std::size_t ld_z = static_cast<std::size_t>(m) * sizeof(double);
  const int threads_1d = 256;
  const double alpha = -2.0, beta = 0.0;

  for (long c0 = 0; c0 < m; c0 += tc) {
    const int cc = static_cast<int>((m - c0 < tc) ? (m - c0) : tc);
    // Z rows c0 .. c0+cc-1, all d columns: a cc x d block with source pitch m.
    KL_CUDA_TRY(cudaMemcpy2DAsync(dZ, static_cast<std::size_t>(cc) * sizeof(double), Z + c0, ld_z,
                                  static_cast<std::size_t>(cc) * sizeof(double), D,
                                  cudaMemcpyHostToDevice, g.stream),
                "cannot copy Z to the GPU");
    row_sqnorms<<<(cc + threads_1d - 1) / threads_1d, threads_1d, 0, g.stream>>>(dZ, cc, d, cc,
                                                                                 dzn);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the norm kernel");

    for (long r0 = 0; r0 < n; r0 += tr) {
      const int rr = static_cast<int>((n - r0 < tr) ? (n - r0) : tr);
      // When X fits in one tile it is uploaded once, for the first block of Z.
      if (c0 == 0 || tr < n) {
        KL_CUDA_TRY(cudaMemcpy2DAsync(dX, static_cast<std::size_t>(rr) * sizeof(double), X + r0,
                                      ld_x, static_cast<std::size_t>(rr) * sizeof(double), D,
                                      cudaMemcpyHostToDevice, g.stream),
                    "cannot copy X to the GPU");
        row_sqnorms<<<(rr + threads_1d - 1) / threads_1d, threads_1d, 0, g.stream>>>(dX, rr, d,
                                                                                     rr, dxn);
        KL_CUDA_TRY(cudaGetLastError(), "cannot launch the norm kernel");
      }
      // G (rr x cc) = -2 X_tile Z_block'; column-major, X_tile is rr x d (ld rr), Z_block is
      // cc x d (ld cc), G has ld rr.
      KL_BLAS_TRY(cublasDgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_T, rr, cc, d, &alpha, dX, rr, dZ,
                              cc, &beta, dG, rr),
                  "cuBLAS DGEMM failed");
      const dim3 block(32, 8);
      const long gy_need = (cc + 7) / 8;
      const dim3 grid(static_cast<unsigned>((rr + 31) / 32),
                      static_cast<unsigned>(gy_need < 65535 ? gy_need : 65535));
      gaussian_finish<<<grid, block, 0, g.stream>>>(dG, rr, cc, dxn, dzn, gamma);
      KL_CUDA_TRY(cudaGetLastError(), "cannot launch the Gaussian kernel");
      // Rows r0 .. r0+rr-1 of columns c0 .. c0+cc-1 of K (pitch n).
      KL_CUDA_TRY(cudaMemcpy2DAsync(K + static_cast<std::size_t>(c0) * n + r0, ld_x, dG,
                                    static_cast<std::size_t>(rr) * sizeof(double),
                                    static_cast<std::size_t>(rr) * sizeof(double),
                                    static_cast<std::size_t>(cc), cudaMemcpyDeviceToHost,
                                    g.stream),
                  "cannot copy K from the GPU");
      // The next tile reuses dX and dG; the stream keeps the order, no wait needed here.
    }
  }
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "GPU computation failed");
  return 0;
}

KL_EXPORT int kl_cuda_dgemm(int trans_a, int trans_b, int m, int n, int k, const double* A,
                            int lda, const double* B, int ldb, double* C, int ldc, char* err,
                            int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (m < 0 || n < 0 || k < 0) {
    set_err(err, err_len, "negative dimension (m = %d, n = %d, k = %d)", m, n, k);
    return 1;
  }
  const int rows_a = trans_a ? k : m, rows_b = trans_b ? n : k;
  if (lda < (rows_a > 1 ? rows_a : 1) || ldb < (rows_b > 1 ? rows_b : 1) ||
      ldc < (m > 1 ? m : 1)) {
    set_err(err, err_len, "leading dimension too small (lda = %d, ldb = %d, ldc = %d)", lda, ldb,
            ldc);
    return 1;
  }
  if (m == 0 || n == 0) return 0;
  if (!C || (k > 0 && (!A || !B))) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  if (k == 0) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) C[static_cast<std::size_t>(j) * ldc + i] = 0.0;
    return 0;
  }

  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxGemmWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  long tm = 0, tn = 0, tk = 0;
  choose_gemm_tiles(m, n, k, budget, &tm, &tn, &tk);
  const std::size_t TM = static_cast<std::size_t>(tm), TN = static_cast<std::size_t>(tn),
                    TK = static_cast<std::size_t>(tk);
  const std::size_t need = (TK * (TM + TN) + TM * TN) * sizeof(double);
  if (ensure_workspace(need, err, err_len) != 0) return 1;
  double* dA = g.buf;         // op(A) block: tm x tk (ld tm), or its transpose tk x tm (ld tk)
  double* dB = dA + TK * TM;  // op(B) block: tk x tn (ld tk), or its transpose tn x tk (ld tn)
  double* dC = dB + TK * TN;  // tm x tn (ld tm)
  const std::size_t w = sizeof(double);
  const std::size_t la = static_cast<std::size_t>(lda), lb = static_cast<std::size_t>(ldb),
                    lc = static_cast<std::size_t>(ldc);
  const double one = 1.0, zero = 0.0;
  const bool whole_a = tm == m && tk == k, whole_b = tn == n && tk == k;

  for (long j0 = 0; j0 < n; j0 += tn) {
    const std::size_t nn = static_cast<std::size_t>(n - j0 < tn ? n - j0 : tn);
    for (long i0 = 0; i0 < m; i0 += tm) {
      const std::size_t mm = static_cast<std::size_t>(m - i0 < tm ? m - i0 : tm);
      for (long k0 = 0; k0 < k; k0 += tk) {
        const std::size_t kk = static_cast<std::size_t>(k - k0 < tk ? k - k0 : tk);
        const std::size_t I0 = static_cast<std::size_t>(i0), J0 = static_cast<std::size_t>(j0),
                          K0 = static_cast<std::size_t>(k0);
        // Blocks of op(A) and op(B), uploaded once when the operand is not tiled.
        if (!whole_a || j0 == 0) {
          const int rc = trans_a ? upload_block(dA, A, la, K0, I0, kk, mm, "A", err, err_len)
                                 : upload_block(dA, A, la, I0, K0, mm, kk, "A", err, err_len);
          if (rc != 0) return rc;
        }
        if (!whole_b || (j0 == 0 && i0 == 0)) {
          const int rc = trans_b ? upload_block(dB, B, lb, J0, K0, nn, kk, "B", err, err_len)
                                 : upload_block(dB, B, lb, K0, J0, kk, nn, "B", err, err_len);
          if (rc != 0) return rc;
        }
        KL_BLAS_TRY(cublasDgemm(g.blas, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(mm),
                                static_cast<int>(nn), static_cast<int>(kk), &one, dA,
                                static_cast<int>(trans_a ? kk : mm), dB,
                                static_cast<int>(trans_b ? nn : kk), k0 == 0 ? &zero : &one, dC,
                                static_cast<int>(mm)),
                    "cuBLAS DGEMM failed");
      }
      KL_CUDA_TRY(cudaMemcpy2DAsync(C + static_cast<std::size_t>(j0) * lc + static_cast<std::size_t>(i0),
                                    lc * w, dC, mm * w, mm * w, nn, cudaMemcpyDeviceToHost,
                                    g.stream),
                  "cannot copy C from the GPU");
    }
  }
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "GPU computation failed");
  return 0;
}

KL_EXPORT int kl_cuda_cholesky_solve(double* A, int n, int lda, int write_factor, double* B,
                                     int nrhs, int ldb, int* info, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!info) {
    set_err(err, err_len, "null info pointer");
    return 1;
  }
  *info = 0;
  if (n < 0 || nrhs < 0) {
    set_err(err, err_len, "negative dimension (n = %d, nrhs = %d)", n, nrhs);
    return 1;
  }
  if (lda < (n > 1 ? n : 1) || (nrhs > 0 && ldb < (n > 1 ? n : 1))) {
    set_err(err, err_len, "leading dimension too small (lda = %d, ldb = %d, n = %d)", lda, ldb, n);
    return 1;
  }
  if (n == 0) return 0;
  if (!A || (nrhs > 0 && !B)) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  if (ensure_solver(err, err_len) != 0) return 1;
  // The cached workspace of the other routines is released: the factorisation wants the memory.
  free_workspace();

  const std::size_t N = static_cast<std::size_t>(n), R = static_cast<std::size_t>(nrhs);
  const std::size_t w = sizeof(double);
  DeviceBuffer dA, dB, dInfo;
  if (device_alloc(&dA, N * N * w, "the matrix", err, err_len) != 0) return 1;
  if (device_alloc(&dInfo, sizeof(int), "the status", err, err_len) != 0) return 1;
  if (R > 0 && device_alloc(&dB, N * R * w, "the right-hand sides", err, err_len) != 0) return 1;

  double* a = static_cast<double*>(dA.p);
  KL_CUDA_TRY(cudaMemcpy2DAsync(a, N * w, A, static_cast<std::size_t>(lda) * w, N * w, N,
                                cudaMemcpyHostToDevice, g.stream),
              "cannot copy the matrix to the GPU");
  int* dinfo = static_cast<int*>(dInfo.p);
  int h_info = 0;
  if (device_potrf(a, n, CUDA_R_64F, dinfo, &h_info, err, err_len) != 0) return 1;
  if (h_info > 0) {  // not positive definite: the caller reports it; A and B untouched
    *info = h_info;
    return 0;
  }
  if (R > 0) {
    double* b = static_cast<double*>(dB.p);
    KL_CUDA_TRY(cudaMemcpy2DAsync(b, N * w, B, static_cast<std::size_t>(ldb) * w, N * w, R,
                                  cudaMemcpyHostToDevice, g.stream),
                "cannot copy the right-hand sides to the GPU");
    if (device_potrs(a, n, nrhs, CUDA_R_64F, b, dinfo, err, err_len) != 0) return 1;
  }
  // Results back to the host only once everything has succeeded. The device copy of A keeps
  // the original strict upper triangle (potrf reads and writes the lower one only), so copying
  // the whole columns back leaves the host's upper triangle as it was.
  cudaError_t e = cudaSuccess;
  if (write_factor)
    e = cudaMemcpy2DAsync(A, static_cast<std::size_t>(lda) * w, a, N * w, N * w, N,
                          cudaMemcpyDeviceToHost, g.stream);
  if (e == cudaSuccess && R > 0)
    e = cudaMemcpy2DAsync(B, static_cast<std::size_t>(ldb) * w, dB.p, N * w, N * w, R,
                          cudaMemcpyDeviceToHost, g.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g.stream);
  if (e != cudaSuccess) {  // the host matrices may be partly written: no fallback possible
    cuda_fail(err, err_len, "cannot copy the results from the GPU", e);
    return 2;
  }
  return 0;
}

KL_EXPORT int kl_cuda_gram_f32(const float* X, long long n, int p, long long row_stride,
                               int block, double* G, int ldg, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (n < 0 || p < 0 || block < 1 || row_stride < p || ldg < (p > 1 ? p : 1)) {
    set_err(err, err_len, "bad dimensions (n = %lld, p = %d, row stride %lld, block %d, ldg %d)",
            n, p, row_stride, block, ldg);
    return 1;
  }
  if (p == 0) return 0;
  if (!G || (n > 0 && !X)) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t P = static_cast<std::size_t>(p), w = sizeof(double), wf = sizeof(float);
  // rows uploaded at a time: whole blocks, within the workspace budget
  long long per_chunk = static_cast<long long>(budget / (P * wf)) / block * block;
  if (per_chunk < block) per_chunk = block;
  if (per_chunk > n) per_chunk = (n + block - 1) / block * block;
  if (per_chunk < 1) per_chunk = block;
  DeviceBuffer dG, dC, dX;
  if (device_alloc(&dG, P * P * w, "the Gram matrix", err, err_len) != 0) return 1;
  if (device_alloc(&dC, P * P * wf, "a block's Gram matrix", err, err_len) != 0) return 1;
  if (device_alloc(&dX, static_cast<std::size_t>(per_chunk) * P * wf, "the rows", err, err_len) != 0)
    return 1;
  double* g_d = static_cast<double*>(dG.p);
  float* c_d = static_cast<float*>(dC.p);
  float* x_d = static_cast<float*>(dX.p);
  KL_CUDA_TRY(cudaMemsetAsync(g_d, 0, P * P * w, g.stream), "cannot clear the Gram matrix");
  const float one = 1.0f, zero = 0.0f;
  const dim3 tb(32, 8);
  for (long long r0 = 0; r0 < n; r0 += per_chunk) {
    const long long rows = (n - r0 < per_chunk) ? n - r0 : per_chunk;
    // rows r0 .. r0+rows-1: each a column of p floats of the p x rows column-major view
    KL_CUDA_TRY(cudaMemcpy2DAsync(x_d, P * wf, X + r0 * row_stride,
                                  static_cast<std::size_t>(row_stride) * wf, P * wf,
                                  static_cast<std::size_t>(rows), cudaMemcpyHostToDevice, g.stream),
                "cannot copy the rows to the GPU");
    for (long long b0 = 0; b0 < rows; b0 += block) {
      const int len = static_cast<int>((rows - b0 < block) ? rows - b0 : block);
      // C = X_b' X_b: with the rows as the columns of a p x len matrix, C = M M'
      KL_BLAS_TRY(cublasSsyrk(g.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, p, len, &one,
                              x_d + b0 * static_cast<long long>(P), p, &zero, c_d, p),
                  "cuBLAS SSYRK failed");
      add_lower_f32<<<grid_2d(p, p, tb), tb, 0, g.stream>>>(g_d, c_d, p);
      KL_CUDA_TRY(cudaGetLastError(), "cannot launch the Gram accumulation");
    }
  }
  // the lower triangle holds the sums; the upper one is 0
  KL_CUDA_TRY(cudaMemcpy2DAsync(G, static_cast<std::size_t>(ldg) * w, g_d, P * w, P * w, P,
                                cudaMemcpyDeviceToHost, g.stream),
              "cannot copy the Gram matrix from the GPU");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "the GPU Gram matrix failed");
  return 0;
}

KL_EXPORT void kl_cuda_factor_free(kl_cuda_factor* f) {
  if (!f) return;
  if (g.device >= 0) cudaSetDevice(g.device);
  if (f->L) cudaFree(f->L);
  if (f->info) cudaFree(f->info);
  delete f;
}

KL_EXPORT int kl_cuda_factor_create(const double* S, int n, int lds, double scale, double shift,
                                    int single, kl_cuda_factor** out, double* diag, int* info,
                                    char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!out || !info) {
    set_err(err, err_len, "null output pointer");
    return 1;
  }
  *out = nullptr;
  *info = 0;
  if (n < 1 || lds < n) {
    set_err(err, err_len, "bad dimensions (n = %d, lds = %d)", n, lds);
    return 1;
  }
  if (!S) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  if (ensure_solver(err, err_len) != 0) return 1;
  free_workspace();
  const std::size_t N = static_cast<std::size_t>(n), w = sizeof(double);
  const std::size_t wt = single ? sizeof(float) : sizeof(double);
  kl_cuda_factor* f = new kl_cuda_factor;
  f->n = n;
  f->single = single != 0;
  struct Owner {  // frees the factor unless released
    kl_cuda_factor* f;
    ~Owner() { kl_cuda_factor_free(f); }
  } owner{f};
  {
    void* L = nullptr;
    void* inf = nullptr;
    const cudaError_t e1 = cudaMalloc(&L, N * N * wt);
    if (e1 == cudaSuccess) f->L = L;
    const cudaError_t e2 = e1 == cudaSuccess ? cudaMalloc(&inf, sizeof(int)) : e1;
    if (e2 == cudaSuccess) f->info = static_cast<int*>(inf);
    if (e1 != cudaSuccess || e2 != cudaSuccess) {  // what was allocated is freed by the owner
      cudaGetLastError();
      set_err(err, err_len, "cannot allocate %.1f MiB of GPU memory for the factor (%s)",
              static_cast<double>(N * N * wt) / 1048576.0, cudaGetErrorName(e2));
      return 1;
    }
  }
  {
    DeviceBuffer dS;
    if (device_alloc(&dS, N * N * w, "the matrix", err, err_len) != 0) return 1;
    double* s_d = static_cast<double*>(dS.p);
    KL_CUDA_TRY(cudaMemcpy2DAsync(s_d, N * w, S, static_cast<std::size_t>(lds) * w, N * w, N,
                                  cudaMemcpyHostToDevice, g.stream),
                "cannot copy the matrix to the GPU");
    const dim3 tb(32, 8);
    if (f->single)
      scaled_shifted_lower<float><<<grid_2d(n, n, tb), tb, 0, g.stream>>>(
          static_cast<float*>(f->L), s_d, n, scale, shift);
    else
      scaled_shifted_lower<double><<<grid_2d(n, n, tb), tb, 0, g.stream>>>(
          static_cast<double*>(f->L), s_d, n, scale, shift);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the matrix preparation");
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "the matrix preparation failed");
  }
  const cudaDataType type = f->single ? CUDA_R_32F : CUDA_R_64F;
  int h_info = 0;
  if (device_potrf(f->L, n, type, f->info, &h_info, err, err_len) != 0) return 1;
  if (h_info > 0) {
    *info = h_info;
    return 0;
  }
  if (diag) {
    DeviceBuffer dD;
    if (device_alloc(&dD, N * w, "the diagonal", err, err_len) != 0) return 1;
    const int tb1 = 256;
    if (f->single)
      diagonal_of<float><<<(n + tb1 - 1) / tb1, tb1, 0, g.stream>>>(static_cast<float*>(f->L), n,
                                                                   static_cast<double*>(dD.p));
    else
      diagonal_of<double><<<(n + tb1 - 1) / tb1, tb1, 0, g.stream>>>(static_cast<double*>(f->L), n,
                                                                    static_cast<double*>(dD.p));
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the diagonal copy");
    KL_CUDA_TRY(cudaMemcpyAsync(diag, dD.p, N * w, cudaMemcpyDeviceToHost, g.stream),
                "cannot copy the diagonal from the GPU");
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "copying the diagonal failed");
  }
  owner.f = nullptr;
  *out = f;
  return 0;
}

KL_EXPORT int kl_cuda_factor_solve(kl_cuda_factor* f, double* B, int nrhs, int ldb, char* err,
                                   int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!f || !f->L) {
    set_err(err, err_len, "no factor");
    return 1;
  }
  const int n = f->n;
  if (nrhs < 0 || ldb < n) {
    set_err(err, err_len, "bad dimensions (nrhs = %d, ldb = %d, n = %d)", nrhs, ldb, n);
    return 1;
  }
  if (nrhs == 0) return 0;
  if (!B) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  if (ensure_solver(err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), R = static_cast<std::size_t>(nrhs);
  const std::size_t w = sizeof(double);
  DeviceBuffer dB, dBf;
  if (device_alloc(&dB, N * R * w, "the right-hand sides", err, err_len) != 0) return 1;
  double* b_d = static_cast<double*>(dB.p);
  KL_CUDA_TRY(cudaMemcpy2DAsync(b_d, N * w, B, static_cast<std::size_t>(ldb) * w, N * w, R,
                                cudaMemcpyHostToDevice, g.stream),
              "cannot copy the right-hand sides to the GPU");
  void* rhs = b_d;
  const int tb1 = 256;
  const unsigned nb = static_cast<unsigned>(std::min<std::size_t>((N * R + tb1 - 1) / tb1, 65535));
  if (f->single) {
    if (device_alloc(&dBf, N * R * sizeof(float), "the right-hand sides", err, err_len) != 0)
      return 1;
    convert<float, double><<<nb, tb1, 0, g.stream>>>(static_cast<float*>(dBf.p), b_d, N * R);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the conversion");
    rhs = dBf.p;
  }
  const cudaDataType type = f->single ? CUDA_R_32F : CUDA_R_64F;
  if (device_potrs(f->L, n, nrhs, type, rhs, f->info, err, err_len) != 0) return 1;
  if (f->single) {
    convert<double, float><<<nb, tb1, 0, g.stream>>>(b_d, static_cast<const float*>(rhs), N * R);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the conversion");
  }
  KL_CUDA_TRY(cudaMemcpy2DAsync(B, static_cast<std::size_t>(ldb) * w, b_d, N * w, N * w, R,
                                cudaMemcpyDeviceToHost, g.stream),
              "cannot copy the solution from the GPU");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "copying the solution failed");
  return 0;
}

KL_EXPORT void kl_cuda_rows_free(kl_cuda_rows* h) {
  if (!h) return;
  if (g.device >= 0) cudaSetDevice(g.device);
  if (h->X) cudaFree(h->X);
  if (h->xn) cudaFree(h->xn);
  if (h->scratch) cudaFree(h->scratch);
  if (h->tree_int) cudaFree(h->tree_int);
  if (h->tree_dbl) cudaFree(h->tree_dbl);
  delete h;
}

KL_EXPORT int kl_cuda_rows_create(const double* X, int n, int d, int ldx, int type, double gamma,
                                  double degree, double scale, double offset, kl_cuda_rows** out,
                                  char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!out) {
    set_err(err, err_len, "null output pointer");
    return 1;
  }
  *out = nullptr;
  if (n < 1 || d < 1 || ldx < n) {
    set_err(err, err_len, "bad dimensions (n = %d, d = %d, ldx = %d)", n, d, ldx);
    return 1;
  }
  if (!X) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  if (type < 0 || type > 3) {
    set_err(err, err_len, "unknown kernel type %d", type);
    return 1;
  }
  if (type == 3 && !(degree >= 1 && degree <= 1e6 && degree == std::floor(degree))) {
    set_err(err, err_len, "the polynomial degree must be a positive integer (got %g)", degree);
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), D = static_cast<std::size_t>(d);
  if ((N * D + N) * sizeof(double) > free_b) {
    set_err(err, err_len, "the %d x %d points (%.1f MiB) do not fit in the free GPU memory", n, d,
            static_cast<double>((N * D + N) * sizeof(double)) / 1048576.0);
    return 1;
  }
  kl_cuda_rows* h = new kl_cuda_rows;
  struct Owner {
    kl_cuda_rows* h;
    ~Owner() { kl_cuda_rows_free(h); }
  } owner{h};
  h->n = n;
  h->d = d;
  h->k.type = type;
  h->k.degree = type == 3 ? static_cast<int>(degree) : 1;
  h->k.gamma = gamma;
  h->k.scale = scale;
  h->k.offset = offset;
  {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, N * D * sizeof(double));
    if (e == cudaSuccess) h->X = static_cast<double*>(p);
    if (e == cudaSuccess) {
      e = cudaMalloc(&p, N * sizeof(double));
      if (e == cudaSuccess) h->xn = static_cast<double*>(p);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      set_err(err, err_len, "cannot allocate %.1f MiB of GPU memory for the points (%s)",
              static_cast<double>((N * D + N) * sizeof(double)) / 1048576.0, cudaGetErrorName(e));
      return 1;
    }
  }
  if (upload_block(h->X, X, static_cast<std::size_t>(ldx), 0, 0, N, D, "the points", err,
                   err_len) != 0)
    return 1;
  const int tb1 = 256;
  row_sqnorms<<<(n + tb1 - 1) / tb1, tb1, 0, g.stream>>>(h->X, n, d, n, h->xn);
  KL_CUDA_TRY(cudaGetLastError(), "cannot launch the norms");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "uploading the points failed");
  owner.h = nullptr;
  *out = h;
  return 0;
}

KL_EXPORT int kl_cuda_rows_create_tree(const double* X, int n, int d, int ldx, int nnodes,
                                       const int* leaf, const int* offsets, const int* members,
                                       const double* weights, const double* scales,
                                       kl_cuda_rows** out, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!out) {
    set_err(err, err_len, "null output pointer");
    return 1;
  }
  *out = nullptr;
  if (nnodes < 1 || nnodes > KL_CUDA_MAX_TREE_NODES) {
    set_err(err, err_len, "the tree has %d nodes (1 to %d are supported)", nnodes,
            KL_CUDA_MAX_TREE_NODES);
    return 1;
  }
  if (!leaf || !offsets || !members || !weights || !scales) {
    set_err(err, err_len, "null tree pointer");
    return 1;
  }
  if (offsets[0] != 0) {
    set_err(err, err_len, "the first offset must be 0");
    return 1;
  }
  for (int v = 0; v < nnodes; ++v) {
    if (offsets[v + 1] < offsets[v]) {
      set_err(err, err_len, "the offsets of node %d decrease", v);
      return 1;
    }
    for (int k = offsets[v]; k < offsets[v + 1]; ++k) {
      const int m = members[k];
      if (leaf[v] ? (m < 0 || m >= d) : (m < 0 || m >= v)) {
        set_err(err, err_len, "member %d of node %d is out of range", m, v);
        return 1;
      }
    }
  }
  // the points, with the Gaussian type as a placeholder for the norms
  kl_cuda_rows* h = nullptr;
  if (kl_cuda_rows_create(X, n, d, ldx, 0, 1.0, 1.0, 1.0, 0.0, &h, err, err_len) != 0) return 1;
  struct Owner {
    kl_cuda_rows* h;
    ~Owner() { kl_cuda_rows_free(h); }
  } owner{h};
  const int M = offsets[nnodes];
  const std::size_t ni = static_cast<std::size_t>(nnodes) + static_cast<std::size_t>(nnodes) + 1 +
                         static_cast<std::size_t>(M);
  const std::size_t nd = static_cast<std::size_t>(M) + static_cast<std::size_t>(nnodes);
  std::vector<int> hi(ni);
  std::vector<double> hd(nd);
  for (int v = 0; v < nnodes; ++v) hi[v] = leaf[v] ? 1 : 0;
  for (int v = 0; v <= nnodes; ++v) hi[nnodes + v] = offsets[v];
  for (int k = 0; k < M; ++k) hi[2 * nnodes + 1 + k] = members[k];
  for (int k = 0; k < M; ++k) hd[k] = weights[k];
  for (int v = 0; v < nnodes; ++v) hd[M + v] = scales[v];
  {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, ni * sizeof(int));
    if (e == cudaSuccess) h->tree_int = static_cast<int*>(p);
    if (e == cudaSuccess) {
      e = cudaMalloc(&p, nd * sizeof(double));
      if (e == cudaSuccess) h->tree_dbl = static_cast<double*>(p);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      set_err(err, err_len, "cannot allocate GPU memory for the tree (%s)", cudaGetErrorName(e));
      return 1;
    }
  }
  KL_CUDA_TRY(cudaMemcpyAsync(h->tree_int, hi.data(), ni * sizeof(int), cudaMemcpyHostToDevice,
                              g.stream),
              "cannot copy the tree to the GPU");
  KL_CUDA_TRY(cudaMemcpyAsync(h->tree_dbl, hd.data(), nd * sizeof(double), cudaMemcpyHostToDevice,
                              g.stream),
              "cannot copy the tree to the GPU");
  KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "copying the tree failed");
  h->tree = true;
  h->tree_offsets.assign(offsets, offsets + nnodes + 1);
  h->tree_factor.resize(static_cast<std::size_t>(M));
  for (int v = 0; v < nnodes; ++v)
    for (int k = offsets[v]; k < offsets[v + 1]; ++k) h->tree_factor[k] = -2.0 * scales[v] * weights[k];
  h->t.nnodes = nnodes;
  h->t.leaf = h->tree_int;
  h->t.offsets = h->tree_int + nnodes;
  h->t.members = h->tree_int + 2 * nnodes + 1;
  h->t.weights = h->tree_dbl;
  h->t.scales = h->tree_dbl + M;
  owner.h = nullptr;
  *out = h;
  return 0;
}

KL_EXPORT int kl_cuda_rows_compute(kl_cuda_rows* h, const int* idx, int count, float* out,
                                   long long ldo, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!h || !h->X) {
    set_err(err, err_len, "no points");
    return 1;
  }
  const int n = h->n, d = h->d;
  if (count < 0 || ldo < n) {
    set_err(err, err_len, "bad dimensions (count = %d, ldo = %lld, n = %d)", count, ldo, n);
    return 1;
  }
  if (count == 0) return 0;
  if (!idx || !out) {
    set_err(err, err_len, "null pointer");
    return 1;
  }
  for (int r = 0; r < count; ++r)
    if (idx[r] < 0 || idx[r] >= n) {
      set_err(err, err_len, "row index %d out of range (n = %d)", idx[r], n);
      return 1;
    }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), D = static_cast<std::size_t>(d);
  // rows per pass: the inner products (double) and the floats of up to `per` rows
  const std::size_t per_row = N * (sizeof(double) + sizeof(float)) + (D + 1) * sizeof(double) +
                              sizeof(int);
  std::size_t per = budget / per_row;
  if (per < 1) per = 1;
  if (per > static_cast<std::size_t>(count)) per = static_cast<std::size_t>(count);
  const long cap = env_positive("KL_CUDA_TILE_ROWS");
  if (cap > 0 && static_cast<std::size_t>(cap) < per) per = static_cast<std::size_t>(cap);
  const std::size_t need = per * per_row + 64;
  if (h->scratch_bytes < need) {
    if (h->scratch) cudaFree(h->scratch);
    h->scratch = nullptr;
    h->scratch_bytes = 0;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, need);
    if (e != cudaSuccess) {
      cudaGetLastError();
      set_err(err, err_len, "cannot allocate %.1f MiB of GPU memory for kernel rows (%s)",
              static_cast<double>(need) / 1048576.0, cudaGetErrorName(e));
      return 1;
    }
    h->scratch = p;
    h->scratch_bytes = need;
  }
  // layout: G (N x per doubles), Q (per x D), qn (per), rows (N x per floats), idx (per ints)
  double* G = static_cast<double*>(h->scratch);
  double* Q = G + N * per;
  double* qn = Q + per * D;
  float* F = reinterpret_cast<float*>(qn + per);
  int* di = reinterpret_cast<int*>(F + N * per);
  const double one = 1.0, zero = 0.0;
  for (int r0 = 0; r0 < count; r0 += static_cast<int>(per)) {
    const int c = static_cast<int>(std::min<std::size_t>(per, static_cast<std::size_t>(count - r0)));
    KL_CUDA_TRY(cudaMemcpyAsync(di, idx + r0, static_cast<std::size_t>(c) * sizeof(int),
                                cudaMemcpyHostToDevice, g.stream),
                "cannot copy the row indices to the GPU");
    const dim3 tg(32, 8);
    gather_rows<<<grid_2d(c, d, tg), tg, 0, g.stream>>>(h->X, n, d, h->xn, di, c, Q, qn);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the row gather");
    if (h->tree) {
      tree_block<float><<<grid_2d(n, c, tg), tg, 0, g.stream>>>(h->X, n, n, Q, c, c, h->t, F);
    } else {
      // G (n x c) = X Q'
      KL_BLAS_TRY(cublasDgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_T, n, c, d, &one, h->X, n, Q, c,
                              &zero, G, n),
                  "cuBLAS DGEMM failed");
      kernel_finish<float><<<grid_2d(n, c, tg), tg, 0, g.stream>>>(G, n, c, h->xn, qn, h->k, F);
    }
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the kernel rows");
    KL_CUDA_TRY(cudaMemcpy2DAsync(out + static_cast<std::size_t>(r0) * static_cast<std::size_t>(ldo),
                                  static_cast<std::size_t>(ldo) * sizeof(float), F,
                                  N * sizeof(float), N * sizeof(float), static_cast<std::size_t>(c),
                                  cudaMemcpyDeviceToHost, g.stream),
                "cannot copy the kernel rows from the GPU");
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "computing the kernel rows failed");
  }
  return 0;
}

KL_EXPORT int kl_cuda_rows_block(kl_cuda_rows* h, const double* Z, int m, int ldz, double* K,
                                 int ldk, char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!h || !h->X) {
    set_err(err, err_len, "no points");
    return 1;
  }
  const int n = h->n, d = h->d;
  if (m < 0 || ldz < m || ldk < m) {
    set_err(err, err_len, "bad dimensions (m = %d, ldz = %d, ldk = %d)", m, ldz, ldk);
    return 1;
  }
  if (m == 0) return 0;
  if (!Z || !K) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), D = static_cast<std::size_t>(d);
  // rows of Z per tile: the tile, its norms and its block of K
  std::size_t tm = (budget / sizeof(double)) / (D + 1 + N);
  if (tm < 1) tm = 1;
  if (tm > static_cast<std::size_t>(m)) tm = static_cast<std::size_t>(m);
  const long cap = env_positive("KL_CUDA_TILE_ROWS");
  if (cap > 0 && static_cast<std::size_t>(cap) < tm) tm = static_cast<std::size_t>(cap);
  if (ensure_workspace(tm * (D + 1 + N) * sizeof(double), err, err_len) != 0) return 1;
  double* Zt = g.buf;
  double* zn = Zt + tm * D;
  double* G = zn + tm;
  const double one = 1.0, zero = 0.0;
  const dim3 tg(32, 8);
  for (std::size_t r0 = 0; r0 < static_cast<std::size_t>(m); r0 += tm) {
    const std::size_t r = std::min(tm, static_cast<std::size_t>(m) - r0);
    const int ri = static_cast<int>(r);
    if (upload_block(Zt, Z, static_cast<std::size_t>(ldz), r0, 0, r, D, "the new points", err,
                     err_len) != 0)
      return 1;
    if (h->tree) {
      tree_block<double><<<grid_2d(ri, n, tg), tg, 0, g.stream>>>(Zt, ri, ri, h->X, n, n, h->t, G);
    } else {
      row_sqnorms<<<(ri + 255) / 256, 256, 0, g.stream>>>(Zt, ri, d, ri, zn);
      KL_CUDA_TRY(cudaGetLastError(), "cannot launch the norms");
      // G (r x n) = Zt X'
      KL_BLAS_TRY(cublasDgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_T, ri, n, d, &one, Zt, ri, h->X, n,
                              &zero, G, ri),
                  "cuBLAS DGEMM failed");
      kernel_finish<double><<<grid_2d(ri, n, tg), tg, 0, g.stream>>>(G, ri, n, zn, h->xn, h->k, G);
    }
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the kernel block");
    KL_CUDA_TRY(cudaMemcpy2DAsync(K + r0, static_cast<std::size_t>(ldk) * sizeof(double), G,
                                  r * sizeof(double), r * sizeof(double), N,
                                  cudaMemcpyDeviceToHost, g.stream),
                "cannot copy the kernel block from the GPU");
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "computing the kernel block failed");
  }
  return 0;
}

KL_EXPORT int kl_cuda_rows_tree_pass(kl_cuda_rows* h, const double* Z, int m, int ldz,
                                     int triangle, const double* V, int ldv, int L,
                                     const double* U, int ldu, double* KV, int ldkv, double* grad,
                                     char* err, int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (!h || !h->X || !h->tree || h->tree_offsets.empty()) {
    set_err(err, err_len, "the pass needs the points of a hierarchical kernel");
    return 1;
  }
  const int n = h->n, d = h->d;
  const int M = h->tree_offsets.back();
  if (L < 1 || L > KL_CUDA_MAX_TREE_OUTPUTS) {
    set_err(err, err_len, "%d outputs (1 to %d are supported)", L, KL_CUDA_MAX_TREE_OUTPUTS);
    return 1;
  }
  if (!V || ldv < n) {
    set_err(err, err_len, "bad column weights (ldv = %d, n = %d)", ldv, n);
    return 1;
  }
  if (triangle) {
    if (m != n || KV) {
      set_err(err, err_len, "a triangle pass runs over the held points and gives no row sums");
      return 1;
    }
  } else if (m < 0 || (m > 0 && (!Z || ldz < m))) {
    set_err(err, err_len, "bad new points (m = %d, ldz = %d)", m, ldz);
    return 1;
  }
  if (KV && ldkv < m) {
    set_err(err, err_len, "bad row sums (ldkv = %d, m = %d)", ldkv, m);
    return 1;
  }
  if (grad && (!U || ldu < m)) {
    set_err(err, err_len, "the derivatives need the row factors U (ldu >= m)");
    return 1;
  }
  if (grad && M > KL_CUDA_MAX_TREE_WEIGHTS) {
    set_err(err, err_len, "the tree has %d weights (at most %d for derivatives)", M,
            KL_CUDA_MAX_TREE_WEIGHTS);
    return 1;
  }
  if (!KV && !grad) return 0;
  if (m == 0) {
    if (grad)
      for (int k = 0; k < M; ++k) grad[k] = 0.0;
    return 0;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), D = static_cast<std::size_t>(d),
                    LL = static_cast<std::size_t>(L);
  const int nw = grad ? M : 0;
  // Rows of Z per tile, and the column chunks of a tile: enough blocks to fill the device
  // (about 2048 of kPassThreads threads), chunks of at least 32 columns.
  auto chunks_of = [&](std::size_t tm) {
    const std::size_t rb = (tm + kPassThreads - 1) / kPassThreads;
    std::size_t nch = (2048 + rb - 1) / rb;
    const std::size_t most = (N + 31) / 32;
    if (nch > most) nch = most;
    if (nch < 1) nch = 1;
    const std::size_t chunk = (N + nch - 1) / nch;
    return std::make_pair((N + chunk - 1) / chunk, chunk);
  };
  auto doubles_of = [&](std::size_t tm) {
    const std::size_t nch = chunks_of(tm).first;
    const std::size_t blocks = (tm + kPassThreads - 1) / kPassThreads * nch;
    return N * LL + tm * LL + (triangle ? 0 : tm * D) + (KV ? (nch + 1) * tm * LL : 0) +
           blocks * static_cast<std::size_t>(nw);
  };
  std::size_t tm = std::min<std::size_t>(static_cast<std::size_t>(m), std::size_t(1) << 16);
  const long cap = env_positive("KL_CUDA_TILE_ROWS");
  if (cap > 0 && static_cast<std::size_t>(cap) < tm) tm = static_cast<std::size_t>(cap);
  while (tm > 1 && doubles_of(tm) * sizeof(double) > budget) tm = (tm + 1) / 2;
  if (ensure_workspace(doubles_of(tm) * sizeof(double), err, err_len) != 0) return 1;
  const std::size_t nch = chunks_of(tm).first, chunk = chunks_of(tm).second;
  double* Vd = g.buf;
  double* Ut = Vd + N * LL;
  double* Zt = Ut + tm * LL;
  double* kvp = Zt + (triangle ? 0 : tm * D);
  double* kvs = kvp + (KV ? nch * tm * LL : 0);
  double* gp = kvs + (KV ? tm * LL : 0);
  if (upload_block(Vd, V, static_cast<std::size_t>(ldv), 0, 0, N, LL, "the column weights", err,
                   err_len) != 0)
    return 1;
  std::vector<double> kv_host(KV ? static_cast<std::size_t>(m) * LL : 0);
  std::vector<double> gsum(static_cast<std::size_t>(nw), 0.0), gblk;
  for (std::size_t r0 = 0; r0 < static_cast<std::size_t>(m); r0 += tm) {
    const std::size_t r = std::min(tm, static_cast<std::size_t>(m) - r0);
    const int ri = static_cast<int>(r);
    const double* A = nullptr;
    int lda = 0;
    if (triangle) {
      A = h->X + r0;
      lda = n;
    } else {
      if (upload_block(Zt, Z, static_cast<std::size_t>(ldz), r0, 0, r, D, "the new points", err,
                       err_len) != 0)
        return 1;
      A = Zt;
      lda = ri;
    }
    if (grad && upload_block(Ut, U, static_cast<std::size_t>(ldu), r0, 0, r, LL,
                             "the row factors", err, err_len) != 0)
      return 1;
    const dim3 grid(static_cast<unsigned>((r + kPassThreads - 1) / kPassThreads),
                    static_cast<unsigned>(nch));
    const int ch = static_cast<int>(chunk), r0i = static_cast<int>(r0);
    if (KV && grad)
      tree_pass<true, true><<<grid, kPassThreads, 0, g.stream>>>(
          A, ri, lda, h->X, n, n, h->t, nw, ch, triangle, r0i, Vd, n, L, Ut, ri, kvp, gp);
    else if (KV)
      tree_pass<true, false><<<grid, kPassThreads, 0, g.stream>>>(
          A, ri, lda, h->X, n, n, h->t, 0, ch, triangle, r0i, Vd, n, L, nullptr, ri, kvp, nullptr);
    else
      tree_pass<false, true><<<grid, kPassThreads, 0, g.stream>>>(
          A, ri, lda, h->X, n, n, h->t, nw, ch, triangle, r0i, Vd, n, L, Ut, ri, nullptr, gp);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the hierarchical kernel pass");
    if (KV) {
      const std::size_t q = r * LL;
      const int nb = static_cast<int>(std::min<std::size_t>((q + 255) / 256, 65535));
      sum_chunks<<<nb, 256, 0, g.stream>>>(kvp, ri, L, static_cast<int>(nch), kvs);
      KL_CUDA_TRY(cudaGetLastError(), "cannot launch the sums of the pass");
      KL_CUDA_TRY(cudaMemcpy2DAsync(kv_host.data() + r0, static_cast<std::size_t>(m) * sizeof(double),
                                    kvs, r * sizeof(double), r * sizeof(double), LL,
                                    cudaMemcpyDeviceToHost, g.stream),
                  "cannot copy the row sums from the GPU");
    }
    if (grad) {
      const std::size_t blocks = static_cast<std::size_t>(grid.x) * grid.y;
      gblk.resize(blocks * static_cast<std::size_t>(nw));
      KL_CUDA_TRY(cudaMemcpyAsync(gblk.data(), gp, gblk.size() * sizeof(double),
                                  cudaMemcpyDeviceToHost, g.stream),
                  "cannot copy the derivative sums from the GPU");
    }
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "the hierarchical kernel pass failed");
    if (grad) {
      const std::size_t blocks = gblk.size() / static_cast<std::size_t>(std::max(nw, 1));
      for (std::size_t b = 0; b < blocks; ++b)
        for (int k = 0; k < nw; ++k) gsum[k] += gblk[b * nw + k];
    }
  }
  if (KV)
    for (std::size_t l = 0; l < LL; ++l)
      for (std::size_t i = 0; i < static_cast<std::size_t>(m); ++i)
        KV[i + l * static_cast<std::size_t>(ldkv)] = kv_host[i + l * static_cast<std::size_t>(m)];
  if (grad)
    for (int k = 0; k < nw; ++k) grad[k] = gsum[k] * h->tree_factor[k];
  return 0;
}

KL_EXPORT int kl_cuda_tessellated_block(const double* X, const double* F, const double* G,
                                        int n, const double* Y, const double* Zm,
                                        const double* Zt, int m, int d, int h,
                                        const double* upper, double* K, int ldk, char* err,
                                        int err_len) {
  if (err && err_len > 0) err[0] = '\0';
  if (n < 0 || m < 0 || d < 1 || h < 1 || ldk < n) {
    set_err(err, err_len, "bad dimensions (n = %d, m = %d, d = %d, h = %d, ldk = %d)", n, m, d,
            h, ldk);
    return 1;
  }
  if (n == 0 || m == 0) return 0;
  if (!X || !F || !G || !Y || !Zm || !Zt || !upper || !K) {
    set_err(err, err_len, "null matrix pointer");
    return 1;
  }
  std::size_t budget = 0, free_b = 0;
  if (prepare_call(kMaxWorkspaceBytes, &budget, &free_b, err, err_len) != 0) return 1;
  const std::size_t N = static_cast<std::size_t>(n), M = static_cast<std::size_t>(m),
                    D = static_cast<std::size_t>(d), H = static_cast<std::size_t>(h);
  // held: Y, Zm, Zt and the bounds; per row of a tile of X: its point, F and G rows, the
  // product T1 and the block of K
  const std::size_t held = M * (D + 3 * H) + D;
  const std::size_t per_row = D + 3 * H + 2 * M;
  const std::size_t words = budget / sizeof(double);
  if (words <= held + per_row) {
    set_err(err, err_len, "the points do not fit in the GPU memory allowed (%.1f MiB)",
            static_cast<double>(budget) / 1048576.0);
    return 1;
  }
  std::size_t tr = (words - held) / per_row;
  if (tr > N) tr = N;
  const long cap = env_positive("KL_CUDA_TILE_ROWS");
  if (cap > 0 && static_cast<std::size_t>(cap) < tr) tr = static_cast<std::size_t>(cap);
  if (ensure_workspace((held + tr * per_row) * sizeof(double), err, err_len) != 0) return 1;
  double* Yd = g.buf;
  double* Zmd = Yd + M * D;
  double* Ztd = Zmd + M * H;
  double* up = Ztd + M * 2 * H;
  double* Xt = up + D;
  double* Ft = Xt + tr * D;
  double* Gt = Ft + tr * H;
  double* T1 = Gt + tr * 2 * H;
  double* Kt = T1 + tr * M;
  if (upload_block(Yd, Y, M, 0, 0, M, D, "the points", err, err_len) != 0 ||
      upload_block(Zmd, Zm, M, 0, 0, M, H, "the monomials", err, err_len) != 0 ||
      upload_block(Ztd, Zt, M, 0, 0, M, 2 * H, "the monomials", err, err_len) != 0 ||
      upload_block(up, upper, D, 0, 0, D, 1, "the box", err, err_len) != 0)
    return 1;
  const double one = 1.0, zero = 0.0;
  const dim3 tg(32, 8);
  for (std::size_t r0 = 0; r0 < N; r0 += tr) {
    const std::size_t r = std::min(tr, N - r0);
    const int ri = static_cast<int>(r);
    if (upload_block(Xt, X, N, r0, 0, r, D, "the points", err, err_len) != 0 ||
        upload_block(Ft, F, N, r0, 0, r, H, "the factors", err, err_len) != 0 ||
        upload_block(Gt, G, N, r0, 0, r, 2 * H, "the factors", err, err_len) != 0)
      return 1;
    // T1 (r x m) = F Zm', K (r x m) = G Zt'
    KL_BLAS_TRY(cublasDgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_T, ri, m, h, &one, Ft, ri, Zmd, m,
                            &zero, T1, ri),
                "cuBLAS DGEMM failed");
    KL_BLAS_TRY(cublasDgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_T, ri, m, 2 * h, &one, Gt, ri, Ztd, m,
                            &zero, Kt, ri),
                "cuBLAS DGEMM failed");
    tessellated_finish<<<grid_2d(ri, m, tg), tg, 0, g.stream>>>(Xt, ri, Yd, m, d, up, T1, Kt);
    KL_CUDA_TRY(cudaGetLastError(), "cannot launch the tessellated kernel block");
    KL_CUDA_TRY(cudaMemcpy2DAsync(K + r0, static_cast<std::size_t>(ldk) * sizeof(double), Kt,
                                  r * sizeof(double), r * sizeof(double), M,
                                  cudaMemcpyDeviceToHost, g.stream),
                "cannot copy the kernel block from the GPU");
    KL_CUDA_TRY(cudaStreamSynchronize(g.stream), "computing the kernel block failed");
  }
  return 0;
}

KL_EXPORT void kl_cuda_release(void) {
  if (g.device < 0 && !g.blas && !g.stream && !g.buf) return;
  if (g.device >= 0) cudaSetDevice(g.device);
  release_all();
  g.device = -1;
  cudaGetLastError();
}
