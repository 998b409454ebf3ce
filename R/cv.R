#' Cross-validate a learner
#'
#' Estimates the prediction error of any learner that follows the kernlearn
#' interface (an S3 generic with a formula method and an x / y method, and a
#' \code{predict()} method) by K-fold cross-validation.
#'
#' @details
#' \strong{Folds.} For classification (a factor response) the folds are
#' stratified: the rows of each class are spread as evenly as possible over the
#' folds (the counts of a class in any two folds differ by at most one, and so
#' do the fold sizes). For regression the rows are assigned at random to folds of
#' equal size (up to one row). The assignment is drawn with R's random number
#' generator, so \code{set.seed()} (or the \code{seed} argument) reproduces it.
#' A class with fewer rows than folds gives a warning, as some folds then have
#' none of it. \code{foldid} gives the folds directly and overrides
#' \code{folds}.
#'
#' \strong{Metrics.} Each fold's model is fitted on the other folds and predicts
#' the rows of the fold; the metric is computed per fold and the folds are then
#' averaged (\code{mean}), with the standard error \code{sd / sqrt(K)}.
#' \describe{
#'   \item{\code{"error"}}{misclassification rate of \code{predict(type = "class")}
#'     (the default for classification).}
#'   \item{\code{"logloss"}}{mean negative log probability of the true class, from
#'     \code{predict(type = "prob")}, with probabilities clipped to
#'     \eqn{[10^{-15}, 1 - 10^{-15}]}. The learner must support
#'     \code{type = "prob"}.}
#'   \item{\code{"mse"}}{mean squared error of \code{predict(type = "response")}
#'     (the default for regression).}
#'   \item{\code{"mae"}}{mean absolute error of \code{predict(type = "response")}.}
#'   \item{a function}{\code{function(truth, pred)} returning one number, where
#'     \code{truth} is the response of the fold and \code{pred} its predictions:
#'     classes (a factor) for classification, numbers for regression. Give the
#'     function an attribute \code{"type"} (\code{"class"}, \code{"prob"},
#'     \code{"response"} or \code{"decision"}) to receive another kind of
#'     prediction. Lower values are taken as better by \code{\link{kl_tune}}
#'     unless its \code{maximize = TRUE}.}
#' }
#'
#' \strong{Calling the learner.} The training rows of a fold are passed as
#' \code{learner(formula, data = <rows>, ...)} or \code{learner(<x rows>, <y rows>, ...)},
#' and predictions come from \code{predict(fit, newdata = <rows>, type = )}.
#' Both are evaluated in an environment whose parent is the environment of
#' \code{learner}, so methods defined beside the learner are found. A learner
#' that needs other arguments can be wrapped:
#' \code{function(x, y, ...) my_learner(x, y, fixed = 1, ...)}.
#' With \code{kernel = "precomputed"} (\code{\link{kernel_svm}}), \code{x} is
#' the \eqn{n \times n}{n x n} kernel matrix: a fold is fitted on the block of
#' its training rows and columns and predicts the held-out rows from their
#' kernel values against the training rows, as kernlab's \code{cross =} does.
#'
#' \strong{Parallel work.} The fits of the folds (and of the grid points in
#' \code{\link{kl_tune}}) run with \code{future.apply::future_lapply()} when the
#' \pkg{future.apply} package is installed and a parallel plan is set, for example
#' \code{future::plan(future::multisession, workers = 4)}; otherwise they run one
#' after another. The results are identical either way: one seed per fold is
#' drawn from R's random number generator before any fit runs, and each fit runs
#' with \code{set.seed(<that seed>, kind = "Mersenne-Twister")}, so learners that
#' draw random numbers (random features, mini-batches) are reproducible. The
#' caller's random number generator state is restored after each fit. With
#' \pkg{progressr} installed, one progress step is signalled per fit; nothing is
#' shown unless progress handlers are enabled (for example with
#' \code{progressr::handlers(global = TRUE)}). With parallel workers, give
#' multi-threaded learners \code{threads = 1} (through \code{...}) so that the
#' workers do not compete for cores. On workers that are separate R processes,
#' a learner defined in the global environment is sent along with the objects
#' of the global environment that its code uses and with the global
#' \code{predict()} and learner methods (found by name, such as
#' \code{predict.myfit} and \code{mylearner.default}).
#'
#' Arguments of the learner named \code{seed} cannot be passed through
#' \code{...} (\code{seed} belongs to \code{kl_cv}); wrap the learner instead.
#'
#' @param learner A learner function, such as \code{\link{kernel_ridge}}, called
#'   as \code{learner(formula, data = , ...)} or \code{learner(x, y, ...)}.
#' @param x A formula (\code{y ~ .}) with \code{data}, or a numeric matrix or
#'   data.frame of predictors.
#' @param y The response when \code{x} is not a formula: a factor for
#'   classification, a numeric vector for regression. With a formula, \code{y}
#'   must be \code{NULL} (a data frame given in its place is taken as
#'   \code{data}).
#' @param data A data.frame holding the variables of the formula \code{x}.
#' @param folds Number of folds K, a whole number from 2 to the number of rows.
#' @param foldid Optional integer vector with one value in \code{1..K} per row,
#'   giving the folds; every fold must have rows. Overrides \code{folds}.
#' @param metric \code{"error"}, \code{"logloss"}, \code{"mse"}, \code{"mae"}, or
#'   a \code{function(truth, pred)} returning a number; see Details. The
#'   default is \code{"error"} for classification and \code{"mse"} for
#'   regression.
#' @param ... Further arguments passed to \code{learner} (for example
#'   \code{lambda}, \code{kernel}). Give them by their full names: a prefix of
#'   an argument of \code{kl_cv} (such as \code{d} or \code{m}) would match that
#'   argument instead.
#' @param seed Optional integer. When given, folds and fit seeds are drawn after
#'   \code{set.seed(seed)}, and the caller's random number generator state is
#'   restored on exit.
#' @return An object of class \code{"kl_cv"}, a list with
#'   \describe{
#'     \item{\code{metric}}{the metric name.}
#'     \item{\code{fold_metrics}}{the metric of each fold (named \code{Fold1}, ...).}
#'     \item{\code{mean}, \code{se}}{mean of the fold metrics and its standard
#'       error.}
#'     \item{\code{predictions}}{the out-of-fold predictions, one per row: a
#'       factor (class), a numeric vector (response), or a probability matrix
#'       with one column per class (logloss).}
#'     \item{\code{pred_type}}{the \code{predict()} type used.}
#'     \item{\code{y}}{the response.}
#'     \item{\code{foldid}}{the fold of each row; \code{folds} the number of
#'       folds; \code{fold_sizes} the rows per fold.}
#'     \item{\code{task}}{\code{"classification"} or \code{"regression"}.}
#'     \item{\code{stratified}}{whether the folds were drawn stratified by class.}
#'     \item{\code{params}}{the arguments passed to the learner.}
#'     \item{\code{learner}}{the learner's name, as written in the call.}
#'     \item{\code{call}}{the matched call.}
#'   }
#' @seealso \code{\link{kl_tune}} to choose parameters with the same folds.
#' @examples
#' set.seed(1)
#' cv <- kl_cv(kernel_ridge, Species ~ ., data = iris, folds = 5, lambda = 0.1)
#' cv
#' table(cv$predictions, iris$Species)
#'
#' # x / y interface and a regression metric
#' x <- as.matrix(mtcars[, c("wt", "hp", "disp")])
#' set.seed(1)
#' kl_cv(kernel_ridge, x, mtcars$mpg, folds = 4, metric = "mae",
#'       kernel = gaussian_kernel(gamma = 1), lambda = 0.5)
#'
#' # a custom metric: root mean squared error
#' rmse <- function(truth, pred) sqrt(mean((truth - pred)^2))
#' kl_cv(kernel_ridge, mpg ~ wt + hp, data = mtcars, folds = 4, metric = rmse,
#'       lambda = 0.5, seed = 2)
#'
#' \donttest{
#' # the same results with parallel workers
#' if (requireNamespace("future.apply", quietly = TRUE)) {
#'   oplan <- future::plan(future::multisession, workers = 2)
#'   set.seed(1)
#'   cv2 <- kl_cv(kernel_ridge, Species ~ ., data = iris, folds = 5, lambda = 0.1)
#'   future::plan(oplan)
#'   identical(cv$predictions, cv2$predictions)
#' }
#' }
#' @export
kl_cv <- function(learner, x, y = NULL, data = NULL, folds = 5, foldid = NULL,
                  metric = NULL, ..., seed = NULL) {
  caller <- "kl_cv()"
  cl <- match.call()
  labels <- .klcv_labels(substitute(learner), substitute(x), substitute(y), substitute(data))
  metric_label <- .klcv_metric_label(substitute(metric))
  spec <- .klcv_spec(learner, x, y, data, labels, list(...), caller)
  metric <- .klcv_metric(metric, spec$task, metric_label, caller)
  if (!is.null(seed)) {
    .klcv_check_seed(seed, caller)
    state <- .klcv_rng_save()
    on.exit(.klcv_rng_restore(state), add = TRUE)
    set.seed(seed)
  }
  fold_info <- .klcv_folds(spec, folds, foldid, caller)
  run <- .klcv_run(spec, list(list()), fold_info$foldid, metric, caller)
  .klcv_new(spec, fold_info, metric, run$fold_metrics[1L, ],
            .klcv_assemble(run$preds[[1L]], fold_info$foldid, spec, metric),
            spec$dots, cl)
}

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
#' \code{kernel}) with a class or response metric, each fold and kernel is one
#' cost path: the costs in increasing order, each solve warm-started from the
#' last, and the held-out rows predicted from the support vectors. The paths
#' are the tasks then: they run on the \pkg{future} plan as the general fits
#' do (each worker with the threads \code{parallelly::availableCores()} gives
#' it, unless \code{threads} is passed) and report progress through
#' \pkg{progressr}.
#'
#' @inheritParams kl_cv
#' @param grid A data.frame of parameter values (one row per grid point) or a
#'   named list of values to combine; names are learner arguments.
#' @param ... Further arguments passed to \code{learner} at every grid point;
#'   they must not repeat a name of \code{grid}.
#' @param refit If \code{TRUE}, fit the learner on all rows with the best
#'   parameters and return it as \code{best_model}.
#' @param maximize If \code{TRUE}, larger metric values are better (for custom
#'   metrics such as accuracy); the built-in metrics are all minimised.
#' @return An object of class \code{"kl_tune"}, a list with
#'   \describe{
#'     \item{\code{results}}{a data.frame with the grid parameters (objects in
#'       list columns), the mean metric \code{mean} and its standard error
#'       \code{se}, one row per grid point in grid order.}
#'     \item{\code{best}}{a named list of the best parameter values.}
#'     \item{\code{best_index}}{the row of \code{results} that is best.}
#'     \item{\code{best_model}}{the learner refitted on all rows with \code{best}
#'       (and \code{...}), or \code{NULL} when \code{refit = FALSE}.}
#'     \item{\code{cv}}{the \code{"kl_cv"} object of the best grid point,
#'       with its out-of-fold predictions.}
#'     \item{\code{fold_metrics}}{a matrix of fold metrics, grid points by folds.}
#'     \item{\code{foldid}}{the fold of each row.}
#'     \item{\code{metric}, \code{maximize}}{the metric name and direction.}
#'     \item{\code{learner}}{the learner's name, as written in the call.}
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
                    metric = NULL, ..., refit = TRUE, maximize = FALSE, seed = NULL) {
  caller <- "kl_tune()"
  cl <- match.call()
  labels <- .klcv_labels(substitute(learner), substitute(x), substitute(y), substitute(data))
  metric_label <- .klcv_metric_label(substitute(metric))
  if (missing(grid)) stop(sprintf("%s: 'grid' is required", caller), call. = FALSE)
  if (!is.logical(refit) || length(refit) != 1L || is.na(refit))
    stop(sprintf("%s: 'refit' must be TRUE or FALSE", caller), call. = FALSE)
  if (!is.logical(maximize) || length(maximize) != 1L || is.na(maximize))
    stop(sprintf("%s: 'maximize' must be TRUE or FALSE", caller), call. = FALSE)
  spec <- .klcv_spec(learner, x, y, data, labels, list(...), caller)
  g <- .klcv_grid(grid, caller)
  clash <- intersect(names(g$table), names(spec$dots))
  if (length(clash))
    stop(sprintf("%s: '%s' is given both in 'grid' and in '...'", caller, clash[1L]),
         call. = FALSE)
  metric <- .klcv_metric(metric, spec$task, metric_label, caller)
  if (!is.null(seed)) {
    .klcv_check_seed(seed, caller)
    state <- .klcv_rng_save()
    on.exit(.klcv_rng_restore(state), add = TRUE)
    set.seed(seed)
  }
  fold_info <- .klcv_folds(spec, folds, foldid, caller)
  run <- NULL
  if (.svm_fast_eligible(learner, spec, g, metric)) {
    # Cost paths with warm starts; any problem sends the grid to the general path, which
    # reports it.
    state <- .klcv_rng_save()
    run <- tryCatch(.svm_tune_run(spec, g, fold_info$foldid, metric, caller),
                    error = function(e) {
                      if (grepl("interrupted by the user", conditionMessage(e), fixed = TRUE))
                        stop(e)
                      NULL
                    })
    if (is.null(run)) .klcv_rng_restore(state)
  }
  if (is.null(run)) run <- .klcv_run(spec, g$points, fold_info$foldid, metric, caller)

  fm <- run$fold_metrics
  means <- rowMeans(fm)
  ses <- apply(fm, 1L, .klcv_se)
  score <- if (maximize) -means else means
  if (all(is.na(score)))
    stop(sprintf("%s: the metric is missing (NA) at every grid point", caller), call. = FALSE)
  best_index <- which.min(score)
  best <- g$points[[best_index]]

  results <- g$table
  results$mean <- means
  results$se <- ses

  best_model <- NULL
  if (refit) {
    refit_seed <- .klcv_draw_seeds(1L)
    out <- .klcv_task(list(fold = NA_integer_, seed = refit_seed, params = best),
                      .klcv_shared(spec, fold_info$foldid, metric), NULL)
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
                 labels = g$labels, learner = spec$learner_name, call = cl),
            class = "kl_tune")
}

#' @rdname kl_cv
#' @param digits Significant digits to print.
#' @export
print.kl_cv <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  strat <- if (isTRUE(x$stratified)) ", stratified by class" else ""
  cat(sprintf("%d-fold cross-validation of %s (%s, %d rows%s)\n", x$folds, x$learner,
              x$task, length(x$foldid), strat))
  if (length(x$params)) cat("parameters:", .klcv_param_text(x$params), "\n")
  cat(sprintf("%s: %s (se %s)\n", x$metric, format(x$mean, digits = digits),
              format(x$se, digits = digits)))
  cat("per fold:", format(unname(x$fold_metrics), digits = digits), "\n")
  invisible(x)
}

#' @rdname kl_cv
#' @param object A \code{"kl_cv"} object.
#' @export
summary.kl_cv <- function(object, ...) {
  folds <- data.frame(fold = seq_len(object$folds), rows = as.integer(object$fold_sizes),
                      metric = unname(object$fold_metrics))
  names(folds)[3L] <- object$metric
  confusion <- NULL
  if (object$task == "classification") {
    pred <- object$predictions
    if (is.matrix(pred) && !is.null(colnames(pred)))
      pred <- factor(colnames(pred)[max.col(pred, ties.method = "first")],
                     levels = levels(object$y))
    if (is.factor(pred))
      confusion <- table(predicted = pred, truth = object$y)
  }
  structure(list(learner = object$learner, task = object$task, metric = object$metric,
                 mean = object$mean, se = object$se, folds = folds,
                 confusion = confusion, params = object$params),
            class = "summary.kl_cv")
}

#' @export
print.summary.kl_cv <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat(sprintf("Cross-validation of %s (%s)\n", x$learner, x$task))
  if (length(x$params)) cat("parameters:", .klcv_param_text(x$params), "\n")
  cat(sprintf("%s: %s (se %s)\n\n", x$metric, format(x$mean, digits = digits),
              format(x$se, digits = digits)))
  print(x$folds, digits = digits, row.names = FALSE)
  if (!is.null(x$confusion)) {
    cat("\nOut-of-fold confusion matrix:\n")
    print(x$confusion)
  }
  invisible(x)
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
  best_txt <- paste(names(x$labels),
                    vapply(x$labels, function(col) col[[x$best_index]], ""),
                    sep = " = ", collapse = ", ")
  cat(sprintf("\nbest (row %d): %s\n", x$best_index, best_txt))
  cat(sprintf("%s: %s (se %s)%s\n", x$metric,
              format(x$results$mean[x$best_index], digits = digits),
              format(x$results$se[x$best_index], digits = digits),
              if (is.null(x$best_model)) "; not refitted" else "; refitted on all rows"))
  invisible(x)
}

# ---------------------------------------------------------------------------------------
# Internal helpers.

# Names of the arguments as written by the caller: used to build readable calls of the
# learner (the refitted model's call reads kernel_ridge(y ~ ., data = d, lambda = 0.1)).
.klcv_labels <- function(learner, x, y, data) {
  sym <- function(e) if (is.name(e)) as.character(e) else NULL
  lexpr <- NULL
  if (is.call(learner) && length(learner) == 3L &&
      (identical(learner[[1L]], as.name("::")) || identical(learner[[1L]], as.name(":::"))) &&
      is.name(learner[[2L]]) && is.name(learner[[3L]]))
    lexpr <- learner
  lname <- if (is.name(learner) || !is.null(lexpr)) paste(deparse(learner), collapse = "")
           else "learner"
  list(learner = sym(learner), learner_expr = lexpr, learner_name = lname,
       x = sym(x), y = sym(y), data = sym(data))
}

.klcv_metric_label <- function(expr) {
  if (is.name(expr)) as.character(expr) else "custom"
}

.klcv_check_seed <- function(seed, caller) {
  if (!is.numeric(seed) || length(seed) != 1L || !is.finite(seed) || seed != round(seed))
    stop(sprintf("%s: 'seed' must be NULL or a single whole number", caller), call. = FALSE)
  invisible(seed)
}

# Everything about the data and the learner that the fits need.
.klcv_spec <- function(learner, x, y, data, labels, dots, caller) {
  if (!is.function(learner))
    stop(sprintf("%s: 'learner' must be a function such as kernel_ridge (got %s)", caller,
                 if (is.character(learner)) sprintf("the string \"%s\"", learner[1L])
                 else paste("an object of class", class(learner)[1L])), call. = FALSE)
  if (missing(x) || is.null(x))
    stop(sprintf("%s: 'x' is required (a formula, matrix or data.frame)", caller), call. = FALSE)
  if (inherits(x, "formula")) {
    if (is.null(data) && is.data.frame(y)) {
      data <- y
      y <- NULL
      labels$data <- labels$y
      labels$y <- NULL
    }
    if (!is.null(y))
      stop(sprintf("%s: 'y' must be NULL when 'x' is a formula; give the data frame as 'data'",
                   caller), call. = FALSE)
    if (is.null(data))
      stop(sprintf("%s: 'data' is required when 'x' is a formula", caller), call. = FALSE)
    if (is.matrix(data)) data <- as.data.frame(data)
    if (!is.data.frame(data))
      stop(sprintf("%s: 'data' must be a data.frame (got %s)", caller, class(data)[1L]),
           call. = FALSE)
    if (length(x) != 3L)
      stop(sprintf("%s: the formula must have a response, as in y ~ .", caller), call. = FALSE)
    resp <- tryCatch(eval(x[[2L]], data, environment(x)), error = function(e)
      stop(sprintf("%s: cannot evaluate the response '%s' of the formula: %s", caller,
                   paste(deparse(x[[2L]]), collapse = ""), conditionMessage(e)), call. = FALSE))
    yname <- paste(deparse(x[[2L]]), collapse = "")
    n <- nrow(data)
    interface <- "formula"
  } else {
    if (!is.null(data))
      stop(sprintf("%s: 'data' is used only when 'x' is a formula", caller), call. = FALSE)
    if (!(is.matrix(x) || is.data.frame(x)))
      stop(sprintf("%s: 'x' must be a formula, a matrix or a data.frame (got %s)", caller,
                   class(x)[1L]), call. = FALSE)
    if (is.null(y))
      stop(sprintf("%s: 'y' is required when 'x' is not a formula", caller), call. = FALSE)
    resp <- y
    yname <- "y"
    n <- nrow(x)
    interface <- "xy"
  }
  if (is.matrix(resp) && ncol(resp) == 1L) resp <- drop(resp)
  if (is.character(resp) || is.logical(resp))
    stop(sprintf("%s: '%s' is %s; use a factor for classification or a numeric vector for regression",
                 caller, yname, typeof(resp)), call. = FALSE)
  if (!(is.factor(resp) || (is.numeric(resp) && is.null(dim(resp)))))
    stop(sprintf("%s: '%s' must be a factor or a numeric vector (got %s)", caller, yname,
                 class(resp)[1L]), call. = FALSE)
  if (length(resp) != n)
    stop(sprintf("%s: '%s' has %d values but there are %d rows", caller, yname,
                 length(resp), n), call. = FALSE)
  if (n < 2L) stop(sprintf("%s: cross-validation needs at least 2 rows", caller), call. = FALSE)
  bad <- if (is.factor(resp)) is.na(resp) else !is.finite(resp)
  if (any(bad))
    stop(sprintf("%s: '%s' has %d missing or infinite value(s), first in row %d", caller,
                 yname, sum(bad), which(bad)[1L]), call. = FALSE)
  if (is.factor(resp)) {
    resp <- droplevels(resp)
    if (nlevels(resp) < 2L)
      stop(sprintf("%s: '%s' has only one class; classification needs at least two",
                   caller, yname), call. = FALSE)
    task <- "classification"
  } else {
    task <- "regression"
  }
  list(learner = learner, labels = labels, learner_name = labels$learner_name,
       interface = interface, formula = if (interface == "formula") x,
       data = data, x = if (interface == "xy") x, y = resp,
       learner_y = if (interface == "xy") resp, n = n, task = task,
       levels = if (is.factor(resp)) levels(resp), dots = dots)
}

.klcv_metric <- function(metric, task, label, caller) {
  builtin <- c("error", "logloss", "mse", "mae")
  if (is.null(metric)) metric <- if (task == "classification") "error" else "mse"
  if (is.function(metric)) {
    type <- attr(metric, "type", exact = TRUE)
    if (is.null(type)) type <- if (task == "classification") "class" else "response"
    if (!is.character(type) || length(type) != 1L ||
        !(type %in% c("class", "prob", "response", "decision")))
      stop(sprintf("%s: attribute \"type\" of the metric function must be one of \"class\", \"prob\", \"response\", \"decision\"",
                   caller), call. = FALSE)
    f <- metric
    return(list(name = label, fun = function(truth, pred) f(truth, pred), pred_type = type,
                builtin = FALSE))
  }
  if (!is.character(metric) || length(metric) != 1L || is.na(metric))
    stop(sprintf("%s: 'metric' must be one of %s or a function(truth, pred)", caller,
                 paste0("\"", builtin, "\"", collapse = ", ")), call. = FALSE)
  if (!(metric %in% builtin))
    stop(sprintf("%s: unknown metric \"%s\"; use one of %s or a function(truth, pred)",
                 caller, metric, paste0("\"", builtin, "\"", collapse = ", ")), call. = FALSE)
  classif <- metric %in% c("error", "logloss")
  if (classif && task != "classification")
    stop(sprintf("%s: metric \"%s\" is for classification, but the response is numeric (regression); use \"mse\" or \"mae\"",
                 caller, metric), call. = FALSE)
  if (!classif && task != "regression")
    stop(sprintf("%s: metric \"%s\" is for regression, but the response is a factor (classification); use \"error\" or \"logloss\"",
                 caller, metric), call. = FALSE)
  fun <- switch(metric,
    error = function(truth, pred) mean(as.character(pred) != as.character(truth)),
    logloss = function(truth, pred) {
      p <- pred[cbind(seq_along(truth), as.integer(truth))]
      eps <- 1e-15
      -mean(log(pmin(pmax(p, eps), 1 - eps)))
    },
    mse = function(truth, pred) mean((truth - pred)^2),
    mae = function(truth, pred) mean(abs(truth - pred)))
  list(name = metric, fun = fun, builtin = TRUE,
       pred_type = switch(metric, error = "class", logloss = "prob", "response"))
}

.klcv_folds <- function(spec, folds, foldid, caller) {
  n <- spec$n
  if (!is.null(foldid)) {
    if (!is.numeric(foldid) || !is.null(dim(foldid)))
      stop(sprintf("%s: 'foldid' must be an integer vector with one fold number per row",
                   caller), call. = FALSE)
    if (length(foldid) != n)
      stop(sprintf("%s: 'foldid' has length %d but there are %d rows", caller,
                   length(foldid), n), call. = FALSE)
    if (anyNA(foldid) || any(!is.finite(foldid)) || any(foldid != round(foldid)))
      stop(sprintf("%s: 'foldid' must hold whole numbers without missing values", caller),
           call. = FALSE)
    K <- max(foldid)
    if (min(foldid) < 1 || !setequal(unique(foldid), seq_len(K)))
      stop(sprintf("%s: 'foldid' must use every fold number 1..K (got %s)", caller,
                   paste(sort(unique(foldid)), collapse = ", ")), call. = FALSE)
    if (K < 2L)
      stop(sprintf("%s: 'foldid' must define at least 2 folds", caller), call. = FALSE)
    return(list(foldid = as.integer(foldid), stratified = FALSE, given = TRUE))
  }
  if (!is.numeric(folds) || length(folds) != 1L || !is.finite(folds) || folds != round(folds))
    stop(sprintf("%s: 'folds' must be a single whole number", caller), call. = FALSE)
  if (folds < 2)
    stop(sprintf("%s: 'folds' must be at least 2 (got %s)", caller, format(folds)),
         call. = FALSE)
  if (folds > n)
    stop(sprintf("%s: 'folds' (%s) must not exceed the number of rows (%d)", caller,
                 format(folds), n), call. = FALSE)
  K <- as.integer(folds)
  if (spec$task == "classification") {
    counts <- table(spec$y)
    small <- counts[counts < K]
    if (length(small))
      warning(sprintf("%s: class%s %s ha%s fewer rows than folds (%d); some folds have none of %s",
                      caller, if (length(small) > 1L) "es" else "",
                      paste0("'", names(small), "' (", as.integer(small), ")", collapse = ", "),
                      if (length(small) > 1L) "ve" else "s", K,
                      if (length(small) > 1L) "them" else "it"), call. = FALSE)
    ord <- unlist(lapply(levels(spec$y), function(l) {
      idx <- which(spec$y == l)
      idx[sample.int(length(idx))]
    }), use.names = FALSE)
    labs <- sample.int(K)
    foldid <- integer(n)
    foldid[ord] <- labs[(seq_len(n) - 1L) %% K + 1L]
    stratified <- TRUE
  } else {
    foldid <- rep_len(seq_len(K), n)[sample.int(n)]
    stratified <- FALSE
  }
  list(foldid = foldid, stratified = stratified, given = FALSE)
}

.klcv_draw_seeds <- function(k) sample.int(.Machine$integer.max, k, replace = TRUE)

.klcv_se <- function(v) {
  v <- v[!is.na(v)]
  if (length(v) < 2L) NA_real_ else stats::sd(v) / sqrt(length(v))
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
  reserved <- intersect(nms, c("mean", "se"))
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

# What every task needs, shipped once to each worker.
.klcv_shared <- function(spec, foldid, metric) {
  list(learner = spec$learner, learner_expr = spec$labels$learner_expr,
       labels = spec$labels, interface = spec$interface, formula = spec$formula,
       data = spec$data, x = spec$x, y = spec$learner_y, foldid = foldid,
       dots = spec$dots, pred_type = metric$pred_type)
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

.klcv_dispatch <- function(tasks, shared) {
  progress <- NULL
  if (requireNamespace("progressr", quietly = TRUE))
    progress <- progressr::progressor(steps = length(tasks))
  if (.klcv_use_future()) {
    state <- .klcv_rng_save()
    on.exit(.klcv_rng_restore(state), add = TRUE)
    carry <- .klcv_global_carry(shared$learner)
    pkgs <- unique(c(.klcv_package_of(shared$learner), .klcv_package_of(.klcv_task),
                     carry$packages))
    future.apply::future_lapply(tasks, .klcv_task, shared = shared, progress = progress,
                                future.seed = TRUE, future.packages = pkgs,
                                future.globals = carry$globals)
  } else {
    lapply(tasks, .klcv_task, shared = shared, progress = progress)
  }
}

# Runs every (grid point, fold) task and computes the fold metrics.
.klcv_run <- function(spec, points, foldid, metric, caller) {
  K <- max(foldid)
  # One seed per fold, drawn after the folds and shared by every grid point.
  seeds <- .klcv_draw_seeds(K)
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
      val <- metric$fun(spec$y[test], p)
      if (!is.numeric(val) || length(val) != 1L)
        stop(sprintf("%s: the metric must return a single number (got %s in %s)", caller,
                     if (length(val) != 1L) sprintf("length %d", length(val))
                     else class(val)[1L], where), call. = FALSE)
      fm[g, k] <- as.numeric(val)
      preds[[g]][[k]] <- p
    }
  }
  list(fold_metrics = fm, preds = preds)
}

.klcv_check_pred <- function(p, type, n_test, levels, where, caller) {
  fail <- function(msg) stop(sprintf("%s: predict(type = \"%s\") in %s %s", caller, type,
                                     where, msg), call. = FALSE)
  if (type == "class") {
    if (!(is.factor(p) || is.character(p)) || !is.null(dim(p)))
      fail(sprintf("must return a factor of classes (got %s)", class(p)[1L]))
    if (length(p) != n_test) fail(sprintf("returned %d values for %d rows", length(p), n_test))
    out <- factor(as.character(p), levels = levels)
    bad <- is.na(out) & !is.na(p)
    if (any(bad)) fail(sprintf("returned class '%s', which is not a level of the response",
                               as.character(p)[which(bad)[1L]]))
    return(out)
  }
  if (type == "prob") {
    if (!is.matrix(p) || !is.numeric(p))
      fail(sprintf("must return a numeric matrix with one column per class (got %s)",
                   class(p)[1L]))
    if (nrow(p) != n_test) fail(sprintf("returned %d rows for %d", nrow(p), n_test))
    cn <- colnames(p)
    if (is.null(cn)) {
      if (ncol(p) != length(levels))
        fail(sprintf("returned %d unnamed columns for %d classes", ncol(p), length(levels)))
      cn <- levels
    }
    unknown <- setdiff(cn, levels)
    if (length(unknown)) fail(sprintf("returned a column '%s' that is not a class", unknown[1L]))
    out <- matrix(0, n_test, length(levels), dimnames = list(NULL, levels))
    out[, cn] <- p
    return(out)
  }
  if (type == "response") {
    if (is.matrix(p) && ncol(p) == 1L) p <- p[, 1L]
    if (!is.numeric(p) || !is.null(dim(p)))
      fail(sprintf("must return a numeric vector (got %s)", class(p)[1L]))
    if (length(p) != n_test) fail(sprintf("returned %d values for %d rows", length(p), n_test))
    return(as.vector(p))
  }
  if (NROW(p) != n_test) fail(sprintf("returned %d values for %d rows", NROW(p), n_test))
  p
}

# Out-of-fold predictions in row order.
.klcv_assemble <- function(preds, foldid, spec, metric) {
  n <- length(foldid)
  first <- preds[[1L]]
  if (is.matrix(first)) {
    out <- matrix(NA_real_, n, ncol(first), dimnames = list(NULL, colnames(first)))
    for (k in seq_along(preds)) out[foldid == k, ] <- preds[[k]]
  } else if (is.factor(first)) {
    out <- character(n)
    for (k in seq_along(preds)) out[foldid == k] <- as.character(preds[[k]])
    out <- factor(out, levels = levels(first))
  } else {
    out <- vector(mode(first), n)
    for (k in seq_along(preds)) out[foldid == k] <- preds[[k]]
  }
  out
}

.klcv_new <- function(spec, fold_info, metric, fold_metrics, predictions, params, call) {
  foldid <- fold_info$foldid
  K <- max(foldid)
  fold_metrics <- as.numeric(fold_metrics)
  names(fold_metrics) <- paste0("Fold", seq_len(K))
  structure(list(metric = metric$name, fold_metrics = fold_metrics,
                 mean = mean(fold_metrics), se = .klcv_se(fold_metrics),
                 predictions = predictions, pred_type = metric$pred_type, y = spec$y,
                 foldid = foldid, folds = K,
                 fold_sizes = tabulate(foldid, nbins = K), task = spec$task,
                 stratified = fold_info$stratified, params = params,
                 learner = spec$learner_name, call = call),
            class = "kl_cv")
}
