// Glue: kernel matrices, backend information, ridge and exact kernel ridge regression.
#include <algorithm>

#include "glue.hpp"
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
    kl::Backend& be = klr::backend_from_r(backend);
    be.kernel_matrix(*k, x, x, K, threads, cb.stage(0.0, 0.5));
    kl::KrrFit fit = klr::with_eigen_threads(threads, [&]() {
      return kl::kernel_ridge_solve(K, y, lambda, intercept, threads, cb, be);
    });
    cb.report(1.0);
    return Rcpp::List::create(Rcpp::Named("alpha") = Rcpp::wrap(fit.alpha),
                              Rcpp::Named("bias") = Rcpp::wrap(fit.bias));
  });
}

// Cross-validation of kernel ridge regression over kernels x penalties (kl::kernel_ridge_grid):
// kernels a list of .kernel_spec() lists, foldid the fold of every row (1..folds), lambdas the
// penalties per training row. The held-out values of every (kernel, fold, penalty), as a list
// in that order (the penalty fastest).
// [[Rcpp::export]]
Rcpp::List cpp_kernel_ridge_grid(const Eigen::Map<Eigen::MatrixXd> x,
                                 const Eigen::Map<Eigen::MatrixXd> y, Rcpp::List kernels,
                                 Rcpp::IntegerVector foldid, Rcpp::NumericVector lambdas,
                                 bool intercept, int threads, Rcpp::List backend) {
  return klr::guard([&]() {
    std::vector<kl::KernelPtr> ks;
    for (R_xlen_t i = 0; i < kernels.size(); ++i)
      ks.push_back(klr::kernel_from_r(Rcpp::List(kernels[i])));
    std::vector<int> fold(static_cast<std::size_t>(foldid.size()));
    int folds = 0;
    for (R_xlen_t i = 0; i < foldid.size(); ++i) {
      if (foldid[i] == NA_INTEGER || foldid[i] < 1) Rcpp::stop("internal error: bad fold number");
      fold[static_cast<std::size_t>(i)] = foldid[i] - 1;
      folds = std::max(folds, static_cast<int>(foldid[i]));
    }
    const std::vector<double> lam = Rcpp::as<std::vector<double>>(lambdas);
    kl::Backend& be = klr::backend_from_r(backend);
    const kl::Callbacks cb = klr::make_callbacks();
    Eigen::Index most = 0;
    for (int f = 0; f < folds; ++f)
      most = std::max<Eigen::Index>(
          most, static_cast<Eigen::Index>(std::count_if(fold.begin(), fold.end(),
                                                        [f](int v) { return v != f; })));
    const int workers = kl::kernel_ridge_grid_workers(
        static_cast<int>(ks.size()) * folds, most, threads, be);
    const std::vector<kl::Mat> dec = klr::with_eigen_threads(workers > 1 ? 1 : threads, [&]() {
      return kl::kernel_ridge_grid(ks, x, y, fold, folds, lam, intercept, threads, be, cb);
    });
    Rcpp::List out(static_cast<R_xlen_t>(dec.size()));
    for (std::size_t i = 0; i < dec.size(); ++i) out[static_cast<R_xlen_t>(i)] = Rcpp::wrap(dec[i]);
    return out;
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
