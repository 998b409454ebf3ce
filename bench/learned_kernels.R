# Learned kernels on the kernel interface: their cost against the Gaussian kernel in the same run.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/learned_kernels.R [reps]
#   svm     Letter (train rows 1..16000 / test 16001..20000, gamma 16, cost 16): kernel_svm with
#           the Gaussian kernel, the depth-1 hierarchical kernel with 16 weights (all 1, and
#           random in [0.5, 1.5]), and a depth-2 hierarchical kernel with 8 nodes over blocks
#           of 2 coordinates (leaf and node weights 1, so that it is close to the Gaussian kernel
#           at short distances); e1071 on the Gaussian kernel as the peer.
#   matrix  kernel_matrix 5000 x 5000, d = 8 (uniform [0, 1]): Gaussian vs the degree-1
#           tessellated kernel (P random PSD 18 x 18) and the depth-2 hierarchical kernel.
# Times are elapsed seconds, 2 threads, medians of `reps` runs. Results:
# bench/results/learned_kernels.csv (replaced on each run).
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 3L
options(kernlearn.backend = "cpu", kernlearn.threads = 2L)
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
timed <- function(f, n) {
  t <- numeric(n); v <- NULL
  for (i in seq_len(n)) { gc(FALSE); t[i] <- system.time(v <- f())[["elapsed"]] }
  list(value = v, times = t, median = stats::median(t))
}
rows <- list()
record <- function(section, what, tm, ref, extra = "") {
  rows[[length(rows) + 1L]] <<- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), section = section, method = what,
    median_s = round(tm$median, 3), runs_s = paste(round(tm$times, 3), collapse = " "),
    ratio_to_gaussian = round(tm$median / ref, 3), note = extra, stringsAsFactors = FALSE)
  cat(sprintf("%-7s %-52s %8.3f s (runs %s)  x%.2f of Gaussian  %s\n", section, what,
              tm$median, paste(round(tm$times, 2), collapse = " "), tm$median / ref, extra))
  utils::write.csv(do.call(rbind, rows), file.path("bench", "results", "learned_kernels.csv"),
                   row.names = FALSE)
}

# Letter
d <- kl_dataset("letter", dir = dir)
tr <- 1:16000; te <- 16001:20000
xtr <- d$x[tr, ]; ytr <- d$y[tr]; xte <- d$x[te, ]; yte <- d$y[te]
err <- function(fit) mean(predict(fit, xte) != yte)
set.seed(1)
hk1 <- hierarchical_gaussian_kernel(rep(1, 16))
hk1r <- hierarchical_gaussian_kernel(runif(16, 0.5, 1.5))
blocks <- split(sample(16), rep(1:8, each = 2))
hk2 <- hierarchical_gaussian_kernel(weights = lapply(blocks, function(b) rep(1, length(b))),
                                    nodes = unname(blocks), node_weights = rep(1, 8))
g <- timed(function() kernel_svm(xtr, ytr, gamma = 16, cost = 16), reps)
record("svm", "kernel_svm Gaussian (gamma 16)", g, g$median,
       sprintf("error %.4f, nSV %d", err(g$value), g$value$tot.nSV))
for (case in list(list("kernel_svm hierarchical depth 1, weights 1", hk1),
                  list("kernel_svm hierarchical depth 1, weights U[0.5, 1.5]", hk1r),
                  list("kernel_svm hierarchical depth 2, 8 nodes x 2 coords", hk2))) {
  tm <- timed(function() kernel_svm(xtr, ytr, kernel = case[[2]], gamma = 16, cost = 16), reps)
  record("svm", case[[1]], tm, g$median,
         sprintf("error %.4f, nSV %d", err(tm$value), tm$value$tot.nSV))
}
if (requireNamespace("e1071", quietly = TRUE)) {
  mn <- apply(xtr, 2, min); rg <- apply(xtr, 2, max) - mn; rg[rg == 0] <- 1
  xs <- sweep(sweep(xtr, 2, mn), 2, rg, "/")
  e <- timed(function() e1071::svm(xs, ytr, gamma = 16, cost = 16, scale = FALSE), 1L)
  record("svm", "e1071::svm Gaussian (peer)", e, g$median)
}

# kernel matrices, 5000 x 5000, d = 8
set.seed(2)
x <- matrix(runif(5000 * 8), 5000, 8)
P <- crossprod(matrix(rnorm(18 * 18), 18))
kt <- tessellated_kernel(P, degree = 1)
blocks8 <- split(sample(8), rep(1:4, each = 2))
hk8 <- hierarchical_gaussian_kernel(weights = lapply(blocks8, function(b) rep(2, 2)),
                                    nodes = unname(blocks8), node_weights = rep(1, 4))
gm <- timed(function() kernel_matrix(gaussian_kernel(1), x), reps)
record("matrix", "kernel_matrix Gaussian 5000 x 5000, d 8", gm, gm$median)
record("matrix", "kernel_matrix tessellated degree 1, 5000 x 5000, d 8",
       timed(function() kernel_matrix(kt, x), reps), gm$median)
record("matrix", "kernel_matrix hierarchical depth 2 (4 nodes), 5000 x 5000, d 8",
       timed(function() kernel_matrix(hk8, x), reps), gm$median)
