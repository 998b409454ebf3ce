// Glue: generalized eigenvector features (moments, eigenproblems, feature map).
#include "glue.hpp"
#include "core/heads/cls.hpp"
#include "core/learners/gem.hpp"
#include "core/learners/gem_fit.hpp"
#include "core/learners/gem_head.hpp"
#include "core/linalg/simd.hpp"

#include <algorithm>
#include <cmath>

namespace {

// f(r0, len) over blocks of 512 rows of an n-row matrix, in parallel, with Eigen's own
// threads off.
template <class F>
void row_blocks(Eigen::Index n, int threads, F f) {
  const Eigen::Index block = 512, nb = (n + block - 1) / block;
  klr::with_eigen_threads(1, [&]() {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(kl::clamp_threads(threads)) if (nb > 1)
#endif
    for (Eigen::Index bi = 0; bi < nb; ++bi) f(bi * block, std::min(block, n - bi * block));
  });
}

// The random Fourier map (W, b) given from R, or the identity when W is NULL.
kl::InputMap input_map(SEXP W, SEXP b, Eigen::Index d) {
  kl::InputMap m;
  if (Rf_isNull(W)) return m;
  if (!Rf_isReal(W) || !Rf_isMatrix(W) || !Rf_isReal(b) || Rf_nrows(W) != d ||
      Rf_xlength(b) != Rf_ncols(W) || Rf_ncols(W) < 1)
    Rcpp::stop("internal error: random Fourier map of the wrong shape");
  m.W = REAL(W);
  m.b = REAL(b);
  m.d = d;
  m.D = Rf_ncols(W);
  return m;
}

// One side of the class pairs (labels 1..K from R) as the core's 0-based classes.
std::vector<int> class_pairs_from_r(const Rcpp::IntegerVector& v) {
  const kl::IVec l = klr::labels_from_r(v);
  return std::vector<int>(l.data(), l.data() + l.size());
}

}  // namespace

// The feature map of x through the directions V. With standardize, the columns are centred
// and scaled: by the training statistics in center / scale when given, else by their own
// (returned as attributes). With rff_W / rff_b, x is replaced by its random Fourier map.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_gem_features(const Eigen::Map<Eigen::MatrixXd> x,
                                     const Eigen::Map<Eigen::MatrixXd> V, int base, int degree,
                                     bool keep_input, bool ones, bool standardize,
                                     SEXP center, SEXP scale, int threads,
                                     SEXP progress = R_NilValue, SEXP rff_W = R_NilValue,
                                     SEXP rff_b = R_NilValue) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    const kl::InputMap map = input_map(rff_W, rff_b, x.cols());
    const Eigen::Index p = kl::gem_feature_count(map.out_dim(x.cols()), V.cols(), degree,
                                                 keep_input, ones);
    if (static_cast<double>(x.rows()) * static_cast<double>(p) > 4.5e15)
      Rcpp::stop("the feature matrix would be too large");
    Rcpp::NumericMatrix out(static_cast<int>(x.rows()), static_cast<int>(p));
    Eigen::Map<Eigen::MatrixXd> Z(out.begin(), x.rows(), p);
    kl::Callbacks cb = klr::make_callbacks(progress);
    klr::with_eigen_threads(1, [&]() {
      kl::gem_features(x, V, base, degree, keep_input, ones, Z, threads, cb, map);
    });
    if (standardize) {
      const bool compute = Rf_isNull(center);
      kl::Vec c, s;
      if (!compute) {
        Rcpp::NumericVector cv(center), sv(scale);
        c = Eigen::Map<const Eigen::VectorXd>(cv.begin(), cv.size());
        s = Eigen::Map<const Eigen::VectorXd>(sv.begin(), sv.size());
      }
      kl::standardize_columns(Z, c, s, compute, kl::clamp_threads(threads));
      out.attr("center") = Rcpp::wrap(c);
      out.attr("scale") = Rcpp::wrap(s);
    }
    return out;
  });
}

// Linear predictors x B + 1 b' of a linear head, rows in parallel.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_linear_predictor(const Eigen::Map<Eigen::MatrixXd> x,
                                         const Eigen::Map<Eigen::MatrixXd> B,
                                         const Eigen::Map<Eigen::VectorXd> b, int threads) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    if (B.rows() != x.cols() || b.size() != B.cols())
      Rcpp::stop("internal error: coefficients of the wrong shape");
    Rcpp::NumericMatrix out(static_cast<int>(x.rows()), static_cast<int>(B.cols()));
    Eigen::Map<Eigen::MatrixXd> Z(out.begin(), x.rows(), B.cols());
    row_blocks(x.rows(), threads, [&](Eigen::Index r0, Eigen::Index len) {
      Z.middleRows(r0, len).noalias() = x.middleRows(r0, len) * B;
      Z.middleRows(r0, len).rowwise() += b.transpose();
    });
    return out;
  });
}

namespace {

// The classifier of a fitted member as an R list.
Rcpp::List head_to_r(const kl::GemHeadFit& f, bool standardize) {
  Rcpp::RObject search;  // NULL without a search
  if (f.searched)
    search = Rcpp::List::create(Rcpp::Named("lambda") = Rcpp::wrap(f.search.lambda),
                                Rcpp::Named("error") = Rcpp::wrap(f.search.error),
                                Rcpp::Named("loss") = Rcpp::wrap(f.search.loss),
                                Rcpp::Named("train_rows") = static_cast<double>(f.search.train_rows),
                                Rcpp::Named("validation_rows") =
                                    static_cast<double>(f.search.validation_rows));
  // RObject keeps them protected while the lists below allocate.
  Rcpp::RObject center = standardize ? Rcpp::wrap(f.center) : R_NilValue;
  Rcpp::RObject scale = standardize ? Rcpp::wrap(f.scale) : R_NilValue;
  if (f.head == 1) {
    const kl::ClsFit& c = f.cls;
    Rcpp::List link(c.link.size()), delta(c.delta.size());
    for (std::size_t t = 0; t < c.link.size(); ++t) {
      link[t] = Rcpp::wrap(c.link[t]);
      delta[t] = Rcpp::wrap(c.delta[t]);
    }
    return Rcpp::List::create(
        Rcpp::Named("W0") = Rcpp::wrap(c.W0), Rcpp::Named("link") = link,
        Rcpp::Named("scores") = Rcpp::wrap(c.scores),
        Rcpp::Named("delta") = delta, Rcpp::Named("center") = center,
        Rcpp::Named("scale") = scale, Rcpp::Named("change") = Rcpp::wrap(c.change),
        Rcpp::Named("train_error") = Rcpp::wrap(c.train_error),
        Rcpp::Named("iterations") = c.iterations, Rcpp::Named("converged") = c.converged,
        Rcpp::Named("single_factor") = c.single_factor,
        Rcpp::Named("exact_gram") = c.exact_gram,
        Rcpp::Named("p") = static_cast<double>(f.p), Rcpp::Named("single") = f.single,
        Rcpp::Named("lambda") = f.lambda, Rcpp::Named("search") = search,
        Rcpp::Named("search_only") = f.search_only,
        Rcpp::Named("seconds") = Rcpp::NumericVector::create(
            Rcpp::Named("gram") = c.seconds_gram, Rcpp::Named("factor") = c.seconds_factor,
            Rcpp::Named("steps") = c.seconds_steps, Rcpp::Named("search") = c.seconds_search));
  }
  const kl::LogisticFit& l = f.logistic;
  return Rcpp::List::create(
      Rcpp::Named("coefficients") = Rcpp::wrap(l.coef),
      Rcpp::Named("intercept") = Rcpp::wrap(l.intercept), Rcpp::Named("center") = center,
      Rcpp::Named("scale") = scale, Rcpp::Named("objective") = l.objective,
      Rcpp::Named("grad_norm") = l.grad_norm, Rcpp::Named("iterations") = l.iterations,
      Rcpp::Named("sub_iterations") = f.sub_iterations,
      Rcpp::Named("converged") = l.converged, Rcpp::Named("message") = l.message,
      Rcpp::Named("p") = static_cast<double>(f.p), Rcpp::Named("single") = f.single,
      Rcpp::Named("lambda") = f.lambda, Rcpp::Named("search") = search,
      Rcpp::Named("vectorised") = f.single && kl::logistic_f32_vectorised());
}

// A fitted calibrated least-squares head from its R parts (W0 and the steps' link and delta).
kl::ClsFit cls_head_from_r(const Eigen::Map<Eigen::MatrixXd>& W0, const Rcpp::List& link,
                           const Rcpp::List& delta) {
  if (link.size() != delta.size()) Rcpp::stop("internal error: steps of the wrong shape");
  kl::ClsFit f;
  f.W0 = W0;
  for (R_xlen_t t = 0; t < link.size(); ++t) {
    f.link.push_back(Rcpp::as<Eigen::MatrixXd>(link[t]));
    f.delta.push_back(Rcpp::as<Eigen::MatrixXd>(delta[t]));
  }
  return f;
}

// The eigensolver and the feature map named as in R (gem_control(eigen_method), the layer's
// nonlinearity) as the core's codes.
int eigen_method_code(const std::string& m) {
  if (m == "auto") return 0;
  if (m == "dense") return 1;
  if (m == "iterative") return 2;
  Rcpp::stop("internal error: unknown eigen_method \"" + m + "\"");
}

int nonlinearity_code(const std::string& nl) {
  if (nl == "smooth_sqrt") return 0;
  if (nl == "relu_powers") return 1;
  Rcpp::stop("internal error: unknown nonlinearity \"" + nl + "\"");
}

// Rows (1-based, from R) as 0-based indices; NULL gives none.
std::vector<Eigen::Index> rows_from_r(SEXP rows) {
  std::vector<Eigen::Index> out;
  if (Rf_isNull(rows)) return out;
  Rcpp::IntegerVector r(rows);
  out.reserve(static_cast<std::size_t>(r.size()));
  for (R_xlen_t i = 0; i < r.size(); ++i) out.push_back(static_cast<Eigen::Index>(r[i]) - 1);
  return out;
}

}  // namespace

// A whole GEM model (kl::gem_fit): x the prepared inputs, y the classes (labels 1..K).
// `layers`: one list per layer with ridge, relative, top, threshold, nonlinearity
// ("smooth_sqrt" or "relu_powers"), degree, keep_input, ones and optionally keep_max (the most
// directions kept per pair; where it keeps out a direction, the fit is a comparison: its cls
// head stops after the search) and search_only (TRUE: the cls head stops after the search in
// any case). `members`: one list per ensemble member with num, den (class pairs, labels
// 1..K), validation (1-based held-out rows or NULL), seeds (one pair of integers per layer),
// warm (1-based warm-start rows or NULL) and W, b (the random Fourier map or NULL).
// `options`, read by name: head ("cls" or "logistic"); lambda (the penalty, or the grid
// searched; then cls starts at `start`, 0-based); maxit, tol, standardize; eigen_method
// ("auto", "dense" or "iterative") and eigen_tol of the eigensolver; single_cells (feature
// matrices with more entries are held in single precision), single_factor, single_final (the
// smallest cls systems, in columns, factored in single precision in the search and in the
// final fit); memory_limit (bytes, NA: no limit); threads; backend (optional, as
// .kl_backend_arg() gives it).
// Returns one list per member: layers (per layer: spectra, kept, vectors of every pair,
// dense, applications, V), head (the classifier; for cls with the training scores in the
// member's row order: the held-out rows last) and timing.
// [[Rcpp::export]]
Rcpp::List cpp_gem_fit(const Eigen::Map<Eigen::MatrixXd> x, Rcpp::IntegerVector y, int K,
                       Rcpp::List layers, Rcpp::List members, Rcpp::List options,
                       SEXP progress = R_NilValue) {
  return klr::guard([&]() -> Rcpp::List {
    const std::string method = Rcpp::as<std::string>(options["eigen_method"]);
    const std::string head = Rcpp::as<std::string>(options["head"]);
    if (head != "cls" && head != "logistic") Rcpp::stop("internal error: unknown head");
    kl::GemFitOptions opt;
    for (R_xlen_t l = 0; l < layers.size(); ++l) {
      Rcpp::List L = layers[l];
      kl::GemLayerSettings s;
      s.dir.ridge = Rcpp::as<double>(L["ridge"]);
      s.dir.relative = Rcpp::as<bool>(L["relative"]);
      s.dir.top = Rcpp::as<int>(L["top"]);
      s.dir.threshold = Rcpp::as<double>(L["threshold"]);
      if (L.containsElementNamed("keep_max")) s.dir.keep_max = Rcpp::as<int>(L["keep_max"]);
      // a layer with a cap on its directions belongs to a comparison fit
      if (s.dir.keep_max > 0) opt.search_only_when_capped = true;
      // a comparison fit on a sample of the rows: only its penalty search is used
      if (L.containsElementNamed("search_only") && Rcpp::as<bool>(L["search_only"]))
        opt.search_only = true;
      s.dir.method = eigen_method_code(method);
      s.dir.tol = Rcpp::as<double>(options["eigen_tol"]);
      s.base = nonlinearity_code(Rcpp::as<std::string>(L["nonlinearity"]));
      s.degree = Rcpp::as<int>(L["degree"]);
      s.keep_input = Rcpp::as<bool>(L["keep_input"]);
      s.ones = Rcpp::as<bool>(L["ones"]);
      opt.layers.push_back(s);
    }
    const Rcpp::NumericVector lambda = options["lambda"];
    opt.head.head = head == "cls" ? 1 : 0;
    opt.head.lambda.assign(lambda.begin(), lambda.end());
    opt.head.start = Rcpp::as<int>(options["start"]);
    opt.head.max_iter = Rcpp::as<int>(options["maxit"]);
    opt.head.tol = Rcpp::as<double>(options["tol"]);
    opt.head.standardize = Rcpp::as<bool>(options["standardize"]);
    opt.head.threads = kl::clamp_threads(Rcpp::as<int>(options["threads"]));
    opt.single_cells = Rcpp::as<double>(options["single_cells"]);
    opt.head.single_factor_min = Rcpp::as<double>(options["single_factor"]);
    opt.head.single_final_min = Rcpp::as<double>(options["single_final"]);
    // the cls head's Gram matrix and factorisations where the backend takes them
    if (options.containsElementNamed("backend"))
      opt.head.backend = &klr::backend_from_r(Rcpp::List(options["backend"]));
    const double memory_limit = Rcpp::as<double>(options["memory_limit"]);
    if (!ISNAN(memory_limit)) opt.memory_limit = memory_limit;
    const bool standardize = opt.head.standardize;
    std::vector<kl::GemMemberInput> in(static_cast<std::size_t>(members.size()));
    for (R_xlen_t m = 0; m < members.size(); ++m) {
      Rcpp::List M = members[m];
      kl::GemMemberInput& g = in[static_cast<std::size_t>(m)];
      g.num = class_pairs_from_r(Rcpp::IntegerVector(M["num"]));
      g.den = class_pairs_from_r(Rcpp::IntegerVector(M["den"]));
      g.validation = rows_from_r(M["validation"]);
      g.warm_rows = rows_from_r(M["warm"]);
      Rcpp::List seeds = M["seeds"];
      for (R_xlen_t l = 0; l < seeds.size(); ++l)
        g.seeds.push_back(klr::seed_from_r(Rcpp::IntegerVector(seeds[l])));
      g.map = input_map(M["W"], M["b"], x.cols());
    }
    kl::Callbacks cb = klr::make_callbacks(progress);
    // Eigen threads for the factorisation of cls; the core keeps the rest serial.
    const std::vector<kl::GemMemberFit> fits = klr::with_eigen_threads(
        opt.head.threads,
        [&]() { return kl::gem_fit(x, klr::labels_from_r(y), K, in, opt, cb); });
    Rcpp::List out(fits.size());
    for (std::size_t m = 0; m < fits.size(); ++m) {
      const kl::GemMemberFit& f = fits[m];
      Rcpp::List ls(f.layers.size());
      for (std::size_t l = 0; l < f.layers.size(); ++l) {
        const kl::GemLayerFit& lf = f.layers[l];
        const std::size_t np = lf.pairs.size();
        Rcpp::List spectra(np);
        Rcpp::IntegerVector kept(np), applications(np);
        Rcpp::LogicalVector dense(np);
        for (std::size_t q = 0; q < np; ++q) {
          spectra[q] = Rcpp::wrap(lf.pairs[q].spectrum);
          kept[q] = static_cast<int>(lf.pairs[q].vectors.cols());
          dense[q] = lf.pairs[q].dense;
          applications[q] = lf.pairs[q].applications;
        }
        ls[l] = Rcpp::List::create(Rcpp::Named("spectra") = spectra,
                                   Rcpp::Named("kept") = kept, Rcpp::Named("dense") = dense,
                                   Rcpp::Named("applications") = applications,
                                   Rcpp::Named("V") = Rcpp::wrap(lf.V));
      }
      out[m] = Rcpp::List::create(
          Rcpp::Named("layers") = ls, Rcpp::Named("head") = head_to_r(f.head, standardize),
          Rcpp::Named("timing") = Rcpp::NumericVector::create(
              Rcpp::Named("directions") = f.seconds_directions,
              Rcpp::Named("features") = f.seconds_features,
              Rcpp::Named("logistic") = f.seconds_head));
    }
    return out;
  });
}

// Final scores of a calibrated least-squares head for the features Z (n x p).
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_cls_scores(const Eigen::Map<Eigen::MatrixXd> Z,
                                   const Eigen::Map<Eigen::MatrixXd> W0, Rcpp::List link,
                                   Rcpp::List delta, int threads) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    const kl::ClsFit f = cls_head_from_r(W0, link, delta);
    kl::Mat S = klr::with_eigen_threads(1, [&]() { return kl::cls_scores(Z, f, threads); });
    return Rcpp::wrap(S);
  });
}

// Scores of a calibrated least-squares head fitted on single-precision features
// (kl::gem_cls_scores_single): the last layer's features of z built and standardised in single
// precision as in the fit, then the steps replayed. With rff_W / rff_b, z is replaced by its
// random Fourier map.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_gem_cls_scores_single(const Eigen::Map<Eigen::MatrixXd> z,
                                              const Eigen::Map<Eigen::MatrixXd> V, int base,
                                              int degree, bool keep_input, bool ones,
                                              bool standardize, SEXP center, SEXP scale,
                                              const Eigen::Map<Eigen::MatrixXd> W0,
                                              Rcpp::List link, Rcpp::List delta, int threads,
                                              SEXP rff_W = R_NilValue, SEXP rff_b = R_NilValue) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    const kl::InputMap map = input_map(rff_W, rff_b, z.cols());
    const kl::ClsFit f = cls_head_from_r(W0, link, delta);
    kl::Vec c, s;
    if (standardize) {
      Rcpp::NumericVector cv(center), sv(scale);
      c = Eigen::Map<const Eigen::VectorXd>(cv.begin(), cv.size());
      s = Eigen::Map<const Eigen::VectorXd>(sv.begin(), sv.size());
    }
    const int nt = kl::clamp_threads(threads);
    // the Eigen threads of the fit (cpp_gem_fit), so that the replay is the fit's arithmetic
    kl::Mat S = klr::with_eigen_threads(nt, [&]() {
      return kl::gem_cls_scores_single(z, V, base, degree, keep_input, ones, standardize, c, s,
                                       f, nt, kl::Callbacks(), map);
    });
    return Rcpp::wrap(S);
  });
}

// Rows of S projected onto the probability simplex.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_simplex_project(const Eigen::Map<Eigen::MatrixXd> S) {
  return klr::guard([&]() -> Rcpp::NumericMatrix {
    kl::Mat out = S;
    kl::simplex_project_rows(out);
    return Rcpp::wrap(out);
  });
}

// The vectorised single-precision kernels this processor runs: "avx512", "avx2" or "none".
// [[Rcpp::export]]
std::string cpp_simd_level() { return kl::simd_level_name(kl::simd_level()); }
