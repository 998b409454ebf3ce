# gem() models: predict(), features(), print(), summary() and plot(), and the feature maps of
# new data they share with the fitted values.

# New data prepared as the fit's input: scaled, without the columns the fit left out.
.gem_newdata <- function(object, newdata, caller) {
  x <- .kl_newdata(object$spec, newdata, caller)
  if (is.null(object$active)) x else x[, object$active, drop = FALSE]
}

# The fitted classes. A calibrated least-squares head keeps its training rows' final scores,
# which are exactly what predict() computes for those rows: the classes come from them, without
# a prediction pass. The scores are not kept in the model.
.gem_keep_fitted <- function(fit, fitted, newdata, y, threads) {
  have <- all(vapply(fit$members, function(m) !is.null(m$scores), logical(1)))
  if (fitted && have) {
    lev <- fit$levels
    P <- 0
    for (m in fit$members) P <- P + .kl_core("gem()", cpp_simplex_project, m$scores)
    P <- P / length(fit$members)
    fit$fitted.values <- factor(lev[max.col(P, ties.method = "first")],
                                levels = .kl_all_levels(fit))
  }
  for (m in seq_along(fit$members)) fit$members[[m]]$scores <- NULL
  if (fitted && !have) fit <- .kl_keep_fitted(fit, fitted, newdata, y, threads)
  fit
}

.gem_base_code <- function(nl) if (nl == "smooth_sqrt") 0L else 1L

.gem_layer_map <- function(z, L, threads, standardize = FALSE, center = NULL, scale = NULL,
                           rmap = NULL, caller = "gem()") {
  .kl_core(caller, cpp_gem_features, z, L$V, .gem_base_code(L$nonlinearity), L$degree,
           L$keep_input, L$ones, standardize, center, scale, threads, NULL, rmap$W, rmap$b)
}

# Scores of a member's calibrated least-squares head for prepared (scaled) inputs x. A head
# fitted on single-precision features predicts from features built the same way.
.gem_member_cls_scores <- function(mem, x, threads, standardize, caller = "gem()") {
  if (!isTRUE(mem$head$single)) {
    Z <- .gem_member_features(mem, x, threads, standardize, caller)
    return(.kl_core(caller, cpp_cls_scores, Z, mem$head$W0, mem$head$link, mem$head$delta,
                    threads))
  }
  li <- .gem_last_input(mem, x, threads, caller)
  L <- mem$layers[[length(mem$layers)]]
  .kl_core(caller, cpp_gem_cls_scores_single, li$z, L$V, .gem_base_code(L$nonlinearity),
           L$degree, L$keep_input, L$ones, standardize, mem$center, mem$scale, mem$head$W0,
           mem$head$link, mem$head$delta, threads, li$rmap$W, li$rmap$b)
}

# What the last layer of a member receives for prepared (scaled) inputs x: the representation
# of the layers before it, and the random Fourier map still to apply (NULL once applied).
.gem_last_input <- function(mem, x, threads, caller = "gem()") {
  z <- x
  pre <- mem$rff
  for (l in seq_len(length(mem$layers) - 1L)) {
    z <- .gem_layer_map(z, mem$layers[[l]], threads, rmap = pre, caller = caller)
    pre <- NULL
  }
  list(z = z, rmap = pre)
}

# The final features of one member for prepared (scaled) inputs x.
.gem_member_features <- function(mem, x, threads, standardize, caller = "gem()") {
  li <- .gem_last_input(mem, x, threads, caller)
  Z <- .gem_layer_map(li$z, mem$layers[[length(mem$layers)]], threads,
                      standardize = standardize, center = mem$center, scale = mem$scale,
                      rmap = li$rmap, caller = caller)
  attr(Z, "center") <- NULL
  attr(Z, "scale") <- NULL
  Z
}

.gem_feature_names <- function(mem, input_names) {
  L <- mem$layers[[length(mem$layers)]]
  lev_pairs <- if (nrow(L$pairs)) paste0(L$pairs[L$pair_of, 1L], "|", L$pairs[L$pair_of, 2L])
               else character()
  rank <- if (length(L$pair_of)) stats::ave(L$pair_of, L$pair_of, FUN = seq_along) else integer()
  dirs <- paste0(lev_pairs, "#", rank)
  inp <- if (L$keep_input) {
    if (length(mem$layers) > 1L || !is.null(mem$rff)) paste0("z", seq_len(nrow(L$V)))
    else input_names
  } else character()
  raw <- c(inp, paste0(dirs, "+"), paste0(dirs, "-"))
  nm <- raw
  if (L$degree > 1L) for (a in 2:L$degree) nm <- c(nm, paste0(raw, "^", a))
  if (L$ones) nm <- c("(one)", nm)
  nm
}

#' Features learned by a model
#'
#' The representation a feature-learning model feeds to its final predictor,
#' for new data.
#'
#' @param object A fitted model with a learned representation (\code{\link{gem}},
#'   \code{\link{dikl}}).
#' @param newdata New data, in the form the model was fitted with.
#' @param ... Further arguments of the methods.
#' @return A numeric matrix with one row per row of \code{newdata}.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1)
#' f <- features(fit, iris[1:5, ])
#' dim(f)
#' @export
features <- function(object, ...) UseMethod("features")

#' @rdname features
#' @param member For an ensemble of GEM models, which member's features.
#' @param threads Number of threads.
#' @export
features.gem <- function(object, newdata, member = 1, threads = NULL, ...) {
  caller <- "features()"
  .no_dots(..., caller = caller)
  .check_number(member, "member", lower = 1, upper = length(object$members), integer = TRUE)
  x <- .gem_newdata(object, newdata, caller)
  mem <- object$members[[member]]
  Z <- .gem_member_features(mem, x, .kl_threads(threads), object$params$standardize, caller)
  colnames(Z) <- .gem_feature_names(mem, colnames(x))
  rownames(Z) <- rownames(newdata)
  Z
}

#' Predict with a GEM model
#'
#' @param object A \code{gem} model.
#' @param newdata New data, in the form the model was fitted with. Without it,
#'   the classes of the training rows kept by \code{fitted = TRUE}.
#' @param type \code{"class"} (a factor), \code{"prob"} (a matrix of class
#'   probabilities, rows summing to 1; for an ensemble the normalised
#'   geometric mean of the members' probabilities; with \code{head = "cls"},
#'   the scores projected onto the simplex, averaged) or \code{"decision"}
#'   (the linear predictors of the logistic regression, or the final scores of
#'   the calibrated least squares, averaged over an ensemble: a matrix with one
#'   column per class; for two classes a vector, the second class's value
#'   minus the first's, positive for the second level).
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, or a matrix with one column per class.
#'   Predicted classes are a factor with every level of the training response,
#'   levels without training rows included (as in e1071 and ranger; the model
#'   never predicts them), so that they compare with held-out labels.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1)
#' head(predict(fit, iris, type = "prob"))
#' @export
predict.gem <- function(object, newdata, type = "class", threads = NULL, ...) {
  caller <- "predict.gem()"
  .no_dots(..., caller = caller)
  type <- .kl_predict_type(type, "classification", caller)
  if (missing(newdata) || is.null(newdata)) return(.kl_predict_fitted(object, type, caller))
  threads <- .kl_threads(threads)
  x <- .gem_newdata(object, newdata, caller)
  lev <- object$levels
  n <- nrow(x)
  logp <- matrix(0, n, length(lev))
  if (identical(object$params$head, "cls")) {
    # Calibrated least squares: scores replayed step by step; probabilities are the scores
    # projected onto the simplex, averaged over an ensemble.
    for (mem in object$members) {
      S <- .gem_member_cls_scores(mem, x, threads, object$params$standardize, caller)
      logp <- logp + if (type == "decision") S else .kl_core(caller, cpp_simplex_project, S)
    }
    logp <- logp / length(object$members)
    dimnames(logp) <- list(rownames(newdata), lev)
    if (type == "decision") return(.kl_decision_output(logp, lev))
    if (type != "class") return(logp)
    return(factor(lev[max.col(logp, ties.method = "first")], levels = .kl_all_levels(object)))
  }
  for (mem in object$members) {
    Z <- .gem_member_features(mem, x, threads, object$params$standardize, caller)
    eta <- .kl_core(caller, cpp_linear_predictor, Z, mem$head$coefficients, mem$head$intercept,
                    threads)
    if (type == "decision") {
      logp <- logp + eta
    } else {
      mx <- apply(eta, 1L, max)
      lse <- mx + log(rowSums(exp(eta - mx)))
      logp <- logp + (eta - lse)
    }
  }
  logp <- logp / length(object$members)
  dimnames(logp) <- list(rownames(newdata), lev)
  if (type == "decision") return(.kl_decision_output(logp, lev))
  mx <- apply(logp, 1L, max)
  P <- exp(logp - mx)
  P <- P / rowSums(P)
  if (type == "prob") return(P)
  factor(lev[max.col(P, ties.method = "first")], levels = .kl_all_levels(object))
}

#' @export
print.gem <- function(x, ...) {
  mem <- x$members[[1L]]
  L <- mem$layers[[length(mem$layers)]]
  cat(sprintf("GEM classifier (%s%s%s): %d classes, %d training rows\n",
              if (x$params$depth == 2) "deep, 2 layers" else "1 layer",
              if (!is.null(mem$rff)) sprintf(", on %d random Fourier features", ncol(mem$rff$W)) else "",
              if (length(x$members) > 1L) sprintf(", ensemble of %d", length(x$members)) else "",
              length(x$levels), x$n))
  for (l in seq_along(mem$layers)) {
    Ll <- mem$layers[[l]]
    cat(sprintf("  layer %d: %d class pairs, %d eigenvectors kept (ridge %s %s, top %d, threshold %s), %s, degree %d%s\n",
                l, nrow(Ll$pairs), ncol(Ll$V), format(Ll$ridge), Ll$ridge_type, Ll$top,
                format(Ll$threshold), Ll$nonlinearity, Ll$degree,
                if (Ll$keep_input) ", input kept" else ""))
  }
  if (!is.null(x$fallback))
    cat(sprintf("  %s: the classifier works on the inputs alone (pairs = \"none\"); lower 'threshold' to use generalized eigenvectors\n",
                x$fallback))
  if (!is.null(x$selection))
    cat(sprintf("  chosen by validation: %s\n", x$selection$reason))
  rs <- x$params$ridge_search
  if (!is.null(rs))
    cat(sprintf("  ridge %s chosen from %s by the held-out %s at each one's best lambda%s: %s\n",
                format(x$params$ridge), paste(format(rs$ridge), collapse = ", "),
                if (identical(x$params$head, "cls")) "Brier score" else "error rate",
                .gem_compare_note(rs, x$n),
                paste(ifelse(is.na(rs$loss), "not fitted",
                             if (identical(x$params$head, "cls")) sprintf("%.4f", rs$loss) else
                               sprintf("%.2f%%", 100 * rs$error)), collapse = ", ")))
  if (!is.null(rs$failed) && any(!is.na(rs$failed))) {
    for (i in which(!is.na(rs$failed)))
      cat(sprintf("    ridge %s not fitted: %s\n", format(rs$ridge[i]),
                  sub("^gem\\(\\): ", "", rs$failed[i])))
  }
  cat(sprintf("  %s: %d features, lambda %s%s, %d %s%s\n",
              if (identical(x$params$head, "cls")) "calibrated least squares" else "logistic regression",
              mem$p, format(signif(x$params$lambda, 4)), .gem_search_note(x),
              mem$head$iterations,
              if (identical(x$params$head, "cls")) "steps" else "iterations",
              if (isTRUE(mem$head$converged)) "" else " (not converged)"))
  invisible(x)
}

# The settings of the ridge comparison, for print(): the cap on the directions and the rows.
.gem_compare_note <- function(rs, n) {
  parts <- c(if (isTRUE(attr(rs, "directions") > 0))
               sprintf("at most %d directions per pair", attr(rs, "directions")),
             if (!is.null(attr(rs, "rows")) && attr(rs, "rows") < n)
               sprintf("on %d of the %d rows", attr(rs, "rows"), n))
  if (length(parts)) sprintf(" (%s)", paste(parts, collapse = ", ")) else ""
}

# How the penalty was set, for print(): chosen by validation (values tried, rows held out), or
# the fallback for too few rows.
.gem_search_note <- function(x) {
  if (!isTRUE(x$params$lambda_chosen)) return("")
  s <- x$members[[1L]]$head$search
  if (is.null(s)) return(" (too few rows to validate: the default)")
  lam <- if (length(x$members) > 1L) " (first member)" else ""
  how <- if (identical(x$params$head, "cls")) "the squared error of the probabilities" else "the error"
  tried <- s[order(s$lambda), , drop = FALSE]
  lams <- vapply(signif(tried$lambda, 6), format, "")
  vals <- if (identical(x$params$head, "cls"))
    sprintf("%s -> %.4f (%.2f%%)", lams, tried$loss, 100 * tried$error) else
    sprintf("%s -> %.2f%%", lams, 100 * tried$error)
  sample <- if (is.null(attr(s, "sample_rows"))) "" else
    sprintf(" of a sample of %d rows", as.integer(attr(s, "sample_rows")))
  sprintf(" (chosen%s from %d values by %s on %d held-out rows%s, fitted on %d: %s)", lam,
          nrow(s), how, as.integer(attr(s, "validation_rows")), sample,
          as.integer(attr(s, "train_rows")), paste(vals, collapse = ", "))
}

#' @export
summary.gem <- function(object, ...) {
  mem <- object$members[[1L]]
  L <- mem$layers[[length(mem$layers)]]
  lev <- object$levels
  pairs <- data.frame(numerator = lev[L$pairs[, 1L]], denominator = lev[L$pairs[, 2L]],
                      kept = tabulate(L$pair_of, nrow(L$pairs)),
                      largest = vapply(L$spectra, function(s) if (length(s)) s[1L] else NA_real_,
                                       numeric(1)),
                      stringsAsFactors = FALSE)
  structure(list(model = object, pairs = pairs), class = "summary.gem")
}

#' @export
print.summary.gem <- function(x, ...) {
  print(x$model)
  cat("\nEigenvectors kept per class pair (last layer of the first member):\n")
  print(utils::head(x$pairs, 20L), row.names = FALSE)
  if (nrow(x$pairs) > 20L) cat(sprintf("  ... and %d more pairs\n", nrow(x$pairs) - 20L))
  invisible(x)
}

#' Plot a GEM model
#'
#' Draws the generalized eigenvalues of every class pair (the paper's
#' guide to feature selection), or the eigenvectors as images when the inputs
#' are images (the paper's Figure 1 on MNIST).
#'
#' @param x A \code{gem} model.
#' @param type \code{"spectrum"} or \code{"vectors"}.
#' @param pairs Which class pairs to draw: row numbers of \code{summary(x)$pairs}
#'   or a two-column character matrix of levels; by default all (spectrum) or
#'   the first five (vectors).
#' @param image_dim For \code{type = "vectors"}: the image size, e.g.
#'   \code{c(28, 28)}; the number of inputs must equal its product.
#' @param n Eigenvectors drawn per pair.
#' @param layer Which layer (deep GEM).
#' @param member Which ensemble member.
#' @param ... Passed to the plotting functions.
#' @return \code{x}, invisibly.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 4, threshold = 1)
#' plot(fit)
#' @export
plot.gem <- function(x, type = c("spectrum", "vectors"), pairs = NULL, image_dim = NULL, n = 5,
                     layer = NULL, member = 1, ...) {
  caller <- "plot.gem()"
  type <- .kl_choice(type, c("spectrum", "vectors"), "type", caller)
  .check_number(member, "member", lower = 1, upper = length(x$members), integer = TRUE)
  mem <- x$members[[member]]
  if (is.null(layer)) layer <- length(mem$layers)
  .check_number(layer, "layer", lower = 1, upper = length(mem$layers), integer = TRUE)
  L <- mem$layers[[layer]]
  lev <- x$levels
  np <- nrow(L$pairs)
  if (np == 0L) stop(sprintf("%s: the model has no class pairs", caller), call. = FALSE)
  if (is.null(pairs)) {
    sel <- if (type == "spectrum") seq_len(np) else seq_len(min(5L, np))
  } else if (is.character(pairs) && is.matrix(pairs) && ncol(pairs) == 2L) {
    key <- paste(lev[L$pairs[, 1L]], lev[L$pairs[, 2L]], sep = "\r")
    sel <- match(paste(pairs[, 1L], pairs[, 2L], sep = "\r"), key)
    if (anyNA(sel))
      stop(sprintf("%s: pair(s) %s are not in the model", caller,
                   .name_list(paste(pairs[is.na(sel), 1L], pairs[is.na(sel), 2L], sep = "/"))),
           call. = FALSE)
  } else {
    if (!is.numeric(pairs) || anyNA(pairs) || any(pairs < 1 | pairs > np | pairs != round(pairs)))
      stop(sprintf("%s: 'pairs' must be row numbers between 1 and %d, or a two-column matrix of levels",
                   caller, np), call. = FALSE)
    sel <- as.integer(pairs)
  }
  lab <- paste(lev[L$pairs[sel, 1L]], lev[L$pairs[sel, 2L]], sep = " / ")
  if (type == "spectrum") {
    sp <- L$spectra[sel]
    len <- max(lengths(sp))
    M <- vapply(sp, function(s) c(s, rep(NA_real_, len - length(s))), numeric(len))
    M <- matrix(M, nrow = len)
    pos <- M
    pos[!is.finite(pos) | pos <= 0] <- NA
    graphics::matplot(seq_len(len), pos, type = "l", lty = 1, log = "y",
                      col = grDevices::hcl.colors(max(2L, ncol(M)), "Dark 3"),
                      xlab = "eigenvector rank", ylab = "generalized eigenvalue",
                      main = sprintf("GEM spectra, layer %d (%d pairs)", layer, length(sel)), ...)
    if (L$threshold > 0) graphics::abline(h = L$threshold, lty = 2, col = "grey40")
    if (length(sel) <= 10L)
      graphics::legend("topright", legend = lab, lty = 1, bty = "n", cex = 0.8,
                       col = grDevices::hcl.colors(max(2L, ncol(M)), "Dark 3")[seq_along(sel)])
    return(invisible(x))
  }
  if (is.null(image_dim) || !is.numeric(image_dim) || length(image_dim) != 2L ||
      prod(image_dim) != nrow(L$V))
    stop(sprintf("%s: type = \"vectors\" needs 'image_dim' with prod(image_dim) equal to the layer's input dimension (%d)",
                 caller, nrow(L$V)), call. = FALSE)
  .check_number(n, "n", lower = 1, upper = 50, integer = TRUE)
  op <- graphics::par(mfrow = c(length(sel), n), mar = c(0.2, 0.2, 1.2, 0.2))
  on.exit(graphics::par(op))
  pal <- grDevices::hcl.colors(64L, "Blue-Red 3")
  for (q in seq_along(sel)) {
    cols <- which(L$pair_of == sel[q])
    for (r in seq_len(n)) {
      if (r > length(cols)) {
        graphics::plot.new()
        next
      }
      v <- L$V[, cols[r]]
      lim <- max(abs(v))
      img <- matrix(v, image_dim[1L], image_dim[2L], byrow = TRUE)
      graphics::image(t(img[nrow(img):1L, , drop = FALSE]), col = pal, zlim = c(-lim, lim),
                      axes = FALSE, main = if (r == 1L) lab[q] else "", cex.main = 0.8, ...)
    }
  }
  invisible(x)
}
