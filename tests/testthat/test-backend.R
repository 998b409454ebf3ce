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
