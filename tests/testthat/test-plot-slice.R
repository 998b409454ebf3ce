# plot() of kernel_svm() and kernel_ridge() models: predictions on a grid over two inputs.

test_that("the slice plot's grid holds the model's predictions there, the others held fixed", {
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  fit <- kernel_svm(Species ~ ., data = iris, gamma = 2, cost = 4)
  s <- plot(fit, iris, Petal.Width ~ Petal.Length, slice = list(Sepal.Width = 3), grid = 7)
  expect_equal(s$x, seq(min(iris$Petal.Length), max(iris$Petal.Length), length.out = 7))
  expect_equal(s$y, seq(min(iris$Petal.Width), max(iris$Petal.Width), length.out = 7))
  # the slice: the value given, the median for the other numeric input
  expect_equal(s$slice, list(Sepal.Length = median(iris$Sepal.Length), Sepal.Width = 3))
  i <- 3
  j <- 6
  row <- data.frame(Sepal.Length = median(iris$Sepal.Length), Sepal.Width = 3,
                    Petal.Length = s$x[i], Petal.Width = s$y[j])
  expect_equal(s$levels[s$z[i, j]], as.character(predict(fit, row)))
  expect_true(all(s$z %in% seq_along(levels(iris$Species))))
  # regression, a model fitted on a matrix, the default axes (the first two numeric inputs)
  X <- as.matrix(mtcars[, c("wt", "hp", "disp")])
  reg <- kernel_ridge(X, mtcars$mpg, lambda = 0.5)
  r <- plot(reg, X, grid = 5)
  g <- cbind(wt = rep(r$x, 5), hp = rep(r$y, each = 5), disp = median(mtcars$disp))
  expect_equal(as.vector(r$z), as.vector(predict(reg, g)))
  # a factor input held at its most frequent level
  d <- mtcars
  d$cyl <- factor(d$cyl)
  rf <- kernel_svm(mpg ~ wt + hp + cyl, data = d)
  p <- plot(rf, d, hp ~ wt, grid = 4)
  expect_equal(as.character(p$slice$cyl), "8")
  expect_equal(p$z[2, 3], unname(predict(rf, data.frame(wt = p$x[2], hp = p$y[3],
                                                         cyl = factor("8", levels(d$cyl))))))
})

test_that("the slice plot names what is wrong with its arguments", {
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  fit <- kernel_svm(Species ~ ., data = iris)
  expect_error(plot(fit), "'data' is required")
  expect_error(plot(fit, iris[, 1:3]), "lacks the model's input column\\(s\\) 'Petal.Width'")
  expect_error(plot(fit, iris, Petal.Width ~ petal), "'petal' is not an input of the model")
  expect_error(plot(fit, iris, ~ Petal.Width), "vertical ~ horizontal")
  expect_error(plot(fit, iris, Petal.Width ~ Petal.Width), "two different inputs")
  # the default axes are the first two numeric inputs, Sepal.Length and Sepal.Width
  expect_error(plot(fit, iris, slice = list(Sepal.Length = 1)),
               "'slice' names 'Sepal.Length', not an input held fixed")
  expect_error(plot(fit, iris, slice = list(Petal.Length = 1:2)),
               "'slice\\$Petal.Length' must be a single value")
  expect_error(plot(fit, iris, grid = 1), "'grid'")
  expect_error(plot(fit, iris, col = "red"), "'col' has 1 colours for 3 classes")
  one <- kernel_svm(Species ~ Petal.Length, data = iris)
  expect_error(plot(one, iris), "fewer than two numeric inputs")
  K <- kernel_matrix(gaussian_kernel(gamma = 1), as.matrix(iris[, 1:4]))
  pre <- kernel_svm(K, iris$Species, kernel = "precomputed")
  expect_error(plot(pre, iris), "precomputed kernel")
})
