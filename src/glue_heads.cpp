// Glue: linear heads (multinomial logistic regression, linear SVM).
#include "glue.hpp"
#include "core/heads/linear_svm.hpp"
#include "core/heads/logistic.hpp"
#include "core/base/rng.hpp"

namespace {

kl::Vec to_vec_or_empty(SEXP v) {
  if (Rf_isNull(v)) return kl::Vec();
  Rcpp::NumericVector nv(v);
  return Eigen::Map<const Eigen::VectorXd>(nv.begin(), nv.size());
}

Rcpp::LogicalVector to_logical(const std::vector<bool>& v) {
  Rcpp::LogicalVector out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  return out;
}

}  // namespace

// Multinomial logistic regression; y: class labels 1..K.
// [[Rcpp::export]]
Rcpp::List cpp_logistic_fit(const Eigen::Map<Eigen::MatrixXd> x, Rcpp::IntegerVector y, int K,
                            double lambda, SEXP weights, int maxit, double tol, int threads,
                            double ftol = 1e-14, int memory = 10, SEXP progress = R_NilValue,
                            SEXP init = R_NilValue) {
  return klr::guard([&]() -> Rcpp::List {
    kl::LogisticOptions opt;
    if (!Rf_isNull(init)) {
      Rcpp::List il(init);
      opt.init_coef = Rcpp::as<Eigen::MatrixXd>(il["coefficients"]);
      opt.init_intercept = Rcpp::as<Eigen::VectorXd>(il["intercept"]);
    }
    opt.lambda = lambda;
    opt.max_iter = maxit;
    opt.gtol = tol;
    opt.ftol = ftol;
    opt.memory = memory;
    opt.threads = kl::clamp_threads(threads);
    const kl::Vec w = to_vec_or_empty(weights);
    kl::Callbacks cb = klr::make_callbacks(progress);
    kl::LogisticFit f = kl::logistic_fit(x, klr::labels_from_r(y), K, w, opt, cb);
    return Rcpp::List::create(
        Rcpp::Named("coefficients") = Rcpp::wrap(f.coef),
        Rcpp::Named("intercept") = Rcpp::wrap(f.intercept),
        Rcpp::Named("objective") = f.objective, Rcpp::Named("grad_norm") = f.grad_norm,
        Rcpp::Named("iterations") = f.iterations, Rcpp::Named("converged") = f.converged,
        Rcpp::Named("message") = f.message);
  });
}

// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_logistic_predict(const Eigen::Map<Eigen::MatrixXd> x,
                                         const Eigen::Map<Eigen::MatrixXd> B,
                                         const Eigen::Map<Eigen::VectorXd> b, int threads = 1) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    const kl::Mat P = kl::logistic_predict_prob(x, B, b, kl::clamp_threads(threads));
    return Rcpp::wrap(P);
  });
}

// Linear SVM by dual coordinate descent; y: class labels 1..K.
// [[Rcpp::export]]
Rcpp::List cpp_linear_svm_fit(const Eigen::Map<Eigen::MatrixXd> x, Rcpp::IntegerVector y, int K,
                              double cost, std::string loss, double bias, double eps, int maxit,
                              SEXP class_weights, Rcpp::IntegerVector seed,
                              bool shrinking = true, SEXP progress = R_NilValue) {
  return klr::guard([&]() -> Rcpp::List {
    kl::LinearSvmOptions opt;
    if (loss == "l2") {
      opt.loss = kl::SvmLoss::l2;
    } else if (loss == "l1") {
      opt.loss = kl::SvmLoss::l1;
    } else {
      Rcpp::stop("'loss' must be \"l2\" or \"l1\"");
    }
    opt.cost = cost;
    opt.bias = bias;
    opt.eps = eps;
    opt.max_iter = maxit;
    opt.shrinking = shrinking;
    const kl::Vec cw = to_vec_or_empty(class_weights);
    kl::Rng rng(klr::seed_from_r(seed));
    kl::Callbacks cb = klr::make_callbacks(progress);
    kl::LinearSvmFit f = kl::linear_svm_fit(x, klr::labels_from_r(y), K, cw, opt, rng, cb);
    return Rcpp::List::create(
        Rcpp::Named("W") = Rcpp::wrap(f.W), Rcpp::Named("b") = Rcpp::wrap(f.b),
        Rcpp::Named("iterations") = Rcpp::wrap(f.iterations),
        Rcpp::Named("converged") = to_logical(f.converged),
        Rcpp::Named("primal") = Rcpp::wrap(f.primal), Rcpp::Named("dual") = Rcpp::wrap(f.dual));
  });
}

// Decision values (n x columns of W).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_linear_svm_decision(const Eigen::Map<Eigen::MatrixXd> x,
                                            const Eigen::Map<Eigen::MatrixXd> W,
                                            const Eigen::Map<Eigen::VectorXd> b) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    return Rcpp::wrap(kl::linear_svm_decision(x, W, b));
  });
}

// Predicted classes, 1..K.
// [[Rcpp::export]]
Rcpp::IntegerVector cpp_linear_svm_predict(const Eigen::Map<Eigen::MatrixXd> x,
                                           const Eigen::Map<Eigen::MatrixXd> W,
                                           const Eigen::Map<Eigen::VectorXd> b) {
  return klr::guard([&]() -> Rcpp::IntegerVector {
    return klr::labels_to_r(kl::linear_svm_predict(x, W, b));
  });
}
