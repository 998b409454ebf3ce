# dikl() regression on a few dozen rows: the ridge head's penalty chosen by leave-one-out (the
# default with 10 to 49 rows) against the fixed lambda = 1e-4 used below 50 rows before, and
# kernel_svm() with its defaults, on the same rows.
#
#   Rscript bench/dikl_small.R [splits]
#
# Sets: mtcars (24 training rows), mlbench's BostonHousing (40) and Friedman #1 with sd 1
# (30 of 1000 rows). Training rows: a random sample (seed = split); test rows: the others (at
# most 1000). Metric: mean test squared error over `splits` splits (default 8).
# Results: bench/results/dikl_small.csv (replaced).
suppressPackageStartupMessages({library(kernlearn); library(mlbench)})
args <- commandArgs(TRUE)
splits <- if (length(args)) as.integer(args[1]) else 8L
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
data(BostonHousing)
set.seed(0)
fr <- mlbench.friedman1(1000, sd = 1)
fr <- data.frame(fr$x, y = fr$y)
sets <- list(mtcars = list(d = mtcars, f = mpg ~ ., r = 24),
             boston = list(d = BostonHousing, f = medv ~ ., r = 40),
             friedman1 = list(d = fr, f = y ~ ., r = 30))
rows <- list()
for (sn in names(sets)) {
  S <- sets[[sn]]
  d <- S$d
  resp <- all.vars(S$f)[1]
  res <- NULL
  for (sp in seq_len(splits)) {
    set.seed(sp)
    tr <- sample(nrow(d), S$r)
    te <- utils::head(setdiff(seq_len(nrow(d)), tr), 1000L)
    sc <- function(fit) mean((predict(fit, d[te, ]) - d[te, resp])^2)
    set.seed(100 + sp)
    fo <- suppressWarnings(dikl(S$f, data = d[tr, ], lambda = 1e-4))
    set.seed(100 + sp)
    fn <- suppressWarnings(dikl(S$f, data = d[tr, ]))
    fk <- suppressWarnings(kernel_svm(S$f, data = d[tr, ]))
    res <- rbind(res, c(fixed = sc(fo), default = sc(fn), kernel_svm = sc(fk)))
  }
  m <- colMeans(res)
  cat(sprintf("%-10s %3d rows  %s\n", sn, S$r,
              paste(sprintf("%s %.4g", names(m), m), collapse = ", ")))
  rows[[sn]] <- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"), dataset = sn,
                           n_train = S$r, splits = splits,
                           metric = "test MSE",
                           dikl_fixed = signif(m[["fixed"]], 4),
                           dikl_default = signif(m[["default"]], 4),
                           kernel_svm = signif(m[["kernel_svm"]], 4))
}
dir.create(file.path("bench", "results"), showWarnings = FALSE, recursive = TRUE)
utils::write.csv(do.call(rbind, rows), file.path("bench", "results", "dikl_small.csv"),
                 row.names = FALSE)
