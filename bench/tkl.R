# Speed of tkl() on CCPP: where a fit's time goes, measured against one cold SVM solve on a
# precomputed kernel of the same size in the same run (the unit the targets use).
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/tkl.R [reps] [n ...]
#   reps (default 3): repetitions per size, medians reported; sizes default 5000 9568 (0: only
#   the warm-start section).
# Appends to bench/results/tkl.csv, one row per size and repetition:
#   fit          whole tkl() fit (cost 10, epsilon 0.1 on the standardised response, delta 0.1)
#   iterations, solves   P updates and SVM solves of the line searches
#   cold_I       the SVM solver (kernel_svm's core entry) on the precomputed K(P = I), cold
#   cold_final   the same on the precomputed K of the learned P, cold
#   warm_solve   the mean line-search solve of the fit (warm-started from the previous alpha)
#   p_work       the mean per iteration of everything else (gradient, eigenvector, trial Gram)
#   start        the box matrix and K(I) before the first solve
#   e1071        e1071::svm, Gaussian, the same cost and epsilon, gamma 1 (scaled inputs), for scale
# Then warm-started line-search solves against cold ones (bench/results/tkl_warm.csv; below).
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1L) as.integer(args[1L]) else 3L
sizes <- if (length(args) >= 2L) as.integer(args[-1L]) else c(5000L, 9568L)
sizes <- sizes[sizes > 0L]  # "0": only the warm-start section
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
out <- file.path("bench", "results", "tkl.csv")
threads <- as.integer(Sys.getenv("KERNLEARN_THREADS", "2"))
options(kernlearn.threads = threads)

d <- kl_dataset("ccpp", dir = dir)
elapsed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  force(expr)
  proc.time()[["elapsed"]] - t0
}
rows <- list()
for (n in sizes) for (r in seq_len(reps)) {
  set.seed(r)
  i <- if (n >= nrow(d$x)) seq_len(nrow(d$x)) else sample(nrow(d$x), n)
  x <- d$x[i, , drop = FALSE]
  y <- (d$y[i] - mean(d$y[i])) / stats::sd(d$y[i])
  xs <- apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
  fit <- NULL
  t_fit <- elapsed(fit <- tkl(x, y, cost = 10, epsilon = 0.1, delta = 0.1, scale_response = FALSE))
  tr <- fit$trace
  # cold solves through the same core entry point kernel_svm() uses, without its R-side checks
  # of the n x n matrix (symmetry, finiteness), so that only the solver is timed
  par <- kernlearn:::.svm_params(10, 0.1, 1e-3, TRUE, 1024, NULL, FALSE, 5, "bench")
  spec <- list(type = 0L, gamma = 1, degree = 1, scale = 1, offset = 0)
  cold <- function(K) elapsed(kernlearn:::cpp_svm_regress(NULL, K, y, spec, par, NULL, threads,
                                                          NULL))
  K <- kernel_matrix(tessellated_kernel(diag(2 * fit$h), 1), xs)
  t_cold_I <- cold(K)
  K <- kernel_matrix(learned_kernel(fit), xs)
  t_cold_final <- cold(K)
  rm(K)
  gc(verbose = FALSE)
  t_e1071 <- if (requireNamespace("e1071", quietly = TRUE))
    elapsed(e1071::svm(xs, y, cost = 10, epsilon = 0.1, gamma = 1, scale = FALSE)) else NA
  its <- max(1L, fit$iterations)
  row <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), n = length(i), rep = r,
                    threads = threads, fit = t_fit, iterations = fit$iterations,
                    solves = sum(tr$solves), stop = fit$stop, cold_I = t_cold_I,
                    cold_final = t_cold_final,
                    warm_solve = sum(tr$seconds_alpha) / max(1L, sum(tr$solves)),
                    p_work = sum(tr$seconds_p) / its, start = fit$seconds_start,
                    first_solve = fit$seconds_first, e1071 = t_e1071)
  print(row)
  rows[[length(rows) + 1L]] <- row
  utils::write.table(row, out, sep = ",", row.names = FALSE, append = file.exists(out),
                     col.names = !file.exists(out))
}
if (length(rows)) {
res <- do.call(rbind, rows)
med <- stats::aggregate(cbind(fit, iterations, solves, cold_I, cold_final, warm_solve, p_work,
                              start, e1071) ~ n, data = res, FUN = stats::median)
med$fit_in_cold_final <- med$fit / med$cold_final
med$warm_over_cold_final <- med$warm_solve / med$cold_final
med$p_work_over_cold_final <- med$p_work / med$cold_final
med$p_work_over_cold_I <- med$p_work / med$cold_I
cat("\nMedians over", reps, "repetitions (seconds; ratios to the cold solves of the same run):\n")
print(med, digits = 3, row.names = FALSE)
}

# ---- warm starts -------------------------------------------------------------------------
# The line-search solves after the first iteration (step < 1, so warm-started) against the same
# solves started cold: tkl's core run twice with its warm start on and off (the trajectories
# are the same, so each solve has its cold twin). Appends to bench/results/tkl_warm.csv.
warm_run <- function(x, y, k, cost, warm) {
  xs <- apply(x, 2, function(v) { r <- diff(range(v)); if (r > 0) (v - min(v)) / r else 0 * v })
  par <- kernlearn:::.svm_params(cost, 0.1, 1e-3, TRUE, 1024, NULL, FALSE, 5, "bench")
  r <- kernlearn:::cpp_tkl_fit(xs, y, k, if (k) rep(1, k) else numeric(),
                               rep(-0.1, ncol(x)), rep(1.1, ncol(x)), par,
                               list(degree = 1L, tol = 1e-2, maxit = 100L, warm = warm),
                               threads, NULL)
  tr <- r$trace
  ls <- tr[seq_len(nrow(tr)) > 1L & tr$solves > 0, , drop = FALSE]
  c(iterations = sum(tr$step > 0), solves = sum(ls$solves),
    per_solve = sum(ls$seconds_alpha) / max(1, sum(ls$solves)),
    svm_iter_per_solve = sum(ls$svm_iter) / max(1, sum(ls$solves)), first = r$seconds_first)
}
wsets <- list(
  concrete = function() { d <- kl_dataset("concrete", dir = dir, quiet = TRUE)
                          list(x = d$x, y = (d$y - mean(d$y)) / stats::sd(d$y), k = 0L, cost = 10) },
  magic3000 = function() { d <- kl_dataset("magic", dir = dir, quiet = TRUE); set.seed(1)
                           i <- sample(nrow(d$x), 3000)
                           list(x = d$x[i, ], y = as.integer(d$y[i]), k = 2L, cost = 1) })
wout <- file.path("bench", "results", "tkl_warm.csv")
for (nm in names(wsets)) {
  s <- wsets[[nm]]()
  for (r in seq_len(reps)) {
    w <- warm_run(s$x, s$y, s$k, s$cost, TRUE)
    c0 <- warm_run(s$x, s$y, s$k, s$cost, FALSE)
    row <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = nm, rep = r,
                      threads = threads, iterations = w[["iterations"]], solves = w[["solves"]],
                      warm_per_solve = w[["per_solve"]], cold_per_solve = c0[["per_solve"]],
                      ratio = w[["per_solve"]] / c0[["per_solve"]],
                      warm_smo_iter = w[["svm_iter_per_solve"]],
                      cold_smo_iter = c0[["svm_iter_per_solve"]],
                      same_path = w[["solves"]] == c0[["solves"]])
    print(row)
    utils::write.table(row, wout, sep = ",", row.names = FALSE, append = file.exists(wout),
                       col.names = !file.exists(wout))
  }
}
