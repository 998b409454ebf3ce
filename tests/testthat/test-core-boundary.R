# The boundary between R and the C++ core: one wrapper for every call, one label convention.

test_that("errors from the core carry the caller, name a class by its level, and interrupts pass", {
  core <- kernlearn:::.kl_core
  expect_error(core("f()", function(a) stop("bad ", a), "thing"), "^f\\(\\): bad thing$")
  class_error <- structure(
    class = c("kl_class_error", "error", "condition"),
    list(message = "the matrix of class 2 is singular", call = NULL, before = "the matrix of ",
         after = " is singular", index = 2L))
  expect_error(core("f()", function() stop(class_error), levels = c("a", "b")),
               "^f\\(\\): the matrix of class 'b' is singular$")
  expect_error(core("f()", function() stop(class_error)),
               "^f\\(\\): the matrix of class 2 is singular$")
  # a user interrupt is R's condition of class "interrupt": never turned into an error
  interrupt <- structure(class = c("interrupt", "condition"), list(message = "", call = NULL))
  got <- tryCatch(core("f()", function() signalCondition(interrupt)),
                  interrupt = function(i) i, error = function(e) e)
  expect_s3_class(got, "interrupt")
  expect_false(inherits(got, "error"))
  # a core error through an export: the glue's message, prefixed
  expect_error(core("f()", kernlearn:::cpp_linear_predictor, diag(2), matrix(1, 3, 1), 0, 1L),
               "^f\\(\\): internal error: coefficients of the wrong shape$")
})

test_that("class labels cross the boundary as R's factor codes, 1..K, both ways", {
  x <- matrix(c(-2, -1, 1, 2), ncol = 1)
  # two classes: one decision column, positive for the second
  expect_identical(kernlearn:::cpp_linear_svm_predict(x, matrix(1), 0), c(1L, 1L, 2L, 2L))
  # three classes: the largest decision value
  expect_identical(kernlearn:::cpp_linear_svm_predict(x, matrix(c(-1, 0, 1), 1), c(0, 0.5, 0)),
                   c(1L, 1L, 3L, 3L))
  # one-vs-one votes: a positive decision is a vote for the pair's second class
  expect_identical(kernlearn:::cpp_ovo_vote(matrix(c(1, -1), 2, 1), 2L), c(2L, 1L))
  # the heads take the same codes and give back the levels
  set.seed(1)
  xx <- matrix(rnorm(60), 30)
  yy <- factor(rep(c("u", "v", "w"), each = 10))
  xx[yy == "v", 1] <- xx[yy == "v", 1] + 4
  xx[yy == "w", 2] <- xx[yy == "w", 2] + 4
  lf <- kernlearn:::.logistic_fit(xx, yy, lambda = 1e-3)
  expect_gt(mean(kernlearn:::.logistic_predict(lf, xx, type = "class") == yy), 0.9)
  sf <- kernlearn:::.linear_svm_fit(xx, yy, cost = 10, seed = c(1L, 2L))
  expect_gt(mean(kernlearn:::.linear_svm_predict(sf, xx) == yy), 0.9)
})

test_that("only the core's errors get the caller's prefix, not those of its arguments", {
  core <- kernlearn:::.kl_core
  expect_error(core("f()", function(a) a, stop("g(): bad argument")), "^g\\(\\): bad argument$")
  expect_identical(core("f()", function(a, b) a + b, 1, b = 2), 3)
})
