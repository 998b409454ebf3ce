# kernel_svm against LIBSVM (e1071), kernlab and caret on real data.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/kernel_svm.R <section> [reps]
#   letter   Letter, train rows 1..16000 / test 16001..20000, gamma = 16, cost = 16
#   covtype  covtype_subset20k, first 15000 rows train / last 5000 test; gamma and cost by
#            5-fold CV of kernel_svm on the training rows (kl_tune), then both packages
#   codrna   cod-rna, 59535 train / 271617 test, gamma and cost by 5-fold CV on 10000
#            training rows
#   grid     5 x 5 (cost, gamma) grid, 5-fold CV on 5000 Letter rows: kl_tune vs
#            e1071::tune vs caret::train(method = "svmRadial")
#   small    eps-regression on 400 rows of ccpp (the next 2000 test), gamma = 10 and costs
#            2^5, 2^9 (large costs: many cheap solver iterations, where a fixed cost per
#            iteration shows), the response standardised for both packages; the test MSE
#            on that scale
# Features are scaled to [0, 1] with the training rows' range for every package (kernel_svm
# does this itself; the peers get the same matrix with scale = FALSE). Times are elapsed
# seconds on 2 threads for kernel_svm (e1071 and kernlab are single-threaded); medians of
# `reps` runs. Results replace this section's rows in bench/results/kernel_svm.csv.
suppressPackageStartupMessages({
  library(kernlearn)
  library(e1071)
})
args <- commandArgs(TRUE)
section <- if (length(args)) args[1] else "letter"
reps <- if (length(args) > 1) as.integer(args[2]) else 3L
threads <- 2L
options(kernlearn.backend = "cpu", kernlearn.threads = threads)
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
out_dir <- file.path("bench", "results")
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

scale_by <- function(x, ref) {
  mn <- apply(ref, 2, min)
  rg <- apply(ref, 2, max) - mn
  rg[rg == 0] <- 1
  sweep(sweep(x, 2, mn), 2, rg, "/")
}
timed <- function(expr_fun, n) {
  times <- numeric(n)
  val <- NULL
  for (i in seq_len(n)) {
    gc(FALSE)
    times[i] <- system.time(val <- expr_fun())[["elapsed"]]
  }
  list(value = val, times = times, median = stats::median(times))
}
results_file <- file.path(out_dir, "kernel_svm.csv")
save_rows <- function() {
  new <- do.call(rbind, rows)
  old <- if (file.exists(results_file)) utils::read.csv(results_file, stringsAsFactors = FALSE)
  if (!is.null(old)) new <- rbind(old[old$section != section, , drop = FALSE], new)
  utils::write.csv(new, results_file, row.names = FALSE)
}
rows <- list()
record <- function(dataset, method, params, tm, err, nsv, note = "") {
  rows[[length(rows) + 1L]] <<- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), section = section, dataset = dataset,
    method = method, params = params, fit_median_s = round(tm$median, 3),
    fit_runs_s = paste(round(tm$times, 2), collapse = " "), test_error = err, nSV = nsv,
    note = note, stringsAsFactors = FALSE)
  save_rows()
  cat(sprintf("%-10s %-34s %-22s fit %7.2f s  (runs %s)  error %.4f  nSV %s %s\n", dataset,
              method, params, tm$median, paste(round(tm$times, 2), collapse = " "), err,
              format(nsv), note))
}

compare_fit <- function(dataset, xtr, ytr, xte, yte, gamma, cost, reps, peers_reps = reps,
                        kernlab = FALSE) {
  params <- sprintf("gamma=%g cost=%g", gamma, cost)
  ours <- timed(function() kernel_svm(xtr, ytr, gamma = gamma, cost = cost), reps)
  p <- predict(ours$value, xte)
  record(dataset, "kernlearn::kernel_svm (2 threads)", params, ours, mean(p != yte),
         ours$value$tot.nSV)
  ours1 <- timed(function() kernel_svm(xtr, ytr, gamma = gamma, cost = cost, threads = 1),
                 min(reps, 2L))
  record(dataset, "kernlearn::kernel_svm (1 thread)", params, ours1,
         mean(predict(ours1$value, xte) != yte), ours1$value$tot.nSV)
  xs <- scale_by(xtr, xtr)
  xts <- scale_by(xte, xtr)
  e <- timed(function() svm(xs, ytr, kernel = "radial", gamma = gamma, cost = cost,
                            scale = FALSE), peers_reps)
  pe <- predict(e$value, xts)
  record(dataset, "e1071::svm (cachesize 40)", params, e, mean(pe != yte), e$value$tot.nSV)
  cat(sprintf("  ratio kernel_svm / e1071 fit time: %.3f; predictions agree on %.2f%%\n",
              ours$median / e$median, 100 * mean(pe == p)))
  rows[[length(rows)]]$note <<- sprintf("ratio kernlearn/e1071 = %.3f", ours$median / e$median)
  save_rows()
  if (kernlab && requireNamespace("kernlab", quietly = TRUE)) {
    k <- timed(function() kernlab::ksvm(xs, ytr, kernel = "rbfdot",
                                        kpar = list(sigma = gamma), C = cost, scaled = FALSE),
               1L)
    record(dataset, "kernlab::ksvm", params, k, mean(kernlab::predict(k$value, xts) != yte),
           k$value@nSV)
  }
  invisible(ours$value)
}

if (section == "letter") {
  d <- kl_dataset("letter", dir = dir)
  tr <- 1:16000
  te <- 16001:20000
  compare_fit("letter", d$x[tr, ], d$y[tr], d$x[te, ], d$y[te], gamma = 16, cost = 16,
              reps = reps, kernlab = TRUE)
}

if (section == "small") {
  d <- kl_dataset("ccpp", dir = dir)
  tr <- 1:400
  te <- 401:2400
  mu <- mean(d$y[tr])
  sdv <- stats::sd(d$y[tr])
  ztr <- (d$y[tr] - mu) / sdv
  zte <- (d$y[te] - mu) / sdv
  xs <- scale_by(d$x[tr, ], d$x[tr, ])
  xts <- scale_by(d$x[te, ], d$x[tr, ])
  for (cost in c(2^5, 2^9)) {
    params <- sprintf("gamma=10 cost=%g", cost)
    ours <- timed(function() kernel_svm(d$x[tr, ], d$y[tr], gamma = 10, cost = cost), reps)
    record("ccpp400", "kernlearn::kernel_svm (2 threads)", params, ours,
           mean(((predict(ours$value, d$x[te, ]) - mu) / sdv - zte)^2), ours$value$tot.nSV)
    e <- timed(function() svm(xs, ztr, kernel = "radial", gamma = 10, cost = cost,
                              scale = FALSE, type = "eps-regression"), reps)
    record("ccpp400", "e1071::svm (cachesize 40)", params, e,
           mean((predict(e$value, xts) - zte)^2), e$value$tot.nSV)
    cat(sprintf("  ratio kernel_svm / e1071 fit time: %.3f\n", ours$median / e$median))
    rows[[length(rows)]]$note <- sprintf("ratio kernlearn/e1071 = %.3f", ours$median / e$median)
    save_rows()
  }
}

# gamma and cost by 5-fold kl_tune on `tune_rows`, then kernel_svm and e1071 with them.
tuned_compare <- function(dataset, d, tr, te, tune_rows, grid) {
  t <- system.time(tn <- kl_tune(kernel_svm, d$x[tune_rows, ], d$y[tune_rows], grid = grid,
                                 folds = 5, seed = 1, refit = FALSE))[["elapsed"]]
  cat(sprintf("  kl_tune over %d grid points, 5 folds, %d rows: %.1f s; best %s, CV error %.4f\n",
              nrow(tn$results), length(tune_rows), t,
              paste(names(tn$best), unlist(tn$best), sep = "=", collapse = " "),
              tn$results$mean[tn$best_index]))
  print(tn$results[order(tn$results$mean)[1:5], ], row.names = FALSE)
  compare_fit(dataset, d$x[tr, ], d$y[tr], d$x[te, ], d$y[te], gamma = tn$best$gamma,
              cost = tn$best$cost, reps = reps, peers_reps = 1L)
}

if (section == "covtype") {
  d <- kl_dataset("covtype20k", dir = dir)
  tuned_compare("covtype20k", d, 1:15000, 15001:20000, 1:15000,
                list(cost = 2^c(2, 4, 6, 8, 10), gamma = 2^c(-1, 0, 1, 2, 3)))
}

if (section == "codrna") {
  d <- kl_dataset("cod-rna", dir = dir)
  set.seed(1)
  sub <- sample(d$train, 10000)
  tuned_compare("cod-rna", d, d$train, setdiff(seq_len(nrow(d$x)), d$train), sub,
                list(cost = 2^c(-2, 0, 2, 4, 6), gamma = 2^c(-2, 0, 2, 4, 6)))
}

if (section == "grid") {
  d <- kl_dataset("letter", dir = dir)
  set.seed(1)
  idx <- sample(16000, 5000)
  x <- scale_by(d$x[idx, ], d$x[idx, ])
  y <- d$y[idx]
  costs <- 2^c(0, 2, 4, 6, 8)
  gammas <- 2^c(-1, 1, 2, 3, 4)
  # kl_tune: the folds are its own (stratified); each package draws folds its own way.
  t1 <- system.time(tn <- kl_tune(kernel_svm, x, y, folds = 5, seed = 1, refit = TRUE,
                                  grid = list(cost = costs, gamma = gammas)))[["elapsed"]]
  b1 <- tn$results[tn$best_index, ]
  record("letter5000", "kl_tune(kernel_svm) 5x5 grid, 5-fold", sprintf("best gamma=%g cost=%g",
         b1$gamma, b1$cost), list(median = t1, times = t1), b1$mean, NA)
  set.seed(1)
  t2 <- system.time(et <- e1071::tune(svm, train.x = x, train.y = y,
                                      ranges = list(cost = costs, gamma = gammas),
                                      tunecontrol = e1071::tune.control(cross = 5),
                                      scale = FALSE))[["elapsed"]]
  record("letter5000", "e1071::tune(svm) 5x5 grid, 5-fold",
         sprintf("best gamma=%g cost=%g", et$best.parameters$gamma, et$best.parameters$cost),
         list(median = t2, times = t2), et$best.performance, NA,
         sprintf("ratio kl_tune/e1071 = %.3f", t1 / t2))
  if (requireNamespace("caret", quietly = TRUE) && requireNamespace("kernlab", quietly = TRUE)) {
    set.seed(1)
    # caret's svmRadial is kernlab::ksvm with sigma = gamma.
    t3 <- system.time(ct <- caret::train(x, y, method = "svmRadial", scaled = FALSE,
                                         tuneGrid = expand.grid(sigma = gammas, C = costs),
                                         trControl = caret::trainControl(method = "cv",
                                                                         number = 5)))[["elapsed"]]
    bc <- ct$bestTune
    acc <- ct$results$Accuracy[ct$results$sigma == bc$sigma & ct$results$C == bc$C]
    record("letter5000", "caret::train(svmRadial) 5x5, 5-fold",
           sprintf("best gamma=%g cost=%g", bc$sigma, bc$C), list(median = t3, times = t3),
           1 - acc, NA, sprintf("ratio kl_tune/caret = %.3f", t1 / t3))
  }
}

save_rows()
cat("saved", results_file, "\n")
