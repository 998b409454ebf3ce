# hgk()'s C-SVM on a learned kernel (final = "refit", the hinge loss chosen): its width and cost
# grid (3 widths around the learned one x the costs of the least-squares penalties) as hgk()
# lays it ("first", hgk()'s rule: not extended), against the same grid extended past a winning
# edge, up to hgk_control(extend =) values per end, as kl_tune() extends a grid ("ext": the
# kl_tune() call's extend = 0L replaced by the control's in the loaded namespace). Both fits
# run on the same rows and seeds with hgk()'s defaults, so the comparison is paired per draw;
# where the extended grid did not grow, the two fits are the same and the second is not run.
#
# Usage:
#   Rscript bench/hgk_hinge_extend.R ROWS DRAWS SETS OUT   (appends one line per draw to OUT)
#   Rscript bench/hgk_hinge_extend.R summary FILE
# ROWS training rows per draw, the test rows up to 1000 others; a set with fewer than ROWS + 40
# rows is skipped. SETS: comma list of bench/hgk_bench_sets.R names: kl_dataset() names or vehicle,
# vowel (mlbench Vehicle, Vowel without its speaker column), bc (mlbench BreastCancer), twonorm,
# circle (mlbench simulations, 800 rows). Columns of OUT: set, rows, draw, loss (the chosen
# loss), grew (1 where the C-SVM's grid grew), moved (1 where its best point lies past the first
# grid), ext and first (test misclassification), ext_s and first_s (seconds; first_s NA where
# the fit was not run). 1 thread. Results: bench/results/hgk_hinge_extend.csv (measured while
# the extension was hgk()'s default, with the roles swapped in the namespace; the same fits).
suppressPackageStartupMessages({ library(kernlearn); library(mlbench) })
args <- commandArgs(TRUE)
if (identical(args[1], "summary")) {
  x <- read.csv(args[2])
  x$d <- x$ext - x$first
  a <- do.call(rbind, lapply(split(x, list(x$set, x$rows), drop = TRUE), function(x) data.frame(
    set = x$set[1], rows = x$rows[1], draws = nrow(x), hinge = sum(x$loss == "hinge"),
    grew = sum(x$grew), moved = sum(x$moved), ext = mean(x$ext), first = mean(x$first),
    ext_minus_first = mean(x$d))))
  print(a[order(a$rows, a$set), ], row.names = FALSE, digits = 4)
  cat(sprintf("\nall draws: %d, hinge chosen in %d, grid grew in %d, best point moved in %d\n",
              nrow(x), sum(x$loss == "hinge"), sum(x$grew), sum(x$moved)))
  m <- x[x$moved == 1, ]
  if (nrow(m))
    cat(sprintf("where it moved: mean test misclassification ext %.4f, first %.4f, ext - first %.5f (SE %.5f), ext better in %d, worse in %d\n",
                mean(m$ext), mean(m$first), mean(m$d), sd(m$d) / sqrt(nrow(m)), sum(m$d < 0), sum(m$d > 0)))
  cat(sprintf("over all draws: ext - first %.5f (SE %.5f)\n", mean(x$d), sd(x$d) / sqrt(nrow(x))))
  quit(save = "no")
}
rows <- as.integer(args[1]); draws <- as.integer(args[2]); sets <- strsplit(args[3], ",")[[1]]
out <- args[4]
options(kernlearn.threads = 1L, kernlearn.backend = "cpu")
source(file.path("bench", "hgk_bench_sets.R"))
load_set <- hgk_bench_set
ns <- asNamespace("kernlearn")
orig <- get(".hgk_hinge_grid", ns)
extended <- orig
body(extended) <- parse(text = sub("extend = 0L", "extend = ctx$extend",
                                   paste(deparse(body(orig)), collapse = "\n"), fixed = TRUE))[[1]]
stopifnot(!identical(deparse(body(extended)), deparse(body(orig))))
set_grid <- function(f) { unlockBinding(".hgk_hinge_grid", ns); assign(".hgk_hinge_grid", f, ns); lockBinding(".hgk_hinge_grid", ns) }
for (name in sets) {
  d <- load_set(name); n <- nrow(d)
  if (n - rows < 40) { message("skip ", name); next }
  for (s in seq_len(draws)) {
    set.seed(700 + s)
    tr <- sample.int(n, rows)
    te <- sample(setdiff(seq_len(n), tr), min(1000L, n - rows))
    dt <- d[tr, ]; dt$y <- droplevels(dt$y); if (nlevels(dt$y) < 2L) next
    keep <- d$y[te] %in% levels(dt$y)
    err <- function(f) mean(as.character(predict(f, d[te[keep], ])) != as.character(d$y[te[keep]]))
    fit <- function() { set.seed(2000 + s)
      t <- system.time(f <- suppressWarnings(hgk(y ~ ., data = dt)))[["elapsed"]]
      list(f = f, t = t) }
    set_grid(extended)
    a <- tryCatch(fit(), finally = set_grid(orig))
    tab <- a$f$svm_cv
    grew <- a$f$loss == "hinge" && !isTRUE(a$f$selection$tuned) && !is.null(tab$extended) &&
            any(tab$extended)
    moved <- FALSE
    ea <- err(a$f)
    eb <- ea; tb <- NA_real_
    if (grew) {
      b <- fit()
      eb <- err(b$f); tb <- b$t
      moved <- !identical(b$f$models[[1]]$svm$kernel$gamma, a$f$models[[1]]$svm$kernel$gamma) ||
               !identical(b$f$models[[1]]$svm$cost, a$f$models[[1]]$svm$cost)
    }
    r <- data.frame(set = name, rows = rows, draw = s, loss = a$f$loss, grew = as.integer(grew),
                    moved = as.integer(moved), ext = ea, first = eb, ext_s = a$t, first_s = tb)
    cat(sprintf("%s %d %d loss %s grew %d moved %d ext %.4f first %.4f (%.1fs)\n", name, rows, s,
                a$f$loss, grew, moved, ea, eb, a$t))
    utils::write.table(r, out, append = file.exists(out), col.names = !file.exists(out), sep = ",", row.names = FALSE)
  }
}
