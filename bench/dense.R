# Dense algebra of the package's real shapes against the machine's floor, in one run:
# GFLOP/s of kernlearn's Gaussian kernel matrix (kernel_matrix()) and the time of a
# kernel_ridge() fit, next to OpenBLAS (pthreads) on the same shapes through
# ../shared/tools/blas-floor/run (when present), and R's own BLAS (tcrossprod / chol, as a user
# has it; only on the shapes where it finishes in reasonable time). Medians of `reps` runs; the
# same thread count for all. The core's products (C = A B') and blocked Cholesky factorisation
# alone are measured without R by the C++ bench program (make bench-core BENCH=dense), which
# appends its rows ("gemm A B'", "cholesky") to the same file.
# Usage: Rscript bench/dense.R [reps] [threads]   (results appended to bench/results/dense.csv)
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1L) as.integer(args[1]) else 3L
threads <- if (length(args) >= 2L) as.integer(args[2]) else 2L
options(kernlearn.backend = "cpu")
floor_tool <- normalizePath(file.path("..", "shared", "tools", "blas-floor", "run"), mustWork = FALSE)
set.seed(1)

med_time <- function(f, r = reps) {
  gc(FALSE)
  stats::median(vapply(seq_len(r), function(i) system.time(f())[["elapsed"]], numeric(1)))
}
# OpenBLAS's GFLOP/s from the shared tool (best of 3 there), NA without it.
openblas <- function(m, n, k, nchol) {
  if (!file.exists(floor_tool)) return(c(gemm = NA, chol = NA))
  out <- system2("sh", c(shQuote(floor_tool), threads, m, n, k, nchol), stdout = TRUE, stderr = FALSE)
  g <- as.numeric(sub(".*, ([0-9.]+) GFLOP/s.*", "\\1", out[grepl("dgemm", out)]))
  ch <- as.numeric(sub(".*, ([0-9.]+) GFLOP/s.*", "\\1", out[grepl("dpotrf", out)]))
  c(gemm = if (length(g)) g else NA, chol = if (length(ch)) ch else NA)
}
rows <- list()
# ours_s: kernlearn's seconds (NA for a row of R's BLAS alone); r_s: R's BLAS on the same flops.
add <- function(op, shape, flops, ours_s, ob, r_s = NA) {
  rows[[length(rows) + 1L]] <<- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), op = op, shape = shape, threads = threads,
    kernlearn_s = round(ours_s, 4), kernlearn_gflops = round(flops / ours_s / 1e9, 1),
    openblas_gflops = ob, ratio_openblas = round(flops / ours_s / 1e9 / ob, 2),
    r_blas_gflops = if (is.na(r_s)) NA else round(flops / r_s / 1e9, 1),
    simd = kernlearn:::cpp_simd_level(), blas = sessionInfo()$BLAS)
  r <- rows[[length(rows)]]
  cat(sprintf("%-22s %-22s kernlearn %7s s %6s GFLOP/s | OpenBLAS %6.1f (ratio %s) | R's BLAS %s\n",
              op, shape, format(round(ours_s, 3)), format(r$kernlearn_gflops), ob,
              format(r$ratio_openblas),
              if (is.na(r$r_blas_gflops)) "-" else format(r$r_blas_gflops)))
}

# The Gaussian kernel matrix (MNIST-sized rows), and R's BLAS on the product it rests on.
for (sh in list(c(20000, 2000, 784), c(4000, 2000, 784))) {
  m <- sh[1]; n <- sh[2]; k <- sh[3]
  a <- matrix(runif(m * k), m)
  b <- matrix(runif(n * k), n)
  flops <- 2 * m * n * k
  ob <- openblas(m, n, k, 1000)[["gemm"]]
  if (m <= 4000) add("gemm A B' (R's BLAS)", sprintf("%dx%dx%d", m, n, k), flops, NA, ob,
                     med_time(function() tcrossprod(a, b), 1L))
  t_km <- med_time(function() kernel_matrix(gaussian_kernel(1 / k), a, b, threads = threads))
  add("gaussian kernel_matrix", sprintf("%dx%dx%d", m, n, k), flops, t_km, ob)
}
# R's BLAS on the Cholesky factorisations the C++ bench times for the core.
for (nc in c(2000L, 4000L)) {
  M <- matrix(rnorm(nc * 200), nc)
  A <- tcrossprod(M) / 200 + diag(nc)
  ob <- openblas(100, 100, 100, nc)[["chol"]]
  add("cholesky (R's BLAS)", sprintf("n=%d", nc), nc^3 / 3, NA, ob, med_time(function() chol(A), 1L))
}
# kernel_ridge fit at n = 6000, d = 10 against OpenBLAS's dpotrf at n = 6000.
x <- matrix(runif(6000 * 10), 6000)
y <- sin(3 * x[, 1]) + x[, 2] + rnorm(6000, sd = 0.1)
t_kr <- med_time(function() kernel_ridge(x, y, lambda = 1e-3, threads = threads))
ob6 <- openblas(100, 100, 100, 6000)[["chol"]]
t_ob6 <- 6000^3 / 3 / 1e9 / ob6
cat(sprintf("kernel_ridge fit n = 6000, d = 10: %.3f s; OpenBLAS dpotrf n = 6000: %.3f s; ratio %.2f\n",
            t_kr, t_ob6, t_kr / t_ob6))
rows[[length(rows) + 1L]] <- data.frame(
  date = format(Sys.time(), "%Y-%m-%d %H:%M"), op = "kernel_ridge fit (vs dpotrf time)",
  shape = "n=6000 d=10", threads = threads, kernlearn_s = round(t_kr, 4),
  kernlearn_gflops = NA, openblas_gflops = ob6, ratio_openblas = round(t_kr / t_ob6, 2),
  r_blas_gflops = NA, simd = kernlearn:::cpp_simd_level(), blas = sessionInfo()$BLAS)
out <- do.call(rbind, rows)
f <- file.path("bench", "results", "dense.csv")
dir.create(dirname(f), showWarnings = FALSE, recursive = TRUE)
utils::write.table(out, f, sep = ",", row.names = FALSE, append = file.exists(f),
                   col.names = !file.exists(f))
