# The experiments of Colbert and Peet (2020), "A convex parametrization of a new class of
# universal kernel functions" (tessellated kernel learning, tkl()): test accuracy on the four
# classification sets of the paper's Table 1, test MSE on the regression sets of its Table 2
# and the authors' later scripts, and the growth of the fit time with the number of rows on CCPP.
# The paper's numbers are not in its text (NOTES.md, section 4), so the tables compare tkl()
# with tuned baselines run under the same protocol.
#
#   KERNLEARN_DATA_DIR=../shared/data Rscript inst/experiments/tkl_tables.R classification [splits] [datasets]
#   KERNLEARN_DATA_DIR=../shared/data Rscript inst/experiments/tkl_tables.R regression [splits] [datasets]
#   KERNLEARN_DATA_DIR=../shared/data Rscript inst/experiments/tkl_tables.R scaling [repetitions]
#   Rscript inst/experiments/tkl_tables.R summary
#
# splits: a count ("10": splits 1..10, the default) or a range ("11-20", to add splits);
# for scaling, the repetitions per size (default 1). datasets: a comma list (default: all of
# the part). Further options as name=value (or --name=value) arguments, or environment
# variables TKL_<NAME> (TKL_THREADS, TKL_OUT_DIR, ...); an argument wins over the variable:
#   threads       threads of every learner (1, so that the times compare with e1071's, which
#                 has one thread; give 2 on a two-core machine for faster tables)
#   out_dir       folder of the result files tkl_classification.csv, tkl_regression.csv and
#                 tkl_scaling.csv (default inst/extdata of the package source directory, found
#                 from this script's path, else of the working directory)
#   data_dir      the data directory (default KERNLEARN_DATA_DIR, else kl_dataset()'s default)
#   methods       comma list (classification: tkl, svm, e1071, ranger; regression: tkl, svm,
#                 ranger, glmnet; default all)
#   folds         CV folds of all tuning (5)
#   grid          full (the grids below) or small (2 x 2 grids, for a quick test only)
#   max_train     training rows at most; larger training sets are subsampled (2000)
#   tol, maxit    tkl()'s stopping rule (1e-2 and 100, the authors' defaults)
#   sizes         scaling: the training sizes (1000,2000,4000,6000,9568)
#   scaling_cost, scaling_delta   scaling: tkl()'s fixed cost and delta (10 and 0.1)
#   retry_failed  TRUE to run again items recorded as failed (FALSE)
# Quick test:  TKL_OUT_DIR=/tmp/tkl TKL_GRID=small TKL_FOLDS=3 \
#                Rscript inst/experiments/tkl_tables.R classification 1 bupa
#
# Datasets (kl_dataset() names; the data folder names are accepted too). Classification:
# bupa (BUPA liver, class "selector"), breast_cancer (Wisconsin original, the 683 complete
# rows), heart (Statlog), pima. Regression: ccpp (target PE), forest_fires (target
# log(1 + area)), boston (MEDV), concrete (strength), yacht (Rr), auto_mpg (mpg, 392 complete
# rows), energy (Y1, heating load), cadata (median house value). A set the data directory
# lacks is skipped with a message.
#
# Protocol per dataset and split s. The rows are permuted with a seed made from the dataset
# name and s; the first 20% (rounded) are the test rows, the rest the training rows, of which
# the first max_train = 2000 are kept when there are more (ccpp: 7654 -> 2000, cadata:
# 16512 -> 2000; the test rows are all kept). Every method of a split sees the same rows, and
# each method runs after a seed made from the dataset, s and the method, so a rerun or a
# resumed run draws the same CV folds and forests.
# Inputs: left as read; tkl() and kernel_svm() scale them to [0, 1] with the training range
# themselves, and e1071's SVM gets the same scaling done here (test rows with the training
# map). Regression response: tkl and both SVMs are fitted to the response standardised with
# the training mean and sd, so that epsilon = 0.1 is the paper's value on a standardised
# scale; their predictions are transformed back. ranger and glmnet use the response as read.
# Errors: classification, the test accuracy (the fraction of correct classes); regression,
# the test MSE on the response's own scale (forest_fires: on the log(1 + area) scale).
# Methods (all tuning by CV with `folds` folds, followed by one fit on all training rows):
#   tkl     tkl(degree = 1, epsilon = 0.1, tol, maxit, baseline = FALSE) with its other
#           defaults (the normalised start, the ridge 0.1, the exponentiated-gradient P-step;
#           extra names the P-step, rows without it used Frank-Wolfe), cost x delta by
#           kl_tune() (grid
#           extended past a winning edge), the misclassification rate or MSE as criterion: the
#           paper's method.
#   tkl_sel the same tuned cost and delta, and the final fit with baseline = TRUE, tkl()'s
#           default: the learned kernel compared with a tuned Gaussian SVM (regression: the
#           better of the Gaussian SVR and the Gaussian least-squares SVM) by 5-fold CV on the
#           same folds (a held-out fifth above 2000 rows), the better one refitted on all rows
#           (extra records the choice and both validation errors).
#   svm     kernel_svm() with the Gaussian kernel exp(-gamma ||x - z||^2), cost x gamma by
#           kl_tune() (its warm-started cost path); regression with epsilon = 0.1 fixed, the
#           value tkl uses, so that the two differ in the kernel only (and the fast path,
#           which tunes cost and gamma only, applies).
#   e1071   (classification) e1071::tune.svm() over the same cost x gamma grid with
#           tune.control(cross = folds), then e1071::svm() with the chosen pair, both on the
#           [0, 1]-scaled inputs with scale = FALSE (LIBSVM: the same problem as svm).
#   ranger  500 trees, default mtry (floor(sqrt(d)) for classes, floor(d / 3) for
#           regression), classification forests for classes; no tuning.
#   glmnet  (regression) the lasso: cv.glmnet(alpha = 1) with the same number of folds,
#           lambda.min; glmnet standardises the inputs itself.
# Grids (grid=full). tkl: cost in {0.1, 1, 10, 100, 1000}, the Gaussian SVMs' costs: with the
# normalised start the kernel's mean diagonal is 1, as a Gaussian kernel's, so the costs are on
# the same scale (kl_tune() extends the grid when the choice is at an end; with the paper's
# raw kernel the same C regularised less, by the factor s = (1 + 2 delta)^d (1 + d / 3) or so,
# and the grid started at 0.01); delta in {0.1, 0.3}, inside the authors' range 0.1 to 0.5 (a wider box only
# flattens the kernel near the data's edges, and each value costs `folds` more tkl fits); 10
# points. Gaussian SVMs: cost in {0.1, 1, 10, 100, 1000} x gamma in {1/4, 1, 4, 16, 64, 256} / d
# (d = the input columns): on [0, 1]-scaled inputs squared distances grow with d, and the grid
# runs from a kernel wider than the data to one that sees only near neighbours, around the
# common default 1 / d; 30 points, cheap for the SVM, so it is wider than tkl's. The chosen
# value's place in its grid is recorded ("EDGE" at either end). grid=small (cost {1, 10} for
# both, delta 0.1, gamma {1, 4} / d) is for testing the script only.
# Times (elapsed seconds): `seconds` = tuning + the final fit (not prediction);
# `seconds_fit` = the final fit alone (glmnet: NA, cv.glmnet fits the path as part of the CV).
# tkl also records the iterations and the stopping reason of its final fit, and the time its
# final fit spent in alpha-steps (SVM solves) and P-steps (the rest).
#
# Scaling study (part scaling): CCPP, n rows drawn at random (seeded by n and the repetition;
# all 9568 rows at n = 9568), response standardised with their mean and sd, tkl() with fixed
# cost = scaling_cost (10) and delta = scaling_delta (0.1), epsilon 0.1, tol and maxit as
# above. Recorded: the elapsed time of the call, the alpha-steps' time
# (sum(trace$seconds_alpha) + seconds_first: the SVM solves), the P-steps' time
# (sum(trace$seconds_p) + seconds_start: the Gram matrices, the gradients, eigenvectors and
# line-search kernels), the iterations and the line search's SVM solves. The summary fits
# log(time) = a + b log(n) by least squares (all rows of the file) and reports b for the total,
# the alpha-steps and the P-steps (the paper: about 2.24 for regression on CCPP). n = 9568
# needs about 2.2 GB for the three n x n matrices plus the solver's cache.
#
# Columns of tkl_classification.csv / tkl_regression.csv: dataset, split, method, accuracy
# (classification) or mse (regression), seconds, seconds_fit, n_train, n_test, d, cost, gamma,
# delta, epsilon (regression, on the standardised scale), iterations and stop (tkl), cv (the
# best CV value: misclassification rate, or MSE on the scale the method was fitted on), extra
# (the chosen parameters' places in the grids, glmnet's lambda, ranger's mtry, tkl's step
# times, warnings, failures), protocol (folds, grid, max_train, tol, maxit), date.
# tkl_scaling.csv: dataset, n, rep, seconds, seconds_alpha, seconds_p, seconds_start,
# seconds_first, iterations, solves, stop, rel_gap, n_sv, cost, delta, epsilon, threads,
# protocol, date.
#
# Resuming: a row is appended after every (dataset, split, method) item, or every (n, rep) of
# the scaling study, and a restart skips the items already in the file, so a killed run loses
# at most the item in progress (a last line cut short by the kill is removed at the next
# start). Failed items are recorded with a missing error and the message in extra, and are
# skipped on restart unless retry_failed=TRUE (the summary then uses the later row). A file
# holds one protocol: rows written with other folds, grid, max_train, tol, maxit or threads (or, for
# scaling, another cost, delta or thread count) make the run stop; use another out_dir.
suppressPackageStartupMessages(library(kernlearn))

parts <- c("classification", "regression", "scaling", "summary")
class_sets <- c("bupa", "breast_cancer", "heart", "pima")
reg_sets <- c("ccpp", "forest_fires", "boston", "concrete", "yacht", "auto_mpg", "energy",
              "cadata")
set_alias <- c(bupa_liver = "bupa", liver = "bupa", breast_cancer_wisconsin = "breast_cancer",
               cancer = "breast_cancer", statlog_heart = "heart", boston_housing = "boston",
               energy_efficiency = "energy", cadata_california_housing = "cadata",
               cycle = "ccpp", forestfires = "forest_fires")
set_target <- c(forest_fires = "log_area")  # the others: kl_dataset()'s default target
part_methods <- list(classification = c("tkl", "tkl_sel", "svm", "e1071", "ranger"),
                     regression = c("tkl", "tkl_sel", "svm", "ranger", "glmnet"))

# ---- options ------------------------------------------------------------------------------
this_file <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
src_dir <- getwd()
if (length(this_file) == 1L) {
  here <- dirname(normalizePath(this_file, mustWork = FALSE))
  if (basename(here) == "experiments" && basename(dirname(here)) == "inst")
    src_dir <- dirname(dirname(here))
}

opt <- list(part = "", splits = "", datasets = "", threads = "1",
            out_dir = file.path(src_dir, "inst", "extdata"), data_dir = "", methods = "",
            folds = "5", grid = "full", max_train = "2000", tol = "0.01", maxit = "100",
            sizes = "1000,2000,4000,6000,9568", scaling_cost = "10", scaling_delta = "0.1",
            retry_failed = "FALSE")
for (nm in names(opt)) {
  v <- Sys.getenv(paste0("TKL_", toupper(nm)), "")
  if (nzchar(v)) opt[[nm]] <- v
}
if (!nzchar(opt$data_dir)) opt$data_dir <- Sys.getenv("KERNLEARN_DATA_DIR", "")
positional <- c("part", "splits", "datasets")
for (a in commandArgs(trailingOnly = TRUE)) {
  a <- sub("^--", "", a)
  if (!grepl("=", a, fixed = TRUE)) {
    if (!length(positional))
      stop(sprintf("too many arguments ('%s'); usage: tkl_tables.R <%s> [splits] [datasets] [name=value ...]",
                   a, paste(parts, collapse = "|")), call. = FALSE)
    opt[[positional[1L]]] <- a
    positional <- positional[-1L]
    next
  }
  nm <- sub("=.*$", "", a)
  if (!nm %in% names(opt))
    stop(sprintf("unknown option '%s'; options: %s", nm, paste(names(opt), collapse = ", ")),
         call. = FALSE)
  opt[[nm]] <- sub("^[^=]*=", "", a)
}
part <- opt$part
if (!part %in% parts)
  stop(sprintf("the first argument must be one of %s (got '%s')", paste(parts, collapse = ", "),
               part), call. = FALSE)

whole <- function(nm, lower = 1L) {
  v <- suppressWarnings(as.numeric(opt[[nm]]))
  if (length(v) != 1L || is.na(v) || v != round(v) || v < lower)
    stop(sprintf("'%s' must be a whole number >= %d (got '%s')", nm, lower, opt[[nm]]),
         call. = FALSE)
  as.integer(v)
}
positive <- function(nm) {
  v <- suppressWarnings(as.numeric(opt[[nm]]))
  if (length(v) != 1L || is.na(v) || v <= 0)
    stop(sprintf("'%s' must be a positive number (got '%s')", nm, opt[[nm]]), call. = FALSE)
  v
}
comma_list <- function(s) {
  v <- trimws(strsplit(s, ",", fixed = TRUE)[[1]])
  v[nzchar(v)]
}
threads <- whole("threads")
folds <- whole("folds", 2L)
max_train <- whole("max_train", 10L)
tkl_tol <- positive("tol")
tkl_maxit <- whole("maxit", 0L)
retry_failed <- isTRUE(as.logical(opt$retry_failed))
if (!opt$grid %in% c("full", "small"))
  stop(sprintf("'grid' must be full or small (got '%s')", opt$grid), call. = FALSE)
if (!nzchar(opt$splits)) opt$splits <- if (part == "scaling") "1" else "10"
rng <- suppressWarnings(as.integer(strsplit(opt$splits, "-", fixed = TRUE)[[1]]))
splits <- if (anyNA(rng) || any(rng < 1L)) integer() else
  if (length(rng) == 2L) seq(rng[1], rng[2]) else if (length(rng) == 1L) seq_len(rng)
if (!length(splits))
  stop(sprintf("'splits' must be a count or a range such as 11-20 (got '%s')", opt$splits),
       call. = FALSE)
data_dir <- if (nzchar(opt$data_dir)) opt$data_dir else NULL
options(kernlearn.threads = threads)

grids <- list(
  full = list(tkl_cost = c(0.1, 1, 10, 100, 1000), tkl_delta = c(0.1, 0.3),
              svm_cost = c(0.1, 1, 10, 100, 1000), svm_gamma_d = c(1 / 4, 1, 4, 16, 64, 256)),
  small = list(tkl_cost = c(1, 10), tkl_delta = 0.1, svm_cost = c(1, 10), svm_gamma_d = c(1, 4)))
G <- grids[[opt$grid]]
epsilon <- 0.1
protocol <- sprintf("folds %d; grid %s; max_train %d; tol %s; maxit %d; threads %d", folds,
                    opt$grid, max_train, format(tkl_tol), tkl_maxit, threads)

out_file <- function(p) file.path(opt$out_dir, sprintf("tkl_%s.csv", p))
clock <- function() proc.time()[["elapsed"]]
`%||%` <- function(a, b) if (is.null(a)) b else a

# ---- result files ---------------------------------------------------------------------------
score_col <- c(classification = "accuracy", regression = "mse")
table_columns <- function(p)
  c("dataset", "split", "method", score_col[[p]], "seconds", "seconds_fit", "n_train", "n_test",
    "d", "cost", "gamma", "delta", "epsilon", "iterations", "stop", "cv", "extra", "protocol",
    "date")
scaling_columns <- c("dataset", "n", "rep", "seconds", "seconds_alpha", "seconds_p",
                     "seconds_start", "seconds_first", "iterations", "solves", "stop", "rel_gap",
                     "n_sv", "cost", "delta", "epsilon", "threads", "protocol", "date")
text_columns <- c("dataset", "method", "stop", "extra", "protocol", "date")

# The rows of a result file as a data.frame (NULL when there are none). Lines with the wrong
# number of fields, and a last line without its newline (a write cut short), are left out
# with a warning and, when `repair`, removed from the file.
read_rows <- function(file, columns, repair = FALSE) {
  if (!file.exists(file) || file.info(file)$size == 0) return(NULL)
  lines <- readLines(file, warn = FALSE)
  head <- scan(text = lines[1L], what = "", sep = ",", quiet = TRUE)
  if (!identical(head, columns))
    stop(sprintf("'%s' has other columns than this script writes; use another out_dir", file),
         call. = FALSE)
  con <- file(file, "rb")
  seek(con, file.info(file)$size - 1)
  complete <- identical(readBin(con, "raw", 1L), charToRaw("\n"))
  close(con)
  nf <- utils::count.fields(textConnection(lines), sep = ",", quote = "\"", comment.char = "",
                            blank.lines.skip = FALSE)
  bad <- which(is.na(nf) | nf != length(columns))
  if (!complete) bad <- union(bad, length(lines))
  bad <- setdiff(bad, 1L)
  if (length(bad)) {
    warning(sprintf("%s: %d malformed line(s) left out (line %s)%s", file, length(bad),
                    paste(bad, collapse = ", "), if (repair) " and removed" else ""),
            call. = FALSE)
    lines <- lines[-bad]
    if (repair) {
      writeLines(lines, paste0(file, ".tmp"))
      file.rename(paste0(file, ".tmp"), file)
    }
  }
  if (length(lines) < 2L) return(NULL)
  cc <- setNames(rep("numeric", length(columns)), columns)
  cc[intersect(text_columns, columns)] <- "character"
  utils::read.csv(text = paste(lines, collapse = "\n"), colClasses = cc, na.strings = "NA",
                  stringsAsFactors = FALSE)
}

# Appends one row (a named list) with a single write, the header first on a new file.
append_row <- function(file, columns, row) {
  field <- function(v) {
    if (is.null(v) || length(v) == 0L || (length(v) == 1L && is.na(v))) return("NA")
    if (is.character(v)) return(paste0("\"", gsub("\"", "\"\"", gsub("[\r\n]+", " ", v)), "\""))
    format(v, digits = 7, scientific = FALSE, trim = TRUE)
  }
  line <- paste(vapply(columns, function(nm) field(row[[nm]]), ""), collapse = ",")
  if (!file.exists(file) || file.info(file)$size == 0)
    line <- paste(paste0("\"", columns, "\"", collapse = ","), line, sep = "\n")
  cat(line, "\n", sep = "", file = file, append = TRUE)
}

# A file holds one protocol.
check_protocol <- function(rows, file, want) {
  if (is.null(rows)) return(invisible())
  other <- setdiff(unique(rows$protocol), want)
  if (length(other))
    stop(sprintf("'%s' holds rows of another protocol (%s; this run: %s); use another out_dir",
                 file, other[1L], want), call. = FALSE)
}

# ---- seeds, data and splits -----------------------------------------------------------------
# A seed made from its arguments (a string hash), the same on every platform and run.
seed_of <- function(...) {
  h <- 7
  for (b in utf8ToInt(paste(..., sep = "/"))) h <- (h * 31 + b) %% 2147483587
  as.integer(h)
}

known_sets <- function(p) if (p == "classification") class_sets else reg_sets
pick_sets <- function(p) {
  if (!nzchar(opt$datasets)) return(known_sets(p))
  v <- tolower(comma_list(opt$datasets))
  v <- ifelse(v %in% names(set_alias), set_alias[v], v)
  bad <- setdiff(v, known_sets(p))
  if (length(bad))
    stop(sprintf("unknown %s dataset(s): %s; known: %s", p, paste(bad, collapse = ", "),
                 paste(known_sets(p), collapse = ", ")), call. = FALSE)
  unique(v)
}

# x (a numeric matrix with syntactic column names) and y of all rows of a set, or NULL with a
# message when the data directory lacks it.
load_set <- function(name) {
  d <- tryCatch(kl_dataset(name, dir = data_dir, download = FALSE, quiet = TRUE,
                           target = if (name %in% names(set_target)) set_target[[name]]),
                error = function(e) {
                  message(sprintf("skipping %s: %s", name, conditionMessage(e)))
                  NULL
                })
  if (is.null(d)) return(NULL)
  x <- as.matrix(d$x)
  storage.mode(x) <- "double"
  colnames(x) <- make.names(if (is.null(colnames(x))) paste0("V", seq_len(ncol(x)))
                            else colnames(x), unique = TRUE)
  y <- if (is.factor(d$y)) droplevels(d$y) else as.numeric(d$y)
  list(x = x, y = y)
}

# Split s of a set: a seeded permutation, the first 20% test, the rest training (at most
# max_train of them). For regression also the training mean and sd of the response.
make_split <- function(D, name, s) {
  N <- nrow(D$x)
  set.seed(seed_of(name, "split", s))
  perm <- sample.int(N)
  n_test <- round(0.2 * N)
  test <- perm[seq_len(n_test)]
  train <- perm[-seq_len(n_test)]
  if (length(train) > max_train) train <- train[seq_len(max_train)]
  S <- list(x = D$x[train, , drop = FALSE], y = D$y[train],
            xt = D$x[test, , drop = FALSE], yt = D$y[test], n_all_train = N - n_test,
            name = name, split = s, key = paste(name, s))
  if (is.factor(S$y)) {
    S$y <- droplevels(S$y)
    S$yt <- factor(as.character(S$yt), levels = levels(S$y))
  } else {
    S$mu <- mean(S$y)
    S$sd <- stats::sd(S$y)
  }
  S
}
is_regression <- function(S) !is.factor(S$y)
# The response the SVM methods and tkl are fitted to, and their predictions mapped back.
fit_response <- function(S) if (is_regression(S)) (S$y - S$mu) / S$sd else S$y
from_fit_scale <- function(S, p) if (is_regression(S)) S$mu + S$sd * p else p
score <- function(S, pred) {
  if (is_regression(S)) return(mean((as.numeric(pred) - S$yt)^2))
  mean(as.character(pred) == as.character(S$yt), na.rm = FALSE)
}
# The place of a chosen value in its grid, "EDGE" at either end of a grid of 3 or more.
place <- function(v, grid) {
  i <- which.min(abs(log(grid) - log(v)))
  sprintf("%d/%d%s", i, length(grid),
          if (length(grid) > 2L && i %in% c(1L, length(grid))) " EDGE" else "")
}

# ---- methods --------------------------------------------------------------------------------
# Each returns list(pred, seconds, seconds_fit, and any of cost, gamma, delta, epsilon,
# iterations, stop, cv, extra).
run_tkl <- function(S) {
  y <- fit_response(S)
  # epsilon only matters for regression; tkl() and kernel_svm() ignore it for classes
  tu <- tune_tkl(S)
  b <- tu$best
  t1 <- clock()
  fit <- tkl(S$x, y, scale_response = FALSE, degree = 1, cost = b$cost, delta = b$delta, epsilon = epsilon, tol = tkl_tol,
             maxit = tkl_maxit, baseline = FALSE, threads = threads)
  t2 <- clock()
  tr <- fit$trace
  alpha <- sum(tr$seconds_alpha) + fit$seconds_first
  pstep <- sum(tr$seconds_p) + fit$seconds_start
  list(pred = from_fit_scale(S, predict(fit, S$xt)), seconds = tu$seconds + t2 - t1,
       seconds_fit = t2 - t1, cost = b$cost, delta = b$delta,
       epsilon = if (is_regression(S)) epsilon,
       iterations = fit$iterations, stop = fit$stop, cv = tu$cv,
       extra = sprintf("cost %s%s, delta %s; final fit (P-step %s): alpha-steps %.2f s, P-steps %.2f s, %d SVM solves, %d SV",
                       place(b$cost, G$tkl_cost), if (tu$extended) " (grid extended)" else "",
                       place(b$delta, G$tkl_delta), fit$algorithm, alpha, pstep,
                       1L + sum(tr$solves), fit$svm$tot.nSV))
}

# tkl's cost and delta as chosen by kl_tune() for a split, shared by tkl and tkl_sel (a rerun
# of tkl_sel alone tunes again, with the same seed, so the same choice).
tuned <- new.env()
tune_tkl <- function(S) {
  key <- S$key
  if (!is.null(tuned[[key]])) return(tuned[[key]])
  set.seed(seed_of(S$name, "split", S$split, "tkl-tune"))
  t0 <- clock()
  tu <- kl_tune(tkl, S$x, fit_response(S), scale_response = FALSE, grid = list(cost = G$tkl_cost, delta = G$tkl_delta),
                folds = folds, refit = FALSE, degree = 1, epsilon = epsilon, tol = tkl_tol,
                maxit = tkl_maxit, baseline = FALSE, threads = threads)
  tuned[[key]] <- list(best = tu$best, cv = min(tu$results$mean), seconds = clock() - t0,
                       extended = !is.null(tu$extension))
  tuned[[key]]
}

# tkl() as a user gets it with its defaults: cost and delta as for tkl, and the final fit with
# baseline = TRUE, which holds out a fifth of the rows, compares the learned kernel there with
# a Gaussian SVM tuned on the rest, and refits the better one on all rows.
run_tkl_sel <- function(S) {
  y <- fit_response(S)
  tu <- tune_tkl(S)
  b <- tu$best
  set.seed(seed_of(S$name, "split", S$split, "tkl_sel-holdout"))
  t1 <- clock()
  fit <- tkl(S$x, y, scale_response = FALSE, degree = 1, cost = b$cost, delta = b$delta, epsilon = epsilon, tol = tkl_tol,
             maxit = tkl_maxit, baseline = TRUE, threads = threads)
  t2 <- clock()
  sel <- fit$selection
  list(pred = from_fit_scale(S, predict(fit, S$xt)), seconds = tu$seconds + t2 - t1,
       seconds_fit = t2 - t1, cost = b$cost, delta = b$delta,
       gamma = if (identical(sel$choice, "baseline")) sel$baseline$gamma,
       epsilon = if (is_regression(S)) epsilon, iterations = fit$iterations, stop = fit$stop,
       cv = tu$cv,
       extra = sprintf("P-step %s; choice %s (%s on %d rows): error learned %s, Gaussian %s%s",
                       fit$algorithm, sel$choice,
                       if (identical(sel$method, "holdout")) "held out" else "5-fold CV",
                       as.integer(sel$validation),
                       format(signif(sel$learned_error, 4)), format(signif(sel$baseline_error, 4)),
                       if (!identical(sel$choice, "baseline")) ""
                       else if (identical(sel$baseline$loss, "least squares"))
                         sprintf(" (least-squares SVM: gamma %s, lambda %s per row)",
                                 format(signif(sel$baseline$gamma, 3)),
                                 format(signif(sel$baseline$lambda, 3)))
                       else sprintf(" (gamma %s, cost %s)", format(signif(sel$baseline$gamma, 3)),
                                    format(signif(sel$baseline$cost, 3)))))
}

run_svm <- function(S) {
  y <- fit_response(S)
  gam <- G$svm_gamma_d / ncol(S$x)
  t0 <- clock()
  tu <- kl_tune(kernel_svm, S$x, y, scale_response = FALSE, grid = list(cost = G$svm_cost, gamma = gam), folds = folds,
                refit = FALSE, epsilon = epsilon, threads = threads)
  b <- tu$best
  t1 <- clock()
  fit <- kernel_svm(S$x, y, scale_response = FALSE, cost = b$cost, gamma = b$gamma, epsilon = epsilon, threads = threads)
  t2 <- clock()
  list(pred = from_fit_scale(S, predict(fit, S$xt)), seconds = t2 - t0, seconds_fit = t2 - t1,
       cost = b$cost, gamma = b$gamma, epsilon = if (is_regression(S)) epsilon,
       cv = min(tu$results$mean),
       extra = sprintf("cost %s, gamma %s (%s / d); %d SV", place(b$cost, G$svm_cost),
                       place(b$gamma, gam), format(signif(b$gamma * ncol(S$x), 3)), fit$tot.nSV))
}

# [0, 1] scaling with the training range (constant columns map to 0), as kernel_svm does.
unit_scaler <- function(x) {
  lo <- apply(x, 2L, min)
  span <- apply(x, 2L, max) - lo
  span[span <= 0] <- Inf
  function(z) sweep(sweep(z, 2L, lo, "-"), 2L, span, "/")
}

run_e1071 <- function(S) {
  if (!requireNamespace("e1071", quietly = TRUE)) stop("the e1071 package is not installed")
  sc <- unit_scaler(S$x)
  x <- sc(S$x)
  y <- fit_response(S)
  gam <- G$svm_gamma_d / ncol(S$x)
  type <- if (is_regression(S)) "eps-regression" else "C-classification"
  t0 <- clock()
  tu <- e1071::tune.svm(x, y, gamma = gam, cost = G$svm_cost, kernel = "radial", type = type,
                        epsilon = epsilon, scale = FALSE,
                        tunecontrol = e1071::tune.control(sampling = "cross", cross = folds,
                                                          best.model = FALSE))
  b <- tu$best.parameters
  t1 <- clock()
  fit <- e1071::svm(x, y, kernel = "radial", type = type, gamma = b$gamma, cost = b$cost,
                    epsilon = epsilon, scale = FALSE)
  t2 <- clock()
  list(pred = from_fit_scale(S, predict(fit, sc(S$xt))), seconds = t2 - t0,
       seconds_fit = t2 - t1, cost = b$cost, gamma = b$gamma,
       epsilon = if (is_regression(S)) epsilon, cv = tu$best.performance,
       extra = sprintf("cost %s, gamma %s (%s / d); %d SV", place(b$cost, G$svm_cost),
                       place(b$gamma, gam), format(signif(b$gamma * ncol(S$x), 3)), fit$tot.nSV))
}

run_ranger <- function(S, seed) {
  if (!requireNamespace("ranger", quietly = TRUE)) stop("the ranger package is not installed")
  t0 <- clock()
  fit <- ranger::ranger(x = S$x, y = S$y, num.trees = 500, num.threads = threads, seed = seed)
  t1 <- clock()
  pred <- predict(fit, S$xt, num.threads = threads)$predictions
  list(pred = pred, seconds = t1 - t0, seconds_fit = t1 - t0,
       cv = fit$prediction.error,
       extra = sprintf("500 trees, mtry %d; cv = out-of-bag error", fit$mtry))
}

run_glmnet <- function(S) {
  if (!requireNamespace("glmnet", quietly = TRUE)) stop("the glmnet package is not installed")
  foldid <- sample(rep_len(seq_len(folds), nrow(S$x)))
  t0 <- clock()
  cvf <- glmnet::cv.glmnet(S$x, S$y, alpha = 1, foldid = foldid)
  t1 <- clock()
  pred <- as.numeric(predict(cvf, S$xt, s = "lambda.min"))
  nz <- sum(as.numeric(stats::coef(cvf, s = "lambda.min"))[-1L] != 0)
  list(pred = pred, seconds = t1 - t0, seconds_fit = NA_real_,
       cv = min(cvf$cvm),
       extra = sprintf("lasso (alpha 1), lambda.min %s (%d/%d on the path), %d nonzero coefficients",
                       format(signif(cvf$lambda.min, 4)), which(cvf$lambda == cvf$lambda.min),
                       length(cvf$lambda), nz))
}

# ---- classification and regression ----------------------------------------------------------
run_table <- function(p) {
  file <- out_file(p)
  columns <- table_columns(p)
  sets <- pick_sets(p)
  methods <- if (nzchar(opt$methods)) comma_list(opt$methods) else part_methods[[p]]
  bad <- setdiff(methods, part_methods[[p]])
  if (length(bad))
    stop(sprintf("unknown %s method(s): %s; known: %s", p, paste(bad, collapse = ", "),
                 paste(part_methods[[p]], collapse = ", ")), call. = FALSE)
  dir.create(opt$out_dir, showWarnings = FALSE, recursive = TRUE)
  rows <- read_rows(file, columns, repair = TRUE)
  check_protocol(rows, file, protocol)
  done <- if (is.null(rows)) character() else {
    ok <- if (retry_failed) is.finite(rows[[score_col[[p]]]]) else rep(TRUE, nrow(rows))
    paste(rows$dataset, rows$split, rows$method)[ok]
  }
  cat(sprintf("tkl_tables %s: %s; splits %s, datasets %s, methods %s, threads %d, %s; %d row(s) there\n",
              p, file, paste(unique(range(splits)), collapse = "-"), paste(sets, collapse = ","),
              paste(methods, collapse = ","), threads, protocol, length(done)))
  method_id <- c(tkl = 1L, svm = 2L, e1071 = 3L, ranger = 4L, glmnet = 5L, tkl_sel = 6L)
  cache <- list()
  t_start <- clock()
  for (s in splits) {
    for (ds in sets) {
      todo <- methods[!paste(ds, s, methods) %in% done]
      if (!length(todo)) next
      if (is.null(cache[[ds]])) cache[[ds]] <- load_set(ds) %||% FALSE
      if (isFALSE(cache[[ds]])) next
      S <- make_split(cache[[ds]], ds, s)
      for (m in todo) {
        seed <- seed_of(ds, "split", s, m)
        set.seed(seed)
        warns <- character()
        res <- tryCatch(withCallingHandlers(
          switch(m, tkl = run_tkl(S), tkl_sel = run_tkl_sel(S), svm = run_svm(S),
                 e1071 = run_e1071(S),
                 ranger = run_ranger(S, seed), glmnet = run_glmnet(S)),
          warning = function(w) {
            warns <<- c(warns, conditionMessage(w))
            invokeRestart("muffleWarning")
          }),
          error = function(e) list(pred = NULL, extra = paste("FAILED:", conditionMessage(e))))
        err <- if (is.null(res$pred)) NA_real_ else score(S, res$pred)
        extra <- res$extra
        if (S$n_all_train > nrow(S$x))
          extra <- sprintf("%s; training rows subsampled from %d", extra, S$n_all_train)
        if (length(warns))
          extra <- sprintf("%s; %d warning(s): %s", extra, length(warns),
                           substr(paste(unique(warns), collapse = " | "), 1L, 300L))
        row <- c(list(dataset = ds, split = s, method = m, n_train = nrow(S$x),
                      n_test = nrow(S$xt), d = ncol(S$x), extra = extra, protocol = protocol,
                      date = format(Sys.time(), "%Y-%m-%d %H:%M:%S")),
                 res[intersect(names(res), c("seconds", "seconds_fit", "cost", "gamma", "delta",
                                             "epsilon", "iterations", "stop", "cv"))])
        row[[score_col[[p]]]] <- err
        for (nm in c("seconds", "seconds_fit")) if (!is.null(row[[nm]])) row[[nm]] <- round(row[[nm]], 3)
        append_row(file, columns, row)
        done <- c(done, paste(ds, s, m))
        cat(sprintf("%-13s split %2d %-6s %s %-9s %8.1f s  %s\n", ds, s, m, score_col[[p]],
                    if (is.na(err)) "NA" else sprintf("%.5g", err),
                    if (is.null(res$seconds)) NA_real_ else res$seconds, extra))
        flush.console()
      }
    }
  }
  cat(sprintf("done in %.1f s\n\n", clock() - t_start))
  summarise_table(p)
}

# ---- scaling --------------------------------------------------------------------------------
run_scaling <- function() {
  file <- out_file("scaling")
  sizes <- suppressWarnings(as.integer(comma_list(opt$sizes)))
  if (!length(sizes) || anyNA(sizes) || any(sizes < 10L))
    stop(sprintf("'sizes' must be a comma list of whole numbers >= 10 (got '%s')", opt$sizes),
         call. = FALSE)
  cost <- positive("scaling_cost")
  delta <- suppressWarnings(as.numeric(opt$scaling_delta))
  if (is.na(delta) || delta < 0) stop("'scaling_delta' must be a number >= 0", call. = FALSE)
  proto <- sprintf("cost %s; delta %s; epsilon %s; tol %s; maxit %d; threads %d", format(cost),
                   format(delta), format(epsilon), format(tkl_tol), tkl_maxit, threads)
  dir.create(opt$out_dir, showWarnings = FALSE, recursive = TRUE)
  rows <- read_rows(file, scaling_columns, repair = TRUE)
  check_protocol(rows, file, proto)
  done <- if (is.null(rows)) character() else {
    ok <- if (retry_failed) is.finite(rows$seconds) else rep(TRUE, nrow(rows))
    paste(rows$n, rows$rep)[ok]
  }
  if (nzchar(opt$datasets) && !identical(tolower(opt$datasets), "ccpp"))
    message("the scaling study uses ccpp only; 'datasets' is ignored")
  D <- load_set("ccpp")
  if (is.null(D)) return(invisible())
  N <- nrow(D$x)
  if (any(sizes > N)) {
    message(sprintf("ccpp has %d rows; sizes above that are left out", N))
    sizes <- sizes[sizes <= N]
  }
  sizes <- sort(unique(sizes))
  cat(sprintf("tkl_tables scaling: %s; sizes %s, repetitions %s, %s; %d row(s) there\n", file,
              paste(sizes, collapse = ","), paste(unique(range(splits)), collapse = "-"), proto,
              length(done)))
  for (r in splits) {
    for (n in sizes) {
      if (paste(n, r) %in% done) next
      set.seed(seed_of("ccpp", "scaling", n, r))
      idx <- if (n >= N) seq_len(N) else sample.int(N, n)
      x <- D$x[idx, , drop = FALSE]
      y <- (D$y[idx] - mean(D$y[idx])) / stats::sd(D$y[idx])
      invisible(gc(FALSE))
      warns <- character()
      t0 <- clock()
      fit <- tryCatch(withCallingHandlers(
        tkl(x, y, scale_response = FALSE, degree = 1, cost = cost, delta = delta, epsilon = epsilon, tol = tkl_tol,
            maxit = tkl_maxit, baseline = FALSE, threads = threads),
        warning = function(w) {
          warns <<- c(warns, conditionMessage(w))
          invokeRestart("muffleWarning")
        }),
        error = function(e) conditionMessage(e))
      secs <- clock() - t0
      row <- list(dataset = "ccpp", n = n, rep = r, cost = cost, delta = delta,
                  epsilon = epsilon, threads = threads, protocol = proto,
                  date = format(Sys.time(), "%Y-%m-%d %H:%M:%S"))
      if (is.character(fit)) {
        row$stop <- paste("FAILED:", fit)
        cat(sprintf("n %5d rep %d FAILED: %s\n", n, r, fit))
      } else {
        tr <- fit$trace
        last <- tr[nrow(tr), ]
        row <- c(row, list(
          seconds = round(secs, 3),
          seconds_alpha = round(sum(tr$seconds_alpha) + fit$seconds_first, 3),
          seconds_p = round(sum(tr$seconds_p) + fit$seconds_start, 3),
          seconds_start = round(fit$seconds_start, 3), seconds_first = round(fit$seconds_first, 3),
          iterations = fit$iterations, solves = 1L + sum(tr$solves),
          stop = if (length(warns)) paste0(fit$stop, "; warning: ", substr(paste(unique(warns), collapse = " | "), 1L, 200L)) else fit$stop,
          rel_gap = signif(last$gap / max(abs(last$objective), 1e-12), 4),
          n_sv = fit$svm$tot.nSV))
        cat(sprintf("n %5d rep %d: %8.2f s (alpha-steps %.2f s, P-steps %.2f s), %d iterations, %d solves, stop %s\n",
                    n, r, secs, row$seconds_alpha, row$seconds_p, row$iterations, row$solves,
                    row$stop))
      }
      append_row(file, scaling_columns, row)
      done <- c(done, paste(n, r))
      rm(fit)
      flush.console()
    }
  }
  cat("\n")
  summarise_scaling()
}

# ---- summary --------------------------------------------------------------------------------
mean_se <- function(v, digits = 4) {
  v <- v[is.finite(v)]
  if (!length(v)) return("")
  if (length(v) == 1L) return(formatC(v, digits = digits, format = "g"))
  sprintf("%s (%s)", formatC(mean(v), digits = digits, format = "g"),
          formatC(stats::sd(v) / sqrt(length(v)), digits = 2, format = "g"))
}

# The last finished row of every (dataset, split, method).
latest <- function(rows, score) {
  ok <- rows[is.finite(rows[[score]]), , drop = FALSE]
  ok[!duplicated(paste(ok$dataset, ok$split, ok$method), fromLast = TRUE), , drop = FALSE]
}

summarise_table <- function(p) {
  file <- out_file(p)
  rows <- read_rows(file, table_columns(p))
  if (is.null(rows)) {
    cat(sprintf("%s: no results in %s\n\n", p, file))
    return(invisible())
  }
  sc <- score_col[[p]]
  ok <- latest(rows, sc)
  sets <- c(intersect(known_sets(p), unique(rows$dataset)), setdiff(unique(rows$dataset), known_sets(p)))
  meth <- intersect(part_methods[[p]], unique(rows$method))
  per <- function(f) {
    tab <- data.frame(dataset = sets, stringsAsFactors = FALSE)
    for (m in meth)
      tab[[m]] <- vapply(sets, function(ds) f(ok[ok$dataset == ds & ok$method == m, , drop = FALSE]), "")
    tab
  }
  op <- options(width = 250)
  on.exit(options(op))
  cat(sprintf("%s (%s; %s): mean test %s (standard error) over splits\n", p, file,
              paste(unique(rows$protocol), collapse = " | "),
              if (p == "classification") "accuracy" else "MSE"))
  tab <- per(function(v) mean_se(v[[sc]]))
  tab$splits <- vapply(sets, function(ds)
    paste(vapply(meth, function(m) sum(ok$dataset == ds & ok$method == m), 0L), collapse = "/"), "")
  print(tab, row.names = FALSE, right = TRUE)
  cat(sprintf("splits: finished splits per method (%s)\n", paste(meth, collapse = "/")))
  cat("\nmean seconds per split, tuning + final fit:\n")
  print(per(function(v) mean_se(v$seconds, 3)), row.names = FALSE, right = TRUE)
  if (all(c("tkl", "svm") %in% meth)) {
    cat("\ntkl's final fit against the Gaussian SVM's (means over splits):\n")
    ft <- data.frame(dataset = sets, stringsAsFactors = FALSE)
    pick <- function(ds, m) ok[ok$dataset == ds & ok$method == m, , drop = FALSE]
    ft$n_train <- vapply(sets, function(ds) mean_se(pick(ds, "tkl")$n_train), "")
    ft$tkl_fit_s <- vapply(sets, function(ds) mean_se(pick(ds, "tkl")$seconds_fit, 3), "")
    ft$svm_fit_s <- vapply(sets, function(ds) mean_se(pick(ds, "svm")$seconds_fit, 3), "")
    ft$tkl_iterations <- vapply(sets, function(ds) mean_se(pick(ds, "tkl")$iterations, 3), "")
    ft$tkl_stop <- vapply(sets, function(ds) {
      st <- table(pick(ds, "tkl")$stop)
      paste(sprintf("%s %d", names(st), as.integer(st)), collapse = ", ")
    }, "")
    ft$tkl_cost_delta <- vapply(sets, function(ds) {
      v <- pick(ds, "tkl")
      st <- table(sprintf("%s/%s", as.character(v$cost), as.character(v$delta)))
      paste(sprintf("%s x%d", names(st), as.integer(st)), collapse = " ")
    }, "")
    print(ft, row.names = FALSE, right = TRUE)
  }
  failed <- rows[!is.finite(rows[[sc]]), , drop = FALSE]
  failed <- failed[!paste(failed$dataset, failed$split, failed$method) %in%
                     paste(ok$dataset, ok$split, ok$method), , drop = FALSE]
  if (nrow(failed)) {
    cat(sprintf("\n%d failed item(s) (run again with retry_failed=TRUE):\n", nrow(failed)))
    cat(sprintf("  %s split %d %s: %s\n", failed$dataset, as.integer(failed$split),
                failed$method, substr(failed$extra, 1L, 200L)), sep = "")
  }
  cat("\n")
  invisible(tab)
}

summarise_scaling <- function() {
  file <- out_file("scaling")
  rows <- read_rows(file, scaling_columns)
  if (is.null(rows)) {
    cat(sprintf("scaling: no results in %s\n\n", file))
    return(invisible())
  }
  ok <- rows[is.finite(rows$seconds), , drop = FALSE]
  ok <- ok[!duplicated(paste(ok$n, ok$rep), fromLast = TRUE), , drop = FALSE]
  cat(sprintf("scaling (%s; %s): tkl() on CCPP, means over repetitions\n", file,
              paste(unique(rows$protocol), collapse = " | ")))
  if (!nrow(ok)) {
    cat("no finished rows\n\n")
    return(invisible())
  }
  ns <- sort(unique(ok$n))
  avg <- function(col) vapply(ns, function(n) mean(ok[[col]][ok$n == n]), 0)
  tab <- data.frame(n = ns, reps = vapply(ns, function(n) sum(ok$n == n), 0L),
                    seconds = avg("seconds"), alpha_steps = avg("seconds_alpha"),
                    p_steps = avg("seconds_p"), iterations = avg("iterations"),
                    solves = avg("solves"), n_sv = avg("n_sv"))
  print(format(tab, digits = 4), row.names = FALSE)
  if (length(ns) >= 2L) {
    expo <- function(col) {
      keep <- ok[[col]] > 0
      if (sum(keep) < 2L || length(unique(ok$n[keep])) < 2L) return(NA_real_)
      unname(stats::coef(stats::lm(log(ok[[col]][keep]) ~ log(ok$n[keep])))[2L])
    }
    cat(sprintf("\nfitted exponent b of time ~ n^b (least squares on log-log, %d rows): total %.2f, alpha-steps %.2f, P-steps %.2f\n",
                nrow(ok), expo("seconds"), expo("seconds_alpha"), expo("seconds_p")))
  }
  failed <- rows[!is.finite(rows$seconds), , drop = FALSE]
  if (nrow(failed))
    cat(sprintf("failed: n %d rep %d: %s\n", as.integer(failed$n), as.integer(failed$rep),
                substr(failed$stop, 1L, 200L)), sep = "")
  cat("\n")
  invisible(tab)
}

# ---- main -----------------------------------------------------------------------------------
switch(part,
       classification = run_table("classification"),
       regression = run_table("regression"),
       scaling = run_scaling(),
       summary = {
         summarise_table("classification")
         summarise_table("regression")
         summarise_scaling()
       })
invisible()
