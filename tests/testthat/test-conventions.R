# Conventions shared by every learner.

test_that("duplicated column names are refused at fit by every learner", {
  X <- as.matrix(iris[, 1:4])
  colnames(X) <- c("a", "a", "b", "c")
  y <- iris$Species
  big <- X[rep(seq_len(nrow(X)), 2), ]
  fits <- list(
    kernel_svm = function() kernel_svm(X, y),
    kernel_ridge = function() kernel_ridge(X, y),
    gem = function() gem(X, y),
    dikl = function() dikl(X, y, dim = 5, max_epochs = 1),
    hgk = function() hgk(big, rep(y, 2), depth = 1, control = hgk_control(maxit = 0)))
  for (nm in names(fits))
    expect_error(fits[[nm]](), "duplicated column name\\(s\\) 'a'", info = nm)
  df <- data.frame(X, check.names = FALSE)
  expect_error(kernel_svm(df, y), "duplicated column name\\(s\\) 'a'")
  # unique names still work, and unnamed matrices get V1..Vd
  colnames(X) <- NULL
  expect_s3_class(kernel_svm(X, y), "kernel_svm")
})
