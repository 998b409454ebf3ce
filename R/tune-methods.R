# Plots and summaries of cross-validation and tuning results, and of kernel ridge models.

#' Plot cross-validation and tuning results
#'
#' \code{plot.kl_tune} draws the cross-validated metric over the grid: for
#' one numeric parameter, the metric against it with \eqn{\pm}{+-} one
#' standard error (a log axis when the values span a factor of 10 or more);
#' for two numeric parameters forming a full grid (such as cost x gamma), a
#' heat map with the mean metric in each cell; otherwise the metric of every
#' grid point with its standard error. The chosen point is marked.
#' \code{plot.kl_cv} draws the metric of each fold with the mean and
#' \eqn{\pm}{+-} one standard error (\code{which = "folds"}), or the
#' out-of-fold predictions (\code{which = "predictions"}: predicted against
#' observed for regression, the confusion of predicted and true classes as a
#' mosaic for classification).
#'
#' @param x A \code{kl_tune} or \code{kl_cv} object.
#' @param which For \code{kl_cv}: \code{"folds"} or \code{"predictions"}.
#' @param ... Passed to the plotting function.
#' @return \code{x}, invisibly.
#' @examples
#' set.seed(1)
#' tn <- kl_tune(kernel_svm, Species ~ ., data = iris,
#'               grid = list(cost = 2^(0:4), gamma = 2^(-2:2)))
#' plot(tn)
#' tn1 <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4,
#'                grid = list(lambda = 10^(-3:1)))
#' plot(tn1)
#' cv <- kl_cv(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, lambda = 0.1)
#' plot(cv)
#' plot(cv, which = "predictions")
#' @name plot.kl_tune
#' @export
plot.kl_tune <- function(x, ...) {
  caller <- "plot.kl_tune()"
  res <- x$results
  lab <- x$labels
  params <- names(lab)
  varying <- params[vapply(params, function(p) length(unique(lab[[p]])) > 1L, NA)]
  if (!length(varying))
    stop(sprintf("%s: the grid has one point; there is nothing to plot", caller), call. = FALSE)
  numeric_p <- function(p) p %in% names(res) && is.numeric(res[[p]])
  best <- x$best_index
  main <- sprintf("%s: %d-fold cross-validation", x$learner, x$cv$folds)
  fixed <- setdiff(params, varying)
  sub <- if (length(fixed))
    paste(sprintf("%s = %s", fixed, vapply(fixed, function(p) lab[[p]][1L], "")), collapse = ", ")
  else NULL
  m <- res$mean
  se <- res$se
  log_of <- function(v) all(v > 0) && max(v) / min(v) >= 10
  if (length(varying) == 1L && numeric_p(varying)) {
    p <- varying
    v <- res[[p]]
    o <- order(v)
    lo <- m - se
    hi <- m + se
    graphics::plot(v[o], m[o], type = "b", pch = 20, log = if (log_of(v)) "x" else "",
                   ylim = range(c(lo, hi), na.rm = TRUE, finite = TRUE), xlab = p,
                   ylab = x$metric, main = main, sub = sub, ...)
    ok <- is.finite(lo) & is.finite(hi) & hi > lo
    if (any(ok))
      graphics::arrows(v[ok], lo[ok], v[ok], hi[ok], angle = 90, code = 3, length = 0.03)
    graphics::points(v[best], m[best], pch = 19, col = 2, cex = 1.4)
    return(invisible(x))
  }
  if (length(varying) == 2L && all(vapply(varying, numeric_p, NA))) {
    a <- res[[varying[1L]]]
    b <- res[[varying[2L]]]
    ua <- sort(unique(a))
    ub <- sort(unique(b))
    if (length(ua) * length(ub) == nrow(res) && !anyDuplicated(paste(a, b))) {
      M <- matrix(NA_real_, length(ua), length(ub))
      M[cbind(match(a, ua), match(b, ub))] <- m
      pal <- grDevices::hcl.colors(24L, "YlOrRd", rev = !isTRUE(x$maximize))
      graphics::image(seq_along(ua), seq_along(ub), M, col = pal, axes = FALSE,
                      xlab = varying[1L], ylab = varying[2L], main = main, sub = sub, ...)
      graphics::axis(1, at = seq_along(ua), labels = format(ua, digits = 3))
      graphics::axis(2, at = seq_along(ub), labels = format(ub, digits = 3), las = 1)
      graphics::box()
      graphics::text(rep(seq_along(ua), length(ub)), rep(seq_along(ub), each = length(ua)),
                     labels = format(signif(as.vector(M), 3)), cex = 0.7)
      graphics::rect(match(a[best], ua) - 0.5, match(b[best], ub) - 0.5,
                     match(a[best], ua) + 0.5, match(b[best], ub) + 0.5, border = 4, lwd = 2)
      return(invisible(x))
    }
  }
  G <- nrow(res)
  lo <- m - se
  hi <- m + se
  names_g <- apply(lab[, varying, drop = FALSE], 1L, function(r)
    paste(sprintf("%s=%s", varying, r), collapse = " "))
  graphics::plot(seq_len(G), m, pch = 20, xaxt = "n", xlab = "",
                 ylim = range(c(lo, hi), na.rm = TRUE, finite = TRUE), ylab = x$metric,
                 main = main, sub = sub, ...)
  ok <- is.finite(lo) & is.finite(hi) & hi > lo
  if (any(ok))
    graphics::arrows(which(ok), lo[ok], which(ok), hi[ok], angle = 90, code = 3, length = 0.03)
  graphics::axis(1, at = seq_len(G), labels = names_g, las = 2, cex.axis = 0.7)
  graphics::points(best, m[best], pch = 19, col = 2, cex = 1.4)
  invisible(x)
}

#' @rdname plot.kl_tune
#' @export
plot.kl_cv <- function(x, which = c("folds", "predictions"), ...) {
  which <- .kl_choice(which, c("folds", "predictions"), "which", "plot.kl_cv()")[1L]
  if (which == "folds") {
    f <- unname(x$fold_metrics)
    k <- length(f)
    graphics::plot(seq_len(k), f, pch = 19, xaxt = "n", xlab = "fold", ylab = x$metric,
                   ylim = range(c(f, x$mean - x$se, x$mean + x$se), finite = TRUE),
                   main = sprintf("%s: %d-fold cross-validation", x$learner, k), ...)
    graphics::axis(1, at = seq_len(k))
    graphics::abline(h = x$mean)
    graphics::abline(h = x$mean + c(-1, 1) * x$se, lty = 2)
    return(invisible(x))
  }
  pred <- x$predictions
  if (x$task == "regression") {
    graphics::plot(x$y, pred, xlab = "observed", ylab = "out-of-fold prediction",
                   main = sprintf("%s: out-of-fold predictions", x$learner), ...)
    graphics::abline(0, 1, lty = 2)
    return(invisible(x))
  }
  if (is.matrix(pred))
    pred <- factor(colnames(pred)[max.col(pred, ties.method = "first")], levels = levels(x$y))
  graphics::mosaicplot(table(truth = x$y, predicted = pred), color = TRUE,
                       main = sprintf("%s: out-of-fold classes", x$learner), ...)
  invisible(x)
}

#' Summarise a tuning run
#'
#' Every grid point with its cross-validated metric and standard error, best
#' first, and which points are within one standard error of the best (the
#' points a one-standard-error rule, as \code{glmnet}'s \code{lambda.1se},
#' would choose among).
#'
#' @param object A \code{kl_tune} object.
#' @param x A \code{summary.kl_tune} object.
#' @param n Rows to print.
#' @param digits Significant digits to print.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class \code{"summary.kl_tune"}
#'   with the sorted \code{table} (the parameters, \code{mean}, \code{se},
#'   \code{rank}, \code{within_1se}), \code{best}, and the settings.
#' @examples
#' set.seed(1)
#' tn <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4,
#'               grid = list(lambda = 10^(-3:1)))
#' summary(tn)
#' @export
summary.kl_tune <- function(object, ...) {
  tab <- object$labels
  tab$mean <- object$results$mean
  tab$se <- object$results$se
  sgn <- if (isTRUE(object$maximize)) -1 else 1
  ord <- order(sgn * tab$mean, seq_len(nrow(tab)), na.last = TRUE)
  b <- object$best_index
  se_b <- if (is.finite(tab$se[b])) tab$se[b] else 0
  bound <- tab$mean[b] + sgn * se_b   # the worst metric within one standard error of the best
  tab$within_1se <- is.finite(tab$mean) & sgn * tab$mean <= sgn * bound
  tab$rank <- match(seq_len(nrow(tab)), ord)
  tab <- tab[ord, , drop = FALSE]
  rownames(tab) <- NULL
  structure(list(learner = object$learner, metric = object$metric, maximize = object$maximize,
                 folds = object$cv$folds, rows = length(object$foldid), task = object$cv$task,
                 table = tab, best = object$best, bound = bound,
                 best_text = .kl_tune_point_text(object$labels, b),
                 refitted = !is.null(object$best_model)),
            class = "summary.kl_tune")
}

#' @rdname summary.kl_tune
#' @export
print.summary.kl_tune <- function(x, n = 20L, digits = max(3L, getOption("digits") - 3L),
                                  ...) {
  G <- nrow(x$table)
  cat(sprintf("Tuning %s: %d grid point(s), %d-fold cross-validation (%s, %d rows)\n",
              x$learner, G, x$folds, x$task, x$rows))
  cat(sprintf("metric: %s (%s is better)\n\n", x$metric,
              if (isTRUE(x$maximize)) "higher" else "lower"))
  print(utils::head(x$table, n), digits = digits, row.names = FALSE)
  if (G > n) cat(sprintf("... %d more grid point(s)\n", G - n))
  cat(sprintf("\nbest: %s; %d point(s) within one standard error of it%s\n",
              x$best_text,
              sum(x$table$within_1se),
              if (x$refitted) "; the best was refitted on all rows" else ""))
  invisible(x)
}

# Grid point i as "name = value, ..." from the labels print() shows (a kernel by its
# description).
.kl_tune_point_text <- function(labels, i)
  paste(names(labels), vapply(labels, function(col) col[[i]], ""), sep = " = ", collapse = ", ")

# The best parameters as "name = value, ..." (a numeric value formatted, an object by its
# class).
.kl_tune_best_text <- function(best, digits) {
  paste(sprintf("%s = %s", names(best), vapply(best, function(v)
    if (is.numeric(v) && length(v) == 1L) format(v, digits = digits) else class(v)[1L], "")),
    collapse = ", ")
}

#' Predict with a tuned model
#'
#' Predictions of the model that \code{\link{kl_tune}} refitted on all rows
#' with the best parameters (its \code{best_model}), as \code{predict()} on
#' a \code{caret} \code{train} object uses the final model.
#'
#' @param object A \code{kl_tune} object fitted with \code{refit = TRUE} (the
#'   default).
#' @param newdata New data, as for the \code{predict()} method of the tuned
#'   learner (missing: that method's own default, the training rows for
#'   kernlearn's learners).
#' @param ... Passed to that \code{predict()} method (such as \code{type}).
#' @return What the learner's \code{predict()} method returns.
#' @examples
#' set.seed(1)
#' tn <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4,
#'               grid = list(lambda = 10^(-3:1)))
#' predict(tn, mtcars[1:3, ])
#' @export
predict.kl_tune <- function(object, newdata, ...) {
  if (is.null(object$best_model))
    stop(sprintf("predict.kl_tune(): the tuning was run with refit = FALSE, so there is no model on all rows; refit the learner with the best parameters (%s), or tune again with refit = TRUE",
                 .kl_tune_best_text(object$best, 4L)), call. = FALSE)
  # dispatched from the caller's frame, so that methods defined there (as for a learner
  # written in a script) are found as they are for a call of predict() on the model itself
  # (a call of symbols bound in a child of that frame, so that an error's call stays short)
  env <- new.env(parent = parent.frame())
  assign(".kl_model", object$best_model, envir = env)
  args <- list(quote(.kl_model))
  if (!missing(newdata)) {
    assign(".kl_newdata", newdata, envir = env)
    args <- c(args, list(quote(.kl_newdata)))
  }
  dots <- list(...)
  for (i in seq_along(dots)) {
    nm <- paste0(".kl_arg", i)
    assign(nm, dots[[i]], envir = env)
    args <- c(args, stats::setNames(list(as.name(nm)), names(dots)[i]))
  }
  eval(as.call(c(list(quote(stats::predict)), args)), env)
}

#' Summarise a kernel ridge model
#'
#' @param object A \code{kernel_ridge} model.
#' @param x A \code{summary.kernel_ridge} object.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class
#'   \code{"summary.kernel_ridge"}: the model's size, kernel and penalty, the
#'   training error (misclassification rate, or mean squared error and
#'   \eqn{R^2}), and the range of the dual coefficients per output.
#' @examples
#' fit <- kernel_ridge(mpg ~ ., data = mtcars, lambda = 0.1)
#' summary(fit)
#' summary(kernel_ridge(Species ~ ., data = iris, lambda = 0.1))
#' @export
summary.kernel_ridge <- function(object, ...) {
  .no_dots(..., caller = "summary.kernel_ridge()")
  fit <- predict(object, type = if (object$task == "regression") "response" else "class")
  y <- object$y
  train <- if (is.null(y)) NULL
    else if (object$task == "regression")
      c(mse = mean((fit - y)^2), r_squared = 1 - sum((fit - y)^2) / sum((y - mean(y))^2))
    else c(error = mean(as.character(fit) != as.character(y)))
  alpha <- as.matrix(object$alpha)
  coefs <- data.frame(output = if (ncol(alpha) > 1L) object$levels else "response",
                      min = apply(alpha, 2L, min), max = apply(alpha, 2L, max),
                      bias = as.numeric(object$bias))
  structure(list(model = object, train = train, coefs = coefs,
                 fitted = if (object$task == "classification") table(fitted = fit, truth = y)),
            class = "summary.kernel_ridge")
}

#' @rdname summary.kernel_ridge
#' @export
print.summary.kernel_ridge <- function(x, ...) {
  print(x$model)
  if (!is.null(x$train)) {
    cat("\nTraining rows:", paste(sprintf("%s %s", names(x$train),
                                          format(signif(x$train, 4))), collapse = ", "), "\n")
    if (!is.null(x$fitted) && length(x$fitted)) {
      cat("\n")
      print(x$fitted)
    }
  }
  cat("\nDual coefficients:\n")
  print(x$coefs, row.names = FALSE, digits = 4)
  invisible(x)
}
