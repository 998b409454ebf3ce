# Linear heads shared by the learners: multinomial logistic regression (L2 penalty, glmnet's
# objective with alpha = 0) and linear SVMs by dual coordinate descent. Internal: the learners
# call these on numeric matrices they have already prepared; fits are plain lists.

# A finite numeric matrix with at least one row and column, as double storage.
.heads_matrix <- function(x, caller, name = "x") {
  if (!is.matrix(x) || !(is.numeric(x) || is.logical(x)))
    stop(sprintf("%s: '%s' must be a numeric matrix (got %s)", caller, name,
                 if (is.matrix(x)) paste(typeof(x), "matrix") else class(x)[1L]),
         call. = FALSE)
  if (nrow(x) == 0L || ncol(x) == 0L)
    stop(sprintf("%s: '%s' is empty (%d x %d)", caller, name, nrow(x), ncol(x)), call. = FALSE)
  bad <- which(!is.finite(x))
  if (length(bad)) {
    i <- (bad[1L] - 1L) %% nrow(x) + 1L
    j <- (bad[1L] - 1L) %/% nrow(x) + 1L
    stop(sprintf("%s: '%s' has %d non-finite value(s) (NA, NaN or Inf), the first at row %d, column %d",
                 caller, name, length(bad), i, j), call. = FALSE)
  }
  if (storage.mode(x) != "double") storage.mode(x) <- "double"
  x
}

# A class factor of length n without missing values, with at least two levels and at least one
# observation of every level.
.heads_classes <- function(y, n, caller, name = "y") {
  if (is.character(y) || is.logical(y)) y <- factor(y)
  if (!is.factor(y))
    stop(sprintf("%s: '%s' must be a factor of class labels (got %s)", caller, name,
                 class(y)[1L]), call. = FALSE)
  if (length(y) != n)
    stop(sprintf("%s: '%s' has length %d but 'x' has %d rows", caller, name, length(y), n),
         call. = FALSE)
  if (anyNA(y))
    stop(sprintf("%s: '%s' has %d missing value(s), the first at position %d", caller, name,
                 sum(is.na(y)), which(is.na(y))[1L]), call. = FALSE)
  lev <- levels(y)
  if (length(lev) < 2L)
    stop(sprintf("%s: '%s' needs at least two classes (got %d)", caller, name, length(lev)),
         call. = FALSE)
  empty <- lev[tabulate(as.integer(y), length(lev)) == 0L]
  if (length(empty))
    stop(sprintf("%s: '%s' has no observations of level(s) %s", caller, name,
                 paste0("'", empty, "'", collapse = ", ")), call. = FALSE)
  y
}


#' Multinomial logistic regression with an L2 penalty:
#'   (1 / sum(w)) sum_i w_i (-log p_{y_i}(x_i)) + (lambda / 2) sum_k ||beta_k||^2
#' (glmnet's multinomial objective with alpha = 0 and standardize = FALSE), fitted by L-BFGS.
#' Returns coefficients (p x K, columns named by the levels), intercepts centred to sum to zero,
#' and the fit's diagnostics.
#' @noRd
.logistic_fit <- function(x, y, lambda, weights = NULL, maxit = 500L, tol = 1e-7,
                          threads = NULL, progress = NULL) {
  caller <- ".logistic_fit"
  x <- .heads_matrix(x, caller)
  y <- .heads_classes(y, nrow(x), caller)
  .check_number(lambda, "lambda", caller = caller, lower = 0)
  .check_number(maxit, "maxit", caller = caller, lower = 0, integer = TRUE)
  .check_number(tol, "tol", caller = caller, lower = 0)
  threads <- .kl_threads(threads)
  if (!is.null(weights)) {
    if (!is.numeric(weights) || length(weights) != nrow(x))
      stop(sprintf("%s: 'weights' must be a numeric vector with one value per row of 'x' (%d)",
                   caller, nrow(x)), call. = FALSE)
    if (any(!is.finite(weights)) || any(weights < 0))
      stop(sprintf("%s: 'weights' must be finite and non-negative", caller), call. = FALSE)
    if (sum(weights) <= 0)
      stop(sprintf("%s: 'weights' sum to zero", caller), call. = FALSE)
    lev <- levels(y)
    wk <- vapply(lev, function(l) sum(weights[y == l]), numeric(1))
    if (any(wk <= 0))
      stop(sprintf("%s: level(s) %s of 'y' have zero total weight", caller,
                   paste0("'", lev[wk <= 0], "'", collapse = ", ")), call. = FALSE)
    weights <- as.double(weights)
  }
  lev <- levels(y)
  K <- length(lev)
  r <- .kl_core(caller, cpp_logistic_fit, x, as.integer(y), K, as.double(lambda), weights,
                as.integer(maxit), as.double(tol), threads, 1e-14, 10L, progress, levels = lev)
  coef <- r$coefficients
  dimnames(coef) <- list(colnames(x), lev)
  intercept <- as.vector(r$intercept)
  names(intercept) <- lev
  list(coefficients = coef, intercept = intercept, levels = lev, lambda = lambda,
       objective = r$objective, grad_norm = r$grad_norm, iterations = r$iterations,
       converged = r$converged, message = r$message)
}

#' Class probabilities (n x K, columns named by the levels) or the most probable class.
#' @noRd
.logistic_predict <- function(fit, x, type = c("prob", "class"), threads = NULL) {
  caller <- ".logistic_predict"
  type <- match.arg(type)
  if (!is.list(fit) || is.null(fit$coefficients) || is.null(fit$intercept))
    stop(sprintf("%s: 'fit' must be a list returned by .logistic_fit()", caller), call. = FALSE)
  x <- .heads_matrix(x, caller)
  B <- fit$coefficients
  if (ncol(x) != nrow(B))
    stop(sprintf("%s: 'x' has %d columns but the fit has %d coefficients per class", caller,
                 ncol(x), nrow(B)), call. = FALSE)
  storage.mode(B) <- "double"
  P <- .kl_core(caller, cpp_logistic_predict, x, B, as.double(fit$intercept),
                .kl_threads(threads))
  colnames(P) <- fit$levels
  rownames(P) <- rownames(x)
  if (type == "prob") return(P)
  factor(fit$levels[max.col(P, ties.method = "first")], levels = fit$levels)
}

#' Linear SVM by dual coordinate descent. loss "l2" (squared hinge) or "l1" (hinge); the bias is a
#' constant feature of value `bias` whose weight is regularised (bias <= 0: no bias term);
#' `class_weights` multiply the cost of each class's rows (a vector with one value per level,
#' optionally named by the levels). Two classes give one weight vector whose positive side is the
#' second level; more classes are fitted one-vs-rest.
#' @noRd
.linear_svm_fit <- function(x, y, cost = 1, loss = c("l2", "l1"), bias = 1, eps = 0.1,
                            maxit = 1000L, class_weights = NULL, shrinking = TRUE,
                            seed = .kl_seed(), progress = NULL) {
  caller <- ".linear_svm_fit"
  x <- .heads_matrix(x, caller)
  y <- .heads_classes(y, nrow(x), caller)
  if (!is.character(loss) || length(loss) < 1L || anyNA(loss))
    stop(sprintf("%s: 'loss' must be \"l2\" or \"l1\"", caller), call. = FALSE)
  loss <- tryCatch(match.arg(loss, c("l2", "l1")), error = function(e)
    stop(sprintf("%s: 'loss' must be \"l2\" or \"l1\" (got %s)", caller,
                 paste0("\"", loss, "\"", collapse = ", ")), call. = FALSE))
  .check_number(cost, "cost", caller = caller, lower = 0, lower_open = TRUE)
  .check_number(bias, "bias", caller = caller)
  .check_number(eps, "eps", caller = caller, lower = 0, lower_open = TRUE)
  .check_number(maxit, "maxit", caller = caller, lower = 1, integer = TRUE)
  .check_flag(shrinking, "shrinking", caller)
  lev <- levels(y)
  K <- length(lev)
  if (!is.null(class_weights)) {
    if (!is.numeric(class_weights) || length(class_weights) != K)
      stop(sprintf("%s: 'class_weights' must be a numeric vector with one value per class (%d)",
                   caller, K), call. = FALSE)
    if (!is.null(names(class_weights))) {
      if (!setequal(names(class_weights), lev))
        stop(sprintf("%s: the names of 'class_weights' must be the levels of 'y' (%s)", caller,
                     paste0("'", lev, "'", collapse = ", ")), call. = FALSE)
      class_weights <- class_weights[lev]
    }
    if (any(!is.finite(class_weights)) || any(class_weights <= 0))
      stop(sprintf("%s: 'class_weights' must be positive and finite", caller), call. = FALSE)
    class_weights <- as.double(class_weights)
  }
  if (!is.numeric(seed) || length(seed) != 2L || anyNA(seed))
    stop(sprintf("%s: 'seed' must be two integers", caller), call. = FALSE)
  r <- .kl_core(caller, cpp_linear_svm_fit, x, as.integer(y), K, as.double(cost), loss,
                as.double(bias), as.double(eps), as.integer(maxit), class_weights,
                as.integer(seed), shrinking, progress, levels = lev)
  cols <- if (K == 2L) lev[2L] else lev
  W <- r$W
  dimnames(W) <- list(colnames(x), cols)
  b <- as.vector(r$b)
  names(b) <- cols
  list(W = W, b = b, levels = lev, loss = loss, cost = cost, bias = bias,
       iterations = as.vector(r$iterations), converged = as.vector(r$converged),
       primal = as.vector(r$primal), dual = as.vector(r$dual))
}

#' Predicted classes (a factor with the training levels) or decision values (n x 1 for two
#' classes, the column named by the positive level; n x K one-vs-rest values otherwise).
#' @noRd
.linear_svm_predict <- function(fit, x, type = c("class", "decision")) {
  caller <- ".linear_svm_predict"
  type <- match.arg(type)
  if (!is.list(fit) || is.null(fit$W) || is.null(fit$b) || is.null(fit$levels))
    stop(sprintf("%s: 'fit' must be a list returned by .linear_svm_fit()", caller),
         call. = FALSE)
  x <- .heads_matrix(x, caller)
  W <- fit$W
  if (ncol(x) != nrow(W))
    stop(sprintf("%s: 'x' has %d columns but the fit has %d weights per class", caller,
                 ncol(x), nrow(W)), call. = FALSE)
  storage.mode(W) <- "double"
  b <- as.double(fit$b)
  if (type == "decision") {
    D <- .kl_core(caller, cpp_linear_svm_decision, x, W, b)
    dimnames(D) <- list(rownames(x), colnames(W))
    return(D)
  }
  cls <- .kl_core(caller, cpp_linear_svm_predict, x, W, b)
  factor(fit$levels[cls], levels = fit$levels)
}
