# GEM against kernel_svm, e1071 and ranger on multiclass benchmarks, on the same splits.
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/gem_multiclass.R [covtype|letter|pendigits|all] [gem|deep|rff|svm|ranger|all]
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/gem_multiclass.R covtype_full [gem|deep|rff|gemrff|cells|ranger|svm|heads|all]
#
# covtype_full: the paper's protocol on all 581012 rows (random 90/10 split). The GEM variants
# use the calibrated least-squares head (a logistic fit on 523000 rows x 4000 features takes
# about half an hour per setting here), and random feature maps of at most 2000 (RFF) and 1000
# (GEM + RFF) dimensions, so that the double-precision random features and the
# single-precision GEM features of 523000 rows fit in 24 GB. Settings are chosen by fitting on
# 100000 training rows and testing on 50000 other training rows, then refitted on all
# training rows. Deep GEM's second layer does not keep its input (as in the authors' MNIST
# code), which keeps its features within memory. ranger grows 100 trees (mtry chosen the same
# way) on all training rows; kernel_svm (cost and gamma from the 20000-row run) is fitted on a
# 50000-row sample of them, as an exact-kernel reference at a size this machine allows.
# "cells": gem() with its defaults (on this many rows it compares one model with cells of 1000
# rows on held-out rows and fits the better). "heads" (not part of "all") compares the two classifiers on the GEM features of the chosen
# single-layer setting: calibrated least squares against logistic regression at two penalties,
# each fitted on the 100000 tuning rows and scored on the 50000 held-out rows.
#
# covtype: the paper's protocol (random 90/10 split, hyperparameters on a held-out part of the
# training rows) on the first 20000 rows of Covertype (the paper used all 581012 rows; see
# the vignette). GEM, deep GEM, random Fourier features (RFF, logistic regression) and GEM on
# RFF, against kernel_svm, e1071::svm and ranger.
# letter: rows 1..16000 train / 16001..20000 test; GEM on random hypercube class pairs (26
# classes make 650 ordered pairs). pendigits: the given train / test files. Single-layer GEM
# only on these two.
# Writes inst/extdata/gem_multiclass.csv.
library(kernlearn)
args <- commandArgs(trailingOnly = TRUE)
what <- if (length(args)) args[1] else "all"
part <- if (length(args) > 1) args[2] else "all"
out <- file.path("inst", "extdata", "gem_multiclass.csv")
threads <- 2L

record <- function(data, method, settings, err, secs) {
  row <- data.frame(data = data, method = method, settings = settings,
                    test_error = round(100 * err, 2), seconds = round(secs, 1))
  old <- if (file.exists(out)) utils::read.csv(out, stringsAsFactors = FALSE) else NULL
  if (!is.null(old)) old <- old[!(old$data == data & old$method == method), , drop = FALSE]
  utils::write.csv(rbind(old, row), out, row.names = FALSE)
  print(row)
}
timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  v <- force(expr)
  list(value = v, secs = proc.time()[["elapsed"]] - t0)
}
scale01 <- function(x, ref) {
  mn <- apply(ref, 2, min); rg <- apply(ref, 2, max) - mn; rg[rg == 0] <- 1
  sweep(sweep(x, 2, mn), 2, rg, "/")
}

# Chooses among settings by fitting on the training rows `fit_rows` and testing on the
# training rows `hold`; by default a held-out fifth of the training rows against the rest.
tune_holdout <- function(fitfun, settings, x, y, fit_rows = NULL, hold = NULL) {
  if (is.null(hold)) {
    set.seed(2)
    hold <- sample(nrow(x), nrow(x) %/% 5)
    fit_rows <- setdiff(seq_len(nrow(x)), hold)
  }
  # A setting that cannot be fitted (typically gem()'s memory check) is reported and skipped.
  errs <- vapply(settings, function(s) tryCatch({
    f <- fitfun(x[fit_rows, ], y[fit_rows], s)
    mean(predict(f, x[hold, ]) != y[hold])
  }, error = function(e) {
    message("setting skipped: ", conditionMessage(e))
    Inf
  }), numeric(1))
  message("holdout errors: ", paste(sprintf("%.4f", errs), collapse = " "))
  best <- settings[[which.min(errs)]]
  # The other fitted settings, best first, for callers that need a fallback.
  ok <- order(errs)[is.finite(sort(errs))]
  attr(best, "ranked") <- settings[ok]
  attr(best, "errors") <- errs
  best
}

# ranger with mtry chosen like the other methods' settings (default floor(sqrt(p)), p / 3 or
# p; the default is poor on Covertype, whose 44 sparse indicator columns dominate random
# draws), then refitted with the same number of trees.
predict.ranger_fit <- function(object, newdata, ...) predict(object$fit, newdata)$predictions
run_ranger <- function(name, x, y, xt, yt, trees, fit_rows = NULL, hold = NULL) {
  if (!requireNamespace("ranger", quietly = TRUE)) return(invisible())
  p <- ncol(x)
  grid <- lapply(unique(c(floor(sqrt(p)), max(1, round(p / 3)), p)), function(m) list(mtry = m))
  rf <- function(x, y, s) {
    set.seed(4)
    structure(list(fit = ranger::ranger(x = x, y = y, num.trees = trees, mtry = s$mtry,
                                        num.threads = threads)), class = "ranger_fit")
  }
  s <- tune_holdout(rf, grid, x, y, fit_rows, hold)
  r <- timed(rf(x, y, s))
  record(name, "ranger", sprintf("%d trees, mtry %d (of %s, holdout)", trees, s$mtry,
                                 paste(vapply(grid, `[[`, 1, "mtry"), collapse = "/")),
         mean(predict(r$value, xt) != yt), r$secs)
  rm(r); invisible(gc())
}

# parts: "all" or one of gem, deep, rff (RFF and GEM + RFF), svm (kernel_svm and e1071), ranger.
compare <- function(name, x, y, xt, yt, gem_grid, svm_grid, deep = TRUE, rff_grid = NULL,
                    parts = "all") {
  gem_fit <- function(x, y, s) suppressWarnings(do.call(gem, c(list(x, y, threads = threads), s)))
  if (parts %in% c("gem", "all")) {
    s <- tune_holdout(gem_fit, gem_grid, x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "GEM", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  }
  if (deep && parts %in% c("deep", "all")) {
    dgrid <- lapply(gem_grid, function(g) utils::modifyList(g, list(depth = 2, degree = 2, threshold = max(2, g$threshold))))
    s <- tune_holdout(gem_fit, dgrid, x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "deep GEM", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  }
  if (!is.null(rff_grid) && parts %in% c("rff", "all")) {
    s <- tune_holdout(gem_fit, lapply(rff_grid, function(g) c(g, list(pairs = "none", degree = 1))), x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "RFF", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
    s <- tune_holdout(gem_fit, lapply(rff_grid, function(g) c(g, list(top = 20, threshold = 2, degree = 2))), x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "GEM + RFF", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  }
  if (parts %in% c("svm", "all")) {
    # kernel_svm tuned by 5-fold CV, then e1071 with the same parameters
    set.seed(3)
    tn <- kl_tune(kernel_svm, x, y, grid = svm_grid, folds = 5, threads = threads)
    b <- tn$best
    r <- timed(kernel_svm(x, y, cost = b$cost, gamma = b$gamma, threads = threads))
    record(name, "kernel_svm", sprintf("cost %g, gamma %g (5-fold CV)", b$cost, b$gamma),
           mean(predict(r$value, xt) != yt), r$secs)
    if (requireNamespace("e1071", quietly = TRUE)) {
      xs <- scale01(x, x); xts <- scale01(xt, x)
      r <- timed(e1071::svm(xs, y, cost = b$cost, gamma = b$gamma, scale = FALSE))
      record(name, "e1071::svm", sprintf("cost %g, gamma %g", b$cost, b$gamma),
             mean(predict(r$value, xts) != yt), r$secs)
    }
  }
  if (parts %in% c("ranger", "all")) run_ranger(name, x, y, xt, yt, trees = 500)
}

g3 <- function(...) list(...)
if (what %in% c("covtype", "all")) {
  d <- kl_dataset("covtype_subset20k")
  set.seed(1)
  perm <- sample(nrow(d$x))
  tr <- perm[1:18000]; te <- perm[18001:20000]
  compare("covtype (20000 rows, random 90/10)", d$x[tr, ], d$y[tr], d$x[te, ], d$y[te],
          gem_grid = list(g3(ridge = 0.1, top = 30, threshold = 1.5, lambda = 1e-4),
                          g3(ridge = 0.01, top = 30, threshold = 1.5, lambda = 1e-4),
                          g3(ridge = 0.1, top = 30, threshold = 3, lambda = 1e-3)),
          svm_grid = list(cost = 2^c(2, 4, 6), gamma = 2^c(1, 3, 5)),
          rff_grid = list(g3(rff = list(dim = 1000, gamma = 4), lambda = 1e-4),
                          g3(rff = list(dim = 1000, gamma = 16), lambda = 1e-4)), parts = part)
}
if (what %in% c("letter", "all")) {
  d <- kl_dataset("letter")
  compare("letter (16000 / 4000)", d$x[1:16000, ], d$y[1:16000], d$x[16001:20000, ], d$y[16001:20000],
          gem_grid = list(g3(pairs = "hypercube", ridge = 0.1, top = 8, threshold = 1.5, degree = 2, lambda = 1e-4),
                          g3(pairs = "hypercube", ridge = 0.01, top = 8, threshold = 1.5, degree = 2, lambda = 1e-4)),
          svm_grid = list(cost = 2^c(2, 4, 6), gamma = 2^c(2, 3, 4)), deep = FALSE, parts = part)
}
if (what %in% c("pendigits", "all")) {
  d <- kl_dataset("pendigits")
  tr <- d$train
  compare("pendigits (7494 / 3498)", d$x[tr, ], d$y[tr], d$x[-tr, ], d$y[-tr],
          gem_grid = list(g3(ridge = 0.1, top = 8, threshold = 1.5, degree = 2, lambda = 1e-4),
                          g3(ridge = 0.01, top = 8, threshold = 1.5, degree = 2, lambda = 1e-4)),
          svm_grid = list(cost = 2^c(2, 4, 6), gamma = 2^c(0, 2, 4)), deep = FALSE, parts = part)
}
if (what == "covtype_full") {
  d <- kl_dataset("covtype")
  set.seed(1)
  perm <- sample(nrow(d$x))
  ntr <- round(0.9 * nrow(d$x))
  x <- d$x[perm[seq_len(ntr)], ]; y <- d$y[perm[seq_len(ntr)]]
  xt <- d$x[perm[-seq_len(ntr)], ]; yt <- d$y[perm[-seq_len(ntr)]]
  rm(d, perm)
  name <- sprintf("covtype (581012 rows, random 90/10: %d / %d)", nrow(x), nrow(xt))
  set.seed(2)
  sub <- sample(nrow(x), 150000)
  fit_rows <- sub[1:100000]; hold <- sub[100001:150000]
  # the paper's GEM: one model for the whole input space (cells = FALSE; gem()'s default on this
  # many rows would compare it with cells, the "cells" part below)
  gem_fit <- function(x, y, s) suppressWarnings(do.call(gem, c(list(x, y, threads = threads, head = "cls", cells = FALSE), s)))
  # The refit on all training rows needs about five times the memory of a holdout fit: when
  # gem() refuses it, the next setting in holdout order is refitted instead (and said so).
  run_gem <- function(method, settings) {
    tuned <- tune_holdout(gem_fit, settings, x, y, fit_rows, hold)
    ranked <- attr(tuned, "ranked")
    grid <- sprintf("; holdout errors of the grid (in order): %s%%",
                    paste(sprintf("%.2f", 100 * attr(tuned, "errors")), collapse = ", "))
    for (k in seq_along(ranked)) {
      s <- ranked[[k]]
      r <- tryCatch(timed(gem_fit(x, y, s)), error = function(e) {
        message("refit refused: ", conditionMessage(e)); NULL
      })
      if (is.null(r)) next
      note <- if (k > 1) sprintf(" (holdout rank %d: better settings did not fit in memory)", k) else ""
      tm <- r$value$members[[1]]$timing
      h <- r$value$members[[1]]$head
      stages <- sprintf("; refit stages: directions (with the moments) %.0f s, intermediate features %.0f s, head %.0f s (features %.0f s, Gram matrix %.0f s, Cholesky %.0f s, steps %.0f s); %d features",
                        tm[["directions"]], tm[["features"]], tm[["logistic"]],
                        tm[["logistic"]] - sum(h$seconds), h$seconds[["gram"]],
                        h$seconds[["factor"]], h$seconds[["steps"]], r$value$members[[1]]$p)
      record(name, method, paste0("head = cls, ", deparse1(s), note, grid, stages),
             mean(predict(r$value, xt) != yt), r$secs)
      rm(r); invisible(gc())
      return(invisible())
    }
    message(method, ": no setting could be refitted")
  }
  g <- function(...) list(...)
  if (part %in% c("gem", "all"))
    run_gem("GEM", list(g(ridge = 0.01, top = 30, threshold = 1.5, lambda = 0.5),
                        g(ridge = 0.1, top = 30, threshold = 1.5, lambda = 0.5),
                        g(ridge = 0.01, top = 30, threshold = 3, lambda = 0.5),
                        g(ridge = 0.01, top = 30, threshold = 0.5, lambda = 0.1),
                        g(ridge = 0.01, top = 30, threshold = 0, lambda = 0.1),
                        g(ridge = 0.01, top = 30, threshold = 0, lambda = 0.5)))
  if (part %in% c("deep", "all"))
    run_gem("deep GEM", list(g(ridge = 0.1, top = 30, threshold = 3, lambda = 0.5, depth = 2, degree = 2, keep_input = FALSE),
                             g(ridge = 0.01, top = 30, threshold = 3, lambda = 0.5, depth = 2, degree = 2, keep_input = FALSE),
                             g(ridge = 0.01, top = 30, threshold = 1.5, lambda = 0.1, depth = 2, degree = 2, keep_input = FALSE),
                             g(ridge = 0.01, top = 30, threshold = 0.5, lambda = 0.1, depth = 2, degree = 2, keep_input = FALSE),
                             g(ridge = 0.01, top = 30, threshold = 1.5, lambda = 0.02, depth = 2, degree = 2, keep_input = FALSE),
                             g(ridge = 0.01, top = 30, threshold = 1.5, lambda = 0.1, depth = 2, degree = 2, keep_input = TRUE)))
  if (part %in% c("rff", "all"))
    run_gem("RFF", list(g(rff = list(dim = 4000, gamma = 4), pairs = "none", degree = 1, lambda = 0.5),
                        g(rff = list(dim = 4000, gamma = 4), pairs = "none", degree = 1, lambda = 0.1),
                        g(rff = list(dim = 4000, gamma = 16), pairs = "none", degree = 1, lambda = 0.5)))
  if (part %in% c("gemrff", "all"))
    run_gem("GEM + RFF", list(g(rff = list(dim = 2000, gamma = 16), top = 20, threshold = 0.5, degree = 2, lambda = 0.1),
                              g(rff = list(dim = 2000, gamma = 16), top = 20, threshold = 0.5, degree = 2, lambda = 0.02),
                              g(rff = list(dim = 2000, gamma = 16), top = 20, threshold = 2, degree = 2, lambda = 0.5),
                              g(rff = list(dim = 2000, gamma = 4), top = 20, threshold = 0.5, degree = 2, lambda = 0.1)))
  if (part %in% c("cells", "all")) {
    # gem() with its defaults: on this many rows one model and cells of 1000 rows are compared
    # on held-out rows of a sample, and the better one is fitted on all training rows
    set.seed(6)
    w <- character()
    r <- withCallingHandlers(timed(gem(x, y, threads = threads)), warning = function(c) {
      w <<- c(w, conditionMessage(c)); invokeRestart("muffleWarning")
    })
    f <- r$value
    sel <- f$selection
    record(name, "gem() defaults",
           paste0(if (inherits(f, "gem_cells"))
                    sprintf("cells of at most %d rows (%d cells)", f$settings$cell_size, length(f$cells))
                  else "one model",
                  if (!is.null(sel)) sprintf("; chosen on %d held-out rows of a sample: one model %.2f%%, cells %.2f%%",
                                             sel$validation_rows, 100 * sel$global_error,
                                             100 * sel$cells_error) else "",
                  if (length(w)) paste0("; warnings: ", paste(unique(w), collapse = " | ")) else "; no warning"),
           mean(predict(f, xt) != yt), r$secs)
    rm(r, f); invisible(gc())
  }
  if (part %in% c("ranger", "all")) run_ranger(name, x, y, xt, yt, trees = 100, fit_rows, hold)
  if (part == "heads") {
    hname <- "covtype (581012 rows): 100000 tuning rows, 50000 held-out rows"
    base <- g(ridge = 0.01, top = 30, threshold = 1.5)
    for (h in list(g(head = "cls", lambda = 0.5), g(head = "logistic", lambda = 1e-4),
                   g(head = "logistic", lambda = 1e-3))) {
      r <- timed(suppressWarnings(do.call(gem, c(list(x[fit_rows, ], y[fit_rows], threads = threads),
                                                 base, h))))
      hd <- r$value$members[[1]]$head
      record(hname, sprintf("GEM, %s head, lambda %g", h$head, h$lambda),
             sprintf("%s; %d features; %s%s", deparse1(base), r$value$members[[1]]$p,
                     if (h$head == "cls") "calibration steps " else "L-BFGS iterations ",
                     hd$iterations),
             mean(predict(r$value, x[hold, ]) != y[hold]), r$secs)
      rm(r); invisible(gc())
    }
  }
  if (part %in% c("svm", "all")) {
    set.seed(5)
    s50 <- sample(nrow(x), 50000)
    r <- timed(kernel_svm(x[s50, ], y[s50], cost = 16, gamma = 8, threads = threads))
    record(name, "kernel_svm (50000 training rows)", "cost 16, gamma 8 (from the 20000-row CV)",
           mean(predict(r$value, xt) != yt), r$secs)
  }
}
