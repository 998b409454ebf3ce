# The hierarchical Gaussian and tessellated kernels: values against independent formulas and
# quadrature, and their use in the kernel machines. Their derivative contractions (against
# finite differences and the tessellated identities) are checked by the core's C++ tests
# (tests/core).

# An independent R evaluation of a hierarchical kernel between two points.
hgk_r <- function(k, x, z) {
  node <- function(k) {
    if (is.null(k$nodes)) return(exp(-k$gamma * sum(k$weights^2 * (x - z)[seq_along(k$weights)]^2)))
    s <- 0
    for (j in seq_along(k$nodes)) {
      nd <- k$nodes[[j]]
      Kj <- if (inherits(nd, "kl_kernel")) node(nd) else exp(-sum(k$weights[[j]]^2 * (x[nd] - z[nd])^2))
      s <- s + k$node_weights[j]^2 * (1 - Kj)
    }
    exp(-k$gamma * s)
  }
  node(k)
}

set.seed(11)
x <- matrix(runif(30 * 4), 30, 4)
z <- matrix(runif(17 * 4), 17, 4)
k2 <- hierarchical_gaussian_kernel(weights = list(c(1.5, 0.7), c(0.4, 2, 1), c(1.1)),
                                   nodes = list(1:2, 2:4, 3), node_weights = c(0.8, 1.3, 0.5),
                                   gamma = 1.7)
k3 <- hierarchical_gaussian_kernel(weights = list(NULL, c(0.9, 1.2), NULL),
                                   nodes = list(k2, c(4, 1), hierarchical_gaussian_kernel(c(1, 0.5, 2), gamma = 0.6)),
                                   node_weights = c(1.2, 0.6, 0.9), gamma = 0.8)

test_that("depth 1 with equal weights is the Gaussian kernel", {
  expect_identical(kernel_matrix(hierarchical_gaussian_kernel(rep(1, 4), gamma = 0.7), x, z),
                   kernel_matrix(gaussian_kernel(0.7), x, z))
  w <- c(0.5, 1, 2, 0)
  K <- kernel_matrix(hierarchical_gaussian_kernel(w, gamma = 1.3), x, z)
  ref <- outer(seq_len(nrow(x)), seq_len(nrow(z)),
               Vectorize(function(i, j) exp(-1.3 * sum(w^2 * (x[i, ] - z[j, ])^2))))
  expect_equal(K, ref, tolerance = 1e-12)
})

test_that("depth 2 with every node on all coordinates has the closed form", {
  w <- c(0.5, 1.5, 1); u <- c(1, 0.3, 2); g <- 0.9
  k <- hierarchical_gaussian_kernel(weights = lapply(w, rep, 4), nodes = rep(list(1:4), 3),
                                    node_weights = u, gamma = g)
  D <- outer(rowSums(x^2), rowSums(z^2), "+") - 2 * x %*% t(z)
  ref <- exp(-g * Reduce(`+`, lapply(1:3, function(j) u[j]^2 * (1 - exp(-w[j]^2 * D)))))
  expect_equal(kernel_matrix(k, x, z), ref, tolerance = 1e-12)
})

test_that("depth 2 and 3 values agree with an independent evaluation, and are valid kernels", {
  for (k in list(k2, k3)) {
    K <- kernel_matrix(k, x, z)
    ref <- outer(seq_len(nrow(x)), seq_len(nrow(z)),
                 Vectorize(function(i, j) hgk_r(k, x[i, ], z[j, ])))
    expect_equal(K, ref, tolerance = 1e-12)
    Kxx <- kernel_matrix(k, x)
    expect_equal(Kxx, t(Kxx), tolerance = 1e-15)
    expect_equal(diag(Kxx), rep(1, nrow(x)))
    expect_gt(min(eigen(Kxx, symmetric = TRUE, only.values = TRUE)$values), -1e-10)
  }
})

test_that("the hierarchical kernel is the same for 1 and 2 threads over several tiles", {
  xb <- matrix(runif(700 * 4), 700, 4)
  zb <- matrix(runif(600 * 4), 600, 4)
  expect_identical(kernel_matrix(k3, xb, zb, threads = 1), kernel_matrix(k3, xb, zb, threads = 2))
})

# ----------------------------------------------------------------------------------------------
# Tessellated kernel

# Monomials of degree <= q in the package's order.
monos <- function(v, q) {
  out <- 1
  prev <- list(integer())
  for (k in seq_len(q)) {
    cur <- list()
    for (t in prev) {
      from <- if (length(t)) t[length(t)] else 1L
      for (i in from:length(v)) cur[[length(cur) + 1L]] <- c(t, i)
    }
    out <- c(out, vapply(cur, function(t) prod(v[t]), numeric(1)))
    prev <- cur
  }
  out
}

# k(x, y) by integrating N(z, x)' P N(z, y) over the box: the integrand is constant on the cells
# cut by the points' coordinates, so the midpoint of each cell integrates it exactly.
tkl_quad <- function(P, q, a, b, x, y) {
  xc <- pmin(pmax(x, a), b); yc <- pmin(pmax(y, a), b)
  zx <- monos(xc, q); zy <- monos(yc, q)
  d <- length(x)
  cuts <- lapply(seq_len(d), function(i) sort(unique(c(a[i], b[i], xc[i], yc[i]))))
  mids <- lapply(cuts, function(cc) (head(cc, -1) + tail(cc, -1)) / 2)
  lens <- lapply(cuts, diff)
  grid <- as.matrix(expand.grid(mids)); vol <- apply(as.matrix(expand.grid(lens)), 1, prod)
  tot <- 0
  for (r in seq_len(nrow(grid))) {
    zz <- grid[r, ]
    # indicators on the raw points (outside the box they equal those of the clamped points)
    ix <- as.numeric(all(zz >= x)); iy <- as.numeric(all(zz >= y))
    Nx <- c(zx * ix, zx * (1 - ix)); Ny <- c(zy * iy, zy * (1 - iy))
    tot <- tot + vol[r] * drop(t(Nx) %*% P %*% Ny)
  }
  tot
}

rand_psd <- function(m) crossprod(matrix(rnorm(m * m), m))

test_that("the tessellated closed form matches quadrature of its integral, inside and outside the box", {
  a <- c(-0.1, -0.2); b <- c(1.1, 1.3)
  pts <- rbind(c(0.2, 0.7), c(0.9, 0.1), c(-0.5, 0.4), c(0.3, 1.8), c(1.4, -0.6), c(0.5, 0.5))
  for (q in 0:1) {
    h <- choose(2 + q, q)
    P <- rand_psd(2 * h)
    k <- tessellated_kernel(P, degree = q, lower = a, upper = b)
    K <- kernel_matrix(k, pts)
    ref <- outer(seq_len(nrow(pts)), seq_len(nrow(pts)),
                 Vectorize(function(i, j) tkl_quad(P, q, a, b, pts[i, ], pts[j, ])))
    expect_equal(K, ref, tolerance = 1e-10)
  }
})

test_that("the tessellated kernel is positive semidefinite, linear in P, and thread-independent", {
  set.seed(3)
  xt <- matrix(runif(60 * 3, -0.2, 1.2), 60, 3)
  for (q in 0:2) {
    h <- choose(3 + q, q)
    P1 <- rand_psd(2 * h); P2 <- rand_psd(2 * h)
    K1 <- kernel_matrix(tessellated_kernel(P1, q), xt)
    K2 <- kernel_matrix(tessellated_kernel(P2, q), xt)
    expect_gt(min(eigen(K1, symmetric = TRUE, only.values = TRUE)$values), -1e-8 * max(abs(K1)))
    expect_equal(kernel_matrix(tessellated_kernel(0.3 * P1 + 2 * P2, q), xt), 0.3 * K1 + 2 * K2,
                 tolerance = 1e-12)
  }
  xb <- matrix(runif(700 * 2), 700, 2)
  kt <- tessellated_kernel(rand_psd(12), 2)
  expect_identical(kernel_matrix(kt, xb, threads = 1), kernel_matrix(kt, xb, threads = 2))
})

# ----------------------------------------------------------------------------------------------
# In the kernel machines

test_that("kernel_svm with the depth-1 kernel of weights 1 is the Gaussian SVM", {
  a <- kernel_svm(Species ~ ., data = iris, kernel = hierarchical_gaussian_kernel(rep(1, 4)),
                  gamma = 3, cost = 2)
  b <- kernel_svm(Species ~ ., data = iris, gamma = 3, cost = 2)
  expect_identical(a$sv_index, b$sv_index)
  expect_equal(a$coefs, b$coefs, tolerance = 1e-12)
  expect_equal(predict(a, iris, type = "decision"), predict(b, iris, type = "decision"),
               tolerance = 1e-12)
})

test_that("kernel_svm with a learned kernel equals the precomputed SVM on its kernel matrix", {
  x01 <- apply(as.matrix(iris[, 1:4]), 2, function(v) (v - min(v)) / diff(range(v)))
  for (k in list(tessellated_kernel(rand_psd(10), 1), hierarchical_gaussian_kernel(
    weights = list(c(1, 2), c(2, 1)), nodes = list(1:2, 3:4), node_weights = c(1.5, 1)))) {
    # a tight tolerance, so that two solves of the same problem agree closely
    fit <- kernel_svm(x01, iris$Species, kernel = k, cost = 5, tol = 1e-8)
    K <- kernel_matrix(k, x01)
    pre <- kernel_svm(K, iris$Species, kernel = "precomputed", cost = 5, tol = 1e-8)
    expect_identical(fit$sv_index, pre$sv_index)
    expect_equal(fit$coefs, pre$coefs, tolerance = 1e-5)  # kernel rows are cached as floats
    expect_equal(predict(fit, x01, type = "decision"), predict(pre, K, type = "decision"),
                 tolerance = 1e-6)
  }
  # regression too
  kt <- tessellated_kernel(diag(6), 1)
  xr <- cbind(mtcars$wt, mtcars$hp); xr <- apply(xr, 2, function(v) (v - min(v)) / diff(range(v)))
  reg <- kernel_svm(xr, mtcars$mpg, kernel = kt, cost = 10, epsilon = 0.5, tol = 1e-8)
  pre <- kernel_svm(kernel_matrix(kt, xr), mtcars$mpg, kernel = "precomputed", cost = 10,
                    epsilon = 0.5, tol = 1e-8)
  expect_equal(predict(reg, xr), predict(pre, kernel_matrix(kt, xr)), tolerance = 1e-6)
})

test_that("learned kernels work in kernel_ridge, kl_tune and saveRDS", {
  kt <- tessellated_kernel(diag(10), 1)
  fit <- kernel_ridge(Species ~ ., data = iris, kernel = kt, lambda = 0.1)
  x01 <- apply(as.matrix(iris[, 1:4]), 2, function(v) (v - min(v)) / diff(range(v)))
  K <- kernel_matrix(kt, x01)
  expect_equal(predict(fit, iris, type = "decision"),
               K %*% fit$alpha + matrix(fit$bias, nrow(K), 3, byrow = TRUE),
               tolerance = 1e-8, ignore_attr = TRUE)
  kh <- hierarchical_gaussian_kernel(weights = list(c(1, 1), c(1, 1)), nodes = list(1:2, 3:4),
                                     node_weights = c(1, 1))
  sv <- kernel_svm(Species ~ ., data = iris, kernel = kh, gamma = 2, probability = TRUE)
  f <- tempfile(fileext = ".rds")
  saveRDS(list(fit, sv), f)
  back <- readRDS(f)
  expect_identical(predict(back[[1]], iris, type = "decision"), predict(fit, iris, type = "decision"))
  expect_identical(predict(back[[2]], iris, type = "prob"), predict(sv, iris, type = "prob"))
  set.seed(1)
  tn <- kl_tune(kernel_svm, Species ~ ., data = iris, folds = 3,
                grid = list(cost = c(1, 10), kernel = list(kh, kt)))
  expect_equal(nrow(tn$results), 4L)
  expect_true(all(is.finite(tn$results$error)))
})

test_that("learned kernels are refused where they cannot apply", {
  expect_error(kernel_matrix(hierarchical_gaussian_kernel(c(1, 1)), x), "2 weights but the data have 4")
  expect_error(kernel_matrix(k2, x[, 1:3]), "uses column 4 but the data have 3")
  expect_error(hierarchical_gaussian_kernel(c(1, NA)), "finite")
  expect_error(hierarchical_gaussian_kernel(list(1, 2), nodes = list(1, 2), node_weights = 1),
               "'node_weights' has length 1 but there are 2 nodes")
  expect_error(hierarchical_gaussian_kernel(list(1, 2), nodes = list(1, k2), node_weights = c(1, 1)),
               "weights\\[\\[2\\]\\] must be NULL")
  expect_error(hierarchical_gaussian_kernel(list(c(1, 2)), nodes = list(1), node_weights = 1),
               "node 1 sees 1 column")
  expect_error(hierarchical_gaussian_kernel(c(1, 1), gamma = -1), "gamma")
  expect_error(tessellated_kernel(matrix(c(1, 2, 2, 1), 2), 0), "positive semidefinite")
  expect_error(tessellated_kernel(matrix(c(1, 0, 1, 1), 2), 0), "symmetric")
  expect_error(tessellated_kernel(diag(8), 2), "no number of columns has 4 monomials")
  expect_error(tessellated_kernel(diag(2), 0, lower = 1, upper = 0), "below 'upper'")
  expect_error(kernel_matrix(tessellated_kernel(diag(6), 1), x), "for 2 columns but the data have 4")
  expect_error(kernel_svm(Species ~ ., data = iris, kernel = tessellated_kernel(diag(10)), gamma = 1),
               "'gamma' applies to")
})
