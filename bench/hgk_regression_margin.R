# hgk() regression: how the selected kernel is held against the tuned Gaussian least-squares SVM.
# "new" is hgk()'s rule (the learned kernel is kept when its cross-validated squared error is
# below the tuned Gaussian's); "margin" is the rule classification keeps (kept only when below
# by more than one standard error of the fold-wise difference), put in place of hgk()'s in the
# loaded namespace. Both fits run on the same rows and seeds with hgk()'s defaults, so the
# comparison is paired per draw; where the two rules choose the same model the errors are equal.
#
# Usage:
#   KERNLEARN_DATA_DIR=<data> Rscript bench/hgk_regression_margin.R ROWS DRAWS SETS OUT
#   Rscript bench/hgk_regression_margin.R summary FILE
# ROWS training rows per draw, 2000 others (or all the others where fewer) test; SETS a comma
# list of kl_dataset() regression names (as cadata, cpusmall, bank8fm, bank32nh, ccpp,
# parkinsons). Appends one line per draw to OUT: set, rows, draw, margin and new (test mean
# squared error on the response's scale), margin_choice and new_choice (fit$selection$choice).
# 1 thread. Results: bench/results/hgk_regression_margin.csv.
args <- commandArgs(TRUE)
if (identical(args[1], "summary")) {
  x <- read.csv(args[2])
  x$changed <- x$new != x$margin
  a <- do.call(rbind, lapply(split(x, list(x$set, x$rows), drop = TRUE), function(x) data.frame(
    set = x$set[1], rows = x$rows[1], draws = nrow(x), changed = sum(x$changed),
    margin = mean(x$margin), new = mean(x$new), ratio = mean(x$new) / mean(x$margin))))
  print(a[order(a$rows, a$set), ], row.names = FALSE, digits = 4)
  ch <- x[x$changed, ]
  cat(sprintf("\nall draws: %d; the rules chose differently in %d: new lower in %d, higher in %d\n",
              nrow(x), nrow(ch), sum(ch$new < ch$margin), sum(ch$new > ch$margin)))
  quit(save = "no")
}
stopifnot(length(args) == 4L)
suppressPackageStartupMessages(library(kernlearn))
rows <- as.integer(args[1]); draws <- as.integer(args[2]); sets <- strsplit(args[3], ",")[[1]]
out <- args[4]
options(kernlearn.threads = 1L, kernlearn.backend = "cpu")
rule_new <- kernlearn:::.hgk_against_tuned
rule_margin <- rule_new
b <- deparse(body(rule_margin))
i <- grep('by_se <- task != "regression"', b, fixed = TRUE)
if (length(i) != 1L) stop("hgk's rule is not the one this bench was written for")
b[i] <- sub('task != "regression"', "TRUE", b[i], fixed = TRUE)
body(rule_margin) <- parse(text = paste(b, collapse = "\n"))[[1L]]
on.exit(assignInNamespace(".hgk_against_tuned", rule_new, "kernlearn"))
for (nm in sets) {
  k <- kl_dataset(nm, quiet = TRUE)
  if (!is.numeric(k$y)) stop(nm, " is not a regression set")
  x <- as.data.frame(k$x)
  y <- k$y
  for (s in seq_len(draws)) {
    set.seed(500 + s)
    idx <- sample.int(nrow(x), min(nrow(x), rows + 2000L))
    tr <- idx[seq_len(rows)]
    te <- idx[-seq_len(rows)]
    res <- list()
    for (v in c("margin", "new")) {
      assignInNamespace(".hgk_against_tuned", if (v == "margin") rule_margin else rule_new,
                        "kernlearn")
      set.seed(900 + s)
      f <- hgk(x[tr, , drop = FALSE], y[tr])
      res[[v]] <- mean((predict(f, x[te, , drop = FALSE]) - y[te])^2)
      res[[paste0(v, "_choice")]] <- f$selection$choice
    }
    line <- data.frame(set = nm, rows = rows, draw = s, margin = res$margin, new = res$new,
                       margin_choice = res$margin_choice, new_choice = res$new_choice)
    cat(sprintf("%-10s %4d rows draw %d: margin %.6g (%s)  new %.6g (%s)\n", nm, rows, s,
                res$margin, res$margin_choice, res$new, res$new_choice))
    utils::write.table(line, out, sep = ",", row.names = FALSE, col.names = !file.exists(out),
                       append = file.exists(out))
  }
}
