# Tessellated kernel learning: the start model against kernel_svm on a precomputed kernel, the
# optimisation's invariants, the paper's toy problems, and input errors. The learner's algebra
# against the kernel object and its gradient against finite differences of the SVM dual are
# checked by the core's C++ tests (tests/core).

scale01 <- function(x) apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
tk <- function(P, q, delta = 0.1) tessellated_kernel(P, q, lower = -delta, upper = 1 + delta)

# OPT_A(P): the SVM dual objective at K(P), through kernel_svm on the precomputed matrix.
dual_at <- function(P, q, xs, y, cost, epsilon = 0.1, delta = 0.1, tol = 1e-3, mu = 0) {
  K <- kernel_matrix(tk(P, q, delta), xs) + mu * diag(nrow(xs))
  -sum(kernel_svm(K, y, kernel = "precomputed", cost = cost, epsilon = epsilon, tol = tol)$obj)
}

circle_data <- function(n, seed) {
  set.seed(seed)
  x <- matrix(runif(2 * n, -1, 1), n, 2)
  list(x = x, y = factor(ifelse(rowSums(x^2) < 0.5, "in", "out")))
}

test_that("with maxit = 0 the model is kernel_svm on the precomputed K(P = I)", {
  set.seed(1)
  x <- matrix(runif(120 * 3), 120, 3)
  xs <- scale01(x)
  yc <- factor(ifelse(x[, 1] + x[, 2]^2 > 0.8, "b", "a"))
  y3 <- factor(cut(x[, 1] + x[, 3], 3, labels = c("p", "q", "r")))
  yr <- sin(4 * x[, 1]) + x[, 2]
  K <- kernel_matrix(tk(diag(8), 1), xs)
  for (y in list(yc, y3, yr)) {
    fit <- tkl(x, y, maxit = 0, cost = 3, epsilon = 0.05, baseline = FALSE, normalize = FALSE)
    expect_equal(fit$P, diag(8))
    expect_equal(fit$kernel_scale, 1)
    ref <- kernel_svm(K, y, kernel = "precomputed", cost = 3, epsilon = 0.05)
    expect_equal(fit$svm$sv_index, ref$sv_index)
    expect_equal(fit$svm$coefs, ref$coefs, tolerance = 1e-10)
    expect_equal(fit$svm$rho, ref$rho, tolerance = 1e-10)
    type <- if (is.factor(y)) "decision" else "response"
    expect_equal(predict(fit, x, type = type), predict(ref, K, type = type), tolerance = 1e-8)
    expect_equal(fit$trace$objective[1], -sum(ref$obj), tolerance = 1e-10)
  }
})

test_that("normalize starts from I / s (s the mean diagonal of K(I)) and reparametrises cost", {
  set.seed(11)
  for (d in c(2, 12)) {
    x <- matrix(runif(150 * d), 150, d)
    xs <- scale01(x)
    yc <- factor(ifelse(rowSums((x[, 1:2] - 0.5)^2) < 0.15, "in", "out"))
    yr <- sin(4 * x[, 1]) + x[, 2] + 0.05 * rnorm(150)
    h <- d + 1
    K <- kernel_matrix(tk(diag(2 * h), 1), xs)
    s <- mean(diag(K))
    for (y in list(yc, yr)) {
      fit <- tkl(x, y, maxit = 0, cost = 2, epsilon = 0.05, baseline = FALSE)
      expect_equal(fit$kernel_scale, s, tolerance = 1e-12)
      expect_equal(fit$P, diag(2 * h) / s, tolerance = 1e-12)
      expect_equal(fit$trace_P, 2 * h / s, tolerance = 1e-12)
      # an independent fit: kernel_svm on the precomputed K(I) / s
      ref <- kernel_svm(K / s, y, kernel = "precomputed", cost = 2, epsilon = 0.05)
      type <- if (is.factor(y)) "decision" else "response"
      expect_equal(predict(fit, x, type = type), predict(ref, K / s, type = type),
                   tolerance = 1e-8)
      # the same model as the raw kernel with cost / s, with and without iterations
      for (it in c(0, 3)) {
        f1 <- tkl(x, y, maxit = it, cost = 2, epsilon = 0.05, tol = 1e-4, svm_tol = 1e-6,
                  baseline = FALSE)
        f0 <- tkl(x, y, maxit = it, cost = 2 / s, epsilon = 0.05, tol = 1e-4, svm_tol = 1e-6,
                  baseline = FALSE, normalize = FALSE)
        expect_equal(f1$iterations, f0$iterations)
        expect_equal(predict(f1, x, type = type), predict(f0, x, type = type),
                     tolerance = 1e-3)
        expect_equal(f1$trace$objective / s, f0$trace$objective, tolerance = 1e-4)
      }
    }
  }
  expect_error(tkl(iris[, 1:4], iris$Species, normalize = NA), "normalize")
})

test_that("the optimisation keeps its invariants: objective down, bound up, gap >= 0, P feasible", {
  d <- circle_data(150, 3)
  set.seed(3)
  x3 <- matrix(runif(180 * 3), 180, 3)
  y3 <- factor(cut(x3[, 1] - x3[, 2] + 0.3 * sin(6 * x3[, 3]), 3, labels = c("a", "b", "c")))
  xr <- matrix(runif(160 * 2), 160, 2)
  yr <- sin(5 * xr[, 1]) * xr[, 2] + 0.05 * rnorm(160)
  cases <- list(list(x = d$x, y = d$y, q = 1, cost = 10),
                list(x = x3, y = y3, q = 1, cost = 5),
                list(x = xr, y = yr, q = 2, cost = 5),
                list(x = d$x, y = d$y, q = 0, cost = 50))
  for (cs in cases) for (ridge in c(0, 0.01)) for (alg in c("eg", "fw")) {
    fit <- tkl(cs$x, cs$y, degree = cs$q, cost = cs$cost, epsilon = 0.02, tol = 1e-4, maxit = 30,
               baseline = FALSE, ridge = ridge, algorithm = alg)
    expect_identical(fit$algorithm, alg)
    tr <- fit$trace
    expect_true(all(diff(tr$objective) < 0))
    expect_true(all(diff(tr$lower) >= 0))
    expect_true(all(tr$gap >= -1e-6 * abs(tr$objective)))
    expect_true(all(tr$lower <= min(tr$objective) + 1e-6 * abs(min(tr$objective))))
    h <- choose(ncol(cs$x) + cs$q, cs$q)
    q <- 2 * h / fit$kernel_scale
    expect_equal(fit$trace_P, q)
    expect_equal(sum(diag(fit$P)), q, tolerance = 1e-10)
    expect_equal(fit$P, t(fit$P))
    expect_gt(min(eigen(fit$P, symmetric = TRUE, only.values = TRUE)$values), -1e-8)
    expect_true(fit$iterations >= 1L)
    # the final objective is the dual of kernel_svm on the learned kernel's exact Gram matrix
    # (plus the ridge mu I of the optimisation's solves: ridge times the mean diagonal of
    # the start K(I / s)), and no other P of the same trace found at random does better than
    # the lower bound
    xs <- scale01(cs$x)
    mu <- ridge * mean(diag(kernel_matrix(tk(diag(2 * h) / fit$kernel_scale, cs$q), xs)))
    final <- dual_at(fit$P, cs$q, xs, cs$y, cs$cost, 0.02, mu = mu)
    expect_equal(final, tr$objective[nrow(tr)], tolerance = 1e-4)
    set.seed(4)
    for (r in 1:5) {
      A <- matrix(rnorm(4 * h * h), 2 * h)
      P <- crossprod(A)
      P <- q * P / sum(diag(P))
      expect_gte(dual_at(P, cs$q, xs, cs$y, cs$cost, 0.02, mu = mu), max(tr$lower) - 1e-6)
    }
  }
})

test_that("exponentiated gradient and Frank-Wolfe reach the same optimum, each within the other's bound", {
  set.seed(5)
  x <- matrix(runif(170 * 4), 170, 4)
  y <- factor(ifelse(x[, 1] + x[, 2]^2 - 0.7 * x[, 3] > 0.5, "a", "b"))
  xr <- matrix(runif(150 * 3), 150, 3)
  yr <- cos(4 * xr[, 1]) + xr[, 2] * xr[, 3] + 0.05 * rnorm(150)
  for (cs in list(list(x = x, y = y), list(x = xr, y = yr))) {
    fits <- lapply(c(eg = "eg", fw = "fw"), function(a)
      tkl(cs$x, cs$y, cost = 10, epsilon = 0.05, tol = 1e-3, maxit = 2000, baseline = FALSE,
          algorithm = a, fitted = FALSE))
    ob <- vapply(fits, function(f) f$trace$objective[nrow(f$trace)], 0)
    lo <- vapply(fits, function(f) max(f$trace$lower), 0)
    # the problem is convex: an objective is never below the other run's certified lower bound
    expect_gte(ob[["eg"]], lo[["fw"]] - 1e-8 * abs(ob[["fw"]]))
    expect_gte(ob[["fw"]], lo[["eg"]] - 1e-8 * abs(ob[["eg"]]))
    expect_true(fits$eg$converged)
    expect_output(print(fits$eg), "iteration\\(s\\) \\(exponentiated gradient\\)")
    expect_output(print(fits$fw), "iteration\\(s\\) \\(Frank-Wolfe\\)")
    # both within tol of the optimum when both converged
    if (fits$fw$converged) expect_lt(abs(ob[["eg"]] - ob[["fw"]]) / abs(ob[["fw"]]), 2e-3)
    # the learned kernels give nearly the same decision values
    dv <- lapply(fits, function(f) predict(f, cs$x, type = if (is.factor(cs$y)) "decision" else "response"))
    expect_gt(cor(c(dv$eg), c(dv$fw)), 0.95)
  }
})

test_that("tkl fits the paper's toy problems (a circle; a jump in a regression)", {
  tr <- circle_data(300, 6)
  te <- circle_data(2000, 7)
  fit <- tkl(tr$x, tr$y, cost = 10, baseline = FALSE)
  acc <- mean(predict(fit, te$x) == te$y)
  # a Gaussian SVM tuned over a cost x gamma grid on the same rows
  g <- kl_tune(kernel_svm, tr$x, tr$y, grid = list(cost = 10^(0:2), gamma = 2^(0:4)), folds = 5)
  acc_g <- mean(predict(g$best_model, te$x) == te$y)
  expect_gt(acc, 0.95)
  expect_gt(acc, acc_g - 0.02)

  x <- seq(0, 10, length.out = 300)
  y <- x + sin(x) + 5 * sign(x - 5)
  # the paper's tube, epsilon = 1, in the response's units
  fr <- tkl(data.frame(x = x), y, cost = 10, epsilon = 1, delta = 0.1, baseline = FALSE,
            scale_response = FALSE)
  xt <- data.frame(x = seq(0.01, 9.99, length.out = 500))
  yt <- xt$x + sin(xt$x) + 5 * sign(xt$x - 5)
  mse <- mean((predict(fr, xt) - yt)^2)
  mse_lm <- mean((predict(stats::lm(y ~ x), xt) - yt)^2)
  # Gaussian SVRs with the same cost and tube, over widths from smooth to rough
  mse_g <- vapply(10^(0:3), function(g)
    mean((predict(kernel_svm(data.frame(x = x), y, cost = 10, epsilon = 1, gamma = g,
                             scale_response = FALSE), xt) - yt)^2),
    0)
  expect_lt(mse, min(mse_g))
  expect_lt(mse, 1.5)            # about the epsilon = 1 tube
  expect_lt(mse, mse_lm / 3)
  # the jump at 5 shows: the fit rises by more than 4 between 4.8 and 5.2 (the truth: 10.3)
  jump <- diff(predict(fr, data.frame(x = c(4.8, 5.2))))
  expect_gt(jump, 4)
})

test_that("same data give the same model with 1 and 2 threads", {
  set.seed(8)
  x <- matrix(runif(700 * 3), 700, 3)
  y <- factor(cut(x[, 1] + x[, 2] * x[, 3], 3, labels = c("a", "b", "c")))
  f1 <- tkl(x, y, cost = 5, maxit = 5, threads = 1, baseline = FALSE)
  f2 <- tkl(x, y, cost = 5, maxit = 5, threads = 2, baseline = FALSE)
  expect_identical(f1$P, f2$P)
  expect_identical(f1$trace$objective, f2$trace$objective)
  expect_identical(predict(f1, x, type = "decision"), predict(f2, x, type = "decision"))
})

test_that("tkl models predict, keep their kernel, survive saveRDS and tune by CV", {
  fit <- tkl(Species ~ ., data = iris, probability = TRUE, maxit = 20, baseline = FALSE)
  p <- predict(fit, iris, type = "prob")
  expect_equal(dim(p), c(150L, 3L))
  expect_equal(colnames(p), levels(iris$Species))
  expect_equal(unname(rowSums(p)), rep(1, 150), tolerance = 1e-8)
  expect_equal(levels(predict(fit, iris)), levels(iris$Species))
  expect_gt(mean(predict(fit, iris) == iris$Species), 0.95)
  dec <- predict(fit, iris, type = "decision")
  expect_equal(colnames(dec), c("versicolor/setosa", "virginica/setosa", "virginica/versicolor"))
  expect_length(predict(fit, iris[0, ]), 0L)
  # the learned kernel in kernel_svm on the scaled inputs gives the same machine
  k <- learned_kernel(fit)
  expect_s3_class(k, "kl_tessellated_kernel")
  xs <- scale01(as.matrix(iris[, 1:4]))
  s <- kernel_svm(xs, iris$Species, kernel = k, cost = fit$cost)
  # (two solves to the solver's tolerance 1e-3: a warm-started and a cold one)
  expect_equal(predict(s, xs, type = "decision"), unname(dec), tolerance = 5e-3,
               ignore_attr = TRUE)
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  expect_identical(predict(readRDS(f), iris, type = "prob"), p)
  expect_output(print(fit), "Tessellated kernel learning")
  expect_output(print(summary(fit)), "Optimisation trace")
  pdf(NULL)
  expect_silent(plot(fit))
  expect_silent(plot(fit, which = "gap"))
  dev.off()
  tn <- kl_tune(tkl, Species ~ ., data = iris, grid = list(cost = c(1, 10), delta = c(0.1, 0.3)),
                folds = 3, maxit = 5)
  expect_s3_class(tn$best_model, "tkl")
  expect_true(tn$best$cost %in% c(1, 10))
  up <- update(fit, cost = 2, probability = FALSE)
  expect_equal(up$cost, 2)
})

test_that("the learned kernel is compared with a tuned Gaussian SVM on rows not fitted", {
  # P = I (maxit = 0) with a tiny cost cannot separate a circle: the Gaussian SVM wins and,
  # refitted on all rows, is the model
  d <- circle_data(200, 31)
  set.seed(32)
  fit <- tkl(d$x, d$y, cost = 1e-3, maxit = 0)
  sel <- fit$selection
  expect_identical(sel$choice, "baseline")
  expect_identical(sel$method, "cv")
  expect_identical(sel$validation, 200L)
  expect_lt(sel$baseline_error, sel$learned_error)
  expect_match(sel$reason, "tuned Gaussian SVM's misclassification .* is below the learned kernel's")
  # the learned kernel's figure is its 5-fold CV error at the given settings, on the folds the
  # Gaussian's tuning used (the same seed draws the same stratified folds)
  set.seed(32)
  cvl <- kl_cv(tkl, d$x, d$y, folds = 5, cost = 1e-3, maxit = 0, baseline = FALSE)
  expect_equal(sel$learned_error, mean(cvl$predictions != d$y))
  # the Gaussian's figure is its misclassification over all rows (as the learned kernel's) at
  # the chosen width and cost, on the same folds, the rows scaled to [0, 1] as tkl() sees them
  xs <- apply(d$x, 2, function(v) (v - min(v)) / (max(v) - min(v)))
  set.seed(32)
  cvg <- kl_cv(kernel_svm, xs, d$y, folds = 5, gamma = sel$baseline$gamma,
               cost = sel$baseline$cost, scale = "none")
  expect_equal(sel$baseline_error, mean(cvg$predictions != d$y))
  ref <- kernel_svm(d$x, d$y, gamma = sel$baseline$gamma, cost = sel$baseline$cost)
  expect_equal(predict(fit, d$x, type = "decision"), predict(ref, d$x, type = "decision"),
               tolerance = 1e-8)
  expect_identical(predict(fit, d$x), predict(ref, d$x))
  expect_identical(fitted(fit), predict(ref, d$x))
  expect_output(print(fit), "against the Gaussian SVM: in 5-fold cross-validation on the 200 rows")
  # a jump in a regression: the tessellated kernel fits it; when it wins the model is the fit
  # with baseline = FALSE on all rows
  x1 <- seq(0, 10, length.out = 150)
  yr <- x1 + sin(x1) + 5 * sign(x1 - 5)
  set.seed(33)
  fr <- tkl(data.frame(x = x1), yr, cost = 1, epsilon = 1)
  expect_true(fr$selection$choice %in% c("learned", "baseline"))
  expect_identical(fr$selection$choice == "learned",
                   fr$selection$learned_error < fr$selection$baseline_error)
  if (fr$selection$choice == "learned") {
    f0 <- tkl(data.frame(x = x1), yr, cost = 1, epsilon = 1, baseline = FALSE)
    expect_equal(fr$P, f0$P)
    expect_equal(predict(fr, data.frame(x = x1)), predict(f0, data.frame(x = x1)))
  }
  # above 2000 rows a fifth is held out
  big <- circle_data(2100, 34)
  set.seed(35)
  fb <- tkl(big$x, big$y, cost = 1e-3, maxit = 0, fitted = FALSE)
  expect_identical(fb$selection$method, "holdout")
  expect_identical(fb$selection$validation, 420L)
  expect_identical(fb$selection$choice, "baseline")
  expect_match(fb$selection$reason, "^on 420 held-out rows")
  # a few dozen rows are compared too, in 5-fold cross-validation
  set.seed(36)
  few <- tkl(d$x[1:30, ], d$y[1:30], maxit = 2)
  expect_identical(few$selection$method, "cv")
  expect_true(is.finite(few$selection$learned_error) && is.finite(few$selection$baseline_error))
  expect_identical(few$selection$choice == "learned",
                   few$selection$learned_error < few$selection$baseline_error)
  expect_output(print(few), "in 5-fold cross-validation on the 30 rows")
  # a tie goes to the Gaussian: two classes far apart, which both kernels separate in every fold
  xt <- rbind(matrix(rnorm(60, 0, 0.1), 30, 2), matrix(rnorm(60, 5, 0.1), 30, 2))
  yt <- factor(rep(c("a", "b"), each = 30))
  set.seed(37)
  tie <- tkl(xt, yt, maxit = 2)
  expect_identical(tie$selection$learned_error, 0)
  expect_identical(tie$selection$baseline_error, 0)
  expect_identical(tie$selection$choice, "baseline")
  expect_match(tie$selection$reason, "is equal to \\(a tie goes to the Gaussian\\) the learned kernel's 0")
  expect_s3_class(tie$svm, "kernel_svm")
  expect_identical(predict(tie, xt), yt)
  # too few rows to hold rows out: no comparison, said so
  small <- tkl(d$x[1:19, ], d$y[1:19], maxit = 2)
  expect_identical(small$selection$choice, "learned")
  expect_match(small$selection$reason, "too few rows to validate against the Gaussian SVM \\(19, fewer than 20\\)")
  expect_error(tkl(d$x, d$y, baseline = NA), "'baseline' must be TRUE or FALSE")
})

test_that("the Gaussian SVM's width and cost are chosen over two draws of folds", {
  # two classes: by the squared error of the decision values clipped to [-1, 1], averaged
  # over the learned kernel's folds and a second draw, recomputed here with kl_tune() on the
  # recorded folds and a metric of its own
  d <- circle_data(160, 41)
  set.seed(42)
  fit <- tkl(d$x, d$y, cost = 1e-3, maxit = 0)
  sel <- fit$selection
  tab <- sel$baseline$table
  f1 <- attr(tab, "foldid")
  f2 <- attr(tab, "foldid2")
  expect_identical(sort(unique(f1)), 1:5)
  expect_identical(sort(unique(f2)), 1:5)
  expect_false(identical(f1, f2))
  expect_identical(attr(tab, "criterion"), "mean squared error of decisions clipped to [-1, 1]")
  xs <- apply(d$x, 2, function(v) (v - min(v)) / (max(v) - min(v)))
  lev <- levels(d$y)
  sq <- structure(function(truth, pred)
    mean((pmin(pmax(as.vector(pred), -1), 1) - ifelse(truth == lev[2], 1, -1))^2),
    type = "decision")
  grid <- list(gamma = sort(unique(tab$gamma)), cost = sort(unique(tab$cost)))
  own <- function(f) {
    r <- kl_tune(kernel_svm, xs, d$y, grid = grid, foldid = f, metric = sq, scale = "none",
                 refit = FALSE, extend = 0L)$results
    r$mean[match(paste(tab$gamma, tab$cost), paste(r$gamma, r$cost))]
  }
  both <- (own(f1) + own(f2)) / 2
  # (the points past the first grid were solved from other warm starts: equal to the solver's
  # tolerance)
  expect_equal(tab$mean_both, both, tolerance = 1e-4)
  b <- which.min(tab$mean_both)
  expect_equal(tab$mean_both[b], min(both), tolerance = 1e-4)
  expect_equal(c(sel$baseline$gamma, sel$baseline$cost), c(tab$gamma[b], tab$cost[b]))
  # its figure is the misclassification rate at that point on the learned kernel's folds
  miss <- 0
  for (k in 1:5) {
    sv <- kernel_svm(xs[f1 != k, ], d$y[f1 != k], gamma = tab$gamma[b], cost = tab$cost[b],
                     scale = "none")
    miss <- miss + sum(predict(sv, xs[f1 == k, ]) != d$y[f1 == k])
  }
  expect_equal(sel$baseline_error, miss / 160)
  # more classes: by the misclassification rate, over both draws
  set.seed(43)
  x3 <- matrix(runif(450), 150, 3)
  y3 <- factor(c("a", "b", "c")[1 + (x3[, 1] > 0.4) + (x3[, 2] > 0.6)])
  f3 <- tkl(x3, y3, cost = 1e-3, maxit = 0)
  t3 <- f3$selection$baseline$table
  expect_identical(attr(t3, "criterion"), "misclassification rate")
  expect_equal(t3$mean_both, (t3$mean + t3$mean2) / 2)
  expect_equal(f3$selection$baseline$gamma, t3$gamma[which.min(t3$mean_both)])
})

test_that("in regression the Gaussian least-squares SVM is a baseline too, where the tube is too wide", {
  # a smooth response without noise: the epsilon tube (0.1 of its standard deviation) limits
  # any SVR, the least-squares SVM interpolates it; its width and penalty are tuned on the
  # folds of the comparison, and refitted on all rows it is the model
  set.seed(71)
  n <- 150
  x <- matrix(runif(2 * n), n, 2)
  y <- sin(4 * x[, 1]) + x[, 2]^2
  xt <- matrix(runif(40), 20, 2)
  set.seed(72)
  fit <- tkl(x, y, maxit = 3)
  sel <- fit$selection
  expect_identical(sel$choice, "baseline")
  expect_identical(sel$baseline$loss, "least squares")
  expect_true(is.na(sel$baseline$cost))
  expect_match(sel$reason, "tuned Gaussian least-squares SVM's mean squared error .* is below")
  expect_match(sel$reason, "penalty .* per row")
  expect_lt(sel$baseline_error, sel$learned_error)
  # the figure is kernel ridge regression's 5-fold CV error at the chosen width and penalty
  # (lambda per row times a fold's 120 fitting rows), on the same folds, over all rows, on the
  # rows as tkl() sees them: inputs on [0, 1], the response standardised
  xs <- scale01(x)
  ys <- (y - mean(y)) / stats::sd(y)
  k <- gaussian_kernel(gamma = sel$baseline$gamma)
  set.seed(72)
  cv <- kl_cv(kernel_ridge, xs, ys, folds = 5, kernel = k, lambda = 120 * sel$baseline$lambda,
              scale = "none")
  expect_equal(sel$baseline_error, mean((cv$predictions - ys)^2), tolerance = 1e-6)
  # the model is that least-squares SVM on all rows, in the response's units
  ref <- kernel_ridge(xs, ys, kernel = k, lambda = n * sel$baseline$lambda, scale = "none")
  xts <- sweep(sweep(xt, 2, apply(x, 2, min)), 2, apply(x, 2, function(v) diff(range(v))), "/")
  expect_equal(predict(fit, xt), mean(y) + stats::sd(y) * predict(ref, xts), tolerance = 1e-6)
  expect_equal(fitted(fit), mean(y) + stats::sd(y) * predict(ref, xs), tolerance = 1e-6)
  expect_lt(mean((predict(fit, xt) - (sin(4 * xt[, 1]) + xt[, 2]^2))^2), 1e-3)
  # far from the training rows its predictions go at most the response's range past it
  expect_equal(fit$svm$clip, range(ys) + c(-1, 1) * diff(range(ys)))
  xf <- rbind(c(-3, 0.5), c(0.5, 4), c(20, -20), c(0.3, 0.6))
  dec_f <- predict(ref, sweep(sweep(xf, 2, apply(x, 2, min)), 2,
                              apply(x, 2, function(v) diff(range(v))), "/"))
  expect_equal(predict(fit, xf),
               mean(y) + stats::sd(y) * pmin(pmax(dec_f, fit$svm$clip[1]), fit$svm$clip[2]),
               tolerance = 1e-6)
  expect_true(all(abs(predict(fit, xf) - mean(range(y))) <= 1.5 * diff(range(y)) + 1e-9))
  expect_output(print(fit), "the Gaussian least-squares SVM, refitted on all rows, predicts")
  expect_output(print(fit$svm), "least-squares regression")
  expect_output(print(summary(fit$svm)), "penalty lambda")
  # with noise the tube is no limit
  set.seed(73)
  yn <- y + 0.3 * rnorm(n)
  set.seed(74)
  fn <- tkl(x, yn, maxit = 3)
  expect_identical(fn$selection$choice == "learned",
                   fn$selection$learned_error < fn$selection$baseline_error)
  # above 2000 rows the least-squares SVM is tuned on the fitting rows and scored on the held-out
  # fifth, as the SVR is
  set.seed(75)
  xb <- matrix(runif(2 * 2050), 2050, 2)
  yb <- sin(4 * xb[, 1]) + xb[, 2]^2
  set.seed(76)
  fb <- tkl(xb, yb, maxit = 0, fitted = FALSE)
  expect_identical(fb$selection$method, "holdout")
  expect_identical(fb$selection$baseline$loss, "least squares")
  expect_lt(mean((predict(fb, xt) - (sin(4 * xt[, 1]) + xt[, 2]^2))^2), 1e-4)
})

test_that("classes with fewer rows than folds are validated against the Gaussian SVM too", {
  # 3 classes, one of 3 rows and one of a single row: the stratified folds leave the small
  # classes out of some folds' fitting rows; both models are still compared, with all classes
  set.seed(41)
  x <- matrix(runif(240), 120, 2)
  y <- factor(ifelse(x[, 1] > 0.5, "b", "a"), levels = c("a", "b", "c", "d"))
  y[1:3] <- "c"
  y[4] <- "d"
  x[1:3, ] <- matrix(c(0.1, 0.12, 0.14, 0.9, 0.92, 0.94), 3)
  expect_warning(fit <- tkl(x, y, maxit = 3),
                 "classes 'c' \\(3\\), 'd' \\(1\\) have fewer rows than folds")
  sel <- fit$selection
  expect_true(is.finite(sel$learned_error) && is.finite(sel$baseline_error))
  expect_identical(sel$method, "cv")
  # both errors are rates over the 120 rows
  expect_equal(sel$learned_error * 120, round(sel$learned_error * 120))
  expect_equal(sel$baseline_error * 120, round(sel$baseline_error * 120))
  expect_identical(fit$levels, c("a", "b", "c", "d"))
  p <- predict(fit, x)
  expect_identical(levels(p), levels(y))
  expect_identical(levels(fitted(fit)), levels(y))
  # when the Gaussian wins (a tiny cost with P = I), its model keeps every class too
  set.seed(42)
  fb <- suppressWarnings(tkl(x, y, cost = 1e-3, maxit = 0))
  expect_identical(fb$selection$choice, "baseline")
  expect_identical(fb$levels, c("a", "b", "c", "d"))
  expect_identical(fb$svm$levels, c("a", "b", "c", "d"))
  expect_true(all(c("a", "b") %in% as.character(predict(fb, x))))
  # a weight for the one-row class: the fold whose fitting rows lack it goes without it
  set.seed(43)
  fw <- suppressWarnings(tkl(x, y, maxit = 3, class.weights = c(d = 2, b = 1.5)))
  expect_true(is.finite(fw$selection$learned_error) && is.finite(fw$selection$baseline_error))
  expect_equal(fw$class.weights, c(a = 1, b = 1.5, c = 1, d = 2))
  # two classes, one of a single row: the fold holding it out fits one class, so there is no
  # validation, and the reason says why
  x2 <- matrix(runif(120), 60, 2)
  y2 <- factor(c("rare", rep("common", 59)))
  f2 <- suppressWarnings(tkl(x2, y2, maxit = 3))
  expect_identical(f2$selection$choice, "learned")
  expect_match(f2$selection$reason, "a fold's fitting rows hold a single class")
  expect_identical(levels(predict(f2, x2)), c("common", "rare"))
})

test_that("tkl gives clear errors for bad input", {
  x <- matrix(runif(60), 30, 2)
  y <- factor(rep(c("a", "b"), 15))
  expect_error(tkl(x, y, degree = -1, baseline = FALSE), "degree")
  expect_error(tkl(x, y, delta = -0.1, baseline = FALSE), "delta")
  expect_error(tkl(x, y, cost = 0, baseline = FALSE), "cost")
  expect_error(tkl(x, y, maxit = -1, baseline = FALSE), "maxit")
  expect_error(tkl(x, y, tol = 0, baseline = FALSE), "tol")
  expect_error(tkl(x, y, ridge = -0.1, baseline = FALSE), "'ridge'")
  expect_error(tkl(x, y, ridge = NA, baseline = FALSE), "'ridge'")
  expect_error(tkl(x, y, algorithm = "newton", baseline = FALSE),
               "'algorithm' must be one of \"eg\", \"fw\"")
  expect_error(tkl(x, rnorm(30), probability = TRUE, baseline = FALSE), "probability = TRUE is for classification")
  expect_error(tkl(x, factor(rep("a", 30)), baseline = FALSE), "class")
  xn <- x
  xn[3, 1] <- NA
  expect_error(tkl(xn, y, baseline = FALSE), "missing|NA|finite")
  expect_error(tkl(matrix(runif(30 * 40), 30, 40), y, degree = 3, baseline = FALSE), "monomials")
  expect_error(tkl(x, y, bogus = 1, baseline = FALSE), "bogus")
  fit <- tkl(data.frame(a = x[, 1], b = x[, 2]), y, maxit = 2, baseline = FALSE)
  expect_error(predict(fit, data.frame(a = 1)), "b")
  expect_error(predict(fit, type = "decision"), "newdata")
  expect_error(predict(fit, data.frame(a = x[, 1], b = x[, 2]), type = "prob"), "probability")
  old <- options(kernlearn.max_memory = 1e6)
  on.exit(options(old))
  expect_error(tkl(matrix(runif(2000), 1000, 2), rnorm(1000), baseline = FALSE), "rows fit")
  # 1000 rows: about 20 MB in double precision, 12 MB in single; "auto" takes single when
  # double does not fit
  options(kernlearn.max_memory = 15e6)
  xm <- matrix(runif(2000), 1000, 2)
  ym <- rnorm(1000)
  expect_identical(tkl(xm, ym, maxit = 1, baseline = FALSE, fitted = FALSE)$precision, "single")
  expect_error(tkl(xm, ym, maxit = 1, baseline = FALSE, precision = "double"),
               "in double precision, [0-9]+ in single precision")
  options(kernlearn.max_memory = 1e9)
  expect_identical(tkl(xm, ym, maxit = 1, baseline = FALSE, fitted = FALSE)$precision, "double")
})

test_that("constant columns keep the box valid; new points outside it are clamped", {
  set.seed(9)
  x <- cbind(runif(80), 3, runif(80))
  y <- x[, 1] - x[, 3]
  fit <- tkl(x, y, maxit = 5, epsilon = 0.01, baseline = FALSE)
  expect_true(all(is.finite(predict(fit, x))))
  far <- x[1:3, ]
  far[, 1] <- c(-50, 50, 0.5)
  clamp <- far
  clamp[, 1] <- c(min(x[, 1]) - 0.1 * diff(range(x[, 1])), max(x[, 1]) + 0.1 * diff(range(x[, 1])), 0.5)
  expect_equal(predict(fit, far), predict(fit, clamp), tolerance = 1e-10)
})

test_that("tkl's cost path: every cost's run ends within its gap of a fit at that cost alone", {
  set.seed(21)
  x <- matrix(runif(160 * 3), 160, 3)
  yc <- factor(ifelse(rowSums((x[, 1:2] - 0.5)^2) < 0.12, "in", "out"))
  y3 <- factor(cut(x[, 1] - x[, 2] + 0.3 * sin(6 * x[, 3]), 3, labels = c("a", "b", "c")))
  yr <- sin(5 * x[, 1]) * x[, 2] + 0.05 * rnorm(160)
  costs <- c(0.5, 2, 8)
  for (y in list(yc, y3, yr)) {
    inp <- kernlearn:::.kl_input_xy(x, y, "tkl()")
    path <- kernlearn:::.tkl_fit(inp, 1, 0.1, costs[1], 0.05, 1e-3, 100, NULL, FALSE, 1e-4,
                                 100, 1, NULL, 0.1, TRUE, path = costs)
    expect_length(path, length(costs))
    for (i in seq_along(costs)) {
      f <- tkl(x, y, cost = costs[i], epsilon = 0.05, tol = 1e-3, svm_tol = 1e-4,
               baseline = FALSE, scale_response = FALSE, threads = 1)
      expect_equal(path[[i]]$cost, costs[i])
      lp <- path[[i]]$trace[nrow(path[[i]]$trace), ]
      lf <- f$trace[nrow(f$trace), ]
      # both objectives lie above the same optimum, each by at most its gap
      expect_lte(abs(lp$objective - lf$objective), max(lp$gap, lf$gap) + 1e-6 * abs(lf$objective))
      expect_equal(path[[i]]$kernel_scale, f$kernel_scale)
      type <- if (is.factor(y)) "class" else "response"
      agree <- if (is.factor(y)) mean(predict(path[[i]], x) == predict(f, x))
               else cor(predict(path[[i]], x), predict(f, x))
      expect_gt(agree, 0.97)
    }
  }
})

test_that("kl_tune(tkl, baseline = FALSE) takes the cost path, a property of the learner", {
  expect_identical(attr(tkl, "kl_tune_path"), "tkl")
  expect_identical(attr(kernel_svm, "kl_tune_path"), "svm")
  d <- circle_data(150, 31)
  grid <- list(cost = c(1, 10, 100), delta = c(0.1, 0.3))
  # count the path's tasks
  counter <- trace_count(".tkl_path_task")
  on.exit(untrace_count(".tkl_path_task"), add = TRUE)
  set.seed(3)
  a <- kl_tune(tkl, d$x, d$y, grid = grid, folds = 3, baseline = FALSE, extend = 0,
               threads = 1)
  expect_equal(counter$n, 3L * 2L)  # one task per fold and delta
  # the general path (a wrapper has no path), on the same folds
  wrapped <- function(x, y, ...) tkl(x, y, ...)
  set.seed(3)
  b <- kl_tune(wrapped, d$x, d$y, grid = grid, folds = 3, baseline = FALSE, extend = 0,
               threads = 1)
  expect_equal(counter$n, 6L)
  expect_equal(a$results[, c("cost", "delta")], b$results[, c("cost", "delta")])
  expect_equal(a$results$mean, b$results$mean, tolerance = 0.05)
  expect_equal(a$best_model$cost, a$best$cost)
  # without baseline in the call the folds are fitted with baseline = FALSE (a property of
  # the learner): the same path and results; the refit compares with the Gaussian
  expect_identical(attr(tkl, "kl_tune_fold_args"), list(baseline = FALSE))
  set.seed(3)
  dflt <- kl_tune(tkl, d$x, d$y, grid = grid, folds = 3, extend = 0, threads = 1)
  expect_equal(counter$n, 12L)
  expect_identical(dflt$fold_args, list(baseline = FALSE))
  expect_identical(a$fold_args, list())
  expect_identical(dflt$results, a$results)
  expect_identical(dflt$foldid, a$foldid)
  expect_null(a$best_model$selection)
  expect_true(dflt$best_model$selection$choice %in% c("learned", "baseline"))
  expect_output(print(dflt), "folds were fitted with baseline = FALSE")
  expect_output(print(dflt), "the refit compared the learned kernel with the tuned Gaussian")
  # baseline = TRUE given compares in every fold: the general path
  set.seed(3)
  nested <- kl_tune(tkl, d$x, d$y, grid = list(cost = c(1, 10)), folds = 3, extend = 0,
                    threads = 1, baseline = TRUE)
  expect_equal(counter$n, 12L)
  expect_identical(nested$fold_args, list())
  # a grid over baseline is the grid's
  set.seed(3)
  gb <- kl_tune(tkl, d$x, d$y, grid = list(cost = 1, baseline = c(FALSE, TRUE)), folds = 3,
                extend = 0, threads = 1, refit = FALSE)
  expect_identical(gb$fold_args, list())
  expect_equal(nrow(gb$results), 2L)
})

test_that("precision = 'single' fits the model of double precision to single precision's accuracy", {
  set.seed(41)
  x <- matrix(runif(200 * 4), 200, 4)
  xs <- scale01(x)
  yc <- factor(ifelse(rowSums((x[, 1:2] - 0.5)^2) < 0.12, "in", "out"))
  y3 <- factor(cut(x[, 1] - x[, 2] + 0.3 * sin(6 * x[, 3]), 3, labels = c("a", "b", "c")))
  yr <- sin(5 * x[, 1]) * x[, 2] + 0.05 * rnorm(200)
  K <- kernel_matrix(tk(diag(10), 1), xs)
  for (y in list(yc, y3, yr)) {
    type <- if (is.factor(y)) "decision" else "response"
    # the start kernel, formed from the single precision box matrix
    f0 <- tkl(x, y, maxit = 0, cost = 3, epsilon = 0.05, baseline = FALSE,
              precision = "single", svm_tol = 1e-7)
    expect_equal(f0$kernel_scale, mean(diag(K)), tolerance = 1e-6)
    ref <- kernel_svm(K / mean(diag(K)), y, kernel = "precomputed", cost = 3, epsilon = 0.05,
                      tol = 1e-7)
    expect_equal(predict(f0, x, type = type), predict(ref, K / mean(diag(K)), type = type),
                 tolerance = 1e-4)
    # the whole optimisation
    fd <- tkl(x, y, cost = 3, epsilon = 0.05, baseline = FALSE, tol = 1e-3)
    fs <- tkl(x, y, cost = 3, epsilon = 0.05, baseline = FALSE, tol = 1e-3,
              precision = "single")
    expect_identical(fs$precision, "single")
    expect_equal(fs$trace$objective[1], fd$trace$objective[1], tolerance = 1e-5)
    expect_equal(fs$trace$objective[nrow(fs$trace)], fd$trace$objective[nrow(fd$trace)],
                 tolerance = 1e-3)
    if (is.factor(y)) expect_gt(mean(predict(fs, x) == predict(fd, x)), 0.97)
    else expect_gt(cor(predict(fs, x), predict(fd, x)), 0.999)
  }
  expect_error(tkl(x, yc, precision = "half"), "'precision' must be one of")
})

test_that("tkl regression standardises the response: the same choices and predictions in any units", {
  set.seed(61)
  n <- 120
  x <- matrix(runif(n * 2), n, 2)
  y <- sin(5 * x[, 1]) * x[, 2] + 0.05 * rnorm(n)
  xt <- matrix(runif(40), 20, 2)
  set.seed(62)
  a <- tkl(x, y, maxit = 10)
  set.seed(62)
  b <- tkl(x, 1e4 * y - 3, maxit = 10)
  expect_identical(b$selection$choice, a$selection$choice)
  expect_equal(b$selection$learned_error, a$selection$learned_error, tolerance = 1e-4)
  # (equal up to the solvers' tolerances: rounding in the two standardisations moves the
  # iterations a little)
  expect_equal(predict(b, xt), 1e4 * predict(a, xt) - 3, tolerance = 2e-3)
  expect_equal(fitted(b), 1e4 * fitted(a) - 3, tolerance = 2e-3)
  expect_equal(unname(b$y_scaling), c(mean(1e4 * y - 3), stats::sd(1e4 * y - 3)))
  expect_output(print(b), "on the standardised response")
  # the learned kernel is that of the standardised response fitted as given
  ys <- (y - mean(y)) / stats::sd(y)
  l <- tkl(x, y, maxit = 10, baseline = FALSE)
  r <- tkl(x, ys, maxit = 10, baseline = FALSE, scale_response = FALSE)
  expect_equal(l$P, r$P, tolerance = 1e-8)
  expect_equal(predict(l, xt), predict(r, xt) * stats::sd(y) + mean(y), tolerance = 1e-8)
  expect_error(tkl(x, y, scale_response = "yes"), "scale_response")
  # kl_tune()'s cost path standardises each fold's response as tkl() does
  fid <- rep(1:3, length.out = n)
  tn <- kl_tune(tkl, x, 100 * y, grid = list(cost = c(1, 10)), foldid = fid, extend = 0,
                baseline = FALSE, maxit = 10)
  by_hand <- mean(vapply(1:3, function(k) {
    m <- tkl(x[fid != k, ], 100 * y[fid != k], cost = 10, maxit = 10, baseline = FALSE,
             fitted = FALSE)
    mean((predict(m, x[fid == k, ]) - 100 * y[fid == k])^2)
  }, 0))
  expect_equal(tn$results$mean[tn$results$cost == 10], by_hand, tolerance = 1e-3)
})

test_that("at many inputs the kernel is its linear term to within the box bound, and print() says so", {
  set.seed(81)
  d <- 120L
  x <- matrix(runif(30 * d), 30, d)
  delta <- 0.1
  h <- d + 1L
  # a random positive semidefinite P: the bound holds for any
  A <- matrix(rnorm(4 * h * h), 2 * h)
  P <- crossprod(A) / (2 * h)
  K <- kernel_matrix(tessellated_kernel(P, 1, lower = rep(-delta, d), upper = rep(1 + delta, d)), x)
  V <- (1 + 2 * delta)^d
  Z <- cbind(1, x)
  P22 <- P[h + seq_len(h), h + seq_len(h)]
  lin <- V * Z %*% P22 %*% t(Z)
  bound <- kernlearn:::.tkl_box_bound(d, delta)
  expect_lt(bound, 3e-5)
  # every other term is a product bounded by bound * V times |Z(x)' P_st Z(y)| <= |Z(x)| |Z(y)| ||P||
  scale <- sqrt(rowSums(Z^2)) %o% sqrt(rowSums(Z^2)) * max(abs(eigen(P, symmetric = TRUE,
                                                                      only.values = TRUE)$values))
  expect_true(all(abs(K - lin) <= 5 * bound * V * scale))
  expect_gt(max(abs(K - lin) / (V * scale)), 0)  # not the linear kernel exactly
  y <- factor(x[, 1] > 0.5)
  fit <- tkl(x, y, baseline = FALSE, maxit = 2)
  expect_output(print(fit), "at 120 inputs the kernel's box products are below 2.9e-05: it is in effect a linear kernel")
  fit <- tkl(x[, 1:10], y, baseline = FALSE, maxit = 2)
  expect_false(any(grepl("in effect", capture.output(print(fit)))))
})

test_that("with fewer rows than monomials the steps work in the rows' span, with the same iterates", {
  set.seed(91)
  n <- 40L
  d <- 100L
  x <- matrix(runif(n * d), n, d)
  y <- factor(ifelse(x[, 1] + x[, 2] > 1, "a", "b"))
  yr <- x[, 1] - x[, 2] + rnorm(n, sd = 0.1)
  xt <- matrix(runif(50 * d), 50, d)
  on.exit(options(kernlearn.tkl_subspace = NULL), add = TRUE)
  for (resp in list(y, yr)) {
    options(kernlearn.tkl_subspace = NULL)
    a <- tkl(x, resp, maxit = 6, baseline = FALSE, threads = 1)
    expect_identical(a$subspace, 2L * n)  # twice the rank of the rows' monomials
    expect_output(print(a), "exponentiated gradient in the 80-dimensional span of the rows")
    options(kernlearn.tkl_subspace = FALSE)
    b <- tkl(x, resp, maxit = 6, baseline = FALSE, threads = 1)
    expect_identical(b$subspace, 0L)
    expect_identical(a$iterations, b$iterations)
    expect_equal(a$trace$objective, b$trace$objective, tolerance = 1e-9)
    expect_equal(a$trace$gap, b$trace$gap, tolerance = 1e-7 * max(abs(b$trace$objective)))
    expect_equal(a$P, b$P, tolerance = 1e-9)
    type <- if (is.factor(resp)) "decision" else "response"
    expect_equal(predict(a, xt, type = type), predict(b, xt, type = type), tolerance = 1e-8)
  }
  # a cost path continues from the last cost's P, which keeps the form: the same results
  options(kernlearn.tkl_subspace = NULL)
  set.seed(5)
  pa <- kl_tune(tkl, x, y, grid = list(cost = c(1, 10)), folds = 3, baseline = FALSE,
                extend = 0, maxit = 4, threads = 1, refit = FALSE)
  options(kernlearn.tkl_subspace = FALSE)
  set.seed(5)
  pb <- kl_tune(tkl, x, y, grid = list(cost = c(1, 10)), folds = 3, baseline = FALSE,
                extend = 0, maxit = 4, threads = 1, refit = FALSE)
  expect_equal(pa$fold_metrics, pb$fold_metrics)
  # more rows than monomials, or Frank-Wolfe: all of P
  options(kernlearn.tkl_subspace = NULL)
  expect_identical(tkl(x[, 1:5], y, maxit = 2, baseline = FALSE)$subspace, 0L)
  expect_identical(tkl(x, y, maxit = 2, baseline = FALSE, algorithm = "fw")$subspace, 0L)
})
