# Localized kernel machines (cells) at scale, against ranger, gem() and the global kernel
# machines, in one run.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/cells.R [parts] [threads]
#   parts    comma-separated, default all: covbin, cov7, friedman, growth, sizes, learned, tkl
#     covbin    Covertype, class 2 against the rest: a random 50000 test rows (seed 1), the
#               other 531012 train. kernel_svm(cells = TRUE) with its own per-cell selection;
#               ranger with 100 and 500 trees; gem() with its defaults (on this many rows it
#               compares one model with cells on held-out rows); the global kernel_svm()
#               on the largest of 25000, 50000, 75000, 100000 training rows that fits in 10 minutes
#               (a fit is stopped at 600 s), with the median gamma and cost the cells chose
#     cov7      full 7-class Covertype, the same split and the same methods
#     friedman  mlbench.friedman1 (sd = 1): 1,000,000 training rows, 50000 test rows.
#               kernel_ridge(cells = TRUE); ranger 100 / 500 trees; the global kernel_ridge()
#               on the largest of 10000, 20000, 30000 rows that fits in 10 minutes, with the
#               median width and penalty per row the cells chose. gem() is a classifier and
#               has no row here. ranger's forest grows linearly in its trees (about 68 MB a
#               tree here): 500 trees run only when 5 times the 100-tree fit's peak memory fits
#               in the machine's; otherwise the row says so, with the memory it would need.
#     growth    kernel_svm(cells = TRUE) on 100000, 200000 and 400000 of the covbin training
#               rows: the exponent of fit time in n at the default cell size
#     sizes     kernel_svm(cells = kl_cells(cell_size = m)) on 100000 covbin training rows for
#               m = 1000, 2000, 10000 (method "cells<m>"; growth has the default 5000)
#     learned   hgk(cells = TRUE, loss = "hinge") on covbin
#     tkl       tkl(cells = TRUE) with its defaults (in every cell the learned kernel against the
#               cell's Gaussian SVM, tuned as kernel_svm(cells = TRUE) tunes it) on all covbin
#               training rows, and kernel_svm(cells = TRUE) on them unless covbin runs too
#               (about half an hour on this machine)
#     A part may also be one fit, dataset:method (as covbin:hgk or friedman:ranger500), on all
#     of the dataset's training rows, stopped after KL_BENCH_LIMIT seconds (default 3600).
#   threads  default 2, for every method (ranger's num.threads too)
# KL_BENCH_SMOKE=1 runs every fit on 3000 rows only and saves nothing (a check of the script).
# Every fit runs in a fresh R process (this script with --worker), so that its peak memory
# (VmHWM, the resident set's high-water mark, which includes R and the data) is its own.
# Each row, as soon as measured, replaces the one of the same dataset, method and training rows
# in bench/results/cells.csv; the table is also written to inst/extdata/cells.csv for the
# "Large data" vignette.
args <- commandArgs(TRUE)
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])

peak_mb <- function() {
  s <- readLines("/proc/self/status")
  kb <- as.numeric(gsub("[^0-9]", "", grep("^VmHWM:", s, value = TRUE)))
  kb / 1024
}

# ---- data (cached per run) ------------------------------------------------------------------
data_file <- function(cache, name) file.path(cache, paste0(name, ".rds"))

prepare <- function(cache) {
  suppressPackageStartupMessages(library(kernlearn))
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
  if (!file.exists(data_file(cache, "covtype"))) {
    d <- kl_dataset("covtype", dir = dir)
    set.seed(1)
    n <- nrow(d$x)
    te <- sample(n, 50000)
    tr <- setdiff(seq_len(n), te)
    saveRDS(list(x = d$x, y = d$y, train = tr, test = te), data_file(cache, "covtype"))
  }
  if (!file.exists(data_file(cache, "friedman"))) {
    set.seed(2)
    tr <- mlbench::mlbench.friedman1(1e6, sd = 1)
    te <- mlbench::mlbench.friedman1(50000, sd = 1)
    saveRDS(list(x = rbind(tr$x, te$x), y = c(tr$y, te$y), train = seq_len(1e6),
                 test = 1e6 + seq_len(50000)), data_file(cache, "friedman"))
  }
}

load_set <- function(cache, dataset) {
  base <- if (dataset == "friedman") "friedman" else "covtype"
  d <- readRDS(data_file(cache, base))
  if (dataset == "covbin") d$y <- factor(ifelse(d$y == "2", "2", "other"))
  d
}

# ---- one fit (in a worker process) ----------------------------------------------------------
worker <- function(cache, dataset, method, n_train, threads, extra) {
  label <- method
  suppressPackageStartupMessages(library(kernlearn))
  options(kernlearn.threads = threads, kernlearn.backend = "cpu")
  d <- load_set(cache, dataset)
  set.seed(3)
  tr <- d$train
  if (n_train < length(tr)) tr <- sort(tr[sample.int(length(tr), n_train)])
  if (is.null(colnames(d$x))) colnames(d$x) <- paste0("x", seq_len(ncol(d$x)))  # for ranger
  x <- d$x[tr, , drop = FALSE]
  y <- d$y[tr]
  xt <- d$x[d$test, , drop = FALSE]
  yt <- d$y[d$test]
  params <- ""
  note <- ""
  gc(FALSE)
  t0 <- proc.time()[["elapsed"]]
  if (grepl("^cells[0-9]+$", method)) {
    m <- as.integer(sub("^cells", "", method))
    method <- "cells"
    extra$cells <- kl_cells(cell_size = m)
  }
  cells <- if (is.null(extra$cells)) TRUE else extra$cells
  warns <- character()
  fit <- withCallingHandlers(switch(method,
    cells = if (is.factor(y)) kernel_svm(x, y, cells = cells, fitted = FALSE)
            else kernel_ridge(x, y, cells = cells),
    ranger100 = ranger::ranger(x = x, y = y, num.trees = 100, num.threads = threads, seed = 1),
    ranger500 = ranger::ranger(x = x, y = y, num.trees = 500, num.threads = threads, seed = 1),
    gem = gem(x, y),
    global = if (is.factor(y)) kernel_svm(x, y, gamma = extra$gamma, cost = extra$cost,
                                          fitted = FALSE)
             else kernel_ridge(x, y, kernel = gaussian_kernel(extra$gamma),
                               lambda = extra$lambda * nrow(x)),
    hgk = hgk(x, y, loss = "hinge", cells = TRUE),
    tkl = tkl(x, y, cells = TRUE, fitted = FALSE),
    stop("unknown method ", method)),
    warning = function(w) {
      warns <<- c(warns, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  fit_s <- proc.time()[["elapsed"]] - t0
  if (length(warns)) note <- paste("warning:", paste(unique(warns), collapse = " | "))
  t0 <- proc.time()[["elapsed"]]
  pred <- if (inherits(fit, "ranger")) predict(fit, xt, num.threads = threads)$predictions else
    predict(fit, xt)
  pred_s <- proc.time()[["elapsed"]] - t0
  err <- if (is.factor(yt)) mean(pred != yt) else mean((pred - yt)^2)
  if (inherits(fit, "kl_localized")) {
    tab <- summary(fit)$cells
    params <- sprintf("cells=%d rows=%d-%d median gamma=%.4g %s=%.4g", nrow(tab), min(tab$rows),
                      max(tab$rows), stats::median(tab$gamma, na.rm = TRUE),
                      if (fit$machine == "ridge") "lambda/row" else "cost",
                      stats::median(if (fit$machine == "ridge") tab$cost / tab$train_rows
                                    else tab$cost, na.rm = TRUE))
    # tkl: the cells whose learned kernel validated better than their tuned Gaussian SVM
    # (the width and cost above are those of the Gaussian cells)
    if (identical(fit$learner, "tkl"))
      params <- paste0(params, sprintf(" learned kernel in %d of %d cells",
                                       sum(vapply(fit$cells, function(c)
                                         identical(c$choice, "learned"), NA)),
                                       length(fit$cells)))
  } else if (method == "gem") {
    sel <- fit$selection
    params <- paste0(if (inherits(fit, "gem_cells"))
                       sprintf("cells=%d (cell_size %d)", length(fit$cells), fit$settings$cell_size)
                     else sprintf("one model, %d features", fit$members[[1L]]$p),
                     if (!is.null(sel))
                       sprintf("; chosen on %d held-out rows: one model %.4f, cells %.4f",
                               sel$validation_rows, sel$global_error, sel$cells_error) else "")
  } else if (method == "global") {
    params <- if (is.factor(y)) sprintf("gamma=%.4g cost=%.4g", extra$gamma, extra$cost)
              else sprintf("gamma=%.4g lambda=%.4g", extra$gamma, extra$lambda * nrow(x))
  }
  data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = dataset, method = label,
             n_train = nrow(x), n_test = nrow(xt), threads = threads,
             fit_s = round(fit_s, 1), predict_s = round(pred_s, 1),
             metric = if (is.factor(yt)) "test error" else "test MSE",
             value = signif(err, 4), peak_mb = round(peak_mb()), params = params, note = note,
             stringsAsFactors = FALSE)
}

if (length(args) && args[1L] == "--worker") {
  extra <- if (nzchar(args[7L])) eval(parse(text = args[7L])) else list()
  res <- worker(args[2L], args[3L], args[4L], as.numeric(args[5L]), as.integer(args[6L]), extra)
  saveRDS(res, args[8L])
  quit(save = "no")
}

# ---- the run --------------------------------------------------------------------------------
parts <- c("covbin", "cov7", "friedman", "growth", "sizes", "learned", "tkl")
if (length(args) >= 1L) parts <- strsplit(args[1L], ",")[[1L]]
threads <- if (length(args) >= 2L) as.integer(args[2L]) else 2L
cache <- file.path(tempdir(), "kl-cells-bench")
dir.create(cache, showWarnings = FALSE)
prepare(cache)
rows <- list()

smoke <- nzchar(Sys.getenv("KL_BENCH_SMOKE"))
# Each result is saved as soon as it is measured: it replaces the row of the same dataset,
# method and rows in bench/results/cells.csv, and the table is copied to inst/extdata.
save_row <- function(r) {
  r$machine <- paste(Sys.info()[["machine"]], sub("^.*: ", "", grep("model name",
                     readLines("/proc/cpuinfo"), value = TRUE)[1L]))
  out_file <- file.path("bench", "results", "cells.csv")
  old <- if (file.exists(out_file)) utils::read.csv(out_file, stringsAsFactors = FALSE)
  new <- r
  if (!is.null(old)) {
    key <- function(d) paste(d$dataset, d$method, d$n_train)
    old <- old[!(key(old) %in% key(new)), , drop = FALSE]
    new <- rbind(old[, names(new)], new)
  }
  utils::write.csv(new, out_file, row.names = FALSE)
  if (dir.exists(file.path("inst", "extdata")))
    utils::write.csv(new, file.path("inst", "extdata", "cells.csv"), row.names = FALSE)
}

run <- function(dataset, method, n_train = Inf, extra = list(), limit = 3600) {
  if (smoke) n_train <- min(n_train, 3000)
  out <- tempfile(fileext = ".rds")
  ex <- paste(deparse(extra), collapse = " ")
  cmd <- c(as.character(limit), file.path(R.home("bin"), "Rscript"), script, "--worker", cache,
           dataset, method, format(n_train, scientific = FALSE), threads, shQuote(ex), out)
  cat(sprintf("[%s] %s %s %s ... ", format(Sys.time(), "%H:%M:%S"), dataset, method,
              if (is.finite(n_train)) format(n_train, big.mark = ",") else "all rows"))
  status <- system2("timeout", cmd)
  if (status != 0L || !file.exists(out)) {
    cat(sprintf("stopped (%s)\n", if (status == 124L) sprintf("over %d s", limit)
                else sprintf("status %d", status)))
    return(NULL)
  }
  r <- readRDS(out)
  cat(sprintf("%s %.4g, fit %.1f s, peak %d MB\n", r$metric, r$value, r$fit_s, r$peak_mb))
  rows[[length(rows) + 1L]] <<- r
  if (!smoke) save_row(r)
  r
}

# The global machine on the largest subsample that fits in 10 minutes: sizes in order, the next
# one tried only when the last fit's time, grown at the exponent of the last two fits (at least
# 2), stays within the limit.
largest_global <- function(dataset, sizes, extra) {
  fits <- list()
  for (n in sizes) {
    k <- length(fits)
    if (k) {
      last <- fits[[k]]
      p <- if (k >= 2L) log(last$fit_s / fits[[k - 1L]]$fit_s) /
                          log(last$n_train / fits[[k - 1L]]$n_train) else 2
      if (!is.finite(p) || p < 2) p <- 2
      if (last$fit_s * (n / last$n_train)^p > 600) break
    }
    r <- run(dataset, "global", n, extra, limit = 600)
    if (is.null(r)) break
    fits[[k + 1L]] <- r
  }
}

median_of <- function(r, key) {
  v <- sub(sprintf(".*%s=([0-9.eE+-]+).*", key), "\\1", r$params)
  as.numeric(v)
}

for (ds in intersect(c("covbin", "cov7"), parts)) {
  cells <- run(ds, "cells")
  run(ds, "ranger100")
  run(ds, "ranger500")
  run(ds, "gem")
  if (!is.null(cells))
    largest_global(ds, c(25000, 50000, 75000, 100000),
                   list(gamma = median_of(cells, "gamma"), cost = median_of(cells, "cost")))
}
if ("friedman" %in% parts) {
  cells <- run("friedman", "cells")
  r100 <- run("friedman", "ranger100")
  if (!is.null(cells))
    largest_global("friedman", c(10000, 20000, 30000),
                   list(gamma = median_of(cells, "gamma"), lambda = median_of(cells, "lambda/row")))
  # the forest's memory grows linearly in the trees: run 500 only where 5 times the 100-tree
  # fit's peak fits in this machine's memory
  mem_mb <- as.numeric(gsub("[^0-9]", "", grep("^MemTotal:", readLines("/proc/meminfo"),
                                               value = TRUE))) / 1024
  need_mb <- if (is.null(r100)) NA else 5 * r100$peak_mb
  if (smoke || (!is.na(need_mb) && need_mb < 0.9 * mem_mb)) {
    run("friedman", "ranger500")
  } else if (!is.na(need_mb)) {
    cat(sprintf("friedman ranger500 not run: it needs about %.0f MB, this machine has %.0f MB\n",
                need_mb, mem_mb))
    save_row(data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = "friedman",
                        method = "ranger500", n_train = r100$n_train, n_test = r100$n_test,
                        threads = threads, fit_s = NA, predict_s = NA, metric = "test MSE",
                        value = NA, peak_mb = NA, params = "",
                        note = sprintf("not run: needs about %.0f MB (5 x the 100-tree peak), the machine has %.0f MB",
                                       need_mb, mem_mb), stringsAsFactors = FALSE))
  }
}
if ("growth" %in% parts) {
  g <- lapply(c(1e5, 2e5, 4e5), function(n) run("covbin", "cells", n))
  if (!any(vapply(g, is.null, NA))) {
    t <- vapply(g, function(r) r$fit_s, 1)
    cat(sprintf("fit time exponent in n (100k to 400k rows): %.3f (100k to 200k %.3f, 200k to 400k %.3f)\n",
                log(t[3] / t[1]) / log(4), log(t[2] / t[1]) / log(2), log(t[3] / t[2]) / log(2)))
  }
}
if ("sizes" %in% parts)
  for (m in c(1000, 2000, 10000)) run("covbin", paste0("cells", m), 1e5)
if ("learned" %in% parts) run("covbin", "hgk")
if ("tkl" %in% parts) {
  # against kernel_svm(cells = TRUE) on the same rows in the same run (the covbin part's fit)
  if (!"covbin" %in% parts) run("covbin", "cells")
  run("covbin", "tkl", limit = 7200)
}
for (p in grep(":", parts, value = TRUE, fixed = TRUE)) {
  dm <- strsplit(p, ":", fixed = TRUE)[[1L]]
  run(dm[1L], dm[2L], limit = as.numeric(Sys.getenv("KL_BENCH_LIMIT", "3600")))
}

if (length(rows) && !smoke) {
  new <- do.call(rbind, rows)
  print(new[, c("dataset", "method", "n_train", "fit_s", "metric", "value", "peak_mb")],
        row.names = FALSE)
}
