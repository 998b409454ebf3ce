# Dense algebra of the package's real shapes against the machine's floor, in one run:
# GFLOP/s of kernlearn's products (C = A B'), Gaussian kernel matrix and blocked Cholesky,
# next to OpenBLAS (pthreads) on the same shapes through ../shared/tools/blas-floor/run (when
# present) and next to R's own BLAS (crossprod / chol, as a user has it; only on the shapes
# where it finishes in reasonable time). Medians of `reps` runs; the same thread count for all.
# Usage: Rscript bench/dense.R [reps] [threads]   (results appended to bench/results/dense.csv)
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1L) as.integer(args[1]) else 3L
threads <- if (length(args) >= 2L) as.integer(args[2]) else 2L
options(kernlearn.backend = "cpu")
floor_tool <- normalizePath(file.path("..", "shared", "tools", "blas-floor", "run"), mustWork = FALSE)
bk <- list(gpu = FALSE, lib = "")
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
add <- function(op, shape, flops, ours_s, ob, r_s = NA) {
  rows[[length(rows) + 1L]] <<- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), op = op, shape = shape, threads = threads,
    kernlearn_s = round(ours_s, 4), kernlearn_gflops = round(flops / ours_s / 1e9, 1),
    openblas_gflops = ob, ratio_openblas = round(flops / ours_s / 1e9 / ob, 2),
    r_blas_gflops = if (is.na(r_s)) NA else round(flops / r_s / 1e9, 1),
    simd = kernlearn:::cpp_simd_level(), blas = sessionInfo()$BLAS)
  r <- rows[[length(rows)]]
  cat(sprintf("%-22s %-22s kernlearn %7.3f s %6.1f GFLOP/s | OpenBLAS %6.1f (ratio %.2f) | R's BLAS %s\n",
              op, shape, ours_s, r$kernlearn_gflops, ob, r$ratio_openblas,
              if (is.na(r$r_blas_gflops)) "-" else format(r$r_blas_gflops)))
}

# Products and the Gaussian kernel matrix (MNIST-sized rows), and DI's products.
for (sh in list(c(20000, 2000, 784), c(4000, 2000, 784))) {
  m <- sh[1]; n <- sh[2]; k <- sh[3]
  a <- matrix(runif(m * k), m)
  b <- matrix(runif(n * k), n)
  flops <- 2 * m * n * k
  ob <- openblas(m, n, k, 1000)[["gemm"]]
  t_gemm <- med_time(function() kernlearn:::cpp_gemm_nt(a, b, threads, bk))
  r_s <- if (m <= 4000) med_time(function() tcrossprod(a, b), 1L) else NA
  add("gemm A B'", sprintf("%dx%dx%d", m, n, k), flops, t_gemm, ob, r_s)
  t_km <- med_time(function() kernel_matrix(gaussian_kernel(1 / k), a, b, threads = threads))
  add("gaussian kernel_matrix", sprintf("%dx%dx%d", m, n, k), flops, t_km, ob)
}
# Blocked Cholesky.
for (nc in c(2000L, 4000L, 8000L)) {
  M <- matrix(rnorm(nc * 200), nc)
  A <- tcrossprod(M) / 200 + diag(nc)
  ob <- openblas(100, 100, 100, nc)[["chol"]]
  # the factorization alone, in place on a copy made before the clock starts (as the floor
  # tool times dpotrf), then the R-level call, which also allocates and fills its result
  t_fac <- stats::median(kernlearn:::cpp_cholesky_seconds(A, threads, reps))
  r_s <- if (nc <= 4000L) med_time(function() chol(A), 1L) else NA
  add("cholesky", sprintf("n=%d", nc), nc^3 / 3, t_fac, ob, r_s)
  t_ch <- med_time(function() kernlearn:::cpp_cholesky(A, threads))
  add("cholesky (R call)", sprintf("n=%d", nc), nc^3 / 3, t_ch, ob)
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
