# kernel_ridge() with its default Gaussian width (one over the sum of the [0, 1]-scaled
# columns' variances) against the former default (1 / ncol), the penalty at its default 0.01.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/ridge_defaults.R
# Sets: cadata, ccpp, cpusmall, concrete (regression), satimage, letter, magic, pima
# (classification); a random split (seed 1), up to 3000 training rows (70% of a smaller set),
# the next up to 3000 rows for the test; constant training columns dropped. Metric: test
# misclassification rate, or test mean squared error over the test response's variance.
# Results: bench/results/ridge_defaults.csv (replaced).
suppressPackageStartupMessages(library(kernlearn))
options(kernlearn.backend = "cpu", kernlearn.threads = 2L)
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
source(file.path("bench", "defaults_split.R"))
rows <- list()
for (nm in c("cadata", "ccpp", "cpusmall", "concrete", "satimage", "letter", "magic", "pima")) {
  d <- kl_dataset(nm, dir = dir)
  sp <- defaults_split(d$x, d$y, min(3000, floor(0.7 * nrow(d$x))))
  xtr <- sp$xtr
  xte <- sp$xte
  ytr <- sp$ytr
  err <- sp$err
  t_new <- system.time(f_new <- kernel_ridge(xtr, ytr))[["elapsed"]]
  t_old <- system.time(f_old <- kernel_ridge(xtr, ytr,
                                             kernel = gaussian_kernel(1 / ncol(xtr))))[["elapsed"]]
  r <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = nm,
                  n_train = length(sp$tr), n_test = length(sp$te), p = ncol(xtr),
                  metric = if (sp$classification) "test error" else "test MSE / var",
                  default_width = signif(f_new$kernel$gamma, 4),
                  value_default = signif(err(predict(f_new, xte)), 4), fit_s_default = t_new,
                  value_one_over_p = signif(err(predict(f_old, xte)), 4), fit_s_one_over_p = t_old,
                  stringsAsFactors = FALSE)
  print(r[, c("dataset", "default_width", "value_default", "value_one_over_p")], row.names = FALSE)
  rows[[length(rows) + 1L]] <- r
}
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(do.call(rbind, rows), file.path("bench", "results", "ridge_defaults.csv"),
                 row.names = FALSE)
