# Conventions shared by every learner.

# Each learner with settings that fit in a fraction of a second on iris-sized data.
quick_fits <- function() {
  list(
    kernel_svm = function(x, y) kernel_svm(x, y),
    kernel_ridge = function(x, y) kernel_ridge(x, y),
    gem = function(x, y) gem(x, y, threshold = 1),
    dikl = function(x, y) dikl(x, y, dim = 5, max_epochs = 2),
    hgk = function(x, y) hgk(x, y, depth = 1, control = hgk_control(maxit = 0)),
    tkl = function(x, y) tkl(x, y, maxit = 2, baseline = FALSE))
}

test_that("duplicated column names are refused at fit by every learner", {
  X <- as.matrix(iris[, 1:4])
  colnames(X) <- c("a", "a", "b", "c")
  y <- iris$Species
  big <- X[rep(seq_len(nrow(X)), 2), ]
  fits <- list(
    kernel_svm = function() kernel_svm(X, y),
    kernel_ridge = function() kernel_ridge(X, y),
    gem = function() gem(X, y),
    dikl = function() dikl(X, y, dim = 5, max_epochs = 1),
    hgk = function() hgk(big, rep(y, 2), depth = 1, control = hgk_control(maxit = 0)))
  for (nm in names(fits))
    expect_error(fits[[nm]](), "duplicated column name\\(s\\) 'a'", info = nm)
  df <- data.frame(X, check.names = FALSE)
  expect_error(kernel_svm(df, y), "duplicated column name\\(s\\) 'a'")
  # unique names still work, and unnamed matrices get V1..Vd
  colnames(X) <- NULL
  expect_s3_class(kernel_svm(X, y), "kernel_svm")
})

test_that("a numeric vector x is one input column, at fit and in predict, for every learner", {
  x <- iris$Petal.Length
  y <- iris$Species
  fits <- quick_fits()
  for (nm in names(fits)) {
    set.seed(1)
    f <- fits[[nm]](x, y)
    set.seed(1)
    fm <- fits[[nm]](matrix(x, ncol = 1), y)
    # the fitted values and predictions on a vector are those of the one-column matrix
    expect_equal(fitted(f), fitted(fm), info = nm)
    expect_equal(predict(f, x[1:7]), predict(fm, matrix(x[1:7], ncol = 1)), info = nm)
    expect_length(predict(f, x[1:7]), 7L)
    # a single value is a single row
    expect_length(predict(f, x[3]), 1L)
  }
  # with several columns a vector is still one row, and a wrong length an error naming it
  f2 <- kernel_svm(as.matrix(iris[, 1:2]), y)
  expect_length(predict(f2, c(5, 3)), 1L)
  expect_error(predict(f2, c(5, 3, 1)), "numeric vector of length 3; as one row it needs one value for each of the model.s 2 input columns")
})

test_that("an ordered factor response is classification on its levels, as a factor is", {
  set.seed(2)
  d <- iris[sample(150, 90), ]
  d$Species <- factor(d$Species, ordered = TRUE)
  x <- as.matrix(d[, 1:4])
  yo <- d$Species
  yf <- factor(yo, ordered = FALSE)
  fits <- quick_fits()
  for (nm in names(fits)) {
    set.seed(1)
    expect_silent(fo <- fits[[nm]](x, yo))
    set.seed(1)
    ff <- fits[[nm]](x, yf)
    expect_identical(predict(fo, x), predict(ff, x), info = nm)
    expect_false(is.ordered(predict(fo, x)), info = nm)
  }
  # the formula interface alike
  set.seed(1)
  expect_silent(fo <- tkl(Species ~ ., data = d, maxit = 2))
  expect_identical(levels(predict(fo, d)), levels(yo))
})

test_that("models store the call as the user writes it, so update() works", {
  set.seed(1)
  d <- iris[rep(1:150, 2), ]
  x <- as.matrix(d[, 1:4])
  y <- d$Species
  f1 <- kernel_svm(Species ~ ., data = iris, cost = 1)
  expect_identical(f1$call[[1L]], as.name("kernel_svm"))
  expect_equal(update(f1, cost = 4)$cost, 4)
  f2 <- kernel_svm(x, y)
  expect_equal(update(f2, cost = 3)$cost, 3)
  f3 <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
  expect_equal(update(f3, lambda = 1)$lambda, 1)
  f4 <- gem(Species ~ ., data = iris)
  expect_s3_class(update(f4, lambda = 0.01), "gem")
  f5 <- dikl(Species ~ ., data = iris, dim = 5, max_epochs = 1)
  expect_equal(update(f5, dim = 6)$params$dim, 6)
  f6 <- hgk(x, y, depth = 1, control = hgk_control(maxit = 0))
  expect_equal(update(f6, gradient = "fixed")$gradient, "fixed")
  tu <- kl_tune(kernel_ridge, Species ~ ., data = iris, grid = list(lambda = c(0.1, 1)))
  expect_identical(tu$best_model$call[[1L]], as.name("kernel_ridge"))
})

test_that("a failing kernel_svm fit prints nothing but its error", {
  x <- matrix(runif(40), 20, 2)
  y <- factor(rep(c("a", "b"), 10))
  out <- capture.output(res <- tryCatch(kernel_svm(x, y, cost = 1, class.weights = c(z = 1)),
                                        error = function(e) "failed"), type = "message")
  expect_identical(res, "failed")
  expect_false(any(grepl("Timing stopped", out)))
})

test_that("unused response levels are dropped with the same warning by both interfaces", {
  d <- iris
  d$Species <- factor(d$Species, levels = c(levels(iris$Species), "extra"))
  expect_warning(f1 <- kernel_svm(Species ~ ., data = d), "dropping unused level\\(s\\) 'extra'")
  expect_warning(f2 <- kernel_svm(d[, 1:4], d$Species), "dropping unused level\\(s\\) 'extra'")
  expect_identical(f1$levels, f2$levels)
  expect_warning(kernel_ridge(Species ~ ., data = d), "'extra'")
})

test_that("predicted classes keep the response's levels without rows, as e1071 and ranger do", {
  # a class with no training rows: the model has no such class, but its predictions are a
  # factor of the response's own levels, so that they compare with held-out labels
  set.seed(3)
  d <- iris[sample(150), ]
  d$Species <- factor(as.character(d$Species), levels = c("setosa", "unseen", "versicolor",
                                                          "virginica"))
  full <- levels(d$Species)
  tr <- d[1:100, ]
  te <- d[101:150, ]
  fits <- suppressWarnings(list(
    kernel_svm = kernel_svm(Species ~ ., data = tr, gamma = 1),
    kernel_svm_prob = kernel_svm(Species ~ ., data = tr, gamma = 1, probability = TRUE),
    kernel_ridge = kernel_ridge(Species ~ ., data = tr, lambda = 0.01),
    hgk = hgk(Species ~ ., data = tr),
    tkl = tkl(Species ~ ., data = tr, maxit = 3, baseline = FALSE),
    gem = gem(Species ~ ., data = tr, top = 2, threshold = 1, lambda = 1e-3),
    dikl = dikl(Species ~ ., data = tr, dim = 10, max_epochs = 2)))
  for (nm in names(fits)) {
    f <- fits[[nm]]
    expect_identical(f$levels, c("setosa", "versicolor", "virginica"), info = nm)
    p <- predict(f, te)
    expect_identical(levels(p), full, info = nm)
    expect_false(any(p == "unseen"), info = nm)
    # the comparison a user makes works, and agrees with the one on the labels
    expect_equal(mean(p != te$Species), mean(as.character(p) != as.character(te$Species)),
                 info = nm)
    expect_identical(levels(fitted(f)), full, info = nm)
    expect_identical(levels(predict(f, te[0, ])), full, info = nm)
  }
  # probabilities and decision values stay those of the model's classes
  expect_identical(colnames(predict(fits$kernel_svm_prob, te, type = "prob")),
                   c("setosa", "versicolor", "virginica"))
  expect_identical(colnames(predict(fits$kernel_ridge, te, type = "decision")),
                   c("setosa", "versicolor", "virginica"))
  # the matrix interface and a precomputed kernel matrix
  fx <- suppressWarnings(kernel_svm(as.matrix(tr[, 1:4]), tr$Species, gamma = 1))
  expect_identical(levels(predict(fx, as.matrix(te[, 1:4]))), full)
  k <- gaussian_kernel(gamma = 1)
  fk <- suppressWarnings(kernel_svm(kernel_matrix(k, as.matrix(tr[, 1:4])), tr$Species))
  pk <- predict(fk, kernel_matrix(k, as.matrix(te[, 1:4]), as.matrix(tr[, 1:4])))
  expect_identical(levels(pk), full)
  expect_false(any(pk == "unseen"))
  # a class weight for a level without rows weighs nothing and is left out; a name that is
  # no level of the response is an error
  fw <- suppressWarnings(kernel_svm(Species ~ ., data = tr, gamma = 1,
                                    class.weights = c(unseen = 3, virginica = 2)))
  expect_equal(fw$class.weights, c(setosa = 1, versicolor = 1, virginica = 2))
  expect_error(suppressWarnings(kernel_svm(Species ~ ., data = tr, class.weights = c(other = 2))),
               "'class.weights' names 'other', which is not a class")
  # a response without unused levels keeps exactly its levels
  expect_null(kernel_svm(Species ~ ., data = iris, gamma = 1)$spec$response_levels)
})

test_that("cross-validated classes keep every level when a fold's fit lacks a class", {
  # the only row of class "rare" is in fold 1, so fold 1's model has no such class; the
  # assembled predictions still carry it as a level, and no row is lost to NA
  set.seed(4)
  x <- as.matrix(iris[, 1:4])
  y <- factor(as.character(iris$Species), levels = c(levels(iris$Species), "rare"))
  y[1] <- "rare"
  foldid <- c(1L, rep_len(1:5, 149))
  cv <- suppressWarnings(kl_cv(kernel_svm, x, y, foldid = foldid, gamma = 1))
  expect_identical(levels(cv$predictions), levels(y))
  expect_false(anyNA(cv$predictions))
  expect_equal(sum(cv$fold_metrics * cv$fold_sizes) / 150, mean(cv$predictions != y))
})

test_that("predict methods refuse unknown arguments", {
  fr <- kernel_ridge(Species ~ ., data = iris, lambda = 0.1)
  expect_error(predict(fr, iris, bogus = 1), "bogus")
  fs <- kernel_svm(Species ~ ., data = iris)
  expect_error(predict(fs, iris, bogus = 1), "bogus")
})

test_that("type = 'decision' follows one convention in every learner", {
  set.seed(1)
  d2 <- droplevels(iris[51:150, ])
  rownames(d2) <- paste0("r", 1:100)
  d2b <- d2[rep(1:100, 3), ]
  two <- list(
    kernel_svm = kernel_svm(Species ~ ., d2),
    kernel_ridge = kernel_ridge(Species ~ ., d2),
    gem = gem(Species ~ ., d2, top = 2, threshold = 1, lambda = 1e-3),
    gem_cls = gem(Species ~ ., d2, top = 2, threshold = 1, lambda = 1e-3, head = "cls"),
    dikl = dikl(Species ~ ., d2, dim = 10, max_epochs = 2),
    dikl_logistic = dikl(Species ~ ., d2, dim = 10, max_epochs = 2, head = "logistic"),
    hgk = hgk(Species ~ ., d2b, depth = 1, control = hgk_control(maxit = 1), folds = 2),
    tkl = tkl(Species ~ ., d2, maxit = 2))
  for (nm in names(two)) {
    dec <- predict(two[[nm]], d2, type = "decision")
    expect_true(is.numeric(dec) && is.null(dim(dec)) && length(dec) == 100L, info = nm)
    expect_null(names(dec), info = nm)
    cls <- predict(two[[nm]], d2)
    # positive means the second level (up to ties and, for voting machines, exactly)
    agree <- mean((dec > 0) == (cls == "virginica"))
    expect_gt(agree, 0.97, label = nm)
  }
  many <- list(
    kernel_ridge = kernel_ridge(Species ~ ., iris),
    gem = gem(Species ~ ., iris, top = 2, threshold = 1, lambda = 1e-3),
    dikl = dikl(Species ~ ., iris, dim = 10, max_epochs = 2),
    dikl_logistic = dikl(Species ~ ., iris, dim = 10, max_epochs = 2, head = "logistic"))
  for (nm in names(many)) {
    dec <- predict(many[[nm]], iris, type = "decision")
    expect_identical(dimnames(dec), list(NULL, levels(iris$Species)), info = nm)
  }
  for (f in list(kernel_svm(Species ~ ., iris), tkl(Species ~ ., iris, maxit = 2))) {
    dec <- predict(f, iris, type = "decision")
    expect_identical(colnames(dec), c("versicolor/setosa", "virginica/setosa", "virginica/versicolor"))
    expect_null(rownames(dec))
  }
  r <- predict(dikl(mpg ~ ., mtcars, dim = 10, max_epochs = 2), mtcars, type = "decision")
  expect_true(is.numeric(r) && is.null(dim(r)))
})

test_that("zero rows of newdata give zero predictions of the right kind, matrix or data.frame", {
  X <- as.matrix(iris[, 1:4])
  fits <- quick_fits()
  for (nm in names(fits)) {
    set.seed(1)
    f <- fits[[nm]](X, iris$Species)
    for (nd in list(X[0, ], as.data.frame(X)[0, ])) {
      p <- predict(f, nd)
      expect_true(is.factor(p) && length(p) == 0L, info = nm)
      expect_identical(levels(p), levels(iris$Species), info = nm)
      expect_equal(dim(predict(f, nd, type = "decision")), c(0L, 3L), info = nm)
    }
    if (nm == "gem") next  # a classifier only
    set.seed(1)
    r <- fits[[nm]](X[, 2:4], X[, 1])
    expect_identical(predict(r, X[0, 2:4]), numeric(0), info = nm)
  }
})

test_that("an impossible argument value is an error that names the function and the argument", {
  X <- as.matrix(iris[, 1:4])
  y <- iris$Species
  expect_error(kernel_svm(X, y, cost = -1), "^kernel_svm\\(\\): 'cost' must be a number > 0 \\(got -1\\)")
  expect_error(kernel_svm(X, y, gamma = 0), "^kernel_svm\\(\\): 'gamma' must be")
  expect_error(kernel_svm(X, X[, 1], epsilon = -1), "^kernel_svm\\(\\): 'epsilon' must be")
  expect_error(kernel_ridge(X, y, lambda = 0), "^kernel_ridge\\(\\): 'lambda' must be")
  expect_error(tkl(X, y, delta = -1), "^tkl\\(\\): 'delta' must be")
  expect_error(dikl(X, y, dim = 0), "^dikl\\(\\): 'dim' must be")
  expect_error(gem(X, y, top = 0), "^gem\\(\\): 'top' must be")
  expect_error(gaussian_kernel(-1), "^gaussian_kernel\\(\\): 'gamma' must be")
  expect_error(polynomial_kernel(degree = 0), "^polynomial_kernel\\(\\): 'degree' must be")
})
