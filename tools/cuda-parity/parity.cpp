// Parity check of the GPU library against the package's CPU core.
//
// Generates X (n x d) and Z (m x d) uniform on [0, 1] and checks
//   kernel: K = exp(-gamma ||x - z||^2) from kl::kernel_matrix (Eigen + OpenMP, the vectorised
//           cross products) against kl_cuda_gaussian_kernel;
//   gemm:   X Z' (n x m) and X' Y (d x m, Y n x m) from the CPU core's matrix-product kernels
//           (kl::gemm_parallel, or Eigen on processors without them), and from a plain Eigen
//           product, against kl_cuda_dgemm; also on blocks of larger matrices (leading
//           dimensions above the row counts) and with k = 0;
//   chol:   the Cholesky factor and solve of A = K(X, X) + lambda I (kl::cholesky_lower and
//           kl::cholesky_solve) against kl_cuda_cholesky_solve (cuSOLVER), with the residual
//           of both solutions; a matrix that is not positive definite (reported, A and B left
//           as they were); A as a block of a larger matrix; and, end to end, the core's kernel
//           ridge solve (kl::kernel_ridge_solve: the Gaussian kernel matrix, the factorisation,
//           the bias) with the CPU backend against the GPU backend the package loads;
//   cls:    the calibrated least-squares head of gem(): the Gram matrix of single-precision
//           rows (kl::gram_with_intercept, and the same summed in double) against
//           kl_cuda_gram_f32; factors kept on the device (kl_cuda_factor_create / _solve,
//           single and double precision) against the CPU's; and, end to end, kl::cls_fit with
//           the CPU backend against the GPU backend (Gram matrix and factor on the GPU);
//   rows:   kernel rows of points held on the device (kl_cuda_rows_compute, single precision)
//           and blocks against new points (kl_cuda_rows_block) for the four standard kernels
//           and a depth-2 hierarchical Gaussian kernel (kl_cuda_rows_create_tree) against the
//           CPU core's rows and kernel blocks; and, end to end, the core's SVM
//           solves (one-vs-one with three classes, epsilon-regression) with the CPU backend
//           against the GPU backend (the solver's kernel rows on the GPU);
//   hgk:    the hierarchical Gaussian kernel's passes over pairs (kl_cuda_rows_tree_pass: the
//           row sums K V, the derivative contraction with an adjoint U V', the triangle of the
//           held points) for a depth-2 tree (8 leaves of 2 of 16 columns) and a depth-3 tree,
//           against the CPU core's kernel blocks, fused pass and contraction; and, end to end,
//           hgk's objective with its bilevel and fixed-coefficient gradients
//           (kl::HgkObjective) with the CPU backend against the GPU backend;
//   tkl:    blocks of the tessellated kernel (kl_cuda_tessellated_block) of degree 1 and 2 on
//           8 columns against the CPU core's block(), directly and through the GPU backend's
//           kernel_matrix;
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
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "base/common.hpp"
#include "base/rng.hpp"
#include "kernels/hierarchical.hpp"
#include "kernels/standard.hpp"
#include "kernels/tessellated.hpp"
#include "linalg/chol.hpp"
#include "linalg/simd.hpp"
#include "heads/cls.hpp"
#include "heads/logistic_f32.hpp"
#include "kernels/hgk_pass.hpp"
#include "learners/hgk.hpp"
#include "machines/kernel_ridge.hpp"
#include "machines/rows.hpp"
#include "machines/svm.hpp"
#include "../../src/cuda/kl_cuda_api.h"

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
  std::string op = "all";  // kernel, gemm, chol, cls, rows, hgk, tkl or all
  long svm_n = 0;           // rows of the end-to-end SVM solves (default: n)
  std::string svm_data;     // op svm: a text file of rows (features, then the label)
  long svm_class = -1;      // op svm: that label against the rest (default: all classes)
  double svm_gamma = 1.0, svm_cost = 10.0;  // op svm: on inputs scaled to [0, 1]
  bool svm_cpu = true;      // op svm: also the CPU solve
  long cls_n = 6000, cls_p = 2100;  // rows and features of the cls check
  long chol_n = 0;          // rows of the factorisation (default: n)
  double lambda = -1.0;     // ridge of the factorised matrix (default: 1e-3 n)
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--n N] [--m M] [--d D] [--gamma G] [--tile-rows R] [--tile-cols C]\n"
               "          [--threads T] [--device I] [--reps R] [--seed S] [--tol E] [--lib PATH]\n"
               "          [--op kernel|gemm|chol|cls|rows|hgk|tkl|all] [--gemm-tile T]\n"
               "          [--chol-n N]\n"
               "          [--lambda L] [--cls-n N] [--cls-p P] [--svm-n N] [--list-ops]\n"
               "          [--op svm --svm-data FILE [--svm-class L] [--svm-gamma G]\n"
               "           [--svm-cost C] [--svm-cpu yes|no]]\n"
               "defaults: n 5000, m 2000, d 784, gamma 1/d, tolerance 1e-10 (kernel entries;\n"
               "products: 1e-12 relative to their largest entry; Cholesky: the factors and\n"
               "solutions within 1e-9 relative, residuals below 1e-12), op all, chol-n n,\n"
               "lambda 1e-3 chol-n, cls-n 6000, cls-p 2100, svm-n n, the library\n"
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
    if (a == "--list-ops") {
      std::printf("kernel  Gaussian kernel matrix (kl_cuda_gaussian_kernel)\n"
                  "gemm    matrix products, all transposes, blocks (kl_cuda_dgemm)\n"
                  "chol    Cholesky factorisation and solve (kl_cuda_cholesky_solve), and the\n"
                  "        core's kernel ridge solve with the CPU and the GPU backend\n"
                  "cls     Gram matrix of single-precision rows (kl_cuda_gram_f32), factors kept\n"
                  "        on the device (kl_cuda_factor_*), and the core's calibrated least\n"
                  "        squares fit with the CPU and the GPU backend\n"
                  "rows    kernel rows of points held on the device (kl_cuda_rows_compute) and\n"
                  "        kernel blocks against new points (kl_cuda_rows_block) for the Gaussian,\n"
                  "        Laplacian, linear and polynomial kernels and a hierarchical Gaussian\n"
                  "        kernel (kl_cuda_rows_create_tree), and the core's SVM solves\n"
                  "        (three classes, regression) with the CPU and the GPU backend\n"
                  "hgk     the hierarchical Gaussian kernel's passes over pairs (row sums,\n"
                  "        derivative contractions, the triangle; kl_cuda_rows_tree_pass), the\n"
                  "        core's hgk objective and gradients and its learning (the fit block\n"
                  "        and its factorisation on the device) with the CPU and the GPU backend\n"
                  "tkl     blocks of the tessellated kernel (kl_cuda_tessellated_block), directly\n"
                  "        and through the GPU backend's kernel matrices\n"
                  "svm     (only when asked: --op svm --svm-data FILE) the core's SVM solve on\n"
                  "        the rows of a data file with the CPU backend and the GPU backend\n");
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
      ok = o->op == "kernel" || o->op == "gemm" || o->op == "chol" || o->op == "cls" ||
           o->op == "rows" || o->op == "hgk" || o->op == "tkl" || o->op == "svm" ||
           o->op == "all";
    } else if (a == "--cls-n") {
      ok = parse_long(v, 1, &o->cls_n);
    } else if (a == "--cls-p") {
      ok = parse_long(v, 1, &o->cls_p);
    } else if (a == "--svm-n") {
      ok = parse_long(v, 1, &o->svm_n);
    } else if (a == "--svm-data") {
      o->svm_data = v;
    } else if (a == "--svm-class") {
      ok = parse_long(v, -1000000000L, &o->svm_class);
    } else if (a == "--svm-cpu") {
      ok = std::string(v) == "yes" || std::string(v) == "no";
      o->svm_cpu = std::string(v) == "yes";
    } else if (a == "--svm-gamma" || a == "--svm-cost") {
      char* end = nullptr;
      const double g = std::strtod(v, &end);
      ok = end != v && *end == '\0' && std::isfinite(g) && g > 0;
      (a == "--svm-gamma" ? o->svm_gamma : o->svm_cost) = g;
    } else if (a == "--chol-n") {
      ok = parse_long(v, 1, &o->chol_n);
    } else if (a == "--lambda") {
      char* end = nullptr;
      o->lambda = std::strtod(v, &end);
      ok = end != v && *end == '\0' && std::isfinite(o->lambda) && o->lambda > 0;
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
  if (o->chol_n <= 0) o->chol_n = o->n;
  if (o->svm_n <= 0) o->svm_n = o->n;
  if (o->lambda <= 0) o->lambda = 1e-3 * static_cast<double>(o->chol_n);
  if (o->n > lim || o->m > lim || o->d > lim || o->chol_n > lim || o->svm_n > lim) {
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
// The GPU backend as the package loads it, with every operation on; nullptr (and a FAIL line)
// when the core cannot load it.
kl::Backend* core_gpu_backend(const std::string& lib) {
  std::string why;
  kl::Backend* gpu = kl::gpu_backend(lib, &why);
  if (!gpu) {
    std::printf("FAIL: the core could not load the GPU backend: %s\n", why.c_str());
    return nullptr;
  }
  gpu->set_gpu_ops(kl::kGpuOpsAll);
  return gpu;
}

// Normwise backward error of a solution: ||A X - B||_F / (||A||_F ||X||_F + ||B||_F).
double backward_error(const kl::Mat& A, const kl::Mat& X, const kl::Mat& B) {
  return (A * X - B).norm() / (A.norm() * X.norm() + B.norm());
}

// Largest |a - b| over the lower triangles of two square matrices, relative to the largest |b|.
double lower_rel_diff(const kl::Mat& a, const kl::Mat& b) {
  double m = 0.0, scale = 1e-300;
  for (Eigen::Index j = 0; j < a.cols(); ++j)
    for (Eigen::Index i = j; i < a.rows(); ++i) {
      const double x = std::fabs(a(i, j) - b(i, j));
      m = std::isfinite(x) ? std::max(m, x) : std::numeric_limits<double>::infinity();
      scale = std::max(scale, std::fabs(b(i, j)));
    }
  return m / scale;
}

bool strict_upper_equal(const kl::Mat& a, const kl::Mat& b) {
  for (Eigen::Index j = 1; j < a.cols(); ++j)
    for (Eigen::Index i = 0; i < j; ++i)
      if (!(a(i, j) == b(i, j))) return false;
  return true;
}

// Cholesky factorisation and solve: kl_cuda_cholesky_solve against the CPU core, and the core's
// kernel ridge solve with the CPU backend against the GPU backend.
int check_chol(const Options& o, fn_chol chol, kl::Rng& rng) {
  const double tol = 1e-9, tol_res = 1e-12;
  const int n = static_cast<int>(o.chol_n), nrhs = 3;
  char err[512] = {0};
  int info = 0, status = 0;
  std::printf("Cholesky (n = %d, lambda = %.4g, %d right-hand sides):\n", n, o.lambda, nrhs);
  {
    double one = 1.0, b = 1.0;
    if (chol(&one, -1, 1, 1, &b, 1, 1, &info, err, sizeof(err)) == 0 || !err[0]) {
      std::printf("FAIL: a negative dimension was not rejected\n");
      return 1;
    }
    err[0] = '\0';
    double a4[4] = {2, 0, 0, 2};
    if (chol(a4, 2, 1, 1, &b, 1, 2, &info, err, sizeof(err)) == 0 || !err[0]) {
      std::printf("FAIL: a leading dimension below the row count was not rejected\n");
      return 1;
    }
  }
  // A = K(X, X) + lambda I for X uniform on [0, 1]^d, gamma as for the kernel check.
  kl::Mat X(n, o.d);
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    for (Eigen::Index i = 0; i < X.rows(); ++i) X(i, j) = rng.uniform();
  kl::KernelSpec spec;
  spec.type = kl::KernelType::Gaussian;
  spec.gamma = o.gamma;
  kl::Mat K(n, n);
  kl::kernel_matrix(spec, X, X, K, o.threads);
  kl::Mat A0 = K;
  A0.diagonal().array() += o.lambda;
  kl::Mat B0(n, nrhs);
  for (Eigen::Index j = 0; j < nrhs; ++j)
    for (Eigen::Index i = 0; i < n; ++i) B0(i, j) = rng.uniform() - 0.5;

  // --- CPU: the core's blocked factorisation and solve.
  kl::Mat Lc = A0;
  auto t0 = std::chrono::steady_clock::now();
  if (!kl::cholesky_lower(Lc, o.threads)) {
    std::printf("FAIL: the CPU factorisation found the test matrix not positive definite\n");
    return 1;
  }
  const kl::Mat Xc = kl::cholesky_solve(Lc, B0, o.threads);
  const double t_cpu = seconds_since(t0);

  // --- GPU, the factor written back; the first call includes the cuSOLVER set-up.
  kl::Mat Lg, Xg;
  double t_first = 0, t_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= o.reps; ++r) {
    Lg = A0;
    Xg = B0;
    t0 = std::chrono::steady_clock::now();
    const int rc = chol(Lg.data(), n, n, 1, Xg.data(), nrhs, n, &info, err, sizeof(err));
    const double t = seconds_since(t0);
    if (rc != 0 || info != 0) {
      std::printf("FAIL: kl_cuda_cholesky_solve: %s (info %d)\n", rc ? err : "not positive definite",
                  info);
      return 1;
    }
    if (r == 0) t_first = t;
    else t_best = std::min(t_best, t);
  }
  std::printf("  CPU factor + solve: %.3f s; GPU first %.3f s, best of %d %.3f s (with transfers, "
              "%.1fx the CPU)\n", t_cpu, t_first, o.reps, t_best, t_cpu / t_best);
  long bad_x = 0;
  const double dl = lower_rel_diff(Lg, Lc), dx = max_abs_diff(Xg, Xc, &bad_x) /
                                                   std::max(Xc.cwiseAbs().maxCoeff(), 1e-300);
  const double rc_cpu = backward_error(A0, Xc, B0), rc_gpu = backward_error(A0, Xg, B0);
  std::printf("  factor: max relative diff %.3e; solution: %.3e; backward error CPU %.3e, GPU "
              "%.3e\n", dl, dx, rc_cpu, rc_gpu);
  if (bad_x || !(dl <= tol) || !(dx <= tol) || !(rc_gpu <= tol_res) || !(rc_cpu <= tol_res)) {
    std::printf("FAIL: Cholesky factor or solution above the tolerance\n");
    status = 1;
  }
  if (!strict_upper_equal(Lg, A0)) {
    std::printf("FAIL: the strict upper triangle of A was changed\n");
    status = 1;
  }

  // --- Without the factor: A is left as it was, the solution is the same.
  {
    kl::Mat A = A0, B = B0;
    if (chol(A.data(), n, n, 0, B.data(), nrhs, n, &info, err, sizeof(err)) != 0 || info != 0) {
      std::printf("FAIL: kl_cuda_cholesky_solve without the factor: %s\n", err);
      return 1;
    }
    long bad = 0;
    const double d = max_abs_diff(B, Xg, &bad) / std::max(Xg.cwiseAbs().maxCoeff(), 1e-300);
    const bool same_a = (A.array() == A0.array()).all();
    std::printf("  without the factor: A %s, solution within %.3e of the first\n",
                same_a ? "unchanged" : "CHANGED", d);
    if (!same_a || !(d <= 1e-13) || bad) status = 1;
  }

  // --- Not positive definite: info > 0, A and B left as they were; the CPU agrees.
  {
    kl::Mat A = A0, B = B0;
    const int k = n / 2;
    A(k, k) = -1.0;
    const kl::Mat Acopy = A;
    const int rc = chol(A.data(), n, n, 1, B.data(), nrhs, n, &info, err, sizeof(err));
    kl::Mat Ac = Acopy;
    const bool cpu_pd = kl::cholesky_lower(Ac, o.threads);
    const bool ok = rc == 0 && info > 0 && info <= k + 1 && !cpu_pd &&
                    (A.array() == Acopy.array()).all() && (B.array() == B0.array()).all();
    std::printf("  not positive definite (pivot %d made negative): info %d, A and B %s; CPU %s\n",
                k + 1, info, (A.array() == Acopy.array()).all() && (B.array() == B0.array()).all()
                                 ? "unchanged" : "CHANGED",
                cpu_pd ? "factored it (wrong)" : "refuses it too");
    if (!ok) {
      std::printf("FAIL: a matrix that is not positive definite was not reported as such\n");
      status = 1;
    }
  }

  // --- A and B as blocks of larger matrices (leading dimensions above n); the entries around
  // the blocks are left alone.
  {
    const double sentinel = 7.25;
    kl::Mat Abig = kl::Mat::Constant(n + 3, n + 2, sentinel);
    Abig.block(2, 1, n, n) = A0;
    kl::Mat Bbig = kl::Mat::Constant(n + 5, nrhs + 1, sentinel);
    Bbig.block(4, 1, n, nrhs) = B0;
    if (chol(Abig.data() + 2 + (n + 3), n, n + 3, 1, Bbig.data() + 4 + (n + 5), nrhs, n + 5, &info,
             err, sizeof(err)) != 0 || info != 0) {
      std::printf("FAIL: kl_cuda_cholesky_solve on blocks: %s\n", err);
      return 1;
    }
    const double dl2 = lower_rel_diff(kl::Mat(Abig.block(2, 1, n, n)), Lc);
    long bad = 0;
    const double dx2 = max_abs_diff(kl::Mat(Bbig.block(4, 1, n, nrhs)), Xc, &bad) /
                       std::max(Xc.cwiseAbs().maxCoeff(), 1e-300);
    kl::Mat a_out = Abig, b_out = Bbig;
    a_out.block(2, 1, n, n).setConstant(sentinel);
    b_out.block(4, 1, n, nrhs).setConstant(sentinel);
    const bool around = (a_out.array() == sentinel).all() && (b_out.array() == sentinel).all();
    std::printf("  on blocks (lda %d, ldb %d): factor %.3e, solution %.3e, entries around the "
                "blocks %s\n", n + 3, n + 5, dl2, dx2, around ? "untouched" : "CHANGED");
    if (!(dl2 <= tol) || !(dx2 <= tol) || bad || !around) status = 1;
  }

  // --- End to end: the core's kernel ridge solve through the CPU and the GPU backend.
  {
    kl::Backend* gpu = core_gpu_backend(o.lib);
    if (!gpu) return 1;
    kl::Mat Y(n, 2);
    for (Eigen::Index i = 0; i < n; ++i) {
      Y(i, 0) = std::sin(6.0 * X(i, 0)) + X(i, 1 % X.cols()) + 0.1 * (rng.uniform() - 0.5);
      Y(i, 1) = X(i, 0) > 0.5 ? 1.0 : -1.0;
    }
    kl::KernelSpec ks = spec;
    const kl::KernelPtr kern = kl::make_standard_kernel(ks);
    kl::Mat Kc(n, n), Kg(n, n);
    t0 = std::chrono::steady_clock::now();
    kl::cpu_backend().kernel_matrix(*kern, X, X, Kc, o.threads, kl::Callbacks());
    const kl::KrrFit fc = kl::kernel_ridge_solve(Kc, Y, o.lambda, true, o.threads, kl::Callbacks(),
                                                 kl::cpu_backend());
    const double tc = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    gpu->kernel_matrix(*kern, X, X, Kg, o.threads, kl::Callbacks());
    const kl::KrrFit fg = kl::kernel_ridge_solve(Kg, Y, o.lambda, true, o.threads, kl::Callbacks(),
                                                 *gpu);
    const double tg = seconds_since(t0);
    long bad = 0;
    const double da = max_abs_diff(fg.alpha, fc.alpha, &bad) /
                      std::max(fc.alpha.cwiseAbs().maxCoeff(), 1e-300);
    const double db = (fg.bias - fc.bias).cwiseAbs().maxCoeff() /
                      std::max(fc.bias.cwiseAbs().maxCoeff(), 1e-300);
    std::printf("  kernel ridge solve (%s): CPU %.3f s, GPU backend %.3f s (%s); alpha %.3e, "
                "bias %.3e relative\n", gpu->name().c_str(), tc, tg,
                n >= 2048 ? "factorisation on the GPU" : "factorisation on the CPU: n < 2048",
                da, db);
    if (!(da <= tol) || !(db <= tol) || bad) {
      std::printf("FAIL: kernel ridge solve differs between the backends\n");
      status = 1;
    }
  }
  if (status == 0) std::printf("OK (Cholesky, relative tolerance %.1e, residuals %.1e)\n", tol,
                               tol_res);
  return status;
}
// The calibrated least-squares head: its Gram matrix, device factors and a whole fit.
int check_cls(const Options& o, fn_gram gram, fn_fcreate fcreate, fn_fsolve fsolve,
              fn_ffree ffree, kl::Rng& rng) {
  const long n = o.cls_n, p = o.cls_p;
  const long stride = p + 3;  // rows padded: the row stride is above p
  char err[512] = {0};
  int status = 0;
  std::printf("calibrated least squares (n = %ld, p = %ld):\n", n, p);
  {
    float x = 1.0f;
    double gg = 0.0;
    if (gram(&x, 1, 2, 1, 2048, &gg, 2, err, sizeof(err)) == 0 || !err[0]) {
      std::printf("FAIL: a row stride below p was not rejected\n");
      return 1;
    }
  }
  // features: a few strongly correlated groups, as GEM's are, in single precision
  std::vector<float> X(static_cast<std::size_t>(n * stride), -99.0f);
  kl::RowMajorF32 F;
  F.n = n;
  F.p = p;
  F.data.resize(static_cast<std::size_t>(n * p));
  kl::IVec y(n);
  const int K = 4;
  for (long i = 0; i < n; ++i) {
    const double z0 = rng.uniform() - 0.5, z1 = rng.uniform() - 0.5;
    y[i] = (z0 > 0 ? 1 : 0) + (z1 > 0 ? 2 : 0);
    for (long j = 0; j < p; ++j) {
      const double v = (j % 3 == 0 ? z0 : j % 3 == 1 ? z1 : z0 * z1) * (1.0 + 0.01 * (j % 7)) +
                       0.3 * (rng.uniform() - 0.5);
      X[static_cast<std::size_t>(i * stride + j)] = static_cast<float>(v);
      F.data[static_cast<std::size_t>(i * p + j)] = static_cast<float>(v);
    }
  }
  // --- Gram matrix: the CPU's single-precision sums, and the exact one (double sums).
  auto t0 = std::chrono::steady_clock::now();
  const kl::Mat Gc = kl::gram_with_intercept(F, o.threads);
  const double t_cpu = seconds_since(t0);
  const kl::Mat Ge = kl::gram_with_intercept_double_sums(F, o.threads);
  const long ldg = p + 2;
  kl::Mat Gg = kl::Mat::Constant(ldg, p, std::numeric_limits<double>::quiet_NaN());
  double t_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= o.reps; ++r) {
    t0 = std::chrono::steady_clock::now();
    if (gram(X.data(), n, static_cast<int>(p), stride, 2048, Gg.data(), static_cast<int>(ldg), err,
             sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_gram_f32: %s\n", err);
      return 1;
    }
    if (r > 0) t_best = std::min(t_best, seconds_since(t0));
  }
  double d_gpu = 0, d_cpu = 0, scale = 1e-300;
  bool upper_zero = true, rest_untouched = true;
  for (long j = 0; j < p; ++j) {
    for (long i = 0; i < p; ++i) {
      if (i < j) {
        upper_zero = upper_zero && Gg(i, j) == 0.0;
        continue;
      }
      scale = std::max(scale, std::fabs(Ge(i, j)));
      d_gpu = std::max(d_gpu, std::fabs(Gg(i, j) - Ge(i, j)));
      d_cpu = std::max(d_cpu, std::fabs(Gc(i, j) - Ge(i, j)));
      if (!std::isfinite(Gg(i, j))) d_gpu = std::numeric_limits<double>::infinity();
    }
    for (long i = p; i < ldg; ++i) rest_untouched = rest_untouched && std::isnan(Gg(i, j));
  }
  std::printf("  Gram matrix: CPU %.3f s, GPU best of %d %.3f s (with transfers); against the "
              "double sums: GPU %.3e, CPU %.3e relative; upper triangle %s, rows past p %s\n",
              t_cpu, o.reps, t_best, d_gpu / scale, d_cpu / scale, upper_zero ? "0" : "NOT 0",
              rest_untouched ? "untouched" : "WRITTEN");
  // single-precision sums of 2048 rows: a relative 1e-5 of the largest entry is ample
  if (!(d_gpu <= 1e-5 * scale) || !upper_zero || !rest_untouched) {
    std::printf("FAIL: the GPU Gram matrix differs from the exact one\n");
    status = 1;
  }
  // --- Device factors of A = 0.5 G + shift I (the cls system), double and single precision.
  const long q = p + 1;
  const double shift = 1e-2 * std::sqrt(static_cast<double>(n));
  kl::Mat A = 0.5 * Ge;
  A.diagonal().array() += shift;
  kl::Mat L = A;
  if (!kl::cholesky_lower(L, o.threads)) {
    std::printf("FAIL: the CPU factorisation found the cls system not positive definite\n");
    return 1;
  }
  kl::Mat B(q, K);
  for (Eigen::Index j = 0; j < B.cols(); ++j)
    for (Eigen::Index i = 0; i < B.rows(); ++i) B(i, j) = rng.uniform() - 0.5;
  const kl::Mat Xc = kl::cholesky_solve(L, B, o.threads);
  for (int single = 0; single <= 1; ++single) {
    kl_cuda_factor* f = nullptr;
    int info = 0;
    kl::Vec diag(q);
    t0 = std::chrono::steady_clock::now();
    if (fcreate(Ge.data(), static_cast<int>(q), static_cast<int>(q), 0.5, shift, single, &f,
                diag.data(), &info, err, sizeof(err)) != 0 || info != 0 || !f) {
      std::printf("FAIL: kl_cuda_factor_create (%s): %s (info %d)\n", single ? "single" : "double",
                  err, info);
      return 1;
    }
    const double tf = seconds_since(t0);
    kl::Mat Xg = B;
    t0 = std::chrono::steady_clock::now();
    if (fsolve(f, Xg.data(), K, static_cast<int>(q), err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_factor_solve: %s\n", err);
      ffree(f);
      return 1;
    }
    const double ts = seconds_since(t0);
    ffree(f);
    long bad = 0;
    const double dd = (diag - L.diagonal()).cwiseAbs().maxCoeff() / L.diagonal().cwiseAbs().maxCoeff();
    const double dx = max_abs_diff(Xg, Xc, &bad) / std::max(Xc.cwiseAbs().maxCoeff(), 1e-300);
    const double res = backward_error(A, Xg, B);
    // single precision: its rounding times the system's condition (the shift keeps it modest)
    const double tol_d = single ? 1e-4 : 1e-9, tol_r = single ? 1e-5 : 1e-12;
    std::printf("  device factor (%s): create %.3f s, solve %.3f s; diagonal %.3e, solution "
                "%.3e relative; backward error %.3e\n", single ? "single" : "double", tf, ts, dd,
                dx, res);
    if (bad || !(dd <= tol_d) || !(res <= tol_r)) {
      std::printf("FAIL: the device factor's results are off\n");
      status = 1;
    }
  }
  {
    // not positive definite: info > 0 and no factor
    kl_cuda_factor* f = nullptr;
    int info = 0;
    kl::Mat S = Ge;
    S(q / 2, q / 2) = -1e9;
    const int rc = fcreate(S.data(), static_cast<int>(q), static_cast<int>(q), 0.5, shift, 0, &f,
                           nullptr, &info, err, sizeof(err));
    std::printf("  device factor of an indefinite matrix: status %d, info %d, factor %s\n", rc,
                info, f ? "RETURNED" : "none");
    if (rc != 0 || info <= 0 || f) status = 1;
    if (f) ffree(f);
  }
  // --- End to end: cls_fit with the CPU backend and with the GPU's (all operations on).
  {
    kl::Backend* gpu = core_gpu_backend(o.lib);
    if (!gpu) return 1;
    for (int single = 0; single <= 1; ++single) {
      kl::ClsOptions opt;
      opt.lambda = 1e-2;
      opt.max_iter = 10;
      opt.threads = o.threads;
      if (single) opt.single_final_min = 0;  // factored in single precision
      opt.backend = &kl::cpu_backend();
      t0 = std::chrono::steady_clock::now();
      const kl::ClsFit fc = kl::cls_fit(F, y, K, opt);
      const double tc = seconds_since(t0);
      opt.backend = gpu;
      t0 = std::chrono::steady_clock::now();
      const kl::ClsFit fg = kl::cls_fit(F, y, K, opt);
      const double tg = seconds_since(t0);
      long bad = 0, differ = 0;
      const double ds = max_abs_diff(fg.scores, fc.scores, &bad);
      for (Eigen::Index i = 0; i < fc.scores.rows(); ++i) {
        Eigen::Index a = 0, b = 0;
        fc.scores.row(i).maxCoeff(&a);
        fg.scores.row(i).maxCoeff(&b);
        differ += a != b;
      }
      const bool gram_gpu = p >= 512 && static_cast<double>(n) * p * p >= 1e10,
                 factor_gpu = p + 1 >= 2048;
      std::printf("  cls_fit (%s factor; Gram matrix on the %s, factor on the %s): CPU %.3f s, "
                  "GPU backend %.3f s; steps %d and %d; scores within %.3e, classes differ on "
                  "%ld of %ld rows\n",
                  single ? "single" : "double", gram_gpu ? "GPU" : "CPU",
                  factor_gpu ? "GPU" : "CPU", tc, tg, fc.iterations, fg.iterations, ds, differ, n);
      // the Gram matrices differ by single-precision rounding: scores agree to about 1e-4
      if (bad || fg.iterations != fc.iterations || !(ds <= 1e-3) ||
          differ > std::max<long>(1, n / 1000)) {
        std::printf("FAIL: cls_fit differs between the backends\n");
        status = 1;
      }
    }
  }
  if (status == 0) std::printf("OK (calibrated least squares)\n");
  return status;
}
// The kernel rows of the SVM solver: points held on the device, their rows in single precision
// and blocks against new points in double, for the four standard kernels, against the CPU
// core's rows and kernel matrices; then the core's SVM solves with the CPU backend against the
// GPU backend (kernel rows on the GPU).
struct RowsApi {
  fn_rtree tree;
  fn_rcreate create;
  fn_rcompute compute;
  fn_rblock block;
  fn_rfree free;
};

int check_rows(const Options& o, const RowsApi& api, const kl::Mat& X, const kl::Mat& Z,
               kl::Rng& rng) {
  char err[512] = {0};
  int status = 0;
  std::printf("kernel rows:\n");
  const int n = static_cast<int>(X.rows()), d = static_cast<int>(X.cols()),
            m = static_cast<int>(Z.rows());
  {
    // arguments refused before any device work
    kl_cuda_rows* h = nullptr;
    const double one = 1.0;
    if (api.create(&one, 1, 1, 1, 7, 1.0, 1.0, 1.0, 0.0, &h, err, sizeof(err)) == 0 || h ||
        !err[0]) {
      std::printf("FAIL: an unknown kernel type was not rejected\n");
      return 1;
    }
    if (api.create(&one, 1, 1, 1, 3, 1.0, 2.5, 1.0, 0.0, &h, err, sizeof(err)) == 0 || h ||
        !err[0]) {
      std::printf("FAIL: a polynomial degree of 2.5 was not rejected\n");
      return 1;
    }
  }
  // a depth-2 hierarchical Gaussian kernel: four leaves over a random permutation of the
  // columns (overlapping when d < 8), weights around 1, the root's width gamma d / 4
  std::vector<kl::HgkNode> tree;
  {
    std::vector<int> perm(d);
    for (int j = 0; j < d; ++j) perm[j] = j;
    for (int j = d - 1; j > 0; --j) std::swap(perm[j], perm[static_cast<int>(rng.uniform() * (j + 1)) % (j + 1)]);
    const int leaves = 4, per = std::max(1, (d + leaves - 1) / leaves);
    kl::HgkNode root;
    root.leaf = false;
    root.scale = o.gamma * d / 4.0;
    for (int v = 0; v < leaves; ++v) {
      kl::HgkNode leaf;
      for (int k = 0; k < per; ++k) {
        leaf.members.push_back(perm[(v * per + k) % d]);
        leaf.weights.push_back(0.8 + 0.4 * rng.uniform());
      }
      tree.push_back(leaf);
      root.members.push_back(v);
      root.weights.push_back(0.8 + 0.4 * rng.uniform());
    }
    tree.push_back(root);
  }
  std::vector<int> t_leaf, t_off = {0}, t_mem;
  std::vector<double> t_w, t_s;
  for (const kl::HgkNode& v : tree) {
    t_leaf.push_back(v.leaf ? 1 : 0);
    t_mem.insert(t_mem.end(), v.members.begin(), v.members.end());
    t_w.insert(t_w.end(), v.weights.begin(), v.weights.end());
    t_s.push_back(v.scale);
    t_off.push_back(static_cast<int>(t_mem.size()));
  }
  const char* names[5] = {"gaussian", "laplacian", "linear", "polynomial", "tree"};
  for (int t = 0; t < 5; ++t) {
    kl::KernelSpec spec;
    spec.type = static_cast<kl::KernelType>(t < 4 ? t : 0);
    spec.gamma = t == 1 ? std::sqrt(o.gamma) : o.gamma;
    spec.degree = 3;
    spec.scale = 1.0 / d;
    spec.offset = 1.0;
    const kl::KernelPtr kern = t < 4 ? kl::make_standard_kernel(spec)
                                     : kl::make_hierarchical_gaussian_kernel(tree, d);
    kl_cuda_rows* h = nullptr;
    err[0] = '\0';
    auto t0 = std::chrono::steady_clock::now();
    const int rc =
        t < 4 ? api.create(X.data(), n, d, n, t, spec.gamma, spec.degree, spec.scale, spec.offset,
                           &h, err, sizeof(err))
              : api.tree(X.data(), n, d, n, static_cast<int>(tree.size()), t_leaf.data(),
                         t_off.data(), t_mem.data(), t_w.data(), t_s.data(), &h, err, sizeof(err));
    if (rc != 0 || !h) {
      std::printf("FAIL: kl_cuda_rows_create (%s): %s\n", names[t], err);
      return 1;
    }
    const double t_up = seconds_since(t0);
    // rows: the first, the last and some at random, one call each (as the solver's cache asks)
    // and all in one call
    std::vector<int> idx = {0, n - 1};
    for (int r = 0; r < 30; ++r) idx.push_back(static_cast<int>(rng.uniform() * n) % n);
    const int cnt = static_cast<int>(idx.size());
    std::vector<float> gpu_rows(static_cast<std::size_t>(cnt) * n, std::nanf("")),
        gpu_batch(static_cast<std::size_t>(cnt) * n, std::nanf("")),
        cpu_rows(static_cast<std::size_t>(cnt) * n);
    t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < cnt && status == 0; ++r)
      if (api.compute(h, &idx[r], 1, gpu_rows.data() + static_cast<std::size_t>(r) * n, n, err,
                      sizeof(err)) != 0) {
        std::printf("FAIL: kl_cuda_rows_compute (%s): %s\n", names[t], err);
        status = 1;
      }
    const double t_gpu = seconds_since(t0) / cnt;
    if (status == 0 && api.compute(h, idx.data(), cnt, gpu_batch.data(), n, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_rows_compute (%s, %d rows at once): %s\n", names[t], cnt, err);
      status = 1;
    }
    std::unique_ptr<kl::KernelRows> cpu = kern->rows(X);
    t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < cnt; ++r)
      cpu->row(idx[r], cpu_rows.data() + static_cast<std::size_t>(r) * n, o.threads);
    const double t_cpu = seconds_since(t0) / cnt;
    double dr = 0, db = 0, scale = 1e-300;
    long bad = 0;
    for (std::size_t k = 0; k < cpu_rows.size(); ++k) {
      if (!std::isfinite(gpu_rows[k]) || !std::isfinite(gpu_batch[k])) {
        ++bad;
        continue;
      }
      scale = std::max(scale, std::fabs(static_cast<double>(cpu_rows[k])));
      dr = std::max(dr, std::fabs(static_cast<double>(gpu_rows[k]) - cpu_rows[k]));
      db = std::max(db, std::fabs(static_cast<double>(gpu_batch[k]) - gpu_rows[k]));
    }
    {
      // a bad index is refused
      const int out_of_range = n;
      float dummy[1];
      if (api.compute(h, &out_of_range, 1, dummy, n, err, sizeof(err)) == 0 || !err[0]) {
        std::printf("FAIL: a row index out of range was not rejected\n");
        status = 1;
      }
    }
    // a block against new points (Z), in double, written into a larger matrix
    const int ldk = m + 3;
    kl::Mat Kg = kl::Mat::Constant(ldk, n, std::numeric_limits<double>::quiet_NaN());
    t0 = std::chrono::steady_clock::now();
    if (api.block(h, Z.data(), m, m, Kg.data(), ldk, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_rows_block (%s): %s\n", names[t], err);
      status = 1;
    }
    const double t_block = seconds_since(t0);
    kl::Mat Kc(m, n);
    t0 = std::chrono::steady_clock::now();
    kern->block(Z, X, Kc, o.threads, kl::Callbacks());
    const double t_cblock = seconds_since(t0);
    long badb = 0;
    const double dk = max_abs_diff(kl::Mat(Kg.topRows(m)), Kc, &badb) /
                      std::max(Kc.cwiseAbs().maxCoeff(), 1e-300);
    const bool below = Kg.bottomRows(3).array().isNaN().all();
    api.free(h);
    // rows: one float rounding of values that agree to double rounding (a last-bit difference
    // of the products can move the rounding by one float ulp)
    std::printf("  %-10s upload %.3f s; row %.2e s (CPU %.2e s, %d threads); rows within %.2e "
                "of %.3g (batch %.1e); block %d x %d %.3f s (CPU %.3f s) within %.2e relative%s\n",
                names[t], t_up, t_gpu, t_cpu, o.threads, dr, scale, db, m, n, t_block, t_cblock,
                dk, below ? "" : ", ROWS BELOW THE BLOCK WRITTEN");
    if (bad || badb || !(dr <= 2.5e-7 * scale) || db != 0 || !(dk <= 1e-10) || !below) {
      std::printf("FAIL: %s kernel rows or block differ from the CPU's\n", names[t]);
      status = 1;
    }
  }

  // --- End to end: the core's SVM solves, kernel rows from the CPU and from the GPU backend.
  {
    kl::Backend* gpu = core_gpu_backend(o.lib);
    if (!gpu) return 1;
    // the CPU stand-in counts the rows it computes (the CUDA library has no such counter)
    using fn_count = long long (*)();
    void* self = dlopen(o.lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
    const fn_count counted =
        self ? reinterpret_cast<fn_count>(dlsym(self, "kl_cuda_mock_rows_computed")) : nullptr;
    const long long counted0 = counted ? counted() : 0;
    const int ns = static_cast<int>(std::min<long>(o.svm_n, n));
    const kl::Mat Xs = X.topRows(ns);
    std::vector<int> y(ns);
    std::vector<double> z(ns);
    for (int i = 0; i < ns; ++i) {
      const double s = Xs(i, 0) + Xs(i, 1 % d) + 0.2 * (rng.uniform() - 0.5);
      y[i] = s < 0.8 ? 0 : (s < 1.2 ? 1 : 2);
      z[i] = std::sin(4.0 * Xs(i, 0)) + 0.5 * Xs(i, 2 % d) + 0.1 * (rng.uniform() - 0.5);
    }
    kl::KernelSpec spec = kl::gaussian_spec(o.gamma * 4);
    const kl::KernelPtr kern = kl::make_standard_kernel(spec);
    kl::SvmParams par;
    par.cost = 10;
    par.threads = o.threads;
    par.cache_mb = 100;  // small enough that rows are computed again
    auto t0 = std::chrono::steady_clock::now();
    kl::TrainingKernel Kc(kern, Xs, &kl::cpu_backend());
    const std::vector<kl::BinaryMachine> mc =
        kl::svm_classify(Kc, y, 3, {1.0, 1.0, 1.0}, par, {}, kl::Callbacks());
    const double tc = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    kl::TrainingKernel Kg(kern, Xs, gpu);
    const std::vector<kl::BinaryMachine> mg =
        kl::svm_classify(Kg, y, 3, {1.0, 1.0, 1.0}, par, {}, kl::Callbacks());
    const double tg = seconds_since(t0);
    // decision values of the new points Z, pair by pair
    kl::Mat Kz(m, ns);
    kl::kernel_matrix(spec, Z, Xs, Kz, o.threads);
    auto decision = [&](const kl::BinaryMachine& mach, int i) {
      double f = -mach.rho;
      for (std::size_t s2 = 0; s2 < mach.sv.size(); ++s2) f += mach.coef[s2] * Kz(i, mach.sv[s2]);
      return f;
    };
    long sv_c = 0, sv_g = 0, sv_diff = 0, rows_c = 0, rows_g = 0, sign_diff = 0;
    double dmax = 0;
    for (std::size_t p = 0; p < mc.size(); ++p) {
      sv_c += static_cast<long>(mc[p].sv.size());
      sv_g += static_cast<long>(mg[p].sv.size());
      rows_c += mc[p].kernel_rows;
      rows_g += mg[p].kernel_rows;
      std::vector<int> sa = mc[p].sv, sb = mg[p].sv, sd;
      std::set_symmetric_difference(sa.begin(), sa.end(), sb.begin(), sb.end(),
                                    std::back_inserter(sd));
      sv_diff += static_cast<long>(sd.size());
      for (int i = 0; i < m; ++i) {
        const double fc = decision(mc[p], i), fg = decision(mg[p], i);
        dmax = std::max(dmax, std::fabs(fc - fg));
        sign_diff += (fc > 0) != (fg > 0);
      }
    }
    // the solver stops when its optimality gap is below tol (1e-3): decisions within a few tol
    std::printf("  svm_classify (3 classes, %d rows, on the GPU: %s): CPU %.3f s, GPU backend "
                "%.3f s; support vectors %ld and %ld (%ld differ); kernel rows computed %ld and "
                "%ld; decisions at %d new points within %.2e, signs differ %ld times\n",
                ns, ns >= 2048 ? "yes" : "no, fewer than 2048 rows", tc, tg, sv_c, sv_g, sv_diff,
                rows_c, rows_g, m, dmax, sign_diff);
    if (!(dmax <= 1e-2) || sign_diff > std::max<long>(1, m / 500) ||
        sv_diff > std::max<long>(2, sv_c / 100)) {
      std::printf("FAIL: svm_classify differs between the backends\n");
      status = 1;
    }
    // epsilon-regression on the same rows
    par.epsilon = 0.05;
    t0 = std::chrono::steady_clock::now();
    const kl::BinaryMachine rc = kl::svm_regress(Kc, z, par, {}, kl::Callbacks());
    const double trc = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const kl::BinaryMachine rg = kl::svm_regress(Kg, z, par, {}, kl::Callbacks());
    const double trg = seconds_since(t0);
    double rmax = 0;
    for (int i = 0; i < m; ++i) rmax = std::max(rmax, std::fabs(decision(rc, i) - decision(rg, i)));
    std::printf("  svm_regress (%d rows): CPU %.3f s, GPU backend %.3f s; support vectors %zu and "
                "%zu; predictions at %d new points within %.2e\n", ns, trc, trg, rc.sv.size(),
                rg.sv.size(), m, rmax);
    if (!(rmax <= 1e-2)) {
      std::printf("FAIL: svm_regress differs between the backends\n");
      status = 1;
    }
    if (counted) {
      const long long dev_rows = counted() - counted0;
      std::printf("  rows computed by the stand-in library in these solves: %lld\n", dev_rows);
      if (ns >= 2048 && dev_rows <= 0) {
        std::printf("FAIL: the GPU backend did not use the device rows\n");
        status = 1;
      }
    }
  }
  if (status == 0) std::printf("OK (kernel rows)\n");
  return status;
}
// A text file of rows: numbers separated by commas or white space, the label last. X gets the
// features, labels the last column.
// The hierarchical Gaussian kernel's passes over pairs: kl_cuda_rows_tree_pass against the CPU
// core (kernel blocks, the fused pass, Kernel::contract_derivatives), then hgk's objective and
// gradients with the CPU backend against the GPU backend. Points: n held (the columns), m new
// (the rows), 16 columns uniform on [0, 1].
int check_hgk(const Options& o, const RowsApi& api, fn_rtpass tpass, kl::Rng& rng) {
  int status = 0;
  std::printf("hierarchical kernel passes:\n");
  const int d = 16, L = 3;
  const int n = static_cast<int>(o.n), m = static_cast<int>(o.m);
  auto uniform = [&](Eigen::Index r, Eigen::Index c, double shift) {
    kl::Mat A(r, c);
    for (Eigen::Index j = 0; j < c; ++j)
      for (Eigen::Index i = 0; i < r; ++i) A(i, j) = rng.uniform() - shift;
    return A;
  };
  const kl::Mat X = uniform(n, d, 0.0), Z = uniform(m, d, 0.0);
  const kl::Mat V = uniform(n, L, 0.5), U = uniform(m, L, 0.5), Ut = uniform(n, L, 0.5);
  // trees: depth 2, 8 leaves of 2 columns of a random permutation; depth 3 (leaves of 4, 4 and
  // 8 columns, two inner nodes under the root)
  std::vector<int> perm(d);
  for (int j = 0; j < d; ++j) perm[j] = j;
  for (int j = d - 1; j > 0; --j) std::swap(perm[j], perm[static_cast<int>(rng.uniform() * (j + 1)) % (j + 1)]);
  auto leaf = [&](int from, int count, double s) {
    kl::HgkNode v;
    v.leaf = true;
    for (int c = 0; c < count; ++c) {
      v.members.push_back(perm[from + c]);
      v.weights.push_back(0.7 + 0.6 * rng.uniform());
    }
    v.scale = s;
    return v;
  };
  auto inner = [&](std::vector<int> ch, double s) {
    kl::HgkNode v;
    v.leaf = false;
    v.members = ch;
    for (std::size_t c = 0; c < ch.size(); ++c) v.weights.push_back(0.5 + 0.5 * rng.uniform());
    v.scale = s;
    return v;
  };
  std::vector<std::vector<kl::HgkNode>> trees(2);
  for (int l = 0; l < 8; ++l) trees[0].push_back(leaf(2 * l, 2, 1.0));
  trees[0].push_back(inner({0, 1, 2, 3, 4, 5, 6, 7}, 2.0));
  trees[1] = {leaf(0, 4, 1.0), leaf(4, 4, 1.0), leaf(8, 8, 1.0), inner({0, 1}, 1.5),
              inner({2}, 1.0), inner({3, 4}, 3.0)};
  const int reps = std::max(1, o.reps);
  for (std::size_t tr = 0; tr < trees.size(); ++tr) {
    const std::vector<kl::HgkNode>& nodes = trees[tr];
    const kl::KernelPtr k = kl::make_hierarchical_gaussian_kernel(nodes, d);
    std::vector<int> leafs, offsets{0}, members;
    std::vector<double> weights, scales;
    for (const kl::HgkNode& v : nodes) {
      leafs.push_back(v.leaf ? 1 : 0);
      members.insert(members.end(), v.members.begin(), v.members.end());
      weights.insert(weights.end(), v.weights.begin(), v.weights.end());
      scales.push_back(v.scale);
      offsets.push_back(static_cast<int>(members.size()));
    }
    char err[512] = {0};
    kl_cuda_rows* h = nullptr;
    if (api.tree(X.data(), n, d, n, static_cast<int>(nodes.size()), leafs.data(), offsets.data(),
                 members.data(), weights.data(), scales.data(), &h, err, sizeof(err)) != 0) {
      std::printf("FAIL: kl_cuda_rows_create_tree: %s\n", err);
      return 1;
    }
    const int nw = static_cast<int>(weights.size());
    kl::Mat KV(m, L);
    kl::Vec g(nw), gt(nw);
    double t_gpu = 1e300, t_gpu_tri = 1e300;
    bool ok = true;
    for (int r = 0; r < reps && ok; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ok = tpass(h, Z.data(), m, m, 0, V.data(), n, L, U.data(), m, KV.data(), m, g.data(), err,
                 sizeof(err)) == 0;
      t_gpu = std::min(t_gpu, seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      ok = ok && tpass(h, nullptr, n, 1, 1, V.data(), n, L, Ut.data(), n, nullptr, 1, gt.data(),
                       err, sizeof(err)) == 0;
      t_gpu_tri = std::min(t_gpu_tri, seconds_since(t0));
    }
    // refused: row sums with the triangle; too many outputs
    const bool refused =
        tpass(h, nullptr, n, 1, 1, V.data(), n, L, nullptr, 1, KV.data(), m, nullptr, err,
              sizeof(err)) != 0 &&
        tpass(h, Z.data(), m, m, 0, V.data(), n, KL_CUDA_MAX_TREE_OUTPUTS + 1, nullptr, 1,
              KV.data(), m, nullptr, err, sizeof(err)) != 0;
    api.free(h);
    if (!ok) {
      std::printf("FAIL: kl_cuda_rows_tree_pass: %s\n", err);
      return 1;
    }
    if (!refused) {
      std::printf("FAIL: kl_cuda_rows_tree_pass accepted bad arguments\n");
      status = 1;
    }
    // the CPU core
    kl::Mat K(m, n);
    auto t0 = std::chrono::steady_clock::now();
    k->block(Z, X, K, o.threads, kl::Callbacks());
    const kl::Mat KVc = K * V;
    kl::Vec gc = kl::Vec::Zero(nw);
    k->contract_derivatives(Z, X, kl::Mat(U * V.transpose()), gc, o.threads, kl::Callbacks());
    const double t_cpu_block = seconds_since(t0);
    kl::Mat E = Ut * V.transpose();
    E.triangularView<Eigen::Lower>().setZero();
    kl::Vec gtc = kl::Vec::Zero(nw);
    k->contract_derivatives(X, X, E, gtc, o.threads, kl::Callbacks());
    double t_cpu_pass = -1.0;
    kl::Vec gp;
    if (kl::hgk_pass_available(nodes)) {
      kl::HgkPassJob job;
      kl::Mat KVp(m, L);
      job.V = &V;
      job.U = &U;
      job.KV = &KVp;
      job.grad = &gp;
      t0 = std::chrono::steady_clock::now();
      kl::hgk_pass(nodes, d, Z, X, job, o.threads, kl::Callbacks());
      t_cpu_pass = seconds_since(t0);
    }
    const double kv_err = (KV - KVc).cwiseAbs().maxCoeff() / std::max(1.0, KVc.cwiseAbs().maxCoeff());
    const double g_err = (g - gc).cwiseAbs().maxCoeff() / std::max(1e-300, gc.cwiseAbs().maxCoeff());
    const double gt_err = (gt - gtc).cwiseAbs().maxCoeff() / std::max(1e-300, gtc.cwiseAbs().maxCoeff());
    const double gp_err = gp.size() ? (g - gp).cwiseAbs().maxCoeff() / std::max(1e-300, gp.cwiseAbs().maxCoeff()) : 0.0;
    std::printf("  tree %zu (%zu nodes, %d weights), %d x %d pairs, L = %d: row sums %.2e, "
                "derivatives %.2e (fused pass %.2e), triangle %.2e (relative)\n",
                tr + 1, nodes.size(), nw, m, n, L, kv_err, g_err, gp_err, gt_err);
    char fused[32] = "n/a";
    if (t_cpu_pass >= 0) std::snprintf(fused, sizeof(fused), "%.4f s", t_cpu_pass);
    std::printf("    GPU pass (row sums + derivatives) %.4f s, triangle %.4f s; CPU (%d threads): "
                "fused pass %s, block + contraction %.4f s\n",
                t_gpu, t_gpu_tri, o.threads, fused, t_cpu_block);
    if (!(kv_err <= 1e-10) || !(g_err <= 1e-9) || !(gt_err <= 1e-9) || !(gp_err <= 1e-9)) {
      std::printf("FAIL: the passes differ from the CPU core's\n");
      status = 1;
    }
  }
  // end to end: hgk's objective and gradients with the passes on the GPU backend
  kl::Backend* gpu = core_gpu_backend(o.lib);
  if (!gpu) return 1;
  {
    const int n1 = n, n2 = m;
    kl::Mat Y1(n1, 1), Y2(n2, 1);
    Y1.col(0) = (X.col(0) * 4.0).array().sin() + X.col(1).array().square();
    Y2.col(0) = (Z.col(0) * 4.0).array().sin() + Z.col(1).array().square();
    const kl::HgkFamily fam(trees[0], d);
    const kl::Vec theta = fam.start();
    kl::HgkObjective cpu(fam, X, Y1, Z, Y2, 1.0, 1e-4, o.threads, kl::Callbacks());
    kl::HgkObjective dev(fam, X, Y1, Z, Y2, 1.0, 1e-4, o.threads, kl::Callbacks());
    dev.set_backend(gpu);
    kl::Vec gc, gd, fc, fd;
    auto t0 = std::chrono::steady_clock::now();
    const double rc = cpu.bilevel(theta, &gc);
    const double t_cb = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const double rd = dev.bilevel(theta, &gd);
    const double t_db = seconds_since(t0);
    const kl::LsFit fit = cpu.fit_at(theta);
    const kl::Vec theta2 = theta.array() + 0.05;
    t0 = std::chrono::steady_clock::now();
    const double sc = cpu.fixed(theta2, fit, &fc);
    const double t_cf = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const double sd = dev.fixed(theta2, fit, &fd);
    const double t_df = seconds_since(t0);
    const double e1 = std::fabs(rc - rd) / rc, e2 = (gc - gd).cwiseAbs().maxCoeff() / gc.cwiseAbs().maxCoeff();
    const double e3 = std::fabs(sc - sd) / sc, e4 = (fc - fd).cwiseAbs().maxCoeff() / fc.cwiseAbs().maxCoeff();
    std::printf("  hgk objective, %d fit x %d validation rows: bilevel risk %.2e, gradient %.2e; "
                "fixed risk %.2e, gradient %.2e (relative)\n", n1, n2, e1, e2, e3, e4);
    std::printf("    bilevel + gradient: CPU %.4f s, GPU backend %.4f s; fixed + gradient: CPU "
                "%.4f s, GPU backend %.4f s\n", t_cb, t_db, t_cf, t_df);
    if (!(e1 <= 1e-10) || !(e2 <= 1e-8) || !(e3 <= 1e-10) || !(e4 <= 1e-8)) {
      std::printf("FAIL: the objective with the GPU backend differs from the CPU's\n");
      status = 1;
    }
  }
  {
    // end to end: hgk's learning (two widths x two penalties, two steps) on the n rows, with
    // the fit block (n1 = 0.8 n rows), its factorisation and solves, the passes, the grid's
    // factorisations and the fit on all rows through the GPU backend
    const kl::HgkFamily fam(trees[0], d);
    kl::Mat Y(n, 1);
    Y.col(0) = (X.col(0) * 4.0).array().sin() + X.col(1).array().square();
    kl::HgkOptions opt;
    opt.split1 = 0.8;
    opt.split2 = 0.1;
    opt.maxit = 2;
    opt.anneal_steps = 2;
    opt.gamma_factors = {0.5, 2.0};
    opt.lambdas = {1e-4, 1e-2};
    opt.threads = o.threads;
    kl::Rng r1(7), r2(7);
    auto t0 = std::chrono::steady_clock::now();
    const kl::HgkResult a = kl::hgk_learn(fam, X, Y, fam.start(), opt, r1, kl::Callbacks());
    const double t_cpu = seconds_since(t0);
    opt.backend = gpu;
    t0 = std::chrono::steady_clock::now();
    const kl::HgkResult b = kl::hgk_learn(fam, X, Y, fam.start(), opt, r2, kl::Callbacks());
    const double t_gpu = seconds_since(t0);
    const double et = (a.theta - b.theta).cwiseAbs().maxCoeff();
    const double ea = (a.fit.alpha - b.fit.alpha).cwiseAbs().maxCoeff() /
                      std::max(1e-300, a.fit.alpha.cwiseAbs().maxCoeff());
    std::printf("  hgk learning, %d rows (fit part %d), %d steps: log-weights %.2e (absolute), "
                "coefficients %.2e (relative); width and penalty %s\n",
                n, static_cast<int>(0.8 * n), a.steps, et, ea,
                a.gamma == b.gamma && a.lambda == b.lambda ? "equal" : "DIFFER");
    std::printf("    CPU (%d threads) %.3f s, GPU backend %.3f s\n", o.threads, t_cpu, t_gpu);
    if (!(et <= 1e-7) || !(ea <= 1e-6) || a.gamma != b.gamma || a.lambda != b.lambda ||
        a.steps != b.steps) {
      std::printf("FAIL: hgk's learning with the GPU backend differs from the CPU's\n");
      status = 1;
    }
  }
  if (status == 0) std::printf("OK (hierarchical kernel passes)\n");
  return status;
}

// Blocks of the tessellated kernel: kl_cuda_tessellated_block and the GPU backend's
// kernel_matrix against the CPU core's block(), for n x m points on 8 columns (uniform on
// [0, 1], the box [0.05, 0.95]^8, so that some are clamped), degrees 1 and 2.
int check_tkl(const Options& o, fn_tblock tblock, kl::Rng& rng) {
  int status = 0;
  std::printf("tessellated kernel blocks:\n");
  const int d = 8, n = static_cast<int>(o.n), m = static_cast<int>(o.m);
  kl::Mat X(n, d), Y(m, d);
  for (Eigen::Index j = 0; j < d; ++j) {
    for (Eigen::Index i = 0; i < n; ++i) X(i, j) = rng.uniform();
    for (Eigen::Index i = 0; i < m; ++i) Y(i, j) = rng.uniform();
  }
  const kl::Vec lo = kl::Vec::Constant(d, 0.05), hi = kl::Vec::Constant(d, 0.95);
  kl::Backend* gpu = core_gpu_backend(o.lib);
  if (!gpu) return 1;
  for (int degree : {1, 2}) {
    const int h = static_cast<int>(kl::monomial_count(d, degree));
    kl::Mat R(2 * h, 2 * h);
    for (Eigen::Index j = 0; j < R.cols(); ++j)
      for (Eigen::Index i = 0; i < R.rows(); ++i) R(i, j) = rng.uniform() - 0.5;
    const kl::Mat P = R * R.transpose() / (2.0 * h) + kl::Mat::Identity(2 * h, 2 * h);
    const kl::KernelPtr k = kl::make_tessellated_kernel(P, degree, lo, hi);
    const kl::TessellatedForm* tf = k->tessellated();
    if (!tf) {
      std::printf("FAIL: the tessellated kernel does not give its factors\n");
      return 1;
    }
    kl::Mat Kc(n, m), Kg(n, m), Kb(n, m);
    auto t0 = std::chrono::steady_clock::now();
    k->block(X, Y, Kc, o.threads, kl::Callbacks());
    const double t_cpu = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    kl::Mat Xc, F, G, Yc, Zm, Zt;
    tf->left(X, Xc, F, G);
    tf->right(Y, Yc, Zm, Zt);
    char err[512] = {0};
    const int rc = tblock(Xc.data(), F.data(), G.data(), n, Yc.data(), Zm.data(), Zt.data(), m, d,
                          h, tf->upper().data(), Kg.data(), n, err, sizeof(err));
    const double t_gpu = seconds_since(t0);
    if (rc != 0) {
      std::printf("FAIL: kl_cuda_tessellated_block: %s\n", err);
      return 1;
    }
    t0 = std::chrono::steady_clock::now();
    gpu->kernel_matrix(*k, X, Y, Kb, o.threads, kl::Callbacks());
    const double t_be = seconds_since(t0);
    const double scale = std::max(1e-300, Kc.cwiseAbs().maxCoeff());
    const double e1 = (Kg - Kc).cwiseAbs().maxCoeff() / scale;
    const double e2 = (Kb - Kc).cwiseAbs().maxCoeff() / scale;
    std::printf("  degree %d (h = %d), %d x %d: library %.2e, backend %.2e (relative to the "
                "largest entry); CPU (%d threads) %.4f s, GPU %.4f s, through the backend "
                "(factors on the CPU) %.4f s\n",
                degree, h, n, m, e1, e2, o.threads, t_cpu, t_gpu, t_be);
    if (!(e1 <= 1e-12) || !(e2 <= 1e-12)) {
      std::printf("FAIL: the tessellated blocks differ from the CPU core's\n");
      status = 1;
    }
  }
  if (status == 0) std::printf("OK (tessellated kernel blocks)\n");
  return status;
}

bool read_rows(const std::string& path, kl::Mat* X, std::vector<double>* labels) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) {
    std::printf("FAIL: cannot open %s\n", path.c_str());
    return false;
  }
  std::vector<double> vals;
  long cols = -1, rows = 0;
  std::string line;
  char buf[1 << 16];
  bool ok = true;
  while (ok && std::fgets(buf, sizeof(buf), f)) {
    line = buf;
    std::vector<double> row;
    const char* p = line.c_str();
    while (*p) {
      while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') ++p;
      if (!*p) break;
      char* end = nullptr;
      const double v = std::strtod(p, &end);
      if (end == p) {
        std::printf("FAIL: %s, line %ld: not a number\n", path.c_str(), rows + 1);
        ok = false;
        break;
      }
      row.push_back(v);
      p = end;
    }
    if (!ok || row.empty()) continue;
    if (cols < 0) cols = static_cast<long>(row.size());
    if (static_cast<long>(row.size()) != cols || cols < 2) {
      std::printf("FAIL: %s, line %ld: %zu fields, expected %ld (at least 2)\n", path.c_str(),
                  rows + 1, row.size(), cols);
      ok = false;
      break;
    }
    vals.insert(vals.end(), row.begin(), row.end());
    ++rows;
  }
  std::fclose(f);
  if (!ok) return false;
  if (rows < 4) {
    std::printf("FAIL: %s has %ld rows\n", path.c_str(), rows);
    return false;
  }
  X->resize(rows, cols - 1);
  labels->resize(rows);
  for (long i = 0; i < rows; ++i) {
    for (long j = 0; j + 1 < cols; ++j) (*X)(i, j) = vals[i * cols + j];
    (*labels)[i] = vals[i * cols + cols - 1];
  }
  return true;
}

// The core's SVM solve on the rows of a data file (features scaled to [0, 1] by their range):
// svm_n rows at random for training and m others for the decision values, one label against
// the rest or all classes one-vs-one, with the GPU backend (kernel rows on the GPU) and, unless
// --svm-cpu no, the CPU backend; the support vectors and decision values compared.
int check_svm_data(const Options& o) {
  std::printf("SVM solve on %s:\n", o.svm_data.c_str());
  kl::Mat A;
  std::vector<double> lab;
  if (!read_rows(o.svm_data, &A, &lab)) return 1;
  const long N = A.rows(), d = A.cols();
  for (long j = 0; j < d; ++j) {
    const double lo = A.col(j).minCoeff(), hi = A.col(j).maxCoeff();
    if (hi > lo) A.col(j) = (A.col(j).array() - lo) / (hi - lo);
    else A.col(j).setZero();
  }
  std::vector<double> levels = lab;
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  // rows at random (the seed), training then test
  kl::Rng rng(o.seed);
  std::vector<long> perm(N);
  for (long i = 0; i < N; ++i) perm[i] = i;
  for (long i = N - 1; i > 0; --i) std::swap(perm[i], perm[static_cast<long>(rng.uniform() * (i + 1)) % (i + 1)]);
  const long ntr = std::min(o.svm_n, N - 1), nte = std::min(o.m, N - ntr);
  kl::Mat Xtr(ntr, d), Xte(nte, d);
  std::vector<int> y(ntr);
  const bool binary = o.svm_class != -1 || levels.size() == 2;
  int k = binary ? 2 : static_cast<int>(levels.size());
  for (long i = 0; i < ntr; ++i) {
    Xtr.row(i) = A.row(perm[i]);
    const double l = lab[perm[i]];
    y[i] = o.svm_class != -1 ? (l == static_cast<double>(o.svm_class) ? 1 : 0)
                             : static_cast<int>(std::lower_bound(levels.begin(), levels.end(), l) - levels.begin());
  }
  for (long i = 0; i < nte; ++i) Xte.row(i) = A.row(perm[ntr + i]);
  std::vector<int> seen(k, 0);
  for (int c : y) seen[c] = 1;
  for (int c = 0; c < k; ++c)
    if (!seen[c]) {
      std::printf("FAIL: class %d has no training rows\n", c);
      return 1;
    }
  const kl::KernelPtr kern = kl::make_standard_kernel(kl::gaussian_spec(o.svm_gamma));
  kl::SvmParams par;
  par.cost = o.svm_cost;
  par.threads = o.threads;
  std::printf("  %ld training rows, %ld test rows, %ld columns, %s, gamma %g, cost %g, cache "
              "%.0f MB, %d CPU threads\n", ntr, nte, d,
              binary ? (o.svm_class != -1 ? "one label against the rest" : "two classes")
                     : "one-vs-one", o.svm_gamma, o.svm_cost, par.cache_mb, o.threads);
  kl::Backend* gpu = core_gpu_backend(o.lib);
  if (!gpu) return 1;
  std::vector<double> w(k, 1.0);
  auto t0 = std::chrono::steady_clock::now();
  kl::TrainingKernel Kg(kern, Xtr, gpu);
  const std::vector<kl::BinaryMachine> mg = kl::svm_classify(Kg, y, k, w, par, {}, kl::Callbacks());
  const double tg = seconds_since(t0);
  long svg = 0, rowsg = 0, iterg = 0;
  for (const auto& mm : mg) {
    svg += static_cast<long>(mm.sv.size());
    rowsg += mm.kernel_rows;
    iterg += mm.iter;
  }
  std::printf("  GPU backend: %.3f s; %ld support vectors, %ld iterations, %ld kernel rows "
              "computed\n", tg, svg, iterg, rowsg);
  if (!o.svm_cpu) return 0;
  t0 = std::chrono::steady_clock::now();
  kl::TrainingKernel Kc(kern, Xtr, &kl::cpu_backend());
  const std::vector<kl::BinaryMachine> mc = kl::svm_classify(Kc, y, k, w, par, {}, kl::Callbacks());
  const double tc = seconds_since(t0);
  long svc = 0, rowsc = 0, iterc = 0, sv_diff = 0, sign_diff = 0;
  double dmax = 0;
  kl::Mat Kz(nte, ntr);
  kl::kernel_matrix(kl::gaussian_spec(o.svm_gamma), Xte, Xtr, Kz, o.threads);
  for (std::size_t p = 0; p < mc.size(); ++p) {
    svc += static_cast<long>(mc[p].sv.size());
    rowsc += mc[p].kernel_rows;
    iterc += mc[p].iter;
    std::vector<int> sd;
    std::set_symmetric_difference(mc[p].sv.begin(), mc[p].sv.end(), mg[p].sv.begin(),
                                  mg[p].sv.end(), std::back_inserter(sd));
    sv_diff += static_cast<long>(sd.size());
    for (long i = 0; i < nte; ++i) {
      double fc = -mc[p].rho, fg = -mg[p].rho;
      for (std::size_t q = 0; q < mc[p].sv.size(); ++q) fc += mc[p].coef[q] * Kz(i, mc[p].sv[q]);
      for (std::size_t q = 0; q < mg[p].sv.size(); ++q) fg += mg[p].coef[q] * Kz(i, mg[p].sv[q]);
      dmax = std::max(dmax, std::fabs(fc - fg));
      sign_diff += (fc > 0) != (fg > 0);
    }
  }
  std::printf("  CPU backend: %.3f s; %ld support vectors, %ld iterations, %ld kernel rows "
              "computed\n", tc, svc, iterc, rowsc);
  std::printf("  GPU speed-up %.2fx; support vectors differing %ld; decisions at the test rows "
              "within %.2e, signs differ %ld times of %ld\n", tc / tg, sv_diff, dmax, sign_diff,
              nte * static_cast<long>(mc.size()));
  if (!(dmax <= 1e-2) || sign_diff > std::max<long>(1, nte / 500) ||
      sv_diff > std::max<long>(2, svc / 100)) {
    std::printf("FAIL: the SVM solves differ between the backends\n");
    return 1;
  }
  std::printf("OK (SVM solve)\n");
  return 0;
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
  auto chol = reinterpret_cast<fn_chol>(dlsym(h, "kl_cuda_cholesky_solve"));
  auto gram = reinterpret_cast<fn_gram>(dlsym(h, "kl_cuda_gram_f32"));
  auto fcreate = reinterpret_cast<fn_fcreate>(dlsym(h, "kl_cuda_factor_create"));
  auto fsolve = reinterpret_cast<fn_fsolve>(dlsym(h, "kl_cuda_factor_solve"));
  auto ffree = reinterpret_cast<fn_ffree>(dlsym(h, "kl_cuda_factor_free"));
  if (!version) return no_gpu(o.lib + " lacks expected symbols");
  if (version() != KL_CUDA_API_VERSION)
    return no_gpu(o.lib + " has interface version " + std::to_string(version()) + ", expected " +
                  std::to_string(KL_CUDA_API_VERSION));
  RowsApi rows_api;
  rows_api.create = reinterpret_cast<fn_rcreate>(dlsym(h, "kl_cuda_rows_create"));
  rows_api.compute = reinterpret_cast<fn_rcompute>(dlsym(h, "kl_cuda_rows_compute"));
  rows_api.block = reinterpret_cast<fn_rblock>(dlsym(h, "kl_cuda_rows_block"));
  rows_api.free = reinterpret_cast<fn_rfree>(dlsym(h, "kl_cuda_rows_free"));
  rows_api.tree = reinterpret_cast<fn_rtree>(dlsym(h, "kl_cuda_rows_create_tree"));
  if (!init || !gauss || !release || !gemm || !chol || !gram || !fcreate || !fsolve || !ffree ||
      !rows_api.create || !rows_api.compute || !rows_api.block || !rows_api.free || !rows_api.tree)
    return no_gpu(o.lib + " lacks expected symbols");

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
  if (o.op == "kernel" || o.op == "all") status = std::max(status, check_kernel(o, gauss, X, Z, rng));
  if (o.op == "gemm" || o.op == "all") status = std::max(status, check_gemm(o, gemm, X, Z, rng));
  if (o.op == "chol" || o.op == "all") status = std::max(status, check_chol(o, chol, rng));
  if (o.op == "cls" || o.op == "all")
    status = std::max(status, check_cls(o, gram, fcreate, fsolve, ffree, rng));
  if (o.op == "rows" || o.op == "all") status = std::max(status, check_rows(o, rows_api, X, Z, rng));
  if (o.op == "hgk" || o.op == "all") {
    auto tpass = reinterpret_cast<fn_rtpass>(dlsym(h, "kl_cuda_rows_tree_pass"));
    if (!tpass) {
      std::printf("FAIL: the library lacks kl_cuda_rows_tree_pass\n");
      status = 1;
    } else {
      status = std::max(status, check_hgk(o, rows_api, tpass, rng));
    }
  }
  if (o.op == "tkl" || o.op == "all") {
    auto tblock = reinterpret_cast<fn_tblock>(dlsym(h, "kl_cuda_tessellated_block"));
    if (!tblock) {
      std::printf("FAIL: the library lacks kl_cuda_tessellated_block\n");
      status = 1;
    } else {
      status = std::max(status, check_tkl(o, tblock, rng));
    }
  }
  if (o.op == "svm") {
    if (o.svm_data.empty()) {
      std::printf("--op svm needs --svm-data FILE\n");
      status = 3;
    } else {
      status = std::max(status, check_svm_data(o));
    }
  }
  release();
  std::printf(status == 0 ? "ALL OK\n" : "FAILED\n");
  return status;
}
