#' Kernel support vector machines
#'
#' Fits a support vector machine for classification (C-classification; one
#' against one for more than two classes, with voting) or regression
#' (epsilon-regression) with any kernel of the package or a precomputed kernel
#' matrix. The dual problem is solved in the C++ core by sequential minimal
#' optimisation with the second-order working-set selection of Fan, Chen and
#' Lin (2005), shrinking and a cache of kernel rows, as in LIBSVM; the
#' one-against-one pairs are solved in parallel.
#'
#' @details
#' \strong{Problem.} For classification, each pair of classes gives the dual
#' problem \eqn{\min_\alpha \frac12 \alpha' Q \alpha - 1'\alpha}{min 0.5 a'Qa - 1'a}
#' subject to \eqn{y'\alpha = 0}{y'a = 0} and \eqn{0 \le \alpha_i \le C_i}{0 <= a_i <= C_i},
#' with \eqn{Q_{ij} = y_i y_j k(x_i, x_j)}{Q_ij = y_i y_j k(x_i, x_j)} and
#' \eqn{C_i} = \code{cost} times the weight of the class of row \eqn{i}. The
#' decision function of a pair is \eqn{f(x) = \sum_i y_i \alpha_i k(x_i, x) - \rho}{f(x) = sum_i y_i a_i k(x_i, x) - rho},
#' positive for the \emph{second} class of the pair (the later factor level).
#' Regression solves the epsilon-insensitive dual with \eqn{f(x) = \sum_i
#' (\alpha_i - \alpha_i^*) k(x_i, x) - \rho}{f(x) = sum_i (a_i - a*_i) k(x_i, x) - rho}.
#' The solver stops when the maximal violation of the optimality conditions is
#' below \code{tol} (the stopping rule of LIBSVM).
#'
#' \strong{Data.} Inputs are scaled to \eqn{[0, 1]} with the training minimum
#' and maximum of each column (constant columns map to 0) and factor predictors
#' are expanded to indicator columns, as in all kernlearn learners; the
#' scaling is stored and applied to new data. \code{scale = "standardize"}
#' centres each numeric column and divides it by its standard deviation
#' instead, leaving the indicator columns of factors as 0 and 1, as
#' \code{e1071::svm()} does by default, so that the same \code{gamma} gives
#' the same model as there (with more than one factor, \code{e1071} drops one
#' level's column from all but the first); \code{scale = "none"} uses the inputs as given. For
#' regression the response is standardised too (training mean and standard
#' deviation, \code{scale_response = TRUE}, as \code{e1071::svm()} and
#' \code{kernlab::ksvm()} do), so that \code{epsilon}, \code{cost} and \code{tol}
#' mean the same whatever the response's units; predictions are returned in
#' those units. With
#' \code{kernel = "precomputed"}, \code{x} is the \eqn{n \times n}{n x n} kernel
#' matrix of the training rows and \code{predict()} takes the \eqn{m \times n}{m x n}
#' matrix of kernel values between new rows and the training rows.
#'
#' \strong{Probabilities.} With \code{probability = TRUE}, each pair gets a
#' Platt sigmoid \eqn{P(\mathrm{second} \mid f) = 1 / (1 + \exp(A f + B))}{P(second | f) = 1 / (1 + exp(A f + B))}
#' fitted (by the Newton method of Lin, Lin and Weng, 2007) to decision values
#' from \code{prob_folds}-fold cross-validation inside the pair's rows; the
#' folds are drawn with R's random number generator, so \code{set.seed()}
#' makes them reproducible. Pairwise probabilities are combined by the second
#' method of Wu, Lin and Weng (2004). The class predicted by such a model is the
#' most probable class, so \code{predict(type = "class")} always agrees with
#' the largest column of \code{predict(type = "prob")} (with
#' \code{probability = FALSE} the class is chosen by one-against-one voting,
#' ties going to the earlier level).
#'
#' \strong{Speed.} Kernel rows are computed in single precision from the
#' feature matrix (as LIBSVM caches them) and kept in a least-recently-used
#' cache of \code{cache} megabytes, divided among the pairs solved at the same
#' time.
#' Pairs are solved on \code{threads} threads; each pair's solution does not
#' depend on the number of threads. A single problem (two classes, or
#' regression) computes its kernel rows on all threads. Ctrl-C stops the fit.
#'
#' \strong{Warm starts.} \code{warm_start} takes a model fitted earlier on the
#' same rows (for example with another \code{cost}, or a slightly different
#' kernel); its dual coefficients, clipped to the new bounds and made feasible,
#' start the solver (alpha seeding). The solution is the same up to \code{tol}; only
#' the work changes. \code{\link{kl_tune}} uses warm starts along increasing
#' costs automatically when it tunes \code{cost} (and \code{gamma} or
#' \code{kernel}) of \code{kernel_svm}.
#'
#' @param x A formula (\code{y ~ .}) with \code{data}, a numeric matrix or
#'   data.frame of predictors, or with \code{kernel = "precomputed"} the
#'   \eqn{n \times n}{n x n} kernel matrix of the training rows.
#' @param formula A model formula.
#' @param data A data.frame holding the variables of \code{formula}.
#' @param subset Rows of \code{data} to use: a logical vector or row numbers,
#'   evaluated in \code{data} (formula interface).
#' @param na.action What to do with rows with missing values in the variables of
#'   the formula: \code{na.fail} (the default: an error naming the column) or
#'   \code{na.omit} (drop them, with a message saying how many).
#' @param y Response: a factor for classification, a numeric vector for
#'   regression.
#' @param kernel A kernel object (\code{\link{gaussian_kernel}} by default), a
#'   kernel name, or \code{"precomputed"}. A Gaussian kernel without a width
#'   gets \eqn{\gamma = 1 / \sum_j \mathrm{var}(x_j)}{gamma = 1 / sum_j var(x_j)}
#'   over the scaled training columns, so that \eqn{\gamma}{gamma} times the
#'   mean squared distance between two training rows is 2: with
#'   \code{scale = "standardize"} and numeric inputs that is e1071's
#'   \code{1 / ncol(x)}, and on
#'   inputs scaled to \eqn{[0, 1]} it keeps the kernel as narrow relative to
#'   the data (\code{1 / ncol(x)} there would be many times too wide). Other
#'   kernels with a width use \code{1 / ncol(x)}.
#' @param cost Cost of constraint violations \eqn{C > 0}.
#' @param gamma Optional width of the Gaussian, Laplacian or hierarchical
#'   Gaussian kernel; replaces
#'   the kernel's \code{gamma} (convenient in \code{\link{kl_tune}} grids).
#' @param epsilon Half-width of the insensitive tube for regression
#'   (\eqn{\ge 0}), on the standardised response (in standard deviations of
#'   the training response; in the response's own units with
#'   \code{scale_response = FALSE}). When \code{epsilon} is at least half the
#'   range of the response it acts on, the model is a constant, and the fit warns.
#' @param type \code{"C-classification"} or \code{"eps-regression"}; by default
#'   classification for a factor response and regression for a numeric one. A
#'   numeric response with \code{"C-classification"} is turned into a factor.
#' @param class.weights \code{NULL} (all 1), a named vector of weights for some
#'   or all classes (missing classes get 1), or \code{"inverse"}: weights
#'   \eqn{n / (k\, n_c)}{n / (k n_c)} inversely proportional to the class sizes
#'   (they average 1 over the rows, so \code{cost} keeps its scale). Weights
#'   multiply \code{cost}. A weight named by a level of the response without
#'   rows (dropped with a warning) is left out, as in a cross-validation fold
#'   that lacks a small class.
#' @param probability If \code{TRUE}, fit the probability model (classification).
#' @param prob_folds Number of internal cross-validation folds of the
#'   probability model.
#' @param tol Stopping tolerance on the maximal violating pair (LIBSVM's
#'   \code{eps}, e1071's \code{tolerance}).
#' @param shrinking Use the shrinking heuristic.
#' @param cache Size of the kernel row cache in megabytes, for the whole fit.
#' @param max_iter Iteration cap per binary problem; \code{NULL} means
#'   \code{max(1e7, 100 l)} for a problem with \code{l} dual variables (the
#'   rows of a pair, or twice the rows for regression). Stopping at the cap
#'   gives a warning.
#' @param warm_start \code{NULL} or a \code{kernel_svm} model fitted on the
#'   same rows (see Details).
#' @param scale How inputs are scaled: \code{"minmax"} (to \eqn{[0, 1]} with the
#'   training range, the default), \code{"standardize"} (numeric columns
#'   centred, unit standard deviation; factors' indicator columns 0 and 1) or
#'   \code{"none"}; \code{TRUE} and \code{FALSE} mean
#'   \code{"minmax"} and \code{"none"}.
#' @param scale_response Regression: if \code{TRUE} (the default), the model
#'   is fitted to the response centred by its training mean and divided by its
#'   standard deviation, and predictions are scaled back; \code{FALSE} fits the
#'   response as given, so that \code{epsilon}, \code{cost} and \code{tol} are
#'   in its units. Ignored for classification.
#' @param fitted If \code{TRUE} (the default, as in \code{e1071::svm}), keep the
#'   predictions on the training rows for \code{\link[=kl_model_methods]{fitted}()}
#'   (one prediction pass over the training rows at the end of the fit).
#' @param cells \code{FALSE} (the default) for one global model; \code{TRUE}
#'   or \code{\link{kl_cells}(...)} for a localized model: one SVM per cell of
#'   the input space, for large data. With cells, \code{gamma} (when the
#'   kernel's width is not set either) and \code{cost} left unset are chosen in
#'   every cell by cross-validation; values given are used in every cell. The
#'   result is then a \code{\link[=predict.kl_localized]{kl_localized}} model.
#' @param threads Number of threads; default \code{getOption("kernlearn.threads", 2)}.
#' @param ... Not used; unknown arguments are an error.
#' @return An object of class \code{c("kernel_svm", "kl_model")}, a list with
#'   plain R data: \code{SV} (the scaled support vectors, one row each,
#'   ordered by class; \code{NULL} for a precomputed kernel), \code{sv_index}
#'   (their training rows), \code{nSV} (count per class), \code{coefs} (for
#'   classification a \code{nSV} by \eqn{k - 1} matrix: the coefficient
#'   \eqn{y_i \alpha_i} of a support vector of class \eqn{c} in the pair with
#'   class \eqn{o} is in column \eqn{o} if \eqn{o < c}, else \eqn{o - 1}, as in
#'   LIBSVM; for regression a one-column matrix of \eqn{\alpha_i - \alpha_i^*}),
#'   \code{rho}, \code{obj} (dual objective values), \code{iter},
#'   \code{converged} and \code{pair_nsv}, one per binary problem, \code{probA}
#'   and \code{probB} (or \code{NULL}), the resolved \code{kernel}, the
#'   parameters, \code{levels}, \code{task}, the input specification and,
#'   for regression with a standardised response, \code{y_scaling} (the
#'   training mean and standard deviation; \code{coefs}, \code{rho} and
#'   \code{obj} are then on the standardised scale).
#' @references
#' Fan, R.-E., Chen, P.-H. and Lin, C.-J. (2005). Working set selection using
#' second order information for training support vector machines. JMLR 6.
#'
#' Chang, C.-C. and Lin, C.-J. (2011). LIBSVM: a library for support vector
#' machines. ACM TIST 2(3).
#'
#' Wu, T.-F., Lin, C.-J. and Weng, R. C. (2004). Probability estimates for
#' multi-class classification by pairwise coupling. JMLR 5.
#'
#' Lin, H.-T., Lin, C.-J. and Weng, R. C. (2007). A note on Platt's
#' probabilistic outputs for support vector machines. Machine Learning 68.
#' @seealso \code{\link{predict.kernel_svm}}, \code{\link{plot.kernel_svm}} to draw
#'   the predictions over two inputs, \code{\link{kl_tune}} to choose
#'   \code{cost} and \code{gamma}, \code{\link{kernel_ridge}}.
#' @examples
#' fit <- kernel_svm(Species ~ ., data = iris, gamma = 2, cost = 4)
#' fit
#' table(predict(fit, iris), iris$Species)
#'
#' # probabilities; the class is the most probable one
#' set.seed(1)
#' pfit <- kernel_svm(Species ~ ., data = iris, probability = TRUE)
#' head(predict(pfit, iris, type = "prob"))
#'
#' # regression
#' reg <- kernel_svm(mpg ~ wt + hp, data = mtcars, cost = 10, epsilon = 0.5)
#' head(predict(reg, mtcars))
#'
#' # a precomputed kernel gives the same model
#' x <- as.matrix(iris[, 1:4])
#' x01 <- apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
#' K <- kernel_matrix(gaussian_kernel(gamma = 2), x01)
#' pre <- kernel_svm(K, iris$Species, kernel = "precomputed", cost = 4)
#' all.equal(predict(pre, K), predict(fit, iris))
#'
#' # tuning cost and gamma by cross-validation (warm-started cost paths)
#' set.seed(1)
#' tn <- kl_tune(kernel_svm, Species ~ ., data = iris, folds = 3,
#'               grid = list(cost = c(1, 10), gamma = c(0.5, 2)))
#' tn$best
#' @export
kernel_svm <- function(x, ...) UseMethod("kernel_svm")

#' @rdname kernel_svm
#' @export
kernel_svm.formula <- function(formula, data, kernel = gaussian_kernel(), cost = 1,
                               gamma = NULL, epsilon = 0.1, type = NULL, class.weights = NULL,
                               probability = FALSE, prob_folds = 5, tol = 1e-3,
                               shrinking = TRUE, cache = 1024, max_iter = NULL,
                               warm_start = NULL, scale = "minmax", scale_response = TRUE,
                               fitted = TRUE, subset = NULL, na.action = stats::na.fail,
                               cells = FALSE, threads = NULL, ...) {
  caller <- "kernel_svm()"
  .no_dots(..., caller = caller)
  .check_flag(fitted, "fitted", caller)
  .check_flag(scale_response, "scale_response", caller)
  cells <- .kl_cells_arg(cells, caller)
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "kernel_svm()", parent.frame())
  if (identical(kernel, "precomputed"))
    stop(sprintf("%s: kernel = \"precomputed\" needs the x / y interface: kernel_svm(K, y, kernel = \"precomputed\")",
                 caller), call. = FALSE)
  scale <- .kl_scale_mode(scale, caller)
  type <- .svm_type(type, caller)
  if (identical(type, "C-classification") && inherits(formula, "formula") &&
      length(formula) == 3L && is.data.frame(data)) {
    resp <- tryCatch(eval(formula[[2L]], data, environment(formula)), error = function(e) NULL)
    if (is.numeric(resp)) {
      nm <- all.vars(formula[[2L]])
      if (length(nm) == 1L && nm %in% names(data)) data[[nm]] <- factor(data[[nm]])
    }
  }
  inp <- .kl_input_formula(formula, data, caller, scale = scale)
  .kernel_svm_run(inp, kernel, cost, !missing(cost), gamma, epsilon, type, class.weights,
                  probability, prob_folds, tol, shrinking, cache, max_iter, warm_start,
                  threads, cells, fitted, scale_response, .kl_call(match.call(), "kernel_svm"),
                  data, caller)
}

#' @rdname kernel_svm
#' @export
kernel_svm.default <- function(x, y, kernel = gaussian_kernel(), cost = 1, gamma = NULL,
                               epsilon = 0.1, type = NULL, class.weights = NULL,
                               probability = FALSE, prob_folds = 5, tol = 1e-3,
                               shrinking = TRUE, cache = 1024, max_iter = NULL,
                               warm_start = NULL, scale = "minmax", scale_response = TRUE,
                               fitted = TRUE, cells = FALSE, threads = NULL, ...) {
  caller <- "kernel_svm()"
  .no_dots(..., caller = caller)
  .check_flag(fitted, "fitted", caller)
  .check_flag(scale_response, "scale_response", caller)
  cells <- .kl_cells_arg(cells, caller)
  scale_given <- !missing(scale)
  scale <- .kl_scale_mode(scale, caller)
  if (inherits(x, "formula"))
    stop(sprintf("%s: use kernel_svm(formula, data = ) with a formula", caller), call. = FALSE)
  type <- .svm_type(type, caller)
  if (identical(type, "C-classification") && is.numeric(y) && !is.factor(y)) y <- factor(y)
  if (identical(kernel, "precomputed")) {
    if (scale_given && scale != "none")
      stop(sprintf("%s: 'scale' has no meaning with a precomputed kernel", caller), call. = FALSE)
    inp <- .svm_input_precomputed(x, y, caller)
  } else {
    inp <- .kl_input_xy(x, y, caller, scale = scale)
  }
  .kernel_svm_run(inp, kernel, cost, !missing(cost), gamma, epsilon, type, class.weights,
                  probability, prob_folds, tol, shrinking, cache, max_iter, warm_start,
                  threads, cells, fitted, scale_response, .kl_call(match.call(), "kernel_svm"),
                  x, caller)
}

# The fit behind both interfaces, from the prepared input on: the tube check, then cells or one
# machine with the default width, and the fitted values kept (`newdata`: the data or x the
# fitted values are computed from). With cells, a cost not given (cost_given FALSE) is chosen
# per cell.
.kernel_svm_run <- function(inp, kernel, cost, cost_given, gamma, epsilon, type, class.weights,
                            probability, prob_folds, tol, shrinking, cache, max_iter,
                            warm_start, threads, cells, fitted, scale_response, call, newdata,
                            caller) {
  .svr_tube_warning(inp, epsilon, caller, scale_response)
  if (!is.null(cells))
    return(.kernel_svm_cells(inp, kernel, if (cost_given) cost, gamma, epsilon, type,
                             class.weights, probability, prob_folds, tol, shrinking, cache,
                             max_iter, warm_start, threads, cells, fitted, call,
                             scale_response))
  gamma <- .svm_gamma_default(kernel, gamma, inp, caller)
  fit <- .kernel_svm_fit(inp, kernel, cost, gamma, epsilon, type, class.weights, probability,
                         prob_folds, tol, shrinking, cache, max_iter, warm_start, threads, call,
                         scale_response)
  .kl_keep_fitted(fit, fitted, newdata, inp$y, threads)
}

# Regression: when the tube of half-width epsilon around one constant holds every response value
# (epsilon at least half the response's range), that constant with no support vector is the
# solution. With the response standardised this needs an epsilon of the order of its standard
# deviations; without, a response in small units meets it with the default epsilon. The fit
# says so.
.svr_tube_warning <- function(inp, epsilon, caller, scaled = FALSE) {
  if (!identical(inp$task, "regression") || !is.numeric(epsilon) || length(epsilon) != 1L ||
      !is.finite(epsilon))
    return(invisible(NULL))
  y <- as.numeric(inp$y)
  if (isTRUE(scaled)) y <- .svr_apply_scaling(y, .svr_response_scaling(y, caller))
  else if (max(abs(y)) > .kl_overflow_limit)
    stop(sprintf("%s: response values up to %s overflow the solver's sums with scale_response = FALSE; use scale_response = TRUE or rescale 'y'",
                 caller, format(signif(max(abs(y)), 3))), call. = FALSE)
  half <- diff(range(y)) / 2
  if (half > 0 && epsilon >= half)
    warning(if (isTRUE(scaled))
              sprintf("%s: epsilon = %s is at least half the range of the standardised response (%s), so a constant fits every row within the tube and the model is that constant: lower epsilon",
                      caller, format(epsilon), format(signif(half, 3)))
            else
              sprintf("%s: epsilon = %s is at least half the range of the response (%s), so a constant fits every row within the tube and the model is that constant; epsilon is in the response's units (the response is not scaled): lower epsilon or rescale the response",
                      caller, format(epsilon), format(signif(half, 3))), call. = FALSE)
  invisible(NULL)
}

# The Gaussian kernel's default width: one over the sum of the scaled inputs' column variances,
# so that gamma times the mean squared distance between two training rows is 2. With
# standardised inputs this is e1071's 1 / ncol(x); on inputs scaled to [0, 1], whose columns
# have variances far below 1 (about 1/12 for a uniform column, less for skewed ones), 1 / ncol
# would be a width many times too wide. NULL (the kernel's own rule) for other kernels, a
# width given, a precomputed kernel, or inputs without variance.
.svm_gamma_default <- function(kernel, gamma, inp, caller) {
  if (!is.null(gamma) || isTRUE(inp$precomputed) || identical(kernel, "precomputed"))
    return(gamma)
  k <- .as_kernel(kernel, caller)
  if (!inherits(k, "kl_gaussian_kernel") || !is.null(k$gamma)) return(gamma)
  x <- inp$x
  if (nrow(x) < 2L || ncol(x) < 1L) return(gamma)
  v <- sum(vapply(seq_len(ncol(x)), function(j) stats::var(x[, j]), numeric(1)))
  if (!is.finite(v) || v <= 0) return(gamma)
  1 / v
}

# A kernel with that default width set (the kernel as given otherwise).
.kl_gaussian_width <- function(kernel, inp, caller) {
  g <- .svm_gamma_default(kernel, NULL, inp, caller)
  if (is.null(g)) return(kernel)
  kernel <- .as_kernel(kernel, caller)
  kernel$gamma <- g
  kernel
}

# Regression with a standardised response (as e1071's svm(scale = TRUE) and kernlab's ksvm()
# do): the training mean and standard deviation. A constant response is only centred.
.svr_response_scaling <- function(y, caller = NULL) {
  y <- as.numeric(y)
  s <- if (length(y) > 1L) stats::sd(y) else 0
  m <- max(abs(y))
  # far from 1 the squares overflow (sd Inf) or underflow (sd 0 for a response that varies):
  # the standard deviation of y / max|y|, times max|y|
  if (length(y) > 1L && m > 0 && (m > 1e100 || m < 1e-100 || !is.finite(s)))
    s <- m * stats::sd(y / m)
  ctr <- mean(y)
  if (!is.finite(s) || !is.finite(ctr))
    stop(sprintf("%sthe response's values are too large to standardise (largest |y| %s)",
                 if (is.null(caller)) "" else paste0(caller, ": "), format(signif(m, 3))),
         call. = FALSE)
  if (s <= 0) s <- 1
  c(center = ctr, scale = s)
}

.svr_apply_scaling <- function(y, sc) (as.numeric(y) - sc[["center"]]) / sc[["scale"]]

# The scaling of a fit's response: NULL unless a regression with scale_response = TRUE.
.svr_scaling_of <- function(inp, scale_response, caller = NULL) {
  if (isTRUE(scale_response) && identical(inp$task, "regression"))
    .svr_response_scaling(inp$y, caller)
}

# The input with its response standardised by `sc` (as given when `sc` is NULL).
.svr_scale_input <- function(inp, sc) {
  if (!is.null(sc)) inp$y <- .svr_apply_scaling(inp$y, sc)
  inp
}

# Fitted values on the response's scale from decision values on the standardised one.
.svr_unscale <- function(f, sc) {
  if (is.null(sc)) return(f)
  f * sc[["scale"]] + sc[["center"]]
}

.svm_type <- function(type, caller) {
  if (is.null(type)) return(NULL)
  ok <- c("C-classification", "eps-regression")
  if (!is.character(type) || length(type) != 1L || !(type %in% ok))
    stop(sprintf("%s: 'type' must be \"C-classification\" or \"eps-regression\"", caller),
         call. = FALSE)
  type
}

# A precomputed training kernel: square, finite, symmetric, one row per response value.
.svm_input_precomputed <- function(K, y, caller) {
  if (is.data.frame(K)) K <- as.matrix(K)
  if (!is.matrix(K) || !is.numeric(K))
    stop(sprintf("%s: with kernel = \"precomputed\", 'x' must be the numeric n x n kernel matrix",
                 caller), call. = FALSE)
  if (nrow(K) != ncol(K))
    stop(sprintf("%s: the precomputed kernel matrix must be square (got %d x %d)", caller,
                 nrow(K), ncol(K)), call. = FALSE)
  if (nrow(K) == 0L) stop(sprintf("%s: the precomputed kernel matrix is empty", caller),
                          call. = FALSE)
  bad <- !is.finite(K)
  if (any(bad)) {
    w <- which(bad, arr.ind = TRUE)[1L, ]
    stop(sprintf("%s: the precomputed kernel matrix has %d missing or infinite value(s), first at [%d, %d]",
                 caller, sum(bad), w[1L], w[2L]), call. = FALSE)
  }
  big <- max(abs(K))
  if (big > 3e38)
    stop(sprintf("%s: the precomputed kernel matrix has values up to %s, beyond the single-precision range (about 3.4e38) in which kernel values are cached; rescale it",
                 caller, format(big, digits = 3)), call. = FALSE)
  asym <- max(abs(K - t(K)))
  if (asym > 1e-8 * max(1, big))
    stop(sprintf("%s: the precomputed kernel matrix must be symmetric (largest |K - t(K)| is %s)",
                 caller, format(asym, digits = 3)), call. = FALSE)
  if (missing(y) || is.null(y))
    stop(sprintf("%s: 'y' is required", caller), call. = FALSE)
  if (length(y) != nrow(K))
    stop(sprintf("%s: the kernel matrix has %d rows but 'y' has length %d", caller,
                 nrow(K), length(y)), call. = FALSE)
  y <- .kl_check_y(y, caller, "y")
  all_levels <- attr(y, "kl_all_levels")
  attr(y, "kl_all_levels") <- NULL
  storage.mode(K) <- "double"
  list(x = unname(K), y = y, task = if (is.factor(y)) "classification" else "regression",
       levels = if (is.factor(y)) levels(y),
       spec = list(kind = "precomputed", n = nrow(K), response_levels = all_levels),
       precomputed = TRUE)
}

# `dropped`: levels of the response without rows (dropped from the model with a warning); a
# weight named by one of them has no class to weigh and is left out.
.svm_class_weights <- function(class.weights, y, caller, dropped = NULL) {
  lev <- levels(y)
  w <- stats::setNames(rep(1, length(lev)), lev)
  if (is.null(class.weights)) return(w)
  if (is.character(class.weights) && length(class.weights) == 1L) {
    if (class.weights != "inverse")
      stop(sprintf("%s: 'class.weights' must be a named numeric vector or \"inverse\"", caller),
           call. = FALSE)
    cnt <- tabulate(as.integer(y), nbins = length(lev))
    w[] <- length(y) / (length(lev) * cnt)
    return(w)
  }
  if (!is.numeric(class.weights) || is.null(names(class.weights)) ||
      any(!nzchar(names(class.weights))))
    stop(sprintf("%s: 'class.weights' must be a numeric vector named by class (levels %s) or \"inverse\"",
                 caller, .name_list(lev)), call. = FALSE)
  class.weights <- class.weights[!(names(class.weights) %in% setdiff(dropped, lev))]
  unknown <- setdiff(names(class.weights), lev)
  if (length(unknown))
    stop(sprintf("%s: 'class.weights' names %s, which %s not a class (levels %s)", caller,
                 .name_list(unknown), if (length(unknown) == 1L) "is" else "are",
                 .name_list(lev)), call. = FALSE)
  if (any(!is.finite(class.weights)) || any(class.weights <= 0))
    stop(sprintf("%s: 'class.weights' must be positive and finite", caller), call. = FALSE)
  w[names(class.weights)] <- as.numeric(class.weights)
  w
}

# The kernel of a fit: a kernel object with `gamma` (when given) put in.
.svm_kernel <- function(kernel, gamma, caller) {
  kernel <- .as_kernel(kernel, caller)
  if (!is.null(gamma)) {
    if (!.kernel_has_gamma(kernel))
      stop(sprintf("%s: 'gamma' applies to the Gaussian, Laplacian and hierarchical Gaussian kernels, not the %s kernel",
                   caller, kernel$name), call. = FALSE)
    .check_number(gamma, "gamma", lower = 0, lower_open = TRUE, caller = caller)
    kernel$gamma <- gamma
  }
  kernel
}

# Probabilities and class weights are for classification.
.svm_check_task_args <- function(task, probability, class.weights, caller) {
  if (probability && task != "classification")
    stop(sprintf("%s: probability = TRUE is for classification; this is a regression", caller),
         call. = FALSE)
  if (!is.null(class.weights) && task != "classification")
    stop(sprintf("%s: 'class.weights' is for classification; this is a regression", caller),
         call. = FALSE)
}

# Checked solver parameters, as the list the C++ glue reads (klr::svm_params_from_r in src/glue_svm.cpp).
.svm_params <- function(cost, epsilon, tol, shrinking, cache, max_iter, probability,
                        prob_folds, caller) {
  .check_number(cost, "cost", lower = 0, lower_open = TRUE, caller = caller)
  .check_number(epsilon, "epsilon", lower = 0, caller = caller)
  .check_number(tol, "tol", lower = 0, lower_open = TRUE, caller = caller)
  .check_number(cache, "cache", lower = 0, lower_open = TRUE, caller = caller)
  .check_number(prob_folds, "prob_folds", lower = 2, upper = 1000, integer = TRUE, caller = caller)
  .check_number(max_iter, "max_iter", lower = 1, upper = 1e15, integer = TRUE, null_ok = TRUE,
                caller = caller)
  for (nm in c("probability", "shrinking")) {
    v <- get(nm)
    if (!is.logical(v) || length(v) != 1L || is.na(v))
      stop(sprintf("%s: '%s' must be TRUE or FALSE", caller, nm), call. = FALSE)
  }
  list(cost = as.numeric(cost), epsilon = as.numeric(epsilon), tol = as.numeric(tol),
       shrinking = shrinking, cache = as.numeric(cache),
       max_iter = if (is.null(max_iter)) 0 else as.numeric(max_iter),
       probability = probability, prob_folds = as.integer(prob_folds), seed = c(1L, 1L))
}

.kernel_svm_fit <- function(inp, kernel, cost, gamma, epsilon, type, class.weights,
                            probability, prob_folds, tol, shrinking, cache, max_iter,
                            warm_start, threads, call, scale_response = FALSE,
                            seed = NULL) {
  caller <- "kernel_svm()"
  pre <- isTRUE(inp$precomputed)
  y_scaling <- .svr_scaling_of(inp, scale_response, caller)
  inp <- .svr_scale_input(inp, y_scaling)
  if (!is.null(type)) {
    want <- if (type == "C-classification") "classification" else "regression"
    if (want != inp$task)
      stop(sprintf("%s: type = \"%s\" needs a %s response", caller, type,
                   if (want == "regression") "numeric" else "factor"), call. = FALSE)
  }
  type <- if (inp$task == "classification") "C-classification" else "eps-regression"
  if (pre) {
    if (!is.null(gamma))
      stop(sprintf("%s: 'gamma' has no meaning with a precomputed kernel", caller),
           call. = FALSE)
    kernel <- "precomputed"
  } else {
    kernel <- .resolve_kernel(.svm_kernel(kernel, gamma, caller), ncol(inp$x), caller)
  }
  params <- .svm_params(cost, epsilon, tol, shrinking, cache, max_iter, probability,
                        prob_folds, caller)
  .svm_check_task_args(inp$task, probability, class.weights, caller)
  threads <- .kl_threads(threads)
  n <- nrow(inp$x)
  # seed: the probability model's, drawn by the caller ahead (else here)
  if (probability) params$seed <- if (is.null(seed)) .kl_seed() else seed
  kspec <- if (pre) list(type = 0L, gamma = 1, degree = 1, scale = 1, offset = 0)
           else .kernel_spec(kernel)
  xarg <- if (pre) NULL else inp$x
  karg <- if (pre) inp$x else NULL
  progress <- if (n >= 3000L) .kl_progressor() else NULL
  t0 <- proc.time()[["elapsed"]]
  # (not system.time(), which prints "Timing stopped at" when the fit fails)
  if (inp$task == "classification") {
    k <- length(inp$levels)
    w <- .svm_class_weights(class.weights, inp$y, caller, inp$spec$response_levels)
    warm <- .svm_warm_classification(warm_start, inp, cost, caller)
    sol <- .kl_core(caller, cpp_svm_classify, xarg, karg, as.integer(inp$y), k, unname(w),
                    kspec, params, warm, threads, progress, .kl_backend_arg(),
                    levels = inp$levels)
  } else {
    w <- NULL
    warm <- .svm_warm_regression(warm_start, inp, cost, caller)
    sol <- .svm_regression_sol(.kl_core(caller, cpp_svm_regress, xarg, karg, inp$y, kspec,
                                        params, warm, threads, progress, .kl_backend_arg()))
  }
  time <- proc.time()[["elapsed"]] - t0
  if (!all(sol$converged)) {
    bad <- sum(!sol$converged)
    cap <- if (is.null(max_iter)) "max(1e7, 100 x the number of dual variables)"
           else format(max_iter)
    warning(sprintf("%s: the solver reached the iteration cap (max_iter = %s) before the tolerance %s in %d of %d binary problem(s); the solution may be inaccurate",
                    caller, cap, format(tol), bad, length(sol$converged)), call. = FALSE)
  }
  model <- .svm_model(sol, inp, kernel, cost, epsilon, w, tol, shrinking, probability, call, time)
  model$y_scaling <- y_scaling
  model
}

# The regression result of the glue in the shape of a classification one.
.svm_regression_sol <- function(sol) {
  sol$coefs <- matrix(sol$coefs, ncol = 1L)
  sol$nsv <- length(sol$sv_index)
  sol$pair_nsv <- length(sol$sv_index)
  sol
}

# A kernel_svm model from the machines the glue returns (cpp_svm_classify, cpp_svm_regress and
# the learners whose final model is an SVM).
.svm_model <- function(sol, inp, kernel, cost, epsilon, w, tol, shrinking, probability, call,
                       time) {
  type <- if (inp$task == "classification") "C-classification" else "eps-regression"
  SV <- if (identical(kernel, "precomputed")) NULL else inp$x[sol$sv_index, , drop = FALSE]
  if (!is.null(SV)) rownames(SV) <- sol$sv_index
  nsv <- as.integer(sol$nsv)
  if (inp$task == "classification") names(nsv) <- inp$levels
  structure(list(call = call, type = type, task = inp$task, levels = inp$levels,
                 spec = inp$spec, kernel = kernel, cost = as.numeric(cost),
                 epsilon = if (inp$task == "regression") as.numeric(epsilon),
                 class.weights = w, tol = as.numeric(tol), shrinking = shrinking,
                 SV = SV, sv_index = sol$sv_index, nSV = nsv, tot.nSV = length(sol$sv_index),
                 coefs = sol$coefs, rho = sol$rho, obj = sol$obj, iter = sol$iter,
                 converged = sol$converged, pair_nsv = sol$pair_nsv,
                 kernel_rows = sol$kernel_rows,
                 probability = probability,
                 probA = if (probability) sol$probA, probB = if (probability) sol$probB,
                 n = nrow(inp$x), time = time),
            class = c("kernel_svm", "kl_model"))
}

# Warm starts: per pair, the dual coefficients y_i a_i over all training rows (the core clips
# them to the new bounds).
.svm_check_warm <- function(warm_start, inp, caller) {
  if (!inherits(warm_start, "kernel_svm"))
    stop(sprintf("%s: 'warm_start' must be a kernel_svm model", caller), call. = FALSE)
  if (warm_start$n != nrow(inp$x) || warm_start$task != inp$task ||
      !identical(warm_start$levels, inp$levels))
    stop(sprintf("%s: 'warm_start' was fitted on other data (%d rows, %s); it must come from the same rows",
                 caller, warm_start$n, warm_start$task), call. = FALSE)
}

.svm_warm_classification <- function(warm_start, inp, cost, caller) {
  if (is.null(warm_start)) return(list())
  .svm_check_warm(warm_start, inp, caller)
  k <- length(inp$levels)
  n <- nrow(inp$x)
  start <- c(0L, cumsum(warm_start$nSV))
  out <- vector("list", k * (k - 1L) / 2L)
  t <- 0L
  for (a in seq_len(k - 1L)) for (b in (a + 1L):k) {
    t <- t + 1L
    v <- numeric(n)
    ia <- seq_len(warm_start$nSV[a]) + start[a]
    ib <- seq_len(warm_start$nSV[b]) + start[b]
    v[warm_start$sv_index[ia]] <- warm_start$coefs[ia, b - 1L]
    v[warm_start$sv_index[ib]] <- warm_start$coefs[ib, a]
    out[[t]] <- v
  }
  out
}

.svm_warm_regression <- function(warm_start, inp, cost, caller) {
  if (is.null(warm_start)) return(NULL)
  .svm_check_warm(warm_start, inp, caller)
  v <- numeric(nrow(inp$x))
  v[warm_start$sv_index] <- warm_start$coefs[, 1L]
  v
}

#' Predict with a kernel support vector machine
#'
#' @param object A \code{kernel_svm} model.
#' @param newdata New rows: a data.frame (formula fits) or a matrix /
#'   data.frame with the training columns; for a precomputed kernel the
#'   \eqn{m \times n}{m x n} matrix of kernel values between the new rows and
#'   the \eqn{n} training rows. Missing: the fitted classes or values of the
#'   training rows, kept by \code{fitted = TRUE} (other types need the
#'   training data as \code{newdata}).
#' @param type \code{"class"} (default for classification): a factor;
#'   \code{"prob"}: a matrix of class probabilities, one column per level, rows
#'   summing to 1 (models fitted with \code{probability = TRUE});
#'   \code{"decision"}: the decision values, a vector for two classes
#'   (positive meaning the second level) or a matrix with one column per pair
#'   named \code{"b/a"}, positive meaning class \code{b}, the later level;
#'   \code{"response"} (default for regression): fitted values.
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, numeric vector or matrix with one row per new row.
#'   Predicted classes are a factor with every level of the training response,
#'   levels without training rows included (as in e1071 and ranger; the model
#'   never predicts them), so that they compare with held-out labels.
#' @examples
#' fit <- kernel_svm(Species ~ ., data = iris, probability = TRUE)
#' head(predict(fit, iris, type = "decision"))
#' head(predict(fit, iris, type = "prob"))
#' @export
predict.kernel_svm <- function(object, newdata, type = NULL, threads = NULL, ...) {
  caller <- "predict.kernel_svm()"
  .no_dots(..., caller = caller)
  .svm_predict(object, if (missing(newdata)) NULL else newdata, type, threads, caller)
}

# predict() of a kernel_svm model, also for the learners whose final model is one (`owner`,
# which keeps the fitted values that predict() without newdata returns).
.svm_predict <- function(object, newdata, type, threads, caller, owner = object) {
  prob_ok <- if (isTRUE(object$probability)) TRUE
             else "the model has no probability model; fit it with probability = TRUE"
  type <- .kl_predict_type(type, object$task, caller, prob = prob_ok)
  if (is.null(newdata)) return(.kl_predict_fitted(owner, type, caller))
  threads <- .kl_threads(threads)
  pre <- identical(object$kernel, "precomputed")
  nsv_arg <- if (object$task == "classification") as.integer(object$nSV) else NULL
  if (pre) {
    if (is.null(newdata))
      stop(sprintf("%s: with a precomputed kernel, 'newdata' (the m x n kernel matrix between new and training rows) is required",
                   caller), call. = FALSE)
    Kx <- .svm_newkernel(newdata, object$n, caller)
    m <- nrow(Kx)
    dec <- if (m == 0L) matrix(numeric(), 0L, length(object$rho))
           else .kl_core(caller, cpp_svm_decision_pre, Kx[, object$sv_index, drop = FALSE],
                         object$coefs, nsv_arg, object$rho, threads)
  } else {
    if (is.null(newdata))
      stop(sprintf("%s: 'newdata' is required (the model does not keep its training data)",
                   caller), call. = FALSE)
    x <- .kl_newdata(object$spec, newdata, caller)
    m <- nrow(x)
    dec <- if (m == 0L) matrix(numeric(), 0L, length(object$rho))
           else .kl_core(caller, cpp_svm_decision, x, object$SV, object$coefs, nsv_arg,
                         object$rho, .kernel_spec(object$kernel), threads, .kl_backend_arg())
  }
  # a least-squares SVM of tkl() bounds its decision values (.tkl_ls_model)
  if (!is.null(object$clip)) dec[] <- pmin(pmax(dec, object$clip[1L]), object$clip[2L])
  if (object$task == "regression") dec <- .svr_unscale(dec, object$y_scaling)
  .svm_output(object, dec, type, caller)
}

.svm_newkernel <- function(newdata, n, caller) {
  if (is.data.frame(newdata)) newdata <- as.matrix(newdata)
  if (is.vector(newdata) && is.numeric(newdata) && length(newdata) == n)
    newdata <- matrix(newdata, nrow = 1L)
  if (!is.matrix(newdata) || !is.numeric(newdata))
    stop(sprintf("%s: with a precomputed kernel, 'newdata' must be a numeric matrix of kernel values",
                 caller), call. = FALSE)
  if (ncol(newdata) != n)
    stop(sprintf("%s: the kernel matrix of new rows must have one column per training row (%d); got %d",
                 caller, n, ncol(newdata)), call. = FALSE)
  if (any(!is.finite(newdata)))
    stop(sprintf("%s: the kernel matrix of new rows has missing or infinite values", caller),
         call. = FALSE)
  storage.mode(newdata) <- "double"
  newdata
}

.svm_pair_names <- function(levels) {
  k <- length(levels)
  out <- character()
  for (a in seq_len(k - 1L)) for (b in (a + 1L):k) out <- c(out, paste0(levels[b], "/", levels[a]))
  out
}

.svm_output <- function(object, dec, type, caller = "predict.kernel_svm()") {
  m <- nrow(dec)
  if (object$task == "regression") return(as.vector(dec))
  lev <- object$levels
  k <- length(lev)
  if (type == "decision") {
    if (k == 2L) return(as.vector(dec))
    colnames(dec) <- .svm_pair_names(lev)
    return(dec)
  }
  if (type == "prob" || (type == "class" && isTRUE(object$probability))) {
    P <- if (m == 0L) matrix(numeric(), 0L, k)
         else .kl_core(caller, cpp_ovo_prob, dec, k, object$probA, object$probB)
    colnames(P) <- lev
    if (type == "prob") return(P)
    return(factor(lev[max.col(P, ties.method = "first")], levels = .kl_all_levels(object)))
  }
  if (m == 0L) return(factor(character(), levels = .kl_all_levels(object)))
  factor(lev[.kl_core(caller, cpp_ovo_vote, dec, k)], levels = .kl_all_levels(object))
}

#' @export
print.kernel_svm <- function(x, ...) {
  cat("Kernel support vector machine: ", x$type, "\n", sep = "")
  if (x$task == "classification") {
    cat(sprintf("  %d classes, %d training rows; cost = %s", length(x$levels), x$n,
                format(x$cost, digits = 6)))
    if (any(x$class.weights != 1)) cat(", class weights used")
    cat("\n")
  } else {
    # (tkl()'s Gaussian least-squares baseline has the form of a regression model)
    cat(if (is.null(x$lambda))
          sprintf("  %d training rows; cost = %s, epsilon = %s\n", x$n,
                  format(x$cost, digits = 6), format(x$epsilon, digits = 6))
        else sprintf("  %d training rows; penalty lambda = %s per row\n", x$n,
                     format(x$lambda, digits = 6)))
    if (!is.null(x$y_scaling))
      cat(sprintf("  response standardised (mean %s, sd %s); %s acts on that scale\n",
                  format(x$y_scaling[["center"]], digits = 5),
                  format(x$y_scaling[["scale"]], digits = 5),
                  if (is.null(x$lambda)) "epsilon" else "lambda"))
  }
  cat("  ")
  if (identical(x$kernel, "precomputed")) cat("Precomputed kernel\n") else print(x$kernel)
  cat(sprintf("  %d support vectors", x$tot.nSV))
  if (x$task == "classification")
    cat(sprintf(" (%s)", paste(sprintf("%s: %d", names(x$nSV), x$nSV), collapse = ", ")))
  cat("\n")
  if (isTRUE(x$probability)) cat("  with a probability model (Platt scaling, pairwise coupling)\n")
  invisible(x)
}

#' Summarise a kernel support vector machine
#'
#' @param object A \code{kernel_svm} model.
#' @param x A \code{summary.kernel_svm} object.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class
#'   \code{"summary.kernel_svm"}: the model's parameters, support vector
#'   counts, and a data.frame \code{problems} with one row per binary problem
#'   (the pair, its support vectors, dual objective, \eqn{\rho}, iterations,
#'   kernel rows computed, and whether the tolerance was reached).
#' @examples
#' summary(kernel_svm(Species ~ ., data = iris))
#' @export
summary.kernel_svm <- function(object, ...) {
  pairs <- if (object$task == "classification") .svm_pair_names(object$levels)
           else "regression"
  problems <- data.frame(problem = pairs, nSV = object$pair_nsv, obj = object$obj,
                         rho = object$rho, iter = object$iter,
                         kernel_rows = object$kernel_rows, converged = object$converged,
                         stringsAsFactors = FALSE)
  if (isTRUE(object$probability)) {
    problems$probA <- object$probA
    problems$probB <- object$probB
  }
  structure(list(model = object, problems = problems), class = "summary.kernel_svm")
}

#' @rdname summary.kernel_svm
#' @export
print.summary.kernel_svm <- function(x, ...) {
  print(x$model)
  cat(sprintf("  tolerance %s, shrinking %s, fit in %.2f s\n", format(x$model$tol),
              if (x$model$shrinking) "on" else "off", x$model$time))
  cat("\nBinary problems:\n")
  p <- x$problems
  if (nrow(p) > 12L) {
    print(utils::head(p, 12L), row.names = FALSE, digits = 5)
    cat(sprintf("  ... %d more\n", nrow(p) - 12L))
  } else {
    print(p, row.names = FALSE, digits = 5)
  }
  invisible(x)
}
