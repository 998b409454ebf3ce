# Gaussian kernel matrix, MNIST-sized: 20000 x 784 against 2000 points.
# Compares kernlearn::kernel_matrix with the floor (a GEMM of the same shape through the same
# core, timed by the C++ bench program tests/core/build/bench_core when it is built: make
# bench-core builds it and records the floor and the core's kernel block in the same file),
# with kernlab::kernelMatrix, and with plain R (tcrossprod + exp).
# Uses real MNIST rows when KERNLEARN_DATA_DIR holds mnist/, random data otherwise.
# Usage: Rscript bench/kernel_matrix.R [reps]   (results appended to bench/results/)
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 5L
threads <- 2L
options(kernlearn.backend = "cpu")

set.seed(1)
n <- 20000L; m <- 2000L; d <- 784L
src <- "random uniform"
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (nzchar(dir) && dir.exists(file.path(dir, "mnist"))) {
  mn <- kl_dataset("mnist", dir = dir)
  x <- mn$x[seq_len(n), ] / 255
  z <- mn$x[60000L + seq_len(m), ] / 255
  src <- "MNIST pixels / 255 (train rows 1..20000, test rows 1..2000)"
} else {
  x <- matrix(runif(n * d), n)
  z <- matrix(runif(m * d), m)
}
gamma <- 1 / d

time_it <- function(f) {
  gc(FALSE)
  vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], numeric(1))
}
# The floor: median seconds of the core's C = A B' at this shape (NA without the C++ bench).
bench_core <- file.path("tests", "core", "build", "bench_core")
floor_s <- if (file.exists(bench_core)) {
  as.numeric(system2(bench_core, c("--reps", reps, "--threads", threads, "--gemm-seconds", n, m, d),
                     stdout = TRUE))
} else NA_real_
res <- list()
res$kernel_matrix <- time_it(function() kernel_matrix(gaussian_kernel(gamma), x, z,
                                                      threads = threads))
# Peers once or twice: they are much slower.
peer_reps <- min(reps, 2L)
reps_save <- reps; reps <- peer_reps
res$base_R <- time_it(function() {
  g <- tcrossprod(x, z)
  exp(-gamma * pmax(outer(rowSums(x^2), rowSums(z^2), "+") - 2 * g, 0))
})
if (requireNamespace("kernlab", quietly = TRUE))
  res$kernlab <- time_it(function() kernlab::kernelMatrix(kernlab::rbfdot(sigma = gamma), x, z))
reps <- reps_save

K <- kernel_matrix(gaussian_kernel(gamma), x[1:500, ], z[1:300, ])
ref <- exp(-gamma * pmax(outer(rowSums(x[1:500, ]^2), rowSums(z[1:300, ]^2), "+") -
                         2 * tcrossprod(x[1:500, ], z[1:300, ]), 0))
stopifnot(max(abs(K - ref)) < 1e-10)

med <- vapply(res, median, numeric(1))
out <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), data = src,
                  shape = sprintf("%dx%d vs %dx%d", n, d, m, d), threads = threads,
                  method = names(med), median_s = round(med, 3),
                  runs = vapply(res, length, integer(1)),
                  ratio_to_gemm = round(med / floor_s, 2),
                  blas = sessionInfo()$BLAS, row.names = NULL)
print(out[, c("method", "median_s", "runs", "ratio_to_gemm")], row.names = FALSE)
f <- file.path("bench", "results", "kernel_matrix.csv")
if (dir.exists(dirname(f)))
  utils::write.table(out, f, sep = ",", row.names = FALSE, append = file.exists(f),
                     col.names = !file.exists(f))
