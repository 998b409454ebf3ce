// Glue: learning hierarchical Gaussian kernels (src/core/hgk.hpp).
#include "glue.hpp"
#include "core/learners/hgk.hpp"

namespace {

kl::HgkFamily family_from_r(const Rcpp::List& kernel) {
  return kl::HgkFamily(klr::hgk_nodes_from_r(kernel), Rcpp::as<int>(kernel["d"]));
}

kl::Vec theta_from_r(const kl::HgkFamily& fam, SEXP theta) {
  if (Rf_isNull(theta)) return fam.start();
  kl::Vec t = Rcpp::as<Eigen::VectorXd>(theta);
  if (t.size() != fam.num_params())
    throw kl::Error("theta has " + std::to_string(t.size()) + " values; the kernel has " +
                    std::to_string(fam.num_params()) + " weights");
  return t;
}

std::vector<double> doubles(const Rcpp::List& l, const char* name) {
  if (!l.containsElementNamed(name) || Rf_isNull(l[name])) return {};
  return Rcpp::as<std::vector<double>>(l[name]);
}

kl::HgkOptions options_from_r(const Rcpp::List& options, int threads, Rcpp::List backend) {
  kl::HgkOptions opt;
  opt.gradient = Rcpp::as<std::string>(options["gradient"]) == "fixed" ? kl::HgkGradient::fixed
                                                                       : kl::HgkGradient::bilevel;
  opt.split1 = Rcpp::as<double>(options["split1"]);
  opt.split2 = Rcpp::as<double>(options["split2"]);
  opt.maxit = Rcpp::as<int>(options["maxit"]);
  opt.anneal_steps = Rcpp::as<int>(options["anneal_steps"]);
  opt.perturbation = Rcpp::as<double>(options["perturbation"]);
  opt.temperature = Rcpp::as<double>(options["temperature"]);
  opt.cooling = Rcpp::as<double>(options["cooling"]);
  opt.patience = Rcpp::as<int>(options["patience"]);
  opt.reshuffles = Rcpp::as<int>(options["reshuffles"]);
  if (options.containsElementNamed("precision") && !Rf_isNull(options["precision"]))
    opt.single = Rcpp::as<std::string>(options["precision"]) == "single";
  opt.gammas = doubles(options, "gammas");
  if (options.containsElementNamed("gamma_factors") && !Rf_isNull(options["gamma_factors"]))
    opt.gamma_factors = doubles(options, "gamma_factors");
  opt.lambdas = doubles(options, "lambdas");
  opt.threads = threads;
  kl::Backend& be = klr::backend_from_r(backend);
  opt.backend = be.is_gpu() ? &be : nullptr;
  return opt;
}

Rcpp::List result_to_r(const kl::HgkFamily& fam, const kl::HgkResult& r) {
  const std::size_t nt = r.trace.size();
  Rcpp::IntegerVector step(nt), kind(nt);
  Rcpp::LogicalVector accepted(nt);
  Rcpp::NumericVector risk(nt), error(nt), secs(nt);
  for (std::size_t i = 0; i < nt; ++i) {
    step[i] = r.trace[i].step;
    kind[i] = r.trace[i].kind;
    accepted[i] = r.trace[i].accepted;
    risk[i] = r.trace[i].risk;
    error[i] = r.trace[i].error;
    secs[i] = r.trace[i].seconds;
  }
  return Rcpp::List::create(
      Rcpp::Named("theta") = Rcpp::wrap(r.theta),
      Rcpp::Named("weights") = Rcpp::wrap(fam.weights(r.theta)),
      Rcpp::Named("gamma") = r.gamma, Rcpp::Named("lambda") = r.lambda,
      Rcpp::Named("gamma0") = r.gamma0, Rcpp::Named("alpha") = Rcpp::wrap(r.fit.alpha),
      Rcpp::Named("bias") = Rcpp::wrap(r.fit.bias), Rcpp::Named("steps") = r.steps,
      Rcpp::Named("reshuffles") = r.reshuffles, Rcpp::Named("stop") = r.stop,
      Rcpp::Named("trace") = Rcpp::List::create(
          Rcpp::Named("step") = step, Rcpp::Named("kind") = kind,
          Rcpp::Named("accepted") = accepted, Rcpp::Named("risk") = risk,
          Rcpp::Named("error") = error, Rcpp::Named("seconds") = secs));
}

}  // namespace

// Algorithm 1 on (x, y) from the weights of `kernel` (a hierarchical kernel list of
// .kernel_spec()) or from log-weights theta; options as in kl::HgkOptions; backend as
// .kl_backend_arg() (the objective's passes over pairs, with the GPU's hgk_pass operation on).
// [[Rcpp::export]]
Rcpp::List cpp_hgk_learn(const Eigen::Map<Eigen::MatrixXd> x, const Eigen::Map<Eigen::MatrixXd> y,
                         Rcpp::List kernel, SEXP theta, Rcpp::List options,
                         Rcpp::IntegerVector seed, int threads, Rcpp::List backend,
                         SEXP progress = R_NilValue) {
  return klr::guard([&] {
    const kl::HgkFamily fam = family_from_r(kernel);
    const kl::Vec theta0 = theta_from_r(fam, theta);
    const kl::HgkOptions opt = options_from_r(options, threads, backend);
    kl::Rng rng(klr::seed_from_r(seed));
    const kl::Callbacks cb = klr::make_callbacks(progress);
    const kl::HgkResult r = klr::with_eigen_threads(
        threads, [&]() { return kl::hgk_learn(fam, x, y, theta0, opt, rng, cb); });
    return result_to_r(fam, r);
  });
}

// Several runs of Algorithm 1 on rows of (x, y) (kl::hgk_learn_runs): run i on the rows
// rows[[i]] (1-based) from the weights of kernels[[i]], with maxit[i] steps and the seed
// seeds[[i]]; the other options shared. The list of their results, each as cpp_hgk_learn's.
// [[Rcpp::export]]
Rcpp::List cpp_hgk_learn_runs(const Eigen::Map<Eigen::MatrixXd> x,
                              const Eigen::Map<Eigen::MatrixXd> y, Rcpp::List kernels,
                              Rcpp::List rows, Rcpp::IntegerVector maxit, Rcpp::List options,
                              Rcpp::List seeds, int threads, Rcpp::List backend,
                              SEXP progress = R_NilValue) {
  return klr::guard([&] {
    const R_xlen_t nr = kernels.size();
    if (rows.size() != nr || maxit.size() != nr || seeds.size() != nr)
      Rcpp::stop("internal error: the runs' kernels, rows, steps and seeds differ in number");
    const kl::HgkOptions opt = options_from_r(options, threads, backend);
    std::vector<kl::HgkFamily> fams;
    fams.reserve(static_cast<std::size_t>(nr));
    std::vector<kl::HgkRun> runs(static_cast<std::size_t>(nr));
    for (R_xlen_t i = 0; i < nr; ++i) fams.push_back(family_from_r(kernels[i]));
    for (R_xlen_t i = 0; i < nr; ++i) {
      kl::HgkRun& r = runs[static_cast<std::size_t>(i)];
      r.family = &fams[static_cast<std::size_t>(i)];
      r.theta0 = r.family->start();
      const Rcpp::IntegerVector ri = rows[i];
      r.rows.reserve(static_cast<std::size_t>(ri.size()));
      for (R_xlen_t k = 0; k < ri.size(); ++k) {
        if (ri[k] == NA_INTEGER || ri[k] < 1 || ri[k] > x.rows())
          Rcpp::stop("internal error: a learning run's row is out of range");
        r.rows.push_back(ri[k] - 1);
      }
      r.maxit = maxit[i];
      r.seed = klr::seed_from_r(Rcpp::IntegerVector(seeds[i]));
    }
    const kl::Callbacks cb = klr::make_callbacks(progress);
    // Eigen's own threads at 1 while whole runs are tasks on the workers
    const int eigen_threads = kl::hgk_runs_workers(runs, opt) > 1 ? 1 : threads;
    const std::vector<kl::HgkResult> res = klr::with_eigen_threads(
        eigen_threads, [&]() { return kl::hgk_learn_runs(x, y, runs, opt, cb); });
    Rcpp::List out(nr);
    for (R_xlen_t i = 0; i < nr; ++i)
      out[i] = result_to_r(fams[static_cast<std::size_t>(i)], res[static_cast<std::size_t>(i)]);
    return out;
  });
}
