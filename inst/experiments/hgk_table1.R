# Table 1 of Steinwart, Thomann and Schmid (2016), "Learning with hierarchical Gaussian kernels":
# the mean least-squares test error of hgk() against the Gaussian least-squares SVM (the paper's
# SVM baseline), kernel_svm and ranger, on random train / test splits of the 14 sets of the
# table held in the data directory (seismic is not).
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/hgk_table1.R [options]
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/hgk_table1.R --summary
#
# Options (name=value): n_train (2000), n_test (5000 at most: the rows left), splits (3),
#   datasets (comma list, default all 14), methods (hgk,lssvm,svm,ranger), threads (2),
#   out (inst/extdata/hgk_table1.csv).
#
# Protocol per dataset and split s (the draw is seeded by the dataset and s, so every method
# sees the same rows): n_train training and n_test test rows drawn at random from all rows
# (train and test files pooled). Inputs are scaled to [0, 1] with the training range by each
# learner. Targets: regression labels scaled to [-1, 1] with the training range; classes as +-1
# (two classes: one output, +1 the second level; more: one-vs-all outputs). The error is the
# paper's: the mean squared difference between these targets and the decision values clipped
# to [-1, 1] (averaged over the outputs for more than two classes).
#   hgk     hgk() with its defaults: depth 1 and depth 2 with 4..16 nodes compared by 5-fold CV,
#           the average of the 5 fold models of the chosen architecture.
#   lssvm   the paper's SVM baseline: the Gaussian least-squares SVM (kernel_ridge) with 5-fold
#           CV over the authors' 10 x 10 grid (width t geometric from 0.2 n^(-1/d) to
#           5 (1 + 5/n)^d for exp(-||x - z||^2 / t^2); lambda from 0.001/n to 0.1, c = n lambda),
#           the least-squares error as the CV criterion, refitted on all training rows.
#   svm     kernel_svm (hinge loss; eps-regression with epsilon 0.1 on the [-1, 1] scale) over
#           the same grid (cost = 1 / (2 n lambda)), 5-fold CV by the misclassification rate or
#           the squared error; decision values: binary, the SVM decision (positive means the
#           second level); more classes, 2 p - 1 from its probability model.
#   ranger  500 trees; probability forests for classes (decision 2 p - 1), regression forests.
# Dataset preparation (see the package's kl_datasets() for the sources): bank = bank32nh;
# cycle = ccpp; covtype = class 2 (Lodgepole pine) against the rest (the LIBSVM binary set);
# higgs = the 7500-row subset; shuttle without its first column (a time stamp); updrs = the
# Parkinsons telemonitoring data, target motor_UPDRS; cod-rna, magic, higgs binary; letter,
# pendigits, satimage, shuttle, thyroid multiclass.
#
# Results are appended to the CSV after every (dataset, split, method), and a restart skips what
# is there, so an interrupted run loses at most the item in progress. The work runs split by
# split (split 1 of every dataset first).
suppressPackageStartupMessages(library(kernlearn))

opt <- list(n_train = 2000L, n_test = 5000L, splits = 3L,
            datasets = c("bank", "cadata", "cod", "covtype", "cpusmall", "cycle", "higgs",
                         "letter", "magic", "pendigits", "satimage", "shuttle", "thyroid",
                         "updrs"),
            methods = c("hgk", "lssvm", "svm", "ranger"), threads = 2L,
            out = file.path("inst", "extdata", "hgk_table1.csv"), summary = FALSE)
for (a in commandArgs(trailingOnly = TRUE)) {
  if (a == "--summary") { opt$summary <- TRUE; next }
  kv <- strsplit(sub("^--", "", a), "=", fixed = TRUE)[[1]]
  if (length(kv) != 2L || !(kv[1] %in% names(opt))) stop("unknown option: ", a)
  v <- kv[2]
  opt[[kv[1]]] <- if (kv[1] %in% c("datasets", "methods")) strsplit(v, ",")[[1]]
                  else if (kv[1] == "out") v else as.integer(v)
}
options(kernlearn.threads = opt$threads)

# The paper's Table 1 (mean least-squares error over 30 splits): SVM, HKL, Ours, RF, DNN.
paper <- data.frame(
  dataset = c("bank", "cadata", "cod", "covtype", "cpusmall", "cycle", "higgs", "letter",
              "magic", "pendigits", "satimage", "shuttle", "thyroid", "updrs"),
  svm = c(.2978, .0538, .1575, .5206, .00361, .01048, .9021, .04508, .4007, .00793, .04883,
          .00457, .1750, .05372),
  hkl = c(.2939, .0625, .1734, .6100, .00460, .01215, .8178, .11505, .4282, .02433, .10783,
          .01293, .1637, .17739),
  hgk = c(.2596, .0525, .1309, .3996, .00335, .00984, .8024, .03394, .3900, .00705, .04670,
          .00422, .1538, .00588),
  rf = c(.2687, .0509, .1725, .4878, .00323, .00838, .7770, .05770, .3772, .01266, .05246,
         .00083, .0252, .03047),
  stringsAsFactors = FALSE)

if (opt$summary) {
  if (!file.exists(opt$out)) stop("no results in ", opt$out)
  r <- utils::read.csv(opt$out, stringsAsFactors = FALSE)
  m <- stats::aggregate(error ~ dataset + method, r, mean)
  w <- stats::reshape(m, idvar = "dataset", timevar = "method", direction = "wide")
  names(w) <- sub("^error\\.", "", names(w))
  w$splits <- vapply(w$dataset, function(d) length(unique(r$split[r$dataset == d & r$method == "hgk"])), 0L)
  w$ratio <- w$hgk / w$lssvm
  w <- merge(w, setNames(paper[, c("dataset", "svm", "hgk", "rf")],
                         c("dataset", "paper_svm", "paper_hgk", "paper_rf")), all.x = TRUE)
  w$paper_ratio <- w$paper_hgk / w$paper_svm
  print(w, digits = 4, row.names = FALSE)
  ok <- is.finite(w$ratio) & w$dataset != "updrs"
  cat(sprintf("\ngeometric mean hgk / Gaussian LS-SVM over %d sets (updrs excluded): %.3f (paper: %.3f)\n",
              sum(ok), exp(mean(log(w$ratio[ok]))), exp(mean(log(w$paper_ratio[ok])))))
  quit(save = "no")
}

dir <- Sys.getenv("KERNLEARN_DATA_DIR")
if (!nzchar(dir)) stop("set KERNLEARN_DATA_DIR to the data directory")
dir.create(dirname(opt$out), showWarnings = FALSE, recursive = TRUE)

# x (numeric matrix) and y (factor or numeric) of every set, all rows.
load_set <- function(name) {
  get <- function(n, ...) kl_dataset(n, dir = dir, quiet = TRUE, ...)
  d <- switch(name,
    bank = get("bank32nh"), cadata = get("cadata"), cod = get("cod-rna"),
    covtype = get("covtype"), cpusmall = get("cpusmall"), cycle = get("ccpp"),
    higgs = get("higgs"), letter = get("letter"), magic = get("magic"),
    pendigits = get("pendigits"), satimage = get("satimage"), shuttle = get("shuttle"),
    thyroid = get("thyroid"), updrs = get("parkinsons", target = "motor_UPDRS"))
  x <- as.matrix(d$x); y <- d$y
  if (name == "covtype") y <- factor(ifelse(as.character(y) == "2", "2", "other"),
                                     levels = c("other", "2"))
  if (name == "shuttle") x <- x[, -1, drop = FALSE]
  if (is.factor(y)) y <- droplevels(y)
  list(x = x, y = y)
}

# +-1 targets for a factor (one column for two classes) or [-1, 1] targets for a response.
targets <- function(y, yr = NULL) {
  if (is.factor(y)) {
    if (nlevels(y) == 2L) return(matrix(ifelse(as.integer(y) == 2L, 1, -1)))
    Y <- matrix(-1, length(y), nlevels(y)); Y[cbind(seq_along(y), as.integer(y))] <- 1
    return(Y)
  }
  matrix(2 * (y - yr[1]) / (yr[2] - yr[1]) - 1)
}
ls_error <- function(D, Y) mean((pmin(pmax(as.matrix(D), -1), 1) - Y)^2)

# The authors' grid for n fit rows in d dimensions (kernel_ridge's lambda is c = n lambda).
paper_grid <- function(n, d) {
  t <- exp(seq(log(0.2 * n^(-1 / d)), log(5 * (1 + 5 / n)^d), length.out = 10))
  lam <- exp(seq(log(0.001 / n), log(0.1), length.out = 10))
  list(gamma = 1 / t^2, lambda = lam)
}

methods <- list(
  hgk = function(x, y, xt, Yt) {
    set.seed(11)
    fit <- hgk(x, y)
    list(error = ls_error(predict(fit, xt, type = "decision"), Yt),
         extra = fit$architecture$label)
  },
  lssvm = function(x, y, xt, Yt) {
    n1 <- nrow(x) - ceiling(nrow(x) / 5)
    g <- paper_grid(n1, ncol(x))
    grid <- list(kernel = lapply(g$gamma, gaussian_kernel), lambda = n1 * g$lambda)
    metric <- if (is.factor(y)) {
      structure(function(truth, pred) ls_error(pred, targets(truth)), type = "decision")
    } else "mse"
    set.seed(12)
    tu <- kl_tune(kernel_ridge, x, y, grid = grid, metric = metric, refit = FALSE)
    b <- tu$best
    fit <- kernel_ridge(x, y, kernel = b$kernel, lambda = b$lambda * nrow(x) / n1)
    list(error = ls_error(predict(fit, xt, type = "decision"), Yt),
         extra = sprintf("gamma %.4g, lambda %.3g", b$kernel$gamma, b$lambda / n1))
  },
  svm = function(x, y, xt, Yt) {
    n1 <- nrow(x) - ceiling(nrow(x) / 5)
    g <- paper_grid(n1, ncol(x))
    grid <- list(gamma = g$gamma, cost = 1 / (2 * n1 * g$lambda))
    set.seed(13)
    tu <- kl_tune(kernel_svm, x, y, grid = grid, refit = FALSE)
    b <- tu$best
    cost <- b$cost * n1 / nrow(x)
    multi <- is.factor(y) && nlevels(y) > 2L
    fit <- kernel_svm(x, y, gamma = b$gamma, cost = cost, probability = multi)
    # (a positive binary decision means the second level, as the +1 target)
    D <- if (multi) 2 * predict(fit, xt, type = "prob") - 1
         else predict(fit, xt, type = "decision")
    list(error = ls_error(D, Yt),
         extra = sprintf("gamma %.4g, cost %.4g", b$gamma, cost))
  },
  ranger = function(x, y, xt, Yt) {
    colnames(x) <- colnames(xt) <- paste0("V", seq_len(ncol(x)))
    set.seed(14)
    fit <- ranger::ranger(x = x, y = y, num.trees = 500, probability = is.factor(y),
                          num.threads = opt$threads)
    p <- predict(fit, xt)$predictions
    D <- if (is.factor(y)) {
      P <- 2 * p - 1
      if (nlevels(y) == 2L) P[, levels(y)[2]] else P[, levels(y)]
    } else p
    list(error = ls_error(D, Yt), extra = "500 trees")
  })

done <- if (file.exists(opt$out)) utils::read.csv(opt$out, stringsAsFactors = FALSE) else NULL
have <- function(ds, s, m)
  !is.null(done) && any(done$dataset == ds & done$split == s & done$method == m)
record <- function(row) {
  utils::write.table(row, opt$out, sep = ",", row.names = FALSE, col.names = !file.exists(opt$out),
                     append = file.exists(opt$out), qmethod = "double")
  done <<- rbind(done, row)
}

cache <- list()
for (s in seq_len(opt$splits)) {
  for (ds in opt$datasets) {
    todo <- opt$methods[!vapply(opt$methods, function(m) have(ds, s, m), logical(1))]
    if (!length(todo)) next
    if (is.null(cache[[ds]])) cache[[ds]] <- load_set(ds)
    D <- cache[[ds]]
    set.seed(sum(utf8ToInt(ds)) * 1000 + s)
    idx <- sample(nrow(D$x))
    ntr <- min(opt$n_train, nrow(D$x) %/% 2)
    tr <- idx[seq_len(ntr)]
    te <- idx[ntr + seq_len(min(opt$n_test, nrow(D$x) - ntr))]
    x <- D$x[tr, , drop = FALSE]; xt <- D$x[te, , drop = FALSE]
    y <- D$y[tr]; yt <- D$y[te]
    if (is.factor(y)) {
      # test rows of a class that is missing from the training rows are dropped
      keep <- yt %in% unique(y); xt <- xt[keep, , drop = FALSE]; yt <- yt[keep]
      y <- droplevels(y); yt <- factor(yt, levels = levels(y))
      Yt <- targets(yt)
    } else {
      yr <- range(y)
      Yt <- targets(yt, yr)
      y <- as.vector(targets(y, yr))
    }
    for (m in todo) {
      t0 <- proc.time()[["elapsed"]]
      r <- tryCatch(methods[[m]](x, y, xt, Yt),
                    error = function(e) list(error = NA_real_, extra = conditionMessage(e)))
      secs <- proc.time()[["elapsed"]] - t0
      row <- data.frame(dataset = ds, split = s, method = m, error = signif(r$error, 6),
                        seconds = round(secs, 1), n_train = nrow(x), n_test = nrow(xt),
                        d = ncol(x), task = if (is.factor(y)) sprintf("%d classes", nlevels(y))
                                           else "regression",
                        extra = r$extra, date = format(Sys.time(), "%Y-%m-%d %H:%M"),
                        stringsAsFactors = FALSE)
      record(row)
      cat(sprintf("%-9s split %d %-6s error %.5f  %7.1f s  %s\n", ds, s, m, r$error, secs,
                  r$extra))
    }
  }
}
