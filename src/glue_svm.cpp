// Glue: kernel support vector machines.
#include "glue.hpp"
#include "glue_svm.hpp"

namespace {

using MapMat = Eigen::Map<Eigen::MatrixXd>;

// The training kernel: features with a kernel spec, or a precomputed n x n matrix. The
// backend (.kl_backend_arg()) may compute the rows of the solver's cache (the GPU).
std::unique_ptr<kl::TrainingKernel> training_kernel(SEXP x, SEXP kpre, const Rcpp::List& kernel,
                                                    const Rcpp::List& backend) {
  if (!Rf_isNull(kpre)) {
    // The core keeps a pointer to the matrix: it must be R's own double storage, not a copy.
    if (TYPEOF(kpre) != REALSXP || !Rf_isMatrix(kpre))
      Rcpp::stop("internal error: a precomputed kernel must be a double matrix");
    Rcpp::NumericMatrix K(kpre);
    if (K.nrow() != K.ncol()) Rcpp::stop("internal error: precomputed kernel not square");
    return std::unique_ptr<kl::TrainingKernel>(new kl::TrainingKernel(K.begin(), K.nrow()));
  }
  Rcpp::NumericMatrix X(x);
  MapMat Xm(X.begin(), X.nrow(), X.ncol());
  return std::unique_ptr<kl::TrainingKernel>(
      new kl::TrainingKernel(klr::kernel_from_r(kernel), Xm, &klr::backend_from_r(backend)));
}

// Rows (1-based in R) as 0-based indices, and back.
std::vector<int> zero_based(const Rcpp::IntegerVector& v) {
  std::vector<int> out(v.size());
  for (R_xlen_t i = 0; i < v.size(); ++i) out[i] = v[i] - 1;
  return out;
}

Rcpp::IntegerVector one_based(const std::vector<int>& v) {
  Rcpp::IntegerVector out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i] + 1;
  return out;
}

std::vector<kl::SparseMachine> machines_from_r(const Eigen::Map<Eigen::MatrixXd>& coef,
                                               SEXP nsv, const Eigen::Map<Eigen::VectorXd>& rho) {
  if (rho.size() < 1) Rcpp::stop("internal error: the model has no rho");
  if (Rf_isNull(nsv)) {
    // Regression: one machine over all support vectors.
    kl::SparseMachine m;
    m.col.resize(coef.rows());
    m.coef.resize(coef.rows());
    for (Eigen::Index s = 0; s < coef.rows(); ++s) {
      m.col[s] = static_cast<int>(s);
      m.coef[s] = coef(s, 0);
    }
    m.rho = rho[0];
    return {m};
  }
  std::vector<int> n = Rcpp::as<std::vector<int>>(nsv);
  return kl::ovo_machines(coef, n, rho);
}

}  // namespace

namespace klr {

kl::SvmParams svm_params_from_r(const Rcpp::List& p, int threads) {
  kl::SvmParams par;
  par.cost = Rcpp::as<double>(p["cost"]);
  par.epsilon = Rcpp::as<double>(p["epsilon"]);
  par.tol = Rcpp::as<double>(p["tol"]);
  par.shrinking = Rcpp::as<bool>(p["shrinking"]);
  par.cache_mb = Rcpp::as<double>(p["cache"]);
  par.max_iter = static_cast<long>(Rcpp::as<double>(p["max_iter"]));
  par.probability = Rcpp::as<bool>(p["probability"]);
  par.prob_folds = Rcpp::as<int>(p["prob_folds"]);
  par.seed = klr::seed_from_r(Rcpp::IntegerVector(p["seed"]));
  par.threads = kl::clamp_threads(threads);
  return par;
}

Rcpp::List classify_result(const std::vector<kl::BinaryMachine>& m, const std::vector<int>& y,
                           int k) {
  std::vector<int> sv_rows, nsv;
  Eigen::MatrixXd coef;
  kl::compact_ovo(m, y, k, &sv_rows, &nsv, &coef);
  const std::size_t P = m.size();
  Rcpp::NumericVector rho(P), obj(P), probA(P), probB(P), iter(P), rows(P);
  Rcpp::LogicalVector conv(P);
  Rcpp::IntegerVector pair_nsv(P);
  for (std::size_t t = 0; t < P; ++t) {
    rho[t] = m[t].rho;
    obj[t] = m[t].obj;
    probA[t] = m[t].probA;
    probB[t] = m[t].probB;
    iter[t] = static_cast<double>(m[t].iter);
    rows[t] = static_cast<double>(m[t].kernel_rows);
    conv[t] = m[t].converged;
    pair_nsv[t] = static_cast<int>(m[t].sv.size());
  }
  return Rcpp::List::create(
      Rcpp::Named("sv_index") = one_based(sv_rows), Rcpp::Named("nsv") = Rcpp::wrap(nsv),
      Rcpp::Named("coefs") = Rcpp::wrap(coef), Rcpp::Named("rho") = rho,
      Rcpp::Named("obj") = obj, Rcpp::Named("iter") = iter, Rcpp::Named("converged") = conv,
      Rcpp::Named("kernel_rows") = rows, Rcpp::Named("pair_nsv") = pair_nsv,
      Rcpp::Named("probA") = probA, Rcpp::Named("probB") = probB);
}

Rcpp::List regress_result(const kl::BinaryMachine& m) {
  return Rcpp::List::create(
      Rcpp::Named("sv_index") = one_based(m.sv), Rcpp::Named("coefs") = Rcpp::wrap(m.coef),
      Rcpp::Named("rho") = m.rho, Rcpp::Named("obj") = m.obj,
      Rcpp::Named("iter") = static_cast<double>(m.iter), Rcpp::Named("converged") = m.converged,
      Rcpp::Named("kernel_rows") = static_cast<double>(m.kernel_rows));
}

}  // namespace klr

// One-vs-one C-classification; y: class labels 1..k.
// [[Rcpp::export]]
Rcpp::List cpp_svm_classify(SEXP x, SEXP kpre, Rcpp::IntegerVector y, int k,
                            Rcpp::NumericVector weight, Rcpp::List kernel, Rcpp::List params,
                            Rcpp::List warm, int threads, SEXP progress, Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::List {
    auto K = training_kernel(x, kpre, kernel, backend);
    kl::SvmParams par = klr::svm_params_from_r(params, threads);
    std::vector<int> yy = klr::svm_labels_from_r(y);
    std::vector<std::vector<double>> w0;
    for (R_xlen_t t = 0; t < warm.size(); ++t) w0.push_back(Rcpp::as<std::vector<double>>(warm[t]));
    kl::Callbacks cb = klr::make_callbacks(progress);
    std::vector<kl::BinaryMachine> m =
        kl::svm_classify(*K, yy, k, Rcpp::as<std::vector<double>>(weight), par, w0, cb);
    return klr::classify_result(m, yy, k);
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_svm_regress(SEXP x, SEXP kpre, Rcpp::NumericVector z, Rcpp::List kernel,
                           Rcpp::List params, SEXP warm, int threads, SEXP progress,
                           Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::List {
    auto K = training_kernel(x, kpre, kernel, backend);
    kl::SvmParams par = klr::svm_params_from_r(params, threads);
    std::vector<double> w0;
    if (!Rf_isNull(warm)) w0 = Rcpp::as<std::vector<double>>(warm);
    kl::Callbacks cb = klr::make_callbacks(progress);
    kl::BinaryMachine m =
        kl::svm_regress(*K, Rcpp::as<std::vector<double>>(z), par, w0, cb);
    return klr::regress_result(m);
  });
}

// Decision values of new rows; nsv = NULL for regression.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_svm_decision(const Eigen::Map<Eigen::MatrixXd> x,
                                     const Eigen::Map<Eigen::MatrixXd> sv,
                                     const Eigen::Map<Eigen::MatrixXd> coef, SEXP nsv,
                                     const Eigen::Map<Eigen::VectorXd> rho, Rcpp::List kernel,
                                     int threads, Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    std::vector<kl::SparseMachine> m = machines_from_r(coef, nsv, rho);
    Rcpp::NumericMatrix out(static_cast<int>(x.rows()), static_cast<int>(m.size()));
    Eigen::Map<Eigen::MatrixXd> D(out.begin(), x.rows(), m.size());
    kl::Callbacks cb = klr::make_callbacks();
    kl::kernel_expansion(klr::backend_from_r(backend), *klr::kernel_from_r(kernel), x, sv, m, D,
                         threads, cb);
    return out;
  });
}

// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_svm_decision_pre(const Eigen::Map<Eigen::MatrixXd> kx,
                                         const Eigen::Map<Eigen::MatrixXd> coef, SEXP nsv,
                                         const Eigen::Map<Eigen::VectorXd> rho, int threads) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    std::vector<kl::SparseMachine> m = machines_from_r(coef, nsv, rho);
    Rcpp::NumericMatrix out(static_cast<int>(kx.rows()), static_cast<int>(m.size()));
    Eigen::Map<Eigen::MatrixXd> D(out.begin(), kx.rows(), m.size());
    kl::expansion_from_block(kx, m, D, threads);
    return out;
  });
}

// The class (1..k) each row's one-vs-one decision values vote for.
// [[Rcpp::export]]
Rcpp::IntegerVector cpp_ovo_vote(const Eigen::Map<Eigen::MatrixXd> dec, int k) {
  return klr::guard([&]() -> Rcpp::IntegerVector {
    return klr::labels_to_r(kl::ovo_vote(dec, k));
  });
}

// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_ovo_prob(const Eigen::Map<Eigen::MatrixXd> dec, int k,
                                 const Eigen::Map<Eigen::VectorXd> A,
                                 const Eigen::Map<Eigen::VectorXd> B) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    return Rcpp::wrap(kl::ovo_probabilities(dec, k, A, B));
  });
}

// Decision values on `test` rows for each cost of an increasing path, fitted on `train` rows
// (1-based; y: class labels 1..k, or the response when k < 2) with warm starts: a list of test x pairs matrices (classification) or of vectors.
// [[Rcpp::export]]
Rcpp::List cpp_svm_path(SEXP x, SEXP kpre, SEXP y, int k, Rcpp::NumericVector weight,
                        Rcpp::List kernel, Rcpp::List params, Rcpp::IntegerVector train,
                        Rcpp::IntegerVector test, Rcpp::NumericVector costs, int threads,
                        Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::List {
    auto K = training_kernel(x, kpre, kernel, backend);
    kl::SvmParams par = klr::svm_params_from_r(params, threads);
    kl::Callbacks cb = klr::make_callbacks();
    std::vector<int> tr = zero_based(train), te = zero_based(test);
    std::vector<double> cs = Rcpp::as<std::vector<double>>(costs);
    Rcpp::List out(cs.size());
    bool converged = true;
    if (k >= 2) {
      std::vector<int> yy = klr::svm_labels_from_r(Rcpp::IntegerVector(y));
      std::vector<Eigen::MatrixXd> d = kl::svm_classify_path(
          *K, yy, k, Rcpp::as<std::vector<double>>(weight), tr, te, cs, par, cb, &converged);
      for (std::size_t c = 0; c < cs.size(); ++c) out[c] = Rcpp::wrap(d[c]);
    } else {
      std::vector<Eigen::VectorXd> d = kl::svm_regress_path(
          *K, Rcpp::as<std::vector<double>>(y), tr, te, cs, par, cb, &converged);
      for (std::size_t c = 0; c < cs.size(); ++c) out[c] = Rcpp::wrap(d[c]);
    }
    out.attr("converged") = converged;
    return out;
  });
}
