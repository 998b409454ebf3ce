# Error messages that name where a bad value came from.

test_that("a bad thread count names the argument, option or environment variable it came from", {
  expect_error(kernel_svm(Species ~ ., data = iris, threads = 0), "'threads' must be")
  old <- options(kernlearn.threads = -1)
  expect_error(kernel_svm(Species ~ ., data = iris), "options\\(kernlearn.threads\\) must be")
  options(old)
  old_env <- Sys.getenv("KERNLEARN_THREADS", NA)
  Sys.setenv(KERNLEARN_THREADS = "abc")
  on.exit(if (is.na(old_env)) Sys.unsetenv("KERNLEARN_THREADS")
          else Sys.setenv(KERNLEARN_THREADS = old_env))
  old <- options(kernlearn.threads = NULL)
  expect_error(kernel_ridge(mpg ~ ., data = mtcars),
               "environment variable KERNLEARN_THREADS must be .*\"abc\"")
  options(old)
})

test_that("a list column in the formula interface is named", {
  d <- data.frame(y = rnorm(10), a = 1:10)
  d$l <- as.list(1:10)
  expect_error(kernel_ridge(y ~ ., data = d), "column 'l' of 'data' is a list")
  expect_error(tkl(y ~ a + l, data = d), "column 'l' of 'data' is a list")
  expect_silent(kernel_ridge(y ~ a, data = d))
})

test_that("gem() with a random Fourier map too large for memory names the need and the limit", {
  x <- matrix(runif(200 * 5), 200)
  y <- factor(rep(1:2, 100))
  old <- options(kernlearn.max_memory = 1e9)
  on.exit(options(old))
  expect_error(gem(x, y, rff = list(dim = 50000, gamma = 1)),
               "random Fourier map's class moments .*rff\\$dim")
})
