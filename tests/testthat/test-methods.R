# Plots and summaries of tuning, cross-validation and kernel ridge results.

test_that("plot.kl_tune draws one- and two-parameter grids and other grids, marking the best", {
  set.seed(1)
  tn2 <- kl_tune(kernel_svm, Species ~ ., data = iris, grid = list(cost = 2^(0:2), gamma = 2^(-1:1)),
                 folds = 3)
  tn1 <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, grid = list(lambda = 10^(-3:1)))
  tnk <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4,
                 grid = list(lambda = c(0.1, 1), kernel = list(gaussian_kernel(1), linear_kernel())))
  pdf(NULL)
  on.exit(dev.off())
  expect_identical(plot(tn2), tn2)
  expect_identical(plot(tn1), tn1)
  expect_identical(plot(tnk), tnk)
  one <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, grid = list(lambda = 1))
  expect_error(plot(one), "one point")
})

test_that("plot.kl_cv draws the folds and the out-of-fold predictions", {
  set.seed(2)
  cvr <- kl_cv(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, lambda = 0.1)
  cvc <- kl_cv(kernel_svm, Species ~ ., data = iris, folds = 3)
  pdf(NULL)
  on.exit(dev.off())
  expect_identical(plot(cvr), cvr)
  expect_identical(plot(cvr, which = "predictions"), cvr)
  expect_identical(plot(cvc, which = "predictions"), cvc)
  expect_error(plot(cvr, which = "nope"), "which")
})

test_that("summary.kl_tune ranks the grid and marks the points within one standard error", {
  set.seed(3)
  tn <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, grid = list(lambda = 10^(-3:1)))
  s <- summary(tn)
  expect_s3_class(s, "summary.kl_tune")
  expect_equal(nrow(s$table), 5L)
  expect_true(all(diff(s$table$mean) >= 0))                 # best (lowest mse) first
  expect_equal(s$table$lambda[1], format(tn$best$lambda))
  b <- tn$best_index
  expect_equal(s$table$within_1se,
               s$table$mean <= tn$results$mean[b] + tn$results$se[b])
  expect_true(s$table$within_1se[1])
  expect_output(print(s), "within one standard error")
  # a kernel grid: the best kernel by its label, as print() shows it
  set.seed(3)
  tk <- kl_tune(kernel_ridge, mpg ~ ., data = mtcars, folds = 4, lambda = 0.1,
                grid = list(kernel = list(linear_kernel(), gaussian_kernel(gamma = 0.5))))
  lab <- tk$labels$kernel[tk$best_index]
  expect_output(print(summary(tk)), paste0("best: kernel = ", lab), fixed = TRUE)
  # a metric to maximise (accuracy) sorts the other way
  acc <- function(truth, pred) mean(truth == pred)
  ta <- kl_tune(kernel_svm, Species ~ ., data = iris, folds = 3, metric = acc, maximize = TRUE,
                grid = list(cost = c(0.01, 1, 10)))
  sa <- summary(ta)
  expect_true(all(diff(sa$table$mean) <= 0))
  expect_equal(sa$table$within_1se,
               sa$table$mean >= ta$results$mean[ta$best_index] - ta$results$se[ta$best_index])
})

test_that("summary.kernel_ridge reports the training error and the coefficients", {
  fr <- kernel_ridge(mpg ~ ., data = mtcars, lambda = 0.1)
  s <- summary(fr)
  fit <- predict(fr, mtcars)
  expect_equal(unname(s$train["mse"]), mean((fit - mtcars$mpg)^2))
  expect_equal(unname(s$train["r_squared"]),
               1 - sum((fit - mtcars$mpg)^2) / sum((mtcars$mpg - mean(mtcars$mpg))^2))
  expect_output(print(s), "Dual coefficients")
  fc <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
  sc <- summary(fc)
  expect_equal(unname(sc$train["error"]), mean(predict(fc, iris) != iris$Species))
  expect_equal(nrow(sc$coefs), 3L)
  expect_equal(sum(sc$fitted), 150L)
})
