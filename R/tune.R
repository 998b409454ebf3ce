# Grid search by cross-validation: kl_tune(), its print method and the grid helpers.

#' Tune learner parameters by cross-validation
#'
#' Cross-validates a learner at every point of a parameter grid, with the same
#' folds for every point, picks the point with the best mean metric, and by
#' default refits the learner on all rows with it.
#'
#' @details
#' \code{grid} is either a data.frame with one row per grid point (list columns,
#' such as \code{I(list(k1, k2))}, hold objects), or a named list whose
#' elements are expanded to all combinations as by \code{expand.grid()} (the
#' first element varying fastest). A list element that is an atomic vector or a
#' plain list gives its elements as values; any other object (a kernel object, a
#' function) is a single value. So
#' \code{grid = list(kernel = list(k1, k2), lambda = c(0.1, 1))} has four points.
#'
#' All grid points use the same folds (drawn once, as in \code{\link{kl_cv}}),
#' and fold k of every grid point runs with the same seed, so a learner that
#' draws random numbers sees the same random numbers at every grid point and the
#' comparison between points is not blurred by them. The results of grid point
#' i equal those of \code{kl_cv()} with the same \code{set.seed()}, folds and
#' parameters. All (grid point, fold) fits run through
#' \code{future.apply::future_lapply()} when a parallel \pkg{future} plan is set;
#' see \code{\link{kl_cv}}. Ties are broken by the first grid point.
#'
#' For \code{\link{kernel_svm}} grids over \code{cost} (and \code{gamma} or
#' \code{kernel}) with a metric on classes, responses or decision values
#' (not probabilities), each fold and kernel is one
#' cost path: the costs in increasing order, each solve warm-started from the
#' last, and the held-out rows predicted from the support vectors. The paths
#' are the tasks then: they run on the \pkg{future} plan as the general fits
#' do (each worker with the threads \code{parallelly::availableCores()} gives
#' it, unless \code{threads} is passed) and report progress through
#' \pkg{progressr}.
#'
#' \strong{Learned kernels.} \code{\link{tkl}()} and \code{\link{hgk}()}
#' compare their learned kernel with a Gaussian kernel tuned by a
#' cross-validation of its own (\code{baseline = TRUE}, their default). In
#' every fold of a tuning that would be a nested cross-validation, slow, and
#' a grid point's error would be partly the Gaussian's; so their folds are
#' fitted with \code{baseline = FALSE} unless the call gives
#' \code{baseline}, and the refit on all rows (\code{best_model}) gets the
#' call's arguments: the comparison runs once, for the chosen point. Which
#' arguments a learner's folds take is a property of the learner (the
#' attribute \code{"kl_tune_fold_args"}, a named list); the result keeps
#' them (\code{fold_args}) and \code{print()} says so.
#'
#' \code{\link{tkl}} has a path of the same kind when its folds are fitted
#' with \code{baseline = FALSE} (with \code{baseline = TRUE} given, every
#' fold compares with a Gaussian SVM, and each grid point is fitted on its
#' own): per fold and setting of the other parameters (\code{delta}, \code{degree}, ...), the box matrix and
#' the start kernel are formed once and the costs run in increasing order,
#' each optimisation started from the start \eqn{P}, its first SVM solve
#' warm-started from the last cost's solution on the start kernel.
#' Each cost's run stops by \code{tkl()}'s own rule, so its objective is
#' within the duality gap of that of a fit at that cost alone (not equal to
#' it). Which learners have such a path is a property of the learner (the
#' attribute \code{"kl_tune_path"}), not of \code{kl_tune()}; other
#' learners, grids, arguments or metrics take the general path.
#'
#' \strong{Grid edges.} When the best point lies at the smallest or largest
#' value of a numeric element of a list \code{grid} that is a scale (three or
#' more values spaced by a constant ratio, such as costs \code{2^(0:8)},
#' widths or penalties, or non-whole numbers spaced by a constant step), the
#' edge may be where the grid stopped rather than where the metric is best:
#' the next value past it (the same ratio or step), with the other
#' parameters at the best point's, is cross-validated on the same folds with
#' the same seeds, and so on while the new point is better, at most
#' \code{extend} steps past each end. The added points are rows of
#' \code{results} marked \code{extended}, and \code{print()} says so.
#' Whole numbers with a constant step (degrees, node counts) and
#' \code{data.frame} grids are never extended; a fit that fails past an edge
#' ends the search there without an error.
#'
#' @inheritParams kl_cv
#' @param grid A data.frame of parameter values (one row per grid point) or a
#'   named list of values to combine; names are learner arguments.
#' @param ... Further arguments passed to \code{learner} at every grid point;
#'   they must not repeat a name of \code{grid}. With a formula,
#'   \code{na.action} (such as \code{na.omit}) is applied to \code{data}
#'   before the folds are drawn.
#' @param refit If \code{TRUE}, fit the learner on all rows with the best
#'   parameters and return it as \code{best_model}.
#' @param maximize If \code{TRUE}, larger metric values are better (for custom
#'   metrics such as accuracy); the built-in metrics are all minimised.
#' @param extend Steps at most past each end of a grid element when the best
#'   point lies at that end (see Details); 0 keeps the grid as given.
#' @return An object of class \code{"kl_tune"}, a list with
#'   \describe{
#'     \item{\code{results}}{a data.frame with the grid parameters (objects in
#'       list columns), the mean metric \code{mean} and its standard error
#'       \code{se}, one row per grid point in grid order, then the points
#'       added past an edge, marked by \code{extended}.}
#'     \item{\code{extension}}{\code{NULL}, or one row per point tried past an
#'       edge: \code{parameter}, \code{value}, its \code{mean} metric and
#'       whether it was \code{better} than the best point before it.}
#'     \item{\code{best}}{a named list of the best parameter values.}
#'     \item{\code{best_index}}{the row of \code{results} that is best.}
#'     \item{\code{best_model}}{the learner refitted on all rows with \code{best}
#'       (and \code{...}), or \code{NULL} when \code{refit = FALSE};
#'       \code{predict()} on the result predicts with it
#'       (\code{\link{predict.kl_tune}}).}
#'     \item{\code{cv}}{the \code{"kl_cv"} object of the best grid point,
#'       with its out-of-fold predictions.}
#'     \item{\code{fold_metrics}}{a matrix of fold metrics, grid points by folds.}
#'     \item{\code{foldid}}{the fold of each row.}
#'     \item{\code{metric}, \code{maximize}}{the metric name and direction.}
#'     \item{\code{learner}}{the learner's name, as written in the call.}
#'     \item{\code{fold_args}}{the learner's arguments for the folds' fits
#'       that the call did not give (see \strong{Learned kernels}), a
#'       possibly empty named list.}
#'     \item{\code{call}}{the matched call.}
#'   }
#' @seealso \code{\link{kl_cv}}.
#' @examples
#' set.seed(1)
#' tn <- kl_tune(kernel_ridge, mpg ~ wt + hp, data = mtcars, folds = 4,
#'               grid = list(lambda = c(0.01, 0.1, 1),
#'                           kernel = list(gaussian_kernel(gamma = 0.5),
#'                                         gaussian_kernel(gamma = 2))))
#' tn
#' tn$best
#' head(predict(tn$best_model, mtcars))
#'
#' # a data.frame grid, classification, without refitting
#' set.seed(1)
#' kl_tune(kernel_ridge, Species ~ ., data = iris, folds = 3,
#'         grid = data.frame(lambda = c(0.01, 1, 100)), refit = FALSE)
#' @export
kl_tune <- function(learner, x, y = NULL, data = NULL, grid, folds = 5, foldid = NULL,
                    metric = NULL, ..., refit = TRUE, maximize = FALSE, seed = NULL,
                    extend = 2L) {
  caller <- "kl_tune()"
  cl <- match.call()
  labels <- .klcv_labels(substitute(learner), substitute(x), substitute(y), substitute(data))
  metric_label <- .klcv_metric_label(substitute(metric))
  if (missing(grid)) stop(sprintf("%s: 'grid' is required", caller), call. = FALSE)
  if (!is.logical(refit) || length(refit) != 1L || is.na(refit))
    stop(sprintf("%s: 'refit' must be TRUE or FALSE", caller), call. = FALSE)
  if (!is.logical(maximize) || length(maximize) != 1L || is.na(maximize))
    stop(sprintf("%s: 'maximize' must be TRUE or FALSE", caller), call. = FALSE)
  if (!is.numeric(extend) || length(extend) != 1L || !is.finite(extend) || extend < 0 ||
      extend != round(extend))
    stop(sprintf("%s: 'extend' must be a whole number >= 0 (got %s)", caller,
                 .show_value(extend)), call. = FALSE)
  extend <- as.integer(extend)
  spec <- .klcv_spec(learner, x, y, data, labels, list(...), caller)
  g <- .klcv_grid(grid, caller)
  clash <- intersect(names(g$table), names(spec$dots))
  if (length(clash))
    stop(sprintf("%s: '%s' is given both in 'grid' and in '...'", caller, clash[1L]),
         call. = FALSE)
  metric <- .klcv_metric(metric, spec$task, metric_label, caller)
  # the learner's own arguments for the folds' fits, where the call does not set them
  # (tkl() and hgk(): no comparison with a tuned Gaussian in every fold); the refit gets the
  # call's arguments
  spec_refit <- spec
  fold_args <- .kl_tune_fold_args(learner, names(spec$dots), names(g$table))
  if (length(fold_args)) spec$dots <- c(spec$dots, fold_args)
  if (!is.null(seed)) {
    .klcv_check_seed(seed, caller)
    state <- .klcv_rng_save()
    on.exit(.klcv_rng_restore(state), add = TRUE)
    set.seed(seed)
  }
  fold_info <- .klcv_folds(spec, folds, foldid, caller)
  run <- NULL
  path <- .kl_tune_path_of(learner)
  if (!is.null(path) && path$eligible(learner, spec, g, metric)) {
    # The learner's warm-started cost path (R/tune-path.R); any error sends the grid to the
    # general path, which reports it. A user interrupt is a condition of class "interrupt",
    # not "error": the handler does not catch it, so it stops kl_tune() as an interrupt.
    state <- .klcv_rng_save()
    run <- tryCatch(path$run(spec, g, fold_info$foldid, metric, caller),
                    error = function(e) NULL)
    if (is.null(run)) .klcv_rng_restore(state)
  }
  if (is.null(run)) run <- .klcv_run(spec, g$points, fold_info$foldid, metric, caller)
  if (all(is.na(rowMeans(run$fold_metrics))))
    stop(sprintf("%s: the metric is missing (NA) at every grid point", caller), call. = FALSE)
  g$table$extended <- FALSE
  if (extend > 0L && is.list(grid) && !is.data.frame(grid))
    ext <- .kl_tune_extend(spec, g, run, grid, fold_info$foldid, metric, maximize, extend,
                           caller)
  else ext <- list(g = g, run = run, extension = NULL)
  g <- ext$g
  run <- ext$run

  fm <- run$fold_metrics
  means <- rowMeans(fm)
  ses <- apply(fm, 1L, .klcv_se)
  score <- if (maximize) -means else means
  best_index <- which.min(score)
  best <- g$points[[best_index]]

  results <- g$table
  extended <- results$extended
  results$extended <- NULL
  results$mean <- means
  results$se <- ses
  results$extended <- extended

  best_model <- NULL
  if (refit) {
    refit_seed <- .klcv_draw_seeds(1L)
    out <- .klcv_task(list(fold = NA_integer_, seed = refit_seed, params = best),
                      .klcv_shared(spec_refit, fold_info$foldid, metric), NULL)
    if (!is.null(out$error))
      stop(sprintf("%s: refitting the learner with the best parameters failed: %s",
                   caller, out$error), call. = FALSE)
    best_model <- out$fit
  }
  cv <- .klcv_new(spec, fold_info, metric, fm[best_index, ],
                  .klcv_assemble(run$preds[[best_index]], fold_info$foldid, spec, metric),
                  c(spec$dots, best), NULL)
  structure(list(results = results, best = best, best_index = best_index,
                 best_model = best_model, cv = cv, fold_metrics = fm,
                 foldid = fold_info$foldid, metric = metric$name, maximize = maximize,
                 labels = g$labels, extension = ext$extension, learner = spec$learner_name,
                 fold_args = fold_args, call = cl),
            class = "kl_tune")
}

#' @rdname kl_tune
#' @param n Number of grid points to show, best first.
#' @param digits Significant digits to print.
#' @export
print.kl_tune <- function(x, n = 10L, digits = max(3L, getOption("digits") - 3L), ...) {
  G <- nrow(x$results)
  dir <- if (isTRUE(x$maximize)) "higher" else "lower"
  cat(sprintf("Tuning %s over %d grid point%s with %d-fold cross-validation (%s, %d rows)\n",
              x$learner, G, if (G == 1L) "" else "s", x$cv$folds, x$cv$task,
              length(x$foldid)))
  cat(sprintf("metric: %s (%s is better)\n\n", x$metric, dir))
  tab <- x$labels
  tab$mean <- x$results$mean
  tab$se <- x$results$se
  ord <- order(if (isTRUE(x$maximize)) -tab$mean else tab$mean, seq_len(G), na.last = TRUE)
  show <- utils::head(ord, n)
  print(tab[show, , drop = FALSE], digits = digits)
  if (G > length(show)) cat(sprintf("... %d more grid point(s)\n", G - length(show)))
  best_txt <- .kl_tune_point_text(x$labels, x$best_index)
  cat(sprintf("\nbest (row %d): %s\n", x$best_index, best_txt))
  if (!is.null(x$extension) && nrow(x$extension)) {
    e <- x$extension
    cat(sprintf("the grid was extended past its edge: %s\n",
                paste(sprintf("%s = %s (%s)", e$parameter,
                              vapply(e$value, format, "", digits = digits),
                              ifelse(e$better, "better", "not better")), collapse = ", ")))
  }
  if (length(x$fold_args)) {
    fa <- paste(names(x$fold_args), vapply(x$fold_args, function(v) deparse(v)[1L], ""),
                sep = " = ", collapse = ", ")
    cat(sprintf("the folds were fitted with %s (%s's setting for tuning; pass %s to change it)%s\n",
                fa, x$learner, paste(names(x$fold_args), collapse = ", "),
                if (is.null(x$best_model)) "" else
                  "; the refit on all rows with the call's arguments"))
    ch <- x$best_model$selection$choice
    if (is.character(ch) && length(ch) == 1L)
      cat(sprintf("the refit compared the learned kernel with the tuned Gaussian: %s predicts (best_model$selection)\n",
                  if (ch == "learned") "the learned kernel" else "the Gaussian"))
  }
  cat(sprintf("%s: %s (se %s)%s\n", x$metric,
              format(x$results$mean[x$best_index], digits = digits),
              format(x$results$se[x$best_index], digits = digits),
              if (is.null(x$best_model)) "; not refitted" else "; refitted on all rows"))
  invisible(x)
}

.klcv_grid <- function(grid, caller) {
  if (is.data.frame(grid)) {
    if (nrow(grid) == 0L || ncol(grid) == 0L)
      stop(sprintf("%s: 'grid' has no points (a data.frame with %d rows and %d columns)",
                   caller, nrow(grid), ncol(grid)), call. = FALSE)
    nms <- names(grid)
    .klcv_check_grid_names(nms, caller)
    G <- nrow(grid)
    values <- lapply(grid, function(col) {
      lapply(seq_len(G), function(i) {
        v <- col[[i]]
        if (is.factor(v)) as.character(v) else v
      })
    })
    table <- grid
    rownames(table) <- NULL
  } else if (is.list(grid) && !is.object(grid)) {
    if (length(grid) == 0L)
      stop(sprintf("%s: 'grid' has no points (an empty list)", caller), call. = FALSE)
    nms <- names(grid)
    .klcv_check_grid_names(nms, caller)
    grid <- lapply(grid, function(v) {
      if (is.factor(v)) as.character(v)
      else if (is.atomic(v) || (is.list(v) && !is.object(v))) v
      else if (inherits(v, "AsIs") && is.list(v)) unclass(v)
      else list(v)
    })
    lens <- lengths(grid)
    if (any(lens == 0L))
      stop(sprintf("%s: element '%s' of 'grid' has no values", caller,
                   nms[which(lens == 0L)[1L]]), call. = FALSE)
    idx <- expand.grid(lapply(lens, seq_len), KEEP.OUT.ATTRS = FALSE,
                       stringsAsFactors = FALSE)
    G <- nrow(idx)
    values <- lapply(nms, function(nm) lapply(idx[[nm]], function(i) grid[[nm]][[i]]))
    names(values) <- nms
    table <- data.frame(row.names = seq_len(G))
    for (nm in nms) {
      v <- grid[[nm]]
      table[[nm]] <- if (is.atomic(v)) unname(v[idx[[nm]]]) else I(unname(v[idx[[nm]]]))
    }
    rownames(table) <- NULL
  } else {
    stop(sprintf("%s: 'grid' must be a data.frame or a named list (got %s)", caller,
                 class(grid)[1L]), call. = FALSE)
  }
  points <- lapply(seq_len(G), function(i) {
    p <- lapply(values, function(col) col[[i]])
    names(p) <- nms
    p
  })
  labels <- data.frame(row.names = seq_len(G))
  for (nm in nms) {
    col <- grid[[nm]]
    at <- if (is.data.frame(grid)) seq_len(G) else idx[[nm]]
    vnames <- if (is.list(col)) names(col)
    labels[[nm]] <- vapply(seq_len(G), function(i)
      .klcv_label(values[[nm]][[i]], vnames[at[i]], at[i], nm), "")
  }
  rownames(labels) <- NULL
  list(points = points, table = table, labels = labels)
}

.klcv_check_grid_names <- function(nms, caller) {
  if (is.null(nms) || any(is.na(nms)) || any(!nzchar(nms)))
    stop(sprintf("%s: every column or element of 'grid' must be named after a learner argument",
                 caller), call. = FALSE)
  if (anyDuplicated(nms))
    stop(sprintf("%s: 'grid' names must be unique ('%s' is repeated)", caller,
                 nms[anyDuplicated(nms)]), call. = FALSE)
  reserved <- intersect(nms, c("mean", "se", "extended"))
  if (length(reserved))
    stop(sprintf("%s: 'grid' must not have a parameter named '%s' (a results column)",
                 caller, reserved[1L]), call. = FALSE)
  invisible(nms)
}

# A short text for one grid value, for printing.
.klcv_label <- function(v, name, index, param) {
  if (!is.null(name) && !is.na(name) && nzchar(name)) return(name)
  if (is.null(v)) return("NULL")
  if (is.atomic(v) && length(v) == 1L && is.null(dim(v))) return(format(v))
  if (is.atomic(v) && length(v) <= 4L && is.null(dim(v)))
    return(paste0("c(", paste(format(v), collapse = ", "), ")"))
  if (is.object(v)) {
    txt <- tryCatch(utils::capture.output(print(v)), error = function(e) character())
    txt <- trimws(txt[nzchar(trimws(txt))])
    if (length(txt) == 1L && nchar(txt) <= 60L) return(txt)
  }
  sprintf("%s[[%d]]", param, index)
}

.klcv_param_text <- function(params) {
  nms <- names(params)
  if (is.null(nms)) nms <- rep("", length(params))
  txt <- vapply(seq_along(params), function(i)
    .klcv_label(params[[i]], NULL, i, if (nzchar(nms[i])) nms[i] else "arg"), "")
  paste(ifelse(nzchar(nms), paste(nms, txt, sep = " = "), txt), collapse = ", ")
}
