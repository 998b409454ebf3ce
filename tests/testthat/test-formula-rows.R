# subset = and na.action = in the formula methods of every learner.

test_that("subset selects rows in every learner's formula method", {
  d <- iris
  keep <- d$Species != "setosa"
  expect_warning(f1 <- kernel_svm(Species ~ ., data = d, subset = Species != "setosa", gamma = 1),
                 "dropping unused level\\(s\\) 'setosa'")
  f2 <- kernel_svm(Species ~ ., data = droplevels(d[keep, ]), gamma = 1)
  expect_equal(f1$levels, c("versicolor", "virginica"))
  expect_equal(predict(f1, d[keep, ], type = "decision"),
               predict(f2, d[keep, ], type = "decision"))
  r1 <- kernel_ridge(mpg ~ wt + hp, data = mtcars, subset = 1:20, lambda = 0.1)
  r2 <- kernel_ridge(mpg ~ wt + hp, data = mtcars[1:20, ], lambda = 0.1)
  expect_equal(predict(r1, mtcars), predict(r2, mtcars))
  t1 <- tkl(mpg ~ wt + hp, data = mtcars, subset = cyl > 4, maxit = 3)
  expect_equal(t1$n, sum(mtcars$cyl > 4))
  g1 <- gem(Species ~ ., data = iris, subset = seq(1, 150, by = 2), top = 2, threshold = 1,
            lambda = 1e-3)
  expect_equal(g1$n, 75L)
  expect_error(kernel_svm(Species ~ ., data = d, subset = rep(TRUE, 3)), "length 3")
  expect_error(kernel_svm(Species ~ ., data = d, subset = 0:2), "row numbers")
  expect_error(kernel_svm(Species ~ ., data = d, subset = Species == "none"), "no rows")
  # the call keeps the subset, so update() refits on the same rows
  expect_equal(update(r1, lambda = 1)$n, 20L)
})

test_that("na.action = na.omit drops incomplete rows and says how many; na.fail is the default", {
  d <- mtcars[, c("mpg", "wt", "hp")]
  d$wt[c(3, 7)] <- NA
  d$hp[10] <- Inf
  expect_error(kernel_ridge(mpg ~ ., data = d),
               "column 'wt' of 'data' has 2 missing or infinite value\\(s\\) \\(row\\(s\\) 3, 7\\); remove those rows or use na.action = na.omit")
  d2 <- mtcars[, c("mpg", "wt")]
  d2$mpg[5] <- NA
  expect_error(hgk(mpg ~ ., data = d2), "'mpg' has 1 missing.*use na.action = na.omit")
  # other input errors are unchanged
  expect_error(kernel_ridge(mpg ~ ., data = transform(d, wt = I(as.list(wt)))), "is a list")
  expect_message(f <- kernel_ridge(mpg ~ ., data = d, na.action = na.omit, lambda = 0.1),
                 "3 row\\(s\\) with missing or infinite values dropped")
  expect_equal(f$n, 29L)
  ref <- kernel_ridge(mpg ~ ., data = d[-c(3, 7, 10), ], lambda = 0.1)
  expect_equal(predict(f, d[-c(3, 7, 10), ]), predict(ref, d[-c(3, 7, 10), ]))
  expect_message(kernel_svm(mpg ~ wt, data = d, na.action = "na.omit"), "2 row\\(s\\)")
  expect_message(tkl(mpg ~ wt, data = d, na.action = na.exclude, maxit = 2), "2 row\\(s\\)")
  # a variable outside the formula does not drop rows
  expect_silent(kernel_ridge(mpg ~ hp, data = transform(d, hp = mtcars$hp), lambda = 0.1,
                             na.action = na.omit))
  expect_error(kernel_ridge(mpg ~ ., data = d, na.action = na.pass), "'na.action' must be")
  ir <- iris
  ir$Species[5] <- NA
  expect_message(h <- hgk(Species ~ ., data = ir[rep(1:150, 2), ], depth = 1, na.action = na.omit,
                          control = hgk_control(maxit = 2), folds = 2),
                 "2 row\\(s\\)")
  expect_equal(h$n, 298L)
  expect_message(dikl(Species ~ ., data = ir, dim = 10, max_epochs = 2, na.action = na.omit),
                 "1 row\\(s\\)")
})

test_that("a factor's indicator column named like another column is kept apart", {
  # factor V1 with levels 0 and 1 gives indicator columns V10 and V11, the names of two
  # numeric columns: predict() must not take one for the other
  set.seed(3)
  n <- 80
  d <- data.frame(V1 = factor(sample(0:1, n, TRUE)), V10 = runif(n), V11 = runif(n))
  d$y <- factor(ifelse(d$V10 + d$V11 + 0.3 * (d$V1 == "1") > 1.1, "a", "b"))
  m <- kernel_svm(y ~ ., data = d, cost = 10, gamma = 1)
  expect_false(anyDuplicated(m$spec$features) > 0)
  X <- cbind(V1_0 = as.numeric(d$V1 == "0"), V1_1 = as.numeric(d$V1 == "1"),
             V10 = d$V10, V11 = d$V11)
  m2 <- kernel_svm(X, d$y, cost = 10, gamma = 1)
  expect_equal(predict(m, d, type = "decision"), predict(m2, X, type = "decision"),
               ignore_attr = TRUE, tolerance = 1e-8)
  # shuffled newdata columns are still matched by name
  expect_equal(predict(m, d[, c("V11", "y", "V10", "V1")], type = "decision"),
               predict(m, d, type = "decision"))
  # learners that tune a Gaussian on the encoded matrix inside the fit
  t1 <- tkl(y ~ ., data = d, maxit = 3)
  expect_equal(length(predict(t1, d)), n)
})
