# Prediction time of kernel_svm against e1071::svm on Letter (16000 training rows, gamma 16,
# cost 16, the same scaled inputs), on the 4000 test rows and on the 16000 training rows (what
# fitted = TRUE costs at the end of a fit), with medians of several runs in one process.
# Usage: KERNLEARN_DATA_DIR=../shared/data Rscript bench/predict.R [reps]
# Results are appended to bench/results/predict.csv.
suppressPackageStartupMessages({
  library(kernlearn)
  library(e1071)
})
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 5L
options(kernlearn.backend = "cpu")
dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the folder holding letter/")
d <- kl_dataset("letter", dir = dir)
xtr <- d$x[d$train, ]
ytr <- d$y[d$train]
xte <- d$x[-d$train, ]
mn <- apply(xtr, 2, min)
rg <- apply(xtr, 2, max) - mn
scale_by <- function(x) sweep(sweep(x, 2, mn), 2, rg, "/")
fit <- kernel_svm(xtr, ytr, gamma = 16, cost = 16, fitted = FALSE)
e <- svm(scale_by(xtr), ytr, gamma = 16, cost = 16, scale = FALSE, fitted = FALSE)
med <- function(f) {
  t <- vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], numeric(1))
  c(median = stats::median(t), runs = paste(round(t, 3), collapse = " "))
}
rows <- list()
for (what in c("test", "train")) {
  x <- if (what == "test") xte else xtr
  xs <- scale_by(x)
  agree <- mean(predict(fit, x) == predict(e, xs))
  te <- med(function() predict(e, xs))
  for (th in c(1L, 2L)) {
    t <- med(function() predict(fit, x, threads = th))
    rows[[length(rows) + 1L]] <- data.frame(
      date = format(Sys.time(), "%Y-%m-%d %H:%M:%S"), rows = nrow(x), set = what, threads = th,
      kernlearn_s = as.numeric(t[["median"]]), kernlearn_runs = t[["runs"]],
      e1071_s = as.numeric(te[["median"]]), e1071_runs = te[["runs"]],
      ratio = as.numeric(t[["median"]]) / as.numeric(te[["median"]]),
      nsv_kernlearn = fit$tot.nSV, nsv_e1071 = e$tot.nSV, class_agreement = agree)
    r <- rows[[length(rows)]]
    cat(sprintf("%-5s %5d rows, %d thread(s): kernel_svm %.3f s, e1071 %.3f s, ratio %.3f (classes agree %.4f)\n",
                what, r$rows, th, r$kernlearn_s, r$e1071_s, r$ratio, agree))
  }
}
out <- do.call(rbind, rows)
f <- file.path("bench", "results", "predict.csv")
dir.create(dirname(f), showWarnings = FALSE, recursive = TRUE)
utils::write.table(out, f, sep = ",", row.names = FALSE, col.names = !file.exists(f),
                   append = file.exists(f))
