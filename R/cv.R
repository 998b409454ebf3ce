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
#' With a formula, a fold's fit knows every level of the factor (or
#' character) predictors of the whole data, also those its rows lack: such a
#' level's indicator column is zero in the fold's rows (the package's learners
#' scale it to 0), so held-out rows with a rare level are predicted as rows
#' with none of the levels seen (as e1071 and caret do) instead of stopping the
#' cross-validation; a model fitted alone still drops levels without rows.
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
#' \strong{Warnings.} A warning of the fits is given once, after all of them,
#' with the number of fits that gave it, for example
#' \code{"... (in 12 of 30 fits)"}, rather than once for every fold (and grid
#' point): the same message does not bury the others. Parallel workers' warnings
#' are collected the same way.
#'
#' Arguments of the learner named \code{seed} cannot be passed through
#' \code{...} (\code{seed} belongs to \code{kl_cv}); wrap the learner instead.
#'
#' @param learner A learner function, such as \code{\link{kernel_ridge}}, called
#'   as \code{learner(formula, data = , ...)} or \code{learner(x, y, ...)}.
#' @param x A formula (\code{y ~ .}) with \code{data}, or the predictors: a
#'   numeric matrix (dense, or sparse from \pkg{Matrix}), a data.frame, or a
#'   numeric vector (one predictor), as the learners take them.
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
#'   argument instead. With a formula, \code{na.action} (such as
#'   \code{na.omit}) is applied to \code{data} before the folds are drawn, so
#'   that no held-out row has a missing value.
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
    # an na.action among the learner's arguments applies to the rows the folds are drawn from,
    # so that no held-out row has a missing value (the learner's own na.action then finds none)
    if (!is.null(dots$na.action)) {
      na_fun <- match.fun(dots$na.action)
      kept <- tryCatch(na_fun(stats::get_all_vars(x, data)), error = function(e)
        stop(sprintf("%s: na.action: %s", caller, conditionMessage(e)), call. = FALSE))
      omitted <- attr(kept, "na.action")
      if (length(omitted)) {
        data <- data[-as.integer(omitted), , drop = FALSE]
        if (nrow(data) == 0L)
          stop(sprintf("%s: na.action left no rows", caller), call. = FALSE)
        resp <- eval(x[[2L]], data, environment(x))
        message(sprintf("%s: %d row(s) with missing values dropped by na.action before the folds",
                        caller, length(omitted)))
      }
    }
    # character predictors become factors of the levels of all rows, so that a fold's fit
    # knows the levels its rows lack (.kl_with_fold_levels())
    chr <- vapply(data, is.character, NA) & !(names(data) %in% all.vars(x[[2L]]))
    if (any(chr)) data[chr] <- lapply(data[chr], factor)
    n <- nrow(data)
    interface <- "formula"
  } else {
    if (!is.null(data))
      stop(sprintf("%s: 'data' is used only when 'x' is a formula", caller), call. = FALSE)
    # a numeric vector is one input column, as the learners take it
    if (is.numeric(x) && is.null(dim(x))) x <- matrix(x, ncol = 1L)
    if (!(is.matrix(x) || is.data.frame(x) || inherits(x, "Matrix")))
      stop(sprintf("%s: 'x' must be a formula, a matrix (dense or sparse), a data.frame or a numeric vector (got %s)",
                   caller, class(x)[1L]), call. = FALSE)
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
    fa <- names(formals(metric))
    if (!is.primitive(metric) && !("..." %in% fa) && length(fa) < 2L)
      stop(sprintf("%s: the metric function must take two arguments, (truth, pred) (it takes %s)",
                   caller, if (length(fa)) paste0("(", paste(fa, collapse = ", "), ")")
                           else "none"), call. = FALSE)
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
