# Generalized eigenvector features: eigenproblems, the paper's propositions, feature map,
# classifier, variants and bad input.

gem_toy <- function(n = 600, d = 6, k = 3, seed = 1) {
  set.seed(seed)
  y <- factor(sample(letters[seq_len(k)], n, TRUE))
  x <- matrix(rnorm(n * d), n, d)
  # Classes differ in their second moments, not only in their means.
  for (m in seq_len(k)) {
    rows <- y == levels(y)[m]
    A <- diag(d) + matrix(rnorm(d * d, sd = 0.4), d, d)
    x[rows, ] <- x[rows, ] %*% A + 0.3 * m
  }
  colnames(x) <- paste0("x", seq_len(d))
  list(x = x, y = y)
}

# Three Gaussian classes that differ only in their covariance.
covariance_toy <- function() {
  set.seed(5)
  n <- 1500
  y <- factor(sample(c("narrow", "wide", "tilted"), n, TRUE))
  x <- matrix(rnorm(n * 3), n, 3)
  x[y == "wide", 1] <- 3 * x[y == "wide", 1]
  x[y == "tilted", 2] <- x[y == "tilted", 2] + 2.5 * x[y == "tilted", 3]
  list(x = x, y = y)
}

class_moment <- function(x, y, lev) {
  xi <- x[y == lev, , drop = FALSE]
  crossprod(xi) / nrow(xi)
}

test_that("directions solve the regularised generalized eigenproblem", {
  dat <- gem_toy()
  fit <- gem(dat$x, dat$y, ridge = 0.2, top = 4, threshold = 0, scale = FALSE, head = "logistic", lambda = 1e-3)
  L <- fit$members[[1]]$layers[[1]]
  d <- ncol(dat$x)
  expect_equal(nrow(L$pairs), 6L)
  for (q in seq_len(nrow(L$pairs))) {
    i <- levels(dat$y)[L$pairs[q, 1]]
    j <- levels(dat$y)[L$pairs[q, 2]]
    Ci <- class_moment(dat$x, dat$y, i)
    Cj <- class_moment(dat$x, dat$y, j)
    Bj <- Cj + 0.2 * sum(diag(Cj)) / d * diag(d)
    V <- L$V[, L$pair_of == q, drop = FALSE]
    lam <- L$spectra[[q]][seq_len(ncol(V))]
    expect_equal(ncol(V), 4L)
    # residual, B-orthonormality, Rayleigh quotients and the full spectrum
    res <- Ci %*% V - Bj %*% V %*% diag(lam, ncol(V))
    expect_lt(max(abs(res)), 1e-8 * max(abs(Ci)))
    expect_equal(crossprod(V, Bj %*% V), diag(ncol(V)), tolerance = 1e-8)
    expect_equal(diag(crossprod(V, Ci %*% V)), lam, tolerance = 1e-8)
    Lc <- t(chol(Bj))
    M <- solve(Lc, t(solve(Lc, Ci)))
    ev <- eigen((M + t(M)) / 2, symmetric = TRUE, only.values = TRUE)$values
    expect_equal(lam, ev[1:4], tolerance = 1e-8)
    # sign convention: positive mean projection on the numerator class
    mu <- colMeans(dat$x[dat$y == i, , drop = FALSE])
    expect_true(all(drop(mu %*% V) >= 0))
  }
})

test_that("the iterative eigensolver agrees with the dense one", {
  set.seed(3)
  n <- 2500
  d <- 300
  x <- matrix(rnorm(n * d), n, d) + matrix(rnorm(n * d), n, d) %*% matrix(rnorm(d * d, sd = 0.05), d, d)
  y <- factor(sample(c("u", "v"), n, TRUE))
  x[y == "v", 1:12] <- x[y == "v", 1:12] %*% diag(seq(1.5, 4, length.out = 12))
  a <- suppressWarnings(gem(x, y, top = 8, threshold = 0, scale = FALSE, head = "logistic",
                            lambda = 1e-4,
                            control = gem_control(eigen_method = "dense", maxit = 5)))
  b <- suppressWarnings(gem(x, y, top = 8, threshold = 0, scale = FALSE, head = "logistic",
                            lambda = 1e-4,
                            control = gem_control(eigen_method = "iterative", maxit = 5)))
  La <- a$members[[1]]$layers[[1]]
  Lb <- b$members[[1]]$layers[[1]]
  expect_true(all(La$dense))
  # the pair with a well-separated top spectrum converges well before d applications (the
  # other may fall back to the dense solver)
  expect_false(Lb$dense[Lb$pairs[, 1] == 2])
  expect_lt(Lb$applications[Lb$pairs[, 1] == 2], d / 2)
  for (q in 1:2) expect_equal(Lb$spectra[[q]], La$spectra[[q]], tolerance = 1e-9)
  expect_equal(Lb$V, La$V, tolerance = 1e-6)
})

test_that("Proposition 1: projections are invariant to invertible linear maps of x", {
  dat <- gem_toy(n = 900, d = 5)
  set.seed(11)
  A <- diag(5) + matrix(rnorm(25, sd = 0.3), 5, 5)
  expect_lt(kappa(A, exact = TRUE), 20)
  xa <- dat$x %*% t(A)        # each row x becomes A x
  colnames(xa) <- colnames(dat$x)
  args <- list(ridge = 0, top = 3, threshold = 0, scale = FALSE, keep_input = FALSE,
               lambda = 1e-3, control = gem_control(tol = 1e-5, maxit = 2000))
  f1 <- do.call(gem, c(list(dat$x, dat$y), args))
  f2 <- do.call(gem, c(list(xa, dat$y), args))
  P1 <- dat$x %*% f1$members[[1]]$layers[[1]]$V
  P2 <- xa %*% f2$members[[1]]$layers[[1]]$V
  expect_equal(P2, P1, tolerance = 1e-8)
  expect_equal(features(f2, xa), features(f1, dat$x), tolerance = 1e-8)
  expect_equal(predict(f2, xa, type = "prob"), predict(f1, dat$x, type = "prob"),
               tolerance = 1e-4)
  # with the input kept (or a ridge) the representation is not invariant
  f3 <- do.call(gem, utils::modifyList(c(list(xa, dat$y), args), list(ridge = 0.5)))
  P3 <- xa %*% f3$members[[1]]$layers[[1]]$V
  expect_gt(max(abs(P3 - P1)), 1e-3)
})

test_that("Proposition 2: responses of one pair are uncorrelated on the denominator class", {
  dat <- gem_toy(n = 900, d = 6)
  fit <- gem(dat$x, dat$y, ridge = 0, top = 5, threshold = 0, scale = FALSE, head = "logistic", lambda = 1e-3)
  L <- fit$members[[1]]$layers[[1]]
  for (q in seq_len(nrow(L$pairs))) {
    V <- L$V[, L$pair_of == q, drop = FALSE]
    Pj <- dat$x[dat$y == levels(dat$y)[L$pairs[q, 2]], , drop = FALSE] %*% V
    E <- crossprod(Pj) / nrow(Pj)        # E[(v_a'x)(v_b'x) | y = j]
    expect_equal(E, diag(ncol(V)), tolerance = 1e-8)
    Pi <- dat$x[dat$y == levels(dat$y)[L$pairs[q, 1]], , drop = FALSE] %*% V
    expect_equal(colMeans(Pi^2), L$spectra[[q]][seq_len(ncol(V))], tolerance = 1e-8)
  }
})

test_that("the feature maps match their definitions", {
  dat <- gem_toy(n = 300, d = 4)
  for (nl in c("smooth_sqrt", "relu_powers")) {
    fit <- gem(dat$x, dat$y, top = 2, threshold = 0, nonlinearity = nl, degree = 3,
               control = gem_control(standardize = FALSE), head = "logistic", lambda = 1e-3)
    xs <- kernlearn:::.kl_newdata(fit$spec, dat$x[1:20, ], "test")
    expect_true(all(xs >= 0 & xs <= 1))
    p <- xs %*% fit$members[[1]]$layers[[1]]$V
    if (nl == "smooth_sqrt") {
      pos <- sqrt(1 + pmax(p, 0)) - 1
      neg <- sqrt(1 + pmax(-p, 0)) - 1
    } else {
      pos <- sqrt(pmax(p, 0))
      neg <- sqrt(pmax(-p, 0))
    }
    raw <- cbind(xs, pos, neg)
    want <- cbind(raw, raw^2, raw^3)
    got <- features(fit, dat$x[1:20, ])
    expect_equal(unname(got), unname(want), tolerance = 1e-12)
    expect_equal(ncol(got), fit$members[[1]]$p)
    expect_equal(colnames(got)[1:4], colnames(dat$x))
  }
  # standardised features have mean 0 and sd 1 on the training rows (constant ones are 0)
  fit <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "logistic", lambda = 1e-3)
  Z <- features(fit, dat$x)
  live <- fit$members[[1]]$scale > 0   # constant columns (e.g. a sign never taken) map to 0
  expect_gt(sum(live), ncol(Z) / 2)
  expect_equal(unname(colMeans(Z)), rep(0, ncol(Z)), tolerance = 1e-10)
  expect_equal(unname(apply(Z[, live], 2, sd)), rep(1, sum(live)), tolerance = 1e-10)
  expect_true(all(Z[, !live] == 0))
  # large feature matrices are held in single precision: the same statistics up to rounding
  old <- options(kernlearn.gem_single_cells = 0)
  on.exit(options(old))
  fs <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "logistic", lambda = 1e-3)
  expect_true(fs$members[[1]]$head$single)
  Zs <- features(fs, dat$x)
  expect_equal(unname(colMeans(Zs)), rep(0, ncol(Zs)), tolerance = 1e-6)
  expect_identical(fs$members[[1]]$scale > 0, live)
  expect_equal(unname(apply(Zs[, live], 2, sd)), rep(1, sum(live)), tolerance = 1e-6)
  expect_equal(fs$members[[1]]$center, fit$members[[1]]$center, tolerance = 1e-6)
})

test_that("the classifier is the penalised logistic regression on the features", {
  dat <- gem_toy(n = 400, d = 4)
  fit <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "logistic", lambda = 1e-2,
             control = gem_control(tol = 1e-9, maxit = 2000))
  Z <- features(fit, dat$x)
  ref <- kernlearn:::.logistic_fit(Z, dat$y, lambda = 1e-2, tol = 1e-9, maxit = 2000)
  expect_equal(unname(fit$members[[1]]$head$coefficients), unname(ref$coefficients),
               tolerance = 1e-5)
  P <- predict(fit, dat$x, type = "prob")
  expect_equal(unname(P), unname(kernlearn:::.logistic_predict(ref, Z)), tolerance = 1e-5)
  expect_equal(unname(rowSums(P)), rep(1, nrow(P)))
  # the single-precision head (fused kernel) reaches the same optimum up to float rounding
  old <- options(kernlearn.gem_single_cells = 0)
  on.exit(options(old))
  fs <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "logistic", lambda = 1e-2,
            control = gem_control(tol = 1e-6, maxit = 2000))
  expect_true(fs$members[[1]]$head$single)
  expect_equal(unname(predict(fs, dat$x, type = "prob")), unname(P), tolerance = 1e-3)
  expect_gt(mean(predict(fs, dat$x) == predict(fit, dat$x)), 0.99)
  cls <- predict(fit, dat$x)
  expect_identical(levels(cls), levels(dat$y))
  expect_identical(as.character(cls), colnames(P)[max.col(P, ties.method = "first")])
  dec <- predict(fit, dat$x, type = "decision")
  expect_equal(unname(P), unname(exp(dec) / rowSums(exp(dec))), tolerance = 1e-10)
})

# Euclidean projection onto the simplex by bisection on the shift (independent of the
# sort-based rule in the core).
simplex_bisect <- function(v) {
  lo <- min(v) - 1
  hi <- max(v)
  for (i in 1:200) {
    mid <- (lo + hi) / 2
    if (sum(pmax(v - mid, 0)) > 1) lo <- mid else hi <- mid
  }
  pmax(v - (lo + hi) / 2, 0)
}

# Calibrated least squares written out in R from its definition (see ?gem).
cls_reference <- function(F, y, lambda, steps) {
  n <- nrow(F)
  K <- nlevels(y)
  Y <- diag(K)[as.integer(y), ]
  F1 <- cbind(F, 1)
  A <- crossprod(F1) / 2 + lambda * sqrt(n) * diag(ncol(F1))
  W0 <- solve(A, crossprod(F1, Y))
  S <- F1 %*% W0
  link <- delta <- list()
  for (t in seq_len(steps)) {
    E <- cbind(S, S^2 / 2, S^3 / 6, S^4 / 24)
    C <- solve(crossprod(E) + sqrt(n) * diag(4 * K), crossprod(E, Y))
    P <- t(apply(E %*% C, 1, simplex_bisect))
    D <- solve(A, crossprod(F1, Y - P))
    S <- P + F1 %*% D
    link[[t]] <- C
    delta[[t]] <- D
  }
  list(W0 = W0, link = link, delta = delta, scores = S)
}

test_that("the calibrated least-squares head follows its definition", {
  dat <- gem_toy(n = 400, d = 4)
  # the default single-precision features agree with the definition to single precision
  fs <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "cls", lambda = 0.3,
            control = gem_control(maxit = 4, tol = 0))
  expect_true(fs$members[[1]]$head$single)
  rs <- cls_reference(features(fs, dat$x), dat$y, 0.3, 4)
  expect_equal(unname(predict(fs, dat$x, type = "decision")), unname(rs$scores), tolerance = 1e-5)
  # double-precision features: the algebra to 1e-8
  old <- options(kernlearn.gem_single_cells = Inf, kernlearn.gem_single_factor = Inf)
  on.exit(options(old))
  for (std in c(FALSE, TRUE)) {
    fit <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "cls", lambda = 0.3,
               control = gem_control(maxit = 4, tol = 0, standardize = std))
    h <- fit$members[[1]]$head
    expect_identical(h$type, "cls")
    expect_identical(h$iterations, 4L)
    Z <- features(fit, dat$x)
    ref <- cls_reference(Z, dat$y, 0.3, 4)
    expect_equal(unname(h$W0), unname(ref$W0), tolerance = 1e-8)
    for (t in 1:4) {
      expect_equal(unname(h$link[[t]]), unname(ref$link[[t]]), tolerance = 1e-8)
      expect_equal(unname(h$delta[[t]]), unname(ref$delta[[t]]), tolerance = 1e-8)
    }
    dec <- predict(fit, dat$x, type = "decision")
    expect_equal(unname(dec), unname(ref$scores), tolerance = 1e-8)
    P <- predict(fit, dat$x, type = "prob")
    expect_equal(unname(P), t(apply(ref$scores, 1, simplex_bisect)), tolerance = 1e-8)
    expect_true(all(P >= 0))
    expect_equal(unname(rowSums(P)), rep(1, nrow(P)))
    cl <- predict(fit, dat$x)
    expect_identical(as.character(cl), levels(dat$y)[max.col(P, ties.method = "first")])
  }
  # classes that differ only in covariance: near quadratic discriminant analysis (the Bayes
  # rule here), far better than the linear model with the same head
  cv <- covariance_toy()
  x <- cv$x
  y <- cv$y
  tr <- 1:1000
  err <- mean(predict(gem(x[tr, ], y[tr], top = 3, threshold = 1, head = "cls", lambda = 0.5),
                      x[-tr, ]) != y[-tr])
  lin <- gem(x[tr, ], y[tr], pairs = "none", degree = 1, head = "cls", lambda = 0.5)
  expect_gt(mean(predict(lin, x[-tr, ]) != y[-tr]), err + 0.2)
  skip_if_not_installed("MASS")
  q <- MASS::qda(x[tr, ], y[tr])
  expect_lt(err, mean(predict(q, x[-tr, ])$class != y[-tr]) + 0.05)
})

test_that("the calibrated least-squares head: single precision, threads and simplex", {
  dat <- gem_toy(n = 500, d = 5)
  args <- list(dat$x, dat$y, top = 3, threshold = 0, head = "cls", lambda = 0.5,
               control = gem_control(maxit = 5, tol = 0))
  f1 <- do.call(gem, c(args, threads = 1))
  f2 <- do.call(gem, c(args, threads = 2))
  expect_identical(f1$members[[1]]$head$delta, f2$members[[1]]$head$delta)
  old <- options(kernlearn.gem_single_cells = 0)
  on.exit(options(old))
  fs <- do.call(gem, args)
  expect_true(fs$members[[1]]$head$single)
  expect_equal(predict(fs, dat$x, type = "prob"), predict(f1, dat$x, type = "prob"),
               tolerance = 1e-3)
  expect_gt(mean(predict(fs, dat$x) == predict(f1, dat$x)), 0.99)
  # the vectorised kernels this processor runs are reported (the Gram matrix, products and
  # Cholesky factorisation they compute are checked by the core's C++ tests, tests/core)
  expect_true(kernlearn:::cpp_simd_level() %in% c("avx512", "avx2", "none"))
  # simplex projection against bisection, including ties and rows already on the simplex
  S <- rbind(matrix(rnorm(40 * 5, sd = 2), 40, 5), c(0.2, 0.2, 0.2, 0.2, 0.2),
             c(3, 3, -1, 0, 0), c(0, 0, 0, 0, 0))
  expect_equal(kernlearn:::cpp_simplex_project(S), t(apply(S, 1, simplex_bisect)),
               tolerance = 1e-10)
})

test_that("the calibrated least-squares head: ensembles, warnings and bad input", {
  dat <- gem_toy(n = 400, d = 4, k = 5)
  set.seed(4)
  fit <- gem(dat$x, dat$y, pairs = "hypercube", ensemble = 3, top = 2, threshold = 0,
             head = "cls")
  P <- predict(fit, dat$x, type = "prob")
  Pm <- Reduce(`+`, lapply(fit$members, function(m) {
    one <- fit
    one$members <- list(m)
    predict(one, dat$x, type = "prob")
  })) / 3
  expect_equal(P, Pm, tolerance = 1e-12)
  expect_equal(unname(rowSums(P)), rep(1, nrow(P)))
  expect_output(print(fit), "calibrated least squares")
  expect_warning(gem(dat$x, dat$y, top = 2, threshold = 0, head = "cls",
                     control = gem_control(maxit = 1, tol = 1e-12)),
                 "calibrated least squares took all 1 steps")
  expect_error(gem(dat$x, dat$y, head = "svm"), "'head' must be one of")
  expect_error(gem(dat$x, dat$y, head = "cls", lambda = -1), "lambda")
  # lambda = 0 with duplicated feature columns: a singular system, named as such
  expect_error(gem(unname(cbind(dat$x, dat$x)), dat$y, top = 2, threshold = 0, head = "cls",
                   lambda = 0, scale = FALSE), "not positive definite; use lambda > 0")
})

test_that("columns that are zero after scaling are left out of the fit and of new data", {
  dat <- gem_toy(n = 300, d = 4)
  x <- cbind(dat$x[, 1:2], z = 0, k = 3, dat$x[, 3:4])
  set.seed(1)
  f <- gem(x, dat$y, top = 2, threshold = 0, lambda = 1)
  expect_identical(f$active, c(1L, 2L, 5L, 6L))
  expect_identical(nrow(f$members[[1]]$layers[[1]]$V), 4L)
  # the same model as without those columns (the same random state), its relative ridge
  # (ridge x trace / columns) per column of the whole input
  expect_identical(f$params$ridge, 0.1)
  set.seed(1)
  g <- gem(x[, -(3:4)], dat$y, top = 2, threshold = 0, lambda = 1, ridge = 0.1 * 4 / 6)
  expect_null(g$active)
  expect_identical(predict(f, x, type = "prob"), predict(g, x[, -(3:4)], type = "prob"))
  expect_identical(fitted(f), predict(f, x))
  # new values in those columns change nothing (their scale is 0, as before)
  x2 <- x
  x2[, "k"] <- rnorm(300)
  expect_identical(predict(f, x2, type = "prob"), predict(f, x, type = "prob"))
  Z <- features(f, x)
  expect_identical(colnames(Z), colnames(features(g, x[, -(3:4)])))
  expect_false(any(grepl("^(z|k)", colnames(Z))))
  # the formula interface, and a logistic head
  d <- data.frame(x, y = dat$y)
  set.seed(1)
  h <- gem(y ~ ., data = d, top = 2, threshold = 0, head = "logistic", lambda = 1e-2)
  expect_identical(h$active, c(1L, 2L, 5L, 6L))
  expect_identical(fitted(h), predict(h, d))
})

test_that("gem separates classes that differ only in their second moments", {
  cv <- covariance_toy()
  x <- cv$x
  y <- cv$y
  tr <- 1:1000
  fit <- gem(x[tr, ], y[tr], top = 3, threshold = 1, head = "logistic", lambda = 1e-3)
  err <- mean(predict(fit, x[-tr, ]) != y[-tr])
  lin <- gem(x[tr, ], y[tr], pairs = "none", degree = 1, head = "logistic", lambda = 1e-3)
  err_lin <- mean(predict(lin, x[-tr, ]) != y[-tr])
  expect_gt(err_lin, err + 0.2)
  # close to quadratic discriminant analysis, the Bayes rule for these Gaussian classes
  skip_if_not_installed("MASS")
  q <- MASS::qda(x[tr, ], y[tr])
  err_qda <- mean(predict(q, x[-tr, ])$class != y[-tr])
  expect_lt(err, err_qda + 0.05)
})

test_that("hypercube pairs are O(k log k), cover every class and come in both orders", {
  set.seed(2)
  for (k in c(2L, 5L, 10L, 26L)) {
    pm <- kernlearn:::.gem_hypercube(k)
    expect_true(all(pm[, 1] != pm[, 2]))
    expect_setequal(unique(pm[, 1]), seq_len(k))
    expect_setequal(unique(pm[, 2]), seq_len(k))
    rev <- paste(pm[, 2], pm[, 1])
    expect_true(all(rev %in% paste(pm[, 1], pm[, 2])))
    expect_lte(nrow(pm), 2 * k * ceiling(log2(k)) + 2 * k)
  }
})

test_that("ensembles combine members by the geometric mean of probabilities", {
  dat <- gem_toy(n = 600, d = 5, k = 5)
  set.seed(4)
  fit <- gem(dat$x, dat$y, pairs = "hypercube", ensemble = 3, top = 2, threshold = 0,
             head = "logistic", lambda = 1e-2)
  expect_length(fit$members, 3L)
  nd <- dat$x[1:30, ]
  logp <- 0
  for (m in 1:3) {
    Z <- features(fit, nd, member = m)
    h <- fit$members[[m]]$head
    eta <- sweep(Z %*% h$coefficients, 2, h$intercept, `+`)
    logp <- logp + (eta - log(rowSums(exp(eta))))
  }
  G <- exp(logp / 3)
  G <- G / rowSums(G)
  expect_equal(unname(predict(fit, nd, type = "prob")), unname(G), tolerance = 1e-10)
  expect_error(gem(dat$x, dat$y, ensemble = 2), "hypercube")
})

test_that("deep GEM and GEM on random Fourier features fit and predict", {
  dat <- gem_toy(n = 500, d = 4)
  set.seed(7)
  deep <- gem(dat$x, dat$y, depth = 2, top = 3, threshold = 1, degree = 2, head = "logistic", lambda = 1e-2)
  L1 <- deep$members[[1]]$layers[[1]]
  L2 <- deep$members[[1]]$layers[[2]]
  expect_equal(nrow(L2$V), 1L + 2L * ncol(L1$V))
  expect_true(L1$ones)
  single <- gem(dat$x, dat$y, top = 3, threshold = 1, head = "logistic", lambda = 1e-2)
  expect_gt(mean(predict(deep, dat$x) == dat$y), mean(predict(single, dat$x) == dat$y))
  set.seed(8)
  rf <- gem(dat$x, dat$y, rff = list(dim = 40, gamma = 2), top = 3, threshold = 1, head = "logistic", lambda = 1e-2)
  expect_equal(dim(rf$members[[1]]$rff$W), c(4L, 40L))
  expect_equal(nrow(rf$members[[1]]$layers[[1]]$V), 40L)
  set.seed(8)
  rf2 <- gem(dat$x, dat$y, rff = list(dim = 40, gamma = 2), top = 3, threshold = 1, head = "logistic", lambda = 1e-2)
  expect_identical(predict(rf2, dat$x, type = "prob"), predict(rf, dat$x, type = "prob"))
  base <- gem(dat$x, dat$y, rff = list(dim = 40, gamma = 2), pairs = "none", degree = 1,
              head = "logistic", lambda = 1e-2)
  expect_equal(base$members[[1]]$p, 40L)
  # The map is applied a block of rows at a time inside the moments and the features; the same
  # fit on the explicitly mapped rows (an independent cos(x W + b)) agrees. (The map itself is
  # checked against cos(x W + b) by the core's C++ tests.)
  mem <- rf$members[[1]]
  xs <- kernlearn:::.kl_newdata(rf$spec, dat$x, "features()")
  Zr <- sqrt(2 / 40) * cos(sweep(xs %*% mem$rff$W, 2, mem$rff$b, "+"))
  L <- mem$layers[[1]]
  direct <- gem(Zr, dat$y, ridge = L$ridge, ridge_type = L$ridge_type, top = L$top,
                threshold = L$threshold, head = "logistic", lambda = 1e-2, scale = FALSE)
  Ld <- direct$members[[1]]$layers[[1]]
  expect_identical(Ld$pairs, L$pairs)
  expect_equal(unname(Ld$spectra), unname(L$spectra), tolerance = 1e-8)
  Fr <- kernlearn:::cpp_gem_features(Zr, L$V, 0L, L$degree, L$keep_input, L$ones, TRUE,
                                     mem$center, mem$scale, 2L)
  expect_equal(unname(features(rf, dat$x)), matrix(Fr, nrow(Fr)), tolerance = 1e-10)
  # The head's own features (double, and single precision for large matrices) used the map too.
  Fs <- kernlearn:::cpp_gem_features(Zr, L$V, 0L, L$degree, L$keep_input, L$ones, TRUE,
                                     NULL, NULL, 2L)
  expect_equal(mem$center, attr(Fs, "center"), tolerance = 1e-10)
  old_opt <- options(kernlearn.gem_single_cells = 1)
  on.exit(options(old_opt), add = TRUE)
  set.seed(8)
  rf1 <- gem(dat$x, dat$y, rff = list(dim = 40, gamma = 2), top = 3, threshold = 1, head = "logistic", lambda = 1e-2)
  expect_true(rf1$members[[1]]$head$single)
  expect_equal(rf1$members[[1]]$center, attr(Fs, "center"), tolerance = 1e-5)
  options(old_opt)
  expect_error(gem(dat$x, dat$y, first_layer = list(top = 3)), "depth = 2")
  expect_error(gem(dat$x, dat$y, depth = 2, first_layer = list(topp = 3)), "unknown setting")
})

test_that("formula interface, factors, saveRDS and thread counts", {
  df <- data.frame(a = rnorm(300), b = runif(300), f = factor(sample(c("p", "q", "r"), 300, TRUE)))
  df$cls <- factor(ifelse(df$a^2 + (df$f == "q") > 1, "out", "in"))
  fit <- gem(cls ~ ., data = df, top = 3, threshold = 1, head = "logistic", lambda = 1e-3)
  expect_s3_class(fit, "gem")
  p1 <- predict(fit, df, type = "prob")
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  expect_identical(predict(readRDS(f), df, type = "prob"), p1)
  set.seed(1)
  t1 <- gem(cls ~ ., data = df, top = 3, threshold = 1, threads = 1)
  set.seed(1)
  t2 <- gem(cls ~ ., data = df, top = 3, threshold = 1, threads = 2)
  expect_identical(t1$members[[1]]$layers, t2$members[[1]]$layers)
  expect_equal(predict(t1, df, type = "prob"), predict(t2, df, type = "prob"), tolerance = 1e-10)
  expect_output(print(fit), "GEM classifier")
  expect_output(print(summary(fit)), "numerator")
  expect_error(predict(fit, df[, c("a", "b")]), "lacks column")
  bad <- df
  bad$f <- factor(ifelse(bad$f == "p", "zz", as.character(bad$f)))
  expect_error(predict(fit, bad), "not seen in training")
  expect_error(predict(fit, df, type = "response"), "regression")
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(fit))
  img <- gem(matrix(runif(400 * 16), 400, 16), factor(rep(1:2, 200)), top = 2, threshold = 0)
  expect_silent(plot(img, type = "vectors", image_dim = c(4, 4), n = 2))
  expect_error(plot(img, type = "vectors", image_dim = c(3, 3)), "image_dim")
})

test_that("bad input gets clear errors", {
  dat <- gem_toy(n = 200, d = 4)
  expect_error(gem(dat$x, factor(rep("a", 200))), "only one class")
  num <- gem(dat$x, as.integer(dat$y), top = 1, threshold = 0)  # numeric labels are classes
  expect_identical(num$levels, c("1", "2", "3"))
  expect_error(gem(dat$x, seq_len(200)), "max_pairs")
  expect_error(gem(y ~ ., data = data.frame(dat$x, y = rnorm(200))), "factor of class labels")
  expect_error(gem(dat$x, rnorm(200)), "not a continuous response")
  expect_error(gem(dat$x, c(Inf, as.integer(dat$y)[-1])), "infinite value")
  few <- factor(c(rep("a", 197), rep("b", 3)))
  expect_error(gem(dat$x, few, ridge = 0), "class\\(es\\) 'b' have fewer")
  # the second layer's check runs in the core, on the first layer's representation
  set.seed(1)
  x3 <- matrix(rnorm(600 * 6), 600)
  y3 <- factor(c(rep("a", 300), rep("b", 280), rep("c", 20)))
  expect_error(gem(x3, y3, depth = 2, ridge = 0, ridge_type = "absolute", lambda = 1,
                   first_layer = list(top = 5)),
               "at least as many rows as features \\(61\\); class 'c' has fewer \\(20\\)")
  expect_warning(fb <- gem(dat$x, dat$y, threshold = 1e6),
                 "no eigenvalue reaches threshold = 1000000 .*fitted on the inputs alone")
  expect_identical(fb$params$pairs, "none")
  expect_error(gem(dat$x, dat$y, threshold = 1e6, pairs = "none", top = -1), "top")
  expect_error(gem(dat$x, dat$y, control = gem_control(max_pairs = 3)), "max_pairs")
  many <- factor(rep(letters[1:12], length.out = 200))
  expect_error(gem(dat$x, many, pairs = "hypercube", control = gem_control(max_pairs = 5)),
               "more than max_pairs = 5")
  two <- factor(dat$y == levels(dat$y)[1])
  expect_error(gem(dat$x, two, pairs = "hypercube", ensemble = 2), "at least 3 classes")
  expect_error(gem(dat$x, dat$y, pairs = "none", depth = 2), "without directions")
  old_opt <- options(kernlearn.max_memory = 1000)
  expect_error(gem(dat$x, dat$y, depth = 2), "the first layer's representation needs")
  expect_error(gem(dat$x, dat$y), "the feature matrix needs")
  options(old_opt)
  expect_error(gem(dat$x, dat$y, ridge = -1), "ridge")
  expect_error(gem(dat$x, dat$y, top = 0), "top")
  expect_error(gem(dat$x, dat$y, degree = 0), "degree")
  expect_error(gem(dat$x, dat$y, lambda = -1), "lambda")
  expect_error(gem(dat$x, dat$y, depth = 3), "depth")
  expect_error(gem(dat$x, dat$y, pairs = "some"), "pairs")
  expect_error(gem(dat$x, dat$y, pairs = matrix(c("a", "zz"), 1)), "not a class")
  expect_error(gem(dat$x, dat$y, pairs = matrix(c(1, 1), 1)), "itself")
  expect_error(gem(dat$x, dat$y, rff = list(dim = 10)), "rff")
  expect_error(gem(dat$x, dat$y, pairs = "none", keep_input = FALSE), "keep_input")
  expect_error(gem(dat$x, dat$y, nonlinearity = "tanh"), "nonlinearity")
  expect_error(gem(dat$x, dat$y, foo = 1), "foo")
  xn <- dat$x
  xn[3, 2] <- NA
  expect_error(gem(xn, dat$y), "missing or infinite")
  # a user-given pair matrix by level names
  fit <- gem(dat$x, dat$y, pairs = matrix(c("a", "b", "b", "c"), 2, byrow = TRUE),
             top = 2, threshold = 0)
  expect_equal(nrow(fit$members[[1]]$layers[[1]]$pairs), 2L)
})

test_that("kl_tune can tune gem", {
  dat <- gem_toy(n = 300, d = 4)
  set.seed(1)
  tn <- kl_tune(gem, dat$x, dat$y, folds = 3, grid = list(lambda = c(1e-3, 1e-1)),
                top = 2, threshold = 0)
  expect_true(tn$best$lambda %in% c(1e-3, 1e-1))
})

# The local walk of calibrated least squares replayed from the values it recorded: from the
# start, towards larger penalties first, values that improve neither the error rate (ties by
# the squared distance; counted only where the squared distance is within a share `flat` of
# its best) nor the squared distance count as misses; `patience` misses in a row end a
# direction, and the other direction is walked unless the first lowered the squared distance.
# (A value not recorded would be a singular system, which ends a direction too; the data below
# have none on the way.)
replay_cls_walk <- function(s, grid, start, patience, flat = 0.005) {
  idx <- match(signif(s$lambda, 10), signif(grid, 10))
  e <- l <- rep(NA_real_, length(grid))
  e[idx] <- s$error
  l[idx] <- s$loss
  asked <- start
  best <- best_err <- start
  for (dir in c(1L, -1L)) {
    i <- start + dir
    misses <- 0L
    lowered <- FALSE
    while (i >= 1L && i <= length(grid)) {
      asked <- c(asked, i)
      if (is.na(e[i])) break
      gain_err <- l[i] <= (1 + flat) * l[best] &&
        (e[i] < e[best_err] || (e[i] == e[best_err] && l[i] < l[best_err]))
      gain_loss <- l[i] < l[best]
      if (gain_err) best_err <- i
      if (gain_loss) {
        best <- i
        lowered <- TRUE
      }
      if (gain_err || gain_loss) {
        misses <- 0L
      } else {
        misses <- misses + 1L
        if (misses == patience) break
      }
      i <- i + dir
    }
    if (lowered) break
  }
  list(asked = sort(unique(asked)), recorded = sort(idx), best = grid[best])
}

test_that("the penalty walk stops after two misses, or one with many held-out rows", {
  grid <- 4^(-7:8)
  # all rows compared (no sample), so that the search of the model is the walk on all rows
  old <- options(kernlearn.gem_compare_rows = 26000)
  on.exit(options(old))
  for (n in c(600L, 26000L)) {
    dat <- gem_toy(n = n, d = 5, seed = 2)
    set.seed(2)
    fit <- gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE)
    s <- fit$members[[1]]$head$search
    nv <- attr(s, "validation_rows")
    expect_equal(nv >= 5000, n > 5000)
    expect_identical(attr(fit$params$ridge_search, "rows"), n)
    r <- replay_cls_walk(s, grid, start = match(1, grid), patience = if (nv >= 5000) 1L else 2L)
    expect_identical(r$asked, r$recorded)
    expect_equal(fit$params$lambda, r$best)
    expect_gte(nrow(s), 3L)
    if (n == 600L) {
      # here the error rate falls where the squared distance is well above its best; a walk
      # that followed it there would have asked for other values
      r0 <- replay_cls_walk(s, grid, start = match(1, grid), patience = 2L, flat = Inf)
      expect_false(identical(r0$asked, r$recorded))
    }
  }
})

test_that("without lambda, gem chooses the penalty on held-out rows and refits with it", {
  # double-precision features and search, so that the recomputations below match to rounding
  old <- options(kernlearn.gem_single_cells = Inf, kernlearn.gem_single_factor = Inf)
  on.exit(options(old))
  dat <- gem_toy(n = 600, d = 5)
  set.seed(11)
  fit <- gem(dat$x, dat$y, top = 3, threshold = 0, scale = FALSE)
  h <- fit$members[[1]]$head
  s <- h$search
  expect_identical(h$type, "cls")
  expect_true(fit$params$lambda_chosen)
  expect_identical(fit$params$lambda, h$lambda)
  expect_gte(nrow(s), 3L)
  # chosen by the Brier score of the held-out class probabilities
  expect_equal(h$lambda, s$lambda[which.min(s$loss)])
  val <- attr(s, "validation")
  expect_equal(attr(s, "validation_rows"), length(val))
  expect_equal(attr(s, "train_rows") + length(val), 600)
  # stratified: every class is held out in proportion (a fifth)
  expect_equal(as.vector(table(dat$y[val])), round(as.vector(table(dat$y)) / 5))
  expect_output(print(fit), "lambda .* \\(chosen from [0-9]+ values by the squared error of the probabilities on 120 held-out rows")
  # each validation error is that of calibrated least squares fitted on the other rows at that
  # value, recomputed here on the model's own (standardised) features
  Z <- features(fit, dat$x)
  tr <- setdiff(seq_len(600), val)
  for (i in seq_len(nrow(s))) {
    f <- gem(Z[tr, ], dat$y[tr], pairs = "none", degree = 1, scale = FALSE,
             control = gem_control(standardize = FALSE), head = "cls", lambda = s$lambda[i],
             fitted = FALSE)
    expect_equal(s$error[i], mean(predict(f, Z[val, ]) != dat$y[val]))
    P <- predict(f, Z[val, ], type = "prob")
    onehot <- outer(as.integer(dat$y[val]), seq_len(nlevels(dat$y)), "==") * 1
    expect_equal(s$loss[i], mean(rowSums((P - onehot)^2)), tolerance = 1e-10)
  }
  # a local search: the chosen value's neighbours on the grid were tried too
  grid <- 4^(-7:8)
  at <- match(h$lambda, grid)
  for (nb in c(at - 1L, at + 1L))
    if (nb >= 1L && nb <= length(grid)) expect_true(any(abs(s$lambda / grid[nb] - 1) < 1e-12))
  # the directions come from the training part: the moments of those rows alone give them
  set.seed(11)
  ref_dir <- gem(dat$x[tr, ], dat$y[tr], top = 3, threshold = 0, lambda = 1, scale = FALSE,
                 fitted = FALSE)
  expect_equal(fit$members[[1]]$layers[[1]]$V, ref_dir$members[[1]]$layers[[1]]$V,
               tolerance = 1e-8)
  # the final head is the fit at the chosen value on all rows
  ref <- gem(Z, dat$y, pairs = "none", degree = 1, scale = FALSE,
             control = gem_control(standardize = FALSE), head = "cls", lambda = h$lambda,
             fitted = FALSE)
  expect_equal(unname(predict(fit, dat$x, type = "decision")),
               unname(predict(ref, Z, type = "decision")), tolerance = 1e-7)
  # a given lambda: no search, directions from all rows
  set.seed(11)
  given <- gem(dat$x, dat$y, top = 3, threshold = 0, lambda = h$lambda, scale = FALSE)
  expect_null(given$members[[1]]$head$search)
  expect_false(given$params$lambda_chosen)
  # the logistic head: a warm-started path from the largest value down, then the full fit
  set.seed(11)
  lg <- gem(dat$x, dat$y, top = 3, threshold = 0, head = "logistic", scale = FALSE)
  sl <- lg$members[[1]]$head$search
  expect_true(all(diff(sl$lambda) < 0))
  expect_equal(lg$params$lambda, sl$lambda[order(sl$error, sl$loss)[1L]])
  Zl <- features(lg, dat$x)
  lref <- gem(Zl, dat$y, pairs = "none", degree = 1, scale = FALSE,
              control = gem_control(standardize = FALSE), head = "logistic",
              lambda = lg$params$lambda, fitted = FALSE)
  expect_equal(unname(predict(lg, dat$x, type = "prob")), unname(predict(lref, Zl, type = "prob")),
               tolerance = 1e-4)
})

test_that("a small overfitting-prone set gets a larger penalty than a large one", {
  make <- function(n, seed) {
    set.seed(seed)
    x <- matrix(rnorm(n * 30), n, 30)
    # the classes differ in the second moments of x1 and x2 (the sign of their product)
    y <- factor(ifelse(x[, 1] * x[, 2] + 0.5 * rnorm(n) > 0, "a", "b"))
    list(x = x, y = y)
  }
  small <- make(150, 1)
  large <- make(5000, 2)
  set.seed(3)
  fs <- gem(small$x, small$y, top = 5, threshold = 0, fitted = FALSE)
  set.seed(3)
  fl <- gem(large$x, large$y, top = 5, threshold = 0, fitted = FALSE)
  expect_gt(fs$params$lambda, fl$params$lambda)
  # too few rows to validate: the documented fallback, said in print()
  few <- gem(small$x[1:40, ], small$y[1:40], top = 2, threshold = 0, fitted = FALSE)
  expect_null(few$members[[1]]$head$search)
  expect_equal(few$params$lambda, 1)
  expect_output(print(few), "too few rows to validate")
})

test_that("an error the core raises about a class names the class by its level", {
  dat <- gem_toy(n = 300, d = 4)
  # a repeated column: every second-moment matrix is singular (a zero column would be left out
  # of the fit)
  x <- cbind(dat$x, dat$x[, 2])
  y <- factor(dat$y, labels = c("alpha", "beta", "gamma"))
  err <- tryCatch(gem(x, y, ridge = 0, top = 2, threshold = 0, scale = FALSE, lambda = 1),
                  error = function(e) conditionMessage(e))
  expect_match(err, "^gem\\(\\): the regularised second-moment matrix of class '(alpha|beta|gamma)' is singular")
})

test_that("the demo's GEM and DI fits converge without a warning", {
  skip_if_not_installed("mlbench")
  data("LetterRecognition", package = "mlbench", envir = environment())
  d <- LetterRecognition
  x <- as.matrix(d[, -1])
  mn <- apply(x[1:4000, ], 2, min)
  rg <- apply(x[1:4000, ], 2, max) - mn
  d[, -1] <- sweep(sweep(x, 2, mn), 2, rg, "/")
  train <- d[1:4000, ]
  set.seed(1)
  expect_warning(gf <- gem(lettr ~ ., data = train, top = 16, threshold = 1.5,
                           pairs = "hypercube"), NA)
  expect_true(gf$members[[1]]$head$converged)
  expect_true(gf$params$lambda_chosen)
  set.seed(1)
  expect_warning(dikl(lettr ~ ., data = train, dim = 300, gamma = 16, max_epochs = 40), NA)
})

test_that("fitted classes come from the fit's own scores and equal predict() on the training rows", {
  set.seed(3)
  n <- 1500
  x <- matrix(rnorm(n * 12), n, 12)
  y <- factor(sample(c("a", "b", "c", "d"), n, TRUE))
  x[, 1] <- x[, 1] + as.integer(y)
  x[, 2] <- x[, 2] * as.integer(y)
  check <- function(...) {
    set.seed(5)
    f <- gem(x, y, top = 4, threshold = 0, ...)
    expect_null(f$members[[1]]$scores)  # not kept in the model
    expect_identical(fitted(f), predict(f, x))
    f
  }
  # double-precision features (a size limit above the feature matrix's)
  old <- options(kernlearn.gem_single_cells = Inf, kernlearn.gem_single_factor = Inf)
  on.exit(options(old))
  dbl <- check()
  expect_false(dbl$members[[1]]$head$single)
  check(lambda = 2)
  # single-precision features, the default of the cls head: predictions are built in single
  # precision as in the fit, close to the double-precision replay of the same head
  options(kernlearn.gem_single_cells = NULL)
  sgl <- check()
  expect_true(sgl$members[[1]]$head$single)
  mem <- sgl$members[[1]]
  Z <- kernlearn:::.gem_member_features(mem, kernlearn:::.kl_newdata(sgl$spec, x, "t"), 1L, TRUE)
  S64 <- kernlearn:::cpp_cls_scores(Z, mem$head$W0, mem$head$link, mem$head$delta, 1L)
  expect_equal(unname(predict(sgl, x, type = "decision")), S64, tolerance = 1e-4)
  expect_gt(mean(as.integer(predict(sgl, x)) == max.col(S64, ties.method = "first")), 0.99)
  check(lambda = 2, threads = 1)
  check(pairs = "hypercube", ensemble = 3)
  check(rff = list(dim = 30, gamma = 0.1))
  check(depth = 2, degree = 2)
  d <- data.frame(x, y = y)
  f <- gem(y ~ ., data = d, top = 4, threshold = 0)
  expect_identical(fitted(f), predict(f, d))
})

test_that("the penalty search may factor in single precision and chooses as in double", {
  # the search factors systems of at least `kernlearn.gem_single_factor` columns in single
  # precision; forced here on a small problem, against the double-precision search
  dat <- gem_toy(n = 900, d = 6, seed = 5)
  fits <- lapply(c(Inf, 0), function(m) {
    old <- options(kernlearn.gem_single_factor = m, kernlearn.gem_single_cells = Inf)
    on.exit(options(old))
    set.seed(3)
    gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE)
  })
  s1 <- fits[[1]]$members[[1]]$head$search
  s2 <- fits[[2]]$members[[1]]$head$search
  expect_identical(s2$lambda, s1$lambda)
  expect_equal(s2$loss, s1$loss, tolerance = 1e-4)
  expect_equal(fits[[2]]$params$lambda, fits[[1]]$params$lambda)
  # the final fit is factored in double either way
  expect_identical(predict(fits[[2]], dat$x, type = "decision"),
                   predict(fits[[1]], dat$x, type = "decision"))
  # and the single-precision values do differ from the double ones (the path was taken)
  expect_false(identical(s2$loss, s1$loss))
  # nearly collinear columns, unscaled: at the smallest penalties the single-precision factor
  # fails its pivot check and those values are fitted in double precision (equal scores);
  # the others agree to single-precision rounding
  dat <- gem_toy(n = 4000, d = 4, seed = 7)
  set.seed(9)
  x <- unname(cbind(dat$x, dat$x[, 1:2] + 1e-4 * rnorm(8000)))
  srch <- lapply(c(Inf, 0), function(m) {
    old <- options(kernlearn.gem_single_factor = m, kernlearn.gem_single_cells = Inf)
    on.exit(options(old))
    set.seed(3)
    f <- gem(x, dat$y, top = 2, threshold = 0, scale = FALSE,
             control = gem_control(standardize = FALSE), fitted = FALSE)
    s <- f$members[[1]]$head$search
    s[order(s$lambda), ]
  })
  expect_identical(srch[[2]]$lambda, srch[[1]]$lambda)
  same <- srch[[2]]$loss == srch[[1]]$loss
  expect_true(same[1])                 # the smallest penalty tried: refactored in double
  expect_false(all(same))              # larger ones: single precision
  expect_equal(srch[[2]]$loss, srch[[1]]$loss, tolerance = 1e-6)
})

test_that("the final fit factors large systems in single precision, else in double", {
  dat <- gem_toy(n = 900, d = 6, seed = 5)
  fit_with <- function(m, ...) {
    old <- options(kernlearn.gem_single_final = m)
    on.exit(options(old))
    set.seed(3)
    gem(dat$x, dat$y, top = 3, threshold = 0, ...)
  }
  # small systems (the default threshold is 4096 columns): double precision
  dbl <- fit_with(NULL, lambda = 2)
  expect_false(dbl$members[[1]]$head$single_factor)
  expect_identical(predict(fit_with(Inf, lambda = 2), dat$x, type = "decision"),
                   predict(dbl, dat$x, type = "decision"))
  # forced on this one: the same model to single-precision rounding, its fitted values those of
  # its own steps
  sgl <- fit_with(0, lambda = 2)
  expect_true(sgl$members[[1]]$head$single_factor)
  expect_false(identical(predict(sgl, dat$x, type = "decision"),
                         predict(dbl, dat$x, type = "decision")))
  expect_equal(predict(sgl, dat$x, type = "decision"), predict(dbl, dat$x, type = "decision"),
               tolerance = 1e-4)
  expect_identical(fitted(sgl), predict(sgl, dat$x))
  expect_identical(sgl$members[[1]]$head$iterations, dbl$members[[1]]$head$iterations)
  # after a penalty search too
  s2 <- fit_with(0)
  s1 <- fit_with(Inf)
  expect_true(s2$members[[1]]$head$single_factor)
  expect_identical(s2$params$lambda, s1$params$lambda)
  expect_identical(s2$members[[1]]$head$search, s1$members[[1]]$head$search)
  expect_equal(predict(s2, dat$x, type = "prob"), predict(s1, dat$x, type = "prob"),
               tolerance = 1e-4)
  # nearly collinear columns, unscaled, no penalty to speak of: the single-precision factor
  # fails its pivot check and the fit falls back to double precision
  dat <- gem_toy(n = 4000, d = 4, seed = 7)
  set.seed(9)
  x <- unname(cbind(dat$x, dat$x[, 1:2] + 1e-4 * rnorm(8000)))
  col <- lapply(c(0, Inf), function(m) {
    old <- options(kernlearn.gem_single_final = m)
    on.exit(options(old))
    set.seed(3)
    gem(x, dat$y, top = 2, threshold = 0, scale = FALSE,
        control = gem_control(standardize = FALSE), lambda = 4^-6, fitted = FALSE)
  })
  expect_false(col[[1]]$members[[1]]$head$single_factor)
  expect_identical(predict(col[[1]], x, type = "decision"),
                   predict(col[[2]], x, type = "decision"))
})

# Evaluates expr with every internal fit of gem() (.gem_fit) recorded: list(value, fits), the
# fits named f1, f2, ... in the order they were made.
record_gem_fits <- function(expr) {
  rec <- new.env()
  ns <- asNamespace("kernlearn")
  suppressMessages(trace(".gem_fit", where = ns, print = FALSE,
                         exit = bquote(assign(sprintf("f%d", length(ls(.(rec))) + 1L),
                                              returnValue(), envir = .(rec)))))
  value <- tryCatch(expr, finally = suppressMessages(untrace(".gem_fit", where = ns)))
  list(value = value, fits = mget(sort(ls(rec)), envir = rec))
}

# Row i of a ridge comparison holds the chosen penalty and its held-out score of the fit with
# that ridge given (seed 5, threshold 0, `top` directions per pair); returns that fit.
expect_ridge_row <- function(rs, i, dat, top) {
  set.seed(5)
  g <- gem(dat$x, dat$y, top = top, threshold = 0, fitted = FALSE, ridge = rs$ridge[i])
  s <- g$members[[1]]$head$search
  expect_equal(rs$lambda[i], g$params$lambda)
  expect_equal(rs$loss[i], s$loss[s$lambda == g$params$lambda])
  g
}

test_that("without ridge and lambda, gem compares the ridges 0.1 and 0.5 on the held-out rows", {
  dat <- gem_toy(n = 600, d = 5, seed = 8)
  set.seed(5)
  f <- gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE)
  rs <- f$params$ridge_search
  expect_identical(rs$ridge, c(0.1, 0.5))
  expect_equal(f$params$ridge, rs$ridge[which.min(rs$loss)])
  expect_equal(f$members[[1]]$layers[[1]]$ridge, f$params$ridge)
  expect_output(print(f), "ridge 0\\.[15] chosen from 0\\.1, 0\\.5 by the held-out Brier score")
  # each candidate is the fit with that ridge given, from the same random state: the kept one
  # predicts identically, and each row holds the score of that fit's chosen penalty
  for (i in 1:2) {
    g <- expect_ridge_row(rs, i, dat, top = 3)
    expect_null(g$params$ridge_search)
    if (rs$ridge[i] == f$params$ridge)
      expect_identical(predict(g, dat$x, type = "prob"), predict(f, dat$x, type = "prob"))
  }
  # a given lambda: one fit, ridge 0.1
  set.seed(5)
  h <- gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE, lambda = 1)
  expect_null(h$params$ridge_search)
  expect_equal(h$params$ridge, 0.1)
  # only the kept fit's warnings are given
  w <- character()
  withCallingHandlers(gem(dat$x, dat$y, top = 3, threshold = 0,
                          control = gem_control(maxit = 1, tol = 1e-12)),
                      warning = function(cond) {
                        w <<- c(w, conditionMessage(cond))
                        invokeRestart("muffleWarning")
                      })
  expect_length(w, 1L)
  expect_match(w, "took all 1 steps")
})

test_that("with top above 5, the ridges are compared with at most 5 directions per pair", {
  dat <- gem_toy(n = 600, d = 10, seed = 8)
  # threshold 0: all 8 computed directions of every pair pass it, so the cap binds
  set.seed(5)
  f <- gem(dat$x, dat$y, top = 8, threshold = 0, fitted = FALSE)
  rs <- f$params$ridge_search
  expect_identical(attr(rs, "directions"), 5L)
  expect_gt(attr(rs, "refit_seconds"), 0)
  expect_equal(f$params$ridge, rs$ridge[which.min(rs$loss)])
  expect_output(print(f), "at most 5 directions per pair")
  L <- f$members[[1]]$layers[[1]]
  expect_null(L$keep_max)
  expect_identical(L$top, 8L)
  expect_identical(ncol(L$V), 8L * nrow(L$pairs))
  # each row is the fit keeping the leading 5 directions per pair (the dense eigensolver
  # gives the same leading vectors for top = 5), the kept model the full fit with its ridge
  for (i in 1:2) expect_ridge_row(rs, i, dat, top = 5)
  set.seed(5)
  g <- gem(dat$x, dat$y, top = 8, threshold = 0, fitted = FALSE, ridge = f$params$ridge)
  expect_identical(predict(g, dat$x, type = "prob"), predict(f, dat$x, type = "prob"))
  expect_identical(g$members[[1]]$layers[[1]]$V, L$V)
  # the capped comparison fits stop after their search (no head is fitted on all rows); the
  # third fit is the full one
  set.seed(5)
  rr <- record_gem_fits(gem(dat$x, dat$y, top = 8, threshold = 0, fitted = FALSE))
  f3 <- rr$value
  rec <- rr$fits
  expect_identical(names(rec), c("f1", "f2", "f3"))
  for (nm in c("f1", "f2")) {
    h <- rec[[nm]]$members[[1]]$head
    expect_true(h$search_only)
    expect_null(h$W0)
    expect_identical(rec[[nm]]$members[[1]]$layers[[1]]$keep_max, 5L)
  }
  expect_null(rec$f3$members[[1]]$head$search_only)
  expect_identical(predict(f3, dat$x, type = "prob"), predict(f, dat$x, type = "prob"))
  # a cap that keeps no direction out (at most 5 eigenvalues per pair reach 0.7; exactly 5 in
  # one pair with ridge 0.1): the comparison fit of the kept ridge is the model, with the
  # spectra of all 8 computed eigenvalues
  set.seed(5)
  f2 <- gem(dat$x, dat$y, top = 8, threshold = 0.7, fitted = FALSE)
  L2 <- f2$members[[1]]$layers[[1]]
  expect_true(all(tabulate(L2$pair_of, nrow(L2$pairs)) <= 5L))
  expect_identical(attr(f2$params$ridge_search, "refit_seconds"), 0)
  expect_null(L2$keep_max)
  expect_true(all(lengths(L2$spectra) == 8L))
  set.seed(5)
  g2 <- gem(dat$x, dat$y, top = 8, threshold = 0.7, fitted = FALSE, ridge = f2$params$ridge)
  expect_identical(predict(g2, dat$x, type = "prob"), predict(f2, dat$x, type = "prob"))
  expect_identical(g2$members[[1]]$layers[[1]]$spectra, L2$spectra)
})

test_that("with many rows, the ridges are compared on a stratified sample of them", {
  dat <- gem_toy(n = 600, d = 5, seed = 8)
  old <- options(kernlearn.gem_compare_rows = 200)
  on.exit(options(old))
  set.seed(5)
  rows <- kernlearn:::.gem_compare_sample(dat$y, 200)
  # every class in proportion
  expect_equal(as.vector(table(dat$y[rows])), round(as.vector(table(dat$y)) * 200 / 600))
  expect_false(anyDuplicated(rows) > 0)
  set.seed(5)
  f <- gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE, scale = FALSE)
  rs <- f$params$ridge_search
  expect_identical(attr(rs, "rows"), length(rows))
  expect_gt(attr(rs, "refit_seconds"), 0)
  expect_equal(f$params$ridge, rs$ridge[which.min(rs$loss)])
  expect_output(print(f), sprintf("on %d of the 600 rows", length(rows)))
  # each row is the search of the fit with that ridge on the sampled rows, from the random
  # state after the sample was drawn (inputs not rescaled: the sample keeps the scaling of all
  # rows)
  for (i in 1:2) {
    set.seed(5)
    rows <- kernlearn:::.gem_compare_sample(dat$y, 200)
    g <- gem(dat$x[rows, ], dat$y[rows], top = 3, threshold = 0, fitted = FALSE, scale = FALSE,
             ridge = rs$ridge[i])
    s <- g$members[[1]]$head$search
    expect_equal(rs$lambda[i], g$params$lambda)
    expect_equal(rs$loss[i], s$loss[s$lambda == g$params$lambda])
  }
  # with at most 16 times the sample's rows, the model takes the penalty the sample chose for
  # the kept ridge (4 here): the fit on all rows with that ridge, from the seed the call started
  # with, its directions learned without the rows a search would hold out, its head fitted on
  # all rows with that penalty; its search is the sample's, and print() says so
  kept <- match(f$params$ridge, rs$ridge)
  sf <- f$members[[1]]$head$search
  expect_identical(f$params$lambda, rs$lambda[kept])
  expect_identical(f$members[[1]]$head$lambda, rs$lambda[kept])
  expect_true(f$params$lambda_chosen)
  expect_false(rs$lambda[kept] == 1)
  expect_identical(attr(sf, "sample_rows"), length(rows))
  expect_equal(sf$loss[sf$lambda == f$params$lambda], rs$loss[kept])
  expect_true(all(attr(sf, "validation") %in% rows))
  expect_equal(length(attr(sf, "validation")), attr(sf, "validation_rows"))
  expect_output(print(f), sprintf("chosen from %d values by .* held-out rows of a sample of %d rows",
                                  nrow(sf), length(rows)))
  # the directions are those of the search on all rows with that ridge given (the same rows
  # held out, the same seeds), which starts at 1 (and here, its 120 held-out rows against the
  # sample's 40, chooses 1)
  set.seed(5)
  g <- gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE, scale = FALSE,
           ridge = f$params$ridge)
  expect_identical(g$members[[1]]$head$search$lambda[1], 1)
  expect_identical(f$members[[1]]$layers[[1]]$V, g$members[[1]]$layers[[1]]$V)
  # and the head is calibrated least squares on all rows of the model's features with the
  # sample's penalty
  Z <- features(f, dat$x)
  h <- gem(Z, dat$y, pairs = "none", degree = 1, scale = FALSE,
           control = gem_control(standardize = FALSE), head = "cls",
           lambda = f$params$lambda, fitted = FALSE)
  expect_equal(predict(h, Z, type = "prob"), predict(f, dat$x, type = "prob"),
               tolerance = 1e-5, ignore_attr = TRUE)
  # with more than 16 times the sample's rows, the search on all rows starts at the sample's
  # choice instead; the values both searches tried scored the same
  options(kernlearn.gem_compare_rows = 100)
  big <- gem_toy(n = 2000, d = 5, seed = 8)
  set.seed(5)
  f <- gem(big$x, big$y, top = 3, threshold = 0, fitted = FALSE, scale = FALSE)
  rs <- f$params$ridge_search
  expect_lt(attr(rs, "rows") * 16, 2000)
  kept <- match(f$params$ridge, rs$ridge)
  sf <- f$members[[1]]$head$search
  expect_null(attr(sf, "sample_rows"))
  expect_identical(sf$lambda[1], rs$lambda[kept])
  set.seed(5)
  g <- gem(big$x, big$y, top = 3, threshold = 0, fitted = FALSE, scale = FALSE,
           ridge = f$params$ridge)
  sg <- g$members[[1]]$head$search
  both <- intersect(sf$lambda, sg$lambda)
  expect_gt(length(both), 0L)
  expect_identical(sf$error[match(both, sf$lambda)], sg$error[match(both, sg$lambda)])
  expect_identical(sf$loss[match(both, sf$lambda)], sg$loss[match(both, sg$lambda)])
  expect_identical(f$params$lambda, sf$lambda[which.min(sf$loss)])
  options(kernlearn.gem_compare_rows = 200)
  # the first value tried: the one asked for when the grid has it, else 1, else the first
  grid <- 4^(-7:8)
  expect_identical(kernlearn:::.gem_search_start(grid, 16), 9L)
  expect_identical(kernlearn:::.gem_search_start(grid, 3), 7L)
  expect_identical(kernlearn:::.gem_search_start(c(0.5, 2), 3), 0L)
  # the comparison fits stop after their penalty search
  set.seed(5)
  rec <- record_gem_fits(gem(dat$x, dat$y, top = 3, threshold = 0, fitted = FALSE,
                             scale = FALSE))$fits
  expect_identical(names(rec), c("f1", "f2", "f3"))
  for (nm in c("f1", "f2")) expect_true(rec[[nm]]$members[[1]]$head$search_only)
  expect_null(rec$f3$members[[1]]$head$search_only)
  # with no more rows than the option, all rows are compared
  options(kernlearn.gem_compare_rows = 600)
  set.seed(5)
  expect_identical(attr(gem(dat$x, dat$y, top = 3, threshold = 0,
                            fitted = FALSE)$params$ridge_search, "rows"), 600L)
  options(kernlearn.gem_compare_rows = 5)
  expect_error(gem(dat$x, dat$y, top = 3, threshold = 0),
               "option 'kernlearn.gem_compare_rows' must be a number of at least 100")
})

test_that("when no class has two rows, nothing is held out and the default penalty is used", {
  set.seed(2)
  x <- matrix(rnorm(60 * 3), 60, 3)
  y <- factor(paste0("k", 1:60))
  expect_null(kernlearn:::.kl_validation_rows(y))
  fit <- gem(x, y, top = 1, threshold = 0, pairs = "hypercube")
  expect_null(fit$members[[1]]$head$search)
  expect_null(fit$params$ridge_search)
  expect_equal(fit$params$lambda, 1)
  expect_output(print(fit), "too few rows to validate")
})

test_that("gem_control() holds the tuning constants, and gem() names those it moved there", {
  ctl <- gem_control()
  expect_s3_class(ctl, "gem_control")
  expect_null(ctl$maxit)
  expect_null(ctl$tol)
  expect_true(ctl$standardize)
  expect_identical(ctl$eigen_method, "auto")
  expect_equal(ctl$eigen_tol, 1e-8)
  expect_equal(ctl$max_pairs, 1000)
  expect_error(gem_control(maxit = -1), "gem_control\\(\\): 'maxit' must be a whole number")
  expect_error(gem_control(maxit = 2.5), "'maxit'")
  expect_error(gem_control(tol = -1), "gem_control\\(\\): 'tol' must be")
  expect_error(gem_control(standardize = NA), "'standardize' must be TRUE or FALSE")
  expect_error(gem_control(eigen_method = "qr"), "'eigen_method' must be one of")
  expect_error(gem_control(eigen_tol = 0), "'eigen_tol' must be a number > 0")
  expect_error(gem_control(max_pairs = 0), "'max_pairs'")
  dat <- gem_toy(n = 200, d = 4)
  for (a in c("maxit", "tol", "standardize", "eigen_method", "max_pairs"))
    expect_error(do.call(gem, c(list(dat$x, dat$y), stats::setNames(list(1), a))),
                 sprintf("^gem\\(\\): '%s' is now set through control = gem_control\\(%s = \\.\\.\\.\\)$",
                         a, a), info = a)
  expect_error(gem(Species ~ ., data = iris, tol = 0), "control = gem_control\\(tol = \\.\\.\\.\\)")
  expect_error(gem(dat$x, dat$y, control = list(maxit = 5)),
               "'control' must come from gem_control\\(\\)")
  # the constants reach the fit
  f <- gem(dat$x, dat$y, top = 2, threshold = 0, head = "cls", lambda = 1,
           control = gem_control(maxit = 3, tol = 0, standardize = FALSE))
  expect_identical(f$members[[1]]$head$iterations, 3L)
  expect_null(f$members[[1]]$center)
  expect_false(f$params$standardize)
  d <- suppressWarnings(gem(dat$x, dat$y, top = 2, threshold = 0, head = "logistic",
                            lambda = 1e-3, control = gem_control(eigen_method = "dense")))
  expect_true(all(d$members[[1]]$layers[[1]]$dense))
})

test_that("calibrated least squares with collinear features (a one-hot group) and a small penalty fits as in double precision", {
  # the one-hot columns sum to the intercept, and each repeats its own powers: the
  # single-precision block sums of the Gram matrix can leave the system indefinite at a small
  # lambda; the fit then sums it again in double precision (head$exact_gram)
  set.seed(1)
  n <- 4000
  g <- sample(10, n, TRUE)
  xc <- matrix(rnorm(n * 4), n)
  x <- cbind(xc, outer(g, 1:10, "==") * 1)
  y <- factor(ifelse(xc[, 1] + g / 5 + rnorm(n, sd = 0.5) > 1.5, "a",
                     ifelse(xc[, 2] > 0, "b", "c")))
  for (lam in c(1e-2, 1e-4, 1e-6)) {
    set.seed(2)
    f <- gem(x, y, lambda = lam, ridge = 0.1, top = 3)
    expect_true(is.logical(f$members[[1]]$head$exact_gram))
    old <- options(kernlearn.gem_single_cells = Inf)
    set.seed(2)
    fd <- gem(x, y, lambda = lam, ridge = 0.1, top = 3)
    options(old)
    pf <- predict(f, x, type = "prob")
    pd <- predict(fd, x, type = "prob")
    expect_lt(max(abs(pf - pd)), 0.02, label = sprintf("lambda %g", lam))
    expect_gt(mean(predict(f, x) == predict(fd, x)), 0.99)
  }
  # a penalty search down to small values
  set.seed(3)
  s <- gem(x, y, ridge = 0.1, top = 3)
  expect_true(is.finite(s$params$lambda))
  expect_lt(mean(predict(s, x) != y), 0.2)
})

test_that("a ridge whose fit finds no direction is left out of the ridge comparison", {
  # two-dimensional XOR on [0, 1]^2: with the relative ridge 0.5 the largest eigenvalue is
  # below 1 (about 0.8), with 0.1 above 2 (about 2.6)
  set.seed(1)
  x <- matrix(runif(400), 200)
  d <- data.frame(x, y = factor(ifelse((x[, 1] > 0.5) != (x[, 2] > 0.5), "a", "b")))
  f <- gem(y ~ ., data = d)
  rs <- f$params$ridge_search
  expect_equal(f$params$ridge, 0.1)
  expect_true(is.na(rs$failed[1L]))
  expect_match(rs$failed[2L], "no eigenvalue reaches threshold = 2")
  expect_true(is.na(rs$loss[2L]))
  expect_gt(mean(predict(f, d) == d$y), 0.9)
  out <- capture.output(print(f))
  expect_true(any(grepl("ridge 0.5 not fitted: no eigenvalue reaches threshold", out)))
  # the same model as the ridge given
  set.seed(2)
  g1 <- gem(y ~ ., data = d, fitted = FALSE)
  set.seed(2)
  g2 <- gem(y ~ ., data = d, ridge = 0.1, fitted = FALSE)
  expect_equal(predict(g1, d, type = "prob"), predict(g2, d, type = "prob"))
  # neither ridge reaches the threshold: the classifier works on the inputs alone, from the
  # same random state as a fit with pairs = "none", and says why (the smaller ridge's
  # largest eigenvalue)
  set.seed(3)
  expect_warning(h <- gem(y ~ ., data = d, threshold = 50, fitted = FALSE),
                 "no eigenvalue reaches threshold = 50 \\(the largest is 2\\.[0-9]+\\); the classifier was fitted on the inputs alone")
  expect_match(h$fallback, "^no eigenvalue reaches threshold = 50")
  set.seed(3)
  h2 <- gem(y ~ ., data = d, pairs = "none", fitted = FALSE)
  expect_equal(predict(h, d, type = "prob"), predict(h2, d, type = "prob"))
  out <- capture.output(print(h))
  expect_true(any(grepl("the classifier works on the inputs alone", out)))
  # a deep model falls back the same way
  expect_warning(gem(y ~ ., data = d, depth = 2, threshold = 50, fitted = FALSE),
                 "inputs alone")
})

test_that("the default threshold's fallback to the inputs alone is printed, not warned", {
  # class b has 1.2 times class a's spread in every direction: the generalized eigenvalues
  # (variance ratios near 1.44 before the ridge) stay below the default threshold 2
  set.seed(11)
  n <- 400
  x <- rbind(matrix(stats::rnorm(n * 3), n), matrix(1.2 * stats::rnorm(n * 3), n))
  y <- factor(rep(c("a", "b"), each = n))
  set.seed(4)
  expect_silent(f <- gem(x, y, fitted = FALSE))
  expect_match(f$fallback, "^no eigenvalue reaches threshold = 2 \\(the largest is [0-9.]+\\)")
  expect_output(print(f), "the classifier works on the inputs alone")
  set.seed(4)
  f2 <- gem(x, y, pairs = "none", fitted = FALSE)
  expect_equal(predict(f, x, type = "prob"), predict(f2, x, type = "prob"))
  # the same threshold given in the call warns
  set.seed(4)
  expect_warning(f3 <- gem(x, y, threshold = 2, fitted = FALSE), "inputs alone")
  expect_equal(predict(f3, x, type = "prob"), predict(f, x, type = "prob"))
  # and the formula interface behaves alike
  dd <- data.frame(x, y = y)
  set.seed(4)
  expect_silent(gem(y ~ ., data = dd, fitted = FALSE))
  set.seed(4)
  expect_warning(gem(y ~ ., data = dd, threshold = 2, fitted = FALSE), "inputs alone")
})
