# tkl(): where the optimisation stops, with and without the smoothing ridge, on the sets of the
# paper's tables (Colbert and Peet 2020): the share of fits that reach the gap criterion, the
# relative duality gap at the stop, the test error and the fit time.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/tkl_gap.R [ridges] [max_train] [algorithms]
#   ridges     comma list of tkl(ridge = ) values (default 0,0.01,0.1: the paper's problem, a
#              light smoothing and the default)
#   max_train  training rows at most (default 1000; larger training parts are subsampled)
#   algorithms comma list of tkl(algorithm = ) values (default eg,fw: exponentiated gradient
#              and the paper's Frank-Wolfe step, on the same splits and settings)
# Per set: one random 80/20 split (seed 1), the settings cost {1, 10} x delta {0.1, 0.3},
# degree 1, tol 0.01, maxit 100, epsilon 0.1 on the standardised response (regression), no
# baseline comparison. Classification sets: bupa, breast_cancer, heart, pima; regression:
# ccpp, forest_fires (log area), boston, concrete, yacht, auto_mpg, energy, cadata.
# Results: bench/results/tkl_gap.csv, one row per set, ridge and setting.
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
ridges <- if (length(args) >= 1L) as.numeric(strsplit(args[1L], ",")[[1L]]) else c(0, 0.01, 0.1)
max_train <- if (length(args) >= 2L) as.integer(args[2L]) else 1000L
algorithms <- if (length(args) >= 3L) strsplit(args[3L], ",")[[1L]] else c("eg", "fw")
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
sets <- c("bupa", "breast_cancer", "heart", "pima", "ccpp", "forest_fires", "boston", "concrete",
          "yacht", "auto_mpg", "energy", "cadata")
target <- c(forest_fires = "log_area")
out <- file.path("bench", "results", "tkl_gap.csv")
rows <- list()
for (name in sets) {
  d <- tryCatch(kl_dataset(name, dir = dir, download = FALSE, quiet = TRUE,
                           target = if (name %in% names(target)) target[[name]]),
                error = function(e) NULL)
  if (is.null(d)) {
    message("skipping ", name, " (not in the data directory)")
    next
  }
  x <- as.matrix(d$x)
  storage.mode(x) <- "double"
  y <- d$y
  n <- nrow(x)
  set.seed(1)
  te <- sort(sample.int(n, round(0.2 * n)))
  tr <- setdiff(seq_len(n), te)
  if (length(tr) > max_train) tr <- sort(sample(tr, max_train))
  cls <- is.factor(y)
  if (!cls) {
    mu <- mean(y[tr])
    s <- stats::sd(y[tr])
  }
  yt <- if (cls) y[tr] else (y[tr] - mu) / s
  for (alg in algorithms) for (ridge in ridges) for (cost in c(1, 10)) for (delta in c(0.1, 0.3)) {
    t <- system.time(f <- tkl(x[tr, , drop = FALSE], yt, scale_response = FALSE, cost = cost,
                              delta = delta, epsilon = 0.1, tol = 0.01, maxit = 100,
                              ridge = ridge, baseline = FALSE, algorithm = alg,
                              fitted = FALSE))[["elapsed"]]
    p <- predict(f, x[te, , drop = FALSE])
    err <- if (cls) mean(p != y[te]) else mean((mu + s * p - y[te])^2)
    last <- f$trace[nrow(f$trace), ]
    rows[[length(rows) + 1L]] <- data.frame(
      date = format(Sys.time(), "%Y-%m-%d %H:%M"), set = name, n_train = length(tr),
      inputs = ncol(x), algorithm = alg, ridge = ridge, cost = cost, delta = delta,
      stop = f$stop, objective = last$objective,
      rel_gap = last$gap / abs(last$objective), iterations = f$iterations,
      metric = if (cls) "misclassification" else "MSE", test_error = err, seconds = t)
    r <- rows[[length(rows)]]
    cat(sprintf("%-13s %s ridge %-5g cost %-3g delta %.1f: %-12s rel gap %8.4f  %3d it  error %.4g  %.1f s\n",
                name, alg, ridge, cost, delta, r$stop, r$rel_gap, r$iterations, err, t))
  }
  utils::write.csv(do.call(rbind, rows), out, row.names = FALSE)
}
tab <- do.call(rbind, rows)
summ <- do.call(rbind, lapply(split(tab, list(tab$algorithm, tab$ridge), drop = TRUE), function(g)
  data.frame(algorithm = g$algorithm[1L], ridge = g$ridge[1L], fits = nrow(g),
             reached_gap = sum(g$stop == "gap"), median_rel_gap = stats::median(g$rel_gap),
             iterations = sum(g$iterations), seconds = sum(g$seconds))))
print(summ, row.names = FALSE)
