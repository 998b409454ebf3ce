# Localized kernel machines: the partition, per-cell selection, predictions, plans.

cells_data <- function(n = 1200, seed = 1) {
  set.seed(seed)
  x <- matrix(stats::runif(2 * n), ncol = 2)
  y <- factor(ifelse(x[, 2] > 0.5 + 0.3 * sin(6 * x[, 1]), "up", "down"))
  z <- sin(4 * x[, 1]) + x[, 2]^2 + stats::rnorm(n, sd = 0.1)
  list(x = x, y = y, z = z)
}

partition_of <- function(x, cell_size, method = "voronoi", overlap = 0, threads = 1L,
                         seed = c(3L, 4L)) {
  kernlearn:::cpp_partition_build(
    x, list(method = method, cell_size = as.integer(cell_size),
            min_size = as.integer(max(cell_size %/% 8, 1L)), branching = 16L,
            sample = 20000L, iterations = 10L, overlap = overlap, seed = seed),
    threads)
}

test_that("the partition keeps cells within cell_size and routes training rows to their cells", {
  set.seed(2)
  x <- cbind(matrix(stats::runif(3000 * 3), ncol = 3), stats::rnorm(3000))
  for (method in c("voronoi", "tree")) {
    p <- partition_of(x, 250, method)
    sizes <- tabulate(p$cell_of, nbins = p$n_cells)
    expect_true(all(sizes >= 1L))
    expect_lte(max(sizes), 250L)
    expect_equal(sum(sizes), nrow(x))
    expect_identical(kernlearn:::cpp_partition_route(x, p, 1L), p$cell_of)
    if (method == "tree") expect_gte(min(sizes), 100L)  # median splits: about half and half
  }
})

test_that("the partition does not depend on the thread count and follows the seed", {
  set.seed(3)
  x <- matrix(stats::rnorm(4000 * 5), ncol = 5)
  a <- partition_of(x, 300, threads = 1L)
  b <- partition_of(x, 300, threads = 2L)
  expect_identical(a, b)
  expect_identical(kernlearn:::cpp_partition_route(x, a, 2L), a$cell_of)
  c2 <- partition_of(x, 300, seed = c(9L, 9L))
  expect_false(identical(a$cell_of, c2$cell_of))
})

test_that("overlap adds the nearest rows of neighbouring cells, never the cell's own", {
  set.seed(4)
  x <- matrix(stats::runif(2000 * 2), ncol = 2)
  p <- partition_of(x, 200, overlap = 0.25)
  for (c in seq_len(p$n_cells)) {
    own <- which(p$cell_of == c)
    ex <- p$extra[[c]]
    expect_length(intersect(own, ex), 0L)
    expect_lte(length(ex), floor(0.25 * length(own)))
    if (length(ex)) {
      # every extra row is nearer the cell's rows than the average other row
      cen <- colMeans(x[own, , drop = FALSE])
      d_ex <- sqrt(rowSums(sweep(x[ex, , drop = FALSE], 2, cen)^2))
      d_all <- sqrt(rowSums(sweep(x[-own, , drop = FALSE], 2, cen)^2))
      expect_lt(mean(d_ex), mean(d_all))
    }
  }
})

test_that("coinciding rows cannot be split and stay one cell; bad partition input errors", {
  x <- matrix(1, 100, 2)
  p <- partition_of(x, 20)
  expect_equal(p$n_cells, 1L)
  expect_error(kl_cells(cell_size = 5), "cell_size")
  expect_error(kl_cells(method = "grid"), "method")
  expect_error(kl_cells(overlap = 2), "overlap")
  expect_error(kl_cells(folds = 1), "folds")
  expect_error(kl_cells(cost_grid = c(1, -1)), "cost_grid")
  expect_error(kernel_svm(iris[, 1:4], iris$Species, cells = "yes"), "cells")
  p <- partition_of(matrix(stats::runif(200), ncol = 2), 30)
  expect_error(kernlearn:::cpp_partition_route(matrix(0, 2, 3), p, 1L), "columns")
})

test_that("one cell holding every row gives the global model", {
  d <- cells_data(600)
  big <- kl_cells(cell_size = 1000)
  g <- kernel_svm(d$x, d$y, gamma = 8, cost = 4)
  l <- kernel_svm(d$x, d$y, gamma = 8, cost = 4, cells = big)
  expect_s3_class(l, "kl_localized")
  expect_equal(length(l$cells), 1L)
  expect_equal(predict(l, d$x, type = "decision"), predict(g, d$x, type = "decision"),
               tolerance = 1e-8)
  expect_identical(predict(l, d$x), predict(g, d$x))
  # regression SVM
  g <- kernel_svm(d$x, d$z, gamma = 4, cost = 2, epsilon = 0.05)
  l <- kernel_svm(d$x, d$z, gamma = 4, cost = 2, epsilon = 0.05, cells = big)
  expect_equal(predict(l, d$x), predict(g, d$x), tolerance = 1e-8)
  # kernel ridge, regression and classification
  g <- kernel_ridge(d$x, d$z, kernel = gaussian_kernel(3), lambda = 0.1)
  l <- kernel_ridge(d$x, d$z, kernel = gaussian_kernel(3), lambda = 0.1, cells = big)
  expect_equal(predict(l, d$x), predict(g, d$x), tolerance = 1e-8)
  g <- kernel_ridge(Species ~ ., data = iris, kernel = gaussian_kernel(2), lambda = 0.5)
  l <- kernel_ridge(Species ~ ., data = iris, kernel = gaussian_kernel(2), lambda = 0.5,
                    cells = kl_cells(cell_size = 200))
  expect_equal(predict(l, iris, type = "decision"), predict(g, iris, type = "decision"),
               tolerance = 1e-8)
  # multiclass SVM with probabilities
  set.seed(5)
  g <- kernel_svm(Species ~ ., data = iris, gamma = 2, cost = 4, probability = TRUE)
  set.seed(5)
  l <- kernel_svm(Species ~ ., data = iris, gamma = 2, cost = 4, probability = TRUE,
                  cells = kl_cells(cell_size = 200))
  expect_equal(predict(l, iris, type = "decision"), predict(g, iris, type = "decision"),
               tolerance = 1e-8)
  expect_equal(predict(l, iris, type = "prob"), predict(g, iris, type = "prob"),
               tolerance = 1e-8)
})

test_that("per-cell selection chooses from the grid by cross-validation and predicts well", {
  d <- cells_data(1500)
  set.seed(6)
  fit <- kernel_svm(d$x, d$y, cells = kl_cells(cell_size = 300, folds = 3))
  tab <- summary(fit)$cells
  expect_gt(nrow(tab), 4L)
  expect_lte(max(tab$rows), 300L)
  two <- tab$classes == 2L
  ref <- vapply(fit$cells, function(c) c$reference_gamma, numeric(1))
  # each cell's choice is the least cross-validated error of its grid, which starts at the
  # default grid and grows past an edge that wins
  for (c in which(two)) {
    cm <- fit$cells[[c]]
    expect_equal(cm$cv_error, min(cm$cv))
    expect_equal(dim(cm$cv), c(length(cm$gamma_grid), length(cm$cost_grid)))
    expect_true(cm$gamma %in% cm$gamma_grid)
    expect_true(cm$cost %in% cm$cost_grid)
    expect_true(all(round(4^(0:2) * ref[c], 8) %in% round(cm$gamma_grid, 8)))
    expect_true(all(fit$settings$cost_grid %in% cm$cost_grid))
    expect_equal(length(cm$gamma_grid) + length(cm$cost_grid) - 3L - 6L, cm$extended)
  }
  dt <- cells_data(3000, seed = 7)
  err <- mean(predict(fit, dt$x) != dt$y)
  expect_lt(err, 0.03)
  expect_identical(fitted(fit), predict(fit, d$x))
  # given values are used in every cell
  fixed <- kernel_svm(d$x, d$y, gamma = 10, cost = 3, cells = kl_cells(cell_size = 300))
  tab <- summary(fixed)$cells
  expect_true(all(tab$gamma[tab$classes == 2L] == 10))
  expect_true(all(tab$cost[tab$classes == 2L] == 3))
  expect_true(all(is.na(tab$cv_error)))
})

test_that("kernel ridge on cells chooses width and penalty per cell", {
  d <- cells_data(2000)
  set.seed(8)
  fit <- kernel_ridge(d$x, d$z, cells = kl_cells(cell_size = 400, folds = 3))
  tab <- summary(fit)$cells
  expect_true(all(tab$cost > 0))
  dt <- cells_data(2000, seed = 9)
  truth <- sin(4 * dt$x[, 1]) + dt$x[, 2]^2
  expect_lt(mean((predict(fit, dt$x) - truth)^2), 0.005)
  expect_equal(residuals(fit), d$z - fitted(fit))
})

test_that("cells with one class predict it; rows meet only their cell's classes", {
  set.seed(10)
  x <- rbind(matrix(stats::runif(600, 0, 0.4), ncol = 2), matrix(stats::runif(600, 0.6, 1), ncol = 2))
  y <- factor(c(rep("a", 300), ifelse(stats::runif(300) > 0.5, "b", "c")))
  fit <- kernel_svm(x, y, cells = kl_cells(cell_size = 200, folds = 3), probability = TRUE)
  tab <- summary(fit)$cells
  expect_true(any(tab$classes == 1L))
  low <- matrix(stats::runif(40, 0, 0.4), ncol = 2)
  expect_true(all(predict(fit, low) == "a"))
  P <- predict(fit, low, type = "prob")
  expect_equal(unname(P[, "a"]), rep(1, 20))
  D <- predict(fit, low, type = "decision")
  expect_true(all(is.na(D[, "c/b"])))
  expect_true(all(D[, "b/a"] == -1))
  P2 <- predict(fit, x, type = "prob")
  expect_equal(unname(rowSums(P2)), rep(1, nrow(x)))
  expect_identical(predict(fit, x), factor(colnames(P2)[max.col(P2, ties.method = "first")],
                                           levels = levels(y)))
})

test_that("localized models round-trip through saveRDS and check their input", {
  d <- cells_data(800)
  set.seed(11)
  fit <- kernel_svm(y ~ ., data = data.frame(d$x, y = d$y),
                    cells = kl_cells(cell_size = 200, folds = 3))
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  back <- readRDS(f)
  nd <- data.frame(d$x)
  expect_identical(predict(back, nd, type = "decision"), predict(fit, nd, type = "decision"))
  expect_error(predict(fit, nd[, 1, drop = FALSE]), "lacks column")
  bad <- nd
  bad[3, 1] <- NA
  expect_error(predict(fit, bad), "missing")
  expect_error(predict(fit, nd, type = "prob"), "probability")
  expect_output(print(fit), "Localized kernel SVM")
  expect_output(print(summary(fit)), "Cells")
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_silent(plot(fit))
  expect_error(kernel_svm(d$x, d$y, warm_start = fit, cells = TRUE), "warm_start")
  K <- kernel_matrix(gaussian_kernel(1), d$x)
  expect_error(kernel_svm(K, d$y, kernel = "precomputed", cells = TRUE), "precomputed")
  expect_error(kernel_svm(d$x, d$y, kernel = linear_kernel(), gamma = 2, cells = TRUE), "gamma")
})

test_that("every future plan gives the same localized model", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  skip_on_cran()
  d <- cells_data(900)
  fit_all <- function() {
    set.seed(12)
    a <- kernel_svm(d$x, d$y, cells = kl_cells(cell_size = 200, folds = 3, overlap = 0.1))
    set.seed(13)
    b <- kernel_ridge(d$x, d$z, cells = kl_cells(cell_size = 300, folds = 3))
    list(a = predict(a, d$x, type = "decision"), b = predict(b, d$x),
         ga = vapply(a$cells, function(c) as.numeric(c$gamma), 1), next_draw = stats::runif(1))
  }
  with_plan <- function(...) {
    oplan <- future::plan(...)
    on.exit(future::plan(oplan), add = TRUE)
    fit_all()
  }
  ref <- fit_all()
  expect_identical(with_plan(future::multisession, workers = 2), ref)
  cl <- parallel::makeCluster(2L)
  on.exit(parallel::stopCluster(cl), add = TRUE)
  expect_identical(with_plan(future::cluster, workers = cl), ref)
  skip_if_not_installed("future.batchtools")
  # the batchtools registries in a temporary folder, not in the working directory
  old <- options(future.cache.path = file.path(tempdir(), "kl-future"))
  on.exit(options(old), add = TRUE)
  expect_identical(with_plan(future.batchtools::batchtools_local), ref)
})

test_that("tkl with cells: one cell is the global fit, and each cell keeps the better of its learned kernel and its tuned Gaussian", {
  d <- cells_data(500, 41)
  big <- kl_cells(cell_size = 1000)
  g <- tkl(d$x, d$y, cost = 5, maxit = 10, baseline = FALSE)
  l <- tkl(d$x, d$y, cost = 5, maxit = 10, baseline = FALSE, cells = big)
  expect_s3_class(l, "kl_localized")
  expect_equal(length(l$cells), 1L)
  expect_equal(predict(l, d$x, type = "decision"), predict(g, d$x, type = "decision"),
               tolerance = 1e-8)
  gr <- tkl(d$x, d$z, cost = 5, maxit = 10, baseline = FALSE)
  lr <- tkl(d$x, d$z, cost = 5, maxit = 10, baseline = FALSE, cells = big)
  expect_equal(predict(lr, d$x), predict(gr, d$x), tolerance = 1e-8)
  # with the comparison (the default): P = I with a tiny cost loses to the Gaussian in every
  # cell, and each cell's model is then a Gaussian SVM with the cell's own width and cost
  d2 <- cells_data(1500, 42)
  cs <- kl_cells(cell_size = 500)
  set.seed(43)
  p <- tkl(d2$x, d2$y, cost = 1e-3, maxit = 0, cells = cs, fitted = FALSE)
  raw <- tkl(d2$x, d2$y, cost = 1e-3, maxit = 0, cells = cs, baseline = FALSE, fitted = FALSE)
  # (a cell with one class predicts it and has no model to choose)
  two <- vapply(p$cells, function(c) length(c$classes) == 2L, TRUE)
  expect_gte(sum(two), 2L)
  ch <- vapply(p$cells[two], function(c) c$choice, "")
  expect_true(all(ch == "baseline"))
  expect_true(all(vapply(p$cells[two], function(c) inherits(c$kernel, "kl_gaussian_kernel"),
                         TRUE)))
  tab <- summary(p)$cells[two, ]
  expect_true(all(is.finite(tab$gamma)) && all(is.finite(tab$cv_error)))
  # the Gaussian cells work on the rows as the whole input is scaled (no rescaling by the
  # cell's range, which only the learned kernel needs)
  expect_true(all(vapply(p$cells[two], function(c) is.null(c$xmin) && is.null(c$xscale), NA)))
  two_raw <- vapply(raw$cells, function(c) length(c$classes) == 2L, TRUE)
  expect_true(all(vapply(raw$cells[two_raw], function(c) !is.null(c$xmin), NA)))
  te <- cells_data(2000, 44)
  err_p <- mean(predict(p, te$x) != te$y)
  err_raw <- mean(predict(raw, te$x) != te$y)
  expect_lt(err_p, err_raw / 2)
  expect_lt(err_p, 0.05)
  expect_output(print(p), sprintf("Gaussian SVM validated better and is the model in %d of %d cells",
                                  sum(two), length(p$cells)))
  # the Gaussian is tuned over the cells' grid: here absolute widths {200, 400} (far above the
  # global comparison's {1/2, ..., 16} / d), costs {1, 4}, each extended by at most two steps
  ca <- kl_cells(cell_size = 500, gamma_grid = c(200, 400), relative_gamma = FALSE,
                 cost_grid = c(1, 4))
  set.seed(43)
  pa <- tkl(d2$x, d2$y, cost = 1e-3, maxit = 0, cells = ca, fitted = FALSE)
  taba <- summary(pa)$cells[two, ]
  expect_true(all(vapply(pa$cells[two], function(c) c$choice, "") == "baseline"))
  expect_true(all(taba$gamma %in% (200 * 2^(-2:3))))
  expect_true(all(taba$cost %in% 4^(-2:3)))
  # regression without noise: in every cell the Gaussian least-squares SVM validates better than
  # the SVR (whose tube is too wide) and the learned kernel, and predicts for its cell
  z0 <- function(x) sin(4 * x[, 1]) + x[, 2]^2
  set.seed(45)
  pr <- tkl(d2$x, z0(d2$x), cost = 1, maxit = 0, cells = cs, fitted = FALSE)
  expect_true(all(vapply(pr$cells, function(c) c$choice, "") == "baseline"))
  expect_true(all(vapply(pr$cells, function(c) inherits(c$kernel, "kl_gaussian_kernel"), NA)))
  tabr <- summary(pr)$cells
  expect_true(all(is.na(tabr$cost)) && all(is.finite(tabr$gamma)))
  set.seed(46)
  svr <- kernel_svm(d2$x, z0(d2$x), cells = cs, fitted = FALSE)
  mse <- function(m) mean((predict(m, te$x) - z0(te$x))^2)
  expect_lt(mse(pr), 1e-4)
  expect_lt(mse(pr), mse(svr) / 10)
  expect_output(print(pr), "Gaussian \\(SVR, or least-squares SVM\\) validated better and is the model in")
  # each cell's least-squares SVM bounds its decision values at its rows' response range
  # widened by its width on each side, far from its rows too
  expect_true(all(vapply(pr$cells, function(c) length(c$clip) == 2L && c$clip[1] < c$clip[2], NA)))
  far <- rbind(c(-40, 0.5), c(0.5, 40), c(60, 60), c(-60, -60))
  yr <- range(z0(d2$x))
  expect_true(all(abs(predict(pr, far) - mean(yr)) <= 1.5 * diff(yr) + 1e-9))
})

test_that("hgk with cells fits every cell with the kernel learned on a sample", {
  d <- cells_data(1200, 51)
  set.seed(52)
  fit <- hgk(d$x, d$z, cells = kl_cells(cell_size = 400, sample_learn = 600, folds = 3),
             candidates = 0, control = hgk_control(maxit = 5))
  expect_s3_class(fit, "kl_localized")
  expect_identical(fit$learner, "hgk")
  expect_equal(fit$learned$rows, 600L)
  expect_gte(length(fit$cells), 3L)
  te <- cells_data(1000, 53)
  mse <- mean((predict(fit, te$x) - te$z)^2)
  # the noise variance is 0.01; a constant predicts with the variance of z
  expect_lt(mse, 0.1 * stats::var(te$z))
  r <- readRDS({f <- tempfile(); saveRDS(fit, f); f})
  expect_identical(predict(r, te$x), predict(fit, te$x))
})

test_that("hgk with cells: a sample won by the tuned Gaussian SVR gives least-squares cells", {
  # heavy-tailed noise: on the sample the Gaussian epsilon-SVR validates best; the cells are
  # kernel ridge with that kernel (the Gaussian), each with its own width and penalty
  set.seed(61)
  n <- 900
  x <- matrix(runif(n * 2), n, 2)
  f0 <- function(x) sin(4 * x[, 1]) + x[, 2]^2
  y <- f0(x) + 0.15 * rt(n, df = 1.5)
  set.seed(62)
  fit <- hgk(x, y, cells = kl_cells(cell_size = 300, sample_learn = 300, folds = 3),
             candidates = 0, control = hgk_control(maxit = 2))
  expect_s3_class(fit, "kl_localized")
  expect_identical(fit$learned$selection$choice, "baseline")
  expect_match(fit$learned$selection$reason, "as an epsilon-SVR tuned over")
  expect_identical(fit$learned$loss, "ls")
  expect_gte(length(fit$cells), 2L)
  xt <- matrix(runif(2000), 1000, 2)
  expect_lt(mean((predict(fit, xt) - f0(xt))^2), 0.1 * stats::var(f0(xt)))
})

test_that("regression cells standardise the response once for the whole data", {
  d <- cells_data(900, 51)
  cs <- kl_cells(cell_size = 300, folds = 3)
  set.seed(52)
  a <- kernel_svm(d$x, d$z, cells = cs, tol = 1e-8)
  set.seed(52)
  b <- kernel_svm(d$x, 1e5 * d$z + 2, cells = cs, tol = 1e-8)
  expect_gt(length(a$cells), 1L)
  expect_equal(unname(b$y_scaling), c(mean(1e5 * d$z + 2), stats::sd(1e5 * d$z + 2)))
  # the cells choose the same widths and costs and predict in the response's units
  expect_equal(vapply(b$cells, `[[`, 0, "cost"), vapply(a$cells, `[[`, 0, "cost"))
  expect_equal(predict(b, d$x[1:50, ]), 1e5 * predict(a, d$x[1:50, ]) + 2, tolerance = 1e-6)
  expect_equal(residuals(b), 1e5 * residuals(a), tolerance = 1e-6)
  set.seed(53)
  r <- tkl(d$x, 1e5 * d$z + 2, cost = 5, maxit = 5, baseline = FALSE, cells = cs, fitted = FALSE)
  set.seed(53)
  s <- tkl(d$x, d$z, cost = 5, maxit = 5, baseline = FALSE, cells = cs, fitted = FALSE)
  expect_equal(predict(r, d$x[1:50, ]), 1e5 * predict(s, d$x[1:50, ]) + 2, tolerance = 1e-6)
})
