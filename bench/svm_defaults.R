# kernel_svm() with its defaults against e1071::svm() and kernlab::ksvm() with theirs, on
# classification and regression sets with the response in its own units.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/svm_defaults.R [reps]
# Sets (a random split, seed 1; training rows as given, test rows the next up to 3000):
#   regression      cadata (house values, about 2e5; 3000 rows), ccpp (about 450 MW; 3000),
#                   cpusmall (3000), concrete (700), BostonHousing (mlbench, 400) and
#                   mlbench.friedman1 (sd 1) times 1e-3 (2000)
#   classification  satimage, letter, covtype_subset20k, magic (3000 each), pima (500),
#                   sonar (150), ionosphere (250), statlog heart (200)
# Methods, each with its defaults (Gaussian kernel, cost 1, epsilon 0.1):
#   kernel_svm          inputs scaled to [0, 1], gamma = 1 / (sum of their variances), the
#                       response standardised
#   kernel_svm (std)    scale = "standardize": e1071's model (gamma = 1 / ncol)
#   kernel_svm (before) the former defaults: gamma = 1 / ncol on [0, 1] inputs, the response
#                       as given
#   e1071::svm          inputs and response standardised, gamma = 1 / ncol
#   kernlab::ksvm       inputs and response standardised, sigma by sigest() (seeded)
# Constant training columns are dropped for all. Metric: test misclassification rate, or test
# mean squared error over the test response's variance. Times: elapsed seconds, medians of
# `reps` runs (default 3); kernel_svm on 2 threads, the peers on one.
# Results: bench/results/svm_defaults.csv (replaced).
suppressPackageStartupMessages({
  library(kernlearn)
  library(e1071)
  library(kernlab)
})
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 3L
options(kernlearn.backend = "cpu", kernlearn.threads = 2L)
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")

timed <- function(f) {
  times <- numeric(reps)
  val <- NULL
  for (i in seq_len(reps)) {
    gc(FALSE)
    times[i] <- system.time(val <- f())[["elapsed"]]
  }
  list(value = val, median = stats::median(times), runs = times)
}
ld <- function(nm, ntr) {
  d <- kl_dataset(nm, dir = dir)
  list(x = d$x, y = d$y, ntr = ntr)
}
sets <- list(
  cadata = function() ld("cadata", 3000), ccpp = function() ld("ccpp", 3000),
  cpusmall = function() ld("cpusmall", 3000), concrete = function() ld("concrete", 700),
  boston = function() {
    e <- new.env()
    utils::data("BostonHousing", package = "mlbench", envir = e)
    b <- e$BostonHousing
    b$chas <- as.numeric(b$chas)
    list(x = b[, names(b) != "medv"], y = b$medv, ntr = 400)
  },
  friedman_milli = function() {
    set.seed(7)
    d <- mlbench::mlbench.friedman1(4000, sd = 1)
    list(x = d$x, y = 1e-3 * d$y, ntr = 2000)
  },
  satimage = function() ld("satimage", 3000), letter = function() ld("letter", 3000),
  covtype = function() ld("covtype_subset20k", 3000), magic = function() ld("magic", 3000),
  pima = function() ld("pima", 500), sonar = function() ld("sonar", 150),
  ionosphere = function() ld("ionosphere", 250), heart = function() ld("statlog_heart", 200))

source(file.path("bench", "defaults_split.R"))
rows <- list()
for (nm in names(sets)) {
  d <- sets[[nm]]()
  sp <- defaults_split(d$x, d$y, d$ntr)
  xtr <- sp$xtr
  xte <- sp$xte
  ytr <- sp$ytr
  yte <- sp$yte
  tr <- sp$tr
  te <- sp$te
  y <- d$y
  if (is.character(y)) y <- factor(y)
  err <- sp$err
  methods <- list(
    "kernlearn::kernel_svm" = function() kernel_svm(xtr, ytr, fitted = FALSE),
    "kernlearn::kernel_svm (std)" = function() kernel_svm(xtr, ytr, scale = "standardize",
                                                           fitted = FALSE),
    "kernlearn::kernel_svm (before)" = function()
      suppressWarnings(kernel_svm(xtr, ytr, gamma = 1 / ncol(xtr), scale_response = FALSE,
                                  fitted = FALSE)),
    "e1071::svm" = function() svm(xtr, ytr),
    "kernlab::ksvm" = function() {
      set.seed(3)
      ksvm(xtr, ytr, type = if (is.factor(ytr)) "C-svc" else "eps-svr", kernel = "rbfdot")
    })
  for (m in names(methods)) {
    t <- timed(methods[[m]])
    p <- predict(t$value, xte)
    if (!is.factor(yte)) p <- as.vector(p)
    r <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = nm,
                    task = if (is.factor(y)) "classification" else "regression",
                    n_train = length(tr), n_test = length(te), p = ncol(xtr), method = m,
                    fit_median_s = round(t$median, 3),
                    fit_runs_s = paste(format(round(t$runs, 2)), collapse = " "),
                    metric = if (is.factor(y)) "test error" else "test MSE / var",
                    value = signif(err(p), 4), stringsAsFactors = FALSE)
    cat(sprintf("%-14s %-32s %8.3f s  %.4f\n", nm, m, t$median, r$value))
    rows[[length(rows) + 1L]] <- r
  }
}
out <- do.call(rbind, rows)
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(out, file.path("bench", "results", "svm_defaults.csv"), row.names = FALSE)
