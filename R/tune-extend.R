# kl_tune(): the grid grows past an edge that wins. When the best point lies at the smallest or
# largest value of a numeric grid element that is a scale (a geometric grid: costs, widths,
# penalties, margins), or at an end of an arithmetic grid of non-whole numbers, the next value
# past that end (the grid's own ratio or step), with the other parameters at the best point's,
# is cross-validated on the same folds with the same fold seeds; the search goes on while the
# new point is better, at most `extend` steps past each end. Whole-number grids with a constant
# step (degrees, node counts) are counts, not scales, and are not extended.

# How a grid element's values continue: list(kind = "ratio" | "step", by), or NULL.
.kl_tune_spacing <- function(v) {
  if (!is.numeric(v) || !is.null(dim(v)) || length(v) < 2L || anyNA(v) || any(!is.finite(v)))
    return(NULL)
  u <- sort(unique(as.numeric(v)))
  if (length(u) < 2L) return(NULL)
  whole <- all(u == round(u))
  if (all(u > 0) && (length(u) >= 3L || !whole)) {
    r <- u[-1L] / u[-length(u)]
    if (max(r) / min(r) < 1.01) return(list(kind = "ratio", by = exp(mean(log(r)))))
  }
  if (!whole) {
    s <- diff(u)
    if (max(s) / min(s) < 1.01) return(list(kind = "step", by = mean(s)))
  }
  NULL
}

# The value past the end `dir` (+1 above the largest, -1 below the smallest) of values u.
.kl_tune_next <- function(u, sp, dir) {
  x <- if (dir > 0) max(u) else min(u)
  nx <- if (sp$kind == "ratio") x * sp$by^dir else x + dir * sp$by
  if (sp$kind == "step" && x > 0 && nx < 0) return(NULL)  # no crossing of zero
  if (sp$kind == "step") nx <- signif(nx, 12)
  nx
}

.kl_tune_extend <- function(spec, g, run, grid, foldid, metric, maximize, extend, caller) {
  spacing <- lapply(grid, .kl_tune_spacing)
  spacing <- spacing[!vapply(spacing, is.null, TRUE)]
  none <- list(g = g, run = run, extension = NULL)
  if (!length(spacing)) return(none)
  score_of <- function(fm) {
    m <- rowMeans(fm)
    if (maximize) -m else m
  }
  steps <- matrix(0L, length(spacing), 2L, dimnames = list(names(spacing), c("down", "up")))
  stopped <- steps > 0L
  ext <- list()
  repeat {
    sc <- score_of(run$fold_metrics)
    b <- which.min(sc)
    best <- g$points[[b]]
    tried <- FALSE
    for (p in names(spacing)) {
      u <- unique(as.numeric(unlist(lapply(g$points, `[[`, p))))
      for (dir in c(-1L, 1L)) {
        j <- if (dir > 0) 2L else 1L
        at_end <- isTRUE(all.equal(best[[p]], if (dir > 0) max(u) else min(u)))
        if (!at_end || stopped[p, j] || steps[p, j] >= extend) next
        nx <- .kl_tune_next(u, spacing[[p]], dir)
        if (is.null(nx)) {
          stopped[p, j] <- TRUE
          next
        }
        point <- best
        point[[p]] <- nx
        # A failing fit past the edge ends the search in that direction (not the tuning); an
        # interrupt is not an error and stops kl_tune().
        r <- tryCatch(.klcv_run(spec, list(point), foldid, metric, caller, seeds = run$seeds),
                      error = function(e) NULL)
        steps[p, j] <- steps[p, j] + 1L
        tried <- TRUE
        if (is.null(r) || is.na(rowMeans(r$fold_metrics))) {
          stopped[p, j] <- TRUE
          ext[[length(ext) + 1L]] <- data.frame(parameter = p, value = nx, mean = NA_real_,
                                               better = FALSE, stringsAsFactors = FALSE)
          next
        }
        row <- g$table[b, , drop = FALSE]
        row[[p]] <- nx
        row$extended <- TRUE
        lab <- g$labels[b, , drop = FALSE]
        lab[[p]] <- format(nx)
        g$points[[length(g$points) + 1L]] <- point
        g$table <- rbind(g$table, row)
        g$labels <- rbind(g$labels, lab)
        fm <- rbind(run$fold_metrics, r$fold_metrics)
        better <- score_of(r$fold_metrics) < sc[b]
        run$fold_metrics <- fm
        run$preds <- c(run$preds, r$preds)
        ext[[length(ext) + 1L]] <- data.frame(parameter = p, value = nx,
                                             mean = rowMeans(r$fold_metrics), better = better,
                                             stringsAsFactors = FALSE)
        if (!better) stopped[p, j] <- TRUE
        break
      }
      if (tried) break
    }
    if (!tried) break
  }
  rownames(g$table) <- NULL
  rownames(g$labels) <- NULL
  list(g = g, run = run, extension = if (length(ext)) do.call(rbind, ext))
}
