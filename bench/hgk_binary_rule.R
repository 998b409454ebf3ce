# hgk()'s rule for choosing the width and cost of a two-class C-SVM (its tuned Gaussian and the
# C-SVM on a learned kernel): the clipped squared error of the decision values averaged over two
# draws of folds, with the misclassification rate where the classes are noisy (the current
# rule, "cur"), against the misclassification rate of both draws at every fit ("miss": hgk's
# bound for noisy classes set to 0, so that the noisy-class branch always runs). Both run on
# the same training rows and seeds, so the comparison is paired per draw; the Gaussian SVM
# tuned as a user tunes it (kl_tune(kernel_svm), 6 widths x 7 costs, 5 folds, as in
# bench/learned_small.R) is the reference.
#
# Usage:
#   Rscript bench/hgk_binary_rule.R ROWS DRAWS SETS OUT     (appends one line per draw to OUT)
#   Rscript bench/hgk_binary_rule.R summary FILE[,FILE...]
# ROWS training rows per draw, the test rows 300 others (or all the others); a set with fewer
# than ROWS + 40 rows is skipped. SETS: comma list among pima, sonar, ionosphere, bc (mlbench
# BreastCancer, 683 complete rows), twonorm (800 rows, 20 inputs), circle (800 rows, 2 inputs),
# threenorm, ringnorm (800 rows, 20 inputs each), spirals (800 rows, one cycle, sd 0.05), xor
# (800 rows, 4 inputs) (mlbench), or a two-class kl_dataset() name (wdbc, bupa, heart, magic,
# higgs, cod-rna; KERNLEARN_DATA_DIR). Columns of OUT: set, rows, draw; cur, miss, gauss and
# refold, the test misclassification (refold: the Gaussian SVM tuned the same way on another
# draw of the folds, the noise floor of the comparison); cur_base and miss_base (1 where hgk
# kept its tuned Gaussian); cur_s and miss_s (seconds of the fit). 1 thread. summary prints
# per size and set the means, the Gaussian's standard error, whether each rule (and refold) is
# within one standard error of it, and the paired difference cur - miss with its standard
# error.
# The internal bound is changed in the loaded namespace only (bench use; not an option of
# hgk()). Results: bench/results/hgk_binary_rule.csv.
#
# A third rule, "scaled" (not hgk()'s rule; a candidate):
#   Rscript bench/hgk_binary_rule.R scaled ROWS DRAWS SETS OUT
# fits hgk() on the same rows and seeds with its two-class C-SVM metric replaced (in the loaded
# namespace) by the clipped squared error at the best scale of the decisions: per fold,
# min over a >= 0 of mean((clip(a f, -1, 1) - t)^2), computed exactly (the function is
# piecewise quadratic in a between the points a = 1 / |f_i|). A C-SVM's decision values have no
# scale of their own: the plain clipped squared error prefers costs whose decisions reach +-1,
# the scaled one is at most 4 times the misclassification rate and at most the plain one. The
# bound for noisy classes is kept (0.75, on the scaled values). OUT gets set, rows, draw,
# scaled (test misclassification), scaled_base (1 where hgk kept its tuned Gaussian),
# scaled_s (seconds). summary takes these files as a third argument and adds the paired
# difference scaled - cur. Results: bench/results/hgk_binary_rule_scaled.csv.
suppressPackageStartupMessages({ library(kernlearn); library(mlbench) })
args <- commandArgs(TRUE)
# the scaled rule's metric: the clipped squared error of the decisions f against the +-1
# targets t at the best scale, min over a >= 0 of mean((clip(a f) - t)^2); with u = t f,
# (clip(a f) - t)^2 = (clip(a u) - 1)^2, which is (1 - a u)^2 while a |u| < 1, then 0 (u > 0) or
# 4 (u < 0). Between consecutive points 1 / |u_i| the sum is a quadratic in a, minimised in
# closed form and clipped to the interval; u = 0 adds 1.
scaled_ls <- function(u) {
  n <- length(u)
  n0 <- sum(u == 0)
  u <- u[u != 0]
  if (!length(u)) return(1)
  o <- order(1 / abs(u))
  u <- u[o]
  b <- 1 / abs(u)
  m <- length(u)
  s1 <- c(rev(cumsum(rev(u))), 0)    # sums over the unsaturated points (a < b_i)
  s2 <- c(rev(cumsum(rev(u^2))), 0)
  lo <- c(0, b)
  hi <- c(b, Inf)
  a <- pmin(pmax(ifelse(s2 > 0, s1 / s2, lo), lo), hi)
  q <- ifelse(s2 > 0, a^2 * s2 - 2 * a * s1, 0)
  min(n0 + (m - 0:m) + q + 4 * c(0, cumsum(u < 0))) / n
}
if (identical(args[1], "summary")) {
  r <- do.call(rbind, lapply(strsplit(args[2], ",")[[1]], utils::read.csv))
  if (length(args) >= 3L) {
    sc <- do.call(rbind, lapply(strsplit(args[3], ",")[[1]], utils::read.csv))
    r <- merge(r, sc, by = c("set", "rows", "draw"))
  }
  for (n in sort(unique(r$rows))) {
    x <- r[r$rows == n, ]
    a <- do.call(rbind, lapply(split(x, x$set), function(x) data.frame(
      set = x$set[1], draws = nrow(x), cur = mean(x$cur), miss = mean(x$miss),
      gauss = mean(x$gauss), gauss_se = stats::sd(x$gauss) / sqrt(nrow(x)),
      refold = if (is.null(x$refold)) NA_real_ else mean(x$refold),
      diff_se = stats::sd(x$cur - x$miss) / sqrt(nrow(x)))))
    a <- a[a$draws >= 2L, ]
    a$cur_within <- a$cur <= a$gauss + a$gauss_se
    a$miss_within <- a$miss <= a$gauss + a$gauss_se
    a$refold_within <- a$refold <= a$gauss + a$gauss_se
    cat(sprintf("== %d rows\n", n))
    print(a, digits = 4, row.names = FALSE)
    d <- x$cur - x$miss
    cat(sprintf("mean cur %.4f, miss %.4f, gauss %.4f; within one SE: cur %d, miss %d, refold %d of %d; cur - miss %.5f (SE %.5f)\n",
                mean(a$cur), mean(a$miss), mean(a$gauss), sum(a$cur_within), sum(a$miss_within),
                sum(a$refold_within), nrow(a), mean(d), stats::sd(d) / sqrt(length(d))))
  }
  d <- r$cur - r$miss
  cat(sprintf("all sizes: cur - miss %.5f (SE %.5f) over %d draws; cur worse in %d, better in %d\n",
              mean(d), stats::sd(d) / sqrt(length(d)), length(d), sum(d > 0), sum(d < 0)))
  s <- stats::aggregate(cbind(diff = cur - miss) ~ set, r, mean)
  print(s[order(s$diff), ], digits = 3, row.names = FALSE)
  if (!is.null(r$scaled)) {
    cat("== the scaled rule\n")
    for (n in sort(unique(r$rows))) {
      x <- r[r$rows == n, ]
      a <- do.call(rbind, lapply(split(x, x$set), function(x) data.frame(
        scaled = mean(x$scaled), gauss = mean(x$gauss), se = stats::sd(x$gauss) / sqrt(nrow(x)))))
      d <- x$scaled - x$cur
      cat(sprintf("%d rows: mean scaled %.4f, cur %.4f; scaled within one SE of gauss on %d of %d sets; scaled - cur %.5f (SE %.5f)\n",
                  n, mean(x$scaled), mean(x$cur), sum(a$scaled <= a$gauss + a$se), nrow(a),
                  mean(d), stats::sd(d) / sqrt(length(d))))
    }
    d <- r$scaled - r$cur
    cat(sprintf("all sizes: scaled - cur %.5f (SE %.5f) over %d draws; scaled worse in %d, better in %d\n",
                mean(d), stats::sd(d) / sqrt(length(d)), length(d), sum(d > 0), sum(d < 0)))
    s <- stats::aggregate(cbind(diff = scaled - cur) ~ set, r, mean)
    print(s[order(s$diff), ], digits = 3, row.names = FALSE)
  }
  quit(save = "no")
}
scaled <- identical(args[1], "scaled")
if (scaled) args <- args[-1L]
rows <- as.integer(args[1]); draws <- as.integer(args[2]); sets <- strsplit(args[3], ",")[[1]]
out <- args[4]
options(kernlearn.threads = 1L, kernlearn.backend = "cpu")
source(file.path("bench", "hgk_bench_sets.R"))
load_set <- hgk_bench_set
ns <- asNamespace("kernlearn")
orig <- get(".hgk_noisy_ls", ns)
orig_metric <- get(".hgk_svm_ls_metric", ns)
scaled_metric <- function(levels) {
  structure(function(truth, pred) {
    scaled_ls(ifelse(truth == levels[2L], 1, -1) * as.vector(pred))
  }, type = "decision")
}
set_metric <- function(f) { unlockBinding(".hgk_svm_ls_metric", ns); assign(".hgk_svm_ls_metric", f, ns); lockBinding(".hgk_svm_ls_metric", ns) }
setrule <- function(v) { unlockBinding(".hgk_noisy_ls", ns); assign(".hgk_noisy_ls", v, ns); lockBinding(".hgk_noisy_ls", ns) }
for (name in sets) {
  d <- load_set(name); n <- nrow(d); p <- ncol(d) - 1L
  if (n - rows < 40) { message("skip ", name); next }
  for (s in seq_len(draws)) {
    set.seed(500 + s)
    tr <- sample.int(n, rows)
    te <- sample(setdiff(seq_len(n), tr), min(300L, n - rows))
    dt <- d[tr, ]; dt$y <- droplevels(dt$y); if (nlevels(dt$y) < 2L) next
    err <- function(pred) mean(as.character(pred) != as.character(d$y[te]))
    fitr <- function(v) { setrule(v); set.seed(2000 + s)
      t <- system.time(f <- suppressWarnings(hgk(y ~ ., data = dt)))[["elapsed"]]
      setrule(orig); c(err(predict(f, d[te, ])), identical(f$selection$choice, "baseline"), t) }
    fitr_scaled <- function() { set_metric(scaled_metric); on.exit(set_metric(orig_metric))
      set.seed(2000 + s)
      t <- system.time(f <- suppressWarnings(hgk(y ~ ., data = dt)))[["elapsed"]]
      c(err(predict(f, d[te, ])), identical(f$selection$choice, "baseline"), t) }
    if (scaled) {
      a <- fitr_scaled()
      r <- data.frame(set = name, rows = rows, draw = s, scaled = a[1], scaled_base = a[2],
                      scaled_s = a[3])
      cat(sprintf("%s %d %d scaled %.4f (%.1fs)\n", name, rows, s, a[1], a[3]))
      utils::write.table(r, out, append = file.exists(out), col.names = !file.exists(out), sep = ",", row.names = FALSE)
      next
    }
    a <- fitr(orig); b <- fitr(0)
    grid <- list(gamma = 2^(-3:2) / p, cost = 2^seq(-1, 11, by = 2))
    set.seed(3000 + s)
    g <- suppressWarnings(kl_tune(kernel_svm, y ~ ., data = dt, scale_response = FALSE, grid = grid, folds = 5))
    eg <- err(predict(g$best_model, d[te, ]))
    # the same tuning on another draw of the folds: how far two tunings of one kernel fall apart
    set.seed(4000 + s)
    g2 <- suppressWarnings(kl_tune(kernel_svm, y ~ ., data = dt, scale_response = FALSE, grid = grid, folds = 5))
    r <- data.frame(set = name, rows = rows, draw = s, cur = a[1], miss = b[1], gauss = eg,
                    refold = err(predict(g2$best_model, d[te, ])),
                    cur_base = a[2], miss_base = b[2], cur_s = a[3], miss_s = b[3])
    cat(sprintf("%s %d %d cur %.4f miss %.4f gauss %.4f (%.1fs)\n", name, rows, s, a[1], b[1], eg, a[3]))
    utils::write.table(r, out, append = file.exists(out), col.names = !file.exists(out), sep = ",", row.names = FALSE)
  }
}
