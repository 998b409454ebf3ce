#' Plot a kernel machine's predictions over two of its inputs
#'
#' Draws the predictions of a \code{\link{kernel_svm}} or \code{\link{kernel_ridge}}
#' model on a grid over two of its input columns, the other inputs held fixed
#' (a slice of the input space, as \code{e1071}'s \code{plot.svm} draws it),
#' with the rows of \code{data} on top. For classification the predicted
#' classes are coloured regions and the rows are drawn in the colour of their
#' class when \code{data} holds the response (the model's formula names it),
#' else as open circles. For regression the predicted values are a colour
#' image with contour lines, and the rows are points.
#'
#' @param x A model from \code{kernel_svm()} or \code{kernel_ridge()} (not one
#'   with a precomputed kernel, nor a localized model: see
#'   \code{\link{plot.kl_localized}}).
#' @param data A data.frame (or, for a model fitted on a matrix, a matrix)
#'   with the model's input columns: the rows drawn, and the ranges of the
#'   grid.
#' @param formula \code{v ~ h}: the input on the vertical axis and the one on
#'   the horizontal axis, both numeric columns of \code{data}. By default the
#'   first two numeric input columns (the second on the vertical axis).
#' @param slice A named list of values for the other inputs. Those not given
#'   are held at their median in \code{data} (numeric columns) or at their
#'   most frequent value (other columns).
#' @param grid Grid points per axis (at least 2).
#' @param col Colours: one per class for classification (default
#'   \code{grDevices::hcl.colors(k, "Set 2")}), a palette of at least two
#'   colours for the image of a regression (default
#'   \code{grDevices::hcl.colors(32, "YlGnBu", rev = TRUE)}).
#' @param ... Passed to \code{graphics::plot.default()} (for example
#'   \code{main}).
#' @return Invisibly, a list with the grid (\code{x}, \code{y}: the values of
#'   the horizontal and vertical input), the predictions on it (\code{z}, a
#'   \code{length(x)} by \code{length(y)} matrix: classes as a factor's codes
#'   with \code{levels}, or values), and the \code{slice} the other inputs were
#'   held at.
#' @seealso \code{\link{predict.kernel_svm}}, \code{\link{predict.kernel_ridge}}
#' @examples
#' fit <- kernel_svm(Species ~ ., data = iris, gamma = 2, cost = 4)
#' plot(fit, iris, Petal.Width ~ Petal.Length,
#'      slice = list(Sepal.Width = 3, Sepal.Length = 5.8))
#' reg <- kernel_ridge(mpg ~ wt + hp, data = mtcars, lambda = 0.5)
#' s <- plot(reg, mtcars, grid = 30)
#' range(s$z)
#' @name plot.kernel_svm
#' @export
plot.kernel_svm <- function(x, data, formula = NULL, slice = list(), grid = 60, col = NULL,
                            ...) {
  .kl_plot_slice(x, data, formula, slice, grid, col, "plot.kernel_svm()", ...)
}

#' @rdname plot.kernel_svm
#' @export
plot.kernel_ridge <- function(x, data, formula = NULL, slice = list(), grid = 60, col = NULL,
                              ...) {
  .kl_plot_slice(x, data, formula, slice, grid, col, "plot.kernel_ridge()", ...)
}

.kl_plot_slice <- function(model, data, formula, slice, grid, col, caller, ...) {
  spec <- model$spec
  if (is.null(spec) || is.null(spec$columns))
    stop(sprintf("%s: the model was fitted on a precomputed kernel; it has no inputs to draw",
                 caller), call. = FALSE)
  if (missing(data) || is.null(data))
    stop(sprintf("%s: 'data' is required: the rows to draw, with the model's input columns",
                 caller), call. = FALSE)
  if (is.matrix(data)) data <- as.data.frame(data)
  if (!is.data.frame(data))
    stop(sprintf("%s: 'data' must be a data.frame or matrix (got %s)", caller,
                 class(data)[1L]), call. = FALSE)
  if (nrow(data) == 0L) stop(sprintf("%s: 'data' has no rows", caller), call. = FALSE)
  cols <- spec$columns
  miss <- setdiff(cols, names(data))
  if (length(miss))
    stop(sprintf("%s: 'data' lacks the model's input column(s) %s", caller, .name_list(miss)),
         call. = FALSE)
  .check_number(grid, "grid", lower = 2, upper = 1000, integer = TRUE, caller = caller)
  grid <- as.integer(grid)
  numeric_col <- vapply(cols, function(v) is.numeric(data[[v]]), logical(1))
  if (is.null(formula)) {
    if (sum(numeric_col) < 2L)
      stop(sprintf("%s: the model has fewer than two numeric inputs; there is no plane to draw",
                   caller), call. = FALSE)
    axes <- cols[numeric_col][1:2]
  } else {
    if (!inherits(formula, "formula") || length(formula) != 3L)
      stop(sprintf("%s: 'formula' must be of the form vertical ~ horizontal", caller),
           call. = FALSE)
    v <- all.vars(formula[[2L]])
    h <- all.vars(formula[[3L]])
    if (length(v) != 1L || length(h) != 1L || v == h)
      stop(sprintf("%s: 'formula' must name two different inputs, vertical ~ horizontal",
                   caller), call. = FALSE)
    axes <- c(h, v)
    bad <- setdiff(axes, cols)
    if (length(bad))
      stop(sprintf("%s: %s is not an input of the model (its inputs: %s)", caller,
                   .name_list(bad), .name_list(cols)), call. = FALSE)
    nonnum <- axes[!numeric_col[axes]]
    if (length(nonnum))
      stop(sprintf("%s: input %s is not numeric; the axes need numeric inputs", caller,
                   .name_list(nonnum)), call. = FALSE)
  }
  if (!is.list(slice) || (length(slice) && is.null(names(slice))))
    stop(sprintf("%s: 'slice' must be a named list of input values", caller), call. = FALSE)
  unknown <- setdiff(names(slice), setdiff(cols, axes))
  if (length(unknown))
    stop(sprintf("%s: 'slice' names %s, not an input held fixed (those are: %s)", caller,
                 .name_list(unknown), .name_list(setdiff(cols, axes))), call. = FALSE)
  held <- lapply(stats::setNames(setdiff(cols, axes), setdiff(cols, axes)), function(v) {
    if (!is.null(slice[[v]])) {
      s <- slice[[v]]
      if (length(s) != 1L)
        stop(sprintf("%s: 'slice$%s' must be a single value", caller, v), call. = FALSE)
      return(if (is.factor(data[[v]])) factor(s, levels = levels(data[[v]])) else s)
    }
    d <- data[[v]]
    if (is.numeric(d)) return(stats::median(d, na.rm = TRUE))
    tab <- table(d)
    m <- names(tab)[which.max(tab)]
    if (is.factor(d)) factor(m, levels = levels(d)) else if (is.logical(d)) as.logical(m) else m
  })
  rng <- lapply(axes, function(a) range(data[[a]], na.rm = TRUE, finite = TRUE))
  gx <- seq(rng[[1L]][1L], rng[[1L]][2L], length.out = grid)
  gy <- seq(rng[[2L]][1L], rng[[2L]][2L], length.out = grid)
  g <- data[rep(1L, grid * grid), cols, drop = FALSE]
  rownames(g) <- NULL
  for (v in names(held)) g[[v]] <- rep(held[[v]], length.out = nrow(g))
  g[[axes[1L]]] <- rep(gx, times = grid)
  g[[axes[2L]]] <- rep(gy, each = grid)
  if (identical(spec$kind, "matrix")) g <- as.matrix(g)
  p <- predict(model, g)
  cls <- model$task == "classification"
  resp <- if (identical(spec$kind, "formula") && !is.null(spec$terms))
    names(attr(spec$terms, "dataClasses"))[1L]
  yobs <- if (!is.null(resp) && resp %in% names(data) && !(resp %in% cols)) data[[resp]]
  dots <- list(...)
  main <- if (is.null(dots$main)) {
    sprintf("%s: %s", if (inherits(model, "kernel_svm")) "kernel_svm" else "kernel_ridge",
            if (length(held)) paste(sprintf("%s = %s", names(held),
                                            vapply(held, function(s) format(s, digits = 3), "")),
                                    collapse = ", ")
            else "all inputs")
  } else dots$main
  dots$main <- NULL
  # the empty plot over the grid's ranges, drawn once the colours are checked
  frame <- function()
    do.call(graphics::plot.default, c(list(x = rng[[1L]], y = rng[[2L]], type = "n",
                                            xlab = axes[1L], ylab = axes[2L], main = main),
                                       dots))
  if (cls) {
    lev <- model$levels
    z <- matrix(as.integer(factor(p, levels = lev)), grid, grid)
    if (is.null(col)) col <- grDevices::hcl.colors(max(length(lev), 2L), "Set 2")
    if (length(col) < length(lev))
      stop(sprintf("%s: 'col' has %d colours for %d classes", caller, length(col),
                   length(lev)), call. = FALSE)
    light <- grDevices::adjustcolor(col, alpha.f = 0.35)
    frame()
    graphics::image(gx, gy, z, col = light[seq_along(lev)],
                    breaks = seq(0.5, length(lev) + 0.5), useRaster = TRUE, add = TRUE)
    if (!is.null(yobs)) {
      k <- as.integer(factor(as.character(yobs), levels = lev))
      graphics::points(data[[axes[1L]]], data[[axes[2L]]], pch = 21, bg = col[k],
                       col = "grey20")
      graphics::legend("topright", legend = lev, pt.bg = col[seq_along(lev)], pch = 21,
                       bg = "white", cex = 0.8)
    } else {
      graphics::points(data[[axes[1L]]], data[[axes[2L]]], col = "grey20")
      graphics::legend("topright", legend = lev, fill = light[seq_along(lev)], bg = "white",
                       cex = 0.8)
    }
    out <- list(x = gx, y = gy, z = z, levels = lev, slice = held)
  } else {
    z <- matrix(as.numeric(p), grid, grid)
    if (is.null(col)) col <- grDevices::hcl.colors(32, "YlGnBu", rev = TRUE)
    if (length(col) < 2L)
      stop(sprintf("%s: 'col' needs at least two colours for the image", caller), call. = FALSE)
    frame()
    graphics::image(gx, gy, z, col = col, add = TRUE, useRaster = TRUE)
    graphics::contour(gx, gy, z, add = TRUE, col = "grey30", labcex = 0.7)
    graphics::points(data[[axes[1L]]], data[[axes[2L]]], pch = 20, col = "grey10")
    out <- list(x = gx, y = gy, z = z, slice = held)
  }
  invisible(out)
}
