# How to pick a Gaussian C-SVM's width and cost from cross-validation on multiclass sets: rules
# that hgk() could use for its tuned Gaussian (and the C-SVM on a learned kernel), compared by
# the test error of the point each rule picks.
#
# Usage:
#   Rscript bench/tune_selection.R collect SETS SPLITS N_TRAIN DIR
#   Rscript bench/tune_selection.R summary DIR
# SETS: comma list of mlbench Vehicle, Vowel, Glass, DNA and kl_dataset() names (letter,
# pendigits, thyroid, shuttle, satimage, covtype20k; KERNLEARN_DATA_DIR or the data directory
# /work/shared/data). Every input column is used as a number (Vowel's speaker column too). collect writes one file per set and split into DIR (skipping those there):
# on N_TRAIN training rows (at most 60% of the set; test: up to 5000 of the rest), inputs scaled
# to [0, 1] by the training range, the paper grid of hgk() (10 widths x 10 costs for fold fits
# of m rows), 4 independent draws of 5 folds, each scored by the misclassification rate and by
# the pairwise clipped squared error (the mean over class pairs of the squared error of the
# pairwise decision value clipped to [-1, 1], on the rows of that pair); then every grid point
# refitted on all training rows (cost rescaled to them) and scored on the test rows:
# misclassification, and where its mean CV misclassification is within 1.5 x the best + 2 / n,
# the squared error of 2 p - 1 from the Platt / pairwise-coupling probabilities against +-1
# one-vs-all targets (hgk's Table 1 score for classes).
# summary evaluates the rules on DIR's files:
#   miss1  one draw's misclassification (kl_tune()'s choice), averaged over the 4 draws
#   miss2  the mean of two draws (hgk()'s rule), averaged over draws 1-2 and 3-4
#   miss4  the mean of all 4 draws
#   pls2   pairwise clipped squared error, two draws
#   sm2 / sm4 / sm1  misclassification of 2 / 4 / 1 draws, each point's value averaged with
#          its neighbours on the grid (3 x 3, fewer at the edges)
#   smc2   the same, neighbours along the cost axis only
# and writes bench/results/tune_selection.csv (test misclassification and squared error per set,
# split and rule) and prints the means per set and the mean ratio to miss2.
suppressPackageStartupMessages({library(kernlearn); library(mlbench)})
args <- commandArgs(TRUE)
mode <- args[1]
if (identical(mode, "collect")) {
  sets <- strsplit(args[2], ",")[[1]]; splits <- as.integer(strsplit(args[3], ",")[[1]])
  ntrain <- as.integer(args[4]); dir <- args[5]; R <- 4L
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  options(kernlearn.threads = 2)
  data_dir <- Sys.getenv("KERNLEARN_DATA_DIR", "/work/shared/data")
  load <- function(nm) {
    if (nm %in% c("Vehicle", "Vowel", "DNA", "Glass")) {
      e <- new.env(); data(list = nm, package = "mlbench", envir = e); D <- e[[nm]]
      yc <- if (nm == "Glass") "Type" else "Class"
      y <- D[[yc]]; X <- D[setdiff(names(D), yc)]
      X <- as.matrix(data.frame(lapply(X, function(v) as.numeric(as.character(v)))))
      return(list(x = X, y = droplevels(y)))
    }
    d <- kl_dataset(nm, dir = data_dir, quiet = TRUE)
    x <- as.matrix(d$x); storage.mode(x) <- "double"
    if (nm == "shuttle") x <- x[, -1]
    list(x = x, y = droplevels(as.factor(d$y)))
  }
  pair_ls <- structure(function(truth, pred) {
    cn <- colnames(pred); e <- numeric(length(cn))
    for (j in seq_along(cn)) {
      ab <- strsplit(cn[j], "/", fixed = TRUE)[[1]]
      r <- which(truth %in% ab); t <- ifelse(truth[r] == ab[1], 1, -1)
      e[j] <- if (length(r)) mean((pmin(pmax(pred[r, j], -1), 1) - t)^2) else NA
    }
    mean(e, na.rm = TRUE)
  }, type = "decision")
  geo <- function(a, b, k) exp(seq(log(a), log(b), length.out = k))
  for (nm in sets) {
    D <- load(nm); x <- D$x; y <- D$y
    x <- x[, apply(x, 2, function(v) diff(range(v)) > 0), drop = FALSE]
    for (s in splits) {
      f <- file.path(dir, sprintf("gen_%s_%d.rds", nm, s))
      if (file.exists(f)) next
      set.seed(500 + s); perm <- sample.int(nrow(x))
      ntr <- min(ntrain, floor(nrow(x) * 0.6))
      tr <- perm[seq_len(ntr)]; te <- perm[ntr + seq_len(min(5000, nrow(x) - ntr))]
      X <- x[tr, ]; Y <- droplevels(y[tr]); keep <- y[te] %in% levels(Y)
      Xt <- x[te[keep], ]; yt <- factor(as.character(y[te[keep]]), levels = levels(Y))
      Yt <- matrix(-1, length(yt), nlevels(Y)); Yt[cbind(seq_along(yt), as.integer(yt))] <- 1
      lo <- apply(X, 2, min); hi <- apply(X, 2, max); rg <- ifelse(hi > lo, hi - lo, 1)
      X <- sweep(sweep(X, 2, lo), 2, rg, "/"); Xt <- sweep(sweep(Xt, 2, lo), 2, rg, "/")
      n <- nrow(X); n1 <- n - ceiling(n / 5); dd <- ncol(X)
      gam <- 1 / geo(0.2 * n1^(-1 / dd), 5 * (1 + 5 / n1)^dd, 10)^2
      costs <- 1 / (2 * n1 * geo(0.001 / n1, 0.1, 10))
      cv <- NULL; t0 <- proc.time()[[3]]
      for (r in seq_len(R)) {
        set.seed(1000 * s + r)
        tu <- suppressWarnings(kl_tune(kernel_svm, X, Y, grid = list(gamma = gam, cost = costs), folds = 5, scale = "none", refit = FALSE, extend = 0L))
        tp <- suppressWarnings(kl_tune(kernel_svm, X, Y, grid = list(gamma = gam, cost = costs), foldid = tu$foldid, scale = "none", metric = pair_ls, refit = FALSE, extend = 0L))
        cv <- rbind(cv, data.frame(draw = r, gamma = tu$results$gamma, cost = tu$results$cost, miss = tu$results$mean,
                    pls = tp$results$mean[match(paste(tu$results$gamma, tu$results$cost), paste(tp$results$gamma, tp$results$cost))]))
      }
      t1 <- proc.time()[[3]]
      agg <- aggregate(miss ~ gamma + cost, cv, mean)
      tst <- expand.grid(gamma = gam, cost = costs); tst$test_miss <- NA; tst$test_ls <- NA
      for (i in seq_len(nrow(tst))) {
        m <- agg$miss[agg$gamma == tst$gamma[i] & agg$cost == tst$cost[i]]
        prob <- m <= 1.5 * min(agg$miss) + 2 / n
        set.seed(7)
        fit <- suppressWarnings(kernel_svm(X, Y, gamma = tst$gamma[i], cost = tst$cost[i] * n1 / n, scale = "none", probability = prob))
        tst$test_miss[i] <- mean(predict(fit, Xt) != yt)
        if (prob) {
          # the class by voting, as a model without probabilities predicts it
          fit0 <- suppressWarnings(kernel_svm(X, Y, gamma = tst$gamma[i], cost = tst$cost[i] * n1 / n, scale = "none"))
          tst$test_miss[i] <- mean(predict(fit0, Xt) != yt)
          P <- predict(fit, Xt, type = "prob"); Dm <- 2 * P[, levels(Y)] - 1
          tst$test_ls[i] <- mean((pmin(pmax(Dm, -1), 1) - Yt)^2)
        }
      }
      t2 <- proc.time()[[3]]
      saveRDS(list(set = nm, split = s, n = n, ntest = nrow(Xt), k = nlevels(Y), d = dd, cv = cv, test = tst), f)
      cat(sprintf("%s split %d: n %d, %d classes, cv %.0f s, test %.0f s\n", nm, s, n, nlevels(Y), t1 - t0, t2 - t1))
    }
  }
} else if (identical(mode, "summary")) {
  fs <- list.files(args[2], "^gen_.*rds$", full.names = TRUE)
  smooth <- function(a, gam, costs, w) {
    M <- matrix(NA, length(gam), length(costs))
    M[cbind(match(a$gamma, gam), match(a$cost, costs))] <- a$v
    S <- M
    for (i in seq_along(gam)) for (j in seq_along(costs)) {
      ii <- max(1, i - w[1]):min(length(gam), i + w[1]); jj <- max(1, j - w[2]):min(length(costs), j + w[2])
      S[i, j] <- mean(M[ii, jj])
    }
    S[cbind(match(a$gamma, gam), match(a$cost, costs))]
  }
  pick <- function(cv, draws, col, w = NULL) {
    sub <- cv[cv$draw %in% draws, ]
    a <- aggregate(sub[[col]], by = list(gamma = sub$gamma, cost = sub$cost), FUN = mean)
    names(a)[3] <- "v"
    gam <- sort(unique(a$gamma)); costs <- sort(unique(a$cost))
    v <- if (is.null(w)) a$v else smooth(a, gam, costs, w)
    b <- which.min(v); c(gamma = a$gamma[b], cost = a$cost[b])
  }
  rules <- list(
    miss1 = list(draws = list(1, 2, 3, 4), col = "miss"),
    miss2 = list(draws = list(1:2, 3:4), col = "miss"),
    miss4 = list(draws = list(1:4), col = "miss"),
    pls2 = list(draws = list(1:2, 3:4), col = "pls"),
    sm2 = list(draws = list(1:2, 3:4), col = "miss", w = c(1, 1)),
    sm4 = list(draws = list(1:4), col = "miss", w = c(1, 1)),
    smc2 = list(draws = list(1:2, 3:4), col = "miss", w = c(0, 1)),
    sm1 = list(draws = list(1, 2, 3, 4), col = "miss", w = c(1, 1)))
  out <- NULL
  for (f in fs) {
    r <- readRDS(f)
    for (nm in names(rules)) {
      ru <- rules[[nm]]
      ev <- t(sapply(ru$draws, function(dr) {
        p <- pick(r$cv, dr, ru$col, ru$w)
        k <- which(abs(r$test$gamma - p[["gamma"]]) < 1e-9 * p[["gamma"]] &
                   abs(r$test$cost - p[["cost"]]) < 1e-9 * p[["cost"]])
        c(r$test$test_miss[k], r$test$test_ls[k])
      }))
      out <- rbind(out, data.frame(set = r$set, split = r$split, n_train = r$n, n_test = r$ntest,
                                   classes = r$k, rule = nm, test_miss = mean(ev[, 1]),
                                   test_ls = mean(ev[, 2])))
    }
  }
  utils::write.csv(out, file.path("bench", "results", "tune_selection.csv"), row.names = FALSE)
  for (col in c("test_miss", "test_ls")) {
    w <- reshape(out[, c("set", "split", "rule", col)], idvar = c("set", "split"),
                 timevar = "rule", direction = "wide")
    names(w) <- sub(paste0(col, "."), "", names(w), fixed = TRUE)
    cat(sprintf("\n%s, mean over splits:\n", col))
    print(aggregate(. ~ set, w[, -2], mean, na.action = na.pass), digits = 4)
    cat("mean ratio to miss2 over sets and splits:\n")
    print(round(colMeans(w[, -(1:2)] / w$miss2, na.rm = TRUE), 4))
    cat("set-splits where the rule is below / above miss2:\n")
    print(sapply(w[, -(1:2)], function(v) sprintf("%d/%d", sum(v < w$miss2 - 1e-12, na.rm = TRUE),
                                                  sum(v > w$miss2 + 1e-12, na.rm = TRUE))))
  }
} else {
  stop("usage: tune_selection.R collect SETS SPLITS N_TRAIN DIR | summary DIR", call. = FALSE)
}
