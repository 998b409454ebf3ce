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

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kl_cuda_api.h"

#define KL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------
// State kept between calls (single caller thread).

struct State {
  int device = -1;               // selected device, -1 before a successful kl_cuda_init
  cudaStream_t stream = nullptr;  // created with the cuBLAS handle
  cublasHandle_t blas = nullptr;  // created lazily on the first kernel call
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

KL_EXPORT void kl_cuda_release(void) {
  if (g.device < 0 && !g.blas && !g.stream && !g.buf) return;
  if (g.device >= 0) cudaSetDevice(g.device);
  release_all();
  g.device = -1;
  cudaGetLastError();
}
