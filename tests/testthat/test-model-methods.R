# nobs(), fitted() and residuals() of kernlearn models.

test_that("nobs() is the number of training rows of every learner", {
  d <- iris[rep(1:150, 2), ]
  fits <- list(kernel_svm(Species ~ ., iris), kernel_ridge(Species ~ ., iris),
               gem(Species ~ ., iris), dikl(Species ~ ., iris, dim = 10, max_epochs = 2),
               tkl(Species ~ ., iris, maxit = 2))
  for (f in fits) expect_identical(nobs(f), 150L)
  expect_identical(nobs(hgk(Species ~ ., d, depth = 1, control = hgk_control(maxit = 1),
                            folds = 2)), 300L)
})

test_that("fitted() and residuals() of models that keep their training inputs", {
  fr <- kernel_ridge(mpg ~ wt + hp, data = mtcars, lambda = 0.1)
  expect_equal(fitted(fr), unname(predict(fr, mtcars)))
  expect_equal(residuals(fr), mtcars$mpg - unname(predict(fr, mtcars)))
  fc <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
  expect_identical(fitted(fc), predict(fc, iris))
  expect_error(residuals(fc), "defined for regression")
  set.seed(1)
  x <- matrix(runif(600), 300, 2)
  y <- sin(3 * x[, 1]) + x[, 2]
  fh <- hgk(x, y, depth = 1, control = hgk_control(maxit = 2), folds = 2)
  expect_equal(fitted(fh), unname(predict(fh, x)))
  expect_equal(residuals(fh), y - unname(predict(fh, x)))
})

test_that("fitted() says why models without their training inputs cannot give it", {
  expect_error(fitted(kernel_svm(Species ~ ., iris)), "kernel_svm models keep no training inputs")
  expect_error(fitted(tkl(mpg ~ wt, mtcars, maxit = 2)), "tkl models keep no training inputs")
  expect_error(fitted(kernel_ridge(mpg ~ wt, mtcars), bogus = 1), "bogus")
})
