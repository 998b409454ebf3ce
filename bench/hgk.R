# hgk(): the cost of the learning objective and of whole fits, against the dense algebra it
# rests on and the Gaussian least-squares SVM baseline, in the same run.
#
# Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/hgk.R [sections] [reps] [datasets]
#   sections: a comma list of objective, fit, protocol, final, precision (default objective,fit)
#   datasets: a comma list of kl_dataset() names for the precision section (default
#             cpusmall,magic,satimage)
#   objective  n1 = n2 = 2500, d = 16 (uniform [0, 1]), depth 2 with 8 nodes over blocks of 2
#              coordinates: R's chol() (whatever BLAS R has) and one kernel block, against one
#              Cholesky of a 2500 x 2500 matrix by the core (the factorisation the bilevel
#              objective uses). The objective + gradient itself, bilevel (kernel blocks K11 and
#              K21, one Cholesky, the contraction of both blocks) and fixed-alpha (K21 and its
#              contraction), and the core's Cholesky are timed by the C++ bench program
#              (make bench-core BENCH=hgk).
#   fit        Letter, 5000 training rows (rows 1..5000 of the training part): hgk() with a given
#              architecture (depth 1; depth 2 with 8 nodes), final = "average" (5 fold models);
#              test error on rows 16001..20000.
#   protocol   Letter, 5000 training rows: the whole Table-1 protocol (hgk() defaults: depth 1 and
#              depth 2 with 4..16 nodes by 5-fold CV, the average of the fold models), and the
#              Gaussian least-squares SVM baseline: kl_tune(kernel_ridge) over the paper's
#              10 x 10 (lambda, gamma) grid with 5-fold CV, its refit, and the test errors.
#   final      final = "average" against final = "refit" with the same architecture (depth 1;
#              depth 2 with 8 nodes) on 2000 training rows of bank32nh, magic and satimage, 3
#              random splits each (4000 test rows): the paper's least-squares test error (targets
#              +-1 or scaled to [-1, 1], decisions clipped) and the seconds of each fit.
#   precision  hgk() with hgk_control(precision = "double") against "single" (the default: the
#              objective's passes over pairs in single precision) on 2000 training rows of each
#              dataset (default cpusmall, magic and satimage), 2 random splits each (4000 test
#              rows): the seconds of each fit, the largest difference of the test decisions and the
#              test error (misclassification rate for classes, else the least-squares error of
#              the clipped decisions on the [-1, 1] scale, as for `final`).
# Times are elapsed seconds, 2 threads, medians of `reps` runs (fit and protocol: one run).
# Results: bench/results/hgk.csv (rows of earlier runs of other sections are kept).
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
sections <- if (length(args) >= 1L) strsplit(args[1], ",")[[1]] else c("objective", "fit")
reps <- if (length(args) >= 2L) as.integer(args[2]) else 5L
precision_sets <- if (length(args) >= 3L) strsplit(args[3], ",")[[1]] else
  c("cpusmall", "magic", "satimage")
options(kernlearn.backend = "cpu", kernlearn.threads = 2L)
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
out_file <- file.path("bench", "results", "hgk.csv")
old <- if (file.exists(out_file)) utils::read.csv(out_file, stringsAsFactors = FALSE) else NULL
if (!is.null(old)) old <- old[!(old$section %in% sections), , drop = FALSE]
rows <- list()
timed <- function(f, n) {
  t <- numeric(n); v <- NULL
  for (i in seq_len(n)) { gc(FALSE); t[i] <- system.time(v <- f())[["elapsed"]] }
  list(value = v, times = t, median = stats::median(t))
}
record <- function(section, what, tm, ref = NA_real_, ref_name = "", extra = "") {
  rows[[length(rows) + 1L]] <<- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), section = section, what = what,
    median_s = round(tm$median, 3), runs_s = paste(round(tm$times, 3), collapse = " "),
    ratio = round(tm$median / ref, 3), ratio_to = ref_name, note = extra,
    stringsAsFactors = FALSE)
  cat(sprintf("%-9s %-58s %8.3f s (runs %s)%s  %s\n", section, what, tm$median,
              paste(round(tm$times, 2), collapse = " "),
              if (is.na(ref)) "" else sprintf("  x%.2f of %s", tm$median / ref, ref_name), extra))
  utils::write.csv(rbind(old, do.call(rbind, rows)), out_file, row.names = FALSE)
}

if ("objective" %in% sections) {
  # The core's Cholesky factorisation and the bilevel and fixed objectives + gradients are timed
  # without R by the C++ bench program (make bench-core BENCH=hgk: section "objective (core)"
  # of the same file); here R's chol() and one kernel block, against the core's Cholesky of the
  # same size when that program is built.
  set.seed(1)
  n <- 2500; d <- 16
  x1 <- matrix(runif(n * d), n, d); x2 <- matrix(runif(n * d), n, d)
  blocks <- split(sample(d), rep(1:8, each = 2))
  k <- hierarchical_gaussian_kernel(weights = lapply(blocks, function(b) runif(2, 0.5, 1.5)),
                                    nodes = unname(blocks), node_weights = rep(sqrt(1 / 8), 8))
  lambda <- 1e-4
  A <- kernel_matrix(k, x1) + diag(n * lambda, n)
  bench_core <- file.path("tests", "core", "build", "bench_core")
  ch <- if (file.exists(bench_core))
    as.numeric(system2(bench_core, c("--reps", reps, "--threads", 2L, "--cholesky-seconds", n),
                       stdout = TRUE)) else NA_real_
  rch <- timed(function() chol(A), max(1L, reps %/% 2L))
  record("objective", "R chol() 2500 x 2500", rch, ch, "core Cholesky")
  km <- timed(function() kernel_matrix(k, x1, x2), reps)
  record("objective", "one kernel block 2500 x 2500 (for reference)", km, ch, "core Cholesky")
}

letter <- function() {
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
  d <- kl_dataset("letter", dir = dir, quiet = TRUE)
  list(x = d$x[1:5000, ], y = d$y[1:5000], xt = d$x[16001:20000, ], yt = d$y[16001:20000])
}
# The paper's least-squares error: +-1 one-vs-all targets, decisions clipped to [-1, 1].
ls_error <- function(D, y) {
  Y <- matrix(-1, length(y), nlevels(y)); Y[cbind(seq_along(y), as.integer(y))] <- 1
  mean((pmin(pmax(D, -1), 1) - Y)^2)
}

if ("fit" %in% sections) {
  L <- letter()
  for (case in list(list("hgk() Letter 5000 rows, depth 1, final = refit (default)", list(depth = 1)),
                    list("hgk() Letter 5000 rows, depth 2 8 nodes, final = refit (default)", list(nodes = 8)))) {
    set.seed(1)
    tm <- timed(function() do.call(hgk, c(list(L$x, L$y), case[[2]])), 1L)
    fit <- tm$value
    record("fit", case[[1]], tm, 120, "2-minute target",
           sprintf("test error %.4f, LS error %.4f, steps %s", mean(predict(fit, L$xt) != L$yt),
                   ls_error(predict(fit, L$xt, type = "decision"), L$yt),
                   paste(vapply(fit$models, function(m) m$info$steps, 0L), collapse = "/")))
  }
}

if ("protocol" %in% sections) {
  L <- letter()
  set.seed(1)
  tm <- timed(function() hgk(L$x, L$y, final = "average"), 1L)
  fit <- tm$value
  record("protocol", "hgk() Letter 5000 rows, 8 architectures x 5 folds + average", tm, 1200,
         "20-minute target",
         sprintf("chose %s; test error %.4f, LS error %.4f", fit$architecture$label,
                 mean(predict(fit, L$xt) != L$yt),
                 ls_error(predict(fit, L$xt, type = "decision"), L$yt)))
  # The paper's baseline grid (liquidSVM): width t from 0.2 n^(-1/d) to 5 (1 + 5/n)^d for
  # exp(-||x - z||^2 / t^2), lambda from 0.001/n to 0.1 (c = n lambda); inputs in [0, 1].
  n <- nrow(L$x); dd <- ncol(L$x); n1 <- n - n %/% 5
  tt <- exp(seq(log(0.2 * n^(-1 / dd)), log(5 * (1 + 5 / n)^dd), length.out = 10))
  lam <- exp(seq(log(0.001 / n1), log(0.1), length.out = 10))
  grid <- list(kernel = lapply(1 / tt^2, gaussian_kernel), lambda = n1 * lam)
  set.seed(1)
  tb <- timed(function() kl_tune(kernel_ridge, L$x, L$y, grid = grid, folds = 5), 1L)
  best <- tb$value$best
  refit <- kernel_ridge(L$x, L$y, kernel = best$kernel, lambda = best$lambda * n / n1)
  record("protocol", "Gaussian LS-SVM baseline: kl_tune 10 x 10 grid, 5 folds", tb, tm$median,
         "hgk protocol",
         sprintf("test error %.4f, LS error %.4f", mean(predict(refit, L$xt) != L$yt),
                 ls_error(predict(refit, L$xt, type = "decision"), L$yt)))
}

# 2000 training and up to 4000 test rows of a dataset at random (seed 100 + s); targets for the
# paper's least-squares error: +-1 (one column for two classes, one-vs-all for more), or the
# response scaled to [-1, 1] with the training range.
split_rows <- function(D, s) {
  set.seed(100 + s)
  i <- sample(nrow(D$x)); tr <- i[1:2000]; te <- i[2000 + seq_len(min(4000, nrow(D$x) - 2000))]
  x <- D$x[tr, ]; xt <- D$x[te, ]
  if (is.factor(D$y)) {
    y <- droplevels(D$y[tr]); yt <- factor(D$y[te], levels = levels(y))
    keep <- !is.na(yt); xt <- xt[keep, ]; yt <- yt[keep]
    Yt <- if (nlevels(y) == 2L) matrix(ifelse(as.integer(yt) == 2L, 1, -1))
          else { Y <- matrix(-1, length(yt), nlevels(y)); Y[cbind(seq_along(yt), as.integer(yt))] <- 1; Y }
  } else {
    yr <- range(D$y[tr]); y <- 2 * (D$y[tr] - yr[1]) / diff(yr) - 1
    Yt <- matrix(2 * (D$y[te] - yr[1]) / diff(yr) - 1)
  }
  list(x = x, y = y, xt = xt, Yt = Yt, yt = if (is.factor(D$y)) yt)
}
clipped_error <- function(f, S) {
  mean((pmin(pmax(as.matrix(predict(f, S$xt, type = "decision")), -1), 1) - S$Yt)^2)
}
# misclassification rate for classes (whatever loss hgk() chose), else the clipped LS error
test_error <- function(f, S) {
  if (is.null(S$yt)) clipped_error(f, S) else mean(predict(f, S$xt) != S$yt)
}

if ("final" %in% sections) {
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
  res <- list()
  for (ds in c("bank32nh", "magic", "satimage")) {
    D <- kl_dataset(ds, dir = dir, quiet = TRUE)
    for (s in 1:3) {
      S <- split_rows(D, s)
      for (arch in list(list(depth = 1), list(nodes = 8))) for (fin in c("average", "refit")) {
        set.seed(7)
        t <- system.time(f <- do.call(hgk, c(list(S$x, S$y, final = fin), arch)))[["elapsed"]]
        e <- clipped_error(f, S)
        res[[length(res) + 1L]] <- data.frame(dataset = ds, split = s, arch = f$architecture$label,
                                              final = fin, error = e, seconds = t)
        cat(sprintf("final  %-9s split %d %-18s %-7s error %.5f  %6.1f s\n", ds, s,
                    f$architecture$label, fin, e, t))
      }
    }
  }
  r <- do.call(rbind, res)
  a <- stats::aggregate(cbind(error, seconds) ~ dataset + arch + final, r, mean)
  print(a, digits = 4)
  for (k in seq_len(nrow(a))) {
    tm <- list(median = a$seconds[k], times = r$seconds[r$dataset == a$dataset[k] &
                                                      r$arch == a$arch[k] & r$final == a$final[k]])
    ref <- a$error[a$dataset == a$dataset[k] & a$arch == a$arch[k] & a$final == "average"]
    record("final", sprintf("%s, %s, final = %s (mean of 3 splits)", a$dataset[k], a$arch[k],
                            a$final[k]), tm, extra = sprintf("test LS error %.5f (x%.3f of average)",
                                                             a$error[k], a$error[k] / ref))
  }
}

if ("precision" %in% sections) {
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
  res <- list()
  for (ds in precision_sets) {
    D <- kl_dataset(ds, dir = dir, quiet = TRUE)
    for (s in 1:2) {
      S <- split_rows(D, s)
      dec_double <- NULL
      for (prec in c("double", "single")) {
        set.seed(7)
        t <- system.time(f <- hgk(S$x, S$y, control = hgk_control(precision = prec)))[["elapsed"]]
        e <- test_error(f, S)
        # the largest difference of the test decisions (clipped to [-1, 1]) from the double fit's
        dec <- pmin(pmax(as.matrix(predict(f, S$xt, type = "decision")), -1), 1)
        if (prec == "double") dec_double <- dec
        dd <- max(abs(dec - dec_double))
        res[[length(res) + 1L]] <- data.frame(dataset = ds, split = s, precision = prec,
                                              arch = f$architecture$label, error = e, seconds = t,
                                              max_dec_diff = dd)
        cat(sprintf("precision  %-9s split %d %-6s %-18s error %.5f  %6.1f s  max |decision - double's| %.2g\n",
                    ds, s, prec, f$architecture$label, e, t, dd))
      }
    }
  }
  r <- do.call(rbind, res)
  a <- stats::aggregate(cbind(error, seconds) ~ dataset + precision, r, mean)
  print(a, digits = 4)
  for (k in seq_len(nrow(a))) {
    sel <- r$dataset == a$dataset[k] & r$precision == a$precision[k]
    dbl <- a$dataset == a$dataset[k] & a$precision == "double"
    tm <- list(median = a$seconds[k], times = r$seconds[sel])
    record("precision", sprintf("%s, hgk() defaults, precision = %s (mean of 2 splits)",
                                a$dataset[k], a$precision[k]), tm, a$seconds[dbl], "double",
           sprintf("test error %.5f (x%.3f of double); architectures %s; max |decision - double's| %s",
                   a$error[k], a$error[k] / a$error[dbl], paste(r$arch[sel], collapse = " / "),
                   paste(signif(r$max_dec_diff[sel], 2), collapse = " / ")))
  }
}
