# GEM on MNIST: the paper's protocol (Karampatziakis & Mineiro 2014, Section 4.1).
# Hyperparameters are chosen on a held-out part of the training set (the last 10000 of the
# 60000 training images), then the model is refitted on all 60000 and tested on the 10000
# test images. Pixels are divided by 255, as in the paper.
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/gem_mnist.R \
#     [single|validate|final|deep|all] [lambdas] [logistic|logistic_raw|cls] [thresholds]
#     [ridges] [tops]
#
# lambdas: comma-separated penalties to validate (default 1e-5,1e-4,1e-3,1e-2 for the
# logistic head, 0.5 for calibrated least squares); thresholds: comma-separated eigenvalue
# thresholds to validate with each of them (default 2.5, the authors' value); ridges:
# comma-separated absolute ridges (default 0.05, the authors' value; settings without a
# ridge in the output file used it); tops: comma-separated numbers of eigenvectors kept per
# class pair (default 30, the authors' value). The final refit uses the best validation
# result of that head recorded in the output file so far; "validate" only adds validation
# runs; "final" only refits the best of them. The head defaults to logistic regression (the
# paper's), on standardised features; "logistic_raw" is the same on unstandardised features;
# "cls" is calibrated least squares on unstandardised features (the classifier of the
# authors' MNIST code).
#
# Writes inst/extdata/gem_mnist.csv (one row per fit: stage, settings, errors, seconds).
library(kernlearn)
args <- commandArgs(trailingOnly = TRUE)
what <- if (length(args)) args[1] else "all"
head <- if (length(args) > 2) args[3] else "logistic"
model <- switch(head, cls = "GEM (cls)", logistic_raw = "GEM (logistic, unstandardised)", "GEM")
out <- file.path("inst", "extdata", "gem_mnist.csv")
threads <- as.integer(Sys.getenv("KERNLEARN_THREADS", "2"))

m <- kl_dataset("mnist")
x <- m$x[m$train, ] / 255
y <- m$y[m$train]
xt <- m$x[-m$train, ] / 255
yt <- m$y[-m$train]
rm(m)
fit_rows <- 1:50000
val_rows <- 50001:60000

record <- function(stage, model, settings, fit, err_val, err_test, secs) {
  t <- fit$members[[1]]$timing
  row <- data.frame(stage = stage, model = model, settings = settings,
                    features = fit$members[[1]]$p,
                    directions = ncol(fit$members[[1]]$layers[[length(fit$members[[1]]$layers)]]$V),
                    iterations = fit$members[[1]]$head$iterations,
                    converged = fit$members[[1]]$head$converged,
                    val_errors = err_val, test_errors = err_test,
                    seconds = round(secs, 1), sec_directions = round(t[["directions"]], 1),
                    sec_features = round(t[["features"]], 1),
                    sec_logistic = round(t[["logistic"]], 1), stringsAsFactors = FALSE)
  old <- if (file.exists(out)) utils::read.csv(out, stringsAsFactors = FALSE) else NULL
  utils::write.csv(rbind(old, row), out, row.names = FALSE)
  print(row)
}

# The settings lists hold gem()'s tuning constants (maxit, tol, standardize) beside its other
# arguments; those go to gem() through gem_control().
run <- function(stage, model, settings, args, train, test_x, test_y) {
  set.seed(1)
  ctl <- names(args) %in% names(formals(gem_control))
  t0 <- proc.time()[["elapsed"]]
  fit <- do.call(gem, c(list(x[train, ], y[train], scale = FALSE, threads = threads,
                             control = do.call(gem_control, args[ctl])), args[!ctl]))
  secs <- proc.time()[["elapsed"]] - t0
  err <- sum(predict(fit, test_x, threads = threads) != test_y)
  list(fit = fit, err = err, secs = secs)
}

single_base <- list(ridge = 0.05, ridge_type = "absolute", top = 30, nonlinearity = "smooth_sqrt",
                    degree = 3, keep_input = TRUE, maxit = 400, tol = 1e-5)
if (head == "cls")
  single_base <- utils::modifyList(single_base, list(head = "cls", standardize = FALSE,
                                                     maxit = 7, tol = 0.002))
if (head == "logistic_raw") single_base$standardize <- FALSE
if (what %in% c("single", "validate", "all")) {
  lambdas <- if (length(args) > 1 && nzchar(args[2])) as.numeric(strsplit(args[2], ",")[[1]]) else
    if (head == "cls") 0.5 else 10^(-5:-2)
  thresholds <- if (length(args) > 3 && nzchar(args[4])) as.numeric(strsplit(args[4], ",")[[1]]) else 2.5
  ridges <- if (length(args) > 4 && nzchar(args[5])) as.numeric(strsplit(args[5], ",")[[1]]) else 0.05
  tops <- if (length(args) > 5 && nzchar(args[6])) as.integer(strsplit(args[6], ",")[[1]]) else 30L
  grid <- expand.grid(threshold = thresholds, lambda = lambdas, ridge = ridges, top = tops)
  for (g in seq_len(nrow(grid))) {
    a <- utils::modifyList(single_base, as.list(grid[g, ]))
    s <- sprintf("threshold %g, lambda %g", a$threshold, a$lambda)
    if (a$ridge != 0.05) s <- sprintf("%s, ridge %g", s, a$ridge)
    if (a$top != 30) s <- sprintf("%s, top %d", s, a$top)
    r <- run("validation", model, s, a, fit_rows, x[val_rows, ], y[val_rows])
    record("validation", model, s, r$fit, r$err, NA, r$secs)
    rm(r); gc()
  }
}
if (what %in% c("single", "final", "all")) {
  val <- utils::read.csv(out, stringsAsFactors = FALSE)
  val <- val[val$stage == "validation" & val$model == model, ]
  s <- val$settings[which.min(val$val_errors)]
  a <- utils::modifyList(single_base, list(
    threshold = as.numeric(sub("threshold ([^,]+),.*", "\\1", s)),
    lambda = as.numeric(sub(".*lambda ([^,]+).*", "\\1", s)),
    ridge = if (grepl("ridge", s)) as.numeric(sub(".*ridge ([^,]+).*", "\\1", s)) else 0.05,
    top = if (grepl("top", s)) as.integer(sub(".*top ([^,]+).*", "\\1", s)) else 30L))
  r <- run("final", model, s, a, seq_len(nrow(x)), xt, yt)
  record("final", model, s, r$fit, NA, r$err, r$secs)
  rm(r); gc()
}
if (what %in% c("deep", "all")) {
  # The authors' layer settings: absolute ridge 0.1 and top 20 in both layers; the first
  # layer keeps every eigenvector and gives [1, pos, neg]; the second keeps eigenvalues
  # >= 7.5 and gives [1, z, z^2] of its own projections only.
  a <- list(depth = 2, first_layer = list(ridge = 0.1, ridge_type = "absolute", top = 20,
                                          threshold = 0, degree = 1, keep_input = FALSE),
            ridge = 0.1, ridge_type = "absolute", top = 20, threshold = 7.5, degree = 2,
            keep_input = FALSE)
  if (head == "cls") {
    a <- c(a, list(head = "cls", standardize = FALSE, lambda = 1, maxit = 5, tol = 0.002))
    s <- "authors' layer settings, cls lambda 1"
  } else {
    a <- c(a, list(lambda = 1e-4, maxit = 400, tol = 1e-5))
    s <- "authors' layer settings, lambda 1e-4"
  }
  dm <- if (head == "cls") "deep GEM (cls)" else "deep GEM"
  r <- run("final", dm, s, a, seq_len(nrow(x)), xt, yt)
  record("final", dm, s, r$fit, NA, r$err, r$secs)
}
