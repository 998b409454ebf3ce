# kl_caret_model()'s default grids for kernel_svm() and kernel_ridge(): the Gaussian width
# centred on the learners' default width (from 1/8 to 8 times it) against the former fixed
# range (0.25 / p to 16 / p), both through caret::train() with the same folds; caret's own
# "svmRadial" (kernlab, sigma from sigest()) with its default grid beside them.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/caret_grid.R [tuneLength]
# Sets: cadata, ccpp, cpusmall, concrete (regression), satimage, letter, magic, pima, sonar,
# ionosphere, statlog_heart (classification); a random split (seed 1), up to 1500 training rows
# (70% of a smaller set), the next up to 3000 rows for the test; constant training columns
# dropped. 5-fold CV, tuneLength 4 unless given (16 points for the two-parameter grids).
# Metric: test misclassification rate, or test mean squared error over the test response's
# variance. Time: elapsed seconds of caret::train() (the tuning and the final fit); kernlearn
# on 2 threads, kernlab on one.
# Results: bench/results/caret_grid.csv (replaced).
suppressPackageStartupMessages({
  library(kernlearn)
  suppressWarnings(library(caret))
})
args <- commandArgs(TRUE)
len <- if (length(args)) as.integer(args[1]) else 4L
options(kernlearn.backend = "cpu", kernlearn.threads = 2L)
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
source(file.path("bench", "defaults_split.R"))

geo <- function(lo, hi, k) signif(exp(seq(log(lo), log(hi), length.out = k)), 3)
rows <- list()
for (nm in c("cadata", "ccpp", "cpusmall", "concrete", "satimage", "letter", "magic", "pima",
             "sonar", "ionosphere", "statlog_heart")) {
  d <- kl_dataset(nm, dir = dir)
  sp <- defaults_split(d$x, d$y, min(1500, floor(0.7 * nrow(d$x))))
  xtr <- as.data.frame(sp$xtr)
  xte <- as.data.frame(sp$xte)
  ytr <- sp$ytr
  p <- ncol(xtr)
  set.seed(2)
  folds <- caret::createFolds(ytr, k = 5, returnTrain = TRUE)
  ctrl <- caret::trainControl(method = "cv", index = folds)
  old_width <- geo(0.25 / p, 16 / p, len)
  runs <- list(
    list(learner = "kernel_svm", grid = "centred on the default width", method = kl_caret_model("kernel_svm"),
         tuneGrid = NULL),
    list(learner = "kernel_svm", grid = "former: 0.25/p to 16/p", method = kl_caret_model("kernel_svm"),
         tuneGrid = expand.grid(cost = geo(0.25, 64, len), gamma = old_width)),
    list(learner = "kernel_ridge", grid = "centred on the default width",
         method = kl_caret_model("kernel_ridge"), tuneGrid = NULL),
    list(learner = "kernel_ridge", grid = "former: 0.25/p to 16/p",
         method = kl_caret_model("kernel_ridge"),
         tuneGrid = expand.grid(lambda = geo(1e-3, 1, len), gamma = old_width)),
    list(learner = "caret svmRadial (kernlab)", grid = "caret's default", method = "svmRadial",
         tuneGrid = NULL))
  for (r in runs) {
    set.seed(3)
    a <- list(x = xtr, y = ytr, method = r$method, trControl = ctrl, tuneLength = len)
    if (!is.null(r$tuneGrid)) a$tuneGrid <- r$tuneGrid
    if (identical(r$method, "svmRadial")) a$preProcess <- c("center", "scale")
    t <- system.time(fit <- suppressWarnings(do.call(caret::train, a)))[["elapsed"]]
    pr <- predict(fit, xte)
    bt <- fit$bestTune
    row <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = nm,
                      n_train = length(sp$tr), n_test = length(sp$te), p = p,
                      learner = r$learner, grid = r$grid, points = nrow(fit$results),
                      best = paste(names(bt), signif(unlist(bt), 3), sep = " = ", collapse = ", "),
                      metric = if (sp$classification) "test error" else "test MSE / var",
                      value = signif(sp$err(pr), 4), train_s = round(t, 2),
                      stringsAsFactors = FALSE)
    cat(sprintf("%-13s %-27s %-30s %8.2f s  %.4f  (%s)\n", nm, r$learner, r$grid, t, row$value,
                row$best))
    rows[[length(rows) + 1L]] <- row
  }
}
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(do.call(rbind, rows), file.path("bench", "results", "caret_grid.csv"),
                 row.names = FALSE)
