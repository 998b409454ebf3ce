#' Cells: localized kernel machines for large data
#'
#' Settings for fitting a kernel machine on cells of the input space: the
#' training rows are split into cells of at most \code{cell_size} rows, one
#' model is fitted per cell with its own hyper-parameters chosen by
#' cross-validation inside the cell, and a new row is predicted by the model of
#' its cell. Pass the result as the \code{cells} argument of
#' \code{\link{kernel_svm}}, \code{\link{kernel_ridge}}, \code{\link{hgk}} or
#' \code{\link{tkl}} (\code{cells = TRUE} uses these defaults).
#'
#' @details
#' \strong{Why.} An exact kernel machine needs time between
#' \eqn{O(n^2)}{O(n^2)} and \eqn{O(n^3)}{O(n^3)} and, for kernel ridge, an
#' \eqn{n \times n}{n x n} matrix, so it stops at a few tens of thousands of
#' rows. Cells of a fixed size make the cost linear in \eqn{n}, and the memory
#' too; Meister and Steinwart (2016) show that such localized SVMs keep the
#' learning rates of the global SVM. This is the approach of the liquidSVM
#' package (Steinwart and Thomann 2017).
#'
#' \strong{The partition.} The cells are the leaves of a tree of Voronoi
#' splits: \code{method = "voronoi"} splits a node of \eqn{m} rows around
#' \eqn{\min(16, \lceil m / \mathrm{cell\_size} \rceil)}{min(16, ceiling(m / cell_size))}
#' centres found by k-means (k-means++ seeding and Lloyd iterations on a
#' sample of at most \code{sample} rows), merges children of fewer than
#' \code{min_size} rows into their neighbours and splits children that are
#' still too large again; \code{method = "tree"} splits every node in two at
#' the median of its principal direction (cells of about
#' \code{cell_size / 2} to \code{cell_size} rows). Either way a row, old or
#' new, goes to the child with the nearest centre at every level, so routing
#' a row costs a few dozen distances. The partition depends only on the data
#' and the seed drawn from R's random number generator (\code{set.seed()}),
#' never on the number of threads or the \code{future} plan.
#'
#' \strong{Overlap.} With \code{overlap = a > 0}, each cell also trains on the
#' \eqn{a m} rows of its neighbouring cells (under the same node) nearest to
#' its centre, but predicts only the rows routed to it; this softens the
#' boundaries between local models.
#'
#' \strong{Selection inside each cell.} The hyper-parameters a fit leaves
#' unset are chosen in every cell by \code{folds}-fold cross-validation (folds
#' stratified by class) over a grid, as liquidSVM does: widths
#' \code{gamma_grid} times the cell's reference width \eqn{g_0 = 1 /
#' \mathrm{median}(-\log k_1(x_i, x_j))}{g0 = 1 / median(-log k1(xi, xj))} over
#' pairs of the cell's rows (\eqn{k_1} the kernel at width 1: for the Gaussian
#' kernel one over the median squared distance), so the grid follows the scale
#' of each cell; costs \code{cost_grid} (SVM), solved as a warm-started path of
#' increasing costs with one kernel matrix per width; penalties
#' \code{lambda_grid} times the rows fitted (kernel ridge). The grid point of
#' least validation error wins (ties go to the smaller cost, then the smaller
#' width) and is refitted on all the cell's rows. Values given to the learner
#' (\code{gamma}, \code{cost}, \code{lambda}, or a kernel with its width set)
#' are used in every cell instead.
#'
#' \strong{Where the cells run.} Each cell (its cross-validation and its final
#' fit) is one task on the \code{future} plan: sequentially, on local workers
#' (\code{future::plan("multisession")}), or on a cluster through
#' \pkg{future.batchtools} (Slurm, SGE, LSF); a task receives only the rows of
#' its cell, and each worker uses the cores the plan gives it
#' (\code{parallelly::availableCores()}). The results are the same for every
#' plan. Progress is reported per cell through \pkg{progressr}.
#'
#' @param cell_size The largest number of training rows of a cell (at least
#'   20). Larger cells give more accurate local models and cost more: the
#'   time of a cell grows about as its size squared.
#' @param method \code{"voronoi"} or \code{"tree"} (see Details).
#' @param overlap Extra training rows of each cell from its neighbours, as a
#'   fraction of its own rows (\code{0} to \code{1}).
#' @param folds Cross-validation folds inside each cell (2 to 20).
#' @param gamma_grid Candidate widths, as multiples of each cell's reference
#'   width (or absolute widths with \code{relative_gamma = FALSE}). \code{NULL}:
#'   \code{4^(0:2)} for the SVM (its solves at small widths are slow and
#'   rarely chosen) and \code{4^(-2:1)} for kernel ridge; the grid grows past
#'   an edge that wins (\code{extend}).
#' @param cost_grid Candidate SVM costs.
#' @param lambda_grid Candidate kernel ridge penalties per training row (the
#'   penalty of a fit on \eqn{m} rows is \eqn{m} times the value).
#' @param relative_gamma Whether \code{gamma_grid} is relative to each cell's
#'   reference width.
#' @param extend When a cell's best grid point lies on an edge of the grid
#'   (and is better than its neighbour), the grid grows one step beyond that
#'   edge, at most \code{extend} times in each direction of each parameter.
#' @param cv_rows The cross-validation inside a cell runs on a sample of at
#'   most this many of its rows (stratified by class); the chosen values are
#'   then refitted on all the cell's rows. \code{NULL}: all rows for the SVM
#'   (its warm-started cost paths are cheap), 1000 for kernel ridge (each
#'   penalty costs a Cholesky factorisation).
#' @param min_size Voronoi children with fewer rows are merged into their
#'   neighbours; \code{NULL} means \code{max(cell_size / 8, 10)}.
#' @param sample The rows of a node that its centres are computed from.
#' @param sample_learn \code{\link{hgk}()} with cells learns the kernel's
#'   weights on a stratified sample of this many rows, then fits every cell
#'   with the learned kernel.
#' @return An object of class \code{"kl_cells"}.
#' @references
#' Meister, M. and Steinwart, I. (2016). Optimal learning rates for localized
#' SVMs. Journal of Machine Learning Research 17(194).
#'
#' Steinwart, I. and Thomann, P. (2017). liquidSVM: a fast and versatile SVM
#' package. arXiv:1702.06899.
#' @seealso \code{\link{kernel_svm}}, \code{\link{kernel_ridge}},
#'   \code{\link{predict.kl_localized}}
#' @examples
#' kl_cells(cell_size = 1000)
#'
#' # two-class data with a curved boundary, fitted on cells of at most 300 rows
#' set.seed(1)
#' x <- matrix(runif(4000), ncol = 2)
#' y <- factor(ifelse(x[, 2] > 0.5 + 0.3 * sin(6 * x[, 1]), "up", "down"))
#' fit <- kernel_svm(x, y, cells = kl_cells(cell_size = 300, folds = 3))
#' fit
#' mean(predict(fit, x) != y)
#' @export
kl_cells <- function(cell_size = 5000, method = c("voronoi", "tree"), overlap = 0, folds = 3,
                     gamma_grid = NULL, cost_grid = 2^c(-1, 1, 3, 5, 7, 9),
                     lambda_grid = 10^-(4:9), relative_gamma = TRUE, extend = 3L,
                     cv_rows = NULL, min_size = NULL, sample = 20000, sample_learn = 5000) {
  caller <- "kl_cells()"
  .check_number(cell_size, "cell_size", lower = 20, integer = TRUE, caller = caller)
  method <- .kl_choice(method, c("voronoi", "tree"), "method", caller)
  .check_number(overlap, "overlap", lower = 0, upper = 1, caller = caller)
  .check_number(folds, "folds", lower = 2, upper = 20, integer = TRUE, caller = caller)
  for (nm in c("gamma_grid", "cost_grid", "lambda_grid")) {
    v <- get(nm)
    if (is.null(v) && nm == "gamma_grid") next
    if (!is.numeric(v) || !length(v) || anyNA(v) || any(!is.finite(v)) || any(v <= 0))
      stop(sprintf("%s: '%s' must be a vector of positive numbers", caller, nm), call. = FALSE)
  }
  .check_flag(relative_gamma, "relative_gamma", caller)
  .check_number(extend, "extend", lower = 0, upper = 10, integer = TRUE, caller = caller)
  if (!is.null(cv_rows))
    .check_number(cv_rows, "cv_rows", lower = 10, integer = TRUE, caller = caller)
  if (is.null(min_size)) min_size <- max(cell_size %/% 8, min(10, cell_size %/% 2))
  .check_number(min_size, "min_size", lower = 1, upper = cell_size, integer = TRUE,
                caller = caller)
  .check_number(sample, "sample", lower = 100, upper = 1e7, integer = TRUE, caller = caller)
  .check_number(sample_learn, "sample_learn", lower = 50, upper = 1e6, integer = TRUE,
                caller = caller)
  structure(list(cell_size = as.integer(cell_size), method = method, overlap = overlap,
                 folds = as.integer(folds),
                 gamma_grid = if (!is.null(gamma_grid)) sort(unique(as.numeric(gamma_grid))),
                 cost_grid = sort(unique(as.numeric(cost_grid))),
                 lambda_grid = sort(unique(as.numeric(lambda_grid))),
                 relative_gamma = relative_gamma, extend = as.integer(extend),
                 cv_rows = if (!is.null(cv_rows)) as.integer(min(cv_rows, .Machine$integer.max)),
                 min_size = as.integer(min_size),
                 sample = as.integer(sample), sample_learn = as.integer(sample_learn)),
            class = "kl_cells")
}

#' @export
print.kl_cells <- function(x, ...) {
  cat(sprintf("Cells of at most %d rows (%s partition%s)\n", x$cell_size, x$method,
              if (x$overlap > 0) sprintf(", overlap %s", format(x$overlap)) else ""))
  cat(sprintf("  selection in each cell by %d-fold cross-validation over\n", x$folds))
  g <- function(v) paste(format(v, digits = 3), collapse = ", ")
  rel <- if (x$relative_gamma) " x the cell's reference width" else ""
  if (is.null(x$gamma_grid))
    cat(sprintf("    gamma: %s (SVM) or %s (kernel ridge)%s\n", g(4^(0:2)), g(4^(-2:1)), rel))
  else
    cat(sprintf("    gamma: %s%s\n", g(x$gamma_grid), rel))
  cat(sprintf("    cost (SVM): %s\n", paste(format(x$cost_grid, digits = 3), collapse = ", ")))
  cat(sprintf("    lambda (kernel ridge, per row): %s\n",
              paste(format(x$lambda_grid, digits = 3), collapse = ", ")))
  if (x$extend > 0)
    cat(sprintf("    each grid growing up to %d steps past an edge that wins\n", x$extend))
  invisible(x)
}

# The `cells` argument of a learner: NULL (a global fit) or a kl_cells object.
.kl_cells_arg <- function(cells, caller) {
  if (is.null(cells) || isFALSE(cells)) return(NULL)
  if (isTRUE(cells)) return(kl_cells())
  if (!inherits(cells, "kl_cells"))
    stop(sprintf("%s: 'cells' must be TRUE, FALSE or kl_cells(...)", caller), call. = FALSE)
  cells
}

# The widths a cell starts its selection with: the setting, or the machine's default. An SVM's
# solves at small widths are slow (many support vectors, an ill-conditioned dual) and rarely
# chosen, so its grid starts at the reference width; kernel ridge costs the same at any width.
# Either grid grows past an edge that wins (extend).
.kl_cells_gamma_grid <- function(cells, machine) {
  if (!is.null(cells$gamma_grid)) return(cells$gamma_grid)
  if (machine == "ridge") 4^(-2:1) else 4^(0:2)
}

# The rows of a cell's cross-validation: the setting, or the machine's default (0: all).
.kl_cells_cv_rows <- function(cells, machine) {
  if (!is.null(cells$cv_rows)) return(as.integer(cells$cv_rows))
  if (machine == "ridge") 1000L else 0L
}

# The partition of the scaled training rows.
.kl_cells_partition <- function(x, cells, threads, caller) {
  opts <- list(method = cells$method, cell_size = cells$cell_size, min_size = cells$min_size,
               branching = 16L, sample = cells$sample, iterations = 10L,
               overlap = cells$overlap, seed = .kl_seed())
  .kl_core(caller, cpp_partition_build, x, opts, threads)
}

# One cell's selection and fit; runs on a future worker or here. Returns the cell's compact
# model.
.kl_cell_task <- function(task, shared, progress = NULL) {
  threads <- shared$threads
  if (is.null(threads)) {
    threads <- if (requireNamespace("parallelly", quietly = TRUE))
      max(1L, as.integer(parallelly::availableCores())) else 1L
  }
  settings <- shared$settings
  settings$seed <- task$seed
  fit <- .kl_core(shared$caller, cpp_cell_fit, task$x, task$y, task$z, shared$task,
                  shared$kernel, settings, shared$params, shared$weight, as.integer(threads),
                  levels = shared$levels)
  constant <- !is.null(task$y) && length(fit$classes) < 2L
  gamma <- if (is.nan(fit$gamma_value) && !is.null(shared$gamma)) shared$gamma
           else fit$gamma_value
  # kernel ridge penalties per row: the penalty of the final fit on the cell's rows
  if (isTRUE(settings$cost_per_row)) fit$cost_value <- fit$cost_value * nrow(task$x)
  out <- list(rows = nrow(task$x), own = task$own,
              gamma = if (constant || is.nan(gamma)) NA_real_ else gamma,
              cost = if (constant) NA_real_ else fit$cost_value, cv_error = fit$cv_error,
              extended = fit$extended,
              cv = fit$cv,
              gamma_grid = fit$gamma, cost_grid = fit$cost,
              reference_gamma = fit$reference_gamma)
  if (!is.null(task$y)) out$classes <- fit$classes
  if (shared$task == "ridge") {
    if (!is.null(fit$alpha)) {
      out$x <- task$x
      out$alpha <- fit$alpha
      out$bias <- as.vector(fit$bias)
    }
  } else if (!is.null(fit$model)) {
    m <- fit$model
    out$SV <- task$x[m$sv_index, , drop = FALSE]
    out$coefs <- if (shared$task == "regression") matrix(m$coefs, ncol = 1L) else m$coefs
    out$nSV <- if (shared$task == "regression") length(m$sv_index) else as.integer(m$nsv)
    out$rho <- m$rho
    out$converged <- all(m$converged)
    if (isTRUE(shared$params$probability)) {
      out$probA <- m$probA
      out$probB <- m$probB
    }
  }
  if (is.function(progress)) progress(sprintf("cell %d", task$cell))
  out
}

# The training rows each cell owns (as a list, one element per cell).
.kl_cell_rows <- function(part) {
  split(seq_along(part$cell_of), factor(part$cell_of, levels = seq_len(part$n_cells)))
}

# One task per cell: the cell's own rows and then its overlap rows of inp's x and y, how many
# it owns, and a seed drawn in cell order.
.kl_cell_tasks <- function(inp, part, own) {
  lapply(seq_len(part$n_cells), function(c) {
    rows <- c(own[[c]], part$extra[[c]])
    list(cell = c, x = inp$x[rows, , drop = FALSE], y = inp$y[rows], own = length(own[[c]]),
         seed = .kl_seed())
  })
}

# Fits one model per cell. machine: "svm" or "ridge". kernel: a resolved kernel object whose
# width is chosen per cell when `gamma_free` is TRUE. cost: a fixed cost (SVM) or penalty
# (kernel ridge), or NULL to choose it per cell.
.kl_cells_fit <- function(inp, machine, kernel, gamma_free, cost, params, weight, cells,
                          threads, caller) {
  t0 <- proc.time()[["elapsed"]]
  threads <- .kl_threads(threads)
  n <- nrow(inp$x)
  part <- .kl_cells_partition(inp$x, cells, threads, caller)
  cls <- inp$task == "classification"
  task <- if (machine == "ridge") "ridge" else if (cls) "classification" else "regression"
  kspec <- .kernel_spec(kernel)
  if (gamma_free) {
    grid <- .kl_cells_gamma_grid(cells, machine)
    gamma <- if (cells$relative_gamma) numeric() else grid
    gamma_factor <- if (cells$relative_gamma) grid else numeric()
  } else {
    gamma <- numeric()
    gamma_factor <- numeric()
  }
  costs <- if (!is.null(cost)) as.numeric(cost)
           else if (machine == "ridge") cells$lambda_grid else cells$cost_grid
  settings <- list(gamma = gamma, gamma_factor = gamma_factor, cost = costs,
                   cost_per_row = machine == "ridge" && is.null(cost),
                   folds = cells$folds,
                   cv_rows = .kl_cells_cv_rows(cells, machine), extend = cells$extend,
                   has_gamma = gamma_free, seed = c(1L, 1L))
  yint <- if (cls) as.integer(inp$y) else NULL
  z <- if (cls) NULL else as.numeric(inp$y)
  own <- split(seq_len(n), factor(part$cell_of, levels = seq_len(part$n_cells)))
  tasks <- vector("list", part$n_cells)
  for (c in seq_len(part$n_cells)) {
    rows <- own[[c]]
    if (length(part$extra[[c]])) rows <- c(rows, part$extra[[c]])
    tasks[[c]] <- list(cell = c, x = inp$x[rows, , drop = FALSE], own = length(own[[c]]),
                       y = if (cls) yint[rows], z = if (!cls) z[rows], seed = .kl_seed())
  }
  use_future <- .klcv_use_future()
  if (cls && is.null(weight)) weight <- rep(1, length(inp$levels))
  shared <- list(caller = caller, levels = inp$levels, task = task, kernel = kspec,
                 settings = settings, params = params,
                 weight = if (cls) unname(as.numeric(weight)) else numeric(),
                 gamma = if (!gamma_free && !is.null(kernel$gamma)) as.numeric(kernel$gamma),
                 threads = if (use_future) NULL else threads)
  res <- .kl_task_map(tasks, .kl_cell_task, shared = shared, packages = "kernlearn",
                     unit = "cells")
  cell_of <- part$cell_of
  part$cell_of <- NULL
  part$extra <- NULL
  list(partition = part, cells = res, cell_of = cell_of, time = proc.time()[["elapsed"]] - t0)
}

# The per-cell summary table of a localized model.
.kl_cells_table <- function(object) {
  cl <- object$cells
  data.frame(cell = seq_along(cl),
             rows = vapply(cl, function(c) as.integer(c$own), integer(1)),
             train_rows = vapply(cl, function(c) as.integer(c$rows), integer(1)),
             classes = if (object$task == "classification")
                         vapply(cl, function(c) length(c$classes), integer(1)) else NA_integer_,
             gamma = vapply(cl, function(c) if (is.null(c$gamma)) NA_real_ else as.numeric(c$gamma), numeric(1)),
             cost = vapply(cl, function(c) if (is.null(c$cost)) NA_real_ else as.numeric(c$cost), numeric(1)),
             cv_error = vapply(cl, function(c) if (is.null(c$cv_error)) NA_real_ else as.numeric(c$cv_error), numeric(1)),
             nSV = vapply(cl, function(c) if (is.null(c$SV)) NA_integer_ else nrow(c$SV), integer(1)),
             extended = vapply(cl, function(c) if (is.null(c$extended)) 0L else as.integer(c$extended), integer(1)),
             stringsAsFactors = FALSE)
}

# A localized model: the partition and one compact model per cell.
.kl_localized_model <- function(fit, inp, machine, learner, kernel, params, weight, cells, call,
                                extra = list()) {
  structure(c(list(call = call, learner = learner, machine = machine, task = inp$task,
                   levels = inp$levels, spec = inp$spec, kernel = kernel,
                   probability = isTRUE(params$probability),
                   epsilon = if (machine == "svm" && inp$task == "regression") params$epsilon,
                   class.weights = weight, settings = cells, partition = fit$partition,
                   cells = fit$cells, n = nrow(inp$x), time = fit$time), extra),
            class = c("kl_localized", "kl_model"))
}

# Pair columns of one-vs-one decision values: the column of pair (a, b), a < b, among k classes.
.kl_pair_index <- function(a, b, k) {
  # pairs (1,2), (1,3), ..., (1,k), (2,3), ...
  (a - 1L) * k - (a - 1L) * a / 2L + (b - a)
}

# Predictions of a localized model on scaled rows x whose cells are `cell`.
.kl_localized_predict_x <- function(object, x, cell, type, threads, caller = "predict()") {
  m <- nrow(x)
  lev <- object$levels
  K <- length(lev)
  cls <- object$task == "classification"
  backend <- .kl_backend_arg()
  if (cls) {
    out_class <- integer(m)
    P <- if (type == "prob") matrix(0, m, K, dimnames = list(NULL, lev))
    D <- if (type == "decision") {
      if (object$machine == "ridge") {
        if (K == 2L) rep(NA_real_, m) else matrix(NA_real_, m, K, dimnames = list(NULL, lev))
      } else {
        if (K == 2L) rep(NA_real_, m)
        else matrix(NA_real_, m, K * (K - 1L) / 2L, dimnames = list(NULL, .svm_pair_names(lev)))
      }
    }
  } else {
    out <- numeric(m)
  }
  rows_of <- split(seq_len(m), factor(cell, levels = seq_along(object$cells)))
  for (c in seq_along(object$cells)) {
    r <- rows_of[[c]]
    if (!length(r)) next
    cm <- object$cells[[c]]
    xc <- x[r, , drop = FALSE]
    kern <- if (!is.null(cm$kernel)) cm$kernel else object$kernel
    if (!is.null(cm$gamma) && !is.na(cm$gamma)) kern$gamma <- cm$gamma
    if (!is.null(cm$xmin))  # a cell with its own input scaling
      xc <- .kl_core(caller, cpp_scale_columns, xc, as.double(cm$xmin), as.double(cm$xscale),
                     threads)
    if (cls && length(cm$classes) == 1L) {
      # a cell with one class predicts it
      g <- cm$classes
      out_class[r] <- g
      if (!is.null(P)) P[r, g] <- 1
      if (!is.null(D)) {
        if (K == 2L) D[r] <- if (g == 2L) 1 else -1
        else if (object$machine == "ridge") { D[r, ] <- -1; D[r, g] <- 1 }
        else for (o in setdiff(seq_len(K), g)) {
          a <- min(g, o); b <- max(g, o)
          D[r, .kl_pair_index(a, b, K)] <- if (g == b) 1 else -1
        }
      }
      next
    }
    if (object$machine == "ridge") {
      dec <- .kl_core(caller, cpp_kernel_predict, xc, cm$x, cm$alpha, cm$bias, .kernel_spec(kern),
                      threads, backend)
      if (!cls) {
        out[r] <- as.vector(dec)
        next
      }
      g <- cm$classes
      k <- length(g)
      if (k == 2L) {
        loc <- ifelse(dec[, 1L] > 0, 2L, 1L)
        full <- cbind(-dec[, 1L], dec[, 1L])
      } else {
        loc <- max.col(dec, ties.method = "first")
        full <- dec
      }
      out_class[r] <- g[loc]
      if (!is.null(D)) {
        if (K == 2L) D[r] <- full[, 2L]
        else D[r, g] <- full
      }
      next
    }
    nsv <- if (cls) as.integer(cm$nSV) else NULL
    dec <- .kl_core(caller, cpp_svm_decision, xc, cm$SV, cm$coefs, nsv, cm$rho, .kernel_spec(kern),
                    threads, backend)
    if (!cls) {
      out[r] <- if (is.null(cm$clip)) as.vector(dec)
                else pmin(pmax(as.vector(dec), cm$clip[1L]), cm$clip[2L])
      next
    }
    g <- cm$classes
    k <- length(g)
    if (!is.null(D)) {
      if (K == 2L) {
        D[r] <- dec[, 1L]
      } else {
        t <- 0L
        for (a in seq_len(k - 1L)) for (b in (a + 1L):k) {
          t <- t + 1L
          D[r, .kl_pair_index(g[a], g[b], K)] <- dec[, t]
        }
      }
    }
    if (isTRUE(object$probability)) {
      Pl <- .kl_core(caller, cpp_ovo_prob, dec, k, cm$probA, cm$probB)
      out_class[r] <- g[max.col(Pl, ties.method = "first")]
      if (!is.null(P)) P[r, g] <- Pl
    } else {
      out_class[r] <- g[.kl_core(caller, cpp_ovo_vote, dec, k)]
    }
  }
  if (!cls) return(.svr_unscale(out, object$y_scaling))
  switch(type,
         class = factor(lev[out_class], levels = .kl_all_levels(object)),
         prob = P,
         decision = D)
}

#' Predict with a localized kernel machine
#'
#' Routes every new row to its cell and predicts it with the cell's model.
#'
#' @param object A model fitted with \code{cells} (class \code{"kl_localized"}).
#' @param newdata New rows, as for the learner's own \code{predict()} method;
#'   missing means the fitted values (the default type only).
#' @param type \code{"class"}, \code{"prob"} (SVM classification fitted with
#'   \code{probability = TRUE}), \code{"decision"} or \code{"response"}, as for
#'   the global model. Decision values of classes or pairs of classes that a
#'   row's cell did not see are \code{NA}; a cell that saw a single class
#'   predicts it, with decision values \eqn{\pm 1}{+-1} and probability 1.
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, numeric vector or matrix, one row per new row.
#'   Predicted classes are a factor with every level of the training response,
#'   levels without training rows included (as in e1071 and ranger; the model
#'   never predicts them), so that they compare with held-out labels.
#' @examples
#' set.seed(1)
#' x <- matrix(runif(3000), ncol = 3)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(1000, sd = 0.1)
#' fit <- kernel_ridge(x, y, cells = kl_cells(cell_size = 250, folds = 3))
#' head(predict(fit, x))
#' @export
predict.kl_localized <- function(object, newdata, type = NULL, threads = NULL, ...) {
  caller <- "predict()"
  .no_dots(..., caller = caller)
  prob_ok <- if (object$machine == "ridge")
    "least-squares outputs are not probabilities; use type = \"decision\""
  else if (isTRUE(object$probability)) TRUE
  else "the model has no probability model; fit it with probability = TRUE"
  type <- .kl_predict_type(type, object$task, caller, prob = prob_ok)
  if (missing(newdata) || is.null(newdata)) return(.kl_predict_fitted(object, type, caller))
  threads <- .kl_threads(threads)
  x <- .kl_newdata(object$spec, newdata, caller)
  cell <- .kl_core(caller, cpp_partition_route, x, object$partition, threads)
  .kl_localized_predict_x(object, x, cell, type, threads)
}

#' @export
print.kl_localized <- function(x, ...) {
  what <- switch(x$machine, svm = "kernel SVM", ridge = "kernel ridge",
                 x$machine)
  task <- if (x$task == "classification")
    sprintf("classification, %d classes", length(x$levels)) else "regression"
  cat(sprintf("Localized %s (%s), from %s\n", what, task, x$learner))
  tab <- .kl_cells_table(x)
  cat(sprintf("  %d training rows in %d cells of %d to %d rows (median %d)\n", x$n,
              nrow(tab), min(tab$rows), max(tab$rows), as.integer(stats::median(tab$rows))))
  cat("  ")
  k <- x$kernel
  if (identical(x$learner, "tkl")) {
    cat(sprintf("Tessellated kernel learned in every cell (degree %d, box [-%s, 1 + %s] of each cell's range)\n",
                x$degree, format(x$delta), format(x$delta)))
    ch <- vapply(x$cells, function(c) if (is.null(c$choice)) NA_character_ else c$choice, "")
    if (any(ch %in% "baseline"))
      cat(sprintf("  the cell's tuned Gaussian %s validated better and is the model in %d of %d cells\n",
                  if (x$task == "regression") "(SVR, or least-squares SVM)" else "SVM",
                  sum(ch %in% "baseline"), length(ch)))
  } else if (.kernel_width_free(k)) {
    k$gamma <- 1
    cat(sub("gamma = 1$", "gamma chosen per cell", utils::capture.output(print(k))), sep = "\n")
  } else {
    print(k)
  }
  .kl_cells_param_line("gamma", tab$gamma)
  .kl_cells_param_line(if (x$machine == "ridge") "lambda" else "cost", tab$cost)
  if (any(!is.na(tab$cv_error)))
    cat(sprintf("  cross-validated %s per cell: median %s\n",
                if (x$task == "classification") "error" else "squared error",
                format(stats::median(tab$cv_error, na.rm = TRUE), digits = 4)))
  if (any(tab$extended > 0))
    cat(sprintf("  the grid grew past its edges in %d of %d cells\n", sum(tab$extended > 0),
                nrow(tab)))
  cat(sprintf("  fit in %.1f s\n", x$time))
  invisible(x)
}

.kl_cells_param_line <- function(name, v) {
  v <- v[!is.na(v)]
  if (!length(v)) return(invisible())
  u <- unique(v)
  if (length(u) == 1L) {
    cat(sprintf("  %s = %s in every cell\n", name, format(u, digits = 4)))
  } else {
    q <- stats::quantile(v, c(0, 0.5, 1), names = FALSE)
    cat(sprintf("  %s per cell: %s to %s (median %s)\n", name, format(q[1], digits = 3),
                format(q[3], digits = 3), format(q[2], digits = 3)))
  }
}

#' Summarise a localized kernel machine
#'
#' @param object A \code{kl_localized} model.
#' @param x A \code{summary.kl_localized} object.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class
#'   \code{"summary.kl_localized"}: the model and a data.frame \code{cells}
#'   with one row per cell (its rows, its training rows with the overlap, its
#'   classes, the chosen \code{gamma} and \code{cost} (the penalty
#'   \code{lambda} for kernel ridge), the cross-validated error of that choice
#'   and the number of support vectors).
#' @examples
#' set.seed(1)
#' x <- matrix(runif(2000), ncol = 2)
#' y <- factor(x[, 1] + x[, 2] > 1 + 0.1 * sin(10 * x[, 1]))
#' summary(kernel_svm(x, y, cells = kl_cells(cell_size = 200, folds = 3)))
#' @export
summary.kl_localized <- function(object, ...) {
  structure(list(model = object, cells = .kl_cells_table(object)),
            class = "summary.kl_localized")
}

#' @rdname summary.kl_localized
#' @export
print.summary.kl_localized <- function(x, ...) {
  print(x$model)
  cat("\nCells:\n")
  tab <- x$cells
  if (x$model$machine == "ridge") {
    names(tab)[names(tab) == "cost"] <- "lambda"
    tab$nSV <- NULL
  }
  if (x$model$task != "classification") tab$classes <- NULL
  if (nrow(tab) > 12L) {
    print(utils::head(tab, 12L), row.names = FALSE, digits = 4)
    cat(sprintf("  ... %d more\n", nrow(tab) - 12L))
  } else {
    print(tab, row.names = FALSE, digits = 4)
  }
  invisible(x)
}

#' Plot a localized kernel machine
#'
#' Shows the number of rows of each cell and each cell's cross-validated
#' error; for models on two inputs, the cells themselves.
#'
#' @param x A \code{kl_localized} model.
#' @param which \code{"sizes"}, \code{"errors"} or \code{"cells"} (two inputs
#'   only); by default all that apply.
#' @param ... Passed to the plotting functions.
#' @return \code{x}, invisibly.
#' @examples
#' set.seed(1)
#' x <- matrix(runif(2000), ncol = 2)
#' y <- factor(x[, 1] + x[, 2] > 1 + 0.1 * sin(10 * x[, 1]))
#' fit <- kernel_svm(x, y, cells = kl_cells(cell_size = 200, folds = 3))
#' plot(fit, which = "cells")
#' @export
plot.kl_localized <- function(x, which = NULL, ...) {
  d <- ncol(x$partition$centres)
  avail <- c("sizes", "errors", if (d == 2L) "cells")
  if (is.null(which)) which <- avail
  bad <- setdiff(which, c("sizes", "errors", "cells"))
  if (length(bad) || !is.character(which))
    stop("plot(): 'which' must be among \"sizes\", \"errors\" and \"cells\"", call. = FALSE)
  if ("cells" %in% which && d != 2L)
    stop(sprintf("plot(): which = \"cells\" needs a model on two inputs (this one has %d)", d),
         call. = FALSE)
  tab <- .kl_cells_table(x)
  if (length(which) > 1L) {
    op <- graphics::par(mfrow = c(1L, length(which)))
    on.exit(graphics::par(op), add = TRUE)
  }
  if ("sizes" %in% which)
    graphics::hist(tab$rows, main = "Rows per cell", xlab = "rows", col = "grey80", ...)
  if ("errors" %in% which) {
    e <- tab$cv_error
    if (all(is.na(e))) {
      graphics::plot.new()
      graphics::title(main = "No per-cell selection")
    } else {
      graphics::plot(tab$rows, e, xlab = "rows of the cell",
                     ylab = if (x$task == "classification") "cross-validated error"
                            else "cross-validated squared error",
                     main = "Per-cell validation", pch = 19, col = "grey30", ...)
    }
  }
  if ("cells" %in% which) {
    g <- 200L
    s <- seq(0, 1, length.out = g)
    grid <- as.matrix(expand.grid(s, s))
    lo <- x$spec$min
    sc <- x$spec$scale
    # the grid in scaled coordinates covers the training range; back to input units for the axes
    axis_val <- function(j) if (sc[j] > 0) lo[j] + s / sc[j] else lo[j] + s
    cell <- .kl_core("plot()", cpp_partition_route, grid, x$partition, .kl_threads(NULL))
    z <- matrix(cell, g, g)
    # neighbouring cells in different colours, without touching the random number stream
    perm <- order((seq_len(max(cell)) * 2654435761) %% 4294967291)
    graphics::image(axis_val(1L), axis_val(2L), matrix(perm[z], g, g),
                    col = grDevices::hcl.colors(max(12L, max(cell)), "Set 3"),
                    xlab = x$spec$features[1L], ylab = x$spec$features[2L],
                    main = sprintf("%d cells", max(cell)), ...)
  }
  invisible(x)
}

# Whether a kernel's width is left for the cells to choose: a family with a width, none set.
.kernel_width_free <- function(kernel) {
  .kernel_has_gamma(kernel) && is.null(kernel$gamma)
}

# kernel_svm(cells = ): one SVM per cell. cost NULL: chosen per cell.
.kernel_svm_cells <- function(inp, kernel, cost, gamma, epsilon, type, class.weights,
                              probability, prob_folds, tol, shrinking, cache, max_iter,
                              warm_start, threads, cells, fitted, call,
                              scale_response = FALSE) {
  caller <- "kernel_svm()"
  if (isTRUE(inp$precomputed))
    stop(sprintf("%s: cells need the input rows; they cannot be used with a precomputed kernel",
                 caller), call. = FALSE)
  if (!is.null(warm_start))
    stop(sprintf("%s: 'warm_start' cannot be used with cells", caller), call. = FALSE)
  if (!is.null(type)) {
    want <- if (type == "C-classification") "classification" else "regression"
    if (want != inp$task)
      stop(sprintf("%s: type = \"%s\" needs a %s response", caller, type,
                   if (want == "regression") "numeric" else "factor"), call. = FALSE)
  }
  kernel <- .svm_kernel(kernel, gamma, caller)
  free <- .kernel_width_free(kernel)
  if (free) kernel$gamma <- 1  # a placeholder: every cell sets its own
  kernel <- .resolve_kernel(kernel, ncol(inp$x), caller)
  params <- .svm_params(if (is.null(cost)) 1 else cost, epsilon, tol, shrinking, cache,
                        max_iter, probability, prob_folds, caller)
  .svm_check_task_args(inp$task, probability, class.weights, caller)
  if (probability) params$seed <- .kl_seed()
  w <- if (inp$task == "classification")
         .svm_class_weights(class.weights, inp$y, caller, inp$spec$response_levels)
  # a standardised response: one scaling for the whole data, so that epsilon and the cells'
  # cross-validated errors mean the same in every cell
  y_scaling <- .svr_scaling_of(inp, scale_response, caller)
  fit <- .kl_cells_fit(.svr_scale_input(inp, y_scaling), "svm", kernel, free, cost, params, w, cells, threads, caller)
  bad <- sum(!vapply(fit$cells, function(c) is.null(c$converged) || isTRUE(c$converged), NA))
  if (bad)
    warning(sprintf("%s: the solver reached the iteration cap in %d of %d cells; those models may be inaccurate",
                    caller, bad, length(fit$cells)), call. = FALSE)
  if (free) kernel$gamma <- NULL
  model <- .kl_localized_model(fit, inp, "svm", "kernel_svm", kernel, params, w, cells, call,
                               extra = list(type = if (inp$task == "classification")
                                              "C-classification" else "eps-regression",
                                            tol = tol, y_scaling = y_scaling))
  .kl_cells_keep_fitted(model, fitted, inp, fit$cell_of, threads)
}

# kernel_ridge(cells = ): one kernel ridge model per cell. lambda NULL: chosen per cell.
.kernel_ridge_cells <- function(inp, kernel, lambda, threads, cells, call) {
  caller <- "kernel_ridge()"
  kernel <- .as_kernel(kernel, caller)
  free <- .kernel_width_free(kernel)
  if (free) kernel$gamma <- 1
  kernel <- .resolve_kernel(kernel, ncol(inp$x), caller)
  if (!is.null(lambda)) .check_number(lambda, "lambda", lower = 0, lower_open = TRUE,
                                      caller = caller)
  params <- .svm_params(1, 0.1, 1e-3, TRUE, 100, NULL, FALSE, 5, caller)
  fit <- .kl_cells_fit(inp, "ridge", kernel, free, lambda, params, NULL, cells, threads, caller)
  if (free) kernel$gamma <- NULL
  model <- .kl_localized_model(fit, inp, "ridge", "kernel_ridge", kernel, params, NULL, cells,
                               call)
  .kl_cells_keep_fitted(model, TRUE, inp, fit$cell_of, threads)
}

# The fitted values of a localized model from its training rows and their cells.
.kl_cells_keep_fitted <- function(model, fitted, inp, cell_of, threads) {
  if (!fitted) return(model)
  type <- if (model$task == "regression") "response" else "class"
  f <- .kl_localized_predict_x(model, inp$x, cell_of, type, .kl_threads(threads))
  model$fitted.values <- f
  if (model$task == "regression") model$residuals <- as.numeric(inp$y) - f
  model
}

# hgk(cells = ): the kernel's weights learned by hgk() on a stratified sample of the rows, then
# one machine per cell with the learned kernel, its width (on top of the learned weights) and
# cost or penalty chosen per cell. loss "hinge": an SVM per cell; "ls": kernel ridge (the
# least-squares SVM) per cell; "auto": the loss the cross-validation on the sample chose.
.hgk_cells <- function(inp, args, cells, threads, call) {
  caller <- "hgk()"
  loss <- .kl_choice(args$loss, c("auto", "ls", "hinge"), "loss", caller)
  if (loss == "hinge" && inp$task != "classification")
    stop(sprintf("%s: loss = \"hinge\" is for classification; this is a regression (use loss = \"ls\")",
                 caller), call. = FALSE)
  if (isTRUE(args$probability) && loss == "auto") loss <- "hinge"
  n <- nrow(inp$x)
  m <- min(n, cells$sample_learn)
  rows <- if (m >= n) seq_len(n) else .kl_stratified_sample(inp$y, m)
  sub <- inp
  sub$x <- inp$x[rows, , drop = FALSE]
  sub$y <- inp$y[rows]
  if (inp$task == "classification") {
    sub$y <- droplevels(sub$y)
    if (nlevels(sub$y) < 2L)
      stop(sprintf("%s: the sample of %d rows for learning the kernel has one class", caller, m),
           call. = FALSE)
    sub$levels <- levels(sub$y)
  }
  t0 <- proc.time()[["elapsed"]]
  learned <- .hgk_fit(sub, args$depth, args$nodes, args$kernel, args$candidates,
                      args$saturation, loss, args$gradient, args$final, args$folds,
                      args$gamma, args$lambda, FALSE, args$control, TRUE, threads, NULL,
                      baseline = args$baseline)
  learn_time <- proc.time()[["elapsed"]] - t0
  loss <- learned$loss  # "auto": the loss the sample's cross-validation chose
  # (a regression whose tuned Gaussian SVR won on the sample: the cells' kernel ridge on that
  # kernel, the Gaussian, with each cell's own width and penalty)
  if (loss == "svr") loss <- "ls"
  kernel <- learned_kernel(learned)
  kernel$gamma <- NULL  # the width on top of the learned weights: chosen per cell
  if (loss == "hinge") {
    model <- .kernel_svm_cells(inp, kernel, NULL, NULL, 0.1, NULL, NULL, args$probability, 5,
                               1e-3, TRUE, 1024, NULL, NULL, threads, cells, TRUE, call)
  } else {
    if (args$probability)
      stop(sprintf("%s: probability = TRUE needs loss = \"hinge\"; least-squares outputs are not probabilities",
                   caller), call. = FALSE)
    model <- .kernel_ridge_cells(inp, kernel, NULL, threads, cells, call)
  }
  model$learner <- "hgk"
  model$learned <- list(rows = m, seconds = learn_time, relevance = learned$relevance,
                        architecture = learned$architecture, loss = loss,
                        selection = learned$selection)
  model$time <- model$time + learn_time
  model
}

# Row numbers of a sample of m rows, stratified by class for a factor (each class in proportion,
# at least one row of each).
.kl_stratified_sample <- function(y, m) {
  n <- length(y)
  if (!is.factor(y)) return(sort(sample.int(n, m)))
  groups <- split(seq_len(n), y)
  take <- pmax(1L, round(as.numeric(m) * lengths(groups) / n))
  take <- pmin(take, lengths(groups))
  sort(unlist(lapply(seq_along(groups), function(g) {
    r <- groups[[g]]
    if (length(r) <= take[g]) r else r[sample.int(length(r), take[g])]
  }), use.names = FALSE))
}

# tkl(cells = ): P learned in every cell, with the cell's rows scaled to [0, 1] by the cell's own
# range (so the tessellation follows the cell), and the given cost and delta.
.tkl_cells <- function(inp, args, cells, threads, call, y_scaling = NULL) {
  caller <- "tkl()"
  t0 <- proc.time()[["elapsed"]]
  threads <- .kl_threads(threads)
  .svm_check_task_args(inp$task, args$probability, args$class.weights, caller)
  .check_number(args$cost, "cost", lower = 0, lower_open = TRUE, caller = caller)
  .check_number(args$delta, "delta", lower = 0, caller = caller)
  w <- if (inp$task == "classification")
         .svm_class_weights(args$class.weights, inp$y, caller, inp$spec$response_levels)
  part <- .kl_cells_partition(inp$x, cells, threads, caller)
  own <- .kl_cell_rows(part)
  # every cell works on the response standardised over the whole data (scale_response)
  tasks <- .kl_cell_tasks(.svr_scale_input(inp, y_scaling), part, own)
  use_future <- .klcv_use_future()
  # the Gaussian each cell compares with is tuned over the grid kernel_svm(cells = ) uses
  # (widths relative to the cell's own scale, the cells' costs), on the cell's rows in the
  # scaling of the whole input
  shared <- list(args = args, weight = w, levels = inp$levels,
                 gaussian_grid = list(gamma = .kl_cells_gamma_grid(cells, "svm"),
                                      relative = cells$relative_gamma, cost = cells$cost_grid),
                 threads = if (use_future) NULL else threads)
  res <- .kl_task_map(tasks, .tkl_cell_task, shared = shared, packages = "kernlearn",
                     unit = "cells")
  cell_of <- part$cell_of
  part$cell_of <- NULL
  part$extra <- NULL
  fit <- list(partition = part, cells = res, time = proc.time()[["elapsed"]] - t0)
  params <- list(probability = isTRUE(args$probability), epsilon = args$epsilon)
  kernel <- tessellated_kernel(diag(2), 0L, lower = -args$delta, upper = 1 + args$delta)
  model <- .kl_localized_model(fit, inp, "svm", "tkl", kernel, params, w, cells, call,
                               extra = list(degree = as.integer(args$degree),
                                            delta = args$delta, cost_learn = args$cost,
                                            y_scaling = y_scaling))
  .kl_cells_keep_fitted(model, isTRUE(args$fitted), inp, cell_of, threads)
}

# One cell of tkl(cells = ): a tkl fit on the cell's rows scaled to [0, 1] by the cell's range.
.tkl_cell_task <- function(task, shared, progress = NULL) {
  threads <- shared$threads
  if (is.null(threads)) {
    threads <- if (requireNamespace("parallelly", quietly = TRUE))
      max(1L, as.integer(parallelly::availableCores())) else 1L
  }
  a <- shared$args
  y <- task$y
  cls <- is.factor(y)
  out <- list(rows = nrow(task$x), own = task$own, gamma = NA_real_, cost = a$cost,
              cv_error = NA_real_)
  if (cls) {
    g <- sort(unique(as.integer(y)))
    out$classes <- g
    if (length(g) < 2L) {
      out$cost <- NA_real_
      if (is.function(progress)) progress(sprintf("cell %d", task$cell))
      return(out)
    }
    y <- factor(shared$levels[as.integer(y)], levels = shared$levels[g])
  }
  cx <- task$x
  colnames(cx) <- paste0("V", seq_len(ncol(cx)))
  inp <- .kl_finish_input(cx, y, "tkl()", spec = list(kind = "matrix", columns = colnames(cx)),
                          scale = "minmax")
  cw <- if (cls) stats::setNames(shared$weight[g], levels(y))
  normalize <- if (is.null(a$normalize)) TRUE else a$normalize
  precision <- if (is.null(a$precision)) "auto" else a$precision
  algorithm <- if (is.null(a$algorithm)) "eg" else a$algorithm
  # baseline = TRUE: the cell's learned kernel against the cell's tuned Gaussian SVM, the
  # better one the cell's model (as tkl() without cells does on all rows)
  fit <- .kl_with_seed(task$seed,
    if (isTRUE(a$baseline))
      .tkl_fit_protected(inp, a$degree, a$delta, a$cost, a$epsilon, a$tol, a$maxit, cw,
                         a$probability, a$svm_tol, a$cache, threads, NULL, TRUE, a$ridge,
                         normalize, precision, grid = shared$gaussian_grid,
                         x_gauss = task$x, algorithm = algorithm)
    else .tkl_fit(inp, a$degree, a$delta, a$cost, a$epsilon, a$tol, a$maxit, cw,
                  a$probability, a$svm_tol, a$cache, threads, NULL, a$ridge, normalize,
                  precision, algorithm = algorithm))
  sel <- fit$selection
  out$choice <- if (is.null(sel)) "learned" else sel$choice
  if (identical(out$choice, "baseline")) {
    out$gamma <- sel$baseline$gamma
    out$cost <- sel$baseline$cost
  }
  if (!is.null(sel))
    out$cv_error <- if (identical(out$choice, "baseline")) sel$baseline_error
                    else sel$learned_error
  s <- fit$svm
  out$SV <- s$SV
  out$coefs <- s$coefs
  out$clip <- s$clip  # a least-squares SVM's bounds (.tkl_ls_model)
  out$nSV <- if (cls) as.integer(s$nSV) else nrow(s$SV)
  out$rho <- s$rho
  out$converged <- all(s$converged)
  if (isTRUE(a$probability)) {
    out$probA <- s$probA
    out$probB <- s$probB
  }
  out$kernel <- s$kernel  # the tessellated kernel, or the Gaussian where that won
  # the learned kernel works on the cell's rows scaled to [0, 1] by the cell's range; the
  # Gaussian on the rows as the whole input is scaled (as kernel_svm(cells = ) does)
  if (!isTRUE(fit$gaussian_coordinates)) {
    out$xmin <- inp$spec$min
    out$xscale <- inp$spec$scale
  }
  out$gap_converged <- fit$converged
  if (is.function(progress)) progress(sprintf("cell %d", task$cell))
  out
}

# Evaluates expr with R's random number generator seeded from two integers, restoring the
# caller's generator afterwards (so a task's draws do not depend on where it runs).
.kl_with_seed <- function(seed, expr) {
  state <- .klcv_rng_save()
  on.exit(.klcv_rng_restore(state), add = TRUE)
  set.seed(as.integer(abs(seed[1L]) %% 2147483647L), kind = "Mersenne-Twister",
           normal.kind = "Inversion", sample.kind = "Rejection")
  expr
}
