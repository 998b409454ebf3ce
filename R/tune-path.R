# kl_tune()'s warm-started paths, a property of the learner. A learner function that has one
# carries the attribute "kl_tune_path", the name of an entry of .kl_tune_paths(): `eligible`
# says whether the grid, the learner's arguments and the metric suit the path, and `run`
# cross-validates the grid (the same folds and fold seeds as the general path; returns
# list(fold_metrics, preds, seeds) as .klcv_run() does). Anything else, or a path that fails,
# takes the general path: one fit per grid point and fold.
#   svm (kernel_svm): per fold and kernel, one kernel cache and the costs in increasing order,
#       each solve warm-started from the last (R/tune-svm-path.R).
#   tkl: per fold and setting of the other parameters, the box matrix and the start Gram
#       matrix formed once and the costs in increasing order, each run of the optimisation
#       started from the start P, its first SVM solve warm-started from the last cost's
#       solution on the start kernel.

.kl_tune_paths <- function() {
  list(svm = list(eligible = .svm_fast_eligible, run = .svm_tune_run),
       tkl = list(eligible = .tkl_path_eligible, run = .tkl_tune_run))
}

# The path entry of a learner, or NULL.
.kl_tune_path_of <- function(learner) {
  key <- attr(learner, "kl_tune_path", exact = TRUE)
  if (!is.character(key) || length(key) != 1L) return(NULL)
  .kl_tune_paths()[[key]]
}

# What every path needs: a grid over cost (positive numbers) and the parameters `grid_ok`,
# named arguments in `dots_ok`, and a metric on predictions of the types `types`.
.kl_path_suits <- function(spec, g, metric, grid_ok, dots_ok,
                           types = c("class", "response")) {
  nm <- names(g$table)
  if (!("cost" %in% nm) || !all(nm %in% grid_ok)) return(FALSE)
  dn <- names(spec$dots)
  if (length(spec$dots) && (is.null(dn) || any(!nzchar(dn)))) return(FALSE)
  if (!all(dn %in% dots_ok)) return(FALSE)
  if (!(metric$pred_type %in% types)) return(FALSE)
  costs <- vapply(g$points, function(p) {
    v <- p$cost
    if (is.numeric(v) && length(v) == 1L && is.finite(v) && v > 0) v else NA_real_
  }, numeric(1))
  !anyNA(costs)
}

# The threads of a path task: the call's, else the caller's default, else (on a future
# worker) what the worker has.
.kl_path_threads <- function(threads, default_threads) {
  if (is.null(threads)) threads <- default_threads
  if (is.null(threads)) {
    threads <- if (requireNamespace("parallelly", quietly = TRUE))
      max(1L, as.integer(parallelly::availableCores())) else 1L
  }
  threads
}

attr(kernel_svm, "kl_tune_path") <- "svm"
attr(tkl, "kl_tune_path") <- "tkl"

# Arguments a learner's fits take inside kl_tune()'s folds when the call does not give them,
# a property of the learner (the attribute "kl_tune_fold_args", a named list); the refit on
# all rows gets the call's arguments. tkl() and hgk() compare their learned kernel with a
# Gaussian kernel tuned by cross-validation of its own (baseline = TRUE): in every fold of a
# tuning that is a nested cross-validation, slow, and the grid's errors would be partly the
# Gaussian's. The folds choose among the learned kernels; the refit makes the comparison once.
attr(tkl, "kl_tune_fold_args") <- list(baseline = FALSE)
attr(hgk, "kl_tune_fold_args") <- list(baseline = FALSE)

# The learner's fold arguments that are neither in the call (`given`, names of `...`) nor in
# the grid (`grid_names`): a named list, possibly empty.
.kl_tune_fold_args <- function(learner, given, grid_names) {
  fa <- attr(learner, "kl_tune_fold_args", exact = TRUE)
  if (!is.list(fa) || !length(fa) || is.null(names(fa))) return(list())
  keep <- setdiff(names(fa), c(given, grid_names))
  if (length(keep)) fa[keep] else list()
}

# ---- tkl ----------------------------------------------------------------------------------

# Arguments of tkl() the path passes on (from the grid or from `...`).
.tkl_path_args <- c("degree", "delta", "cost", "epsilon", "tol", "maxit", "class.weights",
                    "ridge", "normalize", "precision", "algorithm", "svm_tol", "cache",
                    "scale_response",
                    "threads", "baseline", "fitted")

.tkl_path_eligible <- function(learner, spec, g, metric) {
  # baseline = TRUE (the default) compares with the Gaussian SVM in every fold: general path
  if (!isFALSE(spec$dots$baseline)) return(FALSE)
  .kl_path_suits(spec, g, metric,
                 setdiff(.tkl_path_args, c("baseline", "fitted", "threads", "cache")),
                 .tkl_path_args)
}

# One (fold, setting) task: the fold's models along the costs, and their predictions of the
# held-out rows.
.tkl_path_task <- function(task, default_threads, progress = NULL) {
  threads <- .kl_path_threads(task$threads, default_threads)
  a <- task$args
  inp <- if (task$interface == "formula")
    .kl_with_fold_levels(.kl_input_formula(task$formula, task$train, "tkl()"))
  else .kl_input_xy(task$train$x, task$train$y, "tkl()")
  # the fold's fit standardises its own response, as tkl() would
  ysc <- .svr_scaling_of(inp, a$scale_response)
  inp <- .svr_scale_input(inp, ysc)
  fits <- .tkl_fit(inp, a$degree, a$delta, task$path[1L], a$epsilon, a$tol, a$maxit,
                   a$class.weights, FALSE, a$svm_tol, a$cache, threads, NULL, a$ridge,
                   a$normalize, .kl_choice(a$precision, c("auto", "double", "single"), "precision",
                                           "tkl()"), path = task$path,
                   algorithm = .kl_choice(a$algorithm, c("eg", "fw"), "algorithm", "tkl()"))
  preds <- lapply(fits, function(f) predict(.tkl_with_scaling(f, ysc), task$test,
                                            type = task$pred_type, threads = threads))
  if (is.function(progress)) progress(sprintf("fold %d, setting %d", task$fold, task$group))
  preds
}

# A cost path's argument getter: the value of argument `name` at grid point p is the point's,
# else the one given to kl_tune() (dots), else the default of the learner's method `fun`.
.kl_path_arg <- function(dots, fun) {
  formals_def <- formals(fun)
  function(name, p) {
    if (!is.null(p[[name]])) return(p[[name]])
    if (name %in% names(dots)) return(dots[[name]])
    eval(formals_def[[name]])
  }
}

.tkl_tune_run <- function(spec, g, foldid, metric, caller) {
  K <- max(foldid)
  seeds <- .klcv_draw_seeds(K)  # the same draws as the general path, so refits match
  points <- g$points
  G <- length(points)
  dots <- spec$dots
  threads <- .kl_threads(dots$threads)
  arg <- .kl_path_arg(dots, tkl.default)
  others <- setdiff(.tkl_path_args, c("cost", "baseline", "fitted", "threads"))
  settings <- lapply(points, function(p) stats::setNames(lapply(others, arg, p = p), others))
  keys <- vapply(settings, function(s) paste(deparse(s), collapse = ""), "")
  groups <- split(seq_len(G), factor(keys, levels = unique(keys)))
  costs_of <- function(grp) vapply(points[grp], function(p) as.numeric(p$cost), numeric(1))
  tasks <- list()
  for (k in seq_len(K)) {
    train <- which(foldid != k)
    test <- which(foldid == k)
    if (spec$interface == "formula") {
      tr <- spec$data[train, , drop = FALSE]
      te <- spec$data[test, , drop = FALSE]
    } else {
      tr <- list(x = spec$x[train, , drop = FALSE], y = spec$y[train])
      te <- spec$x[test, , drop = FALSE]
    }
    for (gi in seq_along(groups)) {
      grp <- groups[[gi]]
      tasks[[length(tasks) + 1L]] <- list(
        fold = k, group = gi, interface = spec$interface, formula = spec$formula, train = tr,
        test = te, args = settings[[grp[1L]]], path = sort(unique(costs_of(grp))),
        pred_type = metric$pred_type, threads = if (is.null(dots$threads)) NULL else threads)
    }
  }
  res <- .kl_task_map(tasks, .tkl_path_task,
                      default_threads = if (.klcv_use_future()) NULL else threads,
                      packages = "kernlearn")
  fm <- matrix(NA_real_, G, K, dimnames = list(NULL, paste0("Fold", seq_len(K))))
  preds <- lapply(seq_len(G), function(i) vector("list", K))
  for (t in seq_along(tasks)) {
    k <- tasks[[t]]$fold
    grp <- groups[[tasks[[t]]$group]]
    test <- which(foldid == k)
    cst <- costs_of(grp)
    for (j in seq_along(grp)) {
      pr <- res[[t]][[match(cst[j], tasks[[t]]$path)]]
      i <- grp[j]
      val <- metric$fun(spec$y[test], pr)
      if (!is.numeric(val) || length(val) != 1L)
        stop("the metric must return a single number", call. = FALSE)
      fm[i, k] <- as.numeric(val)
      preds[[i]][[k]] <- pr
    }
  }
  list(fold_metrics = fm, preds = preds, seeds = seeds)
}
