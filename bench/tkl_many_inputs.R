# tkl() at hundreds of inputs: time per iteration, where the optimisation stops and the test
# error, against a tuned Gaussian SVM. At degree 1 P is (2d + 2) x (2d + 2), so the P-step's
# eigenproblems (O(d^3)) rather than the SVM solves take the time.
#
# Usage: Rscript bench/tkl_many_inputs.R [out=<csv>] [label=<text>] [reps=3]
#   label: a word kept in every row (for example the code version measured), so that runs of
#   two builds can be compared from one file each.
# Problems:
#   - dna: mlbench's DNA (180 three-level factors, 360 indicator columns through the formula),
#     700 training and 1000 test rows drawn at random (seed 1);
#   - circle_d100, circle_d200: x uniform on [0, 1]^d, the class whether
#     (x1 - 0.5)^2 + (x2 - 0.5)^2 < 0.09, 5% of the labels flipped; 400 training and 2000 test
#     rows (seed d);
#   - wide_p500: more inputs than rows, 150 training rows and 500 standard normal inputs, the
#     class the sign of x1 + x2 (plus noise of sd 0.5 in training), 1000 test rows (seed 3).
# tkl(): its defaults (degree 1, delta 0.1, cost 10, exponentiated gradient, maxit 100) with
# baseline = FALSE, `reps` times (the median time is kept; where its steps worked in the span of
# the rows' monomials, also with them on all of P, learner "tkl_all_of_P", through the internal
# option kernlearn.tkl_subspace = FALSE); then once with baseline = TRUE (the
# default; the learner column says which model it kept). The reference: kernel_svm tuned by
# kl_tune() over gamma {1/2, 1, ..., 16} / d x cost 2^(-1, 1, ..., 11), 5 folds.
# Results: bench/results/tkl_many_inputs.csv unless out= says otherwise.
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), args, value = TRUE)
  if (length(a)) sub(paste0("^", name, "="), "", a[1L]) else default
}
out <- arg("out", file.path("bench", "results", "tkl_many_inputs.csv"))
label <- arg("label", "")
reps <- as.integer(arg("reps", "3"))
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")

problems <- list()
if (requireNamespace("mlbench", quietly = TRUE)) {
  data("DNA", package = "mlbench", envir = environment())
  set.seed(1)
  i <- sample.int(nrow(DNA), 1700L)
  problems$dna <- list(train = DNA[i[1:700], ], test = DNA[i[701:1700], ])
}
for (d in c(100L, 200L)) {
  set.seed(d)
  gen <- function(n) {
    x <- matrix(runif(n * d), n, d)
    y <- ifelse((x[, 1] - 0.5)^2 + (x[, 2] - 0.5)^2 < 0.09, 1L, 2L)
    flip <- runif(n) < 0.05
    y[flip] <- 3L - y[flip]
    data.frame(Class = factor(c("in", "out")[y], levels = c("in", "out")), x)
  }
  problems[[sprintf("circle_d%d", d)]] <- list(train = gen(400L), test = gen(2000L))
}

# more inputs than rows: 150 training rows, 500 inputs (standard normal), the class the sign of
# x1 + x2 plus noise (sd 0.5) in training, without noise in the 1000 test rows (seed 3)
set.seed(3)
xw <- matrix(rnorm(1150 * 500), 1150, 500)
cw <- factor(ifelse(xw[, 1] + xw[, 2] + c(rnorm(150, sd = 0.5), rep(0, 1000)) > 0, "a", "b"))
problems$wide_p500 <- list(train = data.frame(Class = cw[1:150], xw[1:150, ]),
                           test = data.frame(Class = cw[151:1150], xw[151:1150, ]))

rows <- list()
add <- function(...) {
  rows[[length(rows) + 1L]] <<- data.frame(date = format(Sys.time(), "%Y-%m-%d %H:%M"),
                                           label = label, ...)
  r <- rows[[length(rows)]]
  cat(sprintf("%-12s %-9s %-8s inputs %3d: %-12s %3s it, rel gap %8.4g, %6.3f s/it, error %.4f, %.1f s\n",
              r$problem, r$label, r$learner, r$inputs, r$stop, r$iterations, r$rel_gap,
              r$seconds_per_iteration, r$test_error, r$seconds))
  utils::write.csv(do.call(rbind, rows), out, row.names = FALSE)
}
for (pn in names(problems)) {
  p <- problems[[pn]]
  times <- numeric(reps)
  for (r in seq_len(reps)) {
    times[r] <- system.time(f <- tkl(Class ~ ., data = p$train, baseline = FALSE,
                                     fitted = FALSE))[[3]]
  }
  last <- f$trace[nrow(f$trace), ]
  add(problem = pn, learner = "tkl", inputs = f$d, n_train = nrow(p$train),
      stop = f$stop, iterations = f$iterations, rel_gap = last$gap / abs(last$objective),
      objective = last$objective, test_error = mean(predict(f, p$test) != p$test$Class),
      seconds = stats::median(times), seconds_per_iteration = stats::median(times) / max(1, f$iterations),
      reps = reps, subspace = f$subspace)
  inputs <- f$d
  if (f$subspace > 0) {
    # the same fit with its steps on all of P, for the ratio
    options(kernlearn.tkl_subspace = FALSE)
    for (r in seq_len(reps)) {
      times[r] <- system.time(ff <- tkl(Class ~ ., data = p$train, baseline = FALSE,
                                        fitted = FALSE))[[3]]
    }
    options(kernlearn.tkl_subspace = NULL)
    last <- ff$trace[nrow(ff$trace), ]
    add(problem = pn, learner = "tkl_all_of_P", inputs = f$d, n_train = nrow(p$train),
        stop = ff$stop, iterations = ff$iterations, rel_gap = last$gap / abs(last$objective),
        objective = last$objective, test_error = mean(predict(ff, p$test) != p$test$Class),
        seconds = stats::median(times),
        seconds_per_iteration = stats::median(times) / max(1, ff$iterations), reps = reps,
        subspace = ff$subspace)
  }
  # the default fit: the learned kernel against the tuned Gaussian on rows not fitted
  t <- system.time(fb <- tkl(Class ~ ., data = p$train, fitted = FALSE))[[3]]
  last <- fb$trace[nrow(fb$trace), ]
  add(problem = pn, learner = sprintf("tkl_baseline:%s", fb$selection$choice), inputs = inputs,
      n_train = nrow(p$train), stop = fb$stop, iterations = fb$iterations,
      rel_gap = last$gap / abs(last$objective), objective = last$objective,
      test_error = mean(predict(fb, p$test) != p$test$Class), seconds = t,
      seconds_per_iteration = NA, reps = 1L, subspace = fb$subspace)
  t <- system.time(g <- kl_tune(kernel_svm, Class ~ ., data = p$train, folds = 5,
                                grid = list(gamma = c(0.5, 1, 2, 4, 8, 16) / inputs,
                                            cost = 2^seq(-1, 11, by = 2))))[[3]]
  add(problem = pn, learner = "gaussian", inputs = inputs, n_train = nrow(p$train), stop = NA,
      iterations = NA, rel_gap = NA, objective = NA,
      test_error = mean(predict(g$best_model, p$test) != p$test$Class), seconds = t,
      seconds_per_iteration = NA, reps = 1L, subspace = NA)
}
cat("saved", out, "\n")
