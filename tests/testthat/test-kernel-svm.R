# kernel_svm(): the solver against LIBSVM (through e1071), KKT conditions checked
# independently, probabilities, precomputed kernels, warm starts, the kl_tune fast path, and
# bad input.

scale01 <- function(x) {
  mn <- apply(x, 2, min)
  rg <- apply(x, 2, max) - mn
  rg[rg == 0] <- 1
  sweep(sweep(x, 2, mn), 2, rg, "/")
}

two_class_data <- function(n, seed) {
  set.seed(seed)
  x <- matrix(runif(n * 4), n, 4)
  y <- factor(ifelse(x[, 1] + x[, 2]^2 - x[, 3] + rnorm(n, 0, 0.15) > 0.6, "yes", "no"),
              levels = c("no", "yes"))
  list(x = x, y = y)
}

# Letter from mlbench: unique rows (duplicates make the dual degenerate, so that the set of
# support vectors is not unique), features scaled to [0, 1].
letter_data <- function(n, seed) {
  skip_if_not_installed("mlbench")
  e <- new.env()
  utils::data("LetterRecognition", package = "mlbench", envir = e)
  d <- e$LetterRecognition
  x <- as.matrix(d[, -1])
  keep <- which(!duplicated(x))
  set.seed(seed)
  idx <- sample(keep, n)
  list(x = scale01(x[idx, ]), y = droplevels(d$lettr[idx]))
}

# Dual objective 0.5 c'Kc - sum |c| of every pair from a compact one-vs-one model: support
# vectors `sv` ordered by class (classes `ord` in that order), counts nsv, coefficients
# coefs (nSV x (k - 1)), LIBSVM layout. Names are "a b" with a < b class codes.
pair_objectives <- function(K, sv, nsv, coefs, ord) {
  start <- c(0, cumsum(nsv))
  k <- length(nsv)
  out <- numeric()
  for (i in 1:(k - 1)) for (j in (i + 1):k) {
    ia <- start[i] + seq_len(nsv[i])
    ib <- start[j] + seq_len(nsv[j])
    cc <- c(coefs[ia, j - 1], coefs[ib, i])
    s <- sv[c(ia, ib)]
    nm <- paste(min(ord[i], ord[j]), max(ord[i], ord[j]))
    out[nm] <- 0.5 * drop(crossprod(cc, K[s, s, drop = FALSE] %*% cc)) - sum(abs(cc))
  }
  out
}

e1071_objectives <- function(e, K, levels) {
  ord <- match(e$levels[e$labels], levels)
  pair_objectives(K, e$index, e$nSV, e$coefs, ord)
}

# Maximal violation of the KKT conditions, m(a) - M(a), for the dual
# min 0.5 a'Qa + p'a, y'a = 0, 0 <= a <= C, given G = Qa + p.
kkt_gap <- function(a, y, G, C) {
  up <- (y > 0 & a < C) | (y < 0 & a > 0)
  low <- (y > 0 & a > 0) | (y < 0 & a < C)
  max(-y[up] * G[up]) - min(-y[low] * G[low])
}

test_that("binary classification matches LIBSVM (e1071)", {
  skip_if_not_installed("e1071")
  d <- two_class_data(600, 1)
  te <- two_class_data(3000, 2)
  x <- scale01(d$x)
  fit <- kernel_svm(x, d$y, gamma = 2, cost = 4)
  e <- e1071::svm(x, d$y, kernel = "radial", gamma = 2, cost = 4, scale = FALSE,
                  tolerance = 1e-3)
  K <- kernel_matrix(gaussian_kernel(gamma = 2), x)
  ours <- pair_objectives(K, fit$sv_index, fit$nSV, fit$coefs, 1:2)
  theirs <- e1071_objectives(e, K, levels(d$y))
  expect_lt(abs(ours - theirs) / abs(theirs), 1e-3)
  expect_equal(unname(fit$obj), unname(ours), tolerance = 1e-6)
  expect_lte(abs(fit$tot.nSV - e$tot.nSV), 0.01 * e$tot.nSV)
  xt <- te$x
  mn <- apply(d$x, 2, min)
  rg <- apply(d$x, 2, max) - mn
  xts <- sweep(sweep(xt, 2, mn), 2, rg, "/")
  expect_gte(mean(predict(fit, xts) == predict(e, xts)), 0.995)
  # decision values: e1071's are positive for its first label
  de <- attr(predict(e, xts, decision.values = TRUE), "decision.values")[, 1]
  sgn <- if (e$levels[e$labels[1]] == "yes") 1 else -1
  expect_gt(cor(predict(fit, xts, type = "decision"), sgn * de), 0.999)
})

test_that("multiclass one-vs-one matches LIBSVM on a Letter subsample", {
  skip_if_not_installed("e1071")
  d <- letter_data(1500, 3)
  fit <- kernel_svm(d$x, d$y, gamma = 16, cost = 16)
  e <- e1071::svm(d$x, d$y, kernel = "radial", gamma = 16, cost = 16, scale = FALSE,
                  tolerance = 1e-3)
  K <- kernel_matrix(gaussian_kernel(gamma = 16), d$x)
  ours <- pair_objectives(K, fit$sv_index, fit$nSV, fit$coefs, seq_along(fit$levels))
  theirs <- e1071_objectives(e, K, levels(d$y))[names(ours)]
  expect_length(ours, choose(nlevels(d$y), 2))
  expect_lt(max(abs(ours - theirs) / abs(theirs)), 1e-3)
  expect_equal(unname(fit$obj), unname(ours), tolerance = 1e-6)
  expect_lte(abs(fit$tot.nSV - e$tot.nSV), 0.01 * e$tot.nSV)
  te <- letter_data(3000, 4)
  expect_gte(mean(predict(fit, te$x) == predict(e, te$x)), 0.995)
})

test_that("epsilon-regression matches LIBSVM (e1071)", {
  skip_if_not_installed("e1071")
  set.seed(5)
  n <- 500
  x <- matrix(runif(n * 3), n, 3)
  z <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, 0, 0.1)
  x <- scale01(x)
  # the response as given (e1071's scale = FALSE)
  fit <- kernel_svm(x, z, gamma = 3, cost = 10, epsilon = 0.05, scale_response = FALSE)
  expect_equal(fit$task, "regression")
  expect_null(fit$y_scaling)
  e <- e1071::svm(x, z, type = "eps-regression", kernel = "radial", gamma = 3, cost = 10,
                  epsilon = 0.05, scale = FALSE, tolerance = 1e-3)
  K <- kernel_matrix(gaussian_kernel(gamma = 3), x)
  obj <- function(sv, b) 0.5 * drop(crossprod(b, K[sv, sv] %*% b)) + 0.05 * sum(abs(b)) -
    sum(z[sv] * b)
  ours <- obj(fit$sv_index, fit$coefs[, 1])
  theirs <- obj(e$index, e$coefs[, 1])
  expect_lt(abs(ours - theirs) / abs(theirs), 1e-3)
  expect_equal(fit$obj, ours, tolerance = 1e-5)
  expect_lte(abs(fit$tot.nSV - e$tot.nSV), 0.01 * e$tot.nSV)
  xt <- matrix(runif(3000), 1000, 3)
  p1 <- predict(fit, xt)
  p2 <- predict(e, xt)
  expect_lt(max(abs(p1 - p2)), 0.01)
})

test_that("KKT conditions hold at the solution, checked independently", {
  d <- two_class_data(400, 6)
  x <- scale01(d$x)
  w <- c(no = 1, yes = 2.5)
  fit <- kernel_svm(x, d$y, gamma = 1.5, cost = 3, class.weights = w, tol = 1e-3)
  K <- kernel_matrix(gaussian_kernel(gamma = 1.5), x)
  beta <- numeric(nrow(x))
  beta[fit$sv_index] <- fit$coefs[, 1]
  yy <- ifelse(d$y == "yes", 1, -1)
  a <- beta * yy
  C <- 3 * w[as.character(d$y)]
  expect_true(all(a >= 0) && all(a <= C + 1e-12))
  expect_lt(abs(sum(beta)), 1e-8)
  G <- yy * drop(K %*% beta) - 1
  expect_lt(kkt_gap(a, yy, G, C), 2e-3)
  # the reported rho is the mean of y G over free variables
  free <- a > 1e-10 & a < C - 1e-10
  expect_equal(fit$rho, mean(yy[free] * G[free]), tolerance = 1e-4)

  # regression: variables (a, a*) with y = (+1, -1)
  set.seed(7)
  z <- x[, 1] - x[, 2]^2 + rnorm(400, 0, 0.05)
  reg <- kernel_svm(x, z, gamma = 2, cost = 5, epsilon = 0.1, scale_response = FALSE)
  b <- numeric(400)
  b[reg$sv_index] <- reg$coefs[, 1]
  K2 <- kernel_matrix(gaussian_kernel(gamma = 2), x)
  Kb <- drop(K2 %*% b)
  a2 <- c(pmax(b, 0), pmax(-b, 0))
  y2 <- rep(c(1, -1), each = 400)
  G2 <- c(Kb + 0.1 - z, -Kb + 0.1 + z)
  expect_lt(kkt_gap(a2, y2, G2, rep(5, 800)), 2e-3)
})

test_that("a precomputed kernel gives the same model as the kernel object", {
  d <- letter_data(600, 8)
  fit <- kernel_svm(d$x, d$y, gamma = 8, cost = 4)
  K <- kernel_matrix(gaussian_kernel(gamma = 8), d$x)
  pre <- kernel_svm(K, d$y, kernel = "precomputed", cost = 4)
  expect_null(pre$SV)
  expect_equal(pre$obj, fit$obj, tolerance = 1e-5)
  expect_lte(abs(pre$tot.nSV - fit$tot.nSV), 0.01 * fit$tot.nSV)
  te <- letter_data(500, 9)
  Kt <- kernel_matrix(gaussian_kernel(gamma = 8), te$x, d$x)
  expect_gte(mean(predict(pre, Kt) == predict(fit, te$x)), 0.995)
  dec1 <- predict(pre, Kt, type = "decision")
  dec2 <- predict(fit, te$x, type = "decision")
  expect_equal(colnames(dec1), colnames(dec2))
  expect_lt(max(abs(dec1 - dec2)), 1e-3)
  # regression
  set.seed(10)
  z <- d$x[, 1] + rnorm(600, 0, 0.1)
  r1 <- kernel_svm(d$x, z, gamma = 8, cost = 2)
  r2 <- kernel_svm(K, z, kernel = "precomputed", cost = 2)
  expect_equal(r2$obj, r1$obj, tolerance = 1e-5)
  expect_lt(max(abs(predict(r2, Kt) - predict(r1, te$x))), 1e-3)
})

test_that("probabilities sum to one, agree with the class, and are reproducible", {
  d <- letter_data(800, 11)
  lv <- levels(d$y)[1:5]
  keep <- d$y %in% lv
  x <- d$x[keep, ]
  y <- droplevels(d$y[keep])
  set.seed(1)
  f1 <- kernel_svm(x, y, gamma = 8, cost = 4, probability = TRUE)
  set.seed(1)
  f2 <- kernel_svm(x, y, gamma = 8, cost = 4, probability = TRUE)
  set.seed(2)
  f3 <- kernel_svm(x, y, gamma = 8, cost = 4, probability = TRUE)
  expect_identical(f1$probA, f2$probA)
  expect_identical(f1$probB, f2$probB)
  expect_false(identical(f1$probA, f3$probA))
  expect_true(all(f1$probA < 0))
  te <- letter_data(2000, 12)
  xt <- te$x[te$y %in% lv, ]
  P <- predict(f1, xt, type = "prob")
  expect_equal(colnames(P), levels(y))
  expect_equal(unname(rowSums(P)), rep(1, nrow(P)), tolerance = 1e-8)
  expect_true(all(P >= 0 & P <= 1))
  cls <- predict(f1, xt)
  expect_identical(as.integer(cls), max.col(P, ties.method = "first"))
  # the probability model changes how the class is chosen, not the machines
  f0 <- kernel_svm(x, y, gamma = 8, cost = 4)
  expect_equal(f0$coefs, f1$coefs)
  # with ~30 rows per class voting and coupling may disagree on many rows (as in LIBSVM);
  # the most probable class is as accurate as the vote
  yt <- droplevels(te$y[te$y %in% lv])
  expect_gte(mean(cls == yt), mean(predict(f0, xt) == yt) - 0.03)
  expect_error(predict(f0, xt, type = "prob"), "probability = TRUE")

  # two classes: P(second) is the Platt sigmoid of the decision value
  d2 <- two_class_data(300, 13)
  set.seed(3)
  b <- kernel_svm(d2$x, d2$y, probability = TRUE, gamma = 2)
  pb <- predict(b, d2$x, type = "prob")
  dv <- predict(b, d2$x, type = "decision")
  expect_equal(unname(pb[, 2]), pmin(pmax(1 / (1 + exp(b$probA * dv + b$probB)), 1e-7), 1 - 1e-7))
  expect_identical(as.integer(predict(b, d2$x)), max.col(pb, ties.method = "first"))
})

test_that("results do not depend on the thread count", {
  d <- letter_data(700, 15)
  f1 <- kernel_svm(d$x, d$y, gamma = 8, cost = 4, threads = 1)
  f2 <- kernel_svm(d$x, d$y, gamma = 8, cost = 4, threads = 2)
  f3 <- kernel_svm(d$x, d$y, gamma = 8, cost = 4, threads = 3)
  expect_identical(f1$coefs, f2$coefs)
  expect_identical(f1$coefs, f3$coefs)
  expect_identical(f1$rho, f3$rho)
  dd <- two_class_data(3000, 16)
  b1 <- kernel_svm(dd$x, dd$y, threads = 1, cost = 10)
  b2 <- kernel_svm(dd$x, dd$y, threads = 2, cost = 10)
  expect_identical(b1$coefs, b2$coefs)
})

test_that("warm starts reach the same solution", {
  d <- letter_data(600, 17)
  cold <- kernel_svm(d$x, d$y, gamma = 8, cost = 8)
  prev <- kernel_svm(d$x, d$y, gamma = 8, cost = 6)
  warm <- kernel_svm(d$x, d$y, gamma = 8, cost = 8, warm_start = prev)
  expect_lt(max(abs(warm$obj - cold$obj) / abs(cold$obj)), 1e-3)
  expect_lt(sum(warm$iter), sum(cold$iter))
  te <- letter_data(1000, 18)
  expect_gte(mean(predict(warm, te$x) == predict(cold, te$x)), 0.99)
  # regression, and a slightly changed kernel
  set.seed(19)
  z <- d$x[, 2] - d$x[, 3] + rnorm(600, 0, 0.05)
  r0 <- kernel_svm(d$x, z, gamma = 8, cost = 4)
  r1 <- kernel_svm(d$x, z, gamma = 8.5, cost = 4, warm_start = r0)
  r2 <- kernel_svm(d$x, z, gamma = 8.5, cost = 4)
  expect_lt(abs(r1$obj - r2$obj) / abs(r2$obj), 1e-3)
  expect_error(kernel_svm(d$x[1:100, ], d$y[1:100], warm_start = prev), "same rows")
})

test_that("kl_tune's cost path agrees with fitting every grid point", {
  d <- letter_data(500, 20)
  lv <- levels(d$y)[1:6]
  keep <- d$y %in% lv
  x <- d$x[keep, ]
  y <- droplevels(d$y[keep])
  grid <- list(cost = c(0.5, 4, 32), gamma = c(2, 16))
  fast <- kl_tune(kernel_svm, x, y, grid = grid, folds = 3, seed = 1)
  slow <- kl_tune(function(x, y, ...) kernel_svm(x, y, ...), x, y, grid = grid, folds = 3,
                  seed = 1)
  expect_identical(fast$foldid, slow$foldid)
  # warm starts change the solution only within the tolerance: at most a few rows differ
  expect_lt(max(abs(fast$fold_metrics - slow$fold_metrics)), 0.03)
  expect_equal(fast$best_model$coefs, slow$best_model$coefs)
  # regression, formula interface
  df <- data.frame(x, z = x[, 1] * 2 + x[, 2])
  rf <- kl_tune(kernel_svm, z ~ ., data = df, grid = list(cost = c(1, 10), gamma = c(1, 4)),
                folds = 3, seed = 2)
  rs <- kl_tune(function(formula, data, ...) kernel_svm(formula, data, ...), z ~ ., data = df,
                grid = list(cost = c(1, 10), gamma = c(1, 4)), folds = 3, seed = 2)
  expect_equal(rf$results$mean, rs$results$mean, tolerance = 1e-3)
  # metrics on decision values: a vector for two classes, a column per pair for more
  y2 <- droplevels(factor(ifelse(y %in% lv[1:3], lv[1], lv[2])))
  ls2 <- structure(function(truth, pred) {
    stopifnot(is.null(dim(pred)))
    mean((pmin(pmax(pred, -1), 1) - ifelse(truth == levels(truth)[2], 1, -1))^2)
  }, type = "decision")
  g2 <- list(cost = c(0.5, 4), gamma = c(2, 16))
  calls <- new.env()
  calls$general <- 0L
  suppressMessages(trace(".klcv_run",
                         bquote(assign("general", get("general", .(calls)) + 1L, envir = .(calls))),
                         print = FALSE, where = asNamespace("kernlearn")))
  on.exit(suppressMessages(untrace(".klcv_run", where = asNamespace("kernlearn"))), add = TRUE)
  fd <- kl_tune(kernel_svm, x, y2, grid = g2, folds = 3, seed = 3, metric = ls2, refit = FALSE,
                extend = 0)
  expect_identical(calls$general, 0L)  # the cost path ran
  sd <- kl_tune(function(x, y, ...) kernel_svm(x, y, ...), x, y2, grid = g2, folds = 3,
                seed = 3, metric = ls2, refit = FALSE, extend = 0)
  expect_equal(fd$results$mean, sd$results$mean, tolerance = 0.02)
  pairs <- structure(function(truth, pred) {
    stopifnot(identical(colnames(pred), colnames(predict(kernel_svm(x[1:60, ], y[1:60]),
                                                                 x[1:2, ], type = "decision"))))
    lv <- levels(truth)
    # the share of rows whose own class wins its pair against the first other level
    mean(vapply(seq_along(truth), function(i) {
      a <- as.integer(truth[i]); b <- if (a == 1L) 2L else 1L
      col <- paste0(lv[max(a, b)], "/", lv[min(a, b)])
      (pred[i, col] > 0) == (a > b)
    }, TRUE))
  }, type = "decision")
  fm <- kl_tune(kernel_svm, x, y, grid = g2, folds = 3, seed = 4, metric = pairs,
                refit = FALSE, maximize = TRUE, extend = 0)
  expect_identical(calls$general, 1L)  # the cost path again (sd above took the general one)
  sm <- kl_tune(function(x, y, ...) kernel_svm(x, y, ...), x, y, grid = g2, folds = 3,
                seed = 4, metric = pairs, refit = FALSE, maximize = TRUE, extend = 0)
  expect_lt(max(abs(fm$fold_metrics - sm$fold_metrics)), 0.03)
  # arguments the cost path cannot take send the grid to the general path
  g <- list(table = data.frame(cost = 1), points = list(list(cost = 1)))
  spec <- list(dots = list(linear_kernel()))
  expect_false(.svm_fast_eligible(kernel_svm, spec, g, list(pred_type = "class")))
  spec$dots <- list(kernel = linear_kernel())
  expect_true(.svm_fast_eligible(kernel_svm, spec, g, list(pred_type = "class")))
  expect_false(.svm_fast_eligible(kernel_svm, spec, g, list(pred_type = "prob")))
  expect_true(.svm_fast_eligible(kernel_svm, spec, g, list(pred_type = "decision")))
  expect_error(kl_tune(kernel_svm, x, y, grid = list(cost = c(1, 4)), folds = 3,
                       shrinking = "no"), "TRUE or FALSE")
  ws <- character()
  withCallingHandlers(
    kl_tune(kernel_svm, x, y, grid = list(cost = c(1, 4)), folds = 3, max_iter = 5,
            refit = FALSE),
    warning = function(w) {
      ws <<- c(ws, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  expect_true(length(ws) > 0 && all(grepl("iteration cap", ws)))
})

test_that("models survive saveRDS and print", {
  fit <- kernel_svm(Species ~ ., data = iris, probability = TRUE, gamma = 1)
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  back <- readRDS(f)
  expect_identical(predict(back, iris, type = "prob"), predict(fit, iris, type = "prob"))
  expect_output(print(fit), "support vectors")
  expect_output(print(summary(fit)), "versicolor/setosa")
  reg <- kernel_svm(mpg ~ ., data = mtcars)
  saveRDS(reg, f)
  expect_identical(predict(readRDS(f), mtcars), predict(reg, mtcars))
  expect_output(print(reg), "eps-regression")
  # the decision columns of a pair "b/a" are positive for b
  dec <- predict(fit, iris, type = "decision")
  expect_equal(colnames(dec), c("versicolor/setosa", "virginica/setosa", "virginica/versicolor"))
  expect_true(mean(dec[iris$Species == "virginica", "virginica/setosa"] > 0) > 0.95)
})

test_that("class weights match e1071's", {
  skip_if_not_installed("e1071")
  d <- two_class_data(500, 21)
  x <- scale01(d$x)
  w <- c(no = 0.5, yes = 3)
  fit <- kernel_svm(x, d$y, gamma = 2, cost = 2, class.weights = w)
  e <- e1071::svm(x, d$y, gamma = 2, cost = 2, class.weights = w, scale = FALSE)
  K <- kernel_matrix(gaussian_kernel(gamma = 2), x)
  ours <- pair_objectives(K, fit$sv_index, fit$nSV, fit$coefs, 1:2)
  theirs <- e1071_objectives(e, K, levels(d$y))
  expect_lt(abs(ours - theirs) / abs(theirs), 1e-3)
  inv <- kernel_svm(x, d$y, class.weights = "inverse")
  n <- table(d$y)
  expect_equal(unname(inv$class.weights), unname(500 / (2 * as.numeric(n))))
})

test_that("bad input gives clear errors", {
  x <- as.matrix(iris[, 1:4])
  expect_error(kernel_svm(x, factor(rep("a", 150))), "only one class")
  expect_error(kernel_svm(x, iris$Species, cost = 0), "'cost' must be")
  expect_error(kernel_svm(x, iris$Species, cost = -1), "'cost' must be")
  expect_error(kernel_svm(x, iris$Sepal.Length, epsilon = -0.1), "'epsilon' must be")
  expect_error(kernel_svm(x, iris$Species, tol = 0), "'tol' must be")
  expect_error(kernel_svm(x, iris$Species, gamma = -1), "'gamma' must be")
  expect_error(kernel_svm(x, iris$Species, kernel = linear_kernel(), gamma = 1), "Gaussian")
  expect_error(kernel_svm(x, iris$Sepal.Length, probability = TRUE), "classification")
  expect_error(kernel_svm(x, iris$Species, class.weights = c(foo = 2)), "not a class")
  expect_error(kernel_svm(x, iris$Species, class.weights = c(setosa = -1)), "positive")
  expect_error(kernel_svm(x, iris$Species, type = "eps-regression"), "numeric response")
  expect_error(kernel_svm(x, iris$Species, shrinking = NA), "TRUE or FALSE")
  expect_error(kernel_svm(x, iris$Species, foo = 1), "unused argument")
  xn <- x
  xn[3, 2] <- NA
  expect_error(kernel_svm(xn, iris$Species), "missing")
  expect_error(kernel_svm(x, iris$Species[-1]), "length")
  K <- kernel_matrix(gaussian_kernel(gamma = 1), x)
  expect_error(kernel_svm(K[, -1], iris$Species, kernel = "precomputed"), "square")
  expect_error(kernel_svm(K, iris$Species[-1], kernel = "precomputed"), "150 rows")
  Kn <- K
  Kn[2, 5] <- Inf
  expect_error(kernel_svm(Kn, iris$Species, kernel = "precomputed"), "infinite")
  Ka <- K
  Ka[1, 2] <- 0.5
  expect_error(kernel_svm(Ka, iris$Species, kernel = "precomputed"), "symmetric")
  Kb <- tcrossprod(x) * 1e9
  Kb[1, ] <- Kb[1, ] * runif(150)
  expect_error(kernel_svm(Kb, iris$Species, kernel = "precomputed"), "symmetric")
  expect_error(kernel_svm(K * 1e39, iris$Species, kernel = "precomputed"), "single-precision")
  expect_error(kernel_svm(x, iris$Species, kernel = polynomial_kernel(degree = 40, scale = 100)),
               "single-precision")
  pre <- kernel_svm(K, iris$Species, kernel = "precomputed")
  expect_error(predict(pre, K[, -1]), "one column per training row")
  expect_identical(predict(pre), fitted(pre))
  expect_error(predict(kernel_svm(K, iris$Species, kernel = "precomputed", fitted = FALSE)),
               "required")
  expect_error(kernel_svm(Species ~ ., data = iris, kernel = "precomputed"), "x / y interface")
  fit <- kernel_svm(Species ~ ., data = iris)
  expect_error(predict(fit, iris[, -1]), "lacks column")
  expect_error(predict(fit, iris, type = "response"), "regression")
  expect_warning(kernel_svm(x, iris$Species, max_iter = 3), "iteration cap")
  # a numeric response becomes classes with type = "C-classification"
  num <- kernel_svm(x, as.integer(iris$Species), type = "C-classification")
  expect_equal(num$levels, c("1", "2", "3"))
})

test_that("scale = 'standardize' gives e1071's model at the same gamma; 'none' uses the inputs as given", {
  skip_if_not_installed("e1071")
  x <- as.matrix(iris[, 1:4])
  fit <- kernel_svm(x, iris$Species, scale = "standardize", gamma = 0.5, cost = 2, tol = 1e-6)
  ref <- e1071::svm(x, iris$Species, gamma = 0.5, cost = 2, tolerance = 1e-6)
  expect_identical(as.character(predict(fit, x)), as.character(predict(ref, x)))
  expect_equal(sum(fit$nSV), ref$tot.nSV)
  xr <- as.matrix(mtcars[, c("wt", "hp", "disp", "qsec")])
  # e1071 standardises a regression response too, as kernel_svm() does by default
  fr <- kernel_svm(xr, mtcars$mpg, scale = "standardize", gamma = 0.3, cost = 5, epsilon = 0.2,
                   tol = 1e-6)
  rr <- e1071::svm(xr, mtcars$mpg, gamma = 0.3, cost = 5, epsilon = 0.2, tolerance = 1e-6)
  expect_equal(predict(fr, xr), unname(predict(rr, xr)), tolerance = 1e-6)
  expect_equal(predict(fr, xr[1:5, ] + 0.5), unname(predict(rr, xr[1:5, ] + 0.5)),
               tolerance = 1e-6)
  expect_equal(fr$tot.nSV, rr$tot.nSV)
  expect_equal(unname(fr$y_scaling), c(mean(mtcars$mpg), stats::sd(mtcars$mpg)))
  # with a factor (formula interface): e1071 leaves its indicator columns as 0 / 1 and
  # standardises the numeric columns only, and so does kernel_svm()
  mt <- data.frame(mpg = mtcars$mpg, wt = mtcars$wt, hp = mtcars$hp,
                   gear = factor(mtcars$gear), qsec = mtcars$qsec)
  ff <- kernel_svm(mpg ~ ., data = mt, scale = "standardize", gamma = 0.2, cost = 5,
                   epsilon = 0.2, tol = 1e-6)
  rf <- e1071::svm(mpg ~ ., data = mt, gamma = 0.2, cost = 5, epsilon = 0.2,
                   tolerance = 1e-6)
  expect_equal(ncol(ff$SV), ncol(rf$SV))
  expect_equal(predict(ff, mt), unname(predict(rf, mt)), tolerance = 1e-6)
  expect_equal(ff$tot.nSV, rf$tot.nSV)
  # the same 0 / 1 columns given as numeric columns are standardised: another model
  mt2 <- cbind(mt[, c("mpg", "wt", "hp", "qsec")],
               stats::model.matrix(~ gear - 1, mt))
  f2 <- kernel_svm(mpg ~ ., data = mt2, scale = "standardize", gamma = 0.2, cost = 5,
                   epsilon = 0.2, tol = 1e-6)
  expect_false(isTRUE(all.equal(predict(f2, mt2), predict(ff, mt))))
  # the default scaling maps indicator columns to themselves either way
  expect_equal(predict(kernel_svm(mpg ~ ., data = mt, gamma = 0.2), mt),
               predict(kernel_svm(mpg ~ ., data = mt2, gamma = 0.2), mt2), tolerance = 1e-6)
  # the same model as the standardised response fitted as given
  ys <- (mtcars$mpg - mean(mtcars$mpg)) / stats::sd(mtcars$mpg)
  fs <- kernel_svm(xr, ys, scale = "standardize", gamma = 0.3, cost = 5, epsilon = 0.2,
                   tol = 1e-6, scale_response = FALSE)
  expect_equal(predict(fs, xr) * stats::sd(mtcars$mpg) + mean(mtcars$mpg), predict(fr, xr),
               tolerance = 1e-10)
  # standardisation is stored and applied to new data
  z <- scale(x)
  expect_equal(predict(fit, x, type = "decision"),
               predict(kernel_svm(unname(z), iris$Species, scale = "none", gamma = 0.5, cost = 2,
                                  tol = 1e-6), unname(z), type = "decision"),
               tolerance = 1e-8, ignore_attr = TRUE)
  expect_equal(kernel_svm(x, iris$Species, scale = TRUE, gamma = 2)$SV,
               kernel_svm(x, iris$Species, gamma = 2)$SV)
  expect_error(kernel_svm(x, iris$Species, scale = "zscore"), "'scale' must be one of")
  K <- kernel_matrix(gaussian_kernel(1), x)
  expect_error(kernel_svm(K, iris$Species, kernel = "precomputed", scale = "standardize"),
               "no meaning with a precomputed kernel")
  # the kl_tune fast path honours the scaling
  set.seed(1)
  t1 <- kl_tune(kernel_svm, x, iris$Species, grid = list(cost = c(1, 4)), gamma = 0.5,
                scale = "standardize", folds = 3)
  set.seed(1)
  t2 <- kl_tune(kernel_svm, x, iris$Species, grid = list(cost = c(1, 4)), gamma = 0.5,
                scale = "standardize", folds = 3, tol = 1e-3, shrinking = TRUE)
  expect_equal(t1$results$mean, t2$results$mean)
  expect_equal(t1$best_model$spec$scaling, "standardize")
})

test_that("multiclass decision values are the expansions over each pair's support vectors", {
  set.seed(4)
  x <- matrix(runif(400 * 3), 400, 3)
  y <- factor(sample(letters[1:4], 400, TRUE))
  fit <- kernel_svm(x, y, gamma = 3, cost = 2, fitted = FALSE)
  xn <- matrix(runif(1100 * 3), 1100, 3)   # more than one row block of the expansion
  D <- predict(fit, xn, type = "decision", threads = 2)
  expect_identical(predict(fit, xn, type = "decision", threads = 1), D)
  # independent computation: K(new, SV) and LIBSVM's coefficient layout (SVs by class; for the
  # pair (a, b), class a's coefficients in column b - 1, class b's in column a)
  xs <- kernlearn:::.kl_newdata(fit$spec, xn, "test")
  K <- kernel_matrix(fit$kernel, xs, fit$SV)
  k <- 4L
  cls <- rep(seq_len(k), fit$nSV)
  ref <- matrix(0, nrow(xn), 6)
  p <- 0L
  for (a in 1:(k - 1L)) for (b in (a + 1L):k) {
    p <- p + 1L
    ia <- which(cls == a)
    ib <- which(cls == b)
    ref[, p] <- K[, ia, drop = FALSE] %*% fit$coefs[ia, b - 1L] +
      K[, ib, drop = FALSE] %*% fit$coefs[ib, a] - fit$rho[p]
  }
  expect_equal(unname(D), ref, tolerance = 1e-12)
})

test_that("a large binary problem gives the same solution for any thread count, and it is optimal", {
  # above 16384 active variables the solver's passes over them are shared among threads
  d <- two_class_data(20000, 21)
  x <- scale01(d$x)
  f1 <- kernel_svm(x, d$y, gamma = 2, cost = 1, threads = 1, fitted = FALSE)
  f2 <- kernel_svm(x, d$y, gamma = 2, cost = 1, threads = 2, fitted = FALSE)
  expect_identical(f1$sv_index, f2$sv_index)
  expect_identical(f1$coefs, f2$coefs)
  expect_identical(f1$rho, f2$rho)
  # KKT conditions from the double-precision kernel expansion of the solution
  dec <- predict(f2, x, type = "decision", threads = 2)
  expect_identical(predict(f2, x, type = "decision", threads = 1), dec)
  beta <- numeric(nrow(x))
  beta[f2$sv_index] <- f2$coefs[, 1]
  yy <- ifelse(d$y == "yes", 1, -1)
  Kbeta <- drop(dec) + f2$rho
  sv <- f2$sv_index[1:50]
  expect_equal(Kbeta[sv], drop(kernel_matrix(gaussian_kernel(2), x[sv, ], x[f2$sv_index, ]) %*%
                                  f2$coefs[, 1]), tolerance = 1e-10)
  a <- beta * yy
  expect_true(all(a >= 0) && all(a <= 1 + 1e-12))
  G <- yy * Kbeta - 1
  expect_lt(kkt_gap(a, yy, G, rep(1, nrow(x))), 2e-3)
})

test_that("binary expansions over a precomputed kernel block share rows among threads", {
  d <- two_class_data(900, 22)
  x <- scale01(d$x)
  K <- kernel_matrix(gaussian_kernel(3), x)
  fit <- kernel_svm(K, d$y, kernel = "precomputed", cost = 2, fitted = FALSE)
  D2 <- predict(fit, K, type = "decision", threads = 2)
  expect_identical(predict(fit, K, type = "decision", threads = 1), D2)
  expect_equal(drop(D2), drop(K[, fit$sv_index] %*% fit$coefs[, 1]) - fit$rho,
               tolerance = 1e-12)
})

test_that("regression warns when epsilon makes the model a constant", {
  set.seed(2)
  x <- matrix(runif(80 * 2), 80)
  y <- 1e-3 * (sin(4 * x[, 1]) + x[, 2])
  # the response as given: the default epsilon covers its whole range
  expect_warning(f <- kernel_svm(x, y, scale_response = FALSE),
                 "epsilon = 0.1 is at least half the range of the response")
  # the warning is right: the model is the constant middle of the range, with no support vector
  expect_equal(unname(predict(f, x)), rep(mean(range(y)), 80), tolerance = 1e-6)
  expect_warning(kernel_svm(y ~ ., data = data.frame(x, y = y), scale_response = FALSE),
                 "at least half the range")
  expect_warning(tkl(x, y, maxit = 2, scale_response = FALSE), "at least half the range")
  # an epsilon for the response's scale fits without the warning
  expect_no_warning(g <- kernel_svm(x, y, epsilon = 1e-5, cost = 1e3, tol = 1e-8,
                                    scale_response = FALSE))
  expect_lt(mean((predict(g, x) - y)^2), 0.1 * var(y))
  # standardised (the default), the same response fits with the defaults
  expect_no_warning(h <- kernel_svm(x, y))
  expect_equal(predict(h, x), 1e-3 * predict(kernel_svm(x, y / 1e-3), x), tolerance = 1e-5)
  expect_lt(mean((predict(h, x) - y)^2), 0.5 * var(y))
  # on the standardised scale the warning needs an epsilon of the order of the sd
  expect_warning(kernel_svm(x, y, epsilon = 5), "half the range of the standardised response")
})

test_that("regression standardises the response: predictions are equivariant to its units", {
  set.seed(11)
  n <- 300
  x <- matrix(runif(n * 3), n, 3)
  y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, 0, 0.1)
  xt <- matrix(runif(150), 50, 3)
  f1 <- kernel_svm(x, y, gamma = 2, tol = 1e-8)
  for (a in c(1e-4, 1e6)) {
    fa <- kernel_svm(x, a * y - 7, gamma = 2, tol = 1e-8)
    expect_equal(predict(fa, xt), a * predict(f1, xt) - 7, tolerance = 1e-6)
    expect_equal(fa$sv_index, f1$sv_index)
    expect_equal(fitted(fa), a * fitted(f1) - 7, tolerance = 1e-6)
    expect_equal(residuals(fa), a * residuals(f1), tolerance = 1e-6)
  }
  # the scaling is the training mean and sd; the dual solution is that of the standardised
  # response fitted as given
  expect_equal(unname(f1$y_scaling), c(mean(y), stats::sd(y)))
  g <- kernel_svm(x, (y - mean(y)) / stats::sd(y), gamma = 2, tol = 1e-8, scale_response = FALSE)
  expect_null(g$y_scaling)
  expect_equal(f1$coefs, g$coefs, tolerance = 1e-10)
  expect_equal(predict(f1, xt), predict(g, xt) * stats::sd(y) + mean(y), tolerance = 1e-10)
  expect_equal(predict(f1, xt, type = "decision"), predict(f1, xt))
  # a constant response: centred only, predicted as that constant
  fc <- kernel_svm(x, rep(3, n))
  expect_equal(unname(fc$y_scaling[["scale"]]), 1)
  expect_equal(predict(fc, xt), rep(3, 50), tolerance = 1e-8)
  # classification ignores the argument
  expect_null(kernel_svm(iris[, 1:4], iris$Species)$y_scaling)
  expect_error(kernel_svm(x, y, scale_response = NA), "scale_response")
  expect_output(print(f1), "response standardised")
  # warm starts between costs on the same rows keep the scaling
  w <- kernel_svm(x, 1e3 * y, gamma = 2, cost = 4, tol = 1e-8, warm_start = kernel_svm(x, 1e3 * y, gamma = 2, tol = 1e-8))
  expect_equal(predict(w, xt), predict(kernel_svm(x, 1e3 * y, gamma = 2, cost = 4, tol = 1e-8), xt),
               tolerance = 1e-4)
})

test_that("kl_tune()'s cost path standardises each fold's response as kernel_svm() does", {
  set.seed(12)
  n <- 200
  x <- matrix(runif(n * 2), n, 2)
  y <- 1e4 * (sin(5 * x[, 1]) + x[, 2]) + rnorm(n, 0, 500)
  fid <- rep(1:4, length.out = n)
  grid <- list(cost = c(0.5, 2, 8), gamma = c(1, 4))
  fast <- kl_tune(kernel_svm, x, y, grid = grid, foldid = fid, extend = 0, tol = 1e-6)
  # the general path: one kernel_svm() per fold and grid point (a grid over epsilon too)
  slow <- kl_tune(kernel_svm, x, y, grid = c(grid, list(epsilon = 0.1)), foldid = fid,
                  extend = 0, tol = 1e-6)
  expect_equal(fast$results$mean, slow$results$mean, tolerance = 1e-4)
  by_hand <- mean(vapply(1:4, function(k) {
    m <- kernel_svm(x[fid != k, ], y[fid != k], cost = 2, gamma = 4, tol = 1e-6, fitted = FALSE)
    mean((predict(m, x[fid == k, ]) - y[fid == k])^2)
  }, 0))
  i <- which(fast$results$cost == 2 & fast$results$gamma == 4)
  expect_equal(fast$results$mean[i], by_hand, tolerance = 1e-4)
  # with the response as given, the path agrees with the fits by hand too
  raw <- kl_tune(kernel_svm, x, y / 1e4, grid = grid, foldid = fid, extend = 0, tol = 1e-6,
                 scale_response = FALSE)
  by_hand <- mean(vapply(1:4, function(k) {
    m <- kernel_svm(x[fid != k, ], y[fid != k] / 1e4, cost = 2, gamma = 4, tol = 1e-6,
                    fitted = FALSE, scale_response = FALSE)
    mean((predict(m, x[fid == k, ]) - y[fid == k] / 1e4)^2)
  }, 0))
  expect_equal(raw$results$mean[i], by_hand, tolerance = 1e-4)
})

test_that("the Gaussian's default width is one over the sum of the scaled columns' variances", {
  skip_if_not_installed("e1071")
  set.seed(13)
  x <- cbind(runif(200), rexp(200), rnorm(200))
  y <- factor(ifelse(x[, 1] + 0.3 * x[, 2] - 0.2 * x[, 3] > 0.8, "b", "a"))
  fit <- kernel_svm(x, y)
  xs <- apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
  expect_equal(fit$kernel$gamma, 1 / sum(apply(xs, 2, stats::var)))
  expect_equal(predict(fit, x, type = "decision"),
               predict(kernel_svm(x, y, gamma = 1 / sum(apply(xs, 2, stats::var))), x,
                       type = "decision"))
  # standardised inputs: e1071's default model (gamma = 1 / ncol)
  fs <- kernel_svm(x, y, scale = "standardize", tol = 1e-6)
  expect_equal(fs$kernel$gamma, 1 / 3)
  ref <- e1071::svm(x, y, tolerance = 1e-6)
  expect_equal(sum(fs$nSV), ref$tot.nSV)
  expect_identical(as.character(predict(fs, x)), as.character(predict(ref, x)))
  # a width given, or another kernel, is left alone
  expect_equal(kernel_svm(x, y, gamma = 2)$kernel$gamma, 2)
  expect_equal(kernel_svm(x, y, kernel = laplacian_kernel())$kernel$gamma, 1 / 3)
  # kl_tune()'s cost path sets the width from each fold's training rows, as the fits do
  fid <- rep(1:3, length.out = 200)
  tn <- kl_tune(kernel_svm, x, y, grid = list(cost = c(1, 4)), foldid = fid, extend = 0)
  by_hand <- mean(vapply(1:3, function(k) {
    m <- kernel_svm(x[fid != k, ], y[fid != k], cost = 4, fitted = FALSE)
    mean(predict(m, x[fid == k, ]) != y[fid == k])
  }, 0))
  expect_equal(tn$results$mean[tn$results$cost == 4], by_hand)
})

test_that("a regression response far from 1 in size is standardised without overflow or underflow", {
  set.seed(31)
  x <- matrix(rnorm(80), 40, 2)
  y <- 2 * x[, 1] + x[, 2] + rnorm(40, sd = 0.1)
  ref <- predict(kernel_svm(x, y, gamma = 0.5, threads = 1), x)
  for (s in c(1e154, 1e-200)) {
    f <- expect_silent(kernel_svm(x, y * s, gamma = 0.5, threads = 1))
    expect_equal(f$y_scaling[["scale"]], stats::sd(y) * s, tolerance = 1e-12)
    expect_equal(predict(f, x) / s, ref, tolerance = 1e-6)
  }
  expect_error(kernel_svm(x, y * 1e300, scale_response = FALSE, threads = 1),
               "kernel_svm\\(\\): response values up to .* overflow .*scale_response = TRUE")
  big <- y
  big[3] <- 1e300
  f <- kernel_svm(x, big, gamma = 0.5, threads = 1)
  expect_true(stats::sd(predict(f, x)) > 0)
  t1 <- tkl(x, y * 1e-200, maxit = 3, baseline = FALSE, threads = 1)
  expect_equal(predict(t1, x) / 1e-200,
               predict(tkl(x, y, maxit = 3, baseline = FALSE, threads = 1), x), tolerance = 1e-6)
})
