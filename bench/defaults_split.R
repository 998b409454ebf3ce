# The split of bench/svm_defaults.R and bench/ridge_defaults.R: rows shuffled with seed 1, the
# first `ntr` for training, the next up to 3000 for the test; constant training columns
# dropped; unseen test classes kept as NA. `err()` is the test misclassification rate, or the
# test mean squared error over the test response's variance.
defaults_split <- function(x, y, ntr) {
  x <- as.matrix(x)
  storage.mode(x) <- "double"
  if (is.character(y)) y <- factor(y)
  set.seed(1)
  i <- sample(nrow(x))
  tr <- i[seq_len(ntr)]
  te <- i[ntr + seq_len(min(3000, nrow(x) - ntr))]
  keep <- apply(x[tr, , drop = FALSE], 2, function(v) diff(range(v)) > 0)
  ytr <- y[tr]
  yte <- y[te]
  if (is.factor(y)) {
    ytr <- droplevels(ytr)
    yte <- factor(yte, levels = levels(ytr))
  }
  list(xtr = x[tr, keep, drop = FALSE], xte = x[te, keep, drop = FALSE], ytr = ytr, yte = yte,
       tr = tr, te = te, classification = is.factor(y),
       err = function(p) if (is.factor(yte)) mean(p != yte)
                         else mean((p - yte)^2) / mean((yte - mean(yte))^2))
}
