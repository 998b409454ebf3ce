# gem(cells = ): localized GEM. The scaled input space is cut into cells (the partition of
# kernel_svm(cells = )); every cell gets its own GEM model from its own rows (its own class
# pairs, directions, features and head), fitted as a task on the future plan; new rows are
# routed to their cell. With cells = "auto" (the default), data with many rows compare one
# global model with the cells on a held-out part of a sample, and the better one is fitted.

# The cells gem(cells = TRUE) uses: small cells, where a GEM model on the cell's few classes
# and rows is fast and local. On 100,000 Covertype rows, cells of 500, 1000, 2000 and 5000 rows
# gave 12.3%, 12.2%, 12.5% and 13.8% test error against 16.9% for one model.
.gem_cells_default <- function() kl_cells(cell_size = 1000)

# cells = "auto": with at least this many rows (option kernlearn.gem_cells_rows), one model and
# the cells are compared on a sample of .gem_auto_sample rows, a fifth held out.
.gem_cells_rows <- function() {
  v <- getOption("kernlearn.gem_cells_rows", 1e5)
  if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 100)
    stop("gem(): option 'kernlearn.gem_cells_rows' must be a number of at least 100",
         call. = FALSE)
  v
}
.gem_auto_sample <- 100000L

# The `cells` argument of gem(): "auto", NULL (one model) or a kl_cells object. With cells, the
# model settings are checked here, once: a cell's fit that fails is otherwise taken for a
# property of the cell's rows.
.gem_cells_arg <- function(cells, settings, caller) {
  pairs <- settings$pairs
  named <- is.character(pairs) && length(pairs) == 1L && !is.matrix(pairs)
  if (identical(cells, "auto")) return(if (named) "auto" else NULL)
  if (is.null(cells) || isFALSE(cells)) return(NULL)
  if (isTRUE(cells)) cells <- .gem_cells_default()
  if (!inherits(cells, "kl_cells"))
    stop(sprintf("%s: 'cells' must be \"auto\", TRUE, FALSE or kl_cells(...)", caller),
         call. = FALSE)
  if (!named)
    stop(sprintf("%s: with cells, 'pairs' must be \"all\", \"hypercube\" or \"none\" (each cell pairs its own classes); a matrix of pairs needs cells = FALSE",
                 caller), call. = FALSE)
  .kl_choice(pairs, c("all", "hypercube", "none"), "pairs", caller)
  do.call(.gem_check_model, c(settings[c("ridge", "ridge_type", "top", "threshold",
                                         "nonlinearity", "degree", "keep_input", "head",
                                         "lambda", "depth", "first_layer", "rff",
                                         "ensemble")], list(caller = caller)))
  if (settings$ensemble > 1 && !identical(pairs, "hypercube"))
    stop(sprintf("%s: ensemble = %d needs pairs = \"hypercube\" (other pair choices give identical members)",
                 caller, as.integer(settings$ensemble)), call. = FALSE)
  if (settings$depth == 2 && identical(pairs, "none"))
    stop(sprintf("%s: depth = 2 with pairs = \"none\" leaves the first layer without directions; use depth = 1",
                 caller), call. = FALSE)
  if (identical(pairs, "none") && !settings$keep_input)
    stop(sprintf("%s: with pairs = \"none\" the input must be kept (keep_input = TRUE)", caller),
         call. = FALSE)
  cells
}

# The model arguments a cell's gem() receives: the user's. With scale = TRUE a cell scales its
# rows to [0, 1] by their own range, as gem() scales all rows: the class moments are not
# centred, so the directions and a relative ridge depend on where the cell's rows lie (on
# Covertype with cells of 1000 rows, rows scaled by the whole input's range left 473 of 820
# cells without a direction above the threshold and gave 9.6% test error; by the cell's own
# range, 10 cells and 6.9%).
.gem_cell_args <- function(settings, control, scale) {
  c(settings, list(control = control, scale = scale, cells = FALSE))
}

# cells = "auto": NULL (one model) below .gem_cells_rows() rows, or with more input columns
# than a tenth of the cells' rows; else one model and the cells
# fitted on four fifths of a stratified sample of at most .gem_auto_sample rows and compared by
# the misclassification rate on the other fifth (ties keep one model). Returns list(cells,
# selection): cells NULL for one model.
.gem_cells_auto <- function(inp, settings, control, scale, threads, caller) {
  n <- length(inp$y)
  if (n < .gem_cells_rows()) return(list(cells = NULL, selection = NULL))
  cells <- .gem_cells_default()
  d <- ncol(inp$x)
  if (d > cells$cell_size / 10) {
    # a cell's class moments are d x d from a few hundred rows: not estimable, and the cells'
    # eigenproblems would cost far more than one model's
    return(list(cells = NULL, selection = list(
      choice = "global", global_error = NA_real_, cells_error = NA_real_, train_rows = 0L,
      validation_rows = 0L, cell_size = cells$cell_size, seconds = 0,
      reason = sprintf("one model, without a comparison: %d input columns, more than a tenth of the %d rows of a cell",
                       d, cells$cell_size))))
  }
  t0 <- proc.time()[["elapsed"]]
  m <- min(n, .gem_auto_sample)
  rows <- if (m < n) .kl_stratified_sample(inp$y, m) else seq_len(n)
  hold <- rows[.kl_stratified_sample(inp$y[rows], round(length(rows) / 5))]
  train <- setdiff(rows, hold)
  x <- inp$x
  ytr <- droplevels(inp$y[train])
  args <- .gem_cell_args(settings, control, scale = FALSE)
  args$fitted <- FALSE
  args$threads <- threads
  err <- c(global = NA_real_, cells = NA_real_)
  secs <- c(global = NA_real_, cells = NA_real_)
  for (how in names(err)) {
    a <- args
    # The rows are scaled already. Cells scale theirs again by their own range when `scale`
    # (gem()'s scaling of the sample by its range is then close to the identity).
    if (how == "cells") {
      a$cells <- cells
      a$scale <- scale
    }
    s0 <- proc.time()[["elapsed"]]
    # the comparison fits' warnings are not the model's: held back
    f <- suppressWarnings(do.call(gem.default, c(list(x[train, , drop = FALSE], ytr), a)))
    p <- predict(f, x[hold, , drop = FALSE], threads = threads)
    err[[how]] <- mean(as.character(p) != as.character(inp$y[hold]))
    secs[[how]] <- proc.time()[["elapsed"]] - s0
  }
  choice <- if (err[["cells"]] < err[["global"]]) "cells" else "global"
  selection <- list(choice = choice, global_error = err[["global"]],
                    cells_error = err[["cells"]], train_rows = length(train),
                    validation_rows = length(hold), cell_size = cells$cell_size,
                    seconds = proc.time()[["elapsed"]] - t0,
                    reason = sprintf("%s: held-out error %.2f%% (cells of at most %d rows) against %.2f%% (one model), fitted on %d rows of a sample, %d held out",
                                     if (choice == "cells") "cells" else "one model",
                                     100 * err[["cells"]], cells$cell_size,
                                     100 * err[["global"]], length(train), length(hold)))
  list(cells = if (choice == "cells") cells else NULL, selection = selection)
}

# One cell's model; runs on a future worker or here. A cell with one class predicts it; where
# no direction of the cell's class pairs reaches the threshold, the cell's head is fitted on
# its inputs alone (pairs = "none"); a cell whose fit fails otherwise predicts its most
# frequent class. The fit's warnings are kept with the cell (print() counts such cells).
.gem_cell_task <- function(task, shared, progress = NULL) {
  threads <- shared$threads
  if (is.null(threads)) {
    threads <- if (requireNamespace("parallelly", quietly = TRUE))
      max(1L, as.integer(parallelly::availableCores())) else 1L
  }
  y <- droplevels(task$y)
  counts <- table(y)
  out <- list(rows = length(y), own = task$own, classes = levels(y), status = "gem",
              note = NULL, warnings = character(), model = NULL,
              majority = names(counts)[which.max(counts)])
  done <- function(o) {
    if (is.function(progress)) progress(sprintf("cell %d", task$cell))
    o
  }
  if (nlevels(y) < 2L) {
    out$status <- "one class"
    if (shared$fitted) out$fitted <- rep(out$majority, task$own)
    return(done(out))
  }
  args <- shared$args
  args$fitted <- shared$fitted
  args$threads <- threads
  # an ensemble of random hypercubes needs 3 classes; with 2 every member is the same model
  if (nlevels(y) < 3L) args$ensemble <- 1
  warns <- character()
  fit_with <- function(a) .kl_with_seed(task$seed, withCallingHandlers(
    tryCatch(do.call(gem.default, c(list(task$x, y), a)),
             error = function(e) e),
    warning = function(w) {
      warns <<- c(warns, conditionMessage(w))
      invokeRestart("muffleWarning")
    }))
  fit <- fit_with(args)
  if (!inherits(fit, "error") && !is.null(fit$fallback)) {
    # gem() found no direction and fitted the head on the inputs alone (its warning is this)
    out$status <- "inputs only"
    out$note <- fit$fallback
    warns <- warns[!startsWith(warns, paste0("gem(): ", fit$fallback))]
  }
  if (inherits(fit, "error") && !identical(args$pairs, "none")) {
    out$status <- "inputs only"
    out$note <- conditionMessage(fit)
    args[c("pairs", "depth", "ensemble", "keep_input")] <- list("none", 1, 1, TRUE)
    args["first_layer"] <- list(list())
    fit <- fit_with(args)
  }
  if (inherits(fit, "error")) {
    out$status <- "majority"
    out$note <- conditionMessage(fit)
    if (shared$fitted) out$fitted <- rep(out$majority, task$own)
    return(done(out))
  }
  out$warnings <- unique(warns)
  if (shared$fitted) out$fitted <- as.character(fit$fitted.values)[seq_len(task$own)]
  fit$fitted.values <- NULL
  fit$call <- NULL
  out$features <- fit$members[[1L]]$p
  out$lambda <- fit$params$lambda
  out$model <- fit
  done(out)
}

# The localized model on the input `inp` (scaled as gem() scales it).
.gem_cells_fit <- function(inp, settings, control, cells, scale, threads, fitted, call,
                           selection, caller) {
  t0 <- proc.time()[["elapsed"]]
  threads <- .kl_threads(threads)
  if (!inherits(control, "gem_control"))
    stop(sprintf("%s: 'control' must come from gem_control()", caller), call. = FALSE)
  n <- nrow(inp$x)
  part <- .kl_cells_partition(inp$x, cells, threads, caller)
  own <- .kl_cell_rows(part)
  tasks <- .kl_cell_tasks(inp, part, own)
  use_future <- .klcv_use_future()
  shared <- list(args = .gem_cell_args(settings, control, scale), fitted = fitted,
                 threads = if (use_future) NULL else threads)
  res <- .kl_task_map(tasks, .gem_cell_task, shared = shared, packages = "kernlearn",
                     unit = "cells")
  lev <- inp$levels
  fv <- NULL
  if (fitted) {
    fv <- character(n)
    for (c in seq_along(res)) fv[own[[c]]] <- res[[c]]$fitted
    fv <- factor(fv, levels = .kl_all_levels(list(levels = lev, spec = inp$spec)))
  }
  for (c in seq_along(res)) res[[c]]$fitted <- NULL
  part$cell_of <- NULL
  part$extra <- NULL
  model <- structure(list(call = call, task = "classification", levels = lev, spec = inp$spec,
                          n = n, settings = cells, params = settings, partition = part,
                          cells = res, selection = selection, fitted.values = fv,
                          time = proc.time()[["elapsed"]] - t0),
                     class = c("gem_cells", "kl_model"))
  model
}

# The per-cell table of a localized GEM model.
.gem_cells_table <- function(object) {
  cl <- object$cells
  num <- function(f) vapply(cl, function(c) if (is.null(c[[f]])) NA_real_ else as.numeric(c[[f]]),
                            numeric(1))
  data.frame(cell = seq_along(cl),
             rows = vapply(cl, function(c) as.integer(c$own), integer(1)),
             train_rows = vapply(cl, function(c) as.integer(c$rows), integer(1)),
             classes = vapply(cl, function(c) length(c$classes), integer(1)),
             status = vapply(cl, `[[`, character(1), "status"),
             features = as.integer(num("features")), lambda = num("lambda"),
             stringsAsFactors = FALSE)
}

#' Predict with a localized GEM model
#'
#' Every new row is routed to its cell of the partition (the nearest centre,
#' or the tree's leaf) and predicted by that cell's GEM model. Classes that a
#' cell's rows did not contain get probability 0 there.
#'
#' @param object A \code{gem_cells} model: \code{\link{gem}} with cells.
#' @param newdata New data, in the form the model was fitted with. Without it,
#'   the classes of the training rows kept by \code{fitted = TRUE}.
#' @param type \code{"class"} (a factor) or \code{"prob"} (a matrix of class
#'   probabilities with one column per class of the whole model).
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, or a matrix with one column per class.
#' @seealso \code{\link{gem}}, \code{\link{kl_cells}}
#' @examples
#' set.seed(1)
#' x <- matrix(runif(6000), ncol = 2)
#' y <- factor(ifelse(x[, 2] > 0.5 + 0.3 * sin(6 * x[, 1]), "up", "down"))
#' fit <- gem(x, y, cells = kl_cells(cell_size = 500), top = 2, threshold = 1.5)
#' fit
#' mean(predict(fit, x) != y)
#' head(predict(fit, x, type = "prob"))
#' @export
predict.gem_cells <- function(object, newdata, type = "class", threads = NULL, ...) {
  caller <- "predict.gem_cells()"
  .no_dots(..., caller = caller)
  if (!is.character(type) || length(type) != 1L || !(type %in% c("class", "prob")))
    stop(sprintf("%s: 'type' must be \"class\" or \"prob\" for a localized GEM model",
                 caller), call. = FALSE)
  if (missing(newdata) || is.null(newdata)) return(.kl_predict_fitted(object, type, caller))
  threads <- .kl_threads(threads)
  x <- .kl_newdata(object$spec, newdata, caller)
  cell <- .kl_core(caller, cpp_partition_route, x, object$partition, threads)
  lev <- object$levels
  m <- nrow(x)
  P <- matrix(0, m, length(lev), dimnames = list(rownames(newdata), lev))
  rows_of <- split(seq_len(m), factor(cell, levels = seq_along(object$cells)))
  for (c in seq_along(object$cells)) {
    r <- rows_of[[c]]
    if (!length(r)) next
    cm <- object$cells[[c]]
    if (is.null(cm$model)) {
      P[r, cm$majority] <- 1
    } else {
      pc <- predict(cm$model, x[r, , drop = FALSE], type = "prob", threads = threads)
      P[r, colnames(pc)] <- pc
    }
  }
  if (type == "prob") return(P)
  factor(lev[max.col(P, ties.method = "first")], levels = .kl_all_levels(object))
}

#' @export
print.gem_cells <- function(x, ...) {
  tab <- .gem_cells_table(x)
  cat(sprintf("Localized GEM classifier: %d classes, %d training rows, %d cells (%s, at most %d rows each)\n",
              length(x$levels), x$n, nrow(tab), x$settings$method, x$settings$cell_size))
  st <- table(factor(tab$status, levels = c("gem", "inputs only", "one class", "majority")))
  cat(sprintf("  cells with a GEM model: %d (features per cell: median %s, range %s to %s)\n",
              st[["gem"]], format(stats::median(tab$features, na.rm = TRUE)),
              format(suppressWarnings(min(tab$features, na.rm = TRUE))),
              format(suppressWarnings(max(tab$features, na.rm = TRUE)))))
  if (st[["inputs only"]] > 0L)
    cat(sprintf("  cells whose head works on the inputs alone (no direction reached the threshold): %d\n",
                st[["inputs only"]]))
  if (st[["one class"]] > 0L)
    cat(sprintf("  cells with one class: %d\n", st[["one class"]]))
  if (st[["majority"]] > 0L)
    cat(sprintf("  cells that predict their most frequent class (their fit failed): %d\n",
                st[["majority"]]))
  warned <- which(vapply(x$cells, function(c) length(c$warnings) > 0L, logical(1)))
  if (length(warned))
    cat(sprintf("  cells whose fit warned: %d (the messages: fit$cells[[i]]$warnings, e.g. cell %d)\n",
                length(warned), warned[1L]))
  if (!is.null(x$selection)) cat(sprintf("  chosen by validation: %s\n", x$selection$reason))
  cat(sprintf("  fitted in %.1f s\n", x$time))
  invisible(x)
}

#' @export
summary.gem_cells <- function(object, ...) {
  .no_dots(..., caller = "summary()")
  structure(list(model = object, cells = .gem_cells_table(object)), class = "summary.gem_cells")
}

#' @export
print.summary.gem_cells <- function(x, ...) {
  print(x$model)
  tab <- x$cells
  cat("\nRows per cell:\n")
  print(summary(tab$rows))
  cat("Classes per cell:\n")
  print(table(tab$classes))
  cat("\nCells (first 10; summary(fit)$cells has them all):\n")
  print(utils::head(tab, 10L), row.names = FALSE)
  invisible(x)
}
