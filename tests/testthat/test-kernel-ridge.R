# The LS-SVM linear system solved directly: [0 1'; 1 K + lambda I] [b; alpha] = [0; y].
lssvm_direct <- function(K, y, lambda) {
  n <- nrow(K)
  A <- rbind(c(0, rep(1, n)), cbind(1, K + lambda * diag(n)))
  sol <- unname(solve(A, c(0, y)))
  list(b = sol[1], alpha = sol[-1])
}

scale01 <- function(x) {
  mn <- apply(x, 2, min); rg <- apply(x, 2, max) - mn
  sweep(sweep(x, 2, mn), 2, ifelse(rg > 0, rg, Inf), "/")
}

test_that("regression equals the LS-SVM linear system solved directly", {
  set.seed(20)
  x <- matrix(runif(120 * 3, -2, 5), 120)
  y <- sin(x[, 1]) + x[, 2]^2 / 10 + rnorm(120, sd = 0.1)
  fit <- kernel_ridge(x, y, kernel = gaussian_kernel(1.5), lambda = 0.3)
  xs <- scale01(x)
  K <- exp(-1.5 * as.matrix(dist(xs))^2)
  ref <- lssvm_direct(K, y, 0.3)
  expect_equal(drop(fit$alpha), ref$alpha, tolerance = 1e-8)
  expect_equal(fit$bias, ref$b, tolerance = 1e-8)
  xt <- matrix(runif(30 * 3, -2, 5), 30)
  xts <- sweep(sweep(xt, 2, apply(x, 2, min)), 2, apply(x, 2, max) - apply(x, 2, min), "/")
  Kt <- exp(-1.5 * pmax(outer(rowSums(xts^2), rowSums(xs^2), "+") - 2 * xts %*% t(xs), 0))
  expect_equal(predict(fit, xt), drop(Kt %*% ref$alpha + ref$b), tolerance = 1e-8)
  expect_equal(predict(fit), unname(drop(K %*% ref$alpha + ref$b)), tolerance = 1e-8)
})

test_that("classification uses +-1 targets and argmax, binary and multiclass", {
  fit <- kernel_ridge(Species ~ ., data = iris, kernel = gaussian_kernel(2), lambda = 0.1)
  dec <- predict(fit, iris, type = "decision")
  expect_equal(dim(dec), c(150L, 3L))
  expect_equal(colnames(dec), levels(iris$Species))
  cls <- predict(fit, iris)
  expect_s3_class(cls, "factor")
  expect_equal(levels(cls), levels(iris$Species))
  expect_identical(as.integer(cls), max.col(dec, ties.method = "first"))
  expect_lt(mean(cls != iris$Species), 0.05)
  # multiclass outputs are three separate LS-SVMs on +-1 targets
  xs <- scale01(as.matrix(iris[, 1:4]))
  K <- exp(-2 * as.matrix(dist(xs))^2)
  ref <- lssvm_direct(K, ifelse(iris$Species == "virginica", 1, -1), 0.1)
  expect_equal(fit$alpha[, 3], ref$alpha, tolerance = 1e-8)

  d2 <- droplevels(iris[iris$Species != "setosa", ])
  b <- kernel_ridge(Species ~ ., data = d2, kernel = gaussian_kernel(2), lambda = 0.1)
  db <- predict(b, d2, type = "decision")
  expect_null(dim(db))
  expect_identical(predict(b, d2), factor(ifelse(db > 0, "virginica", "versicolor"),
                                          levels = levels(d2$Species)))
})

test_that("formula, matrix and data.frame interfaces agree", {
  f1 <- kernel_ridge(Species ~ ., data = iris, lambda = 0.2)
  f2 <- kernel_ridge(as.matrix(iris[, 1:4]), iris$Species, lambda = 0.2)
  f3 <- kernel_ridge(iris[, 1:4], iris$Species, lambda = 0.2)
  p1 <- predict(f1, iris, type = "decision")
  expect_equal(predict(f2, as.matrix(iris[, 1:4]), type = "decision"), p1)
  expect_equal(predict(f3, iris[, 1:4], type = "decision"), p1)
  # matrix columns are matched by name
  expect_equal(predict(f2, as.matrix(iris[, 4:1]), type = "decision"), p1)
  # the default width: one over the sum of the [0, 1]-scaled columns' variances
  xs <- apply(as.matrix(iris[, 1:4]), 2, function(v) (v - min(v)) / diff(range(v)))
  expect_equal(f1$kernel$gamma, 1 / sum(apply(xs, 2, stats::var)))
})

test_that("factor and logical predictors are one-hot / 0-1 encoded with stored levels", {
  set.seed(21)
  d <- data.frame(y = rnorm(60), a = runif(60), f = factor(sample(c("p", "q", "r"), 60, TRUE)),
                  l = runif(60) > 0.5, s = sample(c("u", "v"), 60, TRUE),
                  stringsAsFactors = FALSE)
  fit <- kernel_ridge(y ~ ., data = d, lambda = 1)
  expect_equal(colnames(fit$x), c("a", "fp", "fq", "fr", "l", "su", "sv"))
  nd <- d[1:5, ]
  nd$f <- factor(as.character(nd$f))    # fewer levels than in training
  expect_equal(predict(fit, nd), predict(fit, d[1:5, ]))
  expect_equal(predict(fit, d[5:1, ]), rev(predict(fit, d[1:5, ])))
  nd$f <- as.character(nd$f); nd$f[2] <- "zz"
  expect_error(predict(fit, nd), "column 'f' of 'newdata' has level\\(s\\) 'zz' not seen")
  expect_error(predict(fit, d[, c("y", "a", "f", "l")]), "lacks column\\(s\\) 's'")
  nd <- d[1:3, ]; nd$a[2] <- NaN
  expect_error(predict(fit, nd), "column 'a' of 'newdata'")
  nd <- d[1:3, ]; nd$a <- as.character(nd$a)
  expect_error(predict(fit, nd), "is character but was numeric")
  expect_length(predict(fit, d[0, ]), 0L)
})

test_that("formula transformations are applied at predict time", {
  fit <- kernel_ridge(log(mpg) ~ log(hp) + wt, data = mtcars, lambda = 0.5)
  expect_equal(colnames(fit$x), c("log(hp)", "wt"))
  expect_length(predict(fit, mtcars[1:4, c("hp", "wt")]), 4L)
  expect_error(predict(fit, mtcars[, c("mpg", "wt")]), "lacks column\\(s\\) 'hp'")
})

test_that("constant columns do not break scaling", {
  set.seed(22)
  x <- cbind(runif(50), 3, runif(50))
  y <- x[, 1] + rnorm(50, sd = 0.1)
  fit <- kernel_ridge(x, y, lambda = 0.1)
  expect_true(all(fit$x[, 2] == 0))
  expect_true(all(is.finite(predict(fit, x))))
  expect_true(all(is.finite(predict(fit, cbind(x[, 1], 7, x[, 3])))))
})

test_that("a class with a single row is handled", {
  d <- iris[c(1:50, 51:100, 101), ]
  fit <- kernel_ridge(Species ~ ., data = d, lambda = 0.1)
  expect_equal(levels(predict(fit, d)), levels(iris$Species))
})

test_that("models survive saveRDS / readRDS", {
  fit <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  back <- readRDS(f)
  expect_identical(predict(back, iris, type = "decision"), predict(fit, iris, type = "decision"))
  expect_output(print(back), "least-squares SVM classification, 3 classes")
})

test_that("bad input gives clear errors", {
  x <- as.matrix(iris[, 1:4])
  y <- iris$Species
  xn <- x; xn[7, "Petal.Width"] <- NA
  expect_error(kernel_ridge(xn, y), "missing or infinite values in column\\(s\\) 'Petal.Width' \\(row\\(s\\) 7\\)")
  xi <- x; xi[3, 1] <- Inf
  expect_error(kernel_ridge(xi, y), "'Sepal.Length'")
  yn <- y; yn[4] <- NA
  expect_error(kernel_ridge(x, yn), "'y' has 1 missing")
  expect_error(kernel_ridge(x, factor(rep("a", 150))), "only one class")
  expect_warning(kernel_ridge(x[1:100, ], y[1:100]), "dropping unused level\\(s\\) 'virginica'")
  expect_error(kernel_ridge(x, as.character(y)), "use a factor")
  expect_error(kernel_ridge(matrix(letters[1:6], 3), 1:3), "must be numeric")
  expect_error(kernel_ridge(x[0, ], y[0]), "empty")
  expect_error(kernel_ridge(x, y[-1]), "150 rows but 'y' has length 149")
  expect_error(kernel_ridge(x, y, lambda = 0), "'lambda' must be a number > 0")
  expect_error(kernel_ridge(x, y, lambda = -1), "lambda")
  expect_error(kernel_ridge(x, y, kernel = gaussian_kernel(-1)), "gamma")
  expect_error(kernel_ridge(x, y, lamda = 1), "unused argument\\(s\\) 'lamda'")
  expect_error(kernel_ridge(Species ~ ., data = iris[0, ]), "no rows")
  expect_error(kernel_ridge(Species ~ nothere, data = iris), "no column\\(s\\) 'nothere'")
  expect_error(kernel_ridge(x, y, threads = -1), "threads")
  d <- iris; d$f <- factor("one")
  expect_error(kernel_ridge(Species ~ ., data = d), "single level")
  fit <- kernel_ridge(x, y)
  expect_error(predict(fit, x, type = "prob"), "not probabilities")
  expect_error(predict(fit, x, type = "response"), "for regression")
  expect_error(predict(fit, x, type = "bogus"), "'type' must be one of")
  expect_error(predict(fit, x[, 1:3]), "lacks column\\(s\\) 'Petal.Width'")
  xn <- x[1:5, ]; xn[2, 2] <- NaN
  expect_error(predict(fit, xn), "'Sepal.Width'")
  reg <- kernel_ridge(x[, 1:3], x[, 4])
  expect_error(predict(reg, x[, 1:3], type = "class"), "regression")
})

test_that("the exact solve refuses problems larger than the memory limit", {
  op <- options(kernlearn.max_memory = 1e5)
  on.exit(options(op))
  expect_error(kernel_ridge(Species ~ ., data = iris),
               "needs 180.5 KiB but only 97.7 KiB of memory is available; at most about 111 rows fit")
})

test_that("results do not depend on the thread count", {
  set.seed(23)
  x <- matrix(runif(900 * 4), 900)
  y <- rowSums(x) + rnorm(900)
  a <- kernel_ridge(x, y, threads = 1)
  b <- kernel_ridge(x, y, threads = 2)
  expect_equal(a$alpha, b$alpha, tolerance = 1e-12)
  expect_equal(predict(a, x, threads = 1), predict(b, x, threads = 2), tolerance = 1e-12)
})

test_that("kernel_ridge scales inputs as asked: minmax, standardize or none", {
  x <- as.matrix(mtcars[, c("wt", "hp", "disp")])
  z <- scale(x)
  a <- kernel_ridge(x, mtcars$mpg, scale = "standardize", lambda = 0.1)
  b <- kernel_ridge(unname(z), mtcars$mpg, scale = "none", lambda = 0.1)
  expect_equal(predict(a, x), predict(b, unname(z)), tolerance = 1e-10)
  expect_output(print(a), "standardized")
  expect_output(print(kernel_ridge(x, mtcars$mpg)), "scaled to \\[0, 1\\]")
  expect_error(kernel_ridge(x, mtcars$mpg, scale = NA), "'scale' must be one of")
})

test_that("the one-pass column statistics and scaling give exactly base R's values", {
  set.seed(31)
  x <- cbind(matrix(rnorm(5003 * 6, mean = 1e4, sd = 3), 5003), 7, runif(5003) * -1e-8,
             rep(c(-2, 5), length.out = 5003))
  for (th in 1:2) {
    r <- kernlearn:::cpp_column_range(x, th)
    expect_identical(r[1, ], apply(x, 2L, min))
    expect_identical(r[2, ], apply(x, 2L, max))
    ms <- kernlearn:::cpp_column_mean_sd(x, th)
    expect_identical(ms[1, ], colMeans(x))
    expect_identical(ms[2, ], apply(x, 2L, stats::sd))
    cen <- colMeans(x)
    sc <- ifelse(ms[2, ] > 0, 1 / ms[2, ], 0)
    ref <- sweep(sweep(x, 2L, cen, `-`, check.margin = FALSE), 2L, sc, `*`,
                 check.margin = FALSE)
    expect_identical(kernlearn:::cpp_scale_columns(x, cen, sc, th), unname(ref))
    expect_true(kernlearn:::cpp_all_finite(x, th))
  }
  for (bad in c(NA, NaN, Inf, -Inf)) {
    y <- x
    y[4000, 7] <- bad
    expect_false(kernlearn:::cpp_all_finite(y, 2))
  }
  # two rows, one column, integers stored as doubles
  z <- matrix(c(3, 8), 2)
  expect_identical(kernlearn:::cpp_column_mean_sd(z, 1)[2, ], stats::sd(c(3, 8)))
  expect_error(kernlearn:::cpp_column_mean_sd(z[1, , drop = FALSE], 1), "fewer than two rows")
  # an integer matrix is scaled as its double values (predict-time path)
  spec <- list(min = c(1, 2), scale = c(0.5, 0.25), features = c("a", "b"))
  xi <- matrix(1:6, 3)
  expect_identical(kernlearn:::.scale_apply(xi, spec),
                   matrix(c((1:3 - 1) * 0.5, (4:6 - 2) * 0.25), 3,
                          dimnames = list(NULL, c("a", "b"))))
})

test_that("kernel_ridge()'s default Gaussian width is kernel_svm()'s: one over the scaled columns' variances", {
  set.seed(14)
  x <- cbind(runif(150), rexp(150))
  y <- sin(3 * x[, 1]) + 0.2 * x[, 2] + rnorm(150, 0, 0.1)
  fit <- kernel_ridge(x, y, lambda = 0.1)
  xs <- apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
  g <- 1 / sum(apply(xs, 2, stats::var))
  expect_equal(fit$kernel$gamma, g)
  ref <- kernel_ridge(x, y, kernel = gaussian_kernel(g), lambda = 0.1)
  expect_equal(predict(fit, x), predict(ref, x))
  expect_equal(kernel_ridge(x, y, kernel = gaussian_kernel(3))$kernel$gamma, 3)
  expect_equal(kernel_ridge(x, y, kernel = laplacian_kernel())$kernel$gamma, 1 / 2)
  expect_equal(kernel_ridge(x, y, scale = "standardize")$kernel$gamma, 1 / 2)
})
