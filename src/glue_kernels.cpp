// Glue: kernel matrices, backend information, ridge and exact kernel ridge regression.
#include "glue.hpp"
#include "core/linalg/simd.hpp"
#include "core/heads/ridge.hpp"
#include "core/machines/kernel_ridge.hpp"
#include "core/backend/expansion.hpp"

// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_matrix(const Eigen::Map<Eigen::MatrixXd> x,
                                      const Eigen::Map<Eigen::MatrixXd> z, Rcpp::List kernel,
                                      int threads, Rcpp::List backend) {
  return klr::guard([&]() {
    const kl::KernelPtr k = klr::kernel_from_r(kernel);
    Rcpp::NumericMatrix out(static_cast<int>(x.rows()), static_cast<int>(z.rows()));
    Eigen::Map<Eigen::MatrixXd> K(out.begin(), x.rows(), z.rows());
    kl::Callbacks cb = klr::make_callbacks();
    klr::backend_from_r(backend).kernel_matrix(*k, x, z, K, threads, cb);
    return out;
  });
}

// Reference values by plain loops (tests compare the blocked routines with them).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_matrix_naive(const Eigen::Map<Eigen::MatrixXd> x,
                                            const Eigen::Map<Eigen::MatrixXd> z,
                                            Rcpp::List kernel) {
  return klr::guard([&]() {
    const kl::KernelPtr k = klr::kernel_from_r(kernel);
    const int n = static_cast<int>(x.rows()), m = static_cast<int>(z.rows());
    const int d = static_cast<int>(x.cols());
    k->check_dim(d, "x");
    Rcpp::NumericMatrix out(n, m);
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < n; ++i)
        out(i, j) = k->value(x.data() + i, x.rows(), z.data() + j, z.rows(), d);
    return out;
  });
}

// g_t = sum_kl E_kl dK(x, z)_kl / dtheta_t for a kernel with parameter derivatives.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_kernel_derivatives(const Eigen::Map<Eigen::MatrixXd> x,
                                           const Eigen::Map<Eigen::MatrixXd> z,
                                           const Eigen::Map<Eigen::MatrixXd> e,
                                           Rcpp::List kernel, int threads) {
  return klr::guard([&]() {
    const kl::KernelPtr k = klr::kernel_from_r(kernel);
    Eigen::VectorXd g(k->num_params());
    if (k->num_params() == 0) throw kl::Error("the " + k->name() + " kernel has no parameter derivatives");
    k->contract_derivatives(x, z, e, g, threads, klr::make_callbacks());
    return Rcpp::NumericVector(g.data(), g.data() + g.size());
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_gpu_probe(std::string lib) {
  return klr::guard([&]() -> Rcpp::List {
    std::string why;
    kl::Backend* g = kl::gpu_backend(lib, &why);
    if (g) return Rcpp::List::create(Rcpp::Named("available") = true,
                                     Rcpp::Named("name") = g->name(),
                                     Rcpp::Named("why") = "");
    return Rcpp::List::create(Rcpp::Named("available") = false, Rcpp::Named("name") = "cpu",
                              Rcpp::Named("why") = why);
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_ridge_fit(const Eigen::Map<Eigen::MatrixXd> x,
                         const Eigen::Map<Eigen::MatrixXd> y, double lambda, bool intercept,
                         int threads) {
  return klr::guard([&]() -> Rcpp::List {
    kl::RidgeFit f = kl::ridge_fit(x, y, lambda, intercept, threads);
    return Rcpp::List::create(Rcpp::Named("coef") = Rcpp::wrap(f.coef),
                              Rcpp::Named("intercept") = Rcpp::wrap(f.intercept));
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_kernel_ridge_fit(const Eigen::Map<Eigen::MatrixXd> x,
                                const Eigen::Map<Eigen::MatrixXd> y, Rcpp::List kernel,
                                double lambda, bool intercept, int threads, Rcpp::List backend,
                                SEXP progress) {
  return klr::guard([&]() {
    const kl::KernelPtr k = klr::kernel_from_r(kernel);
    kl::Callbacks cb = klr::make_callbacks(progress);
    const Eigen::Index n = x.rows();
    Eigen::MatrixXd K(n, n);
    klr::backend_from_r(backend).kernel_matrix(*k, x, x, K, threads, cb.stage(0.0, 0.5));
    kl::KrrFit fit = klr::with_eigen_threads(
        threads, [&]() { return kl::kernel_ridge_solve(K, y, lambda, intercept, threads, cb); });
    cb.report(1.0);
    return Rcpp::List::create(Rcpp::Named("alpha") = Rcpp::wrap(fit.alpha),
                              Rcpp::Named("bias") = Rcpp::wrap(fit.bias));
  });
}

// Values f(x) = k(x, X_train) alpha + b through the core's kernel expansion.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_predict(const Eigen::Map<Eigen::MatrixXd> newx,
                                       const Eigen::Map<Eigen::MatrixXd> x,
                                       const Eigen::Map<Eigen::MatrixXd> alpha,
                                       const Eigen::Map<Eigen::VectorXd> bias, Rcpp::List kernel,
                                       int threads, Rcpp::List backend) {
  return klr::guard([&]() {
    const kl::KernelPtr k = klr::kernel_from_r(kernel);
    if (alpha.rows() != x.rows() || bias.size() != alpha.cols())
      throw kl::Error("internal error: model shapes differ");
    Rcpp::NumericMatrix out(static_cast<int>(newx.rows()), static_cast<int>(alpha.cols()));
    Eigen::Map<Eigen::MatrixXd> F(out.begin(), newx.rows(), alpha.cols());
    kl::kernel_expansion(klr::backend_from_r(backend), *k, newx, x,
                         kl::dense_machines(alpha, bias), F, threads, klr::make_callbacks());
    return out;
  });
}

// C = A B' through the backend's GEMM (the floor that kernel matrices are measured against).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_gemm_nt(const Eigen::Map<Eigen::MatrixXd> a,
                                const Eigen::Map<Eigen::MatrixXd> b, int threads,
                                Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    if (a.cols() != b.cols()) Rcpp::stop("a and b must have the same number of columns");
    Rcpp::NumericMatrix out(static_cast<int>(a.rows()), static_cast<int>(b.rows()));
    Eigen::Map<Eigen::MatrixXd> C(out.begin(), a.rows(), b.rows());
    klr::backend_from_r(backend).gemm_nt(a, b, C, threads);
    return out;
  });
}

// A B' (tn = FALSE) or A'B (tn = TRUE) by the vectorised tiled GEMM of the core, with the
// widest kernel up to `simd` (1 AVX2, 2 AVX-512) that the processor has, or by Eigen
// (simd = 0, or no such kernel).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_simd_gemm(const Eigen::Map<Eigen::MatrixXd> a,
                                  const Eigen::Map<Eigen::MatrixXd> b, bool tn, int threads,
                                  int simd) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    if (simd < 0 || simd > 2) Rcpp::stop("simd must be 0, 1 or 2");
    if (tn ? a.rows() != b.rows() : a.cols() != b.cols()) Rcpp::stop("a and b do not conform");
    const Eigen::Index m = tn ? a.cols() : a.rows(), n = tn ? b.cols() : b.rows();
    const Eigen::Index k = tn ? a.rows() : a.cols();
    Rcpp::NumericMatrix out(static_cast<int>(m), static_cast<int>(n));
    Eigen::Map<Eigen::MatrixXd> C(out.begin(), m, n);
    const kl::SimdLevel level = std::min(static_cast<kl::SimdLevel>(simd), kl::simd_level());
    if (level == kl::SimdLevel::none) {
      if (tn)
        C.noalias() = a.transpose() * b;
      else
        C.noalias() = a * b.transpose();
    } else if (tn) {
      kl::gemm_parallel(level, m, n, k, a.data(), a.rows(), 1, b.data(), 1, b.rows(), C.data(),
                        m, threads);
    } else {
      kl::gemm_parallel(level, m, n, k, a.data(), 1, a.rows(), b.data(), b.rows(), 1, C.data(),
                        m, threads);
    }
    return out;
  });
}
