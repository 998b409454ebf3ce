# tkl(precision = "single") against "double": the fit's peak memory, time, optimisation and test
# error on the same rows, each fit in a fresh R process (this script with --worker), so that
# its peak resident memory (VmHWM, which includes R and the data) is its own.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/tkl_precision.R [reps]
# Problems: CCPP, all 9568 rows in a random 7654 / 1914 split (regression, response
# standardised, epsilon 0.1, cost 10, delta 0.1); Covertype, class 2 against the rest, 8000
# training and 5000 test rows drawn at random (classification, cost 10, delta 0.1). Defaults
# otherwise (normalised start, ridge 0.1, tol 0.01, maxit 100), no baseline comparison, 2
# threads. reps (default 1) fits per precision, alternating.
# Results: bench/results/tkl_precision.csv.
args <- commandArgs(TRUE)
suppressPackageStartupMessages(library(kernlearn))
dir <- Sys.getenv("KERNLEARN_DATA_DIR")

load_problem <- function(name) {
  if (name == "ccpp") {
    d <- kl_dataset("ccpp", dir = dir, quiet = TRUE)
    x <- as.matrix(d$x)
    y <- d$y
    set.seed(1)
    te <- sample.int(nrow(x), 1914)
    tr <- setdiff(seq_len(nrow(x)), te)
    mu <- mean(y[tr])
    s <- stats::sd(y[tr])
    y <- (y - mu) / s
  } else {
    d <- kl_dataset("covtype", dir = dir, quiet = TRUE)
    x <- as.matrix(d$x)
    y <- factor(ifelse(as.integer(as.character(d$y)) == 2L, "pine", "other"))
    set.seed(1)
    idx <- sample.int(nrow(x), 13000)
    tr <- idx[1:8000]
    te <- idx[8001:13000]
  }
  storage.mode(x) <- "double"
  list(xtr = x[tr, , drop = FALSE], ytr = y[tr], xte = x[te, , drop = FALSE], yte = y[te])
}

peak_mb <- function() {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", grep("^VmHWM:", s, value = TRUE))) / 1024
}

if (length(args) >= 1L && args[1L] == "--worker") {
  name <- args[2L]
  precision <- args[3L]
  out <- args[4L]
  p <- load_problem(name)
  options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
  t <- system.time(f <- tkl(p$xtr, p$ytr, scale_response = FALSE, cost = 10, delta = 0.1, epsilon = 0.1,
                            baseline = FALSE, precision = precision,
                            fitted = FALSE))[["elapsed"]]
  pred <- predict(f, p$xte)
  dec <- predict(f, p$xte, type = if (is.factor(p$ytr)) "decision" else "response")
  err <- if (is.factor(p$ytr)) mean(pred != p$yte) else mean((pred - p$yte)^2)
  last <- f$trace[nrow(f$trace), ]
  saveRDS(list(row = data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), problem = name, n_train = nrow(p$xtr),
    inputs = ncol(p$xtr), precision = precision, seconds = t, peak_mb = round(peak_mb()),
    iterations = f$iterations, stop = f$stop, objective = last$objective,
    rel_gap = last$gap / abs(last$objective),
    metric = if (is.factor(p$ytr)) "misclassification" else "MSE (standardised)",
    test_error = err), dec = dec), out)
  quit(save = "no")
}

reps <- if (length(args) >= 1L) as.integer(args[1L]) else 1L
this <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
rows <- list()
decs <- list()
for (name in c("ccpp", "covtype")) for (r in seq_len(reps)) for (precision in c("double", "single")) {
  tmp <- tempfile(fileext = ".rds")
  st <- system2(file.path(R.home("bin"), "Rscript"), c(this, "--worker", name, precision, tmp))
  if (st != 0L || !file.exists(tmp)) {
    message(sprintf("%s %s: the worker failed", name, precision))
    next
  }
  res <- readRDS(tmp)
  rows[[length(rows) + 1L]] <- res$row
  decs[[paste(name, precision)]] <- res$dec
  print(res$row, row.names = FALSE)
}
out <- do.call(rbind, rows)
# how far single precision's test predictions are from double's (the last rep of each)
out$max_abs_pred_diff <- NA_real_
for (name in unique(out$problem)) {
  a <- decs[[paste(name, "double")]]
  b <- decs[[paste(name, "single")]]
  if (!is.null(a) && !is.null(b))
    out$max_abs_pred_diff[out$problem == name & out$precision == "single"] <-
      max(abs(as.matrix(a) - as.matrix(b)))
}
print(out, row.names = FALSE)
utils::write.csv(out, file.path("bench", "results", "tkl_precision.csv"), row.names = FALSE)
