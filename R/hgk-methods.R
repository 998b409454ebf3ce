# hgk() models: predict(), learned_kernel(), print(), summary() and plot().

#' Predict with a learned hierarchical Gaussian kernel model
#'
#' @param object An \code{hgk} model.
#' @param newdata New data with the training columns (a data.frame for formula
#'   fits). Missing means the training data.
#' @param type \code{"class"} (default for classification), \code{"prob"}
#'   (\code{loss = "hinge"} with \code{probability = TRUE}: the averaged
#'   class probabilities), \code{"decision"} (the averaged decision values:
#'   least-squares outputs, one column per class for more than two classes;
#'   for the hinge loss, the pairwise SVM decisions) or \code{"response"}
#'   (default for regression: the prediction on the scale of the response,
#'   decision values clipped to \eqn{[-1, 1]} as in the paper, that is, to the
#'   training range, widened on each side by the fraction \code{object$clip}
#'   of it that cross-validation chose (0 by default; see \code{\link{hgk}})).
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, numeric vector or matrix with one row per row of
#'   \code{newdata}.
#'   Predicted classes are a factor with every level of the training response,
#'   levels without training rows included (as in e1071 and ranger; the model
#'   never predicts them), so that they compare with held-out labels.
#' @examples
#' set.seed(2)
#' fit <- hgk(Species ~ ., data = iris[rep(1:150, 2), ], depth = 1,
#'            control = hgk_control(maxit = 5))
#' head(predict(fit, iris, type = "decision"))
#' @export
predict.hgk <- function(object, newdata, type = NULL, threads = NULL, ...) {
  caller <- "predict.hgk()"
  .no_dots(..., caller = caller)
  prob_ok <- if (object$loss == "hinge" && isTRUE(object$probability)) TRUE
             else if (object$loss == "hinge") "fit with probability = TRUE"
             else "least-squares outputs are not probabilities; use type = \"decision\" or loss = \"hinge\" with probability = TRUE"
  type <- .kl_predict_type(type, object$task, caller, prob = prob_ok)
  threads <- .kl_threads(threads)
  x <- if (missing(newdata) || is.null(newdata)) object$x
       else .kl_newdata(object$spec, newdata, caller)
  lev <- object$levels
  if (nrow(x) == 0L) {
    if (type == "class") return(factor(character(), levels = .kl_all_levels(object)))
    if (type == "prob") return(matrix(numeric(), 0L, length(lev), dimnames = list(NULL, lev)))
    if (type == "decision" && length(lev) > 2L) {
      cn <- if (object$loss == "hinge") .svm_pair_names(lev) else lev
      return(matrix(numeric(), 0L, length(cn), dimnames = list(NULL, cn)))
    }
    return(numeric())
  }
  nm <- length(object$models)
  if (object$loss == "hinge") {
    if (type == "prob" || (type == "class" && isTRUE(object$probability))) {
      P <- Reduce(`+`, lapply(object$models, function(m)
        .hgk_model_decision(m, object$x, x, threads, "prob", caller))) / nm
      if (type == "prob") return(P)
      return(factor(lev[max.col(P, ties.method = "first")], levels = .kl_all_levels(object)))
    }
    D <- Reduce(`+`, lapply(object$models, function(m)
      as.matrix(.hgk_model_decision(m, object$x, x, threads, caller = caller)))) / nm
    if (type == "decision") {
      if (length(lev) == 2L) return(as.vector(D))
      colnames(D) <- .svm_pair_names(lev)
      return(D)
    }
    return(factor(lev[.kl_core(caller, cpp_ovo_vote, D, length(lev))],
                  levels = .kl_all_levels(object)))
  }
  D <- Reduce(`+`, lapply(object$models, function(m)
    .hgk_model_decision(m, object$x, x, threads, caller = caller))) / nm
  if (object$task == "regression") {
    if (type == "decision") return(as.vector(D))
    yr <- object$y_range
    # the decision values clipped to [-1, 1] (the training range) widened on each side by the
    # fraction object$clip of its width (0: the paper's clipping; Inf: none)
    w <- if (is.null(object[["clip"]])) 0 else object[["clip"]]
    D <- as.vector(D)
    if (is.finite(w)) D <- pmin(pmax(D, -1 - 2 * w), 1 + 2 * w)
    return(yr[1L] + (D + 1) / 2 * (yr[2L] - yr[1L]))
  }
  if (type == "class") return(.kl_decision_to_class(D, lev, .kl_all_levels(object)))
  if (ncol(D) == 1L) return(as.vector(D))
  colnames(D) <- lev
  D
}

#' The kernel a model learned
#'
#' @param object A fitted model that learns a kernel (\code{\link{hgk}}).
#' @param ... Passed to methods.
#' @return A kernel object, usable in \code{\link{kernel_matrix}},
#'   \code{\link{kernel_svm}} and \code{\link{kernel_ridge}}; it acts on
#'   inputs scaled as the model scaled them (\code{fit$x} holds the scaled
#'   training inputs).
#' @examples
#' set.seed(3)
#' x <- matrix(runif(900), 300, 3)
#' y <- factor(x[, 1] + x[, 2] > 1)
#' fit <- hgk(x, y, depth = 1, folds = 3, control = hgk_control(maxit = 5))
#' k <- learned_kernel(fit)
#' k
#' svm <- kernel_svm(fit$x, y, kernel = k)
#' mean(predict(svm, fit$x) == y)
#' @export
learned_kernel <- function(object, ...) UseMethod("learned_kernel")

#' @rdname learned_kernel
#' @param fold For \code{final = "average"}: \code{NULL} (the default) gives
#'   the kernel with the geometric mean of the fold models' weights and widths
#'   (one kernel summarising the average); a fold number gives that fold
#'   model's kernel.
#' @export
learned_kernel.hgk <- function(object, fold = NULL, ...) {
  .no_dots(..., caller = "learned_kernel()")
  ms <- object$models
  if (!is.null(fold)) {
    if (!is.numeric(fold) || length(fold) != 1L || !(fold %in% seq_along(ms)))
      stop(sprintf("learned_kernel(): 'fold' must be one of 1..%d", length(ms)), call. = FALSE)
    return(ms[[fold]]$kernel)
  }
  if (length(ms) == 1L) return(ms[[1L]]$kernel)
  w <- exp(Reduce(`+`, lapply(ms, function(m) log(abs(.hgk_params(m$kernel))))) / length(ms))
  k <- .hgk_set_params(ms[[1L]]$kernel, w)
  k$gamma <- exp(mean(log(vapply(ms, `[[`, 0, "gamma"))))
  k
}

#' @export
print.hgk <- function(x, ...) {
  what <- if (x$task == "classification")
    sprintf("%s classification, %d classes",
            if (x$loss == "hinge") "SVM (hinge loss)" else "least-squares SVM", length(x$levels))
  else if (x$loss == "svr") "epsilon-SVR regression (the tuned Gaussian kernel)"
  else "least-squares SVM regression"
  cat("Hierarchical Gaussian kernel learning: ", what, "\n", sep = "")
  cat(sprintf("  %d training rows, %d features (scaled to [0, 1])\n", x$n, ncol(x$x)))
  a <- x$architecture
  how <- if (isTRUE(x$selection$tuned))
    sprintf(" (the tuned Gaussian, chosen over the %d candidates by %d-fold CV)", nrow(x$cv),
            x$folds)
  else if (!is.null(x$cv) && nrow(x$cv) > 1L)
    sprintf(" (chosen by %d-fold CV among %d)", x$folds, nrow(x$cv)) else ""
  double <- identical(x$control$precision, "double")
  cat(sprintf("  kernel: %s%s, %s gradient%s\n", a$label, how, x$gradient,
              if (double) " (double-precision passes)" else ""))
  if (!is.null(x$selection))
    cat(sprintf("  against the Gaussian start: %s\n", x$selection$reason))
  if (identical(x$loss_arg, "auto") && x$task == "classification")
    cat(sprintf("  loss: %s, chosen by CV\n",
                if (x$loss == "hinge") "hinge (C-SVM)" else "least squares"))
  if (length(x$adapted))
    cat(sprintf("  for %d rows: %s\n", x$n, paste(x$adapted, collapse = "; ")))
  if (x$final == "average") {
    cat(sprintf("  predictor: average of the %d fold models", length(x$models)))
    e <- x$cv$error[x$cv$architecture == a$label & x$cv$loss == x$loss][1L]
    cat(sprintf("; CV error %s\n", format(signif(e, 4))))
  } else {
    m <- x$models[[1L]]
    if (x$loss == "svr")
      cat(sprintf("  predictor: epsilon-SVR refit on all rows, gamma %s, cost %s, epsilon %s on the response scaled to [-1, 1] (by %d-fold CV%s)\n",
                  format(signif(m$svm$kernel$gamma, 4)), format(signif(m$svm$cost, 4)),
                  format(signif(m$svm$epsilon, 3)), x$folds,
                  if (is.null(attr(x$svm_cv, "extended"))) ""
                  else paste(";", attr(x$svm_cv, "extended"))))
    else if (x$loss == "hinge" && !is.null(m$svm))
      cat(sprintf("  predictor: C-SVM refit on all rows, gamma %s, cost %s (by %d-fold CV%s)\n",
                  format(signif(m$svm$kernel$gamma, 4)), format(signif(m$svm$cost, 4)), x$folds,
                  if (is.null(attr(x$svm_cv, "extended"))) ""
                  else paste(";", attr(x$svm_cv, "extended"))))
    else
      cat(sprintf("  predictor: refit on all rows, gamma %s, lambda %s (by %d-fold CV%s)\n",
                  format(signif(m$gamma, 4)), format(signif(m$lambda, 4)), x$folds,
                  if (is.null(attr(x$refit_cv, "extended"))) ""
                  else paste(";", attr(x$refit_cv, "extended"))))
  }
  if (!is.null(x$clip_cv)) {
    cc <- x$clip_cv
    fmt <- function(v) format(signif(v, 3))
    how <- if (cc$margin == 0) "clipped to the training range of the response"
           else if (is.finite(cc$margin))
             sprintf("clipped to the training range of the response widened by %s%% of it on each side",
                     format(100 * cc$margin))
           else "not clipped to the training range of the response"
    e0 <- cc$table$error[cc$table$margin == 0]
    e1 <- cc$table$error[cc$table$margin == cc$margin]
    cat(sprintf("  predictions %s (by %d-fold CV, each fold clipped to its fitting rows' range: squared error %s%s)\n",
                how, cc$folds, fmt(e1),
                if (cc$margin == 0) "" else sprintf(", %s at the range itself", fmt(e0))))
  }
  r <- sort(x$relevance, decreasing = TRUE)
  if (length(r) > 1L && diff(range(r)) <= 1e-8 * max(abs(r)))
    cat(sprintf("  every input weighs the same (%s): the kernel's weights were not learned apart\n",
                format(signif(r[[1L]], 3))))
  else
    cat("  most relevant inputs: ", paste(sprintf("%s %s", names(utils::head(r, 5L)),
                                                    format(signif(utils::head(r, 5L), 3))),
                                            collapse = ", "), "\n", sep = "")
  invisible(x)
}

#' Summarise a learned hierarchical Gaussian kernel model
#'
#' @param object An \code{hgk} model.
#' @param x A \code{summary.hgk} object.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class \code{"summary.hgk"}:
#'   the cross-validation table of the candidate kernels and losses, the
#'   comparison with the Gaussian start, one row per model of the
#'   predictor (width, penalty, optimisation steps, reshuffles, why it stopped,
#'   seconds) and the input relevance.
#' @examples
#' set.seed(4)
#' fit <- hgk(Species ~ ., data = iris[rep(1:150, 2), ], depth = 1,
#'            control = hgk_control(maxit = 5))
#' summary(fit)
#' @export
summary.hgk <- function(object, ...) {
  models <- data.frame(
    model = seq_along(object$models),
    rows = vapply(object$models, function(m) length(m$rows), 0L),
    gamma = vapply(object$models, `[[`, 0, "gamma"),
    lambda = vapply(object$models, `[[`, 0, "lambda"),
    steps = vapply(object$models, function(m) m$info$steps, 0L),
    reshuffles = vapply(object$models, function(m) m$info$reshuffles, 0L),
    stop = vapply(object$models, function(m) m$info$stop, ""),
    seconds = vapply(object$models, function(m) m$info$seconds, 0))
  structure(list(model = object, cv = object$cv, models = models,
                 relevance = sort(object$relevance, decreasing = TRUE)),
            class = "summary.hgk")
}

#' @rdname summary.hgk
#' @export
print.summary.hgk <- function(x, ...) {
  print(x$model)
  if (!is.null(x$cv)) {
    cat(sprintf("\nCandidate kernels by %d-fold CV (%s):\n", x$model$folds,
                attr(x$cv, "criterion")))
    print(x$cv, row.names = FALSE, digits = 4)
  }
  cat("\nModels of the predictor:\n")
  print(x$models, row.names = FALSE, digits = 4)
  cat("\nInput relevance (effective weight on the kernel):\n")
  print(signif(x$relevance, 3))
  cat(sprintf("\nTotal time: %.1f s\n", x$model$seconds))
  invisible(x)
}

#' Plot a learned hierarchical Gaussian kernel model
#'
#' \code{which = "trace"} draws the optimisation of each model of the
#' predictor: the objective (least-squares risk on \eqn{D_2}) and the
#' early-stopping error on \eqn{D_3} after every move (gradient steps,
#' annealing proposals, reshuffles), with accepted annealing proposals
#' marked. \code{which = "relevance"} draws the effective weight of each input
#' on the learned kernel: the square root of the curvature of the kernel's
#' exponent along that coordinate (at depth 1, \eqn{\sqrt{\gamma} |w_i|}),
#' averaged over the models; inputs the kernel ignores have relevance near 0.
#'
#' @param x An \code{hgk} model.
#' @param which \code{"trace"} or \code{"relevance"}.
#' @param ... Passed to the plotting function.
#' @return \code{x}, invisibly.
#' @examples
#' set.seed(5)
#' x <- matrix(runif(1200), 300, 4)
#' y <- sin(4 * x[, 1]) + x[, 2] + rnorm(300, sd = 0.05)
#' fit <- hgk(x, y, depth = 1, folds = 3, control = hgk_control(maxit = 10))
#' plot(fit)
#' plot(fit, which = "relevance")
#' @export
plot.hgk <- function(x, which = c("trace", "relevance"), ...) {
  which <- .kl_choice(which, c("trace", "relevance"), "which", "plot.hgk()")[1L]
  if (which == "relevance") {
    r <- sort(x$relevance, decreasing = TRUE)
    graphics::barplot(r, las = 2, ylab = "effective weight", main = "Input relevance", ...)
    return(invisible(x))
  }
  trs <- lapply(x$models, function(m) m$trace[m$trace$kind != "final selection", ])
  if (all(vapply(trs, nrow, 0L) <= 1L))
    stop(if (isFALSE(x$architecture$learned))
           paste("plot.hgk(): the model's kernel is the Gaussian start, not learned (the",
                 "cross-validation chose it over the learned kernels; see summary());",
                 "there is no trace to draw")
         else "plot.hgk(): the weights were not optimised (maxit = 0); there is no trace to draw",
         call. = FALSE)
  yr <- range(unlist(lapply(trs, function(t) c(t$risk, t$error))), na.rm = TRUE)
  xr <- c(1, max(vapply(trs, nrow, 0L)))
  graphics::plot(xr, yr, type = "n", xlab = "move (gradient step or annealing proposal)",
                 ylab = "mean squared error", main = sprintf("hgk: %s", x$architecture$label), ...)
  cols <- grDevices::hcl.colors(max(2L, length(trs)), "Dark 3")
  for (i in seq_along(trs)) {
    t <- trs[[i]]
    s <- seq_len(nrow(t))
    graphics::lines(s, t$risk, col = cols[i], lty = 1)
    graphics::lines(s, t$error, col = cols[i], lty = 2)
    acc <- t$kind == "annealing" & t$accepted
    if (any(acc)) graphics::points(s[acc], t$risk[acc], col = cols[i], pch = 1)
    rs <- t$kind == "reshuffle"
    if (any(rs)) graphics::abline(v = s[rs], col = cols[i], lty = 3)
  }
  graphics::legend("topright", bty = "n",
                   legend = c("objective (D2)", "early-stopping error (D3)",
                              "accepted annealing move", "reshuffle"),
                   lty = c(1, 2, NA, 3), pch = c(NA, NA, 1, NA))
  invisible(x)
}
