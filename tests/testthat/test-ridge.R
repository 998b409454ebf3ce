test_that("multi-output ridge equals the closed form with an unpenalised intercept", {
  set.seed(10)
  n <- 80; p <- 6
  x <- matrix(rnorm(n * p), n)
  Y <- cbind(x %*% rnorm(p) + 3 + rnorm(n), x[, 1] - 2 + rnorm(n), rnorm(n))
  lambda <- 2.5
  fit <- kernlearn:::cpp_ridge_fit(x, Y, lambda, TRUE, 2L)
  xc <- scale(x, scale = FALSE)
  yc <- scale(Y, scale = FALSE)
  W <- solve(crossprod(xc) + lambda * diag(p), crossprod(xc, yc))
  b <- colMeans(Y) - drop(colMeans(x) %*% W)
  expect_equal(fit$coef, W, tolerance = 1e-10)
  expect_equal(drop(fit$intercept), b, tolerance = 1e-10)
  # the dual form (more columns than rows) gives the same solution
  xw <- cbind(x, matrix(rnorm(n * 100), n))
  fd <- kernlearn:::cpp_ridge_fit(xw, Y, lambda, TRUE, 2L)
  xwc <- scale(xw, scale = FALSE)
  Wd <- solve(crossprod(xwc) + lambda * diag(ncol(xw)), crossprod(xwc, yc))
  expect_equal(fd$coef, Wd, tolerance = 1e-8)
})

test_that("ridge agrees with MASS::lm.ridge on standardised inputs", {
  skip_if_not_installed("MASS")
  set.seed(11)
  n <- 60
  d <- data.frame(a = rnorm(n), b = rnorm(n), c = rnorm(n))
  d$y <- 1 + 2 * d$a - d$b + rnorm(n)
  lambda <- 3
  lr <- MASS::lm.ridge(y ~ a + b + c, data = d, lambda = lambda)
  x <- as.matrix(d[, 1:3])
  s <- sqrt(colMeans(scale(x, scale = FALSE)^2))   # lm.ridge scales by the n-divisor sd
  fit <- kernlearn:::cpp_ridge_fit(sweep(x, 2, s, "/"), matrix(d$y), lambda, TRUE, 1L)
  expect_equal(unname(drop(fit$coef) / s), unname(coef(lr)[-1]), tolerance = 1e-8)
  expect_equal(drop(fit$intercept), unname(coef(lr)[1]), tolerance = 1e-8)
})

test_that("ridge without intercept and bad lambda", {
  set.seed(12)
  x <- matrix(rnorm(40), 20)
  y <- matrix(rnorm(20))
  fit <- kernlearn:::cpp_ridge_fit(x, y, 0.5, FALSE, 1L)
  expect_equal(fit$coef, solve(crossprod(x) + 0.5 * diag(2), crossprod(x, y)), tolerance = 1e-10)
  expect_equal(drop(fit$intercept), 0)
  expect_error(kernlearn:::cpp_ridge_fit(x, y, -1, TRUE, 1L), "lambda")
  expect_error(kernlearn:::cpp_ridge_fit(cbind(x, 0), y, 0, TRUE, 1L), "not positive definite")
})
