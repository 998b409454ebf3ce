# Reproduces the experiments of Figures 1 and 2 of the DI kernel learning paper with dikl():
#   Figure 1: train and test MSE of kernel ridge regression (on one-hot targets) after DI and
#             LS training of Nystrom and random Fourier maps, over feature dimensions;
#   Figure 2: test accuracy of a linear SVM on DI, LS and CE trained maps and on the standard
#             maps (Std Nys: random landmarks, KM Nys: k-means landmarks, Std RF).
# Each trained map is fitted once; both evaluations use its features. gamma is chosen once per
# dataset as the paper did (gamma = "cv": 3-fold CV of a linear SVM on standard Nystrom
# features) and shared by all methods.
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/dikl_figures.R \
#       <letter|mnist|covtype> [dims, e.g. 100,200,500] [repetitions] [max_epochs] [n_train]
#
# repetitions: a count ("2" runs repetitions 1 and 2) or a range ("3-5"), so that later runs
# add repetitions with new seeds. covtype: a random 90/10 split of the full 581012-row file;
# the training rows are then subsampled to n_train (default 20000) and the test rows to 5000.
# MNIST: the given 60000 / 10000 split, test rows subsampled to 2000 and, when n_train is
# given, training rows to n_train (the saved runs use 10000).
#
# Appends one row per (method, map, dim, repetition) to inst/extdata/dikl_figures.csv (or to
# the file in DIKL_OUT).
library(kernlearn)
args <- commandArgs(trailingOnly = TRUE)
dataset <- if (length(args) >= 1) args[1] else "letter"
dims <- if (length(args) >= 2) as.integer(strsplit(args[2], ",")[[1]]) else c(100L, 200L, 500L)
reps <- if (length(args) >= 3) {
  r <- as.integer(strsplit(args[3], "-", fixed = TRUE)[[1]])
  if (length(r) == 2L) seq(r[1], r[2]) else seq_len(r)
} else 1:2
max_epochs <- if (length(args) >= 4) as.integer(args[4]) else 30L
n_train <- if (length(args) >= 5) as.integer(args[5]) else NA_integer_
out <- Sys.getenv("DIKL_OUT", file.path("inst", "extdata", "dikl_figures.csv"))
threads <- 2L
clock <- function() proc.time()[["elapsed"]]

set.seed(20201)
if (dataset == "letter") {
  d <- kl_dataset("letter")
  x <- as.matrix(d$x)
  y <- d$y
  tr <- 1:16000          # the usual 16000 / 4000 split
  te <- 16001:20000
} else if (dataset == "mnist") {
  d <- kl_dataset("mnist")
  x <- d$x
  y <- d$y
  tr <- d$train
  te <- setdiff(seq_len(nrow(x)), tr)
} else if (dataset == "covtype") {
  d <- kl_dataset("covtype")
  x <- as.matrix(d$x)
  y <- d$y
  perm <- sample.int(nrow(x))
  ntr <- round(0.9 * nrow(x))   # the paper's random 90 / 10 split
  tr <- perm[seq_len(ntr)]
  te <- perm[-seq_len(ntr)]
  if (is.na(n_train)) n_train <- 20000L
  te <- sort(sample(te, 5000L))
} else {
  stop("dataset must be letter, mnist or covtype")
}
rm(d)
if (!is.na(n_train) && n_train < length(tr)) tr <- sort(sample(tr, n_train))
if (dataset == "mnist" && length(te) > 2000L) te <- sort(sample(te, 2000L))
# Scaled once with the training range, so that every method sees the same [0, 1] inputs.
mn <- apply(x[tr, ], 2, min)
rg <- apply(x[tr, ], 2, max) - mn
sc <- ifelse(rg > 0, 1 / rg, 0)
prep <- function(a) sweep(sweep(a, 2, mn), 2, sc, `*`)
xtr <- prep(x[tr, , drop = FALSE])
xte <- pmin(pmax(prep(x[te, , drop = FALSE]), -1), 2)
ytr <- droplevels(y[tr])
yte <- factor(as.character(y[te]), levels = levels(ytr))
rm(x)
cat(sprintf("%s: %d training rows, %d test rows, %d features, %d classes\n", dataset,
            nrow(xtr), nrow(xte), ncol(xtr), nlevels(ytr)))

t0 <- clock()
g <- dikl(xtr, ytr, dim = min(100L, nrow(xtr)), gamma = "cv", objective = "none",
          threads = threads)
gamma <- g$params$gamma
cat(sprintf("gamma by 3-fold CV: %s (%.1f s)\n", format(signif(gamma, 4)), clock() - t0))
print(g$gamma_cv)

onehot <- function(f) diag(nlevels(ytr))[as.integer(f), , drop = FALSE]
Ytr <- onehot(ytr)
Yte <- onehot(yte)
# Kernel ridge regression on the features (ridge with intercept, lambda = rho): mean squared
# error per row, summed over the one-hot columns.
krr_mse <- function(Ftr, Fte, lambda = 1e-4) {
  mu <- colMeans(Ftr)
  Fc <- sweep(Ftr, 2, mu)
  W <- solve(crossprod(Fc) + lambda * diag(ncol(Fc)), crossprod(Fc, sweep(Ytr, 2, colMeans(Ytr))))
  b0 <- colMeans(Ytr) - drop(mu %*% W)
  pr <- function(Fm) sweep(Fm %*% W, 2, b0, `+`)
  c(train = mean(rowSums((Ytr - pr(Ftr))^2)), test = mean(rowSums((Yte - pr(Fte))^2)))
}

methods <- list(
  list(label = "DI", map = "nystrom", objective = "di", init = "random"),
  list(label = "LS", map = "nystrom", objective = "ls", init = "random"),
  list(label = "CE", map = "nystrom", objective = "ce", init = "random"),
  list(label = "Std Nys", map = "nystrom", objective = "none", init = "random"),
  list(label = "KM Nys", map = "nystrom", objective = "none", init = "kmeans"),
  list(label = "DI", map = "fourier", objective = "di", init = "random"),
  list(label = "LS", map = "fourier", objective = "ls", init = "random"),
  list(label = "CE", map = "fourier", objective = "ce", init = "random"),
  list(label = "Std RF", map = "fourier", objective = "none", init = "random"))

for (rep in reps) {
  for (J in dims) {
    for (mt in methods) {
      set.seed(1000L * rep + J)
      t0 <- clock()
      fit <- dikl(xtr, ytr, map = mt$map, dim = J, gamma = gamma, objective = mt$objective,
                  init = mt$init, head = "svm", max_epochs = max_epochs, threads = threads)
      secs <- clock() - t0
      Ftr <- features(fit, xtr)
      Fte <- features(fit, xte)
      mse <- krr_mse(Ftr, Fte)
      acc <- mean(predict(fit, xte) == yte)
      row <- data.frame(dataset = dataset, map = mt$map, method = mt$label, dim = J, rep = rep,
                        train_mse = mse[["train"]], test_mse = mse[["test"]], svm_accuracy = acc,
                        epochs = fit$training$epochs, stop = fit$training$stop,
                        batch_size = fit$params$batch_size, seconds = round(secs, 1),
                        gamma = signif(gamma, 5), n_train = nrow(xtr), n_test = nrow(xte),
                        max_epochs = max_epochs, stringsAsFactors = FALSE)
      print(row[, c("map", "method", "dim", "rep", "train_mse", "test_mse", "svm_accuracy",
                    "epochs", "seconds")], row.names = FALSE)
      utils::write.table(row, out, sep = ",", row.names = FALSE, append = file.exists(out),
                         col.names = !file.exists(out))
    }
  }
}
