// Parity check of the GPU library against the package's CPU core.
//
// Generates X (n x d) and Z (m x d) uniform on [0, 1] and checks
//   kernel: K = exp(-gamma ||x - z||^2) from kl::kernel_matrix (Eigen + OpenMP, the vectorised
//           cross products) against kl_cuda_gaussian_kernel;
//   gemm:   X Z' (n x m) and X' Y (d x m, Y n x m) from the CPU core's matrix-product kernels
//           (kl::gemm_parallel, or Eigen on processors without them), and from a plain Eigen
//           product, against kl_cuda_dgemm; also on blocks of larger matrices (leading
//           dimensions above the row counts) and with k = 0;
// with kernlearn_cuda.so loaded with dlopen, as the package does. It prints the largest
// differences and the timings, and exits with
//   0  difference within the tolerance
//   1  difference above the tolerance, or a failed GPU call
//   2  no usable GPU (library not loadable, no driver, no device)
//   3  bad command line
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "base/common.hpp"
#include "base/rng.hpp"
#include "kernels/standard.hpp"
#include "linalg/simd.hpp"
#include "../../src/cuda/kl_cuda_api.h"

namespace {

using fn_version = int (*)();
using fn_init = int (*)(int, char*, int, char*, int);
using fn_gauss = int (*)(const double*, int, const double*, int, int, double, double*, char*, int);
using fn_release = void (*)();
using fn_gemm = int (*)(int, int, int, int, int, const double*, int, const double*, int, double*,
                        int, char*, int);

struct Options {
  long n = 5000, m = 2000, d = 784;
  double gamma = -1.0;  // default 1 / d
  long tile_rows = 0, tile_cols = 0;
  int threads = 0;      // default: all cores
  int device = 0;
  int reps = 3;
  unsigned long long seed = 42;
  double tol = 1e-10;
  std::string lib;
  std::string op = "all";  // kernel, gemm or all
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--m M] [--d D] [--gamma G] [--tile-rows R] [--tile-cols C]\n"
               "          [--threads T] [--device I] [--reps R] [--seed S] [--tol E] [--lib PATH]\n"
               "          [--op kernel|gemm|all] [--gemm-tile T]\n"
               "defaults: n 5000, m 2000, d 784, gamma 1/d, tolerance 1e-10 (kernel entries;\n"
               "products: 1e-12 relative to their largest entry), op all, the library\n"
               "kernlearn_cuda.so next to this program. --tile-rows / --tile-cols set\n"
               "KL_CUDA_TILE_ROWS / KL_CUDA_TILE_COLS, --gemm-tile sets KL_CUDA_GEMM_TILE,\n"
               "to force small GPU tiles.\n",
               prog);
}

bool parse_long(const char* s, long lo, long* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo) return false;
  *out = v;
  return true;
}

bool parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "missing value after %s\n", a.c_str());
      return false;
    }
    const char* v = argv[++i];
    long x = 0;
    bool ok = true;
    if (a == "--n") ok = parse_long(v, 1, &o->n);
    else if (a == "--m") ok = parse_long(v, 1, &o->m);
    else if (a == "--d") ok = parse_long(v, 1, &o->d);
    else if (a == "--tile-rows") ok = parse_long(v, 1, &o->tile_rows);
    else if (a == "--tile-cols") ok = parse_long(v, 1, &o->tile_cols);
    else if (a == "--threads") { ok = parse_long(v, 1, &x); o->threads = static_cast<int>(x); }
    else if (a == "--device") { ok = parse_long(v, 0, &x); o->device = static_cast<int>(x); }
    else if (a == "--reps") { ok = parse_long(v, 1, &x); o->reps = static_cast<int>(x); }
    else if (a == "--seed") { ok = parse_long(v, 0, &x); o->seed = static_cast<unsigned long long>(x); }
    else if (a == "--gamma" || a == "--tol") {
      char* end = nullptr;
      const double g = std::strtod(v, &end);
      ok = end != v && *end == '\0' && std::isfinite(g) && g > 0;
      (a == "--gamma" ? o->gamma : o->tol) = g;
    } else if (a == "--lib") o->lib = v;
    else if (a == "--op") {
      o->op = v;
      ok = o->op == "kernel" || o->op == "gemm" || o->op == "all";
    } else if (a == "--gemm-tile") {
      ok = parse_long(v, 1, &x);
      if (ok) setenv("KL_CUDA_GEMM_TILE", std::to_string(x).c_str(), 1);
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad value for %s: %s\n", a.c_str(), v);
      return false;
    }
  }
  const long lim = std::numeric_limits<int>::max();
  if (o->n > lim || o->m > lim || o->d > lim) {
    std::fprintf(stderr, "n, m and d must fit in an int\n");
    return false;
  }
  if (o->gamma <= 0) o->gamma = 1.0 / static_cast<double>(o->d);
  return true;
}

// kernlearn_cuda.so in the directory of this executable.
std::string default_lib_path() {
  char buf[4096];
  const ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (len <= 0) return "./kernlearn_cuda.so";
  buf[len] = '\0';
  std::string p(buf);
  const std::size_t slash = p.rfind('/');
  return (slash == std::string::npos ? std::string(".") : p.substr(0, slash)) + "/kernlearn_cuda.so";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int no_gpu(const std::string& why) {
  std::printf("no usable GPU: %s\n", why.c_str());
  return 2;
}

// Gaussian kernel matrix: the CPU core against kl_cuda_gaussian_kernel.
int check_kernel(const Options& o, fn_gauss gauss, const kl::Mat& X, const kl::Mat& Z,
                 kl::Rng& rng) {
  char err[512] = {0};
  std::printf("kernel matrix:\n");
  // --- CPU reference.
  kl::KernelSpec spec;
  spec.type = kl::KernelType::Gaussian;
  spec.gamma = o.gamma;
  kl::Mat Kc(o.n, o.m);
  auto t0 = std::chrono::steady_clock::now();
  try {
    kl::kernel_matrix(spec, X, Z, Kc, o.threads);
  } catch (const std::exception& e) {
    std::printf("FAIL: CPU kernel_matrix: %s\n", e.what());
    return 1;
  }
  const double t_cpu = seconds_since(t0);

  // --- GPU: the first call includes the cuBLAS handle and workspace set-up.
  kl::Mat Kg(o.n, o.m);
  double t_first = 0, t_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= o.reps; ++r) {
    Kg.setConstant(std::numeric_limits<double>::quiet_NaN());  // unwritten entries show up
    err[0] = '\0';
    t0 = std::chrono::steady_clock::now();
    const int rc = gauss(X.data(), static_cast<int>(o.n), Z.data(), static_cast<int>(o.m),
                         static_cast<int>(o.d), o.gamma, Kg.data(), err, sizeof(err));
    const double t = seconds_since(t0);
    if (rc != 0) {
      std::printf("FAIL: kl_cuda_gaussian_kernel: %s\n", err[0] ? err : "no reason given");
      return 1;
    }
    if (r == 0) t_first = t;
    else t_best = std::min(t_best, t);
  }

  // --- Compare.
  double max_diff = 0.0;
  long bad = 0, arg_i = 0, arg_j = 0;
  for (Eigen::Index j = 0; j < Kg.cols(); ++j)
    for (Eigen::Index i = 0; i < Kg.rows(); ++i) {
      const double a = Kg(i, j), b = Kc(i, j);
      if (!std::isfinite(a) || !std::isfinite(b)) {
        ++bad;
        continue;
      }
      const double df = std::fabs(a - b);
      if (df > max_diff) {
        max_diff = df;
        arg_i = static_cast<long>(i);
        arg_j = static_cast<long>(j);
      }
    }
  // Spot check of both against the direct formula.
  double spot = 0.0;
  for (int s = 0; s < 1000; ++s) {
    const Eigen::Index i = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(o.n)));
    const Eigen::Index j = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(o.m)));
    const double ref = kl::kernel_value(spec, X.data() + i, o.n, Z.data() + j, o.m,
                                        static_cast<int>(o.d));
    spot = std::max(spot, std::max(std::fabs(Kg(i, j) - ref), std::fabs(Kc(i, j) - ref)));
  }

  const double gb = 8.0 * static_cast<double>(o.n) * static_cast<double>(o.m) / 1e9;
  std::printf("CPU kernel_matrix: %.3f s\n", t_cpu);
  std::printf("GPU first call:    %.3f s (with cuBLAS set-up)\n", t_first);
  std::printf("GPU best of %d:     %.3f s (%.2f GB of K, %.1fx the CPU)\n", o.reps, t_best, gb,
              t_cpu / t_best);
  std::printf("max |K_gpu - K_cpu| = %.3e at (%ld, %ld); non-finite entries: %ld\n", max_diff,
              arg_i, arg_j, bad);
  std::printf("spot check against the direct formula (1000 entries): max diff %.3e\n", spot);
  if (bad > 0 || !(max_diff <= o.tol)) {
    std::printf("FAIL: difference above the tolerance %.1e\n", o.tol);
    return 1;
  }
  std::printf("OK (tolerance %.1e)\n", o.tol);
  return 0;
}

// Largest |a - b| over two matrices of the same shape, and the number of non-finite entries.
double max_abs_diff(const kl::Mat& a, const kl::Mat& b, long* bad) {
  double m = 0.0;
  for (Eigen::Index j = 0; j < a.cols(); ++j)
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
      if (!std::isfinite(a(i, j)) || !std::isfinite(b(i, j))) {
        ++*bad;
        continue;
      }
      m = std::max(m, std::fabs(a(i, j) - b(i, j)));
    }
  return m;
}

// One product through kl_cuda_dgemm, checked against a reference. C_gpu starts as NaN so that
// unwritten entries show up. Returns 0 when the largest difference is at most tol times the
// largest |entry| of the reference.
int compare_product(const char* what, const kl::Mat& ref, const kl::Mat& got, double tol) {
  long bad = 0;
  const double diff = max_abs_diff(got, ref, &bad);
  const double scale = std::max(ref.size() ? ref.cwiseAbs().maxCoeff() : 0.0, 1e-300);
  std::printf("  %-44s max diff %.3e (relative %.3e); non-finite %ld\n", what, diff,
              diff / scale, bad);
  if (bad > 0 || !(diff <= tol * scale)) {
    std::printf("FAIL: %s above the tolerance %.1e\n", what, tol);
    return 1;
  }
  return 0;
}

// Matrix products: kl_cuda_dgemm against the CPU core's kernels and a plain Eigen product.
int check_gemm(const Options& o, fn_gemm gemm, const kl::Mat& X, const kl::Mat& Z, kl::Rng& rng) {
  const double tol = 1e-12;
  char err[512] = {0};
  const int n = static_cast<int>(o.n), m = static_cast<int>(o.m), d = static_cast<int>(o.d);
  const char* tile_env = std::getenv("KL_CUDA_GEMM_TILE");
  std::printf("products (tiles: %s):\n", tile_env ? tile_env : "auto");
  {
    double one = 1.0, c = 0.0;
    if (gemm(0, 0, -1, 1, 1, &one, 1, &one, 1, &c, 1, err, sizeof(err)) == 0 || !err[0]) {
      std::printf("FAIL: a negative dimension was not rejected\n");
      return 1;
    }
    err[0] = '\0';
    if (gemm(0, 0, 2, 1, 1, &one, 1, &one, 1, &c, 2, err, sizeof(err)) == 0 || !err[0]) {
      std::printf("FAIL: a leading dimension below the row count was not rejected\n");
      return 1;
    }
  }
  const kl::SimdLevel level = kl::simd_level();
  std::printf("  CPU kernel level: %s\n", level == kl::SimdLevel::avx512 ? "avx512"
                                          : level == kl::SimdLevel::avx2 ? "avx2" : "none (Eigen)");
  auto cpu_nt = [&](const kl::Mat& A, const kl::Mat& B) {  // A B'
    kl::Mat C(A.rows(), B.rows());
    if (level != kl::SimdLevel::none)
      kl::gemm_parallel(level, A.rows(), B.rows(), A.cols(), A.data(), 1, A.outerStride(),
                        B.data(), B.outerStride(), 1, C.data(), C.outerStride(), o.threads);
    else
      C.noalias() = A * B.transpose();
    return C;
  };
  auto cpu_tn = [&](const kl::Mat& A, const kl::Mat& B) {  // A' B
    kl::Mat C(A.cols(), B.cols());
    if (level != kl::SimdLevel::none)
      kl::gemm_parallel(level, A.cols(), B.cols(), A.rows(), A.data(), A.outerStride(), 1,
                        B.data(), 1, B.outerStride(), C.data(), C.outerStride(), o.threads);
    else
      C.noalias() = A.transpose() * B;
    return C;
  };
  auto nan_mat = [](Eigen::Index r, Eigen::Index c) {
    return kl::Mat::Constant(r, c, std::numeric_limits<double>::quiet_NaN());
  };
  int status = 0;

  // X Z' (n x m), as dikl's Nystrom and Fourier maps use it.
  auto t0 = std::chrono::steady_clock::now();
  const kl::Mat Cnt = cpu_nt(X, Z);
  const double t_cpu_nt = seconds_since(t0);
  kl::Mat Gnt = nan_mat(n, m);
  double t_first = 0, t_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= o.reps; ++r) {
    t0 = std::chrono::steady_clock::now();
    if (gemm(0, 1, n, m, d, X.data(), n, Z.data(), m, Gnt.data(), n, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_dgemm (X Z'): %s\n", err[0] ? err : "no reason given");
      return 1;
    }
    const double t = seconds_since(t0);
    if (r == 0) t_first = t;
    else t_best = std::min(t_best, t);
  }
  std::printf("  X Z' (%d x %d, k = %d): CPU %.3f s, GPU first %.3f s, best of %d %.3f s "
              "(with transfers)\n", n, m, d, t_cpu_nt, t_first, o.reps, t_best);
  status |= compare_product("X Z' against the CPU kernels", Cnt, Gnt, tol);
  const kl::Mat Ent = X * Z.transpose();
  status |= compare_product("X Z' against Eigen", Ent, Gnt, tol);

  // X' Y (d x m) with Y (n x m), the shape of the gradients' reductions over rows.
  kl::Mat Y(n, m);
  for (Eigen::Index j = 0; j < Y.cols(); ++j)
    for (Eigen::Index i = 0; i < Y.rows(); ++i) Y(i, j) = rng.uniform() - 0.5;
  t0 = std::chrono::steady_clock::now();
  const kl::Mat Ctn = cpu_tn(X, Y);
  const double t_cpu_tn = seconds_since(t0);
  kl::Mat Gtn = nan_mat(d, m);
  t_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(o.reps, 1); ++r) {
    t0 = std::chrono::steady_clock::now();
    if (gemm(1, 0, d, m, n, X.data(), n, Y.data(), n, Gtn.data(), d, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_dgemm (X' Y): %s\n", err[0] ? err : "no reason given");
      return 1;
    }
    t_best = std::min(t_best, seconds_since(t0));
  }
  std::printf("  X' Y (%d x %d, k = %d): CPU %.3f s, GPU best %.3f s (with transfers)\n", d, m,
              n, t_cpu_tn, t_best);
  status |= compare_product("X' Y against the CPU kernels", Ctn, Gtn, tol);
  status |= compare_product("X' Y against Eigen", kl::Mat(X.transpose() * Y), Gtn, tol);

  // Blocks: rows 3.. of X and Z, written into a block of a larger C (every leading dimension
  // above the row count), for all four transpose combinations.
  if (n > 5 && m > 5 && d > 2) {
    const int n2 = n - 3, m2 = m - 5, d2 = d - 1;
    const kl::Mat A = X.block(3, 1, n2, d2);  // n2 x d2
    const kl::Mat B = Z.block(5, 1, m2, d2);  // m2 x d2
    kl::Mat big = nan_mat(n + 7, m + 2);
    // A B' from the blocks in place (lda = n, ldb = m), into big at (2, 1), ldc = n + 7.
    if (gemm(0, 1, n2, m2, d2, X.data() + 3 + static_cast<std::size_t>(n), n,
             Z.data() + 5 + static_cast<std::size_t>(m), m, big.data() + 2 + (n + 7), n + 7, err,
             sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_dgemm on blocks: %s\n", err);
      return 1;
    }
    status |= compare_product("A B' on blocks (leading dims > rows)", kl::Mat(A * B.transpose()),
                              kl::Mat(big.block(2, 1, n2, m2)), tol);
    // A' A (d2 x d2) and B B' (m2 x m2) from the same in-place blocks: transposes on both sides.
    kl::Mat g1 = nan_mat(d2, d2), g2 = nan_mat(m2, m2);
    if (gemm(1, 0, d2, d2, n2, X.data() + 3 + static_cast<std::size_t>(n), n,
             X.data() + 3 + static_cast<std::size_t>(n), n, g1.data(), d2, err, sizeof(err)) != 0 ||
        gemm(0, 1, m2, m2, d2, Z.data() + 5 + static_cast<std::size_t>(m), m,
             Z.data() + 5 + static_cast<std::size_t>(m), m, g2.data(), m2, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_dgemm on blocks: %s\n", err);
      return 1;
    }
    status |= compare_product("A' A on a block", kl::Mat(A.transpose() * A), g1, tol);
    status |= compare_product("B B' on a block", kl::Mat(B * B.transpose()), g2, tol);
    // Both transposed: A is passed as its stored transpose At (d2 x n2), B as it is (m2 x d2).
    const kl::Mat At = A.transpose();
    kl::Mat g3 = nan_mat(n2, m2);
    if (gemm(1, 1, n2, m2, d2, At.data(), d2, B.data(), m2, g3.data(), n2, err,
             sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_dgemm (both transposed): %s\n", err);
      return 1;
    }
    status |= compare_product("A B' with both operands transposed", kl::Mat(A * B.transpose()), g3, tol);
  }
  // k = 0: C = 0.
  {
    kl::Mat c0 = nan_mat(4, 3);
    double dummy = 0.0;
    if (gemm(0, 0, 4, 3, 0, &dummy, 4, &dummy, 1, c0.data(), 4, err, sizeof(err)) != 0 ||
        !(c0.array() == 0.0).all()) {
      std::printf("FAIL: k = 0 did not give C = 0\n");
      status = 1;
    } else {
      std::printf("  k = 0 gives C = 0\n");
    }
  }
  if (status == 0) std::printf("OK (products, relative tolerance %.1e)\n", tol);
  return status;
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_args(argc, argv, &o)) {
    usage(argv[0]);
    return 3;
  }
  if (o.tile_rows > 0) setenv("KL_CUDA_TILE_ROWS", std::to_string(o.tile_rows).c_str(), 1);
  if (o.tile_cols > 0) setenv("KL_CUDA_TILE_COLS", std::to_string(o.tile_cols).c_str(), 1);
  if (o.threads <= 0) {
    const long nc = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = nc > 0 ? static_cast<int>(nc) : 1;
  }
  if (o.lib.empty()) o.lib = default_lib_path();

  const char* tr_env = std::getenv("KL_CUDA_TILE_ROWS");
  const char* tc_env = std::getenv("KL_CUDA_TILE_COLS");
  std::printf("n = %ld, m = %ld, d = %ld, gamma = %.6g, CPU threads = %d, tiles: rows %s, cols %s\n",
              o.n, o.m, o.d, o.gamma, o.threads, tr_env ? tr_env : "auto", tc_env ? tc_env : "auto");

  // --- Load the GPU library the way the package does.
  void* h = dlopen(o.lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return no_gpu("cannot load " + o.lib + ": " + (e ? e : "unknown error"));
  }
  auto version = reinterpret_cast<fn_version>(dlsym(h, "kl_cuda_api_version"));
  auto init = reinterpret_cast<fn_init>(dlsym(h, "kl_cuda_init"));
  auto gauss = reinterpret_cast<fn_gauss>(dlsym(h, "kl_cuda_gaussian_kernel"));
  auto release = reinterpret_cast<fn_release>(dlsym(h, "kl_cuda_release"));
  auto gemm = reinterpret_cast<fn_gemm>(dlsym(h, "kl_cuda_dgemm"));
  if (!version) return no_gpu(o.lib + " lacks expected symbols");
  if (version() != KL_CUDA_API_VERSION)
    return no_gpu(o.lib + " has interface version " + std::to_string(version()) + ", expected " +
                  std::to_string(KL_CUDA_API_VERSION));
  if (!init || !gauss || !release || !gemm) return no_gpu(o.lib + " lacks expected symbols");

  char err[512] = {0};
  // Argument checks that must fail before any device work.
  {
    double one = 0.0, k = 0.0;
    if (gauss(&one, 1, &one, 1, 1, -1.0, &k, err, sizeof(err)) == 0 || err[0] == '\0') {
      std::printf("FAIL: a negative gamma was not rejected\n");
      return 1;
    }
    if (gauss(&one, -1, &one, 1, 1, 1.0, &k, err, sizeof(err)) == 0 || err[0] == '\0') {
      std::printf("FAIL: a negative dimension was not rejected\n");
      return 1;
    }
  }

  char name[256] = {0};
  err[0] = '\0';
  auto t0 = std::chrono::steady_clock::now();
  if (init(o.device, name, sizeof(name), err, sizeof(err)) != 0)
    return no_gpu(err[0] ? err : "kl_cuda_init failed without a reason");
  const double t_init = seconds_since(t0);
  std::printf("GPU: %s (device %d), init %.3f s\n", name, o.device, t_init);

  // --- Data.
  kl::Rng rng(o.seed);
  kl::Mat X(o.n, o.d), Z(o.m, o.d);
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    for (Eigen::Index i = 0; i < X.rows(); ++i) X(i, j) = rng.uniform();
  for (Eigen::Index j = 0; j < Z.cols(); ++j)
    for (Eigen::Index i = 0; i < Z.rows(); ++i) Z(i, j) = rng.uniform();

  int status = 0;
  if (o.op != "gemm") status = std::max(status, check_kernel(o, gauss, X, Z, rng));
  if (o.op != "kernel") status = std::max(status, check_gemm(o, gemm, X, Z, rng));
  release();
  std::printf(status == 0 ? "ALL OK\n" : "FAILED\n");
  return status;
}
