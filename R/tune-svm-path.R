# kl_tune() fast path: for kernel_svm grids over cost (and gamma or kernel), each fold and
# kernel gets one kernel cache and a path over increasing costs with warm starts; the
# decision values of the held-out rows come from one pass over the support vectors.

.svm_fast_args <- c("kernel", "gamma", "epsilon", "type", "class.weights", "tol",
                    "shrinking", "cache", "max_iter", "scale", "scale_response", "threads")

# TRUE when kl_tune() may use the cost path for this grid, arguments and metric (the learner
# is kernel_svm: its "kl_tune_path" attribute, R/tune-path.R).
.svm_fast_eligible <- function(learner, spec, g, metric) {
  if (!is.null(spec$dots$kernel) && identical(spec$dots$kernel, "precomputed")) return(FALSE)
  .kl_path_suits(spec, g, metric, c("cost", "gamma", "kernel"), .svm_fast_args,
                 types = c("class", "response", "decision"))
}

# One (fold, kernel) cost path: decision values of the held-out rows for every cost. Runs on a
# future worker or here; `threads` NULL means what the process has (availableCores() on a
# worker, the package default here).
.svm_path_task <- function(task, default_threads, progress = NULL) {
  threads <- .kl_path_threads(task$threads, default_threads)
  decs <- .kl_core(task$caller, cpp_svm_path, task$X, NULL, task$y, task$k, task$w,
                   task$kernel, task$params, seq_len(task$ntr), task$ntr + seq_len(task$ntest),
                   task$path, as.integer(threads), .kl_backend_arg())
  if (is.function(progress)) progress(sprintf("fold %d, kernel %d", task$fold, task$group))
  decs
}

.svm_path_dispatch <- function(tasks, threads) {
  # on a worker, the threads it is given (unless the call fixed them)
  .kl_task_map(tasks, .svm_path_task,
               default_threads = if (.klcv_use_future()) NULL else threads,
               packages = "kernlearn")
}

.svm_tune_run <- function(spec, g, foldid, metric, caller) {
  K <- max(foldid)
  seeds <- .klcv_draw_seeds(K)  # the same draws as the general path, so refits match
  points <- g$points
  G <- length(points)
  dots <- spec$dots
  threads <- .kl_threads(dots$threads)
  arg <- .kl_path_arg(dots, kernel_svm.default)
  # Group the grid points by kernel.
  kernel_of <- function(p) .svm_kernel(arg("kernel", p), arg("gamma", p), caller)
  kernels <- lapply(points, kernel_of)
  keys <- vapply(kernels, function(k) paste(deparse(unclass(k)), collapse = ""), "")
  groups <- split(seq_len(G), factor(keys, levels = unique(keys)))
  p0 <- list()
  type <- .svm_type(arg("type", p0), caller)
  params <- .svm_params(1, arg("epsilon", p0), arg("tol", p0), arg("shrinking", p0),
                        arg("cache", p0), arg("max_iter", p0), FALSE, 5, caller)
  # One task per (fold, kernel): the fold's scaled rows and the kernel's increasing costs.
  # Tasks run through future.apply when a parallel plan is set (as the general path's do),
  # each with the threads its worker has, and report progress.
  tasks <- list()
  folds_y <- vector("list", K)
  fold_warnings <- vector("list", K)  # the same input warning of every fold is given once
  for (k in seq_len(K)) fold_warnings[[k]] <- .kl_collect_warnings({
    train <- which(foldid != k)
    test <- which(foldid == k)
    if (spec$interface == "formula") {
      d <- spec$data
      if (identical(type, "C-classification")) {
        nm <- all.vars(spec$formula[[2L]])
        if (length(nm) == 1L && nm %in% names(d) && is.numeric(d[[nm]]))
          d[[nm]] <- factor(d[[nm]])
      }
      .kl_with_fold_levels({
        inp <- .kl_input_formula(spec$formula, d[train, , drop = FALSE], caller,
                                 scale = arg("scale", p0))
        xt <- .kl_newdata(inp$spec, d[test, , drop = FALSE], caller)
      })
    } else {
      yy <- spec$y
      if (identical(type, "C-classification") && !is.factor(yy)) yy <- factor(yy)
      inp <- .kl_input_xy(spec$x[train, , drop = FALSE], yy[train], caller,
                          scale = arg("scale", p0))
      xt <- .kl_newdata(inp$spec, spec$x[test, , drop = FALSE], caller)
    }
    if (!is.null(type) && (type == "C-classification") != (inp$task == "classification"))
      stop("type and response do not match", call. = FALSE)
    X <- rbind(inp$x, xt)
    ntr <- nrow(inp$x)
    cls <- inp$task == "classification"
    if (cls) {
      if (!identical(inp$levels, spec$levels)) stop("a class is missing from a fold", call. = FALSE)
      w <- .svm_class_weights(arg("class.weights", p0), inp$y, caller)
      yarg <- as.integer(inp$y)
      kk <- length(inp$levels)
    } else {
      if (!is.null(arg("class.weights", p0)))
        stop("class.weights is for classification", call. = FALSE)
      w <- numeric()
      yarg <- as.numeric(inp$y)
      kk <- 0L
      # the fold's fit standardises its own response, as kernel_svm() would
      ysc <- if (isTRUE(arg("scale_response", p0))) .svr_response_scaling(yarg)
      if (!is.null(ysc)) yarg <- .svr_apply_scaling(yarg, ysc)
    }
    folds_y[[k]] <- list(test = test, cls = cls, kk = kk, ysc = if (!cls) ysc)
    for (gi in seq_along(groups)) {
      grp <- groups[[gi]]
      kern <- kernels[[grp[1L]]]
      # the default width from the fold's training rows, as kernel_svm() would set it
      g0 <- .svm_gamma_default(kern, NULL, inp, caller)
      if (!is.null(g0)) kern$gamma <- g0
      kern <- .resolve_kernel(kern, ncol(X), caller)
      cst <- vapply(points[grp], function(p) as.numeric(p$cost), numeric(1))
      tasks[[length(tasks) + 1L]] <- list(
        fold = k, group = gi, caller = caller, X = X, y = yarg, k = kk, w = unname(w),
        kernel = .kernel_spec(kern), params = params, ntr = ntr, ntest = length(test),
        path = sort(unique(cst)), threads = if (is.null(dots$threads)) NULL else threads)
    }
  })$warnings
  .kl_task_rewarn(fold_warnings, "folds")
  res <- .svm_path_dispatch(tasks, threads)
  fm <- matrix(NA_real_, G, K, dimnames = list(NULL, paste0("Fold", seq_len(K))))
  preds <- lapply(seq_len(G), function(i) vector("list", K))
  for (t in seq_along(tasks)) {
    k <- tasks[[t]]$fold
    grp <- groups[[tasks[[t]]$group]]
    decs <- res[[t]]
    if (!isTRUE(attr(decs, "converged")))
      stop("a solve reached the iteration cap", call. = FALSE)  # the general path warns
    fy <- folds_y[[k]]
    path <- tasks[[t]]$path
    cst <- vapply(points[grp], function(p) as.numeric(p$cost), numeric(1))
    for (j in seq_along(grp)) {
      dec <- decs[[match(cst[j], path)]]
      # what predict() gives: classes by the pairs' votes; decision values as a vector for
      # two classes and regression, else a matrix with a column per pair
      pr <- if (fy$cls && metric$pred_type == "class")
              factor(spec$levels[.kl_core(caller, cpp_ovo_vote, as.matrix(dec), fy$kk)],
                     levels = spec$levels)
            else if (fy$cls && fy$kk > 2L)
              `colnames<-`(as.matrix(dec), .svm_pair_names(spec$levels))
            else if (fy$cls) as.vector(dec)
            else .svr_unscale(as.vector(dec), fy$ysc)
      i <- grp[j]
      val <- metric$fun(spec$y[fy$test], pr)
      if (!is.numeric(val) || length(val) != 1L)
        stop("the metric must return a single number", call. = FALSE)
      fm[i, k] <- as.numeric(val)
      preds[[i]][[k]] <- pr
    }
  }
  list(fold_metrics = fm, preds = preds, seeds = seeds)
}
