# Linear SVM by dual coordinate descent.

svm_data <- function(n = 80, p = 3, seed = 1, shift = 1) {
  set.seed(seed)
  x <- matrix(rnorm(n * p), n, p)
  y <- factor(ifelse(x %*% c(1, -1, 0.5)[seq_len(p)] + 0.3 + rnorm(n, sd = 0.7) > 0, "pos", "neg"),
              levels = c("neg", "pos"))
  list(x = x, y = y)
}

# Primal objectives computed in R; w includes the bias weight last.
svm_primal_r <- function(w, x, s, cost, bias, loss) {
  z <- cbind(x, bias)
  t <- pmax(0, 1 - s * drop(z %*% w))
  0.5 * sum(w^2) + cost * sum(if (loss == "l2") t^2 else t)
}

test_that("squared hinge: primal equals dual and matches an independent minimisation", {
  d <- svm_data()
  s <- ifelse(d$y == "pos", 1, -1)
  cost <- 0.5
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = cost, loss = "l2", eps = 1e-8,
                                     maxit = 100000, seed = c(1L, 2L))
  expect_true(fit$converged)
  expect_equal(dim(fit$W), c(3L, 1L))
  # Strong duality at the solution.
  expect_lt(fit$primal - fit$dual, 1e-6 * fit$primal)
  expect_gte(fit$primal - fit$dual, -1e-9)
  w <- c(fit$W[, 1], fit$b / 1)
  expect_equal(fit$primal, svm_primal_r(w, d$x, s, cost, 1, "l2"), tolerance = 1e-10)
  # Independent primal minimisation (the squared-hinge primal is differentiable).
  f <- function(w) svm_primal_r(w, d$x, s, cost, 1, "l2")
  gr <- function(w) {
    z <- cbind(d$x, 1)
    t <- pmax(0, 1 - s * drop(z %*% w))
    w - 2 * cost * drop(crossprod(z, s * t))
  }
  o <- optim(rep(0, 4), f, gr, method = "BFGS", control = list(reltol = 1e-15, maxit = 10000))
  expect_equal(fit$primal, o$value, tolerance = 1e-6)
  expect_lt(max(abs(w - o$par)) / max(abs(o$par)), 1e-4)
})

test_that("hinge loss: duality gap closes and the primal is no worse than a direct search", {
  d <- svm_data(seed = 4)
  s <- ifelse(d$y == "pos", 1, -1)
  cost <- 0.2
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = cost, loss = "l1", eps = 1e-7,
                                     maxit = 100000, seed = c(3L, 4L))
  expect_true(fit$converged)
  expect_lt(fit$primal - fit$dual, 1e-4 * fit$primal)
  expect_gte(fit$primal - fit$dual, -1e-9)
  w <- c(fit$W[, 1], fit$b)
  expect_equal(fit$primal, svm_primal_r(w, d$x, s, cost, 1, "l1"), tolerance = 1e-10)
  # Nelder-Mead from our solution finds no meaningfully better point.
  f <- function(w) svm_primal_r(w, d$x, s, cost, 1, "l1")
  o <- optim(w + 0.05, f, control = list(maxit = 20000, reltol = 1e-14))
  expect_gte(o$value, fit$primal - 1e-6 * fit$primal)
})

test_that("the default eps stops early with a small but positive gap", {
  d <- svm_data(n = 200, seed = 7)
  loose <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 1, seed = c(5L, 6L))
  tight <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 1, eps = 1e-9, maxit = 1e5,
                                       seed = c(5L, 6L))
  expect_true(loose$converged)
  expect_lt(loose$iterations, tight$iterations)
  expect_gte(loose$primal - loose$dual, 0)
  expect_lt(tight$primal - tight$dual, loose$primal - loose$dual)
  expect_lt(abs(loose$primal - tight$primal) / tight$primal, 0.05)
})

test_that("the iteration cap sets the not-converged flag", {
  d <- svm_data(n = 200, seed = 8)
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 10, eps = 1e-12, maxit = 2,
                                     seed = c(1L, 1L))
  expect_false(fit$converged)
  expect_equal(fit$iterations, 2L)
})

test_that("no bias term and shrinking off give the same optimum", {
  d <- svm_data(seed = 12)
  s <- ifelse(d$y == "pos", 1, -1)
  a <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 1, bias = 0, eps = 1e-9, maxit = 1e5,
                                   seed = c(1L, 9L))
  b <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 1, bias = 0, eps = 1e-9, maxit = 1e5,
                                   shrinking = FALSE, seed = c(2L, 9L))
  expect_equal(unname(a$b), 0)
  expect_lt(max(abs(a$W - b$W)), 1e-6)
  f <- function(w) {
    t <- pmax(0, 1 - s * drop(d$x %*% w))
    0.5 * sum(w^2) + sum(t^2)
  }
  o <- optim(rep(0, 3), f, method = "BFGS", control = list(reltol = 1e-15, maxit = 10000))
  expect_lt(max(abs(a$W[, 1] - o$par)) / max(abs(o$par)), 1e-4)
})

test_that("class weights change the solution as a per-row cost would", {
  d <- svm_data(seed = 13)
  s <- ifelse(d$y == "pos", 1, -1)
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 0.5, class_weights = c(pos = 3, neg = 1),
                                     eps = 1e-9, maxit = 1e5, seed = c(1L, 3L))
  ci <- ifelse(s > 0, 1.5, 0.5)
  f <- function(w) {
    z <- cbind(d$x, 1)
    t <- pmax(0, 1 - s * drop(z %*% w))
    0.5 * sum(w^2) + sum(ci * t^2)
  }
  o <- optim(rep(0, 4), f, method = "BFGS", control = list(reltol = 1e-15, maxit = 10000))
  w <- c(fit$W[, 1], fit$b)
  expect_lt(max(abs(w - o$par)) / max(abs(o$par)), 1e-4)
  plain <- kernlearn:::.linear_svm_fit(d$x, d$y, cost = 0.5, eps = 1e-9, maxit = 1e5,
                                       seed = c(1L, 3L))
  expect_gt(max(abs(plain$W - fit$W)), 1e-3)
})

test_that("one-vs-rest separates well-separated classes", {
  set.seed(21)
  centres <- rbind(c(0, 0), c(4, 0), c(0, 4), c(4, 4))
  cls <- rep(1:4, each = 40)
  x <- centres[cls, ] + matrix(rnorm(320, sd = 0.4), 160, 2)
  y <- factor(c("p", "q", "r", "s")[cls])
  # Each corner cluster is linearly separable from the other three.
  xx <- x
  fit <- kernlearn:::.linear_svm_fit(xx, y, cost = 10, seed = c(7L, 7L), maxit = 5000)
  expect_equal(dim(fit$W), c(2L, 4L))
  expect_equal(colnames(fit$W), levels(y))
  expect_true(all(fit$converged))
  pred <- kernlearn:::.linear_svm_predict(fit, xx)
  expect_equal(levels(pred), levels(y))
  expect_gt(mean(pred == y), 0.97)
  dec <- kernlearn:::.linear_svm_predict(fit, xx, "decision")
  expect_equal(dim(dec), c(160L, 4L))
  expect_equal(as.integer(pred), max.col(dec, ties.method = "first"))
  # Each column is the binary problem of its class against the rest.
  expect_gt(mean((dec[, 2] > 0) == (y == "q")), 0.97)
})

test_that("binary predictions use the second level as the positive class", {
  d <- svm_data(n = 100, seed = 15)
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y, seed = c(1L, 1L))
  dec <- kernlearn:::.linear_svm_predict(fit, d$x, "decision")
  expect_equal(colnames(dec), "pos")
  pred <- kernlearn:::.linear_svm_predict(fit, d$x)
  expect_equal(pred == "pos", dec[, 1] > 0)
  expect_gt(mean(pred == d$y), 0.75)
})

test_that("the same seed gives the same fit", {
  d <- svm_data(n = 150, seed = 16)
  a <- kernlearn:::.linear_svm_fit(d$x, d$y, seed = c(10L, 20L))
  b <- kernlearn:::.linear_svm_fit(d$x, d$y, seed = c(10L, 20L))
  expect_identical(a, b)
  set.seed(3)
  c1 <- kernlearn:::.linear_svm_fit(d$x, d$y)
  set.seed(3)
  c2 <- kernlearn:::.linear_svm_fit(d$x, d$y)
  expect_identical(c1, c2)
})

test_that("bad input gives errors naming the argument", {
  d <- svm_data(n = 30)
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, cost = 0), "'cost'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, cost = -1), "'cost'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, cost = Inf), "'cost'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, loss = "hinge"), "'loss'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, eps = 0), "'eps'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, maxit = 0), "'maxit'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, bias = NA), "'bias'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, class_weights = c(1, -1)), "'class_weights'")
  expect_error(kernlearn:::.linear_svm_fit(d$x, d$y, class_weights = c(a = 1, b = 2)),
               "'class_weights'")
  xb <- d$x
  xb[2, 1] <- NaN
  expect_error(kernlearn:::.linear_svm_fit(xb, d$y), "'x'.*row 2, column 1")
  y2 <- d$y
  y2[5] <- NA
  expect_error(kernlearn:::.linear_svm_fit(d$x, y2), "'y'.*position 5")
  fit <- kernlearn:::.linear_svm_fit(d$x, d$y)
  expect_error(kernlearn:::.linear_svm_predict(fit, d$x[, 1:2]), "columns")
})
