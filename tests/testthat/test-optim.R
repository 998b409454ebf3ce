# The reusable optimisers on problems with known minima.

optim_test <- function(problem, method, x0, control = list(), seed = c(1L, 2L)) {
  kernlearn:::cpp_optim_test(problem, method, x0, control, seed)
}

test_that("L-BFGS with a strong-Wolfe line search minimises Rosenbrock", {
  r <- optim_test("rosenbrock", "lbfgs_wolfe", c(-1.2, 1))
  expect_true(r$converged)
  expect_equal(r$x, c(1, 1), tolerance = 1e-6)
  expect_lt(r$value, 1e-12)
  expect_lt(max(abs(r$grad)), 1e-8)
  expect_lt(r$iterations, 200)
  r5 <- optim_test("rosenbrock", "lbfgs_wolfe", c(-1, 2, -1, 0.5, 2), list(max_iter = 5000))
  expect_true(r5$converged)
  expect_equal(r5$x, rep(1, 5), tolerance = 1e-5)
})

test_that("L-BFGS with Armijo backtracking minimises Rosenbrock", {
  r <- optim_test("rosenbrock", "lbfgs_armijo", c(-1.2, 1), list(max_iter = 5000))
  expect_true(r$converged)
  expect_equal(r$x, c(1, 1), tolerance = 1e-6)
  expect_lt(r$value, 1e-12)
})

test_that("L-BFGS stops at the iteration cap without claiming convergence", {
  r <- optim_test("rosenbrock", "lbfgs_wolfe", c(-1.2, 1), list(max_iter = 3))
  expect_false(r$converged)
  expect_equal(r$iterations, 3L)
  expect_gt(r$value, 1e-3)
})

test_that("steepest descent with Armijo backtracking makes sufficient-decrease steps", {
  r <- optim_test("rosenbrock", "gd_armijo", c(-1.2, 1), list(max_iter = 100000, gtol = 1e-5))
  expect_true(r$armijo_ok)
  expect_true(r$converged)
  expect_equal(r$x, c(1, 1), tolerance = 1e-4)
  short <- optim_test("rosenbrock", "gd_armijo", c(-1.2, 1), list(max_iter = 50))
  expect_false(short$converged)
  expect_lt(short$value, 24.2)  # f(-1.2, 1) = 24.2
})

test_that("Adam with plateau decay solves a least-squares problem", {
  set.seed(1)
  A <- matrix(rnorm(400 * 5), 400, 5)
  beta <- c(1, -2, 0.5, 3, 0)
  y <- drop(A %*% beta) + rnorm(400, sd = 0.1)
  exact <- qr.solve(A, y)
  r <- optim_test("least_squares", "adam", rep(0, 5),
                  list(A = A, y = y, lr = 0.05, batch = 20, patience = 3, rel_tol = 1e-4,
                       max_epochs = 2000))
  expect_equal(r$x, exact, tolerance = 1e-3)
  expect_gte(r$decays, 1L)
  expect_lt(r$lr, 0.05)
  expect_true(r$reason %in% c("no improvement after a learning-rate decay",
                              "learning rate below its minimum"))
  expect_lt(r$epochs, 2000L)
  expect_lt(tail(r$history, 1), r$history[1] / 100)
  # The learning rate only ever decreases, by the factor.
  lr <- unique(r$lr_history)
  expect_equal(lr, 0.05 * 0.1^(seq_along(lr) - 1L))
  # Reproducible with the seed of the mini-batch order.
  r2 <- optim_test("least_squares", "adam", rep(0, 5),
                   list(A = A, y = y, lr = 0.05, batch = 20, patience = 3, max_epochs = 2000))
  expect_identical(r$x, r2$x)
})

test_that("the plateau scheduler decays and stops as specified", {
  s <- optim_test("plateau", "sequence", 0,
                  list(values = c(10, 9, 8, 8, 8, 7, 7, 7, 7, 7, 6, 5), patience = 2, lr = 1))
  expect_equal(s$lr[1:10], c(1, 1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01))
  expect_equal(s$stop_epoch, 10L)
  expect_equal(s$decays, 2L)
  expect_equal(s$best, 7)
  expect_equal(s$best_epoch, 6L)
  expect_equal(s$reason, "no improvement after a learning-rate decay")
  # A relative change below rel_tol is not an improvement.
  t <- optim_test("plateau", "sequence", 0,
                  list(values = c(1, 0.99999, 0.99998, 0.99997), patience = 3, lr = 1))
  expect_equal(t$lr, c(1, 1, 1, 0.1))
  # Minimum learning rate.
  m <- optim_test("plateau", "sequence", 0,
                  list(values = c(5, 5, 5, 4, 4, 4, 3), patience = 2, lr = 1, min_lr = 0.05))
  expect_equal(m$stop_epoch, 6L)
  expect_equal(m$reason, "learning rate below its minimum")
  # Maximum number of epochs.
  e <- optim_test("plateau", "sequence", 0, list(values = 10:1, max_epochs = 4))
  expect_equal(e$stop_epoch, 4L)
  expect_equal(e$decays, 0L)
  expect_equal(e$reason, "maximum number of epochs reached")
})

test_that("simulated annealing finds the global minimum of Rastrigin", {
  ctl <- list(T0 = 10, cooling = 0.9995, max_iter = 20000, step = 0.5)
  r <- optim_test("rastrigin", "anneal", c(3.4, -2.6), ctl, seed = c(5L, 6L))
  expect_equal(r$iterations, 20000L)
  expect_lt(r$value, 0.05)
  expect_equal(round(r$x), c(0, 0))
  expect_lt(max(abs(r$x)), 0.02)
  expect_gt(r$accepted, 0L)
  expect_lt(r$accepted, r$iterations)
  # The kept state is the best one seen.
  expect_lte(r$value, r$last_value)
  # Same seed, same path; another seed, another path.
  r2 <- optim_test("rastrigin", "anneal", c(3.4, -2.6), ctl, seed = c(5L, 6L))
  expect_identical(r$x, r2$x)
  r3 <- optim_test("rastrigin", "anneal", c(3.4, -2.6), ctl, seed = c(7L, 8L))
  expect_false(identical(r$x, r3$x))
  expect_lt(r3$value, 0.05)
  # With almost no iterations it cannot get there from a far start.
  short <- optim_test("rastrigin", "anneal", c(3.4, -2.6), list(max_iter = 5, step = 0.01))
  expect_gt(short$value, 10)
})

test_that("unknown problems and methods are errors", {
  expect_error(optim_test("nope", "adam", 0), "unknown problem")
  expect_error(optim_test("rosenbrock", "adam", c(0, 0)), "unknown method")
})
