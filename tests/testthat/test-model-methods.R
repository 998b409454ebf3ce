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

test_that("kernel_svm, tkl, gem and dikl keep their fitted values (fitted = TRUE, as e1071)", {
  set.seed(2)
  Xr <- matrix(runif(240), 120, 2, dimnames = list(NULL, c("a", "b")))
  dr <- data.frame(Xr, y = sin(4 * Xr[, 1]) + Xr[, 2] + rnorm(120, sd = 0.05))
  dc <- iris[c(1:40, 51:90, 101:140), ]
  Xc <- as.matrix(dc[, 1:4])
  fits <- list(
    list(kernel_svm(Species ~ ., dc), dc, "class"),
    list(kernel_svm(Xc, dc$Species, probability = TRUE), Xc, "class"),
    list(kernel_svm(y ~ ., dr), dr, "response"),
    list(kernel_svm(Xr, dr$y, scale = "standardize"), Xr, "response"),
    list(tkl(Species ~ ., dc, maxit = 3), dc, "class"),
    list(tkl(Xr, dr$y, maxit = 3), Xr, "response"),
    list(gem(Species ~ ., dc, top = 2, threshold = 1), dc, "class"),
    list(gem(Xc, dc$Species, head = "cls", top = 2, threshold = 1), Xc, "class"),
    list(dikl(Species ~ ., dc, dim = 10, max_epochs = 3), dc, "class"),
    list(dikl(Xr, dr$y, dim = 10, max_epochs = 3), Xr, "response"))
  for (f in fits) {
    fit <- f[[1L]]
    p <- predict(fit, f[[2L]])
    names(p) <- NULL
    # the kept values are exactly predict() on the training data, in the learner's default type
    expect_identical(fitted(fit), p)
    expect_identical(predict(fit), p)
    expect_identical(predict(fit, type = f[[3L]]), p)
    expect_length(fitted(fit), nobs(fit))
    if (f[[3L]] == "response") {
      expect_equal(residuals(fit), dr$y - p)
      expect_error(predict(fit, type = "decision"), "pass the training data as 'newdata'")
    } else {
      expect_error(residuals(fit), "defined for regression")
      expect_error(predict(fit, type = "decision"), "pass the training data as 'newdata'")
    }
  }
  # type checks come first: a model without probabilities says so
  expect_error(predict(fits[[1L]][[1L]], type = "prob"), "no probability model")
  # precomputed kernels keep them too
  K <- kernel_matrix(gaussian_kernel(1), Xc)
  fk <- kernel_svm(K, dc$Species, kernel = "precomputed")
  expect_identical(fitted(fk), unname(predict(fk, K)))
  # the training accuracy a user reads from fitted() matches the refit on the same rows
  expect_gt(mean(fitted(fits[[1L]][[1L]]) == dc$Species), 0.9)
})

test_that("fitted = FALSE keeps nothing and says how to get the values", {
  fit <- kernel_svm(Species ~ ., iris, fitted = FALSE)
  expect_null(fit$fitted.values)
  expect_error(fitted(fit), "fitted with fitted = FALSE")
  expect_error(predict(fit), "'newdata' is required")
  expect_error(fitted(tkl(mpg ~ wt, mtcars, maxit = 2, fitted = FALSE)), "refit with fitted = TRUE")
  expect_error(fitted(gem(Species ~ ., iris, fitted = FALSE)), "fitted = FALSE")
  expect_error(kernel_svm(Species ~ ., iris, fitted = NA), "'fitted' must be TRUE or FALSE")
  expect_error(dikl(Species ~ ., iris, fitted = "yes"), "'fitted' must be TRUE or FALSE")
  expect_error(fitted(kernel_ridge(mpg ~ wt, mtcars), bogus = 1), "bogus")
  # the same model otherwise
  a <- kernel_svm(Species ~ ., iris)
  expect_identical(fit$coefs, a$coefs)
  # update() switches it on
  expect_identical(fitted(update(fit, fitted = TRUE)), fitted(a))
})

test_that("cross-validation fold fits skip the fitted values; the refit keeps them", {
  expect_true(.kl_takes_fitted(kernel_svm))
  expect_true(.kl_takes_fitted(kernlearn::gem))
  expect_false(.kl_takes_fitted(kernel_ridge))
  expect_false(.kl_takes_fitted(function(x, y, ...) kernel_svm(x, y, ...)))
  # record the 'fitted' flag of every fit
  seen <- new.env()
  seen$f <- logical()
  ns <- asNamespace("kernlearn")
  suppressMessages(trace(".kl_keep_fitted", where = ns, print = FALSE,
    tracer = bquote(assign("f", c(get("f", envir = .(seen)), fitted), envir = .(seen)))))
  on.exit(suppressMessages(untrace(".kl_keep_fitted", where = ns)), add = TRUE)
  X <- as.matrix(iris[, 1:4])
  cv <- kl_cv(kernel_svm, X, iris$Species, folds = 3, seed = 1)
  expect_identical(seen$f, rep(FALSE, 3L))
  seen$f <- logical()
  cv2 <- kl_cv(kernel_svm, X, iris$Species, folds = 3, seed = 1, fitted = TRUE)
  expect_identical(seen$f, rep(TRUE, 3L))
  expect_identical(cv$predictions, cv2$predictions)
  seen$f <- logical()
  # gem keeps its fitted classes through its own function (from the fit's scores)
  suppressMessages(trace(".gem_keep_fitted", where = ns, print = FALSE,
    tracer = bquote(assign("f", c(get("f", envir = .(seen)), fitted), envir = .(seen)))))
  on.exit(suppressMessages(untrace(".gem_keep_fitted", where = ns)), add = TRUE)
  tn <- kl_tune(gem, Species ~ ., data = iris, grid = list(ridge = c(0.1, 1)), folds = 3,
                seed = 1, top = 2, threshold = 1)
  # every fold fit (3 per grid point, past the grid's edge too) without, the refit with
  expect_identical(seen$f, c(rep(FALSE, 3L * nrow(tn$results)), TRUE))
  expect_identical(fitted(tn$best_model), predict(tn$best_model, iris))
})
