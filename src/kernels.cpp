// Glue: kernel matrices, backend information, ridge and exact kernel ridge regression.
#include "glue.hpp"
#include "core/simd.hpp"
#include "core/ridge.hpp"

// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_matrix(const Eigen::Map<Eigen::MatrixXd> x,
                                      const Eigen::Map<Eigen::MatrixXd> z, Rcpp::List kernel,
                                      int threads, Rcpp::List backend) {
  const kl::KernelSpec spec = klr::kernel_spec_from_r(kernel);
  Rcpp::NumericMatrix out(static_cast<int>(x.rows()), static_cast<int>(z.rows()));
  Eigen::Map<Eigen::MatrixXd> K(out.begin(), x.rows(), z.rows());
  kl::Callbacks cb = klr::make_callbacks();
  klr::backend_from_r(backend).kernel_matrix(spec, x, z, K, threads, cb);
  return out;
}

// Reference values by plain loops (tests compare the blocked routine with them).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_matrix_naive(const Eigen::Map<Eigen::MatrixXd> x,
                                            const Eigen::Map<Eigen::MatrixXd> z,
                                            Rcpp::List kernel) {
  const kl::KernelSpec spec = klr::kernel_spec_from_r(kernel);
  kl::validate(spec);
  const int n = static_cast<int>(x.rows()), m = static_cast<int>(z.rows());
  const int d = static_cast<int>(x.cols());
  Rcpp::NumericMatrix out(n, m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i)
      out(i, j) = kl::kernel_value(spec, x.data() + i, x.rows(), z.data() + j, z.rows(), d);
  return out;
}

// [[Rcpp::export]]
Rcpp::List cpp_gpu_probe(std::string lib) {
  std::string why;
  kl::Backend* g = kl::gpu_backend(lib, &why);
  if (g) return Rcpp::List::create(Rcpp::Named("available") = true,
                                   Rcpp::Named("name") = g->name(),
                                   Rcpp::Named("why") = "");
  return Rcpp::List::create(Rcpp::Named("available") = false, Rcpp::Named("name") = "cpu",
                            Rcpp::Named("why") = why);
}

// [[Rcpp::export]]
Rcpp::List cpp_ridge_fit(const Eigen::Map<Eigen::MatrixXd> x,
                         const Eigen::Map<Eigen::MatrixXd> y, double lambda, bool intercept,
                         int threads) {
  kl::RidgeFit f = kl::ridge_fit(x, y, lambda, intercept, threads);
  return Rcpp::List::create(Rcpp::Named("coef") = Rcpp::wrap(f.coef),
                            Rcpp::Named("intercept") = Rcpp::wrap(f.intercept));
}

// [[Rcpp::export]]
Rcpp::List cpp_kernel_ridge_fit(const Eigen::Map<Eigen::MatrixXd> x,
                                const Eigen::Map<Eigen::MatrixXd> y, Rcpp::List kernel,
                                double lambda, bool intercept, int threads, Rcpp::List backend,
                                SEXP progress) {
  const kl::KernelSpec spec = klr::kernel_spec_from_r(kernel);
  kl::Callbacks cb = klr::make_callbacks(progress);
  const Eigen::Index n = x.rows();
  Eigen::MatrixXd K(n, n);
  kl::Callbacks gram_cb;
  gram_cb.interrupted = cb.interrupted;
  if (cb.progress) gram_cb.progress = [&cb](double f) { cb.report(0.5 * f); };
  klr::backend_from_r(backend).kernel_matrix(spec, x, x, K, threads, gram_cb);
  kl::KrrFit fit = klr::with_eigen_threads(
      threads, [&]() { return kl::kernel_ridge_solve(K, y, lambda, intercept, cb); });
  cb.report(1.0);
  return Rcpp::List::create(Rcpp::Named("alpha") = Rcpp::wrap(fit.alpha),
                            Rcpp::Named("bias") = Rcpp::wrap(fit.bias));
}

// Decision values f(x) = k(x, X_train) alpha + b, in row blocks so that memory stays bounded.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_kernel_predict(const Eigen::Map<Eigen::MatrixXd> newx,
                                       const Eigen::Map<Eigen::MatrixXd> x,
                                       const Eigen::Map<Eigen::MatrixXd> alpha,
                                       const Eigen::Map<Eigen::VectorXd> bias, Rcpp::List kernel,
                                       int threads, Rcpp::List backend) {
  const kl::KernelSpec spec = klr::kernel_spec_from_r(kernel);
  kl::Callbacks cb = klr::make_callbacks();
  kl::Backend& be = klr::backend_from_r(backend);
  const Eigen::Index m = newx.rows(), n = x.rows(), L = alpha.cols();
  if (alpha.rows() != n || bias.size() != L) Rcpp::stop("internal error: model shapes differ");
  Rcpp::NumericMatrix out(static_cast<int>(m), static_cast<int>(L));
  Eigen::Map<Eigen::MatrixXd> F(out.begin(), m, L);
  // Blocks of at most ~64 MB of kernel values.
  const Eigen::Index rows = std::max<Eigen::Index>(1, std::min<Eigen::Index>(m, (8 << 20) / std::max<Eigen::Index>(n, 1)));
  Eigen::MatrixXd Kb;
  for (Eigen::Index r0 = 0; r0 < m; r0 += rows) {
    const Eigen::Index nr = std::min(rows, m - r0);
    Kb.resize(nr, n);
    be.kernel_matrix(spec, newx.middleRows(r0, nr), x, Kb, threads, cb);
    klr::with_eigen_threads(threads, [&]() {
      F.middleRows(r0, nr).noalias() = Kb * alpha;
      return 0;
    });
    F.middleRows(r0, nr).rowwise() += bias.transpose();
    cb.check();
  }
  return out;
}

// C = A B' through the backend's GEMM (the floor that kernel matrices are measured against).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_gemm_nt(const Eigen::Map<Eigen::MatrixXd> a,
                                const Eigen::Map<Eigen::MatrixXd> b, int threads,
                                Rcpp::List backend) {
  if (a.cols() != b.cols()) Rcpp::stop("a and b must have the same number of columns");
  Rcpp::NumericMatrix out(static_cast<int>(a.rows()), static_cast<int>(b.rows()));
  Eigen::Map<Eigen::MatrixXd> C(out.begin(), a.rows(), b.rows());
  klr::backend_from_r(backend).gemm_nt(a, b, C, threads);
  return out;
}

// A B' (tn = FALSE) or A'B (tn = TRUE) by the vectorised tiled GEMM of the core, with the
// widest kernel up to `simd` (1 AVX2, 2 AVX-512) that the processor has, or by Eigen
// (simd = 0, or no such kernel).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_simd_gemm(const Eigen::Map<Eigen::MatrixXd> a,
                                  const Eigen::Map<Eigen::MatrixXd> b, bool tn, int threads,
                                  int simd) {
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
}
