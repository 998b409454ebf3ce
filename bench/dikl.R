# DI kernel learning speed on MNIST.
#
# 1. One gradient evaluation of the Nystrom DI (NysDI) and random Fourier DI (RFDI) objectives
#    at Nb = 4000 rows, J = 2000 features, d = 784, against the floor (the time of the matrix
#    products the gradient needs, run alone with the same shapes through the same GEMM): timed
#    without R by the C++ bench program (make bench-core BENCH=dikl; rows of part "gradient"
#    in the same file).
# 2. A full DI training run at J = 1000 on all 60000 training images (at most `epochs`
#    epochs), with the linear SVM head, against standard Nystrom features + the same linear
#    SVM, and kernel_svm / e1071 on a subsample as the accuracy ceiling.
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript bench/dikl.R [epochs]
# Appends to bench/results/dikl.csv.
library(kernlearn)
args <- commandArgs(trailingOnly = TRUE)
epochs <- if (length(args) >= 1) as.integer(args[1]) else 20L
out <- file.path("bench", "results", "dikl.csv")
threads <- 2L
set.seed(1)
m <- kl_dataset("mnist")
# Every method sees the same inputs: scaled to [0, 1] with the training range (the papers'
# convention; constant pixels become 0).
mn <- apply(m$x[m$train, ], 2, min)
rg <- apply(m$x[m$train, ], 2, max) - mn
sc <- ifelse(rg > 0, 1 / rg, 0)
prep <- function(a) sweep(sweep(a, 2, mn), 2, sc, `*`)
x <- prep(m$x[m$train, ])
y <- m$y[m$train]
xt <- prep(m$x[-m$train, ])
yt <- m$y[-m$train]
rm(m)
rows <- list()
add <- function(...) {
  r <- data.frame(date = format(Sys.Date()), ..., stringsAsFactors = FALSE)
  print(r)
  rows[[length(rows) + 1L]] <<- r
}
clock <- function() proc.time()[["elapsed"]]

J <- 1000L
set.seed(2)
gamma <- kernlearn:::.dikl_median_gamma(x, "bench")
t0 <- clock()
fit <- dikl(x, y, dim = J, gamma = gamma, max_epochs = epochs,
            threads = threads)
tt <- clock() - t0
acc <- mean(predict(fit, xt) == yt)
add(part = "training", what = "dikl DI Nystrom + linear SVM", run = 1L, Nb = fit$params$batch_size,
    J = J, d = 784L, seconds = tt, floor_seconds = NA, ratio = NA,
    note = sprintf("%d epochs (%s); map %.1f s, head %.1f s; test accuracy %.4f",
                   fit$training$epochs, fit$training$stop, fit$training$seconds_map,
                   fit$training$seconds_head, acc))
set.seed(2)
t0 <- clock()
std <- dikl(x, y, dim = J, gamma = gamma, objective = "none", threads = threads)
ts <- clock() - t0
add(part = "training", what = "standard Nystrom + linear SVM", run = 1L, Nb = NA, J = J,
    d = 784L, seconds = ts, floor_seconds = NA, ratio = NA,
    note = sprintf("test accuracy %.4f", mean(predict(std, xt) == yt)))
sub <- sample.int(nrow(x), 10000L)
t0 <- clock()
ks <- kernel_svm(x[sub, ], y[sub], kernel = gaussian_kernel(gamma), cost = 10,
                 threads = threads)
tk <- clock() - t0
add(part = "training", what = "kernel_svm on 10000 rows (cost 10)", run = 1L, Nb = NA, J = NA,
    d = 784L, seconds = tk, floor_seconds = NA, ratio = NA,
    note = sprintf("test accuracy %.4f", mean(predict(ks, xt) == yt)))
if (requireNamespace("e1071", quietly = TRUE)) {
  t0 <- clock()
  es <- e1071::svm(x[sub, ], y[sub], gamma = gamma, cost = 10, scale = FALSE)
  te <- clock() - t0
  add(part = "training", what = "e1071::svm on 10000 rows (cost 10)", run = 1L, Nb = NA,
      J = NA, d = 784L, seconds = te, floor_seconds = NA, ratio = NA,
      note = sprintf("test accuracy %.4f", mean(predict(es, xt) == yt)))
}

res <- do.call(rbind, rows)
dir.create(dirname(out), showWarnings = FALSE, recursive = TRUE)
utils::write.table(res, out, sep = ",", row.names = FALSE, append = file.exists(out),
                   col.names = !file.exists(out))
