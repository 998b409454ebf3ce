// Glue: Discriminant Information learning of Nystrom and random Fourier feature maps.
#include "glue.hpp"
#include "core/learners/dikl.hpp"

#include <algorithm>

namespace {

kl::DiklMapParams map_from_r(int map, double gamma, const Eigen::Map<Eigen::MatrixXd>& P,
                             const Rcpp::NumericVector& b) {
  if (map != 0 && map != 1) Rcpp::stop("internal error: unknown map code");
  kl::DiklMapParams p;
  p.map = static_cast<kl::DiklMap>(map);
  p.gamma = gamma;
  p.P = P;
  if (p.map == kl::DiklMap::fourier) p.b = Rcpp::as<Eigen::VectorXd>(b);
  return p;
}

kl::DiklObjective objective_from_r(int obj) {
  if (obj < 0 || obj > 2) Rcpp::stop("internal error: unknown objective code");
  return static_cast<kl::DiklObjective>(obj);
}

// Class labels 1..K (NULL for a regression).
kl::IVec classes_from_r(SEXP classes) {
  if (Rf_isNull(classes)) return kl::IVec();
  return klr::labels_from_r(Rcpp::IntegerVector(classes));
}

}  // namespace

// Mini-batch training of a map from its initial parameters.
// [[Rcpp::export]]
Rcpp::List cpp_dikl_train(const Eigen::Map<Eigen::MatrixXd> x, const Eigen::Map<Eigen::MatrixXd> y,
                          SEXP classes, int map, double gamma,
                          const Eigen::Map<Eigen::MatrixXd> P, Rcpp::NumericVector b,
                          int objective, double rho, double jitter, int batch_size, double lr,
                          int max_epochs, int patience, double rel_tol, double factor,
                          int threads, Rcpp::IntegerVector seed, Rcpp::List backend,
                          SEXP progress = R_NilValue) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::DiklMapParams p = map_from_r(map, gamma, P, b);
    const kl::IVec cls = classes_from_r(classes);
    kl::DiklTrainOptions opt;
    opt.objective = objective_from_r(objective);
    opt.rho = rho;
    opt.jitter = jitter;
    opt.batch_size = batch_size;
    opt.lr = lr;
    opt.plateau.max_epochs = max_epochs;
    opt.plateau.patience = patience;
    opt.plateau.rel_tol = rel_tol;
    opt.plateau.factor = factor;
    opt.threads = kl::clamp_threads(threads);
    kl::Rng rng(klr::seed_from_r(seed));
    kl::Backend& be = klr::backend_from_r(backend);
    const kl::Callbacks cb = klr::make_callbacks(progress);
    kl::DiklTrainResult r = klr::with_eigen_threads(threads, [&]() {
      return kl::dikl_train(p, x, y, cls, opt, rng, be, cb);
    });
    Rcpp::List out = Rcpp::List::create(
        Rcpp::Named("P") = Rcpp::wrap(r.params.P), Rcpp::Named("b") = Rcpp::wrap(r.params.b),
        Rcpp::Named("V") = Rcpp::wrap(r.V), Rcpp::Named("c") = Rcpp::wrap(r.c),
        Rcpp::Named("trace") = Rcpp::wrap(r.trace), Rcpp::Named("lr") = Rcpp::wrap(r.lr),
        Rcpp::Named("epochs") = r.epochs, Rcpp::Named("steps") = r.steps,
        Rcpp::Named("best_epoch") = r.best_epoch, Rcpp::Named("stop") = r.stop);
    return out;
  });
}

// Whitening matrix of a Nystrom map, T = U_k L_k^-1/2, and the kept eigenvalues of k(Z, Z).
// [[Rcpp::export]]
Rcpp::List cpp_nystrom_whitener(const Eigen::Map<Eigen::MatrixXd> P, double gamma, int threads,
                                Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::List {
    const kl::DiklMapParams p = map_from_r(0, gamma, P, Rcpp::NumericVector());
    kl::Mat T;
    kl::Vec values;
    klr::with_eigen_threads(threads, [&]() {
      kl::nystrom_whitener(p, T, values, klr::backend_from_r(backend), threads);
      return 0;
    });
    return Rcpp::List::create(Rcpp::Named("T") = Rcpp::wrap(T),
                              Rcpp::Named("values") = Rcpp::wrap(values));
  });
}

// Features of x: k(x, Z) T for a Nystrom map (T = NULL: no whitening), or the random Fourier
// features. Computed in blocks of rows, so only the result is held in full.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_dikl_features(const Eigen::Map<Eigen::MatrixXd> x, int map, double gamma,
                                      const Eigen::Map<Eigen::MatrixXd> P, Rcpp::NumericVector b,
                                      SEXP T, int threads, Rcpp::List backend) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    const kl::DiklMapParams p = map_from_r(map, gamma, P, b);
    kl::dikl_check_params(p, x.cols());
    const bool white = !Rf_isNull(T);
    kl::Mat Tm;
    if (white) Tm = Rcpp::as<Eigen::MatrixXd>(T);
    if (white && Tm.rows() != p.dim()) Rcpp::stop("internal error: whitener does not match the map");
    const Eigen::Index n = x.rows(), cols = white ? Tm.cols() : p.dim();
    Rcpp::NumericMatrix out(static_cast<int>(n), static_cast<int>(cols));
    Eigen::Map<Eigen::MatrixXd> O(out.begin(), n, cols);
    kl::Backend& be = klr::backend_from_r(backend);
    const kl::Callbacks cb = klr::make_callbacks();
    klr::with_eigen_threads(threads, [&]() {
      kl::Mat F;
      const Eigen::Index block = 4096;
      for (Eigen::Index r0 = 0; r0 < n; r0 += block) {
        const Eigen::Index m = std::min(block, n - r0);
        kl::dikl_features(p, x.middleRows(r0, m), F, nullptr, be, threads, cb);
        if (white) O.middleRows(r0, m).noalias() = F * Tm;
        else O.middleRows(r0, m) = F;
        cb.check();
      }
      return 0;
    });
    return out;
  });
}
