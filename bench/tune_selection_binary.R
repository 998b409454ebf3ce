# How hgk() picks its tuned Gaussian C-SVM's width and cost for two classes: the clipped
# squared error of the decision values averaged over two draws of folds (hgk()'s rule) against
# the misclassification rate (kl_tune()'s default) and other numbers of draws, compared by the
# test misclassification of the point each rule picks; and a third criterion, the clipped
# squared error at the best scale of each fold's decision values.
#
# Usage:
#   Rscript bench/tune_selection_binary.R collect SETS SPLITS DIR
#   Rscript bench/tune_selection_binary.R summary DIR[,DIR...]
# SETS: comma list of two-class kl_dataset() names (bupa, breast_cancer, wdbc, heart, pima,
# sonar, ionosphere, magic, higgs, cod-rna; read from the data directory, KERNLEARN_DATA_DIR or
# options(kernlearn.data_dir = )), sets with more than 1000 rows subsampled to 1000 (seed 99),
# or simulated ones, 700 rows each (mlbench, seed 4242): threenorm (10 inputs), twonorm (20),
# ringnorm (10), circle (2 inputs, 20% of the labels flipped), spirals (sd 0.15) and xor (4
# uniform inputs, the class the xor of the first two halves, 15% flipped). collect writes one
# file per set and
# split into DIR (skipping those there): a random 70 / 30 split (seed 1000 + split), inputs
# scaled to [0, 1] by the training range, hgk()'s grid (10 widths x 10 costs for fold fits of
# m rows), 4 independent draws of 5 folds, each scored by the misclassification rate, by the
# clipped squared error of the decision values (hgk()'s two-class metric) and by that error at
# the positive scale of a fold's decisions that makes it smallest (2^-6 to 2^6 in steps of
# 2^(1/4); a C-SVM's decision values have no scale of their own); then every grid
# point refitted on all training rows (cost rescaled to them) and scored by its test
# misclassification. summary evaluates the rules on DIR's files:
#   miss1 / miss2 / miss4  misclassification of 1 draw (kl_tune()'s choice; the mean over the
#                          4 draws), of 2 draws (draws 1-2 and 3-4) and of all 4
#   ls1 / ls2 / ls4        the clipped squared error of 1, 2 (hgk()'s rule) or 4 draws
#   sls1 / sls2 / sls4     the clipped squared error at the best scale, 1, 2 or 4 draws
#   hyb2                   hgk()'s rule: ls2, but where the smallest clipped squared error is
#                          above hgk()'s bound for noisy classes (0.75), miss2 with ties broken
#                          by ls2
# and writes bench/results/tune_selection_binary.csv (test misclassification per set, split
# and rule), printing the means per set, the mean ratio to ls2 and the overall means.
suppressPackageStartupMessages(library(kernlearn))
args <- commandArgs(TRUE)
mode <- args[1]
geo <- function(a, b, k) exp(seq(log(a), log(b), length.out = k))
if (identical(mode, "collect")) {
  sets <- strsplit(args[2], ",")[[1]]
  splits <- as.integer(strsplit(args[3], ",")[[1]])
  dir <- args[4]
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  options(kernlearn.threads = 1)
  R <- 4L
  simulated <- c("threenorm", "twonorm", "ringnorm", "circle", "spirals", "xor")
  flip <- function(cl, p) {
    f <- runif(length(cl)) < p
    cl[f] <- ifelse(cl[f] == levels(cl)[1L], levels(cl)[2L], levels(cl)[1L])
    cl
  }
  for (nm in sets) {
    if (nm %in% simulated) {
      suppressPackageStartupMessages(library(mlbench))
      set.seed(4242)
      k <- switch(nm,
        threenorm = mlbench.threenorm(700, d = 10),
        twonorm = mlbench.twonorm(700, d = 20),
        ringnorm = mlbench.ringnorm(700, d = 10),
        circle = { s0 <- mlbench.circle(700, d = 2); s0$classes <- flip(s0$classes, 0.2); s0 },
        spirals = mlbench.spirals(700, cycles = 1, sd = 0.15),
        xor = { xx <- matrix(runif(700 * 4), 700)
                cl <- factor(ifelse((xx[, 1] > 0.5) != (xx[, 2] > 0.5), 1, 2))
                list(x = xx, classes = flip(cl, 0.15)) })
      k <- list(x = k$x, y = k$classes)
    } else {
      k <- kl_dataset(nm, quiet = TRUE)
    }
    x <- as.matrix(k$x)
    y <- droplevels(as.factor(k$y))
    stopifnot(nlevels(y) == 2L)
    if (nrow(x) > 1000) {
      set.seed(99)
      i <- sample.int(nrow(x), 1000)
      x <- x[i, ]
      y <- y[i]
    }
    x <- x[, apply(x, 2, function(v) diff(range(v)) > 0), drop = FALSE]
    metric <- kernlearn:::.hgk_svm_ls_metric(levels(y))
    lv <- levels(y)
    scales <- 2^seq(-6, 6, by = 1 / 4)
    scaled <- structure(function(truth, pred) {
      t <- ifelse(truth == lv[2L], 1, -1)
      min(colMeans((pmin(pmax(outer(as.vector(pred), scales), -1), 1) - t)^2))
    }, type = "decision")
    for (s in splits) {
      f <- file.path(dir, sprintf("bin_%s_%d.rds", nm, s))
      if (file.exists(f)) next
      set.seed(1000 + s)
      n0 <- nrow(x)
      tr <- sort(sample.int(n0, round(0.7 * n0)))
      te <- setdiff(seq_len(n0), tr)
      X <- x[tr, , drop = FALSE]; Y <- y[tr]; Xt <- x[te, , drop = FALSE]; yt <- y[te]
      lo <- apply(X, 2, min); hi <- apply(X, 2, max); rg <- ifelse(hi > lo, hi - lo, 1)
      X <- sweep(sweep(X, 2, lo), 2, rg, "/"); Xt <- sweep(sweep(Xt, 2, lo), 2, rg, "/")
      n <- nrow(X); n1 <- n - ceiling(n / 5); dd <- ncol(X)
      gam <- 1 / geo(0.2 * n1^(-1 / dd), 5 * (1 + 5 / n1)^dd, 10)^2
      costs <- 1 / (2 * n1 * geo(0.001 / n1, 0.1, 10))
      cv <- NULL
      t0 <- proc.time()[[3]]
      for (r in seq_len(R)) {
        set.seed(1000 * s + r)
        tu <- suppressWarnings(kl_tune(kernel_svm, X, Y, grid = list(gamma = gam, cost = costs),
                                       folds = 5, scale = "none", refit = FALSE, extend = 0L))
        tp <- suppressWarnings(kl_tune(kernel_svm, X, Y, grid = list(gamma = gam, cost = costs),
                                       foldid = tu$foldid, scale = "none", metric = metric,
                                       refit = FALSE, extend = 0L))
        ts <- suppressWarnings(kl_tune(kernel_svm, X, Y, grid = list(gamma = gam, cost = costs),
                                       foldid = tu$foldid, scale = "none", metric = scaled,
                                       refit = FALSE, extend = 0L))
        key <- paste(tu$results$gamma, tu$results$cost)
        at <- function(res) res$mean[match(key, paste(res$gamma, res$cost))]
        cv <- rbind(cv, data.frame(draw = r, gamma = tu$results$gamma, cost = tu$results$cost,
                                   miss = tu$results$mean, ls = at(tp$results),
                                   sls = at(ts$results)))
      }
      t1 <- proc.time()[[3]]
      tst <- expand.grid(gamma = gam, cost = costs)
      tst$test_miss <- NA
      for (i in seq_len(nrow(tst))) {
        fit <- suppressWarnings(kernel_svm(X, Y, gamma = tst$gamma[i], cost = tst$cost[i] * n1 / n,
                                           scale = "none"))
        tst$test_miss[i] <- mean(predict(fit, Xt) != yt)
      }
      saveRDS(list(set = nm, split = s, n = n, ntest = length(yt), d = dd, cv = cv, test = tst), f)
      cat(sprintf("%s split %d: n %d, cv %.0f s, test %.0f s\n", nm, s, n, t1 - t0,
                  proc.time()[[3]] - t1))
    }
  }
} else if (identical(mode, "summary")) {
  fs <- unlist(lapply(strsplit(args[2], ",")[[1]], list.files, pattern = "^bin_.*rds$",
                      full.names = TRUE))
  pick <- function(cv, draws, col) {
    sub <- cv[cv$draw %in% draws, ]
    a <- aggregate(sub[, intersect(c("miss", "ls", "sls"), names(sub))],
                   by = list(gamma = sub$gamma, cost = sub$cost), FUN = mean)
    b <- if (col != "hyb") which.min(a[[col]])
         else if (min(a$ls) > kernlearn:::.hgk_noisy_ls) order(a$miss, a$ls)[1L]
         else which.min(a$ls)
    c(a$gamma[b], a$cost[b])
  }
  rules <- list(miss1 = list(draws = list(1, 2, 3, 4), col = "miss"),
                miss2 = list(draws = list(1:2, 3:4), col = "miss"),
                miss4 = list(draws = list(1:4), col = "miss"),
                ls1 = list(draws = list(1, 2, 3, 4), col = "ls"),
                ls2 = list(draws = list(1:2, 3:4), col = "ls"),
                ls4 = list(draws = list(1:4), col = "ls"),
                sls1 = list(draws = list(1, 2, 3, 4), col = "sls"),
                sls2 = list(draws = list(1:2, 3:4), col = "sls"),
                sls4 = list(draws = list(1:4), col = "sls"),
                hyb2 = list(draws = list(1:2, 3:4), col = "hyb"))
  out <- NULL
  rs <- lapply(fs, readRDS)
  # files collected before the third criterion have no sls column: its rules are left out
  has <- Reduce(intersect, lapply(rs, function(r) names(r$cv)))
  keep <- vapply(rules, function(ru) ru$col == "hyb" || ru$col %in% has, logical(1))
  if (!all(keep))
    cat("left out (a criterion missing in some files):", names(rules)[!keep], "\n")
  rules <- rules[keep]
  for (r in rs) {
    for (nm in names(rules)) {
      ru <- rules[[nm]]
      v <- sapply(ru$draws, function(dr) {
        p <- pick(r$cv, dr, ru$col)
        r$test$test_miss[abs(r$test$gamma - p[1]) < 1e-9 * p[1] &
                         abs(r$test$cost - p[2]) < 1e-9 * p[2]]
      })
      out <- rbind(out, data.frame(set = r$set, split = r$split, n_train = r$n,
                                   n_test = r$ntest, rule = nm, test_miss = mean(v),
                                   grid_best = min(r$test$test_miss)))
    }
  }
  utils::write.csv(out, file.path("bench", "results", "tune_selection_binary.csv"),
                   row.names = FALSE)
  w <- reshape(out[, c("set", "split", "rule", "test_miss")], idvar = c("set", "split"),
               timevar = "rule", direction = "wide")
  names(w) <- sub("test_miss.", "", names(w), fixed = TRUE)
  cat("test misclassification, mean over splits:\n")
  print(aggregate(. ~ set, w[, -2], mean), digits = 4)
  cat("mean ratio to ls2 over sets and splits:\n")
  print(round(colMeans(w[, -(1:2)] / w$ls2), 4))
  cat("set-splits where the rule is below / above ls2:\n")
  print(sapply(w[, -(1:2)], function(v) sprintf("%d/%d", sum(v < w$ls2 - 1e-12),
                                                sum(v > w$ls2 + 1e-12))))
  cat("overall mean:\n")
  print(round(colMeans(w[, -(1:2)]), 5))
} else {
  stop("usage: tune_selection_binary.R collect SETS SPLITS DIR | summary DIR[,DIR...]", call. = FALSE)
}
