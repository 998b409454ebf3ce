# One and two threads on an idle machine and on a machine shared with busy processes, with
# OpenMP's default waiting policy and with OMP_WAIT_POLICY=passive.
#
# Usage: Rscript bench/threads.R [reps] [busy] [label]
#   reps  runs per measurement, the median is kept (default 3)
#   busy  the busy processes started for the shared case (default 2: as many as this
#         machine's cores, so that a fit's threads compete with them)
#   label a note on the code measured, kept in the results' column `code` (default: the
#         package version); run it with R_LIBS pointing at another installation to compare
#
# Each configuration (waiting policy x busy processes) runs in a fresh Rscript, since OpenMP
# reads OMP_WAIT_POLICY when R starts. The busy processes are R loops forked with the parallel
# package and stopped after each configuration. Measured, 1 and 2 threads each:
#   hgk        hgk(x, y, depth = 2, nodes = 8, baseline = FALSE, final = "average", folds = 2)
#              on n rows of a synthetic regression with 8 inputs: two learning runs on n / 2
#              rows (D1 = n / 5 rows), for n in 400, 1000, 2000, 4000, 6000
#   ridge      kernel_ridge() with a Gaussian kernel on 2000 rows (one Cholesky)
#   tune_svm   kl_tune(kernel_svm) over a 3 x 3 grid, 3 folds, 2000 rows, two classes
# Results: bench/results/threads.csv (rows of earlier runs are kept).
args <- commandArgs(TRUE)
if (length(args) && args[1] == "--child") {
  suppressPackageStartupMessages(library(kernlearn))
  options(kernlearn.backend = "cpu")
  reps <- as.integer(args[2])
  med <- function(f) median(replicate(reps, system.time(f())[["elapsed"]]))
  out <- NULL
  add <- function(op, n, th, s) out <<- rbind(out, data.frame(op = op, n = n, threads = th, seconds = s))
  for (n in c(400, 1000, 2000, 4000, 6000)) {
    set.seed(1)
    x <- matrix(runif(n * 8), n)
    y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1)
    for (th in 1:2)
      add("hgk", n, th, med(function() {
        set.seed(5)
        hgk(x, y, depth = 2, nodes = 8, baseline = FALSE, final = "average", folds = 2, threads = th)
      }))
  }
  set.seed(2)
  n <- 2000
  x <- matrix(runif(n * 8), n)
  yr <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1)
  yc <- factor(ifelse(yr + rnorm(n, sd = 0.3) > 1, "a", "b"))
  for (th in 1:2) {
    add("ridge", n, th, med(function()
      kernel_ridge(x, yr, kernel = gaussian_kernel(gamma = 1), lambda = 1e-3, threads = th)))
    add("tune_svm", n, th, med(function() {
      set.seed(3)
      kl_tune(kernel_svm, x, yc, grid = list(gamma = c(0.5, 1, 2), cost = c(1, 10, 100)),
              folds = 3, threads = th)
    }))
  }
  utils::write.csv(out, args[3], row.names = FALSE)
  quit(save = "no")
}

reps <- if (length(args) >= 1L) as.integer(args[1]) else 3L
busy <- if (length(args) >= 2L) as.integer(args[2]) else 2L
label <- if (length(args) >= 3L) args[3] else
  paste("kernlearn", utils::packageVersion("kernlearn"))
self <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])
rows <- NULL
for (load in c(0L, busy)) for (policy in c("default", "passive")) {
  jobs <- lapply(seq_len(load), function(i) parallel::mcparallel({ repeat NULL }))
  Sys.sleep(if (load) 1 else 0)
  tmp <- tempfile(fileext = ".csv")
  env <- if (policy == "passive") "OMP_WAIT_POLICY=passive" else character()
  status <- system2(file.path(R.home("bin"), "Rscript"), c(shQuote(self), "--child", reps, tmp),
                    env = env)
  for (j in jobs) tools::pskill(j$pid)
  parallel::mccollect(jobs, wait = FALSE)
  if (status != 0 || !file.exists(tmp)) stop("the measuring process failed")
  r <- utils::read.csv(tmp)
  r$policy <- policy
  r$busy <- load
  rows <- rbind(rows, r)
  cat(sprintf("busy %d, policy %s:\n", load, policy))
  print(stats::reshape(r[, c("op", "n", "threads", "seconds")], idvar = c("op", "n"),
                       timevar = "threads", direction = "wide"), row.names = FALSE)
}
rows$date <- format(Sys.time(), "%Y-%m-%d %H:%M")
rows$code <- label
rows$reps <- reps
rows$cores <- parallel::detectCores()
out <- file.path(dirname(self), "results", "threads.csv")
if (file.exists(out)) rows <- rbind(utils::read.csv(out), rows)
utils::write.csv(rows, out, row.names = FALSE)
cat("saved", out, "\n")
