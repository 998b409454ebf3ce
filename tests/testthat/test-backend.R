test_that("kl_backend reports the backend and why the GPU is not used", {
  b <- kl_backend()
  expect_type(b, "character")
  expect_true(b == "cpu" || startsWith(b, "cuda: "))
  if (b == "cpu") expect_true(nzchar(attr(b, "reason")))
  op <- options(kernlearn.backend = "cpu")
  on.exit(options(op))
  b <- kl_backend()
  expect_equal(as.vector(b), "cpu")
  expect_match(attr(b, "reason"), "kernlearn.backend")
  options(kernlearn.backend = "gpu")
  expect_error(kl_backend(), "must be \"auto\", \"cpu\" or \"cuda\"")
})

test_that("asking for CUDA without a usable GPU falls back to the CPU with the same results", {
  x <- matrix(runif(200 * 3), 200)
  op <- options(kernlearn.backend = "cpu")
  on.exit(options(op))
  K_cpu <- kernel_matrix(gaussian_kernel(1), x)
  options(kernlearn.backend = "cuda")
  if (startsWith(kl_backend(), "cuda")) skip("a GPU is in use")
  K <- suppressWarnings(kernel_matrix(gaussian_kernel(1), x))
  expect_identical(K, K_cpu)
})

test_that("the automatic backend falls back silently; an explicit cuda warns once", {
  if (startsWith(kl_backend(), "cuda")) skip("a GPU is in use")
  st <- kernlearn:::.kl_state
  old <- list(nolib = st$told_nolib, nogpu = st$told_nogpu)
  on.exit({
    st$told_nolib <- old$nolib
    st$told_nogpu <- old$nogpu
  }, add = TRUE)
  st$told_nolib <- NULL
  st$told_nogpu <- NULL
  x <- matrix(runif(60 * 3), 60)
  op <- options(kernlearn.backend = "auto")
  on.exit(options(op), add = TRUE)
  expect_silent(kernel_matrix(gaussian_kernel(1), x))
  expect_silent(kernel_ridge(x, x[, 1], lambda = 0.1))
  options(kernlearn.backend = "cuda")
  expect_warning(kernel_matrix(gaussian_kernel(1), x), "kernlearn.backend = \"cuda\".*CPU")
  expect_silent(kernel_matrix(gaussian_kernel(1), x))
})

# The portable product and Cholesky factorisation against the vectorised ones: the core's C++
# tests (tests/core).
test_that("KERNLEARN_SIMD=none runs the portable path, with the results of the vectorised one", {
  skip_on_cran()
  rscript <- file.path(R.home("bin"), "Rscript")
  skip_if_not(file.exists(rscript))
  out <- tempfile(fileext = ".rds")
  on.exit(unlink(out), add = TRUE)
  code <- sprintf(paste(
    ".libPaths(c(%s, .libPaths())); suppressMessages(library(kernlearn));",
    "set.seed(3); x <- matrix(runif(700 * 5), 700); z <- matrix(runif(300 * 5), 300);",
    "saveRDS(list(simd = attr(kl_backend(), 'simd'),",
    "  K = kernel_matrix(gaussian_kernel(2), x, z), L = kernel_matrix(laplacian_kernel(1), x, z),",
    "  D = predict(kernel_svm(Species ~ ., iris, tol = 1e-8, fitted = FALSE), iris, type = 'decision'),",
    "  R = predict(kernel_ridge(mpg ~ ., mtcars, lambda = 0.1), mtcars)), %s)"),
    paste(deparse(.libPaths()), collapse = ""), deparse(out))
  status <- system2(rscript, c("-e", shQuote(code)), env = "KERNLEARN_SIMD=none",
                    stdout = FALSE, stderr = FALSE)
  expect_identical(status, 0L)
  base <- readRDS(out)
  expect_identical(base$simd, "none")
  set.seed(3)
  x <- matrix(runif(700 * 5), 700)
  z <- matrix(runif(300 * 5), 300)
  expect_equal(base$K, kernel_matrix(gaussian_kernel(2), x, z), tolerance = 1e-13)
  expect_equal(base$L, kernel_matrix(laplacian_kernel(1), x, z), tolerance = 1e-13)
  # (solved to a tight tolerance: the two paths round the single-precision kernel rows
  # differently, and the solver may stop anywhere within its tolerance)
  expect_equal(base$D, predict(kernel_svm(Species ~ ., iris, tol = 1e-8, fitted = FALSE), iris,
                               type = "decision"), tolerance = 1e-5)
  expect_equal(base$R, predict(kernel_ridge(mpg ~ ., mtcars, lambda = 0.1), mtcars),
               tolerance = 1e-10)
  # an unknown value leaves the processor's level
  lev <- system2(rscript, c("-e", shQuote(sprintf(
    ".libPaths(c(%s, .libPaths())); cat(attr(kernlearn::kl_backend(), 'simd'))",
    paste(deparse(.libPaths()), collapse = "")))), env = "KERNLEARN_SIMD=bogus",
    stdout = TRUE, stderr = FALSE)
  expect_identical(lev, attr(kl_backend(), "simd"))
  expect_true(attr(kl_backend(), "simd") %in% c("none", "avx2", "avx512"))
})

test_that("Gaussian kernel blocks agree with R on shapes that are not block multiples", {
  # several 256-deep k blocks, several 144-row blocks of A, partial micro-tiles on both sides
  # (the products alone: the core's C++ tests)
  set.seed(11)
  for (sh in list(c(1003, 517, 300), c(37, 5, 3), c(290, 1030, 513))) {
    a <- matrix(runif(sh[1] * sh[3]), sh[1])
    b <- matrix(runif(sh[2] * sh[3]), sh[2])
    g <- 1 / sh[3]
    K <- kernel_matrix(gaussian_kernel(g), a, b, threads = 2)
    d2 <- outer(rowSums(a^2), rowSums(b^2), "+") - 2 * tcrossprod(a, b)
    expect_equal(K, exp(-g * pmax(d2, 0)), tolerance = 1e-12)
    expect_identical(kernel_matrix(gaussian_kernel(g), a, b, threads = 1), K)
  }
})


test_that("options(kernlearn.gpu_ops) chooses the operations for the GPU, checked", {
  op <- options(kernlearn.gpu_ops = NULL)
  on.exit(options(op))
  b <- kl_backend()
  expect_true(is.character(attr(b, "gpu_ops")))
  if (b == "cpu") {
    expect_identical(attr(b, "gpu_ops"), character(0))
  } else {
    expect_identical(attr(b, "gpu_ops"), c("kernel_matrix", "gemm"))
    options(kernlearn.gpu_ops = c("cholesky", "kernel_matrix"))
    expect_identical(attr(kl_backend(), "gpu_ops"), c("kernel_matrix", "cholesky"))
    options(kernlearn.gpu_ops = character(0))
    expect_identical(attr(kl_backend(), "gpu_ops"), character(0))
  }
  options(kernlearn.gpu_ops = "qr")
  expect_error(kl_backend(),
               "kernlearn.gpu_ops.*\"kernel_matrix\", \"gemm\", \"cholesky\", \"gram\", \"kernel_rows\", \"hgk_pass\", \"tkl_block\"")
  options(kernlearn.gpu_ops = 1)
  expect_error(kernel_matrix(gaussian_kernel(1), diag(2)), "kernlearn.gpu_ops")
  options(kernlearn.gpu_ops = NA_character_)
  expect_error(kl_backend(), "kernlearn.gpu_ops")
})

test_that("kernel ridge with the Cholesky factorisation allowed on the GPU gives the CPU's fit", {
  # 2100 rows: above the size from which the GPU backend factors on the GPU
  set.seed(5)
  n <- 2100
  x <- matrix(runif(n * 4), n)
  y <- sin(4 * x[, 1]) + x[, 2] + rnorm(n, sd = 0.1)
  op <- options(kernlearn.backend = "cpu")
  on.exit(options(op))
  ref <- kernel_ridge(x, y, kernel = gaussian_kernel(2), lambda = 0.5)
  options(kernlearn.backend = "auto", kernlearn.gpu_ops = c("kernel_matrix", "cholesky"))
  fit <- kernel_ridge(x, y, kernel = gaussian_kernel(2), lambda = 0.5)
  tol <- if (kl_backend() == "cpu") 0 else 1e-8
  expect_equal(fit$alpha, ref$alpha, tolerance = tol)
  expect_equal(fit$bias, ref$bias, tolerance = tol)
  # the solve itself against a direct one: [K + lambda I, 1; 1', 0] [alpha; b] = [y; 0]
  sub <- kernel_ridge(x[1:400, ], y[1:400], kernel = gaussian_kernel(2), lambda = 0.5)
  K <- kernel_matrix(gaussian_kernel(2), sub$x)   # on the inputs as the fit scaled them
  S <- rbind(cbind(K + diag(0.5, 400), 1), c(rep(1, 400), 0))
  sol <- solve(S, c(as.vector(sub$y), 0))
  expect_equal(as.vector(sub$alpha), sol[1:400], tolerance = 1e-8)
  expect_equal(as.vector(sub$bias), sol[401], tolerance = 1e-8)
})
