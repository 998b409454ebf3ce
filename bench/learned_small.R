# The learned kernels on a few dozen rows. tkl() with its defaults (the learned kernel compared
# with the tuned Gaussian in 5-fold cross-validation, from 20 rows) against the learned kernel
# alone (baseline = FALSE, what tkl() ran below 50 rows before); hgk() with its defaults (the
# defaults adapted to the rows, the tuned Gaussian compared) against hgk(baseline = FALSE); both
# against the Gaussian SVM tuned as a user would (kl_tune(kernel_svm) over 6 widths x 7 costs,
# 5-fold CV, as in bench/learned_vs_gaussian.R). The same tuning of the Gaussian on a second
# draw of the folds (gauss_refold) shows how far two tunings of the one kernel fall apart, and
# whether the criterion (within one standard error of the Gaussian over the draws) holds
# between them (refold_within_1se).
#
# Usage: Rscript bench/learned_small.R [rows] [draws] [sets] [methods]
#   rows    training rows per draw (default 40)
#   draws   random training sets per data set (default 10); the test rows are 300 others (or
#           all the others where fewer)
#   sets    comma list among boston, friedman1 (800 rows, sd 1), pima, sonar, ionosphere,
#           twonorm (800 rows, 20 inputs), circle (800 rows, 2 inputs) (mlbench), and concrete,
#           auto_mpg, energy (heating load), yacht, wdbc read by kl_dataset() from the data
#           directory (KERNLEARN_DATA_DIR) (default all)
#   methods comma list among tkl, hgk (default tkl); hgk() needs about 30 rows with its
#           defaults (its three parts of each learning run in 5-fold CV)
# For tkl a numeric response is standardised on the training rows (tkl's epsilon and cost are
# the authors' settings on that scale) and the errors taken back to its scale. Per method and
# set: the mean test error of each variant over the draws, the Gaussian's standard error, how
# often the comparison chose the Gaussian, and whether each variant is within one standard
# error of the Gaussian. 1 thread. Results: bench/results/learned_small.csv (rows of earlier
# runs at other sizes, of other sets or methods are kept).
suppressPackageStartupMessages({
  library(kernlearn)
  library(mlbench)
})
args <- commandArgs(TRUE)
rows <- if (length(args) >= 1L) as.integer(args[1L]) else 40L
draws <- if (length(args) >= 2L) as.integer(args[2L]) else 10L
all_sets <- c("boston", "friedman1", "concrete", "auto_mpg", "energy", "yacht", "pima", "sonar",
              "ionosphere", "twonorm", "circle", "wdbc")
sets <- if (length(args) >= 3L) strsplit(args[3L], ",")[[1L]] else all_sets
methods <- if (length(args) >= 4L) strsplit(args[4L], ",")[[1L]] else "tkl"
stopifnot(all(sets %in% all_sets), all(methods %in% c("tkl", "hgk")), rows >= 10L, draws >= 2L)
options(kernlearn.threads = 1L, kernlearn.backend = "cpu")
out <- file.path("bench", "results", "learned_small.csv")

load_set <- function(name) {
  e <- new.env()
  d <- switch(name,
    boston = { utils::data("BostonHousing", envir = e); d <- e$BostonHousing
               d$chas <- as.numeric(as.character(d$chas)); names(d)[names(d) == "medv"] <- "y"; d },
    friedman1 = { set.seed(101); s <- mlbench.friedman1(800, sd = 1); data.frame(s$x, y = s$y) },
    pima = { utils::data("PimaIndiansDiabetes", envir = e); d <- e$PimaIndiansDiabetes
             names(d)[names(d) == "diabetes"] <- "y"; d },
    sonar = { utils::data("Sonar", envir = e); d <- e$Sonar; names(d)[names(d) == "Class"] <- "y"; d },
    ionosphere = { utils::data("Ionosphere", envir = e); d <- e$Ionosphere
                   d$V2 <- NULL  # constant
                   d$V1 <- as.numeric(as.character(d$V1)); names(d)[names(d) == "Class"] <- "y"; d },
    twonorm = { set.seed(109); s <- mlbench.twonorm(800, d = 20); data.frame(s$x, y = s$classes) },
    circle = { set.seed(111); s <- mlbench.circle(800, d = 2); data.frame(s$x, y = s$classes) },
    { k <- kl_dataset(name, quiet = TRUE); data.frame(k$x, y = k$y) })
  d[stats::complete.cases(d), ]
}

res <- list()
for (method in methods) for (name in sets) {
  d <- load_set(name)
  n <- nrow(d)
  p <- ncol(d) - 1L
  cls <- is.factor(d$y)
  r <- NULL
  for (s in seq_len(draws)) {
    set.seed(500 + s)
    tr <- sample.int(n, rows)
    te <- sample(setdiff(seq_len(n), tr), min(300L, n - rows))
    dt <- d[tr, ]
    if (cls) {
      dt$y <- droplevels(dt$y)
      if (nlevels(dt$y) < 2L) next
      mu <- 0
      s_y <- 1
    } else {
      mu <- mean(dt$y)
      s_y <- stats::sd(dt$y)
      dt$y <- (dt$y - mu) / s_y
    }
    if (method == "hgk") {  # hgk() takes the response as it is
      dt$y <- d$y[tr]
      mu <- 0
      s_y <- 1
    }
    err <- function(pred) if (cls) mean(as.character(pred) != as.character(d$y[te]))
                          else mean((mu + s_y * pred - d$y[te])^2)
    fit_learner <- function(baseline) {
      set.seed(2000 + s)
      f <- suppressWarnings(
        if (method == "hgk") hgk(y ~ ., data = dt, baseline = baseline)
        else if (cls) tkl(y ~ ., data = dt, baseline = baseline)
        else tkl(y ~ ., data = dt, scale_response = FALSE, baseline = baseline))
      list(error = err(predict(f, d[te, ])), baseline = identical(f$selection$choice, "baseline"))
    }
    t1 <- system.time(a <- fit_learner(TRUE))[["elapsed"]]
    b <- fit_learner(FALSE)
    grid <- list(gamma = 2^(-3:2) / p, cost = 2^seq(-1, 11, by = 2))
    set.seed(3000 + s)
    t2 <- system.time(g <- suppressWarnings(
      kl_tune(kernel_svm, y ~ ., data = d[tr, ], scale_response = FALSE, grid = grid,
              folds = 5)))[["elapsed"]]
    e_of <- function(g) if (cls) mean(as.character(predict(g$best_model, d[te, ])) != as.character(d$y[te]))
                        else mean((predict(g$best_model, d[te, ]) - d$y[te])^2)
    e_g <- e_of(g)
    # the same tuning on another draw of the folds: how far two tunings of one kernel are apart
    set.seed(4000 + s)
    g2 <- suppressWarnings(kl_tune(kernel_svm, y ~ ., data = d[tr, ], scale_response = FALSE,
                                   grid = grid, folds = 5))
    r <- rbind(r, data.frame(learned = a$error, chose_gauss = a$baseline, alone = b$error,
                             gauss = e_g, refold = e_of(g2), learned_s = t1, gauss_s = t2))
  }
  se <- stats::sd(r$gauss) / sqrt(nrow(r))
  key <- paste(method, name)
  res[[key]] <- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), method = method, set = name, rows = rows,
    inputs = p,
    task = if (cls) "classification" else "regression",
    metric = if (cls) "misclassification" else "MSE", draws = nrow(r),
    error = mean(r$learned), learned_alone = mean(r$alone), gauss = mean(r$gauss), gauss_se = se,
    ratio = mean(r$learned) / mean(r$gauss), alone_ratio = mean(r$alone) / mean(r$gauss),
    within_1se = mean(r$learned) <= mean(r$gauss) + se,
    alone_within_1se = mean(r$alone) <= mean(r$gauss) + se,
    gauss_chosen = sum(r$chose_gauss), gauss_refold = mean(r$refold),
    refold_within_1se = mean(r$refold) <= mean(r$gauss) + se,
    seconds = stats::median(r$learned_s),
    gauss_seconds = stats::median(r$gauss_s))
  print(res[[key]][, -1], row.names = FALSE, digits = 4)
  tab <- do.call(rbind, res)
  if (file.exists(out)) {
    old <- utils::read.csv(out, stringsAsFactors = FALSE)
    old <- old[!(paste(old$method, old$set, old$rows) %in%
                   paste(tab$method, tab$set, tab$rows)), , drop = FALSE]
    for (v in setdiff(names(tab), names(old))) old[[v]] <- rep(NA, nrow(old))
    tab <- rbind(old[, names(tab)], tab)
  }
  utils::write.csv(tab, out, row.names = FALSE)
}
