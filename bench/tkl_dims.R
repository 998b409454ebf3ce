# tkl(): what `cost` means as the number of inputs grows, with and without the normalised start
# (normalize = TRUE divides the start kernel by its mean diagonal, which is about
# (1 + 2 delta)^d (1 + d / 3) and so grows geometrically with d).
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/tkl_dims.R [folds] [algorithms]
#   algorithms: comma list of tkl(algorithm = ) values for the fixed costs (default eg,fw:
#   exponentiated gradient and the paper's Frank-Wolfe step); the tuned fit uses the first.
# Problems of 2 to 100 inputs:
#   - synthetic: x uniform on [0, 1]^d, d in {2, 5, 10, 20, 50, 100}; the class is whether
#     (x1 - 0.5)^2 + (x2 - 0.5)^2 < 0.09, 5% of the labels flipped (the other d - 2 inputs are
#     noise); 400 training and 2000 test rows, one draw per d (seed d);
#   - real sets from the data directory (those it lacks are skipped): bupa (6 inputs),
#     heart (13), wdbc (30), ionosphere (34), bank32nh (32, regression, 600 training rows),
#     sonar (60); one random 70/30 split (seed 1).
# For normalize in {FALSE, TRUE}:
#   - fixed costs 0.1, 1, 10, 100 (degree 1, delta 0.1, tol 0.01, maxit 100, ridge 0.1, no
#     baseline), with each algorithm: where the optimisation stops, the relative gap and the
#     objective there, the support vectors' share and the test error;
#   - with normalize = TRUE, cost chosen by kl_tune() (`folds`-fold CV, default 5, over
#     10^(-2..3), delta 0.1, extended past a winning edge): the chosen cost and the test error
#     of the refit. (Not for the raw kernel: at large d its costs all act as a hard margin,
#     whose SVM solves take minutes.)
# A Gaussian kernel_svm tuned by kl_tune() (gamma {1/2, 1, ..., 16} / d x cost 2^(-1, 1, ..., 11),
# the grid of tkl()'s baseline) gives the reference error.
# Regression: the response standardised with the training mean and sd, epsilon 0.1; the
# error is the test MSE on that scale. Classification: the misclassification rate.
# Results: bench/results/tkl_dims.csv (one row per problem, normalize, algorithm and cost;
# cost "cv" for the tuned fit, learner "gaussian" for the reference).
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
folds <- if (length(args) >= 1L) as.integer(args[1L]) else 5L
algorithms <- if (length(args) >= 2L) strsplit(args[2L], ",")[[1L]] else c("eg", "fw")
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
out <- file.path("bench", "results", "tkl_dims.csv")

problems <- list()
for (d in c(2, 5, 10, 20, 50, 100)) {
  set.seed(d)
  gen <- function(n) {
    x <- matrix(runif(n * d), n, d)
    y <- ifelse((x[, 1] - 0.5)^2 + (x[, 2] - 0.5)^2 < 0.09, 1L, 2L)
    flip <- runif(n) < 0.05
    y[flip] <- 3L - y[flip]
    list(x = x, y = factor(c("in", "out")[y], levels = c("in", "out")))
  }
  tr <- gen(400)
  te <- gen(2000)
  problems[[sprintf("circle_d%d", d)]] <- list(xtr = tr$x, ytr = tr$y, xte = te$x, yte = te$y)
}
real <- list(bupa = 1000L, heart = 1000L, wdbc = 1000L, ionosphere = 1000L, bank32nh = 600L,
             sonar = 1000L)
for (name in names(real)) {
  ds <- tryCatch(kl_dataset(name, dir = dir, download = FALSE, quiet = TRUE),
                 error = function(e) NULL)
  if (is.null(ds)) {
    message("skipping ", name, " (not in the data directory)")
    next
  }
  x <- as.matrix(ds$x)
  storage.mode(x) <- "double"
  y <- ds$y
  set.seed(1)
  n <- nrow(x)
  te <- sort(sample.int(n, round(0.3 * n)))
  tr <- setdiff(seq_len(n), te)
  if (length(tr) > real[[name]]) tr <- sort(sample(tr, real[[name]]))
  if (!is.factor(y)) {
    mu <- mean(y[tr])
    s <- stats::sd(y[tr])
    y <- (y - mu) / s
  }
  problems[[name]] <- list(xtr = x[tr, , drop = FALSE], ytr = y[tr],
                           xte = x[te, , drop = FALSE], yte = y[te])
}

err_of <- function(p, y) if (is.factor(y)) mean(p != y) else mean((p - y)^2)
rows <- list()
add <- function(...) {
  rows[[length(rows) + 1L]] <<- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), ...)
  r <- rows[[length(rows)]]
  cat(sprintf("%-13s d %3d %-8s %-3s norm %-5s cost %-6s: %-12s gap %8.4g %3s it  SV %4.2f  error %.4f  %.1f s\n",
              r$problem, r$inputs, r$learner, r$algorithm, r$normalize, r$cost, r$stop,
              r$rel_gap, r$iterations, r$sv_share, r$test_error, r$seconds))
  utils::write.csv(do.call(rbind, rows), out, row.names = FALSE)
}
for (pn in names(problems)) {
  p <- problems[[pn]]
  d <- ncol(p$xtr)
  n <- nrow(p$xtr)
  t <- system.time(g <- kl_tune(kernel_svm, p$xtr, p$ytr, scale_response = FALSE, folds = folds, epsilon = 0.1,
                                grid = list(gamma = c(0.5, 1, 2, 4, 8, 16) / d,
                                            cost = 2^seq(-1, 11, by = 2))))[[3]]
  add(problem = pn, inputs = d, n_train = n, learner = "gaussian", algorithm = NA,
      normalize = NA, kernel_scale = NA, cost = sprintf("cv:%.3g", g$best$cost), stop = NA,
      objective = NA, rel_gap = NA,
      iterations = NA, sv_share = g$best_model$tot.nSV / n,
      test_error = err_of(predict(g$best_model, p$xte), p$yte), seconds = t)
  for (nm in c(FALSE, TRUE)) {
    for (alg in algorithms) for (cost in c(0.1, 1, 10, 100)) {
      t <- system.time(f <- tkl(p$xtr, p$ytr, scale_response = FALSE, cost = cost, delta = 0.1,
                                epsilon = 0.1, tol = 0.01, maxit = 100, baseline = FALSE,
                                normalize = nm, algorithm = alg, fitted = FALSE))[[3]]
      last <- f$trace[nrow(f$trace), ]
      add(problem = pn, inputs = d, n_train = n, learner = "tkl", algorithm = alg,
          normalize = nm, kernel_scale = f$kernel_scale, cost = format(cost), stop = f$stop,
          objective = last$objective, rel_gap = last$gap / abs(last$objective), iterations = f$iterations,
          sv_share = f$svm$tot.nSV / n, test_error = err_of(predict(f, p$xte), p$yte),
          seconds = t)
    }
    if (!nm) next  # the raw kernel's near-hard-margin solves make its CV slow at large d
    set.seed(7)
    t <- system.time(tn <- kl_tune(tkl, p$xtr, p$ytr, scale_response = FALSE, folds = folds,
                                   grid = list(cost = 10^(-2:3)), delta = 0.1, epsilon = 0.1,
                                   baseline = FALSE, normalize = nm, algorithm = algorithms[1L],
                                   fitted = FALSE))[[3]]
    f <- tn$best_model
    last <- f$trace[nrow(f$trace), ]
    add(problem = pn, inputs = d, n_train = n, learner = "tkl", algorithm = algorithms[1L],
        normalize = nm, kernel_scale = f$kernel_scale, cost = sprintf("cv:%.3g", tn$best$cost),
        stop = f$stop, objective = last$objective, rel_gap = last$gap / abs(last$objective), iterations = f$iterations,
        sv_share = f$svm$tot.nSV / n, test_error = err_of(predict(f, p$xte), p$yte),
        seconds = t)
  }
}
cat("saved", out, "\n")
