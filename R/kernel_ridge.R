#' Exact kernel ridge regression and least-squares SVM classification
#'
#' Fits \eqn{f(x) = \sum_j \alpha_j k(x_j, x) + b} by minimising
#' \deqn{\sum_i (y_i - f(x_i))^2 + \lambda \|f\|_{H}^2}{sum_i (y_i - f(x_i))^2 + lambda ||f||_H^2}
#' with an unpenalised bias \eqn{b}, exactly: the kernel matrix \eqn{K} is
#' computed in the C++ core and \eqn{(K + \lambda I)\alpha = y - b} with
#' \eqn{1'\alpha = 0} is solved by a Cholesky factorisation.
#'
#' For a factor response this is the least-squares SVM (LS-SVM) used by the
#' hierarchical Gaussian kernel paper: targets are \eqn{\pm 1}{+-1} (one output
#' for two classes, positive meaning the second level; one-vs-rest outputs for
#' more), and the predicted class is the largest output. Least-squares outputs
#' are not probabilities, so \code{predict(type = "prob")} is an error.
#'
#' Inputs are scaled to \eqn{[0, 1]} with the training minimum and maximum of
#' each column (constant columns map to 0; \code{scale = "standardize"}
#' centres the numeric columns and divides them by their standard deviations
#' instead, \code{"none"} keeps them); factor predictors are expanded to one
#' indicator column per level, of 0 and 1. The scaling and encodings are
#' stored in the model and applied to \code{newdata}.
#'
#' Predictions are not bounded by the training range of the response. With a
#' Gaussian kernel they return to the bias far from every training row, but
#' with a small \code{lambda} the coefficients \eqn{\alpha}{alpha} can be
#' large and of both signs, and at new rows just outside the training inputs
#' they add up to values far outside that range (an SVR's coefficients are
#' bounded by its cost). On 60 rows of cpusmall (a response in [0, 99]),
#' with the penalty and width chosen by \code{\link{kl_tune}} over 10 x 5
#' values, the predictions at other rows of the set reached -179 in one draw
#' and 254 in another. \code{\link{hgk}} and \code{\link{tkl}} bound their least-squares
#' predictions for this reason; here, check predictions at such rows, or clip
#' them to a range you trust.
#'
#' The exact solve needs an \eqn{n \times n}{n x n} matrix (8 n^2 bytes): an
#' error names the limit when it does not fit in the memory the operating system
#' reports as available (or \code{options(kernlearn.max_memory =)} bytes).
#'
#' @param x A formula (\code{y ~ .}) with \code{data}, or a numeric matrix or
#'   data.frame of predictors.
#' @param formula A model formula.
#' @param data A data.frame holding the variables of \code{formula}.
#' @param subset Rows of \code{data} to use: a logical vector or row numbers,
#'   evaluated in \code{data} (formula interface).
#' @param na.action What to do with rows with missing values in the variables of
#'   the formula: \code{na.fail} (the default: an error naming the column) or
#'   \code{na.omit} (drop them, with a message saying how many).
#' @param y Response: a factor for classification, a numeric vector for
#'   regression.
#' @param kernel A kernel object (\code{\link{gaussian_kernel}} by default) or a
#'   kernel name. A Gaussian kernel without a width gets one over the sum of the
#'   scaled training columns' variances, as in \code{\link{kernel_svm}}.
#' @param lambda Ridge penalty \eqn{\lambda > 0}. The default 0.01 is a
#'   starting point, not a choice for the data: the best penalty depends on
#'   the noise and differs by orders of magnitude between data sets (from
#'   below 0.001 on smooth, nearly noise-free responses to 1 or more on noisy
#'   ones), and a small one lets the fit follow outlying responses. Choose it
#'   with \code{\link{kl_tune}}.
#' @param scale How inputs are scaled: \code{"minmax"} (the default),
#'   \code{"standardize"} or \code{"none"}, as in \code{\link{kernel_svm}}.
#' @param cells \code{FALSE} (the default) for one global model; \code{TRUE}
#'   or \code{\link{kl_cells}(...)} for a localized model: one kernel ridge
#'   model per cell of the input space, for data too large for the exact
#'   solve. With cells, \code{lambda} and the kernel's width left unset are
#'   chosen in every cell by cross-validation; values given are used in every
#'   cell. The result is then a
#'   \code{\link[=predict.kl_localized]{kl_localized}} model.
#' @param threads Number of threads; default \code{getOption("kernlearn.threads", 2)}.
#' @param ... Not used; unknown arguments are an error.
#' @return An object of class \code{c("kernel_ridge", "kl_model")}: a list with
#'   the scaled training inputs \code{x} and response \code{y}, the dual coefficients \code{alpha}
#'   (n by number of outputs), the bias \code{bias}, the resolved \code{kernel},
#'   \code{lambda}, \code{task} (\code{"classification"} or
#'   \code{"regression"}), the class \code{levels}, and the input specification
#'   used to prepare new data.
#' @seealso \code{\link{predict.kernel_ridge}}, \code{\link{plot.kernel_ridge}} to
#'   draw the predictions over two inputs, \code{\link{kl_tune}} to choose
#'   \code{lambda} and the kernel parameters.
#' @examples
#' fit <- kernel_ridge(Species ~ ., data = iris, kernel = gaussian_kernel(gamma = 2),
#'                     lambda = 0.1)
#' fit
#' table(predict(fit, iris), iris$Species)
#'
#' reg <- kernel_ridge(mpg ~ wt + hp, data = mtcars, lambda = 0.5)
#' head(predict(reg, mtcars))
#' @export
kernel_ridge <- function(x, ...) UseMethod("kernel_ridge")

#' @rdname kernel_ridge
#' @export
kernel_ridge.formula <- function(formula, data, kernel = gaussian_kernel(), lambda = 0.01,
                                 scale = "minmax", subset = NULL, na.action = stats::na.fail,
                                 cells = FALSE, threads = NULL, ...) {
  .no_dots(..., caller = "kernel_ridge()")
  cells <- .kl_cells_arg(cells, "kernel_ridge()")
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "kernel_ridge()", parent.frame())
  inp <- .kl_input_formula(formula, data, "kernel_ridge()", scale = scale)
  if (!is.null(cells))
    return(.kernel_ridge_cells(inp, kernel, if (missing(lambda)) NULL else lambda, threads,
                               cells, .kl_call(match.call(), "kernel_ridge")))
  .kernel_ridge_fit(inp, .kl_gaussian_width(kernel, inp, "kernel_ridge()"), lambda, threads,
                    .kl_call(match.call(), "kernel_ridge"))
}

#' @rdname kernel_ridge
#' @export
kernel_ridge.default <- function(x, y, kernel = gaussian_kernel(), lambda = 0.01,
                                 scale = "minmax", cells = FALSE, threads = NULL, ...) {
  .no_dots(..., caller = "kernel_ridge()")
  cells <- .kl_cells_arg(cells, "kernel_ridge()")
  if (inherits(x, "formula"))
    stop("kernel_ridge(): use kernel_ridge(formula, data = ) with a formula", call. = FALSE)
  inp <- .kl_input_xy(x, y, "kernel_ridge()", scale = scale)
  if (!is.null(cells))
    return(.kernel_ridge_cells(inp, kernel, if (missing(lambda)) NULL else lambda, threads,
                               cells, .kl_call(match.call(), "kernel_ridge")))
  .kernel_ridge_fit(inp, .kl_gaussian_width(kernel, inp, "kernel_ridge()"), lambda, threads,
                    .kl_call(match.call(), "kernel_ridge"))
}

.no_dots <- function(..., caller) {
  dots <- list(...)
  if (length(dots)) {
    nm <- names(dots)
    nm <- if (is.null(nm)) rep("", length(dots)) else nm
    nm[!nzchar(nm)] <- "<unnamed>"
    stop(sprintf("%s: unused argument(s) %s", caller, .name_list(nm)), call. = FALSE)
  }
  invisible(NULL)
}

# +-1 targets: one column for two classes (+1 = second level), one-vs-rest columns otherwise.
.pm1_targets <- function(y) {
  k <- nlevels(y)
  if (k == 2L) return(matrix(ifelse(as.integer(y) == 2L, 1, -1), ncol = 1L))
  Y <- matrix(-1, length(y), k)
  Y[cbind(seq_along(y), as.integer(y))] <- 1
  Y
}

.kernel_ridge_fit <- function(inp, kernel, lambda, threads, call) {
  caller <- "kernel_ridge()"
  kernel <- .resolve_kernel(.as_kernel(kernel, caller), ncol(inp$x), caller)
  .check_number(lambda, "lambda", lower = 0, lower_open = TRUE, caller = caller)
  threads <- .kl_threads(threads)
  n <- nrow(inp$x)
  limit <- .kl_memory_limit()
  .check_memory(8 * n^2 + 8 * n * ncol(inp$x), sprintf("the exact solve for n = %d rows (an n x n kernel matrix)", n),
                caller, hint = if (is.na(limit)) "" else
                  sprintf("; at most about %d rows fit. Subsample the rows or raise options(kernlearn.max_memory)",
                          floor(sqrt(limit / 8))))
  Y <- if (inp$task == "classification") .pm1_targets(inp$y) else matrix(inp$y, ncol = 1L)
  progress <- if (n >= 3000L) .kl_progressor() else NULL
  sol <- .kl_core(caller, cpp_kernel_ridge_fit, inp$x, Y, .kernel_spec(kernel), lambda, TRUE,
                  threads, .kl_backend_arg(), progress)
  structure(list(call = call, task = inp$task, levels = inp$levels, spec = inp$spec,
                 kernel = kernel, lambda = lambda, x = inp$x, y = inp$y, alpha = sol$alpha,
                 bias = as.vector(sol$bias), n = n),
            class = c("kernel_ridge", "kl_model"))
}

#' Predict with a kernel ridge model
#'
#' @param object A \code{kernel_ridge} model.
#' @param newdata A data.frame (formula fits) or a matrix / data.frame with the
#'   training columns. Missing means the training data.
#' @param type \code{"class"} (default for classification): a factor with the
#'   training levels; \code{"decision"}: the least-squares outputs (a vector for
#'   two classes, positive meaning the second level; a matrix with one column
#'   per level otherwise); \code{"response"} (default for regression): the
#'   fitted values. \code{"prob"} is an error: least-squares outputs are not
#'   probabilities.
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, numeric vector or matrix with one row per row of
#'   \code{newdata}.
#'   Predicted classes are a factor with every level of the training response,
#'   levels without training rows included (as in e1071 and ranger; the model
#'   never predicts them), so that they compare with held-out labels.
#' @examples
#' fit <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
#' head(predict(fit, iris[, 1:4], type = "decision"))
#' @export
predict.kernel_ridge <- function(object, newdata, type = NULL, threads = NULL, ...) {
  caller <- "predict.kernel_ridge()"
  .no_dots(..., caller = caller)
  type <- .kl_predict_type(type, object$task, caller,
                           prob = paste("least-squares outputs are not probabilities;",
                                        "use type = \"decision\", or a learner with a",
                                        "probability model"))
  x <- if (missing(newdata)) object$x else .kl_newdata(object$spec, newdata, caller)
  if (nrow(x) == 0L) {
    if (type == "class") return(factor(character(), levels = .kl_all_levels(object)))
    return(if (type == "decision" && length(object$levels) > 2L)
             matrix(numeric(), 0L, length(object$levels), dimnames = list(NULL, object$levels))
           else numeric())
  }
  dec <- .kl_core(caller, cpp_kernel_predict, x, object$x, object$alpha, object$bias,
                  .kernel_spec(object$kernel), .kl_threads(threads), .kl_backend_arg())
  if (object$task == "regression") return(as.vector(dec))
  if (type == "class")
    return(.kl_decision_to_class(dec, object$levels, .kl_all_levels(object)))
  if (ncol(dec) == 1L) return(as.vector(dec))
  colnames(dec) <- object$levels
  dec
}

#' @export
print.kernel_ridge <- function(x, ...) {
  what <- if (x$task == "classification")
    sprintf("least-squares SVM classification, %d classes", length(x$levels))
  else "regression"
  cat("Kernel ridge ", what, "\n", sep = "")
  cat(sprintf("  %d training rows, %d features (%s), lambda = %s\n", x$n,
              ncol(x$x), .kl_scaling_text(x$spec), format(x$lambda, digits = 6)))
  cat("  ")
  print(x$kernel)
  invisible(x)
}
