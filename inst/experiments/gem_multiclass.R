# GEM against kernel_svm, e1071 and ranger on multiclass benchmarks, on the same splits.
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/gem_multiclass.R [covtype|letter|pendigits|all]
#
# covtype: the paper's protocol (random 90/10 split, hyperparameters on a held-out part of the
# training rows) on the first 20000 rows of Covertype (the paper used all 581012 rows; see
# the vignette). GEM, deep GEM, random Fourier features (RFF, logistic regression) and GEM on
# RFF, against kernel_svm, e1071::svm and ranger.
# letter: rows 1..16000 train / 16001..20000 test. pendigits: the given train / test files.
# Writes inst/extdata/gem_multiclass.csv.
library(kernlearn)
args <- commandArgs(trailingOnly = TRUE)
what <- if (length(args)) args[1] else "all"
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

# Chooses among settings on a held-out fifth of the training rows, refits on all of them.
tune_holdout <- function(fitfun, settings, x, y) {
  set.seed(2)
  hold <- sample(nrow(x), nrow(x) %/% 5)
  errs <- vapply(settings, function(s) {
    f <- fitfun(x[-hold, ], y[-hold], s)
    mean(predict(f, x[hold, ]) != y[hold])
  }, numeric(1))
  settings[[which.min(errs)]]
}

compare <- function(name, x, y, xt, yt, gem_grid, svm_grid, deep = TRUE, rff_grid = NULL) {
  gem_fit <- function(x, y, s) suppressWarnings(do.call(gem, c(list(x, y, threads = threads), s)))
  # GEM
  s <- tune_holdout(gem_fit, gem_grid, x, y)
  r <- timed(gem_fit(x, y, s))
  record(name, "GEM", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  if (deep) {
    dgrid <- lapply(gem_grid, function(g) utils::modifyList(g, list(depth = 2, degree = 2, threshold = max(2, g$threshold))))
    s <- tune_holdout(gem_fit, dgrid, x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "deep GEM", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  }
  if (!is.null(rff_grid)) {
    s <- tune_holdout(gem_fit, lapply(rff_grid, function(g) c(g, list(pairs = "none", degree = 1))), x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "RFF", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
    s <- tune_holdout(gem_fit, lapply(rff_grid, function(g) c(g, list(top = 20, threshold = 2, degree = 2))), x, y)
    r <- timed(gem_fit(x, y, s))
    record(name, "GEM + RFF", deparse1(s), mean(predict(r$value, xt) != yt), r$secs)
  }
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
  if (requireNamespace("ranger", quietly = TRUE)) {
    set.seed(4)
    r <- timed(ranger::ranger(x = as.data.frame(x), y = y, num.trees = 500, num.threads = threads))
    record(name, "ranger", "500 trees", mean(predict(r$value, as.data.frame(xt))$predictions != yt), r$secs)
  }
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
                          g3(rff = list(dim = 1000, gamma = 16), lambda = 1e-4)))
}
if (what %in% c("letter", "all")) {
  d <- kl_dataset("letter")
  compare("letter (16000 / 4000)", d$x[1:16000, ], d$y[1:16000], d$x[16001:20000, ], d$y[16001:20000],
          gem_grid = list(g3(ridge = 0.1, top = 16, threshold = 1.5, lambda = 1e-4),
                          g3(ridge = 0.01, top = 16, threshold = 1.5, lambda = 1e-4)),
          svm_grid = list(cost = 2^c(2, 4, 6), gamma = 2^c(2, 3, 4)), deep = TRUE)
}
if (what %in% c("pendigits", "all")) {
  d <- kl_dataset("pendigits")
  tr <- d$train
  compare("pendigits (7494 / 3498)", d$x[tr, ], d$y[tr], d$x[-tr, ], d$y[-tr],
          gem_grid = list(g3(ridge = 0.1, top = 16, threshold = 1.5, lambda = 1e-4),
                          g3(ridge = 0.01, top = 16, threshold = 1.5, lambda = 1e-4)),
          svm_grid = list(cost = 2^c(2, 4, 6), gamma = 2^c(0, 2, 4)), deep = TRUE)
}
