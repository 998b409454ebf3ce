# Error messages that name where a bad value came from.

test_that("a bad thread count names the argument, option or environment variable it came from", {
  expect_error(kernel_svm(Species ~ ., data = iris, threads = 0), "'threads' must be")
  # OpenMP would try to start every thread asked for
  expect_error(kernel_svm(Species ~ ., data = iris, threads = 1e9), "from 1 to 1024 \\(got 1e\\+09\\)")
  expect_error(predict(kernel_svm(Species ~ ., data = iris), iris, threads = 1e9), "'threads'")
  expect_error(kernel_ridge(mpg ~ ., data = mtcars, threads = Inf), "'threads' must be")
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

test_that("inputs and arguments a fit cannot use get errors that name them", {
  set.seed(41)
  n <- 40
  X <- matrix(c(rnorm(2 * n), runif(n)), n, 3, dimnames = list(NULL, c("a", "b", "c")))
  yc <- factor(ifelse(X[, 1] + X[, 2] > 0, "p", "n"))
  yr <- 2 * X[, 1] + X[, 2] + rnorm(n, sd = 0.1)
  D <- data.frame(X, y = yc)
  # an offset would be dropped without a word
  expect_error(kernel_svm(y ~ a + offset(b), data = D, threads = 1), "offset\\(\\) terms")
  expect_error(tessellated_kernel(), "'P' is required")
  expect_error(tkl(X, yc, delta = 1e300, threads = 1), "delta = 1e\\+300 is too large for 3 inputs")
  # tkl() has no input scaling to turn off; 'scale' would otherwise be scale_response
  expect_error(tkl(X, yr, scale = FALSE, threads = 1), "'scale' is not an argument of tkl")
  expect_error(tkl(y ~ ., data = D, scale = FALSE, threads = 1), "'scale' is not an argument")
  # every column constant: nothing to learn
  Xc <- matrix(1, n, 3)
  for (f in list(function() kernel_svm(Xc, yc, threads = 1),
                 function() kernel_ridge(Xc, yr, threads = 1),
                 function() tkl(Xc, yc, threads = 1)))
    expect_error(f(), "every input column is constant")
  # unscaled inputs whose squared distances overflow
  expect_error(hgk(X * 1e200, yc, scale = FALSE, depth = 1, baseline = FALSE),
               "input values as large as .*e\\+200 overflow")
  expect_error(gem(X * 1e200, yc, scale = FALSE), "overflow")
  expect_error(dikl(X, yr * 1e300, dim = 10), "response values as large as .* overflow")
  # k-means with as many centres as distinct rows: the rows are the centres
  set.seed(42)
  f <- dikl(X, yc, init = "kmeans", dim = n, max_epochs = 1, threads = 1)
  expect_s3_class(f, "dikl")
  # a logical column given as text at prediction time
  D2 <- D
  D2$l <- D2$a > 0
  fl <- kernel_svm(y ~ ., data = D2, threads = 1)
  nd <- D2[1:3, ]
  nd$l <- as.character(nd$l)
  expect_error(predict(fl, nd), "column 'l' of 'newdata' is character but was numeric \\(or logical\\)")
  # a metric that cannot be called, or fails, is named with its fold
  expect_error(kl_cv(kernel_svm, X, yc, folds = 3, metric = function() 1),
               "metric function must take two arguments")
  expect_error(kl_cv(kernel_svm, X, yc, folds = 3, metric = function(t, p) stop("boom")),
               "the metric failed in fold 1: boom")
})
