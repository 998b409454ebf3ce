# kl_caret_model(): every learner through caret::train with 3-fold cross-validation.

# (loading caret may warn about the machine's clock service; that is not ours to test)
suppressWarnings(suppressMessages(requireNamespace("caret", quietly = TRUE)))

ctrl <- function(...) caret::trainControl(method = "cv", number = 3, ...)

test_that("kernel_svm and tkl tune through caret::train, with class probabilities", {
  skip_if_not_installed("caret")
  set.seed(1)
  fit <- caret::train(Species ~ ., data = iris, method = kl_caret_model("kernel_svm"),
                      tuneGrid = expand.grid(cost = c(1, 10), gamma = c(0.5, 2)),
                      trControl = ctrl(classProbs = TRUE))
  expect_s3_class(fit$finalModel, "kernel_svm")
  expect_true(fit$finalModel$probability)
  expect_equal(nrow(fit$results), 4L)
  expect_true(fit$bestTune$cost %in% c(1, 10))
  p <- predict(fit, iris, type = "prob")
  expect_equal(unname(rowSums(p)), rep(1, 150), tolerance = 1e-8)
  expect_gt(mean(predict(fit, iris) == iris$Species), 0.9)
  # the final model is the learner fitted with the best parameters
  ref <- kernel_svm(iris[, 1:4], iris$Species, cost = fit$bestTune$cost,
                    gamma = fit$bestTune$gamma, probability = TRUE)
  expect_equal(predict(fit$finalModel, iris[, 1:4], type = "decision"),
               predict(ref, iris[, 1:4], type = "decision"))
  set.seed(2)
  ft <- caret::train(x = mtcars[, c("wt", "hp")], y = mtcars$mpg, method = kl_caret_model("tkl"),
                     tuneLength = 2, trControl = ctrl(), maxit = 5)
  expect_s3_class(ft$finalModel, "tkl")
  expect_equal(nrow(ft$results), 4L)
  expect_length(predict(ft, mtcars[, c("wt", "hp")]), 32L)
})

test_that("kernel_ridge, gem, dikl and hgk tune through caret::train", {
  skip_if_not_installed("caret")
  set.seed(3)
  fr <- caret::train(mpg ~ wt + hp + disp, data = mtcars, method = kl_caret_model("kernel_ridge"),
                     tuneLength = 2, trControl = ctrl())
  expect_s3_class(fr$finalModel, "kernel_ridge")
  expect_true(all(is.finite(fr$results$RMSE)))
  fg <- caret::train(Species ~ ., data = iris, method = kl_caret_model("gem"),
                     tuneGrid = data.frame(lambda = c(1e-3, 1e-2), threshold = 1),
                     trControl = ctrl(classProbs = TRUE), top = 2)
  expect_s3_class(fg$finalModel, "gem")
  expect_equal(ncol(predict(fg, iris, type = "prob")), 3L)
  fd <- caret::train(Species ~ ., data = iris, method = kl_caret_model("dikl"),
                     tuneGrid = data.frame(dim = c(10, 20), gamma = 1), trControl = ctrl(),
                     max_epochs = 3)
  expect_s3_class(fd$finalModel, "dikl")
  fh <- caret::train(Species ~ ., data = iris[rep(1:150, 2), ], method = kl_caret_model("hgk"),
                     tuneGrid = data.frame(nodes = c(0, 2)), trControl = ctrl(),
                     control = hgk_control(maxit = 2), folds = 2)
  expect_s3_class(fh$finalModel, "hgk")
  expect_error(kl_caret_model("lm"), "learner")
  m <- kl_caret_model("kernel_ridge")
  expect_error(m$prob(fr$finalModel, mtcars[1:3, c("wt", "hp", "disp")]), "no class probabilities")
  g <- m$grid(mtcars[, 1:3], mtcars$mpg, len = 3)
  expect_equal(dim(g), c(9L, 2L))
  set.seed(4)
  expect_equal(nrow(m$grid(mtcars[, 1:3], mtcars$mpg, len = 5, search = "random")), 5L)
})

test_that("the default grids' widths are centred on kernel_svm's and kernel_ridge's default width", {
  skip_if_not_installed("caret")
  x <- mtcars[, c("wt", "hp", "disp", "qsec")]
  g0 <- kernel_svm(x, mtcars$mpg)$kernel$gamma
  # the default width computed by hand: one over the summed variances of the [0, 1] columns
  s01 <- vapply(x, function(v) stats::var((v - min(v)) / (max(v) - min(v))), numeric(1))
  expect_equal(g0, 1 / sum(s01))
  for (learner in c("kernel_svm", "kernel_ridge")) {
    g <- kl_caret_model(learner)$grid(x, mtcars$mpg, len = 3)
    expect_equal(sort(unique(g$gamma)), signif(g0 * c(1 / 8, 1, 8), 3))
    set.seed(6)
    r <- kl_caret_model(learner)$grid(x, mtcars$mpg, len = 50, search = "random")
    expect_true(all(r$gamma >= signif(g0 / 8, 3) & r$gamma <= signif(g0 * 8, 3)))
  }
  # classification: the same rule on the predictors
  gi <- kl_caret_model("kernel_svm")$grid(iris[, 1:4], iris$Species, len = 1)
  expect_equal(gi$gamma, signif(kernel_svm(Species ~ ., data = iris)$kernel$gamma, 3))
})

test_that("dikl's caret model gives probabilities with the logistic head only", {
  skip_if_not_installed("caret")
  m <- kl_caret_model("dikl")
  set.seed(5)
  fl <- dikl(iris[, 1:4], iris$Species, dim = 10, max_epochs = 2, head = "logistic")
  fs <- dikl(iris[, 1:4], iris$Species, dim = 10, max_epochs = 2)
  expect_equal(dim(m$prob(fl, iris[1:5, 1:4])), c(5L, 3L))
  if (!identical(fs$head$type, "logistic"))
    expect_error(m$prob(fs, iris[1:5, 1:4]), "no class probabilities")
})
