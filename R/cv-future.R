# Running the (grid point, fold) fits of kl_cv() and kl_tune(): the task each fit is, the
# future dispatch (with the globals and packages a worker needs, and the RNG kept as it was)
# and the collection of fold metrics.

# What every task needs, shipped once to each worker.
.klcv_shared <- function(spec, foldid, metric) {
  list(learner = spec$learner, learner_expr = spec$labels$learner_expr,
       labels = spec$labels, interface = spec$interface, formula = spec$formula,
       data = spec$data, x = spec$x, y = spec$learner_y, foldid = foldid,
       dots = spec$dots, pred_type = metric$pred_type,
       no_fitted = .kl_takes_fitted(spec$learner))
}

.klcv_rng_save <- function() {
  genv <- globalenv()
  list(kind = RNGkind(),
       seed = if (exists(".Random.seed", envir = genv, inherits = FALSE))
                get(".Random.seed", envir = genv, inherits = FALSE))
}

.klcv_rng_restore <- function(state) {
  genv <- globalenv()
  suppressWarnings(RNGkind(state$kind[1L], state$kind[2L], state$kind[3L]))
  if (!is.null(state$seed)) {
    assign(".Random.seed", state$seed, envir = genv)
  } else if (exists(".Random.seed", envir = genv, inherits = FALSE)) {
    rm(".Random.seed", envir = genv)
  }
}

# One fit (and prediction) with its own seed. Self-contained (base R and stats::predict only),
# so it runs unchanged on future workers. fold = NA fits all rows and returns the model.
.klcv_task <- function(task, shared, progress = NULL) {
  genv <- globalenv()
  old_kind <- RNGkind()
  had_seed <- exists(".Random.seed", envir = genv, inherits = FALSE)
  old_seed <- if (had_seed) get(".Random.seed", envir = genv, inherits = FALSE)
  on.exit({
    suppressWarnings(RNGkind(old_kind[1L], old_kind[2L], old_kind[3L]))
    if (had_seed) {
      assign(".Random.seed", old_seed, envir = genv)
    } else if (exists(".Random.seed", envir = genv, inherits = FALSE)) {
      rm(".Random.seed", envir = genv)
    }
  }, add = TRUE)
  set.seed(task$seed, kind = "Mersenne-Twister", normal.kind = "Inversion",
           sample.kind = "Rejection")
  # a fold's formula fit keeps the factor levels its rows lack (.kl_with_fold_levels)
  if (!is.na(task$fold) && identical(shared$interface, "formula")) {
    old_opt <- options(kernlearn.keep_levels = TRUE)
    on.exit(options(old_opt), add = TRUE)
  }
  out <- tryCatch({
    refit <- is.na(task$fold)
    rows <- if (refit) seq_along(shared$foldid) else which(shared$foldid != task$fold)
    penv <- environment(shared$learner)
    if (is.null(penv)) penv <- globalenv()
    env <- new.env(parent = penv)
    used <- character()
    bind <- function(value, preferred, fallback) {
      ok <- is.character(preferred) && length(preferred) == 1L && !is.na(preferred) &&
        nzchar(preferred) && identical(make.names(preferred), preferred) &&
        !startsWith(preferred, ".kl_") && !(preferred %in% used)
      nm <- if (ok) preferred else fallback
      used <<- c(used, nm)
      assign(nm, value, envir = env)
      as.name(nm)
    }
    lab <- shared$labels
    fun <- if (!is.null(shared$learner_expr)) shared$learner_expr
           else bind(shared$learner, lab$learner, ".kl_learner")
    args <- c(shared$dots, task$params)
    # (a fold's model is only asked for predictions on the held-out rows)
    if (!refit && isTRUE(shared$no_fitted) && !("fitted" %in% names(args))) args$fitted <- FALSE
    # A precomputed kernel matrix (kernel = "precomputed") is cut by rows and columns: the
    # fold's training block to fit, the held-out rows against the training rows to predict.
    pre <- !identical(shared$interface, "formula") && identical(args$kernel, "precomputed")
    if (identical(shared$interface, "formula")) {
      head <- list(fun, shared$formula,
                   data = bind(shared$data[rows, , drop = FALSE], lab$data, ".kl_data"))
    } else {
      xr <- if (pre) shared$x[rows, rows, drop = FALSE] else shared$x[rows, , drop = FALSE]
      head <- list(fun, bind(xr, lab$x, ".kl_x"), bind(shared$y[rows], lab$y, ".kl_y"))
    }
    arg_names <- names(args)
    exprs <- vector("list", length(args))
    for (i in seq_along(args)) {
      v <- args[[i]]
      inline <- is.null(v) || (is.atomic(v) && is.null(attributes(v)) && length(v) <= 10L)
      exprs[i] <- list(if (inline) v else bind(v, arg_names[i], paste0(".kl_arg", i)))
    }
    names(exprs) <- arg_names
    fit <- eval(as.call(c(head, exprs)), env)
    if (refit) {
      list(fit = fit, error = NULL)
    } else {
      test <- which(shared$foldid == task$fold)
      newdata <- if (identical(shared$interface, "formula")) shared$data[test, , drop = FALSE]
                 else if (pre) shared$x[test, rows, drop = FALSE]
                 else shared$x[test, , drop = FALSE]
      assign(".kl_fit", fit, envir = env)
      assign(".kl_newdata", newdata, envir = env)
      assign(".kl_type", shared$pred_type, envir = env)
      pred <- eval(quote(stats::predict(.kl_fit, newdata = .kl_newdata, type = .kl_type)), env)
      list(pred = pred, error = NULL)
    }
  }, error = function(e) list(error = conditionMessage(e)))
  if (is.function(progress)) {
    progress(if (is.null(task$grid)) sprintf("fold %d", task$fold)
             else sprintf("grid point %d, fold %d", task$grid, task$fold))
  }
  out
}

.klcv_use_future <- function() {
  requireNamespace("future", quietly = TRUE) &&
    requireNamespace("future.apply", quietly = TRUE) &&
    !inherits(future::plan(), "sequential")
}

.klcv_package_of <- function(f) {
  env <- if (is.function(f)) environment(f)
  if (is.null(env)) return(character())
  top <- topenv(env)
  if (isNamespace(top) && !identical(top, .BaseNamespaceEnv)) getNamespaceName(top)
  else character()
}

# Does a function's environment lead to the global environment (rather than a package)?
.klcv_reaches_global <- function(env) {
  while (is.environment(env) && !identical(env, emptyenv())) {
    if (identical(env, globalenv())) return(TRUE)
    if (isNamespace(env)) return(FALSE)
    env <- parent.env(env)
  }
  FALSE
}

# Objects of the global environment that a learner defined there needs on a worker: what its
# code refers to (recursively), and the S3 methods of generics among them and of predict()
# (methods are found by dispatch, not by name, so they are looked up by prefix).
.klcv_global_carry <- function(learner) {
  out <- list(globals = list(), packages = character())
  if (!is.function(learner) || !.klcv_reaches_global(environment(learner))) return(out)
  genv <- globalenv()
  gfuns <- Filter(function(nm) is.function(get(nm, envir = genv)), ls(genv))
  carry <- list()
  pkgs <- character()
  queue <- list(learner)
  prefixes <- c("predict", Filter(function(nm) identical(get(nm, envir = genv), learner), gfuns))
  done_prefixes <- character()
  for (iter in seq_len(20L)) {
    added <- character()
    for (f in queue) {
      e <- new.env(parent = genv)
      assign(".klcv_f", f, envir = e)
      gp <- tryCatch(future::getGlobalsAndPackages(quote(.klcv_f), envir = e, globals = TRUE),
                     error = function(err) NULL)
      if (is.null(gp)) next
      pkgs <- c(pkgs, gp$packages)
      for (nm in setdiff(names(gp$globals), c(".klcv_f", names(carry)))) {
        if (exists(nm, envir = genv, inherits = FALSE) &&
            identical(get(nm, envir = genv), gp$globals[[nm]])) {
          carry[[nm]] <- gp$globals[[nm]]
          added <- c(added, nm)
        }
      }
    }
    prefixes <- unique(c(prefixes, Filter(function(nm) is.function(carry[[nm]]), names(carry))))
    for (pre in setdiff(prefixes, done_prefixes)) {
      for (nm in gfuns[startsWith(gfuns, paste0(pre, "."))]) {
        if (is.null(carry[[nm]])) {
          carry[[nm]] <- get(nm, envir = genv)
          added <- c(added, nm)
        }
      }
    }
    done_prefixes <- prefixes
    if (!length(added)) break
    queue <- lapply(Filter(function(nm) is.function(carry[[nm]]), added),
                    function(nm) carry[[nm]])
  }
  out$globals <- carry
  out$packages <- unique(pkgs)
  out
}

# Runs FUN(task, ..., progress = ) over the tasks: on the future plan when a parallel one is set
# (the session's RNG state is kept; each task gets its own stream), else here. `progress` is a
# progressr progressor (one step a task) or NULL. The tasks' warnings are collected and each
# distinct one is given once, after the tasks, with the number of tasks (`unit`) that gave it:
# a learner's warning would otherwise repeat for every fold and grid point.
.kl_task_map <- function(tasks, FUN, ..., packages = character(), globals = TRUE,
                         unit = "fits") {
  progress <- NULL
  if (requireNamespace("progressr", quietly = TRUE))
    progress <- progressr::progressor(steps = length(tasks))
  if (!.klcv_use_future()) {
    res <- lapply(tasks, .kl_task_warnings, .f = FUN, ..., progress = progress)
  } else {
    state <- .klcv_rng_save()
    on.exit(.klcv_rng_restore(state), add = TRUE)
    res <- future.apply::future_lapply(tasks, .kl_task_warnings, .f = FUN, ...,
                                       progress = progress, future.seed = TRUE,
                                       future.packages = packages, future.globals = globals)
  }
  .kl_task_rewarn(lapply(res, `[[`, "warnings"), unit)
  lapply(res, `[[`, "value")
}

# One task, its warnings kept (and muffled) in the order they came.
.kl_task_warnings <- function(task, .f, ..., progress = NULL) {
  .kl_collect_warnings(.f(task, ..., progress = progress))
}

# The value of expr (evaluated where it was written) and the messages of its warnings, which
# are muffled.
.kl_collect_warnings <- function(expr) {
  w <- character()
  value <- withCallingHandlers(expr, warning = function(cond) {
    w <<- c(w, conditionMessage(cond))
    invokeRestart("muffleWarning")
  })
  list(value = value, warnings = w)
}

# Gives each distinct warning of the tasks once, with the number of tasks that gave it.
.kl_task_rewarn <- function(warnings, unit) {
  n <- length(warnings)
  per_task <- lapply(warnings, unique)
  msgs <- unique(unlist(per_task, use.names = FALSE))
  for (m in msgs) {
    k <- sum(vapply(per_task, function(w) m %in% w, logical(1)))
    warning(if (n > 1L) sprintf("%s (in %d of %d %s)", m, k, n, unit) else m, call. = FALSE)
  }
  invisible(NULL)
}

.klcv_dispatch <- function(tasks, shared) {
  if (!.klcv_use_future()) return(.kl_task_map(tasks, .klcv_task, shared = shared))
  carry <- .klcv_global_carry(shared$learner)
  pkgs <- unique(c(.klcv_package_of(shared$learner), .klcv_package_of(.klcv_task),
                   carry$packages))
  .kl_task_map(tasks, .klcv_task, shared = shared, packages = pkgs, globals = carry$globals)
}

# Runs every (grid point, fold) task and computes the fold metrics.
.klcv_run <- function(spec, points, foldid, metric, caller, seeds = NULL) {
  K <- max(foldid)
  # One seed per fold, drawn after the folds and shared by every grid point.
  if (is.null(seeds)) seeds <- .klcv_draw_seeds(K)
  G <- length(points)
  tasks <- vector("list", G * K)
  i <- 0L
  for (g in seq_len(G)) for (k in seq_len(K)) {
    i <- i + 1L
    tasks[[i]] <- list(grid = g, fold = k, seed = seeds[k], params = points[[g]])
  }
  shared <- .klcv_shared(spec, foldid, metric)
  res <- .klcv_dispatch(tasks, shared)
  fm <- matrix(NA_real_, G, K, dimnames = list(NULL, paste0("Fold", seq_len(K))))
  preds <- vector("list", G)
  i <- 0L
  for (g in seq_len(G)) {
    preds[[g]] <- vector("list", K)
    for (k in seq_len(K)) {
      i <- i + 1L
      where <- if (G > 1L) sprintf("fold %d of grid point %d", k, g) else sprintf("fold %d", k)
      if (!is.null(res[[i]]$error))
        stop(sprintf("%s: the learner failed in %s: %s", caller, where, res[[i]]$error),
             call. = FALSE)
      test <- which(foldid == k)
      p <- .klcv_check_pred(res[[i]]$pred, metric$pred_type, length(test), spec$levels,
                            where, caller)
      val <- tryCatch(metric$fun(spec$y[test], p), error = function(e)
        stop(sprintf("%s: the metric failed in %s: %s", caller, where, conditionMessage(e)),
             call. = FALSE))
      if (!is.numeric(val) || length(val) != 1L)
        stop(sprintf("%s: the metric must return a single number (got %s in %s)", caller,
                     if (length(val) != 1L) sprintf("length %d", length(val))
                     else class(val)[1L], where), call. = FALSE)
      fm[g, k] <- as.numeric(val)
      preds[[g]][[k]] <- p
    }
  }
  list(fold_metrics = fm, preds = preds, seeds = seeds)
}
