// Glue: the partition of the input space and the per-cell fits of localized kernel machines.
#include "glue.hpp"
#include "glue_svm.hpp"
#include "core/learners/cells.hpp"
#include "core/learners/partition.hpp"

namespace {

// A kernel family with a width, read from the R kernel list on the calling thread so that
// kernels at any width can be made on worker threads without touching R objects.
struct KernelRecipe {
  enum Kind { Standard, Hierarchical, Fixed } kind = Fixed;
  kl::KernelSpec spec;
  std::vector<kl::HgkNode> nodes;
  int d = 0;
  kl::KernelPtr fixed;

  kl::KernelPtr at(double gamma) const {
    switch (kind) {
      case Standard: {
        kl::KernelSpec s = spec;
        s.gamma = gamma;
        return kl::make_standard_kernel(s);
      }
      case Hierarchical: {
        std::vector<kl::HgkNode> nd = nodes;
        nd.back().scale = gamma;  // the root is the last node
        return kl::make_hierarchical_gaussian_kernel(nd, d);
      }
      default:
        return fixed;
    }
  }
};

KernelRecipe recipe_from_r(const Rcpp::List& k, bool has_gamma) {
  KernelRecipe r;
  const std::string name = Rcpp::as<std::string>(k["name"]);
  r.fixed = klr::kernel_from_r(k);
  if (!has_gamma) return r;
  if (name == "gaussian" || name == "laplacian") {
    r.kind = KernelRecipe::Standard;
    r.spec.type = name == "gaussian" ? kl::KernelType::Gaussian : kl::KernelType::Laplacian;
    r.spec.gamma = Rcpp::as<double>(k["gamma"]);
    r.spec.degree = Rcpp::as<double>(k["degree"]);
    r.spec.scale = Rcpp::as<double>(k["scale"]);
    r.spec.offset = Rcpp::as<double>(k["offset"]);
  } else if (name == "hierarchical_gaussian") {
    r.kind = KernelRecipe::Hierarchical;
    r.nodes = klr::hgk_nodes_from_r(k);
    r.d = Rcpp::as<int>(k["d"]);
    if (r.nodes.empty()) throw kl::Error("internal error: a hierarchical kernel without nodes");
  } else {
    throw kl::Error("the " + name + " kernel has no width to choose");
  }
  return r;
}

kl::PartitionOptions partition_options(const Rcpp::List& o, int threads) {
  kl::PartitionOptions p;
  const std::string method = Rcpp::as<std::string>(o["method"]);
  if (method == "voronoi") p.method = kl::PartitionMethod::Voronoi;
  else if (method == "tree") p.method = kl::PartitionMethod::Tree;
  else throw kl::Error("unknown partition method \"" + method + "\"");
  p.cell_size = Rcpp::as<int>(o["cell_size"]);
  p.min_size = Rcpp::as<int>(o["min_size"]);
  p.branching = Rcpp::as<int>(o["branching"]);
  p.sample = Rcpp::as<int>(o["sample"]);
  p.iterations = Rcpp::as<int>(o["iterations"]);
  p.overlap = Rcpp::as<double>(o["overlap"]);
  p.seed = klr::seed_from_r(Rcpp::IntegerVector(o["seed"]));
  p.threads = kl::clamp_threads(threads);
  return p;
}

Rcpp::List partition_to_r(const kl::Partition& P) {
  Rcpp::IntegerVector first(P.nodes()), count(P.nodes()), cell(P.nodes());
  for (int v = 0; v < P.nodes(); ++v) {
    first[v] = P.first_child[v] < 0 ? NA_INTEGER : P.first_child[v] + 1;
    count[v] = P.n_children[v];
    cell[v] = P.cell[v] < 0 ? NA_INTEGER : P.cell[v] + 1;
  }
  return Rcpp::List::create(Rcpp::Named("centres") = Rcpp::wrap(P.centres),
                            Rcpp::Named("first_child") = first,
                            Rcpp::Named("n_children") = count, Rcpp::Named("cell") = cell,
                            Rcpp::Named("n_cells") = P.n_cells);
}

kl::Partition partition_from_r(const Rcpp::List& r) {
  kl::Partition P;
  P.centres = Rcpp::as<Eigen::MatrixXd>(r["centres"]);
  Rcpp::IntegerVector first = r["first_child"], count = r["n_children"], cell = r["cell"];
  const R_xlen_t N = first.size();
  if (count.size() != N || cell.size() != N)
    throw kl::Error("the partition's node arrays differ in length");
  P.first_child.resize(N);
  P.n_children.resize(N);
  P.cell.resize(N);
  for (R_xlen_t v = 0; v < N; ++v) {
    P.first_child[v] = first[v] == NA_INTEGER ? -1 : first[v] - 1;
    P.n_children[v] = count[v] == NA_INTEGER ? -1 : count[v];
    P.cell[v] = cell[v] == NA_INTEGER ? -1 : cell[v] - 1;
  }
  P.n_cells = Rcpp::as<int>(r["n_cells"]);
  return P;
}

}  // namespace

// The partition of the rows of x: the tree (1-based node and cell numbers), the cell of every
// row, and with overlap the extra training rows of each cell (1-based).
// [[Rcpp::export]]
Rcpp::List cpp_partition_build(const Eigen::Map<Eigen::MatrixXd> x, Rcpp::List options,
                               int threads) {
  return klr::guard([&]() -> Rcpp::List {
    kl::PartitionOptions opt = partition_options(options, threads);
    std::vector<int> cell_of;
    std::vector<std::vector<int>> extra;
    kl::Callbacks cb = klr::make_callbacks();
    kl::Partition P = kl::build_partition(x, opt, &cell_of, &extra, cb);
    Rcpp::List out = partition_to_r(P);
    Rcpp::IntegerVector co(cell_of.size());
    for (std::size_t i = 0; i < cell_of.size(); ++i) co[i] = cell_of[i] + 1;
    Rcpp::List ex(extra.size());
    for (std::size_t c = 0; c < extra.size(); ++c) {
      Rcpp::IntegerVector e(extra[c].size());
      for (std::size_t t = 0; t < extra[c].size(); ++t) e[t] = extra[c][t] + 1;
      ex[c] = e;
    }
    out["cell_of"] = co;
    out["extra"] = ex;
    return out;
  });
}

// The cell (1-based) of every row of x.
// [[Rcpp::export]]
Rcpp::IntegerVector cpp_partition_route(const Eigen::Map<Eigen::MatrixXd> x, Rcpp::List partition,
                                        int threads) {
  return klr::guard([&]() -> Rcpp::IntegerVector {
    const kl::Partition P = partition_from_r(partition);
    P.validate(x.cols());
    const std::vector<int> c = P.route(x, threads);
    Rcpp::IntegerVector out(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) out[i] = c[i] + 1;
    return out;
  });
}

// One cell's selection and final fit. task: "classification" (y: 1-based class codes, k classes
// in all), "regression" (z), "ridge" (y for least-squares classification, or z). settings:
// list(gamma, gamma_factor, cost, cost_per_row, folds, cv_rows, extend, has_gamma,
// seed); params: the SVM options
// of .svm_params(); weight: class weights (classification).
// [[Rcpp::export]]
Rcpp::List cpp_cell_fit(const Eigen::Map<Eigen::MatrixXd> x, SEXP y, SEXP z, std::string task,
                        Rcpp::List kernel, Rcpp::List settings, Rcpp::List params,
                        Rcpp::NumericVector weight, int threads) {
  return klr::guard([&]() -> Rcpp::List {
    kl::CellOptions opt;
    opt.task = task == "classification" ? kl::CellTask::Classify
               : task == "regression"   ? kl::CellTask::Regress
               : task == "ridge"        ? kl::CellTask::Ridge
                                        : throw kl::Error("unknown cell task \"" + task + "\"");
    opt.has_gamma = Rcpp::as<bool>(settings["has_gamma"]);
    const KernelRecipe recipe = recipe_from_r(kernel, opt.has_gamma);
    opt.kernel_at = [recipe](double g) { return recipe.at(g); };
    opt.gamma = Rcpp::as<std::vector<double>>(settings["gamma"]);
    opt.gamma_factor = Rcpp::as<std::vector<double>>(settings["gamma_factor"]);
    opt.cost = Rcpp::as<std::vector<double>>(settings["cost"]);
    opt.cost_per_row = Rcpp::as<bool>(settings["cost_per_row"]);
    opt.folds = Rcpp::as<int>(settings["folds"]);
    opt.cv_rows = Rcpp::as<int>(settings["cv_rows"]);
    opt.extend = Rcpp::as<int>(settings["extend"]);
    opt.seed = klr::seed_from_r(Rcpp::IntegerVector(settings["seed"]));
    opt.par = klr::svm_params_from_r(params, threads);
    opt.class_weight = Rcpp::as<std::vector<double>>(weight);
    opt.threads = kl::clamp_threads(threads);
    std::vector<int> yy;
    std::vector<double> zz;
    if (!Rf_isNull(y)) {
      const kl::IVec yv = klr::labels_from_r(Rcpp::IntegerVector(y));
      yy.assign(yv.data(), yv.data() + yv.size());
    }
    if (!Rf_isNull(z)) zz = Rcpp::as<std::vector<double>>(z);
    kl::Callbacks cb = klr::make_callbacks();
    const kl::CellResult r = kl::fit_cell(x, Rf_isNull(y) ? nullptr : &yy,
                                          Rf_isNull(z) ? nullptr : &zz, opt, cb);
    const Rcpp::IntegerVector classes = klr::labels_to_r(r.classes);
    Rcpp::List out = Rcpp::List::create(
        Rcpp::Named("gamma") = Rcpp::wrap(r.gamma), Rcpp::Named("cost") = Rcpp::wrap(r.cost),
        Rcpp::Named("cv") = r.cv.size() ? Rcpp::wrap(r.cv) : R_NilValue,
        Rcpp::Named("reference_gamma") = r.reference_gamma,
        Rcpp::Named("gamma_value") = r.gamma_value, Rcpp::Named("cost_value") = r.cost_value,
        Rcpp::Named("cv_error") = r.cv_error, Rcpp::Named("extended") = r.extended,
        Rcpp::Named("classes") = classes);
    if (opt.task == kl::CellTask::Ridge) {
      if (r.ridge.alpha.size()) {
        out["alpha"] = Rcpp::wrap(r.ridge.alpha);
        out["bias"] = Rcpp::wrap(r.ridge.bias);
      }
    } else if (opt.task == kl::CellTask::Classify) {
      if (!r.machines.empty()) {
        std::vector<int> yl(yy.size());
        for (std::size_t i = 0; i < yy.size(); ++i)
          yl[i] = static_cast<int>(std::lower_bound(r.classes.begin(), r.classes.end(), yy[i]) -
                                   r.classes.begin());
        out["model"] = klr::classify_result(r.machines, yl, static_cast<int>(r.classes.size()));
      }
    } else {
      out["model"] = klr::regress_result(r.machines[0]);
    }
    return out;
  });
}
