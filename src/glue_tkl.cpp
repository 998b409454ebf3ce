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

kl::TklParams tkl_params_from_r(Rcpp::List params, Rcpp::List tkl, int threads) {
  kl::TklParams par;
  par.svm = klr::svm_params_from_r(params, threads);
  par.degree = Rcpp::as<int>(tkl["degree"]);
  par.tol = Rcpp::as<double>(tkl["tol"]);
  par.maxit = Rcpp::as<int>(tkl["maxit"]);
  if (tkl.containsElementNamed("warm")) par.warm = Rcpp::as<bool>(tkl["warm"]);
  if (tkl.containsElementNamed("ridge")) par.ridge = Rcpp::as<double>(tkl["ridge"]);
  if (tkl.containsElementNamed("normalize")) par.normalize = Rcpp::as<bool>(tkl["normalize"]);
  if (tkl.containsElementNamed("single")) par.single = Rcpp::as<bool>(tkl["single"]);
  if (tkl.containsElementNamed("mirror")) par.mirror = Rcpp::as<bool>(tkl["mirror"]);
  if (tkl.containsElementNamed("subspace")) par.subspace = Rcpp::as<bool>(tkl["subspace"]);
  if (tkl.containsElementNamed("backend")) {
    kl::Backend& be = klr::backend_from_r(Rcpp::as<Rcpp::List>(tkl["backend"]));
    par.backend = be.is_gpu() ? &be : nullptr;
  }
  return par;
}

Rcpp::List result_to_r(const kl::TklResult& r, const std::vector<int>* yy, int k) {
  Rcpp::List model = yy ? klr::classify_result(r.machines, *yy, k)
                        : klr::regress_result(r.machines[0]);
  return Rcpp::List::create(
      Rcpp::Named("P") = Rcpp::wrap(r.P), Rcpp::Named("q") = r.q,
      Rcpp::Named("scale") = r.scale, Rcpp::Named("model") = model,
      Rcpp::Named("trace") = trace_to_r(r.trace), Rcpp::Named("stop") = r.stop,
      Rcpp::Named("seconds_start") = r.seconds_start,
      Rcpp::Named("seconds_first") = r.seconds_first,
      Rcpp::Named("iter_first") = static_cast<double>(r.iter_first),
      Rcpp::Named("subspace") = r.subspace);
}

}  // namespace

// TKL on scaled inputs x (n x d) with the box [lower, upper]: classification when k >= 2 (y
// class codes 1..k), epsilon-regression when k = 0 (y numeric). params: the SVM options of
// .svm_params(); tkl: degree, tol, maxit (optional: warm, ridge, normalize, single, mirror, subspace, backend
// as .kl_backend_arg()).
// [[Rcpp::export]]
Rcpp::List cpp_tkl_fit(const Eigen::Map<Eigen::MatrixXd> x, SEXP y, int k,
                       Rcpp::NumericVector weight, const Eigen::Map<Eigen::VectorXd> lower,
                       const Eigen::Map<Eigen::VectorXd> upper, Rcpp::List params,
                       Rcpp::List tkl, int threads, SEXP progress) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::TklParams par = tkl_params_from_r(params, tkl, threads);
    const kl::Vec lo = lower, hi = upper;
    kl::Callbacks cb = klr::make_callbacks(progress);
    if (k >= 2) {
      std::vector<int> yy = klr::svm_labels_from_r(Rcpp::IntegerVector(y));
      return result_to_r(
          kl::tkl_classify(x, yy, k, Rcpp::as<std::vector<double>>(weight), lo, hi, par, cb),
          &yy, k);
    }
    return result_to_r(kl::tkl_regress(x, Rcpp::as<std::vector<double>>(y), lo, hi, par, cb),
                       nullptr, 0);
  });
}

// The same over increasing costs (params' cost is ignored): one result per cost, each run
// started from the previous one's P and solution.
// [[Rcpp::export]]
Rcpp::List cpp_tkl_path(const Eigen::Map<Eigen::MatrixXd> x, SEXP y, int k,
                        Rcpp::NumericVector weight, const Eigen::Map<Eigen::VectorXd> lower,
                        const Eigen::Map<Eigen::VectorXd> upper, Rcpp::List params,
                        Rcpp::List tkl, std::vector<double> costs, int threads, SEXP progress) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::TklParams par = tkl_params_from_r(params, tkl, threads);
    const kl::Vec lo = lower, hi = upper;
    kl::Callbacks cb = klr::make_callbacks(progress);
    std::vector<kl::TklResult> rs;
    std::vector<int> yy;
    if (k >= 2) {
      yy = klr::svm_labels_from_r(Rcpp::IntegerVector(y));
      rs = kl::tkl_classify_path(x, yy, k, Rcpp::as<std::vector<double>>(weight), lo, hi, par,
                                 costs, cb);
    } else {
      rs = kl::tkl_regress_path(x, Rcpp::as<std::vector<double>>(y), lo, hi, par, costs, cb);
    }
    Rcpp::List out(rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i)
      out[i] = result_to_r(rs[i], k >= 2 ? &yy : nullptr, k);
    return out;
  });
}
