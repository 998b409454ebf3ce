# dikl(): fits, predictions, heads and input errors. The DI, LS and CE objectives, their
# gradients against finite differences, the ridge head and the training of a map are checked by
# the core's C++ tests (tests/core).

test_that("dikl() fits from a formula and x/y, and predict types are consistent", {
  set.seed(7)
  fit <- dikl(Species ~ ., data = iris, dim = 15, max_epochs = 15)
  expect_s3_class(fit, "dikl")
  p <- predict(fit, iris)
  expect_s3_class(p, "factor")
  expect_identical(levels(p), levels(iris$Species))
  expect_gt(mean(p == iris$Species), 0.9)
  d <- predict(fit, iris, type = "decision")
  expect_equal(dim(d), c(150L, 3L))
  expect_identical(p, factor(levels(iris$Species)[max.col(d, "first")], levels(iris$Species)))
  expect_error(predict(fit, iris, type = "prob"), "logistic")
  expect_error(predict(fit, iris, type = "response"), "regression")
  expect_equal(nrow(fit$trace), fit$training$epochs)
  expect_true(all(diff(fit$trace$lr) <= 0))

  set.seed(7)
  fxy <- dikl(iris[, 1:4], iris$Species, dim = 15, max_epochs = 15)
  expect_equal(fxy$map$Z, fit$map$Z)

  set.seed(8)
  lg <- dikl(Species ~ ., data = iris, map = "fourier", dim = 30, head = "logistic",
             max_epochs = 10)
  pr <- predict(lg, iris, type = "prob")
  expect_equal(unname(rowSums(pr)), rep(1, 150), tolerance = 1e-12)
  expect_identical(colnames(pr), levels(iris$Species))
  expect_identical(predict(lg, iris), factor(levels(iris$Species)[max.col(pr, "first")],
                                             levels(iris$Species)))
  expect_equal(dim(lg$map$W), c(4L, 30L))
})

test_that("the krr head is ridge regression on the learned features", {
  set.seed(9)
  fit <- dikl(Species ~ ., data = iris, dim = 10, head = "krr", lambda = 0.1, max_epochs = 5)
  F <- features(fit, iris)
  Y <- diag(3)[as.integer(iris$Species), ]
  Fc <- scale(F, scale = FALSE)
  W <- solve(crossprod(Fc) + 0.1 * diag(ncol(F)), crossprod(Fc, scale(Y, scale = FALSE)))
  b0 <- colMeans(Y) - colMeans(F) %*% W
  dec <- sweep(F %*% W, 2, b0, `+`)
  expect_equal(unname(predict(fit, iris, type = "decision")), unname(dec), tolerance = 1e-8)
})

test_that("whitened Nystrom features reproduce the Nystrom kernel approximation", {
  set.seed(10)
  fit <- dikl(Species ~ ., data = iris, dim = 8, objective = "none")
  x <- kernlearn:::.kl_newdata(fit$spec, iris, "t")
  Z <- fit$map$Z
  g <- fit$map$gamma
  Kxz <- exp(-g * outer(rowSums(x^2), rowSums(Z^2), `+`) + 2 * g * x %*% t(Z))
  Bzz <- exp(-g * as.matrix(dist(Z))^2)
  F <- features(fit, iris)
  expect_equal(unname(F %*% t(F)), unname(Kxz %*% solve(Bzz, t(Kxz))), tolerance = 1e-6)
  # Landmarks of an untrained map are training rows.
  expect_true(all(apply(Z, 1, function(z) any(colSums(abs(t(x) - z)) < 1e-12))))
  # Repeated landmarks make k(Z, Z) singular: the whitening drops the null directions, one
  # feature per distinct landmark remains, and the approximation is unchanged.
  set.seed(4)
  d <- iris[rep(c(1:5, 51:55), 15), ]
  d$Species <- droplevels(d$Species)
  rep_fit <- dikl(Species ~ ., data = d, dim = 30, objective = "none")
  distinct <- nrow(unique(round(rep_fit$map$Z, 12)))
  expect_lt(distinct, 30L)
  expect_equal(ncol(features(rep_fit, d)), distinct)
  Zu <- unique(round(rep_fit$map$Z, 12))
  xd <- kernlearn:::.kl_newdata(rep_fit$spec, d, "t")
  gd <- rep_fit$map$gamma
  Kd <- exp(-gd * outer(rowSums(xd^2), rowSums(Zu^2), `+`) + 2 * gd * xd %*% t(Zu))
  Fd <- features(rep_fit, d)
  expect_equal(unname(Fd %*% t(Fd)),
               unname(Kd %*% solve(exp(-gd * as.matrix(dist(Zu))^2), t(Kd))), tolerance = 1e-6)
})

test_that("regression with the standardised response, and the k-means and CE baselines", {
  set.seed(11)
  r <- dikl(mpg ~ ., data = mtcars, dim = 10, max_epochs = 20)
  expect_identical(r$task, "regression")
  pr <- predict(r, mtcars)
  expect_type(pr, "double")
  expect_identical(names(pr), rownames(mtcars))
  expect_lt(mean((pr - mtcars$mpg)^2), var(mtcars$mpg))
  km <- dikl(Species ~ ., data = iris, dim = 10, objective = "none", init = "kmeans")
  expect_equal(nrow(km$map$Z), 10L)
  ce <- dikl(Species ~ ., data = iris, dim = 10, objective = "ce", max_epochs = 20)
  expect_lt(utils::tail(ce$trace$objective, 1), ce$trace$objective[1])
  ls <- dikl(Species ~ ., data = iris, dim = 10, objective = "ls", max_epochs = 20)
  expect_lt(utils::tail(ls$trace$objective, 1), ls$trace$objective[1])
})

test_that("set.seed reproduces a fit and the thread count does not change it", {
  set.seed(12)
  a <- dikl(Species ~ ., data = iris, dim = 12, max_epochs = 8, batch_size = 50, threads = 1)
  set.seed(12)
  b <- dikl(Species ~ ., data = iris, dim = 12, max_epochs = 8, batch_size = 50, threads = 2)
  expect_identical(a$map$Z, b$map$Z)
  expect_identical(a$trace, b$trace)
  set.seed(12)
  f1 <- dikl(Species ~ ., data = iris, map = "fourier", dim = 20, max_epochs = 5, threads = 1)
  set.seed(12)
  f2 <- dikl(Species ~ ., data = iris, map = "fourier", dim = 20, max_epochs = 5, threads = 2)
  expect_identical(f1$map$W, f2$map$W)
  expect_identical(predict(f1, iris), predict(f2, iris))
  # Large enough for the blocked Cholesky factorisation and the tiled products to split work.
  set.seed(3)
  n <- 1400
  x <- matrix(rnorm(n * 6), n)
  y <- factor(ifelse(x[, 1]^2 + x[, 2] > 1, "a", ifelse(x[, 3] > 0, "b", "c")))
  for (mp in c("nystrom", "fourier")) {
    set.seed(5)
    a <- dikl(x, y, map = mp, dim = 300, batch_size = 700, max_epochs = 2, threads = 1)
    set.seed(5)
    b <- dikl(x, y, map = mp, dim = 300, batch_size = 700, max_epochs = 2, threads = 2)
    expect_identical(a$map, b$map)
    expect_identical(a$trace, b$trace)
    expect_identical(predict(a, x, type = "decision"), predict(b, x, type = "decision"))
  }
})

test_that("saveRDS round-trips give identical predictions", {
  set.seed(13)
  fit <- dikl(Species ~ ., data = iris, dim = 10, max_epochs = 5)
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  back <- readRDS(f)
  expect_identical(predict(back, iris, type = "decision"), predict(fit, iris, type = "decision"))
})

test_that("gamma = 'cv' picks from the grid around the median rule", {
  set.seed(14)
  fit <- dikl(Species ~ ., data = iris, dim = 10, gamma = "cv", max_epochs = 3)
  expect_equal(nrow(fit$gamma_cv), 7L)
  expect_equal(fit$params$gamma, fit$gamma_cv$gamma[which.min(fit$gamma_cv$error)])
})

test_that("bad input gets clear errors", {
  expect_error(dikl(Species ~ ., data = droplevels(iris[c(1:20, 51:60), ]), dim = 50),
               "dim = 50 landmarks but only 30")
  expect_error(dikl(Species ~ ., data = iris, dim = 100, batch_size = 50),
               "batch_size = 50 is smaller than dim = 100")
  expect_error(dikl(Species ~ ., data = iris, map = "fourier", dim = 200),
               "dim = 200 features but only 150 training rows")
  small <- dikl(Species ~ ., data = iris, dim = 10, max_epochs = 2)
  expect_identical(predict(small, iris[0, ]), factor(character(), levels = levels(iris$Species)))
  expect_identical(dim(predict(small, iris[0, ], type = "decision"))[1], 0L)
  expect_error(dikl(Species ~ ., data = iris, gamma = 0), "gamma")
  expect_error(dikl(Species ~ ., data = iris, gamma = -1), "gamma")
  expect_error(dikl(Species ~ ., data = iris, gamma = "median"), "gamma")
  expect_error(dikl(Species ~ ., data = iris, dim = 0), "dim")
  expect_error(dikl(Species ~ ., data = iris, map = "laplace"), "'map' must be one of")
  expect_error(dikl(Species ~ ., data = iris, objective = "mse"), "'objective' must be one of")
  expect_error(dikl(Species ~ ., data = iris, lr = 0), "lr")
  expect_error(dikl(mpg ~ ., data = mtcars, objective = "ce"), "classification")
  expect_error(dikl(mpg ~ ., data = mtcars, head = "svm"), "krr")
  expect_error(dikl(Species ~ ., data = iris, map = "fourier", init = "kmeans"), "Nystrom")
  expect_error(dikl(Species ~ ., data = iris, foo = 1), "foo")
  one <- iris[1:50, ]
  one$Species <- droplevels(one$Species)
  expect_error(dikl(Species ~ ., data = one, dim = 5), "class")
  bad <- iris
  bad$Sepal.Length[3] <- NA
  expect_error(dikl(Species ~ ., data = bad, dim = 5), "Sepal.Length")
  x <- as.matrix(iris[, 1:4])
  x[2, 2] <- Inf
  expect_error(dikl(x, iris$Species, dim = 5), "infinite values in column.*Sepal.Width")
  set.seed(15)
  fit <- dikl(Species ~ ., data = iris, dim = 5, max_epochs = 2)
  expect_error(predict(fit, iris[, -1]), "Sepal.Length")
  expect_error(plot(dikl(Species ~ ., data = iris, dim = 5, objective = "none")), "not trained")
})

test_that("factor predictors and kl_tune work with dikl", {
  set.seed(16)
  df <- data.frame(a = runif(120), b = factor(sample(c("u", "v", "w"), 120, TRUE)))
  df$y <- factor(ifelse(df$a > 0.5 | df$b == "u", "p", "q"))
  fit <- dikl(y ~ ., data = df, dim = 10, max_epochs = 10)
  expect_gt(mean(predict(fit, df) == df$y), 0.8)
  expect_error(predict(fit, transform(df, b = "z")), "not seen in training")
  tn <- kl_tune(dikl, Species ~ ., data = iris, folds = 3, grid = list(cost = c(0.1, 10)),
                dim = 8, max_epochs = 3)
  expect_true(tn$best$cost %in% c(0.1, 10))
})

test_that("plot, print and summary run", {
  set.seed(17)
  fit <- dikl(Species ~ ., data = iris, dim = 8, max_epochs = 5)
  pdf(NULL)
  on.exit(dev.off())
  expect_invisible(plot(fit))
  expect_output(print(fit), "DI-trained Nystrom map")
  expect_output(print(summary(fit)), "Objective by epoch")
})

test_that("k-means landmarks start from distinct rows when the data have duplicates", {
  set.seed(18)
  df <- iris[rep(1:150, 3), ]
  km <- dikl(Species ~ ., data = df, dim = 30, objective = "none", init = "kmeans")
  expect_equal(nrow(unique(km$map$Z)), 30L)
  few <- droplevels(df[c(1, 1, 1, 51, 51, 51), ])
  expect_error(dikl(Species ~ ., data = few, dim = 4, objective = "none", init = "kmeans"),
               "at least dim = 4 distinct rows")
})

test_that("without cost or lambda, dikl chooses the head's penalty on held-out rows", {
  set.seed(1)
  fit <- dikl(Species ~ ., data = iris, dim = 20, max_epochs = 20)
  s <- fit$params$head_search
  expect_identical(names(s), c("cost", "error", "loss"))
  expect_equal(fit$params$cost, s$cost[order(s$error, s$loss, seq_len(nrow(s)))[1L]])
  expect_equal(fit$head$cost, fit$params$cost)
  expect_output(print(fit), "linear SVM \\(cost .*, chosen from 7 values by the error rate on 30 held-out rows\\)")
  # the errors recomputed from the model's own features and an independent linear SVM fit
  val <- attr(s, "validation")
  expect_equal(as.vector(table(iris$Species[val])), c(10, 10, 10))
  Fx <- features(fit, iris)
  tr <- setdiff(1:150, val)
  for (i in seq_len(nrow(s))) {
    h <- kernlearn:::.linear_svm_fit(Fx[tr, ], iris$Species[tr], cost = s$cost[i], loss = "l2")
    expect_equal(s$error[i], mean(kernlearn:::.linear_svm_predict(h, Fx[val, ]) != iris$Species[val]))
  }
  # the map is learned from the other rows only: its landmarks (here the untrained initial
  # ones) are rows of the training part, and the map's batches come from those 120 rows
  set.seed(4)
  x <- as.matrix(iris[, 1:4]) + matrix(rnorm(600, sd = 1e-3), 150)  # distinct rows
  un <- dikl(x, iris$Species, dim = 40, objective = "none", scale = FALSE)
  vu <- attr(un$params$head_search, "validation")
  key <- function(m) apply(signif(m, 12), 1, paste, collapse = " ")
  expect_true(all(key(un$map$Z) %in% key(x[-vu, ])))
  expect_equal(un$training$map_rows, 120L)
  expect_equal(fit$training$map_rows, 120L)
  # a given value skips the search, and the map uses all rows
  set.seed(1)
  given <- dikl(Species ~ ., data = iris, dim = 20, max_epochs = 20, cost = 2)
  expect_equal(given$training$map_rows, 150L)
  expect_null(given$params$head_search)
  expect_equal(given$head$cost, 2)
  # ridge regression: the penalty grid scales with the rows fitted; the search minimises the
  # held-out mean squared error
  set.seed(2)
  x <- matrix(runif(300 * 3), 300, 3)
  y <- sin(4 * x[, 1]) + x[, 2] + rnorm(300, sd = 0.1)
  r <- dikl(x, y, dim = 30, max_epochs = 10)
  sr <- r$params$head_search
  expect_identical(names(sr)[1L], "lambda_per_row")
  expect_equal(r$params$lambda, sr$lambda_per_row[which.min(sr$error)] * 300)
  expect_equal(sr$error, sr$loss)
})

test_that("a regression with fewer than 50 rows chooses the ridge penalty by leave-one-out", {
  set.seed(3)
  x <- matrix(runif(30 * 3), 30, 3)
  y <- sin(4 * x[, 1]) + x[, 2] + rnorm(30, sd = 0.1)
  fit <- dikl(x, y, dim = 12, max_epochs = 10)
  s <- fit$params$head_search
  expect_identical(attr(s, "scheme"), "leave-one-out")
  expect_identical(attr(s, "validation"), 1:30)
  expect_equal(attr(s, "train_rows"), 29L)
  expect_equal(fit$params$lambda, s$lambda_per_row[which.min(s$error)] * 30)
  expect_output(print(fit), "by the leave-one-out mean squared error over 30 rows")
  # each row predicted by a ridge regression (unpenalised intercept) on the other 29 rows'
  # features, solved here by the normal equations
  Fx <- features(fit, x)
  ridge <- function(F, y, lam) {
    Fm <- colMeans(F)
    Fc <- sweep(F, 2, Fm)
    b <- solve(crossprod(Fc) + lam * diag(ncol(F)), crossprod(Fc, y - mean(y)))
    list(b = b, a = mean(y) - sum(Fm * b))
  }
  loo <- vapply(s$lambda_per_row, function(l) mean(vapply(1:30, function(i) {
    m <- ridge(Fx[-i, ], y[-i], l * 29)
    (sum(Fx[i, ] * m$b) + m$a - y[i])^2
  }, 0)), 0)
  expect_equal(s$error, loo, tolerance = 1e-6)
  # the chosen penalty is not the weakest: 1e-4 (the former fixed value) interpolates
  expect_gt(fit$params$lambda, 1e-4)
  # classes and fewer than 10 rows keep the fixed values
  yc <- factor(ifelse(y > median(y), "a", "b"))
  fc <- dikl(x, yc, dim = 12, max_epochs = 2)
  expect_null(fc$params$head_search)
  expect_equal(fc$params$cost, 1)
  f9 <- dikl(x[1:9, ], y[1:9], dim = 5, max_epochs = 2)
  expect_null(f9$params$head_search)
  expect_equal(f9$params$lambda, 1e-4)
})

test_that("when no class has two rows, dikl uses the default cost without a search", {
  set.seed(2)
  x <- matrix(rnorm(60 * 3), 60, 3)
  y <- factor(paste0("k", 1:60))
  fit <- dikl(x, y, dim = 5, max_epochs = 2)
  expect_null(fit$params$head_search)
  expect_equal(fit$params$cost, 1)
  expect_equal(fit$training$map_rows, 60L)
})

test_that("a collapsed training is repeated with a lower learning rate, then reported", {
  set.seed(1)
  ok <- dikl(Species ~ ., data = iris, dim = 20, max_epochs = 30, lr = 5)
  expect_lt(ok$training$lr, 5)
  expect_null(ok$training$collapsed)
  expect_gt(length(unique(predict(ok))), 2L)
  expect_output(print(ok), "collapsed with lr = 5 and was repeated with lr = 0.5")
  set.seed(1)
  msgs <- character()
  bad <- withCallingHandlers(
    dikl(Species ~ ., data = iris, dim = 20, max_epochs = 30, lr = 1e4),
    warning = function(w) {
      msgs <<- c(msgs, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  expect_length(msgs, 2L)
  expect_match(msgs[1], "training collapsed \\(DI per row .*lower 'lr'")
  # the model left gives one class to every row, which is said too
  expect_length(unique(predict(bad)), 1L)
  expect_match(msgs[2], "predicts class '.*' for every training row")
  expect_match(bad$training$collapsed, "DI per row")
  expect_output(print(bad), "warning: the training collapsed")
})

test_that("the default number of features adapts to fewer than 100 training rows", {
  set.seed(4)
  x <- matrix(rnorm(60 * 150), 60)
  y <- x[, 1] - x[, 2] + rnorm(60, sd = 0.1)
  fit <- dikl(x, y, max_epochs = 3)
  expect_equal(fit$params$dim, 60L)
  f2 <- dikl(x, y, map = "fourier", max_epochs = 3)
  expect_equal(f2$params$dim, 60L)
  # the default is 100 when there are enough rows, and a given dim is kept (or refused)
  expect_equal(dikl(Species ~ ., data = iris, max_epochs = 2)$params$dim, 100L)
  expect_error(dikl(x, y, dim = 100), "dim = 100 landmarks but only 60")
})
