# Two builds of kernlearn on the same fits, in one run: kernel_svm on Letter and cod-rna, gem()
# with its defaults on MNIST, hgk() with its defaults on Pima, Vehicle and CCPP. Each fit runs in a fresh R process that loads the build from its
# library; the builds alternate (A, B, A, B, ...) so that a change in the machine's load falls on
# both alike. Use it to show that a change leaves speed and results where they were.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/builds.R <libA> <libB> [reps] [sets]
#   libA, libB  R library folders, each holding an installed kernlearn
#               (R CMD INSTALL --library=<lib> <source>)
#   reps        runs per build and fit (default 3)
#   sets        comma-separated among letter, codrna, mnist, hgk_pima, hgk_vehicle, hgk_ccpp
#               (hgk() with its defaults on 70% of the set) (default: letter, codrna, mnist)
# Writes bench/results/builds.csv: per build and fit, the median and the runs' fit seconds, the
# test error, and the ratio of the medians B / A (rows of earlier runs of other sets are kept).
args <- commandArgs(TRUE)
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])

if (length(args) && args[1L] == "--worker") {
  lib <- args[2L]
  set <- args[3L]
  out <- args[4L]
  suppressPackageStartupMessages(library(kernlearn, lib.loc = lib))
  options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  if (set == "letter") {
    d <- kl_dataset("letter", dir = dir)
    tr <- 1:16000
    te <- 16001:20000
    t <- system.time(fit <- kernel_svm(d$x[tr, ], d$y[tr], gamma = 16, cost = 16))[["elapsed"]]
    err <- mean(predict(fit, d$x[te, ]) != d$y[te])
    what <- "kernel_svm gamma=16 cost=16, 16000 train / 4000 test"
  } else if (set == "codrna") {
    d <- kl_dataset("cod-rna", dir = dir)
    te <- setdiff(seq_len(nrow(d$x)), d$train)
    t <- system.time(fit <- kernel_svm(d$x[d$train, ], d$y[d$train], gamma = 4,
                                       cost = 4))[["elapsed"]]
    err <- mean(predict(fit, d$x[te, ]) != d$y[te])
    what <- "kernel_svm gamma=4 cost=4, 59535 train / 271617 test"
  } else if (set == "mnist") {
    d <- kl_dataset("mnist", dir = dir)
    x <- d$x / 255
    te <- setdiff(seq_len(nrow(x)), d$train)
    set.seed(1)
    t <- system.time(fit <- gem(x[d$train, ], d$y[d$train]))[["elapsed"]]
    err <- mean(predict(fit, x[te, ]) != d$y[te])
    what <- "gem defaults, 60000 train / 10000 test"
  } else if (set %in% c("hgk_pima", "hgk_vehicle", "hgk_ccpp")) {
    # hgk() with its defaults on 70% of a small set (ccpp: 1200 random rows), as in
    # bench/learned_vs_gaussian.R (split 1); the error on the other 30%
    e <- new.env()
    if (set == "hgk_pima") {
      utils::data("PimaIndiansDiabetes", package = "mlbench", envir = e)
      dd <- e$PimaIndiansDiabetes
      names(dd)[names(dd) == "diabetes"] <- "y"
    } else if (set == "hgk_vehicle") {
      utils::data("Vehicle", package = "mlbench", envir = e)
      dd <- e$Vehicle
      names(dd)[ncol(dd)] <- "y"
    } else {
      k <- kl_dataset("ccpp", dir = dir, quiet = TRUE)
      dd <- data.frame(k$x, y = k$y)
      set.seed(107)
      dd <- dd[sort(sample.int(nrow(dd), 1200L)), ]
    }
    n <- nrow(dd)
    set.seed(1001)
    tr <- sort(sample.int(n, round(0.7 * n)))
    te <- setdiff(seq_len(n), tr)
    set.seed(2001)
    t <- system.time(fit <- hgk(y ~ ., data = dd[tr, ]))[["elapsed"]]
    p <- predict(fit, dd[te, ])
    err <- if (is.factor(dd$y)) mean(p != dd$y[te]) else mean((p - dd$y[te])^2)
    what <- sprintf("hgk defaults, %d train / %d test (%s)", length(tr), length(te),
                    if (is.factor(dd$y)) "misclassification" else "MSE")
  } else {
    stop("unknown set ", set)
  }
  saveRDS(list(seconds = t, error = err, what = what,
               version = as.character(utils::packageVersion("kernlearn", lib.loc = lib))), out)
  quit(save = "no")
}

if (length(args) < 2L) stop("usage: Rscript bench/builds.R <libA> <libB> [reps] [sets]")
libs <- c(A = normalizePath(args[1L]), B = normalizePath(args[2L]))
reps <- if (length(args) >= 3L) as.integer(args[3L]) else 3L
sets <- if (length(args) >= 4L) strsplit(args[4L], ",")[[1L]] else c("letter", "codrna", "mnist")
rows <- list()
for (set in sets) {
  res <- list(A = list(), B = list())
  for (r in seq_len(reps)) for (b in names(libs)) {
    out <- tempfile(fileext = ".rds")
    status <- system2(file.path(R.home("bin"), "Rscript"),
                      c(script, "--worker", libs[[b]], set, out))
    if (status != 0L) stop(sprintf("the %s fit with build %s failed", set, b))
    v <- readRDS(out)
    res[[b]][[r]] <- v
    cat(sprintf("%-7s build %s run %d: %.2f s, test error %.4f\n", set, b, r, v$seconds,
                v$error))
  }
  med <- vapply(res, function(x) stats::median(vapply(x, `[[`, 1, "seconds")), 1)
  for (b in names(libs)) {
    s <- vapply(res[[b]], `[[`, 1, "seconds")
    rows[[length(rows) + 1L]] <- data.frame(
      date = format(Sys.time(), "%Y-%m-%d %H:%M"), set = set, what = res[[b]][[1L]]$what,
      build = b, library = libs[[b]], fit_median_s = round(stats::median(s), 2),
      fit_runs_s = paste(round(s, 2), collapse = " "),
      test_error = paste(unique(signif(vapply(res[[b]], `[[`, 1, "error"), 6)), collapse = " "),
      ratio_B_over_A = round(med[["B"]] / med[["A"]], 3), stringsAsFactors = FALSE)
  }
  cat(sprintf("%s: median A %.2f s, B %.2f s, ratio B / A %.3f\n", set, med[["A"]], med[["B"]],
              med[["B"]] / med[["A"]]))
}
out_file <- file.path("bench", "results", "builds.csv")
tab <- do.call(rbind, rows)
if (file.exists(out_file)) {
  # the rows of earlier runs of other sets are kept
  old <- utils::read.csv(out_file, stringsAsFactors = FALSE)
  tab <- rbind(old[!old$set %in% tab$set, , drop = FALSE], tab)
}
utils::write.csv(tab, out_file, row.names = FALSE)
