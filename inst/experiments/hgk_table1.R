# Table 1 of Steinwart, Thomann and Schmid (2016), "Learning with hierarchical Gaussian kernels":
# the mean least-squares test error of hgk() against the paper's SVM baseline (the Gaussian
# least-squares SVM), kernel_svm and ranger, on random train / test splits of the 14 sets of the
# table that the data directory holds (seismic is not there).
#
#   KERNLEARN_DATA_DIR=/path/to/data Rscript inst/experiments/hgk_table1.R [name=value ...]
#   Rscript inst/experiments/hgk_table1.R --summary [out=FILE]
#
# Options, as name=value (or --name=value) arguments, or environment variables HGK_<NAME>
# (HGK_OUT, HGK_N_TRAIN, ...); an argument wins over the variable:
#   data_dir    the data directory (default: KERNLEARN_DATA_DIR, else kl_dataset()'s default)
#   out         the results CSV (default inst/extdata/hgk_table1.csv of the package source
#               directory, found from this script's path, else of the working directory)
#   n_train     training rows per split (2000)
#   n_test      test rows per split, at most the rows left (5000)
#   splits      a count ("3": splits 1..3, the default) or a range ("4-6", to add splits)
#   datasets    comma list (default all 14: bank, cadata, cod, covtype, cpusmall, cycle, higgs,
#               letter, magic, pendigits, satimage, shuttle, thyroid, updrs)
#   methods     comma list of hgk, hgk_auto, lssvm, svm, ranger, svm_redraw (default: all but
#               hgk_auto and svm_redraw)
#   threads     threads of every learner (2)
#   candidates  hgk's architectures, node counts, 0 = depth 1 (0,4,6,8,10,12,14,16)
#   maxit       hgk_control(maxit =) (30, hgk_control()'s default)
#   precision   hgk_control(precision =): double (the default here, in which the saved tables
#               were measured) or single (hgk_control()'s default)
#   hgk_final   hgk(final =): average (the paper's; the default here) or refit (the package's
#               default)
#   lssvm_final average (the 5 fold models of the chosen grid point, as liquidSVM and the
#               paper do; the default) or refit (one fit on all training rows)
#   grid        points per axis of the LS-SVM (lambda, gamma) grid (10: the paper's 10 x 10)
#   svm_grid    the same for kernel_svm (default: grid). If the 10 x 10 grid is too slow,
#               a coarser one (e.g. 5: 5 x 5 over the same ranges) is recorded in column grid
#   svm_metric  kernel_svm's CV criterion: ls (default: the paper's least-squares error of the
#               clipped decision values for two classes, of the clipped fitted values for
#               regression; more classes always use the misclassification rate) or error
#               (misclassification rate / mse, kl_tune's fast warm-started path)
#   retry_failed  TRUE to run again items recorded with a missing error (FALSE)
#   summary     TRUE (or --summary): print the table of the results in `out` and stop
# Quick test:  ... hgk_table1.R out=/tmp/t.csv n_train=300 n_test=300 splits=1 \
#                  datasets=cycle,satimage candidates=0,4 maxit=5 grid=5
#
# Protocol per dataset and split s. The rows of the set (training and test files pooled) are
# permuted with a seed made from the dataset name and s; the first n_train rows train, the next
# n_test (at most the rest) test, so every method, and every rerun, sees the same rows.
# Inputs: left as read; every learner scales them to [0, 1] with the training range itself.
# Targets: a regression response scaled to [-1, 1] with the training range (test rows with the
# same map, so they can fall outside); classes +-1: one output for two classes (+1 = the second
# level), one-vs-all outputs for more. Error (the paper's): the mean squared difference between
# these targets and the decision values clipped to [-1, 1], over the test rows (and outputs).
#   hgk     hgk(x, y) with the paper's protocol: the architecture (depth 1, depth 2 with 4..16
#           nodes) by 5-fold CV on its LS error; final = hgk_final. Decisions:
#           predict(type = "decision") (the [-1, 1] scale for regression; the fit gets the
#           scaled response, which hgk maps to [-1, 1] again: the identity).
#   hgk_auto  (classification sets only; not run unless asked) hgk() as a classification user
#           runs it, scored like svm below: two classes, loss = "auto" (the least-squares SVM
#           or the C-SVM on each candidate kernel, whichever misclassifies fewer held-out rows)
#           and the decision value of the chosen loss; more classes, the C-SVM on the learned
#           kernel with probabilities (loss = "hinge", probability = TRUE) and 2 p - 1 per
#           class. The final predictor is hgk()'s default, final = "refit" (a C-SVM there gets
#           its width and cost by 5-fold CV of its misclassification rate on the learned
#           kernel). Architectures and maxit as for hgk.
#   lssvm   the paper's SVM baseline, a Gaussian least-squares SVM: kernel_ridge with 5-fold CV
#           (kl_tune, the LS error above as the criterion) over the authors' grid (liquidSVM):
#           width t geometric from 0.2 n^(-1/d) to 5 (1 + 5/n)^d for exp(-||x - z||^2 / t^2),
#           i.e. gamma = 1 / t^2, and lambda geometric from 0.001/n to 0.1, n = the rows a
#           fold model is fitted on. kernel_ridge solves (K + lambda' I) alpha = y - b, so
#           lambda' = n lambda (the paper's c = n lambda). kernel_ridge has an unpenalised
#           bias b, liquidSVM's LS-SVM has none. A CV fold whose training part lacks a rare
#           class gives kernel_ridge a factor with an empty level, which it drops (with a
#           warning), and so one decision column fewer; the missing column is filled with -1
#           ("not that class") so that the fold can be scored.
#   svm     kernel_svm (hinge loss; eps-regression, epsilon 0.1 on the [-1, 1] scale) over
#           the same grid with cost = 1 / (2 n lambda), 5-fold CV by svm_metric, refitted on
#           all training rows (cost rescaled to their count). Decisions: two classes, the SVM
#           decision value (positive = the second level, kernel_svm's convention, the +1
#           target); more classes, 2 p - 1 per class from its Platt / pairwise-coupling
#           probabilities (probability = TRUE in the refit only), since its raw decisions are
#           pairwise; regression, the fitted value.
#   svm_redraw  (not run unless asked) svm again with another seed, so on another draw of the
#           folds: how far two tunings of the one kernel fall apart, the noise floor of the
#           comparison with svm.
#   ranger  500 trees, default mtry; regression forests on the scaled response; probability
#           forests for classes, decision 2 p - 1 (two classes: that of the second level).
# Dataset preparation (kl_dataset() names; see kl_datasets()):
#   bank = bank32nh (regression, target rej); cadata (medianHouseValue); cod = cod-rna
#   (59535 + 271617 rows pooled; labels -1 / 1); covtype = the full UCI covtype, class 2
#   (Lodgepole pine, 283301 rows) against the other six (297711 rows), as LIBSVM's
#   covtype.binary; cpusmall (usr); cycle = ccpp (PE); higgs = the 7000 + 500-row subset
#   (labels 0 / 1); letter (26 classes), pendigits (10), satimage (6), thyroid (3), pooled
#   where there are train and test files; shuttle (7 classes) without its first column, a
#   time stamp; magic (g / h); updrs = parkinsons, target motor_UPDRS, subject number and
#   total_UPDRS left out of the inputs (19 columns: age, sex, test_time and 16 voice
#   measures). Multiclass: the outputs are the classes present among the training rows; test
#   rows of a class absent from them (only shuttle's rare classes 2, 6, 7 in practice) are
#   dropped, which column n_test shows. The LS errors of multiclass sets are not comparable
#   with the paper's numbers (its label encoding was lost); compare orderings there.
#
# Columns of `out`: dataset, split, method, error, seconds (elapsed, tuning + fit + prediction),
# n_train, n_test, d, task (regression / binary / multiclass), outputs (target columns), grid
# (the grid size, or hgk's candidates and maxit), extra (hgk: the chosen architecture, final,
# the fold models' gamma / lambda and the CV error of every candidate; lssvm / svm: the chosen
# parameters with their grid index, 1 = the narrowest width (largest gamma) and the smallest
# lambda, "EDGE" at either end, and the best CV value; warnings and failures), date.
#
# Resuming: a row is appended to `out` after every (dataset, split, method), and a restart skips
# the items already there, so a killed run loses at most the item in progress (a line cut short
# by a kill during the write is dropped from the file at the next start). The work runs
# split-major: split 1 of every dataset, then split 2, ... Item seeds depend on the dataset,
# split and method only, so a resumed run gives the rows an uninterrupted one would (checked:
# identical errors). A failed item is recorded with error NA and its message, and skipped on
# restart unless retry_failed=TRUE (the summary then uses the later row). One file holds one
# protocol: a file with rows of another n_train is refused; keep other settings (grid,
# candidates, ...) in other files too.
suppressPackageStartupMessages(library(kernlearn))
`%||%` <- function(a, b) if (is.null(a)) b else a

all_sets <- c("bank", "cadata", "cod", "covtype", "cpusmall", "cycle", "higgs", "letter",
              "magic", "pendigits", "satimage", "shuttle", "thyroid", "updrs")
all_methods <- c("hgk", "hgk_auto", "lssvm", "svm", "ranger", "svm_redraw")
default_methods <- c("hgk", "lssvm", "svm", "ranger")
set_alias <- c("cod-rna" = "cod", bank32nh = "bank", ccpp = "cycle", parkinsons = "updrs",
               "parkinsons_telemonitoring" = "updrs")

# ---- options ------------------------------------------------------------------------------
script_file <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])
pkg_dir <- if (!is.na(script_file) &&
               basename(dirname(normalizePath(script_file, mustWork = FALSE))) == "experiments")
  dirname(dirname(dirname(normalizePath(script_file)))) else getwd()

opt <- list(data_dir = "", out = file.path(pkg_dir, "inst", "extdata", "hgk_table1.csv"),
            n_train = "2000", n_test = "5000", splits = "3", datasets = paste(all_sets, collapse = ","),
            methods = paste(default_methods, collapse = ","), threads = "2",
            candidates = "0,4,6,8,10,12,14,16", maxit = "30", precision = "double",
            hgk_final = "average",
            lssvm_final = "average", grid = "10", svm_grid = "", svm_metric = "ls",
            retry_failed = "FALSE", summary = "FALSE")
for (nm in names(opt)) {
  v <- Sys.getenv(paste0("HGK_", toupper(nm)), "")
  if (nzchar(v)) opt[[nm]] <- v
}
if (!nzchar(opt$data_dir)) opt$data_dir <- Sys.getenv("KERNLEARN_DATA_DIR", "")
for (a in commandArgs(trailingOnly = TRUE)) {
  a <- sub("^--", "", a)
  if (a == "summary") a <- "summary=TRUE"
  kv <- regmatches(a, regexpr("=", a), invert = TRUE)[[1]]
  if (length(kv) != 2L || !(kv[1] %in% names(opt)))
    stop("unknown argument '", a, "'; options: ", paste(names(opt), collapse = ", "),
         call. = FALSE)
  opt[[kv[1]]] <- kv[2]
}
int_opt <- function(nm) {
  v <- suppressWarnings(as.integer(opt[[nm]]))
  if (is.na(v) || v < 1L) stop(sprintf("'%s' must be a whole number >= 1 (got '%s')", nm, opt[[nm]]),
                               call. = FALSE)
  v
}
csv_opt <- function(nm) trimws(strsplit(opt[[nm]], ",", fixed = TRUE)[[1]])
n_train <- int_opt("n_train"); n_test <- int_opt("n_test"); threads <- int_opt("threads")
grid_n <- int_opt("grid")
svm_grid_n <- if (nzchar(opt$svm_grid)) int_opt("svm_grid") else grid_n
maxit <- as.integer(opt$maxit)
if (!opt$precision %in% c("double", "single"))
  stop("'precision' must be double or single", call. = FALSE)
prec_note <- if (opt$precision == "single") ", single precision" else ""
candidates <- as.numeric(csv_opt("candidates"))
if (anyNA(candidates) || is.na(maxit)) stop("'candidates' and 'maxit' must be numbers", call. = FALSE)
sp <- as.integer(strsplit(opt$splits, "-", fixed = TRUE)[[1]])
splits <- if (length(sp) == 2L) seq(sp[1], sp[2]) else seq_len(sp[1])
if (anyNA(splits) || !length(splits)) stop("'splits' must be a count or a range such as 4-6", call. = FALSE)
datasets <- csv_opt("datasets")
datasets <- ifelse(datasets %in% names(set_alias), set_alias[datasets], datasets)
if (!all(datasets %in% all_sets))
  stop("unknown dataset(s): ", paste(setdiff(datasets, all_sets), collapse = ", "), call. = FALSE)
methods <- csv_opt("methods")
if (!all(methods %in% all_methods))
  stop("unknown method(s): ", paste(setdiff(methods, all_methods), collapse = ", "), call. = FALSE)
for (nm in c("hgk_final", "lssvm_final"))
  if (!opt[[nm]] %in% c("average", "refit")) stop(sprintf("'%s' must be average or refit", nm), call. = FALSE)
if (!opt$svm_metric %in% c("ls", "error")) stop("'svm_metric' must be ls or error", call. = FALSE)
retry_failed <- as.logical(opt$retry_failed)
options(kernlearn.threads = threads)

# The paper's Table 1 (mean least-squares test error over 30 splits): SVM, HKL, Ours, RF, DNN
# (NOTES.md, section 2).
paper <- data.frame(
  dataset = all_sets,
  svm = c(.2978, .0538, .1575, .5206, .00361, .01048, .9021, .04508, .4007, .00793, .04883,
          .00457, .1750, .05372),
  hkl = c(.2939, .0625, .1734, .6100, .00460, .01215, .8178, .11505, .4282, .02433, .10783,
          .01293, .1637, .17739),
  hgk = c(.2596, .0525, .1309, .3996, .00335, .00984, .8024, .03394, .3900, .00705, .04670,
          .00422, .1538, .00588),
  rf = c(.2687, .0509, .1725, .4878, .00323, .00838, .7770, .05770, .3772, .01266, .05246,
         .00083, .0252, .03047),
  dnn = c(.2931, .0550, .1154, .5027, .00375, .01208, .9162, .04484, .3783, .00789, .05247,
          .00593, .1522, .05306),
  stringsAsFactors = FALSE)

# ---- the results file -----------------------------------------------------------------------
columns <- c("dataset", "split", "method", "error", "seconds", "n_train", "n_test", "d", "task",
             "outputs", "grid", "extra", "date")

# The rows of the results file. A last line cut short by a kill (or any line with the wrong
# number of fields) is left out with a warning, and removed from the file when `repair`. A file
# with other columns is an error, unless `strict = FALSE` (the summary of an older file).
read_results <- function(file, repair = FALSE, strict = TRUE) {
  empty <- as.data.frame(setNames(replicate(length(columns), character(), simplify = FALSE), columns),
                         stringsAsFactors = FALSE)
  empty$split <- integer(); empty$error <- numeric(); empty$seconds <- numeric()
  if (!file.exists(file) || file.info(file)$size == 0) return(empty)
  lines <- readLines(file, warn = FALSE)
  if (!length(lines)) return(empty)
  head <- scan(text = lines[1], what = "", sep = ",", quiet = TRUE)
  if (!identical(head, columns) && !strict && all(c("dataset", "split", "method", "error") %in% head))
    return(utils::read.csv(file, stringsAsFactors = FALSE))
  if (!identical(head, columns))
    stop(sprintf("'%s' has other columns (%s) than this script writes; give another out=",
                 file, paste(head, collapse = ",")), call. = FALSE)
  ends_ok <- {
    con <- file(file, "rb"); on.exit(close(con), add = TRUE)
    sz <- file.info(file)$size; seek(con, sz - 1); identical(readBin(con, "raw", 1), charToRaw("\n"))
  }
  nf <- utils::count.fields(textConnection(lines), sep = ",", quote = "\"", comment.char = "",
                            blank.lines.skip = FALSE)
  bad <- which(is.na(nf) | nf != length(columns))
  if (!ends_ok) bad <- union(bad, length(lines))
  bad <- setdiff(bad, 1L)
  if (length(bad)) {
    warning(sprintf("'%s': %d malformed line(s) ignored (%s)%s", file, length(bad),
                    paste(bad, collapse = ", "), if (repair) " and removed" else ""), call. = FALSE)
    lines <- lines[-bad]
    if (repair) {
      tmp <- paste0(file, ".tmp")
      writeLines(lines, tmp)
      file.rename(tmp, file)
    }
  }
  if (length(lines) < 2L) return(empty)
  utils::read.csv(text = paste(lines, collapse = "\n"), stringsAsFactors = FALSE,
                  colClasses = c(split = "integer", error = "numeric", seconds = "numeric"))
}

# One row, written with a single cat() call so that a kill cannot leave half a line behind
# (short of one in the middle of a write system call).
append_row <- function(file, row) {
  q <- function(v) if (is.character(v)) paste0("\"", gsub("\"", "\"\"", gsub("[\r\n]+", " ", v)), "\"") else
    ifelse(is.na(v), "NA", format(v, digits = 8, scientific = FALSE, trim = TRUE))
  line <- paste(vapply(row[columns], q, ""), collapse = ",")
  if (!file.exists(file) || file.info(file)$size == 0)
    cat(paste(paste0("\"", columns, "\""), collapse = ","), "\n", sep = "", file = file)
  cat(line, "\n", sep = "", file = file, append = TRUE)
}

# ---- summary ----------------------------------------------------------------------------------
print_summary <- function(file) {
  r <- read_results(file, strict = FALSE)
  if (!nrow(r)) { cat("no results in", file, "\n"); return(invisible()) }
  ok <- r[is.finite(r$error), , drop = FALSE]
  failed <- r[!is.finite(r$error), , drop = FALSE]
  sets <- intersect(all_sets, unique(r$dataset))
  meth <- intersect(all_methods, unique(r$method))
  cell <- function(ds, m, f) {
    v <- ok[ok$dataset == ds & ok$method == m, , drop = FALSE]
    v <- v[!duplicated(v$split, fromLast = TRUE), , drop = FALSE]  # a split run twice: the last
    if (!nrow(v)) return(NA_real_)
    f(v)
  }
  tab <- data.frame(dataset = sets, stringsAsFactors = FALSE)
  for (m in meth) tab[[m]] <- vapply(sets, cell, 0, m = m, f = function(v) mean(v$error))
  tab$splits <- vapply(sets, function(ds) {
    n <- vapply(meth, function(m) cell(ds, m, nrow), 0); paste(ifelse(is.na(n), 0, n), collapse = "/")
  }, "")
  # the ratio over the splits that both methods have
  tab$ratio <- vapply(sets, function(ds) {
    a <- ok[ok$dataset == ds & ok$method == "hgk", , drop = FALSE]
    b <- ok[ok$dataset == ds & ok$method == "lssvm", , drop = FALSE]
    a <- a[!duplicated(a$split, fromLast = TRUE), ]; b <- b[!duplicated(b$split, fromLast = TRUE), ]
    common <- intersect(a$split, b$split)
    if (!length(common)) return(NA_real_)
    mean(a$error[match(common, a$split)]) / mean(b$error[match(common, b$split)])
  }, 0)
  # hgk with the package's defaults for the task (hgk_auto for classes where it ran, else hgk)
  # against the tuned Gaussian kernel_svm: at most its mean + one standard error over splits?
  se <- function(e) if (length(e) > 1L) stats::sd(e) / sqrt(length(e)) else NA_real_
  tab$svm_se <- vapply(sets, cell, 0, m = "svm", f = function(v) se(v$error))
  # (a method missing from the file is a column of NA, one value per set)
  col_or_na <- function(m) tab[[m]] %||% rep(NA_real_, nrow(tab))
  tab$defaults <- ifelse(is.finite(col_or_na("hgk_auto")), col_or_na("hgk_auto"), col_or_na("hgk"))
  tab$within_svm_1se <- tab$defaults <= tab[["svm"]] %||% NA_real_ + tab$svm_se
  # the noise floor: the same kernel_svm tuned on another draw of folds, against the first
  if ("svm_redraw" %in% meth)
    tab$redraw_within_1se <- tab$svm_redraw <= tab[["svm"]] %||% NA_real_ + tab$svm_se
  p <- paper[match(sets, paper$dataset), ]
  tab$paper_svm <- p$svm; tab$paper_hgk <- p$hgk; tab$paper_rf <- p$rf
  tab$paper_ratio <- p$hgk / p$svm
  cat(sprintf("Mean least-squares test error per dataset (%s); splits = rows per method (%s)\n",
              file, paste(meth, collapse = "/")))
  cat("lssvm = the paper's SVM baseline (Gaussian LS-SVM); ratio = hgk / lssvm over the splits both have;\n")
  cat("defaults = hgk_auto where it ran (classes), else hgk; within_svm_1se: defaults <= svm + its standard error;\n")
  cat("paper_*: Table 1 (30 splits; SVM, Ours, RF); multiclass numbers are not comparable with the paper's\n\n")
  fmt <- tab
  for (nm in setdiff(names(fmt), c("dataset", "splits", "within_svm_1se", "redraw_within_1se")))
    fmt[[nm]] <- formatC(fmt[[nm]], digits = 4, format = "g")
  op <- options(width = 250); on.exit(options(op)); print(fmt, row.names = FALSE, right = TRUE)
  use <- is.finite(tab$ratio) & tab$dataset != "updrs"
  if (any(use))
    cat(sprintf("\ngeometric mean of hgk / lssvm over %d sets (updrs left out): %.3f; the paper's over the same sets: %.3f\n",
                sum(use), exp(mean(log(tab$ratio[use]))), exp(mean(log(tab$paper_ratio[use])))))
  w <- tab$within_svm_1se[!is.na(tab$within_svm_1se)]
  if (length(w))
    cat(sprintf("hgk with the defaults for the task within kernel_svm + 1 SE on %d of %d sets, below kernel_svm on %d\n",
                sum(w), length(w), sum(tab$defaults < tab[["svm"]], na.rm = TRUE)))
  if (!is.null(tab$redraw_within_1se)) {
    w2 <- tab$redraw_within_1se[!is.na(tab$redraw_within_1se)]
    cat(sprintf("svm_redraw (kernel_svm tuned again on another draw of folds) within kernel_svm + 1 SE on %d of %d sets\n",
                sum(w2), length(w2)))
  }
  secs <- vapply(meth, function(m) mean(ok$seconds[ok$method == m]), 0)
  cat("mean seconds per item:", paste(sprintf("%s %.1f", meth, secs), collapse = ", "), "\n")
  # failures not made good by a later run (retry_failed = TRUE)
  key <- function(v) paste(v$dataset, v$split, v$method)
  failed <- failed[!(key(failed) %in% key(ok)) & !duplicated(key(failed), fromLast = TRUE), , drop = FALSE]
  if (nrow(failed)) {
    cat(sprintf("\n%d failed item(s) (run again with retry_failed=TRUE):\n", nrow(failed)))
    cat(sprintf("  %s split %d %s: %s\n", failed$dataset, failed$split, failed$method,
                substr(failed$extra, 1, 160)), sep = "")
  }
  invisible(tab)
}

if (isTRUE(as.logical(opt$summary))) {
  print_summary(opt$out)
  quit(save = "no")
}

# ---- data -------------------------------------------------------------------------------------
data_dir <- if (nzchar(opt$data_dir)) opt$data_dir else NULL

kl_name <- c(bank = "bank32nh", cadata = "cadata", cod = "cod-rna", covtype = "covtype",
             cpusmall = "cpusmall", cycle = "ccpp", higgs = "higgs", letter = "letter",
             magic = "magic", pendigits = "pendigits", satimage = "satimage", shuttle = "shuttle",
             thyroid = "thyroid", updrs = "parkinsons")

# x (numeric matrix) and y (factor or numeric response) of all rows of a set, prepared.
load_set <- function(name) {
  d <- kl_dataset(kl_name[[name]], dir = data_dir, quiet = TRUE,
                  target = if (name == "updrs") "motor_UPDRS")
  x <- as.matrix(d$x); y <- d$y
  storage.mode(x) <- "double"
  if (name == "covtype")  # LIBSVM's covtype.binary: class 2 against the rest
    y <- factor(ifelse(as.character(y) == "2", "2", "other"), levels = c("other", "2"))
  if (name == "shuttle") x <- x[, -1, drop = FALSE]  # the first column is a time stamp
  colnames(x) <- make.names(colnames(x), unique = TRUE)
  if (is.factor(y)) y <- droplevels(y)
  list(x = x, y = y)
}

split_seed <- function(ds, s) {
  h <- sum(utf8ToInt(ds) * seq_along(utf8ToInt(ds))) %% 100000L
  as.integer(h * 1000L + s)
}

# Training and test rows of split s of a set with N rows.
split_rows <- function(ds, s, N) {
  set.seed(split_seed(ds, s))
  perm <- sample.int(N)
  ntr <- min(n_train, N %/% 2L)
  list(train = perm[seq_len(ntr)], test = perm[ntr + seq_len(min(n_test, N - ntr))])
}

# The data of one split from a cached set C (the rows of the split draws only): training
# inputs and response (classes, or the response scaled to [-1, 1]), test inputs and targets.
make_split <- function(C, ds, s) {
  r <- split_rows(ds, s, C$N)
  tr <- match(r$train, C$rows); te <- match(r$test, C$rows)
  x <- C$x[tr, , drop = FALSE]; xt <- C$x[te, , drop = FALSE]
  y <- C$y[tr]; yt <- C$y[te]
  if (is.factor(y)) {
    y <- droplevels(y)
    keep <- as.character(yt) %in% levels(y)
    xt <- xt[keep, , drop = FALSE]
    yt <- factor(as.character(yt[keep]), levels = levels(y))
    list(x = x, y = y, xt = xt, Yt = pm1_targets(yt),
         task = if (nlevels(y) == 2L) "binary" else "multiclass", dropped = sum(!keep))
  } else {
    yr <- range(y)
    sc <- function(v) 2 * (v - yr[1]) / (yr[2] - yr[1]) - 1
    list(x = x, y = sc(y), xt = xt, Yt = matrix(sc(yt), ncol = 1L), task = "regression",
         dropped = 0L)
  }
}

# +-1 targets: one column for two classes (+1 = the second level), one-vs-all otherwise.
pm1_targets <- function(y) {
  if (nlevels(y) == 2L) return(matrix(ifelse(as.integer(y) == 2L, 1, -1), ncol = 1L))
  Y <- matrix(-1, length(y), nlevels(y)); Y[cbind(seq_along(y), as.integer(y))] <- 1
  Y
}
ls_error <- function(D, Y) {
  D <- as.matrix(D)
  if (!identical(dim(D), dim(Y)))
    stop(sprintf("decision values are %d x %d, targets %d x %d", nrow(D), ncol(D), nrow(Y), ncol(Y)))
  mean((pmin(pmax(D, -1), 1) - Y)^2)
}
# Decision values of a least-squares model with the columns of all classes `lev`. kernel_ridge
# drops the levels of y that have no rows (with a warning), which happens to a rare class in a
# CV fold: its decision matrix then lacks that column (or is a single column when two classes
# are left). A model that never saw a class answers "not that class": -1.
align_dec <- function(D, lev) {
  k <- length(lev)
  if (k == 2L) return(as.matrix(D))
  if (is.matrix(D) && ncol(D) == k && identical(colnames(D), lev)) return(D)
  out <- matrix(-1, NROW(D), k, dimnames = list(NULL, lev))
  if (is.matrix(D) && ncol(D) > 1L) {
    if (is.null(colnames(D)) || !all(colnames(D) %in% lev))
      stop("decision columns do not name the classes")
    out[, colnames(D)] <- D
  } else {
    have <- attr(D, "levels")
    if (length(have) != 2L) stop("a single decision column without its two classes")
    out[, have[1]] <- -as.vector(D); out[, have[2]] <- as.vector(D)
  }
  out
}
# kernel_ridge's decision values on newx, with a column per class of `lev`.
ridge_dec <- function(f, newx, lev) {
  D <- predict(f, newx, type = "decision")
  if (!is.null(lev) && length(lev) > 2L && !is.matrix(D)) attr(D, "levels") <- f$levels
  if (is.null(lev)) D else align_dec(D, lev)
}
# kernel_ridge for kl_tune: predictions that keep the class columns of the whole training set.
ridge_learner <- function(x, y, ...) {
  f <- kernel_ridge(x, y, ...)
  f$all_levels <- if (is.factor(y)) levels(y)
  class(f) <- c("ridge_all_levels", class(f))
  f
}
predict.ridge_all_levels <- function(object, newdata, type = NULL, ...) {
  lev <- object$all_levels
  class(object) <- setdiff(class(object), "ridge_all_levels")
  if (identical(type, "decision") && length(lev) > 2L) return(ridge_dec(object, newdata, lev))
  predict(object, newdata, type = type, ...)
}
# The same as a kl_tune metric: on decision values for classes, fitted values for regression.
ls_metric <- function(classification) {
  if (classification)
    structure(function(truth, pred) ls_error(pred, pm1_targets(truth)), type = "decision")
  else structure(function(truth, pred) ls_error(pred, matrix(truth, ncol = 1L)), type = "response")
}

# The authors' grid (liquidSVM) for n fit rows in d dimensions, k points per axis:
# gamma = 1 / t^2 and the paper's lambda.
paper_grid <- function(n, d, k) {
  geo <- function(a, b) if (k == 1L) sqrt(a * b) else exp(seq(log(a), log(b), length.out = k))
  t <- geo(0.2 * n^(-1 / d), 5 * (1 + 5 / n)^d)
  list(gamma = 1 / t^2, lambda = geo(0.001 / n, 0.1))
}
where <- function(v, grid) {
  i <- which.min(abs(log(grid) - log(v)))
  sprintf("%d/%d%s", i, length(grid), if (i %in% c(1L, length(grid))) " EDGE" else "")
}
n_fit_of <- function(n, folds = 5L) n - ceiling(n / folds)

# ---- methods ----------------------------------------------------------------------------------
# Each returns list(D = test decision values, extra = text, grid = text).
run_hgk <- function(S) {
  # least squares (the table's error is that of the least-squares decisions); the Gaussian
  # start joins the cross-validation as the package's default does
  fit <- hgk(S$x, S$y, candidates = candidates, final = opt$hgk_final, loss = "ls",
             control = hgk_control(maxit = maxit, precision = opt$precision), threads = threads)
  cvtxt <- if (is.null(fit$cv)) "" else {
    lab <- ifelse(!fit$cv$learned, "gauss",
                  ifelse(fit$cv$depth == 1, "d1", paste0("m", fit$cv$nodes)))
    paste0("; cv ", paste(sprintf("%s:%.4g", lab, fit$cv$error), collapse = " "))
  }
  g <- vapply(fit$models, function(m) m$gamma, 0); l <- vapply(fit$models, function(m) m$lambda, 0)
  list(D = predict(fit, S$xt, type = "decision"),
       extra = sprintf("%s; final %s; gamma %s; lambda %s%s", fit$architecture$label, fit$final,
                       paste(signif(g, 3), collapse = "/"), paste(signif(l, 3), collapse = "/"), cvtxt),
       grid = sprintf("candidates %s, maxit %d%s", paste(candidates, collapse = ","), maxit,
                     prec_note))
}

# hgk() as a classification user runs it, with the decisions of the svm baseline. Two classes:
# loss = "auto" (the least-squares SVM or the C-SVM on each candidate kernel, whichever
# misclassifies fewer held-out rows), the decision value of the chosen loss. More classes: the
# C-SVM with probabilities (loss = "hinge", probability = TRUE), 2 p - 1 per class of its Platt /
# pairwise-coupling probabilities, as for the svm baseline (pairwise decisions are no
# per-class scores).
run_hgk_auto <- function(S) {
  multi <- S$task == "multiclass"
  fit <- hgk(S$x, S$y, candidates = candidates, final = "refit",
             loss = if (multi) "hinge" else "auto", probability = multi, control = hgk_control(maxit = maxit, precision = opt$precision), threads = threads)
  D <- if (multi && fit$loss == "hinge") {
    P <- predict(fit, S$xt, type = "prob")
    2 * P[, levels(S$y), drop = FALSE] - 1
  } else predict(fit, S$xt, type = "decision")
  cvtxt <- if (is.null(fit$cv)) "" else {
    lab <- ifelse(!fit$cv$learned, "gauss",
                  ifelse(fit$cv$depth == 1, "d1", paste0("m", fit$cv$nodes)))
    paste0("; cv ", paste(sprintf("%s:%.4g", lab, fit$cv$error), collapse = " "))
  }
  tg <- fit$tuned_gaussian
  if (!is.null(tg))
    cvtxt <- paste0(cvtxt, if (!is.null(tg$failed)) sprintf("; tuned gauss failed: %s", tg$failed)
                           else sprintf("; tuned gauss:%.4g%s", tg$error,
                                        if (isTRUE(fit$selection$tuned)) " (chosen)" else ""))
  list(D = D,
       extra = sprintf("%s; loss %s; final %s%s%s%s", fit$architecture$label, fit$loss, fit$final,
                       if (fit$loss == "hinge" && !is.null(fit$models[[1L]]$svm))
                         sprintf("; svm gamma %.4g cost %.4g%s", fit$models[[1L]]$svm$kernel$gamma,
                                 fit$models[[1L]]$svm$cost,
                                 if (is.null(attr(fit$svm_cv, "extended"))) ""
                                 else sprintf(" (%s)", attr(fit$svm_cv, "extended"))) else "",
                       cvtxt, if (multi && fit$loss == "hinge") "; decision 2p-1 of Platt probabilities" else ""),
       grid = sprintf("candidates %s, maxit %d, loss auto%s", paste(candidates, collapse = ","),
                     maxit, prec_note))
}

run_lssvm <- function(S) {
  n <- nrow(S$x); n1 <- n_fit_of(n)
  g <- paper_grid(n1, ncol(S$x), grid_n)
  grid <- list(kernel = lapply(g$gamma, function(gm) gaussian_kernel(gamma = gm)), lambda = n1 * g$lambda)
  tu <- kl_tune(ridge_learner, S$x, S$y, grid = grid, folds = 5, metric = ls_metric(is.factor(S$y)),
                refit = FALSE)
  b <- tu$best
  gm <- b$kernel$gamma; lp <- b$lambda / n1
  if (opt$lssvm_final == "average") {
    D <- 0
    for (k in seq_len(max(tu$foldid))) {
      rows <- which(tu$foldid != k)
      f <- kernel_ridge(S$x[rows, , drop = FALSE], S$y[rows], kernel = b$kernel,
                        lambda = length(rows) * lp)
      D <- D + if (is.factor(S$y)) align_dec(ridge_dec(f, S$xt, levels(S$y)), levels(S$y))
               else predict(f, S$xt)
    }
    D <- D / max(tu$foldid)
  } else {
    f <- kernel_ridge(S$x, S$y, kernel = b$kernel, lambda = n * lp)
    D <- predict(f, S$xt, type = "decision")
  }
  list(D = D, grid = sprintf("%dx%d", grid_n, grid_n),
       extra = sprintf("gamma %.4g (%s), lambda %.3g (%s), cv %.4g; final %s", gm,
                       where(gm, g$gamma), lp, where(lp, g$lambda), min(tu$results$mean),
                       opt$lssvm_final))
}

run_svm <- function(S) {
  n <- nrow(S$x); n1 <- n_fit_of(n)
  g <- paper_grid(n1, ncol(S$x), svm_grid_n)
  multi <- S$task == "multiclass"
  grid <- list(gamma = g$gamma, cost = 1 / (2 * n1 * g$lambda))
  metric <- if (opt$svm_metric == "ls" && !multi) ls_metric(is.factor(S$y)) else NULL
  crit <- if (is.null(metric)) (if (is.factor(S$y)) "misclassification" else "mse") else "ls"
  tu <- kl_tune(kernel_svm, S$x, S$y, scale_response = FALSE, grid = grid, folds = 5, metric = metric, refit = FALSE)
  b <- tu$best
  cost <- b$cost * n1 / n
  fit <- kernel_svm(S$x, S$y, scale_response = FALSE, gamma = b$gamma, cost = cost, probability = multi)
  D <- if (multi) {
    P <- predict(fit, S$xt, type = "prob")
    2 * P[, levels(S$y), drop = FALSE] - 1
  } else predict(fit, S$xt, type = if (S$task == "regression") "response" else "decision")
  lp <- 1 / (2 * n1 * b$cost)
  list(D = D, grid = sprintf("%dx%d%s", svm_grid_n, svm_grid_n,
                             if (svm_grid_n < grid_n) " (coarser than lssvm)" else ""),
       extra = sprintf("gamma %.4g (%s), cost %.4g (lambda %.3g, %s), cv %s %.4g%s", b$gamma,
                       where(b$gamma, g$gamma), cost, lp, where(lp, g$lambda), crit,
                       min(tu$results$mean), if (multi) "; decision 2p-1 of Platt probabilities" else ""))
}

run_ranger <- function(S, seed) {
  cls <- is.factor(S$y)
  fit <- ranger::ranger(x = S$x, y = S$y, num.trees = 500, probability = cls,
                        num.threads = threads, seed = seed)
  p <- predict(fit, S$xt, num.threads = threads)$predictions
  D <- if (cls) {
    P <- 2 * p[, levels(S$y), drop = FALSE] - 1
    if (nlevels(S$y) == 2L) P[, 2L] else P
  } else p
  list(D = D, grid = "-", extra = sprintf("500 trees, mtry %d", fit$mtry))
}

# ---- the loop ---------------------------------------------------------------------------------
dir.create(dirname(opt$out), showWarnings = FALSE, recursive = TRUE)
done <- read_results(opt$out, repair = TRUE)[, c("dataset", "split", "method", "error", "n_train")]
# One results file holds one protocol: rows drawn with another n_train are not resumed.
rows_of <- kl_datasets()$rows[match(kl_name, kl_datasets()$name)]
want_ntr <- setNames(pmin(n_train, rows_of %/% 2L), names(kl_name))
clash <- done$dataset %in% datasets & as.integer(done$n_train) != want_ntr[done$dataset]
if (any(clash))
  stop(sprintf("'%s' holds rows with other training sizes (e.g. %s split %s: n_train %s, not %d); give another out=",
               opt$out, done$dataset[clash][1], done$split[clash][1], done$n_train[clash][1],
               want_ntr[done$dataset[clash][1]]), call. = FALSE)
is_done <- function(ds, s, m) {
  hit <- done$dataset == ds & done$split == s & done$method == m
  if (retry_failed) hit <- hit & is.finite(done$error)
  any(hit)
}
cat(sprintf("hgk_table1: %s; n_train %d, n_test <= %d, splits %s, methods %s, threads %d; %d row(s) there\n",
            opt$out, n_train, n_test, paste(range(splits), collapse = "-"), paste(methods, collapse = ","),
            threads, nrow(done)))
method_seed <- c(hgk = 1L, lssvm = 2L, svm = 3L, ranger = 4L, hgk_auto = 5L, svm_redraw = 6L)
cache <- list()
t_start <- proc.time()[["elapsed"]]
for (s in splits) {
  for (ds in datasets) {
    todo <- methods[!vapply(methods, function(m) is_done(ds, s, m), logical(1))]
    if (!length(todo)) next
    if (is.null(cache[[ds]])) {
      D <- load_set(ds)
      # keep only the rows of the splits this run may need
      rows <- sort(unique(unlist(lapply(splits, function(k) unlist(split_rows(ds, k, nrow(D$x)))))))
      cache[[ds]] <- list(N = nrow(D$x), rows = rows,
                          x = D$x[rows, , drop = FALSE], y = D$y[rows])
      rm(D); invisible(gc(FALSE))
    }
    S <- make_split(cache[[ds]], ds, s)
    # hgk_auto differs from hgk only for classes
    if (S$task == "regression") todo <- setdiff(todo, "hgk_auto")
    for (m in todo) {
      seed <- split_seed(ds, s) * 10L + method_seed[[m]]
      set.seed(seed)
      warns <- character()
      t0 <- proc.time()[["elapsed"]]
      res <- tryCatch(withCallingHandlers(
        switch(m, hgk = run_hgk(S), hgk_auto = run_hgk_auto(S), lssvm = run_lssvm(S), svm = run_svm(S), svm_redraw = run_svm(S),
               ranger = run_ranger(S, seed)),
        warning = function(w) {
          warns <<- c(warns, conditionMessage(w)); invokeRestart("muffleWarning")
        }),
        error = function(e) list(D = NULL, grid = "-", extra = paste("FAILED:", conditionMessage(e))))
      err <- if (is.null(res$D)) NA_real_ else
        tryCatch(ls_error(res$D, S$Yt), error = function(e) {
          res$extra <<- paste("FAILED:", conditionMessage(e)); NA_real_ })
      secs <- proc.time()[["elapsed"]] - t0
      extra <- res$extra
      if (S$dropped > 0L) extra <- sprintf("%s; %d test rows of classes absent from training dropped",
                                           extra, S$dropped)
      if (length(warns)) {
        w <- unique(warns)
        extra <- sprintf("%s; %d warning(s): %s", extra, length(warns),
                         substr(paste(w, collapse = " | "), 1, 300))
      }
      row <- list(dataset = ds, split = s, method = m, error = signif(err, 7),
                  seconds = round(secs, 1), n_train = nrow(S$x), n_test = nrow(S$xt),
                  d = ncol(S$x), task = S$task, outputs = ncol(S$Yt), grid = res$grid,
                  extra = extra, date = format(Sys.time(), "%Y-%m-%d %H:%M:%S"))
      append_row(opt$out, row)
      done <- rbind(done, data.frame(dataset = ds, split = s, method = m, error = err,
                                     n_train = nrow(S$x), stringsAsFactors = FALSE))
      cat(sprintf("%-9s split %d %-6s error %-10s %8.1f s  %s\n", ds, s, m,
                  if (is.na(err)) "NA" else sprintf("%.5g", err), secs, extra))
      flush.console()
    }
  }
}
cat(sprintf("done in %.1f s\n\n", proc.time()[["elapsed"]] - t_start))
print_summary(opt$out)
