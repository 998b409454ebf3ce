sqdist <- function(a, b) {
  outer(rowSums(a^2), rowSums(b^2), "+") - 2 * a %*% t(b)
}

test_that("kernel matrices match direct R computations", {
  set.seed(1)
  x <- matrix(rnorm(60 * 7), 60)
  z <- matrix(rnorm(25 * 7), 25)
  d2 <- pmax(sqdist(x, z), 0)
  expect_equal(kernel_matrix(gaussian_kernel(0.3), x, z), exp(-0.3 * d2), tolerance = 1e-12)
  expect_equal(kernel_matrix(laplacian_kernel(0.7), x, z), exp(-0.7 * sqrt(d2)),
               tolerance = 1e-7)
  expect_equal(kernel_matrix(linear_kernel(), x, z), x %*% t(z), tolerance = 1e-12)
  expect_equal(kernel_matrix(polynomial_kernel(3, scale = 0.5, offset = 2), x, z),
               (0.5 * x %*% t(z) + 2)^3, tolerance = 1e-12)
})

test_that("kernel matrices do not depend on the thread count", {
  set.seed(3)
  x <- matrix(rnorm(700 * 9), 700)
  K1 <- kernel_matrix(gaussian_kernel(0.1), x, threads = 1)
  K2 <- kernel_matrix(gaussian_kernel(0.1), x, threads = 2)
  expect_identical(K1, K2)
  expect_true(isSymmetric(K1))
  expect_equal(diag(K1), rep(1, 700), tolerance = 1e-12)
})

test_that("kernel matrices agree with kernlab", {
  skip_if_not_installed("kernlab")
  set.seed(4)
  x <- matrix(rnorm(40 * 3), 40)
  expect_equal(unclass(kernlab::kernelMatrix(kernlab::rbfdot(sigma = 0.4), x)),
               kernel_matrix(gaussian_kernel(0.4), x), tolerance = 1e-10,
               ignore_attr = TRUE)
  expect_equal(unclass(kernlab::kernelMatrix(kernlab::laplacedot(sigma = 0.4), x)),
               kernel_matrix(laplacian_kernel(0.4), x), tolerance = 1e-6,
               ignore_attr = TRUE)
  expect_equal(unclass(kernlab::kernelMatrix(kernlab::polydot(degree = 2, scale = 0.5,
                                                              offset = 1), x)),
               kernel_matrix(polynomial_kernel(2, 0.5, 1), x), tolerance = 1e-10,
               ignore_attr = TRUE)
})

test_that("default gamma is 1 / ncol and dimnames follow the inputs", {
  x <- matrix(c(0, 1, 0, 2), 2, dimnames = list(c("a", "b"), NULL))
  K <- kernel_matrix(gaussian_kernel(), x)
  expect_equal(K["a", "b"], exp(-(1 + 4) / 2))
  expect_equal(dimnames(K), list(c("a", "b"), c("a", "b")))
})

test_that("kernel objects print and validate their parameters", {
  expect_output(print(gaussian_kernel(0.5)), "gamma = 0.5")
  expect_output(print(polynomial_kernel(2)), "\\^2")
  expect_error(gaussian_kernel(0), "'gamma' must be a number > 0")
  expect_error(gaussian_kernel(-1), "gamma")
  expect_error(laplacian_kernel(Inf), "gamma")
  expect_error(polynomial_kernel(0), "'degree'")
  expect_error(polynomial_kernel(1.5), "whole number")
  expect_error(polynomial_kernel(2, offset = NA), "'offset'")
})

test_that("what differs between kernels follows the kernel's class", {
  expect_identical(format(gaussian_kernel(0.5)),
                   "Gaussian kernel: exp(-gamma ||x - z||^2), gamma = 0.5")
  expect_identical(format(laplacian_kernel()),
                   "Laplacian kernel: exp(-gamma ||x - z||), gamma = 1/ncol(x)")
  expect_output(print(linear_kernel()), "^Linear kernel: <x, z>$")
  expect_identical(format(polynomial_kernel(2, scale = 0.5)), "Polynomial kernel: (0.5 <x, z> + 1)^2")
  has_gamma <- kernlearn:::.kernel_has_gamma
  expect_true(has_gamma(gaussian_kernel()))
  expect_true(has_gamma(laplacian_kernel(2)))
  expect_true(has_gamma(hierarchical_gaussian_kernel(c(1, 2))))
  expect_false(has_gamma(linear_kernel()))
  expect_false(has_gamma(polynomial_kernel()))
  expect_false(has_gamma(tessellated_kernel(diag(6))))
  expect_error(kernel_svm(as.matrix(iris[, 1:4]), iris$Species, kernel = polynomial_kernel(),
                          gamma = 1), "not the polynomial kernel")
  # the data's rule fills in gamma for the distance kernels only
  expect_equal(kernlearn:::.resolve_kernel(laplacian_kernel(), 4)$gamma, 1 / 4)
  expect_identical(kernlearn:::.resolve_kernel(polynomial_kernel(), 4), polynomial_kernel())
  # a kernel class the package does not know prints by its name and is refused by the glue
  odd <- structure(list(name = "odd"), class = c("kl_odd_kernel", "kl_kernel"))
  expect_identical(format(odd), "odd kernel")
  expect_false(has_gamma(odd))
  expect_error(kernlearn:::.kernel_spec(odd), "unknown kernel kl_odd_kernel")
  # a kernel read back from a file behaves as the one saved
  f <- tempfile(fileext = ".rds")
  saveRDS(gaussian_kernel(2), f)
  k <- readRDS(f)
  x <- matrix(runif(6), 3)
  expect_identical(kernel_matrix(k, x), kernel_matrix(gaussian_kernel(2), x))
})

test_that("kernel_matrix rejects bad input with clear errors", {
  x <- matrix(1:6 + 0.5, 3)
  expect_error(kernel_matrix("nope", x), "unknown kernel")
  expect_error(kernel_matrix(list(), x), "kernel object")
  expect_error(kernel_matrix(gaussian_kernel(1), matrix(letters[1:4], 2)), "numeric")
  xn <- x; xn[2, 1] <- NA
  expect_error(kernel_matrix(gaussian_kernel(1), xn), "column\\(s\\) 'V1'")
  expect_error(kernel_matrix(gaussian_kernel(1), x, matrix(1, 2, 3)), "columns")
  expect_error(kernel_matrix(gaussian_kernel(1), matrix(numeric(), 0, 2)), "empty")
  expect_error(kernel_matrix(gaussian_kernel(1), x, threads = 0), "threads")
  # a data.frame: its non-numeric columns named
  expect_error(kernel_matrix(gaussian_kernel(1), iris),
               "'x' has non-numeric column\\(s\\) 'Species'")
  expect_error(kernel_matrix(gaussian_kernel(1), iris[, 1:4], iris[, 3:5]),
               "'y' has non-numeric column\\(s\\) 'Species'")
  expect_equal(kernel_matrix(gaussian_kernel(1), iris[1:5, 1:4]),
               kernel_matrix(gaussian_kernel(1), as.matrix(iris[1:5, 1:4])))
})

test_that("the exponential kernels' vectorised exp is within a few ulp of R's exp", {
  # one column, so the squared distance is x^2 exactly as R computes it
  x <- matrix(sqrt(seq(0, 760, length.out = 50001)), ncol = 1)
  z <- matrix(0, 1, 1)
  d2 <- as.vector(x)^2
  K <- as.vector(kernel_matrix(gaussian_kernel(1), x, z))
  R <- exp(-d2)
  normal <- d2 <= 708
  expect_lte(max(abs(K[normal] - R[normal]) / R[normal]), 4 * .Machine$double.eps)
  # beyond (exp near or below the smallest normal number) the kernel value is 0 or, while it
  # is still a normal number, as close to R's
  expect_true(all(K[!normal] == 0 |
                    abs(K[!normal] - R[!normal]) <= 4 * .Machine$double.eps * R[!normal]))
  expect_true(all(R[!normal] < 3.4e-308))
  expect_true(all(K >= 0 & K <= 1))
  expect_identical(K[1], 1)
  L <- as.vector(kernel_matrix(laplacian_kernel(3), x, z))
  RL <- exp(-3 * sqrt(d2))
  ok <- 3 * sqrt(d2) <= 708
  expect_lte(max(abs(L[ok] - RL[ok]) / RL[ok]), 4 * .Machine$double.eps)
  # every position of a block and block tail gives the same value for the same input
  v <- matrix(sqrt(c(0.5, 2, 7.25)), ncol = 1)
  for (n in c(1, 3, 7, 8, 9, 17)) {
    Kn <- kernel_matrix(gaussian_kernel(1), v[rep(1:3, length.out = n), , drop = FALSE], z)
    K3 <- as.vector(kernel_matrix(gaussian_kernel(1), v, z))
    expect_identical(as.vector(Kn), K3[rep(1:3, length.out = n)])
  }
})
