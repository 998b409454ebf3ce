# Multinomial logistic regression with an L2 penalty.

logistic_data <- function(n = 150, p = 5, K = 3, seed = 1) {
  set.seed(seed)
  x <- matrix(rnorm(n * p), n, p)
  colnames(x) <- paste0("v", seq_len(p))
  B <- matrix(rnorm(p * K, sd = 1.5), p, K)
  eta <- x %*% B
  P <- exp(eta - apply(eta, 1, max))
  P <- P / rowSums(P)
  y <- apply(P, 1, function(pr) sample.int(K, 1, prob = pr))
  y <- factor(letters[y], levels = letters[seq_len(K)])
  list(x = x, y = y)
}

# Objective computed in R, independently of the C++ code.
logistic_objective_r <- function(x, y, B, b, lambda, w = rep(1, nrow(x))) {
  eta <- sweep(x %*% B, 2, b, "+")
  m <- apply(eta, 1, max)
  lse <- m + log(rowSums(exp(eta - m)))
  nll <- lse - eta[cbind(seq_len(nrow(x)), as.integer(y))]
  sum(w * nll) / sum(w) + lambda / 2 * sum(B^2)
}

# The objective and its gradient (against finite differences, and zero at the fit) are checked
# by the core's C++ tests (tests/core).
test_that("the fit converges with centred intercepts to the objective computed in R", {
  d <- logistic_data()
  fit <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.05, tol = 1e-9, threads = 1)
  expect_true(fit$converged)
  expect_equal(dim(fit$coefficients), c(5L, 3L))
  expect_equal(colnames(fit$coefficients), c("a", "b", "c"))
  expect_equal(sum(fit$intercept), 0, tolerance = 1e-12)
  expect_equal(unname(rowSums(fit$coefficients)), rep(0, 5), tolerance = 1e-7)
  expect_equal(fit$objective, logistic_objective_r(d$x, d$y, fit$coefficients, fit$intercept,
                                                   0.05), tolerance = 1e-12)
  # Perturbing the solution increases the objective.
  B2 <- fit$coefficients
  B2[1, 1] <- B2[1, 1] + 0.01
  expect_gt(logistic_objective_r(d$x, d$y, B2, fit$intercept, 0.05), fit$objective)
})

test_that("coefficients agree with glmnet (multinomial, alpha = 0)", {
  skip_if_not_installed("glmnet")
  d <- logistic_data(n = 150, p = 5, K = 3, seed = 11)
  for (lambda in c(0.02, 0.2)) {
    fit <- kernlearn:::.logistic_fit(d$x, d$y, lambda = lambda, tol = 1e-10, maxit = 2000)
    expect_true(fit$converged)
    g <- glmnet::glmnet(d$x, d$y, family = "multinomial", alpha = 0, lambda = lambda,
                        standardize = FALSE, thresh = 1e-14, maxit = 1e6)
    gB <- sapply(g$beta, function(m) as.vector(as.matrix(m)))
    ga <- as.vector(g$a0)
    expect_equal(unname(fit$coefficients), unname(gB), tolerance = 1e-4)
    expect_lt(max(abs(fit$coefficients - gB)), 1e-4)
    expect_lt(max(abs(fit$intercept - ga)), 1e-4)
    # glmnet reports multinomial intercepts centred to sum zero, as we do.
    expect_equal(sum(ga), 0, tolerance = 1e-8)
    p_ours <- kernlearn:::.logistic_predict(fit, d$x, "prob")
    p_glm <- predict(g, d$x, type = "response")[, , 1]
    expect_lt(max(abs(p_ours - p_glm)), 1e-5)
  }
})

test_that("binary problems agree with glmnet's symmetric multinomial fit", {
  skip_if_not_installed("glmnet")
  d <- logistic_data(n = 150, p = 5, K = 2, seed = 5)
  lambda <- 0.05
  fit <- kernlearn:::.logistic_fit(d$x, d$y, lambda = lambda, tol = 1e-10, maxit = 2000)
  expect_true(fit$converged)
  g <- glmnet::glmnet(d$x, d$y, family = "multinomial", alpha = 0, lambda = lambda,
                      standardize = FALSE, thresh = 1e-14, maxit = 1e6)
  gB <- sapply(g$beta, function(m) as.vector(as.matrix(m)))
  expect_lt(max(abs(fit$coefficients - gB)), 1e-4)
  expect_lt(max(abs(fit$intercept - as.vector(g$a0))), 1e-4)
  # Symmetric parameterisation: the two coefficient vectors are opposite.
  expect_equal(fit$coefficients[, 1], -fit$coefficients[, 2], tolerance = 1e-7)
})

test_that("observation weights agree with glmnet and with replicated rows", {
  d <- logistic_data(n = 90, p = 4, K = 3, seed = 3)
  set.seed(4)
  w <- sample(1:3, 90, replace = TRUE)
  fit_w <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.1, weights = w, tol = 1e-10)
  idx <- rep(seq_len(90), w)
  fit_r <- kernlearn:::.logistic_fit(d$x[idx, ], d$y[idx], lambda = 0.1, tol = 1e-10)
  expect_lt(max(abs(fit_w$coefficients - fit_r$coefficients)), 1e-6)
  expect_lt(max(abs(fit_w$intercept - fit_r$intercept)), 1e-6)
  skip_if_not_installed("glmnet")
  g <- glmnet::glmnet(d$x, d$y, family = "multinomial", alpha = 0, lambda = 0.1, weights = w,
                      standardize = FALSE, thresh = 1e-14, maxit = 1e6)
  gB <- sapply(g$beta, function(m) as.vector(as.matrix(m)))
  expect_lt(max(abs(fit_w$coefficients - gB)), 1e-4)
})

test_that("results do not depend on the thread count", {
  d <- logistic_data(n = 3000, p = 6, K = 4, seed = 9)
  f1 <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.01, threads = 1)
  f2 <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.01, threads = 2)
  f3 <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.01, threads = 3)
  expect_identical(f1$coefficients, f2$coefficients)
  expect_identical(f1$coefficients, f3$coefficients)
  expect_identical(f1$objective, f2$objective)
  expect_identical(kernlearn:::.logistic_predict(f1, d$x, threads = 1),
                   kernlearn:::.logistic_predict(f1, d$x, threads = 2))
})

test_that("predictions are probabilities and classes follow them", {
  d <- logistic_data(n = 200, p = 3, K = 3, seed = 6)
  fit <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 0.01)
  P <- kernlearn:::.logistic_predict(fit, d$x, "prob")
  expect_equal(colnames(P), levels(d$y))
  expect_equal(unname(rowSums(P)), rep(1, 200), tolerance = 1e-12)
  expect_true(all(P >= 0 & P <= 1))
  cls <- kernlearn:::.logistic_predict(fit, d$x, "class")
  expect_s3_class(cls, "factor")
  expect_equal(levels(cls), levels(d$y))
  expect_equal(as.integer(cls), max.col(P, ties.method = "first"))
  expect_gt(mean(cls == d$y), 0.6)
  # Stable softmax: huge linear predictors do not overflow.
  Pbig <- kernlearn:::.logistic_predict(fit, d$x * 1e4, "prob")
  expect_true(all(is.finite(Pbig)))
  expect_equal(unname(rowSums(Pbig)), rep(1, 200), tolerance = 1e-12)
})

test_that("bad input gives errors naming the argument", {
  d <- logistic_data(n = 30, p = 2, K = 2)
  expect_error(kernlearn:::.logistic_fit(d$x, d$y, lambda = -1), "'lambda'")
  expect_error(kernlearn:::.logistic_fit(d$x, d$y, lambda = NA), "'lambda'")
  xb <- d$x
  xb[3, 2] <- NA
  expect_error(kernlearn:::.logistic_fit(xb, d$y, lambda = 1), "'x'.*row 3, column 2")
  xb[3, 2] <- Inf
  expect_error(kernlearn:::.logistic_fit(xb, d$y, lambda = 1), "'x'")
  expect_error(kernlearn:::.logistic_fit(d$x, d$y[-1], lambda = 1), "'y'")
  expect_error(kernlearn:::.logistic_fit(d$x, 1:30, lambda = 1), "'y'")
  expect_error(kernlearn:::.logistic_fit(d$x, factor(rep("a", 30)), lambda = 1), "two classes")
  expect_error(kernlearn:::.logistic_fit(d$x, factor(d$y, levels = c("a", "b", "z")), lambda = 1),
               "'z'")
  expect_error(kernlearn:::.logistic_fit(d$x, d$y, lambda = 1, weights = rep(-1, 30)),
               "'weights'")
  expect_error(kernlearn:::.logistic_fit(d$x, d$y, lambda = 1, weights = 1:3), "'weights'")
  expect_error(kernlearn:::.logistic_fit(as.data.frame(d$x), d$y, lambda = 1), "'x'")
  fit <- kernlearn:::.logistic_fit(d$x, d$y, lambda = 1)
  expect_error(kernlearn:::.logistic_predict(fit, d$x[, 1, drop = FALSE]), "columns")
  # The core checks its arguments too.
  expect_error(kernlearn:::cpp_logistic_fit(d$x, rep(5L, 30), 2L, 1, NULL, 10L, 1e-6, 1L),
               "0..K-1")
})
