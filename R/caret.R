#' A kernlearn learner as a caret model
#'
#' Returns the list that \code{caret::train(method = )} takes for a custom
#' model, so that a kernlearn learner can be tuned and resampled with caret's
#' machinery (its resampling schemes, \code{trainControl()}, \code{preProcess},
#' model comparison). The tuning parameters are:
#' \describe{
#'   \item{\code{kernel_svm}}{\code{cost}, \code{gamma} (Gaussian kernel)}
#'   \item{\code{kernel_ridge}}{\code{lambda}, \code{gamma} (Gaussian kernel)}
#'   \item{\code{gem}}{\code{lambda}, \code{threshold}}
#'   \item{\code{dikl}}{\code{dim}, \code{gamma}}
#'   \item{\code{hgk}}{\code{nodes} (0: depth 1)}
#'   \item{\code{tkl}}{\code{cost}, \code{delta}}
#' }
#' Other arguments of the learner go to \code{caret::train(...)}, which passes
#' them on. The default grids (\code{tuneLength}) are geometric around the
#' learner's defaults; for \code{kernel_svm} and \code{kernel_ridge} the
#' Gaussian width runs from 1/8 to 8 times the default width those learners
#' compute from the training rows (one over the sum of the column variances of
#' the inputs scaled to [0, 1]). \code{search = "random"} draws log-uniform
#' values from the same ranges. Class probabilities (\code{classProbs = TRUE}) need a learner
#' that gives them: \code{kernel_svm} and \code{tkl} are then fitted with
#' \code{probability = TRUE}; \code{gem} and \code{dikl} give them with their
#' logistic heads; \code{kernel_ridge} and \code{hgk} (least squares) have none.
#' \code{hgk} and \code{tkl} are fitted with \code{baseline = FALSE} unless it
#' is given: caret compares models itself.
#'
#' @param learner The learner's name.
#' @return A list with \code{label}, \code{library}, \code{type},
#'   \code{parameters}, \code{grid}, \code{fit}, \code{predict}, \code{prob},
#'   \code{sort} and \code{levels}, as caret documents for custom models.
#' @examples
#' if (requireNamespace("caret", quietly = TRUE)) {
#'   set.seed(1)
#'   fit <- caret::train(Species ~ ., data = iris, method = kl_caret_model("kernel_svm"),
#'                       tuneGrid = expand.grid(cost = c(1, 10), gamma = c(0.5, 2)),
#'                       trControl = caret::trainControl(method = "cv", number = 3))
#'   fit$bestTune
#'   head(predict(fit, iris))
#' }
#' @export
kl_caret_model <- function(learner = c("kernel_svm", "kernel_ridge", "gem", "dikl", "hgk",
                                       "tkl")) {
  learner <- .kl_choice(learner, eval(formals(kl_caret_model)$learner), "learner",
                        "kl_caret_model()")[1L]
  spec <- .caret_specs[[learner]]
  fun <- get(learner, envir = asNamespace("kernlearn"))
  geo <- function(lo, hi, len) if (len == 1L) sqrt(lo * hi) else exp(seq(log(lo), log(hi), length.out = len))
  rlog <- function(lo, hi, len) exp(stats::runif(len, log(lo), log(hi)))
  grid <- function(x, y, len = NULL, search = "grid") {
    if (is.null(len)) len <- 3L
    d <- max(1L, NCOL(x))
    centre <- if (isTRUE(spec$width_centred)) .caret_default_width(x, y, d)
    g <- lapply(spec$ranges, function(r) {
      lo <- r$lo(d, centre)
      hi <- r$hi(d, centre)
      v <- if (search == "grid") geo(lo, hi, len) else rlog(lo, hi, len)
      if (isTRUE(r$integer)) unique(round(v)) else signif(v, 3)
    })
    out <- if (search == "grid") do.call(expand.grid, g)
           else as.data.frame(g)
    out
  }
  fit <- function(x, y, wts, param, lev, last, classProbs, ...) {
    args <- c(list(x = as.data.frame(x), y = y), spec$args(param), list(...))
    if (is.factor(y) && isTRUE(classProbs) && isTRUE(spec$prob_arg))
      args$probability <- TRUE
    if (!isTRUE(last) && is.null(args$fitted) && .kl_takes_fitted(fun)) args$fitted <- FALSE
    # caret compares the models itself: no inner comparison with the Gaussian kernel
    if (learner %in% c("hgk", "tkl") && is.null(args$baseline)) args$baseline <- FALSE
    do.call(fun, args)
  }
  pred <- function(modelFit, newdata, submodels = NULL) {
    predict(modelFit, as.data.frame(newdata),
            type = if (modelFit$task == "classification") "class" else "response")
  }
  prob <- function(modelFit, newdata, submodels = NULL) {
    if (!isTRUE(spec$has_prob(modelFit)))
      stop(sprintf("kl_caret_model(): %s gives no class probabilities%s", learner,
                   spec$prob_hint), call. = FALSE)
    as.data.frame(predict(modelFit, as.data.frame(newdata), type = "prob"))
  }
  list(label = sprintf("kernlearn %s()", learner), library = "kernlearn",
       type = spec$type, parameters = spec$parameters, grid = grid, loop = NULL, fit = fit,
       predict = pred, prob = prob,
       sort = function(x) x[do.call(order, unname(as.list(x[spec$sort_by]))), , drop = FALSE],
       levels = function(x) x$levels, tags = "Kernel Method")
}

# Per learner: caret's parameter table, the ranges of the default grids (functions of the
# number of input columns d and, with width_centred, of the default Gaussian width `centre`),
# how a row of the grid becomes arguments, and what gives probabilities. sort_by: the columns
# from simplest (most regularised) model to the most complex, for caret's one-standard-error
# rules.
.caret_specs <- local({
  rng <- function(lo, hi, integer = FALSE)
    list(lo = if (is.function(lo)) lo else function(d, centre) lo,
         hi = if (is.function(hi)) hi else function(d, centre) hi, integer = integer)
  # the Gaussian width: a factor of 8 either side of the learner's default width
  width <- rng(function(d, centre) centre / 8, function(d, centre) centre * 8)
  par <- function(names, labels)
    data.frame(parameter = names, class = rep("numeric", length(names)), label = labels,
               stringsAsFactors = FALSE)
  both <- c("Classification", "Regression")
  list(
    kernel_svm = list(
      type = both, parameters = par(c("cost", "gamma"), c("Cost", "Gaussian width gamma")),
      ranges = list(cost = rng(0.25, 64), gamma = width), width_centred = TRUE,
      args = function(p) list(cost = p$cost, gamma = p$gamma), sort_by = c("cost", "gamma"),
      prob_arg = TRUE, has_prob = function(m) isTRUE(m$probability), prob_hint = ""),
    kernel_ridge = list(
      type = both, parameters = par(c("lambda", "gamma"), c("Penalty", "Gaussian width gamma")),
      ranges = list(lambda = rng(1e-3, 1), gamma = width), width_centred = TRUE,
      args = function(p) list(lambda = p$lambda, kernel = gaussian_kernel(p$gamma)),
      sort_by = c("gamma", "lambda"), prob_arg = FALSE, has_prob = function(m) FALSE,
      prob_hint = " (least-squares outputs); use kernel_svm or tkl for classProbs = TRUE"),
    gem = list(
      type = "Classification",
      parameters = par(c("lambda", "threshold"), c("Head penalty", "Eigenvalue threshold")),
      ranges = list(lambda = rng(1e-4, 1e-1), threshold = rng(0.5, 4)),
      args = function(p) list(lambda = p$lambda, threshold = p$threshold),
      sort_by = c("threshold", "lambda"), prob_arg = FALSE,
      has_prob = function(m) TRUE, prob_hint = ""),
    dikl = list(
      type = both, parameters = par(c("dim", "gamma"), c("Features", "Gaussian width gamma")),
      ranges = list(dim = rng(20, 200, integer = TRUE),
                    gamma = rng(function(d, centre) 0.25 / d, function(d, centre) 16 / d)),
      args = function(p) list(dim = as.integer(p$dim), gamma = p$gamma),
      sort_by = c("dim", "gamma"), prob_arg = FALSE,
      has_prob = function(m) identical(m$head$type, "logistic"),
      prob_hint = " with this head; use dikl(head = \"logistic\")"),
    hgk = list(
      type = both, parameters = par("nodes", "First-layer nodes (0: depth 1)"),
      ranges = list(nodes = rng(1, 16, integer = TRUE)),
      args = function(p) if (p$nodes < 1) list(depth = 1) else list(nodes = as.integer(p$nodes)),
      sort_by = "nodes", prob_arg = FALSE,
      has_prob = function(m) isTRUE(m$probability),
      prob_hint = "; fit with loss = \"hinge\" and probability = TRUE"),
    tkl = list(
      type = both, parameters = par(c("cost", "delta"), c("Cost", "Box margin delta")),
      ranges = list(cost = rng(0.01, 100), delta = rng(0.05, 0.5)),
      args = function(p) list(cost = p$cost, delta = p$delta), sort_by = c("cost", "delta"),
      prob_arg = TRUE, has_prob = function(m) isTRUE(m$probability), prob_hint = ""))
})

# The default Gaussian width of kernel_svm() and kernel_ridge() on the predictors caret passes
# (scaled to [0, 1] as those learners scale them by default); 12 / d, the width of uniform
# columns, where it cannot be computed (no usable column).
.caret_default_width <- function(x, y, d) {
  g <- tryCatch({
    inp <- .kl_input_xy(x, y, "kl_caret_model()", scale = "minmax")
    .svm_gamma_default(gaussian_kernel(), NULL, inp, "kl_caret_model()")
  }, error = function(e) NULL)
  if (is.null(g) || !is.finite(g) || g <= 0) 12 / d else g
}
