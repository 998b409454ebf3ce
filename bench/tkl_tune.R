# kl_tune(tkl) against kl_tune(kernel_svm) (epsilon-SVR) on BostonHousing in the same run: the
# grids of inst/experiments/tkl_tables.R (tkl: cost {0.1, 1, 10, 100, 1000} x delta {0.1, 0.3},
# the SVR's costs, since tkl's normalised kernel is on the Gaussian's scale; the SVR: cost {0.1,
# 1, 10, 100, 1000} x gamma {1/4, 1, 4, 16, 64, 256} / d), 5-fold CV on a random 80% of the rows
# (seed 1), response standardised, epsilon 0.1, no grid extension, tkl without its baseline
# comparison; tkl with its default ridge (0.1) and P-step (exponentiated gradient), with the
# paper's Frank-Wolfe step, and with ridge = 0 (the paper's problem), and
# tkl through the general path (a wrapper function, which has no cost path: every grid point
# and fold fitted on its own) to measure the path.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/tkl_tune.R [reps] [runs]
#   runs: comma list of run names (default all: "tkl ridge 0.1", "tkl ridge 0.1 general path",
#         "tkl ridge 0.1 Frank-Wolfe", "tkl ridge 0"; the SVR always runs).
# Results: bench/results/tkl_tune.csv (median seconds of `reps` runs, default 3, 2 threads).
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1L) as.integer(args[1L]) else 3L
which_runs <- if (length(args) >= 2L) strsplit(args[2L], ",")[[1L]] else NULL
tkl_general <- function(x, y, ...) tkl(x, y, ...)
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
d <- kl_dataset("boston", dir = Sys.getenv("KERNLEARN_DATA_DIR"))
x <- as.matrix(d$x)
storage.mode(x) <- "double"
y <- (d$y - mean(d$y)) / stats::sd(d$y)
set.seed(1)
tr <- sort(sample(nrow(x), round(0.8 * nrow(x))))
runs <- list(
  "tkl ridge 0.1" = function() kl_tune(tkl, x[tr, ], y[tr], scale_response = FALSE, folds = 5, refit = FALSE, epsilon = 0.1,
                                       baseline = FALSE, extend = 0,
                                       grid = list(cost = c(0.1, 1, 10, 100, 1000),
                                                   delta = c(0.1, 0.3))),
  "tkl ridge 0.1 general path" = function()
    kl_tune(tkl_general, x[tr, ], y[tr], scale_response = FALSE, folds = 5, refit = FALSE, epsilon = 0.1,
            baseline = FALSE, extend = 0,
            grid = list(cost = c(0.1, 1, 10, 100, 1000), delta = c(0.1, 0.3))),
  "tkl ridge 0.1 Frank-Wolfe" = function()
    kl_tune(tkl, x[tr, ], y[tr], scale_response = FALSE, folds = 5, refit = FALSE, epsilon = 0.1,
            baseline = FALSE, extend = 0, algorithm = "fw",
            grid = list(cost = c(0.1, 1, 10, 100, 1000), delta = c(0.1, 0.3))),
  "tkl ridge 0" = function() kl_tune(tkl, x[tr, ], y[tr], scale_response = FALSE, folds = 5, refit = FALSE, epsilon = 0.1,
                                     baseline = FALSE, extend = 0, ridge = 0,
                                     grid = list(cost = c(0.1, 1, 10, 100, 1000),
                                                 delta = c(0.1, 0.3))),
  "kernel_svm (SVR)" = function() kl_tune(kernel_svm, x[tr, ], y[tr], scale_response = FALSE, folds = 5, refit = FALSE,
                                          epsilon = 0.1, extend = 0,
                                          grid = list(cost = c(0.1, 1, 10, 100, 1000),
                                                      gamma = c(1 / 4, 1, 4, 16, 64, 256) /
                                                        ncol(x))))
if (!is.null(which_runs)) runs <- runs[unique(c(intersect(which_runs, names(runs)),
                                                 "kernel_svm (SVR)"))]
secs <- matrix(NA_real_, length(runs), reps, dimnames = list(names(runs), NULL))
cvmse <- setNames(numeric(length(runs)), names(runs))
for (r in seq_len(reps)) for (m in names(runs)) {
  set.seed(2)
  secs[m, r] <- system.time(tu <- runs[[m]]())[["elapsed"]]
  cvmse[m] <- min(tu$results$mean)
}
med <- apply(secs, 1L, stats::median)
out <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), method = names(runs),
                  rows = length(tr), median_s = med,
                  runs_s = apply(secs, 1L, function(v) paste(sprintf("%.1f", v), collapse = " ")),
                  cv_mse = cvmse, ratio_to_svr = med / med[["kernel_svm (SVR)"]])
print(out, row.names = FALSE)
utils::write.csv(out, file.path("bench", "results", "tkl_tune.csv"), row.names = FALSE)
