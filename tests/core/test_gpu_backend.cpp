// The GPU backend's dispatch, without a GPU: the core loads the CPU stand-in for the GPU
// library (tools/cuda-parity/mock, built next to this program) through the same dlopen() path
// as the real one, and the tests check which operations it hands to the library, that the
// results equal the CPU's, and the fallbacks. Nothing here checks the CUDA code itself (that
// is tools/cuda-parity on a machine with a GPU).
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/hgk_pass.hpp"
#include "kernels/hierarchical.hpp"
#include "kernels/standard.hpp"
#include "kernels/tessellated.hpp"
#include "machines/rows.hpp"
#include "learners/hgk.hpp"
#include "learners/tkl.hpp"
#include "machines/svm.hpp"

namespace {

std::string mock_path() {
  char buf[4096];
  const ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string p = len > 0 ? std::string(buf, static_cast<std::size_t>(len)) : std::string("./x");
  return p.substr(0, p.rfind('/')) + "/kernlearn_cuda_mock.so";
}

kl::Backend* mock_backend(unsigned ops) {
  std::string why;
  kl::Backend* b = kl::gpu_backend(mock_path(), &why);
  if (!b) {
    ::ct::fail(__FILE__, __LINE__, "the stand-in GPU library did not load: " + why);
    return nullptr;
  }
  b->set_gpu_ops(ops);
  return b;
}

kl::Mat uniform(int n, int d, kl::Rng& rng) {
  kl::Mat X(n, d);
  for (int j = 0; j < d; ++j)
    for (int i = 0; i < n; ++i) X(i, j) = rng.uniform();
  return X;
}

std::vector<kl::KernelSpec> standard_specs(int d) {
  std::vector<kl::KernelSpec> out;
  for (int t = 0; t < 4; ++t) {
    kl::KernelSpec s;
    s.type = static_cast<kl::KernelType>(t);
    s.gamma = t == 1 ? 0.7 : 2.0 / d;
    s.degree = 3;
    s.scale = 1.0 / d;
    s.offset = 0.5;
    out.push_back(s);
  }
  return out;
}

// A counter of the stand-in library (kl_cuda_mock_<name>: rows computed, tree passes,
// factorisations, tessellated blocks so far), -1 when it is not loaded.
long long mock_counter(const char* name) {
  void* h = dlopen(mock_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  using fn = long long (*)();
  fn f = h ? reinterpret_cast<fn>(dlsym(h, (std::string("kl_cuda_mock_") + name).c_str())) : nullptr;
  return f ? f() : -1;
}

long long mock_rows_computed() { return mock_counter("rows_computed"); }

// Hierarchical Gaussian kernels on d = 7 columns: depth 2 (three leaves, one overlapping) and
// depth 3 (two inner nodes under the root).
std::vector<kl::KernelPtr> tree_kernels() {
  auto leaf = [](std::vector<int> cols, double w, double s) {
    kl::HgkNode v;
    v.leaf = true;
    v.members = cols;
    v.weights.assign(cols.size(), w);
    for (std::size_t i = 0; i < cols.size(); ++i) v.weights[i] = w * (1.0 + 0.1 * i);
    v.scale = s;
    return v;
  };
  auto inner = [](std::vector<int> ch, double w, double s) {
    kl::HgkNode v;
    v.leaf = false;
    v.members = ch;
    v.weights.assign(ch.size(), w);
    v.scale = s;
    return v;
  };
  std::vector<kl::KernelPtr> out;
  out.push_back(kl::make_hierarchical_gaussian_kernel(
      {leaf({0, 1, 2}, 1.1, 1.0), leaf({3, 4}, 0.8, 1.0), leaf({4, 5, 6}, 1.3, 1.0),
       inner({0, 1, 2}, 0.7, 2.5)}, 7));
  out.push_back(kl::make_hierarchical_gaussian_kernel(
      {leaf({0, 1}, 1.0, 1.0), leaf({2, 3}, 0.9, 1.0), leaf({4, 5, 6}, 1.2, 1.0),
       inner({0, 1}, 0.8, 1.0), inner({2}, 1.1, 1.0), inner({3, 4}, 0.6, 3.0)}, 7));
  return out;
}

}  // namespace

TEST_CASE("gpu backend: kernel rows of the four standard kernels through the library, equal to "
          "the CPU's; subsets; small problems and other kernels stay on the CPU") {
  kl::Backend* gpu = mock_backend(kl::kGpuKernelRows);
  if (!gpu) return;
  CHECK(gpu->is_gpu());
  kl::Rng rng(ct::seed2(41, 1));
  const int n = 2300, d = 7;
  const kl::Mat X = uniform(n, d, rng);
  for (const kl::KernelSpec& spec : standard_specs(d)) {
    const kl::KernelPtr k = kl::make_standard_kernel(spec);
    std::unique_ptr<kl::KernelRows> g = gpu->kernel_rows(*k, X);
    CHECK(g != nullptr);
    if (!g) continue;
    std::unique_ptr<kl::KernelRows> c = k->rows(X);
    CHECK_EQ(g->size(), n);
    std::vector<float> rg(n), rc(n);
    double worst = 0, scale = 0;
    for (int p : {0, 1, 977, n - 1}) {
      g->row(p, rg.data(), 2);
      c->row(p, rc.data(), 2);
      for (int q = 0; q < n; ++q) {
        worst = std::max(worst, std::fabs(static_cast<double>(rg[q]) - rc[q]));
        scale = std::max(scale, std::fabs(static_cast<double>(rc[q])));
      }
      CHECK_EQ(g->diag(p), c->diag(p));
    }
    // one float rounding of values equal up to double rounding
    CHECK_LE(worst, 2.5e-7 * scale);
    // a subset large enough stays on the device, a small one goes to the CPU rows; both are
    // the kernel on the subset's points
    std::vector<int> big, small = {5, 3, 2000};
    for (int i = 0; i < n; i += 1) if (i % 11 != 0) big.push_back(i);
    for (const std::vector<int>* rows : {&big, &small}) {
      std::unique_ptr<kl::KernelRows> s = g->subset(*rows);
      const int m = static_cast<int>(rows->size());
      CHECK_EQ(s->size(), m);
      std::vector<float> r(m);
      s->row(1, r.data(), 1);
      double w = 0;
      for (int q = 0; q < m; ++q)
        w = std::max(w, std::fabs(r[q] - k->value(X.row((*rows)[1]).data(), n,
                                                  X.row((*rows)[q]).data(), n, d)));
      CHECK_LE(w, 3e-7 * std::max(scale, 1.0));
    }
  }
  // the hierarchical Gaussian kernel: its tree goes to the library
  for (const kl::KernelPtr& k : tree_kernels()) {
    CHECK(k->hierarchical() != nullptr);
    std::unique_ptr<kl::KernelRows> g = gpu->kernel_rows(*k, X);
    CHECK(g != nullptr);
    if (!g) continue;
    std::vector<float> r(n);
    double worst = 0;
    for (int p : {0, 1234, n - 1}) {
      g->row(p, r.data(), 2);
      for (int q = 0; q < n; ++q)
        worst = std::max(worst, std::fabs(r[q] - k->value(X.row(p).data(), n, X.row(q).data(),
                                                          n, d)));
    }
    CHECK_LE(worst, 1.2e-7);
    // kernel matrices through the held points
    kl::Mat Kg(9, 11), Kc(9, 11);
    gpu->kernel_matrix(*k, X.topRows(9), X.bottomRows(11), Kg, 2, kl::Callbacks());
    k->block(X.topRows(9), X.bottomRows(11), Kc, 2, kl::Callbacks());
    CHECK_EQUAL(Kg, Kc, 1e-14);
  }
  // fewer than 2048 rows: the CPU's rows
  const kl::KernelPtr gk = kl::make_standard_kernel(kl::gaussian_spec(0.5));
  CHECK(gpu->kernel_rows(*gk, kl::Mat(X.topRows(2047))) == nullptr);
  CHECK(gpu->kernel_rows(*gk, kl::Mat(X.topRows(2048))) != nullptr);
  // the operation off: the CPU's rows
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
  CHECK(gpu->kernel_rows(*gk, X) == nullptr);
  CHECK(kl::cpu_backend().kernel_rows(*gk, X) == nullptr);
}

TEST_CASE("gpu backend: kernel matrices of the Laplacian, linear and polynomial kernels with "
          "the kernel_rows operation, equal to the CPU's") {
  kl::Backend* gpu = mock_backend(kl::kGpuKernelRows);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(41, 2));
  const kl::Mat X = uniform(37, 5, rng), Z = uniform(53, 5, rng);
  for (const kl::KernelSpec& spec : standard_specs(5)) {
    const kl::KernelPtr k = kl::make_standard_kernel(spec);
    // the Gaussian kernel belongs to the kernel_matrix operation, off here
    CHECK_EQ(gpu->computes(*k), spec.type != kl::KernelType::Gaussian);
    kl::Mat Kg(37, 53), Kc(37, 53);
    gpu->kernel_matrix(*k, X, Z, Kg, 2, kl::Callbacks());
    kl::cpu_backend().kernel_matrix(*k, X, Z, Kc, 2, kl::Callbacks());
    CHECK_EQUAL(Kg, Kc, 1e-12 * std::max(1.0, Kc.cwiseAbs().maxCoeff()));
    // into a block of a larger matrix
    kl::Mat big = kl::Mat::Constant(40, 55, -7.0);
    gpu->kernel_matrix(*k, X, Z, big.block(2, 1, 37, 53), 2, kl::Callbacks());
    CHECK_EQUAL(kl::Mat(big.block(2, 1, 37, 53)), Kc, 1e-12 * std::max(1.0, Kc.cwiseAbs().maxCoeff()));
    CHECK_EQ(big(0, 0), -7.0);
    CHECK_EQ(big(39, 54), -7.0);
  }
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}

TEST_CASE("gpu backend: SVM solves with the kernel rows on the device equal those on the CPU") {
  kl::Backend* gpu = mock_backend(kl::kGpuKernelRows);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(41, 3));
  const int n = 2600, d = 4;
  const kl::Mat X = uniform(n, d, rng);
  std::vector<int> y(n);
  std::vector<double> z(n);
  for (int i = 0; i < n; ++i) {
    y[i] = X(i, 0) + X(i, 1) > 1.0 ? 1 : 0;
    z[i] = std::sin(4 * X(i, 0)) + 0.1 * rng.uniform();
  }
  const kl::KernelPtr k = kl::make_standard_kernel(kl::gaussian_spec(2.0));
  kl::SvmParams par;
  par.cost = 5;
  par.threads = 2;
  par.cache_mb = 4;  // rows are evicted and computed again
  const kl::TrainingKernel Kc(k, X), Kg(k, X, gpu);
  const long long before = mock_rows_computed();
  const kl::BinaryMachine mc = kl::svm_classify(Kc, y, 2, {1, 1}, par, {}, kl::Callbacks())[0];
  CHECK_EQ(mock_rows_computed(), before);
  const kl::BinaryMachine mg = kl::svm_classify(Kg, y, 2, {1, 1}, par, {}, kl::Callbacks())[0];
  // every row the solver computed came from the library
  CHECK_EQ(mock_rows_computed() - before, static_cast<long long>(mg.kernel_rows));
  CHECK_GT(mg.kernel_rows, 0);
  if (kl::simd_level() == kl::SimdLevel::none) {
    // the portable kernel rows are rounded differently from the stand-in's, which follows the
    // CPU's vectorised ones: the solves then part ways within the solver's tolerance
    ct::note("no vectorised instruction set: the solves are not compared");
    gpu->set_gpu_ops(kl::kGpuOpsDefault);
    return;
  }
  // the stand-in computes the same floats as the CPU: the same solve
  CHECK(mc.sv == mg.sv);
  CHECK_EQ(mc.iter, mg.iter);
  CHECK_EQUAL(kl::Vec(Eigen::Map<const kl::Vec>(mg.coef.data(), mg.coef.size())),
              kl::Vec(Eigen::Map<const kl::Vec>(mc.coef.data(), mc.coef.size())), 1e-12);
  CHECK_EQUAL(mg.rho, mc.rho, 1e-12);
  const kl::BinaryMachine rc = kl::svm_regress(Kc, z, par, {}, kl::Callbacks());
  const kl::BinaryMachine rg = kl::svm_regress(Kg, z, par, {}, kl::Callbacks());
  CHECK(rc.sv == rg.sv);
  CHECK_EQUAL(rg.rho, rc.rho, 1e-12);
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}

namespace {

// Tree passes the stand-in library has run so far (its own counter).
long long mock_tree_passes() { return mock_counter("tree_passes"); }

}  // namespace

TEST_CASE("gpu backend: the hierarchical kernel's passes (row sums, derivative contractions, "
          "the triangle) through the library equal the CPU's pass; small passes stay on the CPU") {
  kl::Backend* gpu = mock_backend(kl::kGpuHgkPass);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(41, 3));
  const int nx = 700, nz = 1500, d = 7, L = 2;
  const kl::Mat X = uniform(nx, d, rng), Z = uniform(nz, d, rng);
  const kl::Mat V = uniform(nz, L, rng).array() - 0.5, U = uniform(nx, L, rng).array() - 0.5;
  const kl::Mat Vz = uniform(nz, L, rng).array() - 0.5, Uz = uniform(nz, L, rng).array() - 0.5;
  for (const kl::KernelPtr& k : tree_kernels()) {
    const std::vector<kl::HgkNode>& nodes = *k->hierarchical();
    const bool cpu_pass = kl::hgk_pass_available(nodes);
    // the row sums and the contraction of (X, Z)
    const long long before = mock_tree_passes();
    kl::Mat KV;
    kl::Vec g;
    CHECK(gpu->hgk_pass(nodes, X, Z, V, nullptr, false, &KV, nullptr));
    CHECK(gpu->hgk_pass(nodes, X, Z, V, &U, false, nullptr, &g));
    CHECK_EQ(mock_tree_passes(), before + 2);
    kl::Mat K(nx, nz);
    k->block(X, Z, K, 2, kl::Callbacks());
    CHECK_EQUAL(KV, kl::Mat(K * V), 1e-10 * std::max(1.0, KV.cwiseAbs().maxCoeff()));
    kl::Vec gc = kl::Vec::Zero(k->num_params());
    k->contract_derivatives(X, Z, kl::Mat(U * V.transpose()), gc, 2, kl::Callbacks());
    CHECK_EQ(g.size(), gc.size());
    CHECK_EQUAL(g, gc, 1e-9 * std::max(1.0, gc.cwiseAbs().maxCoeff()));
    // the triangle of Z with itself: the pairs b > a
    kl::Vec gt;
    CHECK(gpu->hgk_pass(nodes, Z, Z, Vz, &Uz, true, nullptr, &gt));
    kl::Mat E = Uz * Vz.transpose();
    E.triangularView<Eigen::Lower>().setZero();
    kl::Vec gtc = kl::Vec::Zero(k->num_params());
    k->contract_derivatives(Z, Z, E, gtc, 2, kl::Callbacks());
    CHECK_EQUAL(gt, gtc, 1e-9 * std::max(1.0, gtc.cwiseAbs().maxCoeff()));
    if (cpu_pass) {
      kl::Vec gp;
      kl::HgkPassJob job;
      job.V = &V;
      job.U = &U;
      job.grad = &gp;
      kl::hgk_pass(nodes, d, X, Z, job, 2, kl::Callbacks());
      CHECK_EQUAL(g, gp, 1e-9 * std::max(1.0, gp.cwiseAbs().maxCoeff()));
    }
    // under a million pairs, or the operation off: the caller's CPU pass, nothing written
    const long long mid = mock_tree_passes();
    kl::Mat KVs = kl::Mat::Constant(3, 1, -1.0);
    CHECK(!gpu->hgk_pass(nodes, X.topRows(600), Z, V, nullptr, false, &KVs, nullptr));
    CHECK_EQ(KVs(0, 0), -1.0);
    gpu->set_gpu_ops(kl::kGpuOpsAll & ~kl::kGpuHgkPass);
    CHECK(!gpu->hgk_pass(nodes, X, Z, V, nullptr, false, &KV, nullptr));
    CHECK(!kl::cpu_backend().hgk_pass(nodes, X, Z, V, nullptr, false, &KV, nullptr));
    CHECK_EQ(mock_tree_passes(), mid);
    gpu->set_gpu_ops(kl::kGpuHgkPass);
  }
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}

TEST_CASE("gpu backend: hgk's objective and its gradients (bilevel, fixed; one and three "
          "outputs) with the passes on the library equal the CPU's") {
  kl::Backend* gpu = mock_backend(kl::kGpuHgkPass);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(41, 4));
  const int n1 = 1500, n2 = 700, d = 7;
  const kl::Mat X1 = uniform(n1, d, rng), X2 = uniform(n2, d, rng);
  for (int L : {1, 3}) {
    kl::Mat Y1(n1, L), Y2(n2, L);
    for (int l = 0; l < L; ++l) {
      Y1.col(l) = (X1.col(l) * 3.0).array().sin() + X1.col(l + 2).array().square();
      Y2.col(l) = (X2.col(l) * 3.0).array().sin() + X2.col(l + 2).array().square();
    }
    for (const kl::KernelPtr& k : tree_kernels()) {
      const kl::HgkFamily fam(*k->hierarchical(), d);
      kl::Vec theta = fam.start();
      for (Eigen::Index t = 0; t < theta.size(); ++t) theta[t] += 0.05 * (t % 3) - 0.05;
      kl::HgkObjective cpu(fam, X1, Y1, X2, Y2, 1.3, 1e-3, 2, kl::Callbacks());
      kl::HgkObjective dev(fam, X1, Y1, X2, Y2, 1.3, 1e-3, 2, kl::Callbacks());
      dev.set_backend(gpu);
      const long long before = mock_tree_passes();
      kl::Vec gc, gd;
      const double rc = cpu.bilevel(theta, &gc), rd = dev.bilevel(theta, &gd);
      // the residuals, G = K12 Res, the contraction of E21 and the triangle of E11 (without
      // the CPU's pass, the residuals come from the kernel block K21 on the CPU)
      const bool cpu_pass = kl::hgk_pass_available(fam.nodes_at(theta, 1.3));
      CHECK_EQ(mock_tree_passes(), before + (cpu_pass ? 4 : 3));
      CHECK_LE(std::fabs(rc - rd), 1e-11 * rc);
      CHECK_EQUAL(gd, gc, 1e-8 * std::max(1e-12, gc.cwiseAbs().maxCoeff()));
      const kl::LsFit fit = cpu.fit_at(theta);
      kl::Vec theta2 = theta.array() + 0.1;
      kl::Vec fc, fd;
      const double sc = cpu.fixed(theta2, fit, &fc), sd = dev.fixed(theta2, fit, &fd);
      CHECK_LE(std::fabs(sc - sd), 1e-11 * sc);
      CHECK_EQUAL(fd, fc, 1e-8 * std::max(1e-12, fc.cwiseAbs().maxCoeff()));
      CHECK_EQ(mock_tree_passes(), before + (cpu_pass ? 6 : 5));
      // the value alone
      CHECK_LE(std::fabs(cpu.fixed(theta2, fit, nullptr) - dev.fixed(theta2, fit, nullptr)),
               1e-11 * sc);
    }
  }
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}

namespace {

long long mock_factors_created() { return mock_counter("factors_created"); }

}  // namespace

TEST_CASE("gpu backend: hgk's least-squares SVMs (the objective's factorisation, the width and "
          "penalty grid, the fit on all rows) through the library equal the CPU's") {
  kl::Backend* gpu = mock_backend(kl::kGpuCholesky | kl::kGpuKernelRows | kl::kGpuHgkPass);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(43, 4));
  const int d = 7;
  const kl::KernelPtr k = tree_kernels()[0];
  const kl::HgkFamily fam(*k->hierarchical(), d);
  kl::Vec theta = fam.start();
  for (Eigen::Index t = 0; t < theta.size(); ++t) theta[t] += 0.05 * (t % 3) - 0.05;
  {
    // the objective: K11 (2100 rows, above the device's threshold) from the library and
    // factored there; the gradient's solve through the same factor
    const int n1 = 2100, n2 = 300;
    const kl::Mat X1 = uniform(n1, d, rng), X2 = uniform(n2, d, rng);
    kl::Mat Y1(n1, 1), Y2(n2, 1);
    Y1.col(0) = (X1.col(0) * 3.0).array().sin() + X1.col(2).array().square();
    Y2.col(0) = (X2.col(0) * 3.0).array().sin() + X2.col(2).array().square();
    kl::HgkObjective cpu(fam, X1, Y1, X2, Y2, 1.3, 1e-4, 2, kl::Callbacks());
    kl::HgkObjective dev(fam, X1, Y1, X2, Y2, 1.3, 1e-4, 2, kl::Callbacks());
    dev.set_backend(gpu);
    const long long before = mock_factors_created();
    kl::Vec gc, gd;
    const double rc = cpu.bilevel(theta, &gc), rd = dev.bilevel(theta, &gd);
    CHECK_EQ(mock_factors_created(), before + 1);
    CHECK_LE(std::fabs(rc - rd), 1e-9 * rc);
    CHECK_EQUAL(gd, gc, 1e-7 * gc.cwiseAbs().maxCoeff());
    CHECK_EQUAL(dev.fit_at(theta).alpha, cpu.fit_at(theta).alpha,
                1e-7 * cpu.fit_at(theta).alpha.cwiseAbs().maxCoeff());
    // a new theta: a new factorisation
    const kl::Vec theta2 = theta.array() + 0.1;
    CHECK_LE(std::fabs(cpu.bilevel(theta2, nullptr) - dev.bilevel(theta2, nullptr)),
             1e-9 * rc);
    CHECK_EQ(mock_factors_created(), before + 2);
  }
  {
    // the learning: the grid's factorisations (2106 fit rows) and the fit on all rows
    const int n = 2600;
    const kl::Mat X = uniform(n, d, rng);
    kl::Mat Y(n, 1);
    Y.col(0) = (X.col(0) * 3.0).array().sin() + X.col(2).array().square();
    kl::HgkOptions opt;
    opt.split1 = 0.81;
    opt.split2 = 0.1;
    opt.maxit = 1;
    opt.anneal_steps = 1;
    opt.gamma_factors = {0.5, 2.0};
    opt.lambdas = {1e-4, 1e-2};
    opt.threads = 2;
    kl::Rng r1(7), r2(7);
    const kl::HgkResult a = kl::hgk_learn(fam, X, Y, theta, opt, r1, kl::Callbacks());
    opt.backend = gpu;
    const long long before = mock_factors_created();
    const kl::HgkResult b = kl::hgk_learn(fam, X, Y, theta, opt, r2, kl::Callbacks());
    // two grids of 4 points, the objective's and the fit on all rows
    CHECK_GE(mock_factors_created(), before + 10);
    CHECK_EQ(a.steps, b.steps);
    CHECK_EQ(a.gamma, b.gamma);
    CHECK_EQ(a.lambda, b.lambda);
    CHECK_EQUAL(b.theta, a.theta, 1e-8);
    CHECK_EQUAL(b.fit.alpha, a.fit.alpha, 1e-6 * a.fit.alpha.cwiseAbs().maxCoeff());
    CHECK_LE(std::fabs(b.fit.bias[0] - a.fit.bias[0]), 1e-6 * std::fabs(a.fit.bias[0]) + 1e-9);
  }
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}

namespace {

long long mock_tessellated_blocks() { return mock_counter("tessellated_blocks"); }

}  // namespace

TEST_CASE("gpu backend: tessellated kernel matrices through the library equal the CPU's; "
          "small blocks and the operation off stay on the CPU; a tkl fit with the start kernel "
          "on the library equals the CPU's") {
  kl::Backend* gpu = mock_backend(kl::kGpuTklBlock);
  if (!gpu) return;
  kl::Rng rng(ct::seed2(41, 5));
  const int d = 3;
  // points partly outside the box [0.1, 0.9]^3 (clamped by the kernel)
  const kl::Mat X = uniform(1100, d, rng), Z = uniform(1000, d, rng);
  const kl::Vec lo = kl::Vec::Constant(d, 0.1), hi = kl::Vec::Constant(d, 0.9);
  for (int degree : {1, 2}) {
    const int h = static_cast<int>(kl::monomial_count(d, degree));
    kl::Mat R = uniform(2 * h, 2 * h, rng);
    const kl::Mat P = R * R.transpose() / (2.0 * h) + kl::Mat::Identity(2 * h, 2 * h);
    const kl::KernelPtr k = kl::make_tessellated_kernel(P, degree, lo, hi);
    CHECK(k->tessellated() != nullptr);
    CHECK(gpu->computes(*k));
    const long long before = mock_tessellated_blocks();
    kl::Mat Kg(X.rows(), Z.rows()), Kc(X.rows(), Z.rows());
    gpu->kernel_matrix(*k, X, Z, Kg, 2, kl::Callbacks());
    k->block(X, Z, Kc, 2, kl::Callbacks());
    CHECK_EQ(mock_tessellated_blocks(), before + 1);
    CHECK_EQUAL(Kg, Kc, 1e-12 * std::max(1.0, Kc.cwiseAbs().maxCoeff()));
    // into a block of a larger matrix
    kl::Mat big = kl::Mat::Constant(X.rows() + 3, Z.rows() + 2, -7.0);
    gpu->kernel_matrix(*k, X, Z, big.block(2, 1, X.rows(), Z.rows()), 2, kl::Callbacks());
    CHECK_EQUAL(kl::Mat(big.block(2, 1, X.rows(), Z.rows())), Kc,
                1e-12 * std::max(1.0, Kc.cwiseAbs().maxCoeff()));
    CHECK_EQ(big(0, 0), -7.0);
    CHECK_EQ(big(X.rows() + 2, Z.rows() + 1), -7.0);
    // under a million entries, or with the operation off: the CPU's block
    kl::Mat Ks(50, Z.rows());
    gpu->kernel_matrix(*k, X.topRows(50), Z, Ks, 2, kl::Callbacks());
    CHECK_EQUAL(Ks, kl::Mat(Kc.topRows(50)), 1e-12 * std::max(1.0, Kc.cwiseAbs().maxCoeff()));
    gpu->set_gpu_ops(kl::kGpuOpsDefault);
    CHECK(!gpu->computes(*k));
    gpu->kernel_matrix(*k, X, Z, Kg, 2, kl::Callbacks());
    CHECK_EQ(mock_tessellated_blocks(), before + 2);
    gpu->set_gpu_ops(kl::kGpuTklBlock);
  }
  // a tkl regression fit: the start kernel K(I) on the library, the rest as on the CPU
  kl::Mat Xf = X.topRows(1000);
  std::vector<double> z(1000);
  for (int i = 0; i < 1000; ++i) z[i] = std::sin(4 * Xf(i, 0)) + Xf(i, 1) * Xf(i, 2);
  kl::TklParams par;
  par.degree = 1;
  par.maxit = 3;
  par.normalize = true;
  par.svm.cost = 1.0;
  par.svm.epsilon = 0.1;
  par.svm.threads = 2;
  const kl::TklResult rc = kl::tkl_regress(Xf, z, lo, hi, par, kl::Callbacks());
  par.backend = gpu;
  const long long before = mock_tessellated_blocks();
  const kl::TklResult rg = kl::tkl_regress(Xf, z, lo, hi, par, kl::Callbacks());
  CHECK_EQ(mock_tessellated_blocks(), before + 1);
  CHECK_EQ(rg.trace.size(), rc.trace.size());
  CHECK_EQUAL(rg.P, rc.P, 1e-8 * rc.P.cwiseAbs().maxCoeff());
  CHECK_LE(std::fabs(rg.trace.back().objective - rc.trace.back().objective),
           1e-8 * std::fabs(rc.trace.back().objective));
  gpu->set_gpu_ops(kl::kGpuOpsDefault);
}
