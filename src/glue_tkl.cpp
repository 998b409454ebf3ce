// Glue: tessellated kernel learning (src/core/tkl.hpp).
#include "glue_svm.hpp"
#include "core/learners/tkl.hpp"

namespace {

Rcpp::DataFrame trace_to_r(const std::vector<kl::TklIteration>& tr) {
  const std::size_t n = tr.size();
  Rcpp::IntegerVector iteration(n), solves(n);
  Rcpp::NumericVector objective(n), lower(n), gap(n), step(n), svm_iter(n), sa(n), sp(n);
  for (std::size_t i = 0; i < n; ++i) {
    iteration[i] = static_cast<int>(i);
    objective[i] = tr[i].objective;
    lower[i] = tr[i].lower;
    gap[i] = tr[i].gap;
    step[i] = tr[i].step;
    solves[i] = tr[i].solves;
    svm_iter[i] = static_cast<double>(tr[i].svm_iter);
    sa[i] = tr[i].seconds_alpha;
    sp[i] = tr[i].seconds_p;
  }
  return Rcpp::DataFrame::create(
      Rcpp::Named("iteration") = iteration, Rcpp::Named("objective") = objective,
      Rcpp::Named("lower") = lower, Rcpp::Named("gap") = gap, Rcpp::Named("step") = step,
      Rcpp::Named("solves") = solves, Rcpp::Named("svm_iter") = svm_iter,
      Rcpp::Named("seconds_alpha") = sa, Rcpp::Named("seconds_p") = sp);
}

}  // namespace

// TKL on scaled inputs x (n x d) with the box [lower, upper]: classification when k >= 2 (y
// class codes 1..k), epsilon-regression when k = 0 (y numeric). params: the SVM options of
// .svm_params(); tkl: degree, tol, maxit.
// [[Rcpp::export]]
Rcpp::List cpp_tkl_fit(const Eigen::Map<Eigen::MatrixXd> x, SEXP y, int k,
                       Rcpp::NumericVector weight, const Eigen::Map<Eigen::VectorXd> lower,
                       const Eigen::Map<Eigen::VectorXd> upper, Rcpp::List params,
                       Rcpp::List tkl, int threads, SEXP progress) {
  return klr::guard([&]() -> Rcpp::List {
    kl::TklParams par;
    par.svm = klr::svm_params_from_r(params, threads);
    par.degree = Rcpp::as<int>(tkl["degree"]);
    par.tol = Rcpp::as<double>(tkl["tol"]);
    par.maxit = Rcpp::as<int>(tkl["maxit"]);
    if (tkl.containsElementNamed("warm")) par.warm = Rcpp::as<bool>(tkl["warm"]);
    const kl::Vec lo = lower, hi = upper;
    kl::Callbacks cb = klr::make_callbacks(progress);
    kl::TklResult r;
    Rcpp::List model;
    if (k >= 2) {
      std::vector<int> yy = klr::svm_labels_from_r(Rcpp::IntegerVector(y));
      r = kl::tkl_classify(x, yy, k, Rcpp::as<std::vector<double>>(weight), lo, hi, par, cb);
      model = klr::classify_result(r.machines, yy, k);
    } else {
      r = kl::tkl_regress(x, Rcpp::as<std::vector<double>>(y), lo, hi, par, cb);
      model = klr::regress_result(r.machines[0]);
    }
    return Rcpp::List::create(
        Rcpp::Named("P") = Rcpp::wrap(r.P), Rcpp::Named("q") = r.q, Rcpp::Named("model") = model,
        Rcpp::Named("trace") = trace_to_r(r.trace), Rcpp::Named("stop") = r.stop,
        Rcpp::Named("seconds_start") = r.seconds_start,
        Rcpp::Named("seconds_first") = r.seconds_first,
        Rcpp::Named("iter_first") = static_cast<double>(r.iter_first));
  });
}

// The learner's algebra, for tests: the blended Gram matrix (1 - eta) K + eta K(q v v') and
// the gradient C(w) of the weights w over all rows (zeros are left out).
// [[Rcpp::export]]
Rcpp::List cpp_tkl_parts(const Eigen::Map<Eigen::MatrixXd> x, int degree,
                         const Eigen::Map<Eigen::VectorXd> lower,
                         const Eigen::Map<Eigen::VectorXd> upper,
                         const Eigen::Map<Eigen::MatrixXd> K, const Eigen::Map<Eigen::VectorXd> v,
                         double q, double eta, const Eigen::Map<Eigen::VectorXd> w, int threads) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::Vec lo = lower, hi = upper;
    kl::TklGram G(x, degree, lo, hi, threads, klr::make_callbacks());
    const int n = G.n();
    if (K.rows() != n || K.cols() != n) throw kl::Error("K must be n x n");
    if (w.size() != n) throw kl::Error("w must have one value per row");
    Rcpp::NumericMatrix out(n, n);
    G.blend_rank_one(v, q, eta, K.data(), out.begin());
    std::vector<int> rows;
    std::vector<double> vals;
    for (int i = 0; i < n; ++i)
      if (w[i] != 0) {
        rows.push_back(i);
        vals.push_back(w[i]);
      }
    const kl::Mat C = G.gradient({rows}, {vals});
    return Rcpp::List::create(Rcpp::Named("K") = out, Rcpp::Named("C") = Rcpp::wrap(C));
  });
}
