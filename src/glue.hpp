// Helpers shared by the Rcpp glue files: callbacks into R, seeds, thread counts.
#pragma once

#include <RcppEigen.h>

#include <chrono>
#include <memory>
#include <cstdint>

#include "core/base/common.hpp"

namespace klr {

// True when the user pressed Ctrl-C. R_CheckUserInterrupt() longjmps, so it runs inside
// R_ToplevelExec, which catches the jump and reports it as FALSE.
inline void check_interrupt_fn(void*) { R_CheckUserInterrupt(); }
inline bool r_interrupted() { return R_ToplevelExec(check_interrupt_fn, nullptr) == FALSE; }

// Callbacks for the core: interrupt checks at most every 100 ms, and progress forwarded to an
// R function (or nothing when progress is NULL) at most every 250 ms.
inline kl::Callbacks make_callbacks(SEXP progress = R_NilValue) {
  using clock = std::chrono::steady_clock;
  kl::Callbacks cb;
  auto last_check = std::make_shared<clock::time_point>(clock::now());
  cb.interrupted = [last_check]() {
    auto now = clock::now();
    if (now - *last_check < std::chrono::milliseconds(100)) return false;
    *last_check = now;
    return r_interrupted();
  };
  if (!Rf_isNull(progress)) {
    Rcpp::Function f(progress);
    auto last = std::make_shared<clock::time_point>(clock::now());
    auto last_frac = std::make_shared<double>(0.0);
    cb.progress = [f, last, last_frac](double frac) {
      auto now = clock::now();
      if (frac < 1.0 && now - *last < std::chrono::milliseconds(250)) return;
      *last = now;
      double delta = frac - *last_frac;
      if (delta <= 0) return;
      *last_frac = frac;
      f(delta);
    };
  }
  return cb;
}

// Class labels cross the boundary in one convention: R passes and receives the codes of a
// factor, 1..K (as.integer(y)); the core counts classes from 0. These two helpers are the only
// places that convert. Labels from R (1-based, no NA) as the core's 0-based vector; the core
// checks the range.
inline kl::IVec labels_from_r(const Rcpp::IntegerVector& y) {
  kl::IVec out(y.size());
  for (R_xlen_t i = 0; i < y.size(); ++i) {
    if (y[i] == NA_INTEGER) Rcpp::stop("internal error: missing class label");
    out[static_cast<Eigen::Index>(i)] = y[i] - 1;
  }
  return out;
}

// The core's 0-based class labels as R's 1-based codes.
template <class V>
Rcpp::IntegerVector labels_to_r(const V& y) {
  Rcpp::IntegerVector out(static_cast<R_xlen_t>(y.size()));
  for (R_xlen_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(y[i]) + 1;
  return out;
}

// Seeds come from R as two integers drawn with R's RNG (see .kl_seed() in R/utils.R).
inline std::uint64_t seed_from_r(const Rcpp::IntegerVector& s) {
  if (s.size() != 2) Rcpp::stop("internal error: a seed is two integers");
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(s[0])) << 32) |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(s[1]));
}

}  // namespace klr

#include "core/backend/backend.hpp"
#include "core/kernels/hierarchical.hpp"
#include "core/kernels/tessellated.hpp"
#include "core/kernels/standard.hpp"

namespace klr {

// The nodes of a hierarchical Gaussian kernel list (see kernel_from_r below).
inline std::vector<kl::HgkNode> hgk_nodes_from_r(const Rcpp::List& k) {
  Rcpp::LogicalVector leaf = k["leaf"];
  Rcpp::List members = k["members"], weights = k["weights"];
  Rcpp::NumericVector scale = k["scale"];
  std::vector<kl::HgkNode> nodes(leaf.size());
  for (R_xlen_t v = 0; v < leaf.size(); ++v) {
    nodes[v].leaf = leaf[v];
    nodes[v].members = Rcpp::as<std::vector<int>>(members[v]);
    nodes[v].weights = Rcpp::as<std::vector<double>>(weights[v]);
    nodes[v].scale = scale[v];
  }
  return nodes;
}

// The kernel object of a kernel list built by the .kernel_spec() methods (R/kernels.R,
// R/kernels-learned.R): the one place on this side of the glue that knows the kernel families.
//   list(name = "gaussian" | "laplacian" | "linear" | "polynomial", gamma, degree, scale, offset)
//   list(name = "hierarchical_gaussian", d, leaf (logical per node), members (list of 0-based
//        integer vectors), weights (list of numeric vectors), scale (numeric per node))
//   list(name = "tessellated", P, degree, lower, upper)
inline kl::KernelPtr kernel_from_r(const Rcpp::List& k) {
  const std::string name = Rcpp::as<std::string>(k["name"]);
  if (name == "gaussian" || name == "laplacian" || name == "linear" || name == "polynomial") {
    kl::KernelSpec s;
    s.type = name == "gaussian"    ? kl::KernelType::Gaussian
             : name == "laplacian" ? kl::KernelType::Laplacian
             : name == "linear"    ? kl::KernelType::Linear
                                   : kl::KernelType::Polynomial;
    s.gamma = Rcpp::as<double>(k["gamma"]);
    s.degree = Rcpp::as<double>(k["degree"]);
    s.scale = Rcpp::as<double>(k["scale"]);
    s.offset = Rcpp::as<double>(k["offset"]);
    return kl::make_standard_kernel(s);
  }
  if (name == "hierarchical_gaussian")
    return kl::make_hierarchical_gaussian_kernel(hgk_nodes_from_r(k), Rcpp::as<int>(k["d"]));
  if (name == "tessellated") {
    const Eigen::MatrixXd P = Rcpp::as<Eigen::MatrixXd>(k["P"]);
    const Eigen::VectorXd lo = Rcpp::as<Eigen::VectorXd>(k["lower"]);
    const Eigen::VectorXd hi = Rcpp::as<Eigen::VectorXd>(k["upper"]);
    return kl::make_tessellated_kernel(P, Rcpp::as<int>(k["degree"]), lo, hi);
  }
  throw kl::Error("unknown kernel \"" + name + "\"");
}

// A core error about one class as an R condition of class "kl_class_error" that carries the
// parts of the message and the class number (1-based), for R to name the class by its level
// (.kl_core() in R/utils.R). Signalled through R's stop(), so it does not return.
[[noreturn]] inline void stop_class_error(const kl::ClassError& e) {
  Rcpp::List cond = Rcpp::List::create(
      Rcpp::Named("message") = std::string(e.what()), Rcpp::Named("call") = R_NilValue,
      Rcpp::Named("before") = e.before, Rcpp::Named("after") = e.after,
      Rcpp::Named("index") = e.index + 1);
  cond.attr("class") = Rcpp::CharacterVector::create("kl_class_error", "error", "condition");
  Rcpp::Function stop("stop", R_BaseEnv);
  stop(cond);
  throw Rcpp::exception(e.what(), false);  // not reached: stop() does not return
}

// The error boundary of the glue: every export runs its body through guard(). A core interrupt
// becomes an R interrupt condition (as Ctrl-C at the R prompt), core errors R errors with the
// core's message and no C++ call in it (errors about a class: see stop_class_error()).
template <class F>
auto guard(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const kl::Interrupted&) {
    throw Rcpp::internal::InterruptedException();
  } catch (const kl::ClassError& e) {
    stop_class_error(e);
  } catch (const kl::Error& e) {
    throw Rcpp::exception(e.what(), false);
  } catch (const std::bad_alloc&) {
    throw Rcpp::exception("out of memory", false);
  }
}

// The backend chosen on the R side (.kl_backend_arg() in R/backend.R):
// list(gpu = TRUE/FALSE, lib = path of the GPU library or "").
inline kl::Backend& backend_from_r(const Rcpp::List& b) {
  const bool gpu = Rcpp::as<bool>(b["gpu"]);
  if (gpu) {
    std::string why;
    kl::Backend* g = kl::gpu_backend(Rcpp::as<std::string>(b["lib"]), &why);
    if (g) {
      // the operations options(kernlearn.gpu_ops) puts on the GPU (GpuOp flags)
      g->set_gpu_ops(b.containsElementNamed("ops") ? Rcpp::as<unsigned>(b["ops"])
                                                   : kl::kGpuOpsDefault);
      return *g;
    }
  }
  return kl::cpu_backend();
}

// Runs f() with Eigen's own parallelism set to `threads`, restoring it afterwards.
template <class F>
auto with_eigen_threads(int threads, F f) -> decltype(f()) {
  struct Restore {
    int old;
    ~Restore() { Eigen::setNbThreads(old); }
  } restore{Eigen::nbThreads()};
  Eigen::setNbThreads(kl::clamp_threads(threads));
  return f();
}

}  // namespace klr
