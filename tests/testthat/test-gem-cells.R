# gem() with cells: one GEM model per cell of the input space, and the automatic choice.

cells_data <- function(n = 3000, seed = 1) {
  set.seed(seed)
  x <- matrix(runif(3 * n), ncol = 3, dimnames = list(NULL, c("a", "b", "c")))
  band <- x[, 2] - 0.5 - 0.3 * sin(6 * x[, 1])
  y <- factor(ifelse(band > 0.1, "up", ifelse(band < -0.1, "down", "mid")),
              levels = c("down", "mid", "up"))
  list(x = x, y = y)
}

test_that("gem(cells = ) predicts each row with its cell's own GEM model (independent refits)", {
  d <- cells_data()
  set.seed(2)
  fit <- gem(d$x, d$y, cells = kl_cells(cell_size = 400), top = 2, threshold = 1.2,
             lambda = 1e-3, threads = 1)
  expect_s3_class(fit, "gem_cells")
  expect_s3_class(fit, "kl_model")
  n_cells <- length(fit$cells)
  expect_gt(n_cells, 5)
  # every training row is in exactly one cell
  expect_equal(sum(vapply(fit$cells, `[[`, numeric(1), "own")), nrow(d$x))
  # the routing of the training rows, and each cell's model refitted independently on its rows
  # with the same settings (the cell's rows scaled by their own range): same probabilities
  xs <- sweep(sweep(d$x, 2, apply(d$x, 2, min)), 2, apply(d$x, 2, max) - apply(d$x, 2, min), "/")
  cell <- kernlearn:::cpp_partition_route(xs, fit$partition, 1L)
  expect_equal(tabulate(cell, n_cells), vapply(fit$cells, `[[`, numeric(1), "own"))
  P <- predict(fit, d$x, type = "prob")
  expect_equal(dim(P), c(nrow(d$x), 3L))
  expect_equal(colnames(P), levels(d$y))
  expect_equal(unname(rowSums(P)), rep(1, nrow(d$x)), tolerance = 1e-12)
  checked <- 0L
  for (c in seq_len(n_cells)) {
    r <- which(cell == c)
    cm <- fit$cells[[c]]
    if (cm$status != "gem") next
    own <- droplevels(d$y[r])
    # (lambda given and all class pairs: nothing random in the fit)
    ref <- gem(xs[r, , drop = FALSE], own, top = 2, threshold = 1.2, lambda = 1e-3,
               cells = FALSE, threads = 1)
    pr <- predict(ref, xs[r, , drop = FALSE], type = "prob")
    expect_equal(unname(P[r, colnames(pr), drop = FALSE]), unname(pr), tolerance = 1e-8)
    # classes absent from the cell get probability 0
    absent <- setdiff(levels(d$y), levels(own))
    if (length(absent)) expect_true(all(P[r, absent] == 0))
    checked <- checked + 1L
  }
  expect_gt(checked, 2)
  # the class is the most probable one, and fitted() equals predict() on the training rows
  pc <- predict(fit, d$x)
  expect_identical(levels(pc), levels(d$y))
  expect_identical(as.character(pc), colnames(P)[max.col(P, ties.method = "first")])
  expect_identical(fitted(fit), pc)
  expect_identical(predict(fit), pc)
  expect_lt(mean(pc != d$y), 0.1)
  # summary(): one row per cell
  sm <- summary(fit)
  expect_equal(nrow(sm$cells), n_cells)
  expect_equal(sum(sm$cells$rows), nrow(d$x))
  expect_output(print(sm), "Rows per cell")
})

test_that("gem(cells = ): one-class cells, cells without a direction above the threshold, and bad settings", {
  d <- cells_data(2000, seed = 3)
  # a class that lives in one corner only: many cells hold one class
  y2 <- factor(ifelse(d$x[, 1] < 0.3 & d$x[, 2] < 0.3, "corner", as.character(d$y)))
  set.seed(4)
  fit <- gem(d$x, y2, cells = kl_cells(cell_size = 200), top = 2, threshold = 1.5)
  tab <- kernlearn:::.gem_cells_table(fit)
  expect_true(all(tab$status %in% c("gem", "inputs only", "one class", "majority")))
  one <- which(tab$status == "one class")
  expect_gt(length(one), 0)
  x_all <- d$x
  cell <- kernlearn:::cpp_partition_route(
    sweep(sweep(x_all, 2, apply(x_all, 2, min)), 2, apply(x_all, 2, max) - apply(x_all, 2, min), "/"),
    fit$partition, 1L)
  P <- predict(fit, x_all, type = "prob")
  for (c in one) {
    r <- which(cell == c)
    cls <- fit$cells[[c]]$classes
    expect_length(cls, 1L)
    expect_true(all(P[r, cls] == 1))
  }
  # a threshold no direction reaches: every cell with two or more classes fits its head on
  # the inputs alone, and says why
  set.seed(5)
  fit2 <- gem(d$x, d$y, cells = kl_cells(cell_size = 300), top = 2, threshold = 1e6)
  tab2 <- kernlearn:::.gem_cells_table(fit2)
  multi <- tab2$classes > 1
  expect_true(all(tab2$status[multi] == "inputs only"))
  expect_match(fit2$cells[[which(multi)[1]]]$note, "threshold")
  expect_output(print(fit2), "inputs alone")
  # and that head is gem(pairs = "none") on the cell's rows
  c1 <- which(multi)[1]
  expect_equal(fit2$cells[[c1]]$model$params$head, "cls")
  expect_equal(nrow(fit2$cells[[c1]]$model$members[[1]]$layers[[1]]$pairs), 0L)
  # settings are checked before the cells, with the argument's name
  expect_error(gem(d$x, d$y, cells = TRUE, top = -1), "'top'")
  expect_error(gem(d$x, d$y, cells = TRUE, depth = 3), "'depth'")
  expect_error(gem(d$x, d$y, cells = TRUE, pairs = "some"), "pairs")
  expect_error(gem(d$x, d$y, cells = TRUE, pairs = cbind(1, 2)), "matrix of pairs")
  expect_error(gem(d$x, d$y, cells = TRUE, ensemble = 3), "hypercube")
  expect_error(gem(d$x, d$y, cells = 3), "'cells' must be")
  expect_error(gem(d$x, d$y, cells = "yes"), "'cells' must be")
  expect_error(predict(fit, d$x, type = "decision"), "\"class\" or \"prob\"")
  expect_error(predict(fit, d$x[, 1:2]), "lacks column")
})

test_that("gem(cells = \"auto\") compares one model with cells on held-out rows and keeps the better", {
  d <- cells_data(3000, seed = 6)
  old <- options(kernlearn.gem_cells_rows = 1000)
  on.exit(options(old), add = TRUE)
  set.seed(7)
  fit <- gem(d$x, d$y, top = 2, threshold = 1.2, lambda = 1e-3)
  sel <- fit$selection
  expect_false(is.null(sel))
  expect_equal(sel$train_rows + sel$validation_rows, 3000)
  expect_equal(sel$validation_rows, 600)
  expect_true(sel$choice %in% c("cells", "global"))
  expect_identical(sel$choice == "cells", sel$cells_error < sel$global_error)
  expect_s3_class(fit, if (sel$choice == "cells") "gem_cells" else "gem")
  expect_output(print(fit), "chosen by validation")
  # the comparison's one-model error is that of gem(cells = FALSE) on the same rows: redo it
  # from the same random state
  set.seed(7)
  inp <- kernlearn:::.kl_input_xy(d$x, d$y, "gem()")
  rows <- seq_len(3000)
  hold <- rows[kernlearn:::.kl_stratified_sample(inp$y[rows], 600)]
  train <- setdiff(rows, hold)
  g <- gem(inp$x[train, ], droplevels(inp$y[train]), top = 2, threshold = 1.2, lambda = 1e-3,
           scale = FALSE, cells = FALSE, fitted = FALSE)
  expect_equal(sel$global_error, mean(as.character(predict(g, inp$x[hold, ])) !=
                                        as.character(d$y[hold])))
  # below the option's number of rows: one model, no comparison
  options(kernlearn.gem_cells_rows = 5000)
  f2 <- gem(d$x, d$y, top = 2, threshold = 1.2, lambda = 1e-3)
  expect_s3_class(f2, "gem")
  expect_null(f2$selection)
  # cells = FALSE never compares
  options(kernlearn.gem_cells_rows = 1000)
  expect_null(gem(d$x, d$y, top = 2, threshold = 1.2, lambda = 1e-3, cells = FALSE)$selection)
  # more input columns than a tenth of a cell's rows: one model, no comparison, said
  set.seed(10)
  xw <- unname(cbind(d$x, matrix(runif(nrow(d$x) * 100), ncol = 100)))
  fw <- gem(xw, d$y, top = 2, threshold = 1.2, lambda = 1e-3)
  expect_s3_class(fw, "gem")
  expect_identical(fw$selection$choice, "global")
  expect_match(fw$selection$reason, "103 input columns")
  expect_output(print(fw), "without a comparison")
  options(kernlearn.gem_cells_rows = "many")
  expect_error(gem(d$x, d$y), "kernlearn.gem_cells_rows")
})

test_that("gem(cells = ) with a formula, factor inputs and cross-validation", {
  set.seed(8)
  n <- 1500
  df <- data.frame(u = runif(n), v = runif(n), g = factor(sample(c("p", "q"), n, TRUE)))
  df$y <- factor(ifelse(df$u + 0.3 * (df$g == "p") > 0.6 + 0.2 * sin(5 * df$v), "A", "B"))
  set.seed(9)
  fit <- gem(y ~ ., data = df, cells = kl_cells(cell_size = 300), top = 2, threshold = 1.2)
  expect_s3_class(fit, "gem_cells")
  p <- predict(fit, df[1:20, c("v", "g", "u")])
  expect_identical(levels(p), levels(df$y))
  expect_identical(p, predict(fit)[1:20])
  expect_error(predict(fit, transform(df[1:5, ], g = factor("r"))), "level")
  expect_equal(nobs(fit), n)
  cv <- kl_cv(gem, y ~ ., data = df, folds = 3, cells = kl_cells(cell_size = 300), top = 2,
              threshold = 1.2)
  expect_lt(cv$mean, 0.2)
})
