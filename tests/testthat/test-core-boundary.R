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
