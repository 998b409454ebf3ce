// Speed of the core's dense algebra and learner objectives, without R: the measurements of the
// bench/*.R scripts that need the core's internals, appended to the same CSV files of
// bench/results with the same columns.
//
//   bench_core [options] [SECTION...]     sections (default: all):
//     dense          C = A B' (backend GEMM) and the blocked Cholesky factorisation, GFLOP/s
//                    next to OpenBLAS (the floor tool, when present)        -> dense.csv
//     kernel_matrix  the GEMM floor and the core's Gaussian kernel block, 20000 x 784 against
//                    2000 x 784 (MNIST when the data folder has it)          -> kernel_matrix.csv
//     dikl           one NysDI and one RFDI value + gradient on MNIST (Nb = 4000, J = 2000)
//                    against the time of the products they need             -> dikl.csv
//     gem            class moments + the 90 eigenproblems of MNIST          -> gem.csv
//     hgk            the bilevel and fixed hgk objectives + gradients (double, and with the
//                    single-precision passes) against one Cholesky (n = 2500, d = 16,
//                    8 nodes; each objective evaluated anew at alternating weights, its
//                    buffers kept, as in the optimiser), and the kernel blocks and derivative
//                    contraction of a tree whose leaves are too wide for the fused pass
//                    (d = 180, n = 1500) -> hgk.csv, section "objective (core)"
//   options: --reps N (3)  --threads N (2)  --out DIR (bench/results; "" writes nothing)
//            --data DIR (KERNLEARN_DATA_DIR, else ../shared/data beside the checkout)
//            --floor PATH (the OpenBLAS floor tool, ../shared/tools/blas-floor/run)
//            --smoke (small shapes, one rep, nothing written: checks that the sections run)
//   one number, for the R scripts' ratios (median seconds over --reps runs):
//     bench_core --gemm-seconds M N K      C = A B' with A M x K, B N x K (uniform entries)
//     bench_core --cholesky-seconds N      the factorisation of an N x N matrix
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "helpers.hpp"
#include "kernels/standard.hpp"
#include "learners/dikl.hpp"
#include "learners/gem.hpp"
#include "learners/hgk.hpp"
#include "linalg/chol.hpp"
#include "linalg/simd.hpp"

namespace {

struct Settings {
  int reps = 3, threads = 2;
  bool smoke = false;
  std::string out = "bench/results", data, floor_tool;
};
Settings S;

const std::string NA = "NA";

std::string now(const char* fmt) {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, fmt, std::localtime(&t));
  return buf;
}

std::string q(const std::string& s) { return "\"" + s + "\""; }

std::string num(double v, int digits = -1) {
  if (!std::isfinite(v)) return NA;
  if (digits >= 0) {
    const double f = std::pow(10.0, digits);
    v = std::round(v * f) / f;
  }
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

// Splits one CSV line (double quotes around fields that need them).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// Appends rows (already formatted) to out/file, with the header when the file is new. With
// drop_field >= 0, earlier rows whose field drop_field equals drop_value are removed first.
void write_rows(const std::string& file, const std::string& header,
                const std::vector<std::string>& rows, int drop_field = -1,
                const std::string& drop_value = "") {
  for (const auto& r : rows) std::cout << "  " << r << "\n";
  if (S.smoke || S.out.empty() || rows.empty()) return;
  const std::string path = S.out + "/" + file;
  std::vector<std::string> keep;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (keep.empty()) {
        keep.push_back(line);  // header
        continue;
      }
      const auto f = csv_fields(line);
      if (drop_field >= 0 && static_cast<int>(f.size()) > drop_field && f[drop_field] == drop_value)
        continue;
      keep.push_back(line);
    }
  }
  if (keep.empty()) keep.push_back(header);
  std::ofstream o(path, std::ios::trunc);
  if (!o) {
    std::cerr << "cannot write " << path << "\n";
    return;
  }
  for (const auto& l : keep) o << l << "\n";
  for (const auto& r : rows) o << r << "\n";
  std::cout << "  -> " << path << "\n";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> times(const std::function<void()>& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(ct::seconds(f));
  return t;
}

std::string join(const std::vector<double>& v, int digits) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : " ") + num(x, digits);
  return s;
}

// OpenBLAS's GFLOP/s (gemm, chol) from the floor tool; NaN without it.
std::pair<double, double> openblas(long m, long n, long k, long nchol) {
  const double nan = std::nan("");
  if (S.floor_tool.empty() || S.smoke) return {nan, nan};
  std::ifstream probe(S.floor_tool);
  if (!probe) return {nan, nan};
  const std::string cmd = "sh '" + S.floor_tool + "' " + std::to_string(S.threads) + " " +
                          std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k) +
                          " " + std::to_string(nchol) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {nan, nan};
  double g = nan, c = nan;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) {
    const std::string line = buf;
    const auto at = line.rfind(", ");
    const auto unit = line.find(" GFLOP/s");
    if (at == std::string::npos || unit == std::string::npos || unit < at) continue;
    const double v = std::atof(line.substr(at + 2, unit - at - 2).c_str());
    if (line.find("dgemm") != std::string::npos) g = v;
    if (line.find("dpotrf") != std::string::npos) c = v;
  }
  pclose(p);
  return {g, c};
}

kl::Mat uniform(kl::Rng& rng, Eigen::Index n, Eigen::Index m) { return ct::runif(rng, n, m); }

double gemm_seconds(const kl::Mat& a, const kl::Mat& b, int reps) {
  kl::Mat C(a.rows(), b.rows());
  return median(times([&] { kl::cpu_backend().gemm_nt(a, b, C, S.threads); }, reps));
}

// Seconds of each factorisation of A, on a copy made before the clock starts (as the floor
// tool times dpotrf).
std::vector<double> cholesky_times(const kl::Mat& A, int reps) {
  std::vector<double> t;
  kl::Mat L(A.rows(), A.cols());
  ct::EigenThreads one(1);
  for (int r = 0; r < reps; ++r) {
    L = A;
    t.push_back(ct::seconds([&] {
      if (!kl::cholesky_lower(L, S.threads, kl::SimdLevel::avx512))
        throw kl::Error("the matrix is not positive definite");
    }));
  }
  return t;
}

kl::Mat spd(kl::Rng& rng, Eigen::Index n, Eigen::Index r) {
  const kl::Mat M = ct::rnorm(rng, n, r);
  kl::Mat A = M * M.transpose() / static_cast<double>(r);
  A.diagonal().array() += 1.0;
  return A;
}

// ---- MNIST from the data folder ---------------------------------------------------------------

bool read_idx(const std::string& path, int magic, std::vector<unsigned char>& out,
              std::vector<std::uint32_t>& dims) {
  std::ifstream probe(path);
  if (!probe) return false;
  FILE* p = popen(("gzip -dc '" + path + "'").c_str(), "r");
  if (!p) return false;
  auto u32 = [&](std::uint32_t& v) {
    unsigned char b[4];
    if (std::fread(b, 1, 4, p) != 4) return false;
    v = (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) |
        b[3];
    return true;
  };
  std::uint32_t m = 0;
  bool ok = u32(m) && static_cast<int>(m) == magic;
  const int nd = magic == 2051 ? 3 : 1;
  dims.assign(nd, 0);
  std::size_t total = 1;
  for (int i = 0; ok && i < nd; ++i) {
    ok = u32(dims[i]);
    total *= dims[i];
  }
  if (ok) {
    out.resize(total);
    ok = std::fread(out.data(), 1, total, p) == total;
  }
  pclose(p);
  return ok;
}

struct Mnist {
  kl::Mat train, test;  // pixels / 255
  kl::IVec train_y;
};

bool load_mnist(Mnist& m) {
  const std::string dir = S.data + "/mnist/";
  std::vector<unsigned char> img, lab, timg;
  std::vector<std::uint32_t> d1, d2, d3;
  if (!read_idx(dir + "train-images-idx3-ubyte.gz", 2051, img, d1) ||
      !read_idx(dir + "train-labels-idx1-ubyte.gz", 2049, lab, d2) ||
      !read_idx(dir + "t10k-images-idx3-ubyte.gz", 2051, timg, d3))
    return false;
  const Eigen::Index n = d1[0], p = static_cast<Eigen::Index>(d1[1]) * d1[2], nt = d3[0];
  m.train.resize(n, p);
  m.test.resize(nt, p);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < p; ++j)
      m.train(i, j) = img[static_cast<std::size_t>(i * p + j)] / 255.0;
  for (Eigen::Index i = 0; i < nt; ++i)
    for (Eigen::Index j = 0; j < p; ++j)
      m.test(i, j) = timg[static_cast<std::size_t>(i * p + j)] / 255.0;
  m.train_y.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) m.train_y[i] = lab[static_cast<std::size_t>(i)];
  return true;
}

kl::Mat rows_of(const kl::Mat& x, const std::vector<int>& rows) {
  kl::Mat out(static_cast<Eigen::Index>(rows.size()), x.cols());
  for (std::size_t i = 0; i < rows.size(); ++i)
    out.row(static_cast<Eigen::Index>(i)) = x.row(rows[i]);
  return out;
}

// ---- sections ------------------------------------------------------------------------------

const char* kDenseHeader =
    "\"date\",\"op\",\"shape\",\"threads\",\"kernlearn_s\",\"kernlearn_gflops\",\"openblas_"
    "gflops\","
    "\"ratio_openblas\",\"r_blas_gflops\",\"simd\",\"blas\"";

void dense() {
  std::vector<std::string> rows;
  const std::string simd = kl::simd_level_name(kl::simd_level());
  auto add = [&](const std::string& op, const std::string& shape, double flops, double secs,
                 double ob) {
    const double gf = flops / secs / 1e9;
    rows.push_back(q(now("%Y-%m-%d %H:%M")) + "," + q(op) + "," + q(shape) + "," +
                   std::to_string(S.threads) + "," + num(secs, 4) + "," + num(gf, 1) + "," +
                   num(ob, 1) + "," + num(gf / ob, 2) + "," + NA + "," + q(simd) + "," +
                   q("none (the core's own kernels, bench_core)"));
    std::printf("%-10s %-16s kernlearn %7.3f s %6.1f GFLOP/s | OpenBLAS %6.1f\n", op.c_str(),
                shape.c_str(), secs, gf, ob);
  };
  kl::Rng rng(ct::seed2(1, 1));
  const long shapes[2][3] = {{20000, 2000, 784}, {4000, 2000, 784}};
  for (const auto& sh : shapes) {
    const long m = S.smoke ? sh[0] / 10 : sh[0], n = S.smoke ? sh[1] / 10 : sh[1], k = sh[2];
    const kl::Mat a = uniform(rng, m, k), b = uniform(rng, n, k);
    const double ob = openblas(m, n, k, 1000).first;
    add("gemm A B'", std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
        2.0 * m * n * k, gemm_seconds(a, b, S.reps), ob);
  }
  for (long nc : {2000L, 4000L, 8000L}) {
    if (S.smoke) nc /= 8;
    const kl::Mat A = spd(rng, nc, 200);
    const double ob = openblas(100, 100, 100, nc).second;
    add("cholesky", "n=" + std::to_string(nc), std::pow(double(nc), 3) / 3,
        median(cholesky_times(A, S.reps)), ob);
  }
  write_rows("dense.csv", kDenseHeader, rows);
}

void kernel_matrix() {
  const long n = S.smoke ? 2000 : 20000, m = S.smoke ? 200 : 2000, d = 784;
  Mnist mn;
  kl::Mat x, z;
  std::string src = "random uniform";
  if (!S.smoke && load_mnist(mn)) {
    x = mn.train.topRows(n);
    z = mn.test.topRows(m);
    src = "MNIST pixels / 255 (train rows 1..20000, test rows 1..2000)";
  } else {
    kl::Rng rng(ct::seed2(1, 1));
    x = uniform(rng, n, d);
    z = uniform(rng, m, d);
  }
  kl::Mat C(n, m), K(n, m);
  const std::vector<double> tg =
      times([&] { kl::cpu_backend().gemm_nt(x, z, C, S.threads); }, S.reps);
  const kl::KernelPtr k = kl::make_standard_kernel(kl::gaussian_spec(1.0 / d));
  const std::vector<double> tk = times(
      [&] { kl::cpu_backend().kernel_matrix(*k, x, z, K, S.threads, kl::Callbacks()); }, S.reps);
  const double floor = median(tg);
  std::vector<std::string> rows;
  const std::string shape = std::to_string(n) + "x" + std::to_string(d) + " vs " +
                            std::to_string(m) + "x" + std::to_string(d);
  for (const auto& r : {std::make_pair(std::string("gemm_floor"), tg),
                        std::make_pair(std::string("kernel_matrix core (bench_core)"), tk)})
    rows.push_back(q(now("%Y-%m-%d %H:%M")) + "," + q(src) + "," + q(shape) + "," +
                   std::to_string(S.threads) + "," + q(r.first) + "," + num(median(r.second), 3) +
                   "," + std::to_string(r.second.size()) + "," + num(median(r.second) / floor, 2) +
                   "," + q("none (bench_core)"));
  write_rows("kernel_matrix.csv",
             "\"date\",\"data\",\"shape\",\"threads\",\"method\",\"median_s\","
             "\"runs\",\"ratio_to_gemm\",\"blas\"",
             rows);
}

void dikl() {
  Mnist mn;
  const bool have = !S.smoke && load_mnist(mn);
  const Eigen::Index Nb = S.smoke ? 400 : 4000, J = S.smoke ? 200 : 2000, d = 784;
  kl::Rng rng(ct::seed2(1, 1));
  kl::Mat x;
  kl::IVec y;
  if (have) {
    // scaled to [0, 1] with the training range (constant pixels become 0), as bench/dikl.R
    x = mn.train;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double lo = x.col(j).minCoeff(), rg = x.col(j).maxCoeff() - lo;
      x.col(j) = rg > 0 ? kl::Vec((x.col(j).array() - lo) / rg) : kl::Vec(kl::Vec::Zero(x.rows()));
    }
    y = mn.train_y;
  } else {
    x = uniform(rng, 10000, d);
    y.resize(x.rows());
    for (Eigen::Index i = 0; i < y.size(); ++i) y[i] = static_cast<int>(rng.below(10));
  }
  std::vector<int> idx = rng.permutation(static_cast<int>(x.rows()));
  idx.resize(static_cast<std::size_t>(Nb));
  const kl::Mat Xb = rows_of(x, idx);
  kl::Mat Yb = kl::Mat::Zero(Nb, 10);
  for (Eigen::Index i = 0; i < Nb; ++i) Yb(i, y[idx[static_cast<std::size_t>(i)]]) = 1;
  std::vector<int> zi = rng.permutation(static_cast<int>(x.rows()));
  zi.resize(static_cast<std::size_t>(J));
  const kl::Mat Z = rows_of(x, zi);
  const double gamma = 0.02;  // about 1 / median squared distance on MNIST in [0, 1]
  const kl::Mat W = ct::rnorm(rng, J, d, 0, std::sqrt(2 * gamma));  // rows are frequencies
  const kl::Vec b = ct::runif_vec(rng, J, 0, 2 * ct::kPi);
  const kl::Mat V0 = kl::Mat::Zero(J, 10);
  const kl::Vec c0 = kl::Vec::Zero(10);
  // inputs of the floor products, prepared outside the timing (transposes are not GEMMs)
  const kl::Mat Fc = uniform(rng, Nb, J), tFc = Fc.transpose(), tXb = Xb.transpose(),
                tZ = Z.transpose(), E = uniform(rng, J, J);
  auto gemm = [&](const kl::Mat& a, const kl::Mat& bb) {
    kl::Mat C(a.rows(), bb.rows());
    return ct::seconds([&] { kl::cpu_backend().gemm_nt(a, bb, C, S.threads); });
  };
  auto objective = [&](int map, double g, const kl::Mat& P, const kl::Vec& bv) {
    kl::DiklMapParams p;
    p.map = static_cast<kl::DiklMap>(map);
    p.gamma = g;
    p.P = P;
    p.b = bv;
    kl::DiklGradient grad;
    ct::EigenThreads et(S.threads);
    return ct::seconds([&] {
      kl::dikl_objective(kl::DiklObjective::di, p, Xb, Yb, nullptr, 1e-4, 1e-10, V0, c0, &grad,
                         kl::cpu_backend(), S.threads);
    });
  };
  const std::string data = have ? "MNIST" : "random uniform";
  std::vector<std::string> rows;
  auto add = [&](int run, const std::string& what, double secs,
                 const std::vector<std::pair<std::string, double>>& fl) {
    double total = 0;
    std::string note;
    char buf[64];
    for (const auto& f : fl) {
      total += f.second;
      std::snprintf(buf, sizeof buf, "%s%s %.2f", note.empty() ? "" : "; ", f.first.c_str(),
                    f.second);
      note += buf;
    }
    note += "; " + data + " (bench_core)";
    rows.push_back(q(now("%Y-%m-%d")) + "," + q("gradient") + "," + q(what) + "," +
                   std::to_string(run) + "," + std::to_string(Nb) + "," + std::to_string(J) + "," +
                   std::to_string(d) + "," + num(secs) + "," + num(total) + "," +
                   num(secs / total) + "," + q(note));
  };
  for (int r = 1; r <= S.reps; ++r) {
    const double tn = objective(0, gamma, Z, kl::Vec());
    add(r, "NysDI value + gradient", tn,
        {{"xz", gemm(Xb, Z)},
         {"ftf", gemm(tFc, tFc)},
         {"htx", gemm(tFc, tXb)},
         {"zz", gemm(Z, Z)},
         {"ez", gemm(E, tZ)}});
    const double tr = objective(1, 1, W, b);
    add(r, "RFDI value + gradient", tr,
        {{"xw", gemm(Xb, W)}, {"ftf", gemm(tFc, tFc)}, {"gtx", gemm(tFc, tXb)}});
  }
  write_rows("dikl.csv",
             "\"date\",\"part\",\"what\",\"run\",\"Nb\",\"J\",\"d\",\"seconds\","
             "\"floor_seconds\",\"ratio\",\"note\"",
             rows);
}

void gem() {
  Mnist mn;
  kl::Mat x;
  kl::IVec y;
  std::string data = "MNIST";
  if (!S.smoke && load_mnist(mn)) {
    x = mn.train;
    y = mn.train_y;
  } else {
    data = "random uniform";
    kl::Rng rng(ct::seed2(1, 1));
    x = uniform(rng, S.smoke ? 3000 : 60000, S.smoke ? 100 : 784);
    y.resize(x.rows());
    for (Eigen::Index i = 0; i < y.size(); ++i) y[i] = static_cast<int>(rng.below(10));
  }
  std::vector<int> num_, den_;
  for (int j = 0; j < 10; ++j)
    for (int i = 0; i < 10; ++i)
      if (i != j) {
        num_.push_back(i);
        den_.push_back(j);
      }
  kl::GemOptions opt;
  opt.ridge = 0.05;
  opt.relative = false;
  opt.top = 30;
  opt.threshold = 2.5;
  opt.method = 0;
  opt.tol = 1e-8;
  opt.threads = S.threads;
  opt.seed = ct::seed2(1, 2);
  std::vector<std::string> rows;
  for (int r = 1; r <= S.reps; ++r) {
    std::vector<kl::GemPair> pairs;
    const double secs = ct::seconds([&] {
      ct::EigenThreads one(1);
      const kl::ClassMoments M = kl::class_moments(x, y, 10, S.threads);
      pairs = kl::gem_directions(M, num_, den_, opt);
    });
    std::vector<double> apps;
    int dense = 0;
    for (const auto& p : pairs) {
      apps.push_back(p.applications);
      dense += p.dense;
    }
    char note[200];
    std::snprintf(note, sizeof note,
                  "%d operator applications per pair (median), %d dense fallbacks; %s (bench_core)",
                  static_cast<int>(median(apps)), dense, data.c_str());
    rows.push_back(q("moments + 90 eigenproblems") + "," + q("kernlearn") + "," +
                   std::to_string(r) + "," + num(secs, 3) + "," + q(note) + "," +
                   q(now("%Y-%m-%d")));
  }
  write_rows("gem.csv", "\"stage\",\"tool\",\"run\",\"seconds\",\"note\",\"date\"", rows);
}

void hgk() {
  kl::Rng rng(ct::seed2(1, 1));
  const Eigen::Index n = S.smoke ? 400 : 2500, d = 16;
  const kl::Mat x1 = uniform(rng, n, d), x2 = uniform(rng, n, d);
  auto f = [](const kl::Mat& x) {
    kl::Mat y(x.rows(), 1);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double s = std::sin(4 * x(i, 0)) + x(i, 1) - x(i, 2) * x(i, 3) - 0.3;
      y(i, 0) = (s > 0) - (s < 0);
    }
    return y;
  };
  const kl::Mat y1 = f(x1), y2 = f(x2);
  // depth 2: 8 nodes over random blocks of 2 columns, weights U[0.5, 1.5], node weights sqrt(1/8)
  const std::vector<int> perm = rng.permutation(static_cast<int>(d));
  ct::HTree k;
  for (int j = 0; j < 8; ++j)
    k.nodes.push_back({{perm[2 * j] + 1, perm[2 * j + 1] + 1},
                       {rng.uniform(0.5, 1.5), rng.uniform(0.5, 1.5)},
                       nullptr});
  k.node_weights.assign(8, std::sqrt(1.0 / 8));
  const double gamma = 2, lambda = 1e-4;
  const kl::HgkFamily fam(k.flatten(), static_cast<int>(d));
  const kl::Vec theta = fam.start();
  const kl::KernelPtr kern = fam.kernel(theta, 1.0);  // the kernel as given (its own width 1)
  kl::Mat A(n, n);
  kern->block(x1, x1, A, S.threads, kl::Callbacks());
  A.diagonal().array() += n * lambda;
  // the fixed-alpha objective's coefficients, computed once (not part of either timing)
  kl::LsFit fit;
  {
    kl::HgkObjective obj(fam, x1, y1, x2, y2, gamma, lambda, S.threads, kl::Callbacks());
    fit = obj.fit_at(theta);
  }
  double risk_b = 0, risk_f = 0, risk_bs = 0, risk_fs = 0;
  // the bilevel and fixed objectives + gradients, in double and with the passes in single
  // precision (HgkObjective's `single`). Each objective is built once and evaluated at weights
  // that alternate between two values, as the optimiser evaluates one objective at successive
  // weights: every evaluation computes the kernel, its factor, the passes and the solves anew,
  // while the n x n buffers are allocated once (as the Cholesky's matrix is, below). The risk
  // is that at the first weights.
  const kl::Vec theta2 = theta.array() + 1e-7;
  kl::HgkObjective ob(fam, x1, y1, x2, y2, gamma, lambda, S.threads, kl::Callbacks(), false),
      obs(fam, x1, y1, x2, y2, gamma, lambda, S.threads, kl::Callbacks(), true),
      of(fam, x1, y1, x2, y2, gamma, lambda, S.threads, kl::Callbacks(), false),
      ofs(fam, x1, y1, x2, y2, gamma, lambda, S.threads, kl::Callbacks(), true);
  auto eval = [&](kl::HgkObjective& obj, bool bilevel, int r, double& risk) {
    kl::Vec g;
    const double f = bilevel ? obj.bilevel(r % 2 ? theta2 : theta, &g)
                             : obj.fixed(r % 2 ? theta2 : theta, fit, &g);
    if (r % 2 == 0) risk = f;
  };
  // one repetition of each in turn, so that a change of the machine's load during the run
  // falls on all of them alike (this machine is shared): the ratios compare like with like
  std::vector<double> ch, bi, fx, bis, fxs;
  for (int r = 0; r < S.reps; ++r) {
    ch.push_back(cholesky_times(A, 1)[0]);
    bi.push_back(ct::seconds([&] { eval(ob, true, r, risk_b); }));
    fx.push_back(ct::seconds([&] { eval(of, false, r, risk_f); }));
    bis.push_back(ct::seconds([&] { eval(obs, true, r, risk_bs); }));
    fxs.push_back(ct::seconds([&] { eval(ofs, false, r, risk_fs); }));
  }
  const double ref = median(ch);
  std::vector<std::string> rows;
  char buf[160];
  auto add = [&](const std::string& what, const std::vector<double>& t, const std::string& note) {
    rows.push_back(q(now("%Y-%m-%d %H:%M")) + "," + q("objective (core)") + "," + q(what) + "," +
                   num(median(t), 3) + "," + q(join(t, 3)) + "," + num(median(t) / ref, 3) + "," +
                   q("core Cholesky") + "," + q(note));
  };
  const std::string sz = std::to_string(n) + " x " + std::to_string(n);
  // the vector width matters to these ratios, and not alike on both sides (the factorisation's
  // products and the passes' exponentials gain differently from AVX-512): the note names it
  const std::string simd = kl::simd_level_name(kl::simd_level());
  add("core Cholesky " + sz, ch, "bench_core, " + simd);
  const auto how = [&](double risk) {
    std::snprintf(buf, sizeof buf, "risk %.5f; one objective at alternating weights; %s",
                  risk, ("bench_core, " + simd).c_str());
    return std::string(buf);
  };
  add("bilevel objective + gradient (8 nodes, " + std::to_string(fam.num_params()) + " weights)",
      bi, how(risk_b));
  add("fixed-alpha objective + gradient", fx, how(risk_f));
  add("bilevel objective + gradient, single-precision passes", bis, how(risk_bs));
  add("fixed-alpha objective + gradient, single-precision passes", fxs, how(risk_fs));
  // The general path of trees whose leaves are too wide for the fused pass (8 leaves of 22 of
  // 180 columns, 1500 rows, 2 threads): one block K(X, X), one K(X2, X) with 375 rows, and the
  // contraction of K(X2, X)'s derivatives, against the same Cholesky.
  {
    const Eigen::Index nw = S.smoke ? 300 : 1500, dw = 180;
    const kl::Mat w1 = uniform(rng, nw, dw), w2 = uniform(rng, nw / 4, dw);
    const std::vector<int> pw = rng.permutation(static_cast<int>(dw));
    ct::HTree kw;
    for (int j = 0; j < 8; ++j) {
      ct::HTree::Node nd;
      for (int i = 0; i < 22; ++i) {
        nd.cols.push_back(pw[22 * j + i] + 1);
        nd.weights.push_back(0.3 * rng.uniform(0.5, 1.5));
      }
      kw.nodes.push_back(nd);
    }
    kw.node_weights.assign(8, std::sqrt(1.0 / 8));
    const kl::HgkFamily famw(kw.flatten(), static_cast<int>(dw));
    const kl::KernelPtr kern_w = famw.kernel(famw.start(), 1.0);
    kl::Mat Kw(nw, nw), K21w(nw / 4, nw);
    const kl::Mat Ew = uniform(rng, nw / 4, nw);
    kl::Vec gw(famw.num_params());
    std::vector<double> tb, tx, tc;
    for (int r = 0; r < S.reps; ++r) {
      tb.push_back(ct::seconds([&] { kern_w->block(w1, w1, Kw, S.threads, kl::Callbacks()); }));
      tx.push_back(ct::seconds([&] { kern_w->block(w2, w1, K21w, S.threads, kl::Callbacks()); }));
      tc.push_back(ct::seconds(
          [&] { kern_w->contract_derivatives(w2, w1, Ew, gw, S.threads, kl::Callbacks()); }));
    }
    const std::string wn = std::to_string(nw), wq = std::to_string(nw / 4);
    const std::string how = "8 leaves of 22 columns (d = 180), the general path; bench_core, " + simd;
    add("wide-leaf tree: block K(X, X), " + wn + " x " + wn, tb, how);
    add("wide-leaf tree: block K(X2, X), " + wq + " x " + wn, tx, how);
    add("wide-leaf tree: contraction of dK(X2, X), " + wq + " x " + wn, tc, how);
  }
  // as bench/hgk.R does for its sections, the rows of an earlier run of this one are replaced
  write_rows("hgk.csv",
             "\"date\",\"section\",\"what\",\"median_s\",\"runs_s\",\"ratio\",\"ratio_to\","
             "\"note\"",
             rows, 1, "objective (core)");
}

int usage(int status) {
  std::cerr
      << "usage: bench_core [--reps N] [--threads N] [--out DIR] [--data DIR] [--floor PATH]"
         " [--smoke] [dense|kernel_matrix|dikl|gem|hgk ...]\n"
         "       bench_core [--reps N] [--threads N] --gemm-seconds M N K | --cholesky-seconds N\n";
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sections;
  long gemm[3] = {0, 0, 0}, chol = 0;
  if (const char* e = std::getenv("KERNLEARN_DATA_DIR")) S.data = e;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(usage(2));
      }
      return argv[++i];
    };
    if (a == "--reps")
      S.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--threads")
      S.threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--out")
      S.out = next();
    else if (a == "--data")
      S.data = next();
    else if (a == "--floor")
      S.floor_tool = next();
    else if (a == "--smoke")
      S.smoke = true;
    else if (a == "--gemm-seconds")
      for (long& v : gemm) v = std::atol(next().c_str());
    else if (a == "--cholesky-seconds")
      chol = std::atol(next().c_str());
    else if (a == "--help" || a == "-h")
      return usage(0);
    else if (!a.empty() && a[0] == '-')
      return usage(2);
    else
      sections.push_back(a);
  }
  try {
    if (gemm[0] > 0) {
      kl::Rng rng(ct::seed2(1, 1));
      const kl::Mat a = uniform(rng, gemm[0], gemm[2]), b = uniform(rng, gemm[1], gemm[2]);
      std::printf("%.6f\n", gemm_seconds(a, b, S.reps));
      return 0;
    }
    if (chol > 0) {
      kl::Rng rng(ct::seed2(1, 1));
      std::printf("%.6f\n", median(cholesky_times(spd(rng, chol, 200), S.reps)));
      return 0;
    }
    if (S.smoke) S.reps = 1;
    if (sections.empty()) sections = {"dense", "kernel_matrix", "dikl", "gem", "hgk"};
    std::printf("bench_core: %d threads, %d reps, SIMD %s%s\n", S.threads, S.reps,
                kl::simd_level_name(kl::simd_level()), S.smoke ? ", smoke run (small shapes)" : "");
    for (const auto& s : sections) {
      std::printf("== %s\n", s.c_str());
      std::fflush(stdout);
      if (s == "dense")
        dense();
      else if (s == "kernel_matrix")
        kernel_matrix();
      else if (s == "dikl")
        dikl();
      else if (s == "gem")
        gem();
      else if (s == "hgk")
        hgk();
      else {
        std::cerr << "unknown section " << s << "\n";
        return usage(2);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_core: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
