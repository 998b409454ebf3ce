# hgk(): the learner against kernel_ridge() / kernel_svm() when nothing is learned, the
# annealing and reproducibility guarantees, relevance on Friedman data, the methods and the
# input errors. The learning objective and its gradients (against an independent LS-SVM
# computation and finite differences) are checked by the core's C++ tests (tests/core).

# ---- helpers ---------------------------------------------------------------------------------

# One thread unless a test asks for more: OpenMP barriers on tiny problems are slow on a busy
# machine. Restored at the end of the file.
old_options <- options(kernlearn.threads = 1L)

# An independent R evaluation of a hierarchical kernel's Gram matrix (NOTES sec. 2): a leaf is
# exp(-scale * sum_i w_i^2 (x_i - z_i)^2), an inner node exp(-scale * sum_c u_c^2 (1 - K_c)).
sqdist_col <- function(x, z, i) outer(x[, i], z[, i], "-")^2
gram_r <- function(k, x, z) {
  if (is.null(k$nodes)) {
    D <- Reduce(`+`, lapply(seq_along(k$weights), function(i) k$weights[i]^2 * sqdist_col(x, z, i)))
    return(exp(-k$gamma * D))
  }
  S <- 0
  for (j in seq_along(k$nodes)) {
    nd <- k$nodes[[j]]
    Kj <- if (inherits(nd, "kl_kernel")) gram_r(nd, x, z) else
      exp(-Reduce(`+`, lapply(seq_along(nd), function(t)
        k$weights[[j]][t]^2 * sqdist_col(x, z, nd[t]))))
    S <- S + k$node_weights[j]^2 * (1 - Kj)
  }
  exp(-k$gamma * S)
}

# The LS-SVM (K11 + c I) alpha + 1 b' = Y1, 1'alpha = 0 as one bordered system, by solve().
ls_svm_r <- function(K11, Y1, c) {
  n1 <- nrow(K11)
  A <- rbind(cbind(K11 + c * diag(n1), 1), c(rep(1, n1), 0))
  sol <- solve(A, rbind(Y1, 0))
  list(alpha = sol[seq_len(n1), , drop = FALSE], bias = sol[n1 + 1L, ], A = A)
}

# Kernels of depth 2 (overlapping nodes) and 3 (a root over depth-2 subtrees) on 5 columns.
k_d2 <- hierarchical_gaussian_kernel(weights = list(c(1.5, 0.7), c(0.4, 2, 1), c(1.1, 0.6)),
                                     nodes = list(1:2, 2:4, c(3, 5)),
                                     node_weights = c(0.8, 1.3, 0.5))
k_sub <- hierarchical_gaussian_kernel(weights = list(c(0.9, 1.2), c(1.4, 0.5, 0.8)),
                                      nodes = list(c(4, 1), c(2, 3, 5)),
                                      node_weights = c(1.1, 0.7), gamma = 0.6)
k_d3 <- hierarchical_gaussian_kernel(weights = list(NULL, NULL, c(0.7, 1.3)),
                                     nodes = list(k_d2, k_sub, c(1, 5)),
                                     node_weights = c(1.2, 0.6, 0.9))

# ---- the learner without learning: kernel_ridge() and kernel_svm() ---------------------------

# Data for the learner: inputs in [0, 1] with columns of different importance.
reg_data <- function(n = 150, d = 4, seed = 1) {
  set.seed(seed)
  x <- matrix(runif(n * d), n, d)
  list(x = x, y = sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1))
}
cls_data <- function(n = 150, d = 4, seed = 1, classes = 2) {
  set.seed(seed)
  x <- matrix(runif(n * d), n, d)
  s <- sin(3 * x[, 1]) + x[, 2] + rnorm(n, sd = 0.2)
  y <- if (classes == 2) factor(ifelse(s > 1, "b", "a"))
       else factor(c("u", "v", "w")[cut(s, quantile(s, c(0, 1 / 3, 2 / 3, 1)), labels = FALSE,
                                       include.lowest = TRUE)])
  list(x = x, y = y)
}
ctl0 <- hgk_control(maxit = 0, split = c(0.3, 0.3))
gauss_gram <- function(g, x, z = x) {
  D <- outer(rowSums(x^2), rowSums(z^2), "+") - 2 * x %*% t(z)
  exp(-g * pmax(D, 0))
}

test_that("maxit = 0, one (gamma, lambda), refit: kernel_ridge / kernel_svm, Gaussian kernel", {
  g <- 2.5; l <- 1e-3
  # regression: the decision is kernel ridge on y scaled to [-1, 1] with the training range
  r <- reg_data(n = 150, seed = 61)
  n <- length(r$y)
  fit <- hgk(r$x, r$y, depth = 1, gamma = g, lambda = l, final = "refit", folds = 3, control = ctl0, baseline = FALSE, loss = "ls")
  expect_length(fit$models, 1L)
  expect_equal(fit$models[[1]]$gamma, g)
  expect_equal(fit$models[[1]]$lambda, l)
  expect_equal(kernlearn:::.hgk_params(learned_kernel(fit)), rep(1, 4))
  ys <- 2 * (r$y - min(r$y)) / diff(range(r$y)) - 1
  kr <- kernel_ridge(r$x, ys, kernel = gaussian_kernel(g), lambda = n * l)
  set.seed(62)
  xn <- matrix(runif(40 * 4, -0.2, 1.2), 40, 4)
  dec <- predict(fit, xn, type = "decision")
  expect_equal(dec, predict(kr, xn), tolerance = 1e-10)
  resp <- predict(fit, xn)
  if (is.finite(fit$clip)) dec <- pmin(pmax(dec, -1 - 2 * fit$clip), 1 + 2 * fit$clip)
  expect_equal(resp, min(r$y) + (dec + 1) / 2 * diff(range(r$y)), tolerance = 1e-12)
  # ... and the LS-SVM of an independent computation
  sol <- ls_svm_r(gauss_gram(g, fit$x), matrix(ys), n * l)
  expect_equal(unname(fit$models[[1]]$alpha), sol$alpha, tolerance = 1e-8)
  expect_equal(fit$models[[1]]$bias, sol$bias, tolerance = 1e-8)

  # two classes: +-1 targets in both
  cd <- cls_data(n = 150, seed = 63)
  fit <- hgk(cd$x, cd$y, depth = 1, gamma = g, lambda = l, final = "refit", folds = 3,
             control = ctl0, baseline = FALSE, loss = "ls")
  kr <- kernel_ridge(cd$x, cd$y, kernel = gaussian_kernel(g), lambda = n * l)
  expect_equal(predict(fit, xn, type = "decision"), predict(kr, xn, type = "decision"),
               tolerance = 1e-10)
  expect_identical(predict(fit, xn), predict(kr, xn))
  # three classes: one-vs-all outputs sharing the kernel
  c3 <- cls_data(n = 150, seed = 64, classes = 3)
  fit <- hgk(c3$x, c3$y, depth = 1, gamma = g, lambda = l, final = "refit", folds = 3,
             control = ctl0, baseline = FALSE, loss = "ls")
  kr <- kernel_ridge(c3$x, c3$y, kernel = gaussian_kernel(g), lambda = n * l)
  expect_equal(predict(fit, xn, type = "decision"), predict(kr, xn, type = "decision"),
               tolerance = 1e-10)
  expect_identical(predict(fit, xn), predict(kr, xn))
  # hinge loss: kernel_svm with cost 1 / (2 n lambda)
  fit <- hgk(cd$x, cd$y, depth = 1, gamma = g, lambda = l, final = "refit", folds = 3,
             loss = "hinge", control = ctl0, baseline = FALSE)
  ks <- kernel_svm(cd$x, cd$y, kernel = gaussian_kernel(g), cost = 1 / (2 * n * l))
  expect_equal(predict(fit, xn, type = "decision"), predict(ks, xn, type = "decision"),
               tolerance = 1e-6)
  expect_identical(predict(fit, xn), predict(ks, xn))
  expect_s3_class(fit$models[[1]]$svm, "kernel_svm")
})

test_that("the refit's C-SVM validates its own width and cost on the learned kernel", {
  cd <- cls_data(n = 150, seed = 145)
  set.seed(146)
  fit <- hgk(cd$x, cd$y, depth = 1, final = "refit", loss = "hinge", folds = 3,
             control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE)
  tab <- fit$svm_cv
  m <- fit$models[[1]]
  expect_true(all(c("gamma", "cost", "mean", "extended") %in% names(tab)))
  # the widths of the least-squares grid, the costs of its penalties for the 100 rows of a fold
  expect_false(any(tab$extended))
  first <- fit$refit_cv[!fit$refit_cv$extended, ]
  expect_setequal(unique(tab$gamma), unique(first$gamma))
  expect_equal(sort(unique(tab$cost)), sort(1 / (2 * 100 * unique(first$lambda))))
  # the best point, its cost rescaled to all 150 rows (the same lambda)
  b <- tab[which.min(tab$mean), ]
  expect_equal(m$svm$cost, b$cost * 100 / 150)
  expect_equal(m$svm$kernel$gamma, b$gamma)
  for (el in c("weights", "nodes", "node_weights")) expect_equal(m$svm$kernel[[el]], m$kernel[[el]])
  # two classes: the criterion is the squared error of the decision values clipped to [-1, 1];
  # recomputed with plain kernel_svm fits on the same folds (equal up to the solver's
  # tolerance: the path's solves are warm-started)
  expect_match(attr(tab, "criterion"), "clipped")
  foldid <- attr(tab, "foldid")
  expect_length(foldid, 150L)
  lse <- vapply(1:3, function(f) {
    tr <- foldid != f
    ks <- kernel_svm(fit$x[tr, ], cd$y[tr], kernel = m$svm$kernel, cost = b$cost, scale = "none")
    dec <- predict(ks, fit$x[!tr, ], type = "decision")
    mean((pmin(pmax(dec, -1), 1) - ifelse(cd$y[!tr] == "b", 1, -1))^2)
  }, 0)
  expect_equal(mean(lse), b$mean, tolerance = 0.01)
  # the refit is that C-SVM on all rows
  ks <- kernel_svm(fit$x, cd$y, kernel = m$svm$kernel, cost = m$svm$cost, scale = "none")
  xn <- matrix(runif(40 * 4), 40, 4)
  expect_equal(predict(fit, xn, type = "decision"),
               predict(ks, sweep(sweep(xn, 2, apply(cd$x, 2, min)), 2,
                                 apply(cd$x, 2, function(v) diff(range(v))), "/"),
                       type = "decision"), tolerance = 1e-6)
  expect_output(print(fit), "C-SVM refit on all rows, gamma [0-9.e-]+, cost [0-9.e-]+ \\(by 3-fold CV\\)")
  # three classes: the misclassification rate
  c3 <- cls_data(n = 150, seed = 147, classes = 3)
  f3 <- hgk(c3$x, c3$y, depth = 1, final = "refit", loss = "hinge", folds = 3,
            control = hgk_control(maxit = 0, split = c(0.3, 0.3)), baseline = FALSE)
  expect_identical(attr(f3$svm_cv, "criterion"), "misclassification rate")
  b3 <- f3$svm_cv[which.min(f3$svm_cv$mean), ]
  expect_equal(f3$models[[1]]$svm$cost, b3$cost * 100 / 150)
  # costs far too small: the largest wins, and the grid stays as it is (the least-squares
  # grid grows past its end); the refit takes the best point of the first grid
  fit <- hgk(cd$x, cd$y, depth = 1, final = "refit", loss = "hinge", folds = 3,
             lambda = c(1, 0.5), control = hgk_control(maxit = 0), baseline = FALSE)
  tab <- fit$svm_cv
  expect_true(any(fit$refit_cv$extended))
  expect_false(any(tab$extended))
  expect_null(attr(tab, "extended"))
  expect_equal(sort(unique(tab$cost)), 1 / (2 * 100 * c(1, 0.5)))
  expect_setequal(unique(tab$gamma), unique(fit$refit_cv$gamma[!fit$refit_cv$extended]))
  expect_true(any(abs(tab$cost - fit$models[[1]]$svm$cost * 150 / 100) < 1e-9 * tab$cost))
  # least squares alone has no C-SVM table
  fit <- hgk(cd$x, cd$y, depth = 1, final = "refit", loss = "ls", folds = 3,
             control = hgk_control(maxit = 0), baseline = FALSE)
  expect_null(fit$svm_cv)
})

test_that("a C-SVM grid's growth is said with its costs on the scale of all rows", {
  growth <- kernlearn:::.hgk_svm_growth
  tab <- expand.grid(gamma = c(1, 2, 4), cost = c(1, 10))
  expect_null(growth(tab, c(1, 2, 4), c(1, 10), 0.8))
  up <- rbind(tab, data.frame(gamma = c(8, 4), cost = c(10, 100)))
  expect_identical(growth(up, c(1, 2, 4), c(1, 10), 0.8),
                   "grid extended past a winning edge: widths up to 8, costs up to 80")
  down <- rbind(tab, data.frame(gamma = 0.5, cost = 0.1))
  expect_identical(growth(down, c(1, 2, 4), c(1, 10), 0.5),
                   "grid extended past a winning edge: widths down to 0.5, costs down to 0.05")
})

test_that("the refit's least-squares grid grows past a winning end, as if it had been given", {
  # a noise-free response: the smallest penalty wins, and smaller ones win again
  set.seed(171)
  x <- matrix(runif(150 * 3), 150, 3)
  y <- sin(4 * x[, 1]) + x[, 2]^2
  fit_at <- function(lambda, extend, gamma = c(1, 2)) {
    set.seed(172)
    hgk(x, y, depth = 1, gamma = gamma, lambda = lambda, final = "refit", folds = 3,
        control = hgk_control(maxit = 0, split = c(0.3, 0.3), extend = extend),
        baseline = FALSE, loss = "ls")
  }
  fit <- fit_at(c(1e-2, 1e-3), 2)
  tab <- fit$refit_cv
  expect_true(all(c("gamma", "lambda", "error", "extended") %in% names(tab)))
  # two penalties below the grid (ratio 10), and with the width 2 at its end, one width past
  # it (ratio 2) that did not validate better, every point on the grown grid
  expect_equal(sort(unique(tab$lambda)), c(1e-5, 1e-4, 1e-3, 1e-2))
  expect_equal(sort(unique(tab$gamma)), c(1, 2, 4))
  expect_equal(nrow(tab), 12L)
  expect_equal(tab$extended, tab$lambda < 1e-3 | tab$gamma > 2)
  expect_match(attr(tab, "extended"), "widths up to 4, penalties down to 1e-05")
  b <- tab[which.min(tab$error), ]
  expect_equal(c(fit$models[[1]]$gamma, fit$models[[1]]$lambda), c(b$gamma, b$lambda))
  expect_output(print(fit), "grid extended past a winning edge: widths up to 4")
  # the errors of the grown grid are those of the whole grid given at once (same folds)
  all_at_once <- fit_at(c(1e-5, 1e-4, 1e-3, 1e-2), 0, c(1, 2, 4))$refit_cv
  expect_false(any(all_at_once$extended))
  expect_null(attr(all_at_once, "extended"))
  key <- function(t) paste(t$gamma, signif(t$lambda, 6))
  expect_setequal(key(tab), key(all_at_once))
  expect_equal(tab$error[match(key(all_at_once), key(tab))], all_at_once$error,
               tolerance = 1e-12)
  # extend = 0 keeps the grid; widths grow by their own ratio while they validate better
  expect_false(any(fit_at(c(1e-2, 1e-3), 0)$refit_cv$extended))
  w <- fit_at(1e-4, 2, c(0.5, 1))$refit_cv
  expect_equal(w$gamma, c(0.5, 1, 2, 4))
  expect_equal(w$extended, w$gamma > 1)
  expect_lt(w$error[3], w$error[2])
  expect_gt(w$error[4], w$error[3])
  # a grid given in decreasing order (as the tuned Gaussian's widths are) grows at the end
  # that wins: the largest width, 1, here
  ys <- 2 * (y - min(y)) / diff(range(y)) - 1
  ctx <- list(x = x, Y = matrix(ys), y = ys, task = "regression", threads = 1L,
              opts = list(gammas = c(1, 0.5)))
  rc <- kernlearn:::.hgk_refit_grid(ctx, list(kernel = hierarchical_gaussian_kernel(rep(1, 3))),
                                    0L, 1e-4, "test", foldid = rep(1:3, 50), extend = 2L)
  expect_equal(rc$table$gamma, c(0.5, 1, 2, 4))
  expect_equal(rc$gammas, c(0.5, 1))
})

test_that("maxit = 0, final = \"average\": the mean of LS-SVMs fitted outside each fold", {
  g <- 3; l <- 2e-3
  cd <- cls_data(n = 150, seed = 65)
  set.seed(66)
  fit <- hgk(cd$x, cd$y, depth = 1, gamma = g, lambda = l, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls")
  expect_length(fit$models, 3L)
  # the training rows of the folds: each row is left out by exactly one model
  cnt <- tabulate(unlist(lapply(fit$models, `[[`, "rows")), 150)
  expect_true(all(cnt == 2L))
  Y <- ifelse(cd$y == "b", 1, -1)
  xn <- matrix(runif(30 * 4), 30, 4)
  # predict() scales new rows with the training range, as fit$x was scaled
  xs <- sweep(sweep(xn, 2, apply(cd$x, 2, min)), 2, apply(cd$x, 2, function(v) diff(range(v))), "/")
  decs <- lapply(fit$models, function(m) {
    sol <- ls_svm_r(gauss_gram(g, fit$x[m$rows, ]), matrix(Y[m$rows]), length(m$rows) * l)
    expect_equal(unname(m$alpha), sol$alpha, tolerance = 1e-8)
    expect_equal(m$bias, sol$bias, tolerance = 1e-8)
    gauss_gram(g, xs, fit$x[m$rows, ]) %*% sol$alpha + sol$bias
  })
  expect_equal(predict(fit, xn, type = "decision"), as.vector(Reduce(`+`, decs) / 3),
               tolerance = 1e-8)
  # the CV error is the paper's: the MSE of the held-out decisions clipped to [-1, 1]
  errs <- vapply(fit$models, function(m) {
    te <- setdiff(seq_len(150), m$rows)
    d <- gauss_gram(g, fit$x[te, ], fit$x[m$rows, ]) %*% m$alpha + m$bias
    mean((pmin(pmax(d, -1), 1) - Y[te])^2)
  }, numeric(1))
  expect_equal(as.vector(attr(fit$cv, "folds")), errs, tolerance = 1e-10)
  expect_equal(fit$cv$error, mean(errs), tolerance = 1e-10)
  # without a grid, (gamma, lambda) come from the documented default grids
  set.seed(67)
  fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls")
  for (m in fit$models) {
    expect_true(any(abs(m$gamma / m$gamma0 - c(0.25, 0.5, 1, 2, 4, 8)) < 1e-12))
    n1 <- floor(0.3 * length(m$rows))
    expect_true(any(abs(m$lambda / exp(seq(log(1e-3 / n1), log(0.1), length.out = 6)) - 1) < 1e-10))
  }
  fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average", gamma = c(0.5, 7), lambda = c(1e-4, 0.05),
             control = ctl0, baseline = FALSE, loss = "ls")
  for (m in fit$models) {
    expect_true(m$gamma %in% c(0.5, 7))
    expect_true(m$lambda %in% c(1e-4, 0.05))
  }
})

test_that("a user tree is kept, starts at its weights and with maxit = 0 is kernel ridge with it", {
  r <- reg_data(n = 160, d = 5, seed = 68)
  k <- k_d3
  fit <- hgk(r$x, r$y, kernel = k, gamma = 1.3, lambda = 1e-3, final = "refit", folds = 3,
             control = ctl0, baseline = FALSE, loss = "ls")
  expect_identical(fit$architecture$depth, 3)
  kl <- learned_kernel(fit)
  expect_s3_class(kl, "kl_hierarchical_gaussian_kernel")
  expect_equal(kernlearn:::.hgk_params(kl), kernlearn:::.hgk_params(k))
  expect_equal(kl$gamma, 1.3)
  expect_equal(kl$nodes[[3]], k$nodes[[3]])
  expect_s3_class(kl$nodes[[1]], "kl_hierarchical_gaussian_kernel")
  ys <- 2 * (r$y - min(r$y)) / diff(range(r$y)) - 1
  sol <- ls_svm_r(gram_r(kl, fit$x, fit$x), matrix(ys), 160 * 1e-3)
  expect_equal(unname(fit$models[[1]]$alpha), sol$alpha, tolerance = 1e-8)
  # and learning moves the weights of every level of the tree
  set.seed(69)
  fit <- hgk(r$x, r$y, kernel = k, final = "refit", folds = 3,
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  p <- kernlearn:::.hgk_params(learned_kernel(fit))
  expect_length(p, length(kernlearn:::.hgk_params(k)))
  expect_gt(max(abs(log(abs(p)) - log(kernlearn:::.hgk_params(k)))), 1e-3)
})

# ---- the optimisation ------------------------------------------------------------------------

# Pairs (row, previous row) of a trace with the previous row in the same split (after the last
# reshuffle row) and not the final selection.
trace_pairs <- function(tr) {
  i <- seq_len(nrow(tr))[-1L]
  i[tr$kind[i] %in% c("gradient", "annealing") &
      !(tr$kind[i - 1L] %in% c("reshuffle", "final selection"))]
}

# A large penalty makes the objective flat enough that gradient steps stall and annealing runs.
test_that("annealing at temperature 0 never accepts an increase; a rejection changes nothing", {
  cd <- cls_data(n = 150, seed = 2)
  n_anneal <- 0
  for (grad in c("bilevel", "fixed")) {
    set.seed(3)
    fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average", gradient = grad, lambda = 0.1,
               control = hgk_control(temperature = 0, maxit = 30, anneal_steps = 10,
                                     patience = 100, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
    for (m in fit$models) {
      tr <- m$trace
      expect_identical(names(tr), c("step", "kind", "accepted", "risk", "error", "seconds"))
      i <- trace_pairs(tr)
      ann <- i[tr$kind[i] == "annealing"]
      if (grad == "fixed") {
        # the last proposal of a phase carries the bilevel risk of the new weights
        last <- ann[!(ann + 1L) %in% ann]
        ann <- setdiff(ann, last)
      }
      n_anneal <- n_anneal + length(ann)
      acc <- ann[tr$accepted[ann]]
      rej <- ann[!tr$accepted[ann]]
      expect_true(all(tr$risk[acc] <= tr$risk[acc - 1L] * (1 + 1e-12)))
      expect_true(all(abs(tr$risk[rej] - tr$risk[rej - 1L]) <= 1e-12 * tr$risk[rej - 1L]))
      expect_true(all(tr$error[rej] == tr$error[rej - 1L]))
      # a successful gradient step lowers the objective (bilevel: the trace risk)
      gs <- i[tr$kind[i] == "gradient" & tr$accepted[i]]
      if (grad == "bilevel") expect_true(all(tr$risk[gs] < tr$risk[gs - 1L]))
      # phases have at most anneal_steps proposals, at the step of a failed gradient step
      ph <- table(tr$step[tr$kind == "annealing"])
      expect_true(all(ph <= 10))
      fails <- tr$step[tr$kind == "gradient" & !tr$accepted]
      expect_setequal(as.integer(names(ph)), fails)
      expect_lte(max(tr$step), 30)
    }
  }
  expect_gt(n_anneal, 50)  # the checks above saw annealing proposals
})

test_that("at a high temperature annealing accepts increases (the check above can fail)", {
  cd <- cls_data(n = 150, seed = 2)
  set.seed(3)
  fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average", lambda = 0.1,
             control = hgk_control(temperature = 100, cooling = 1, maxit = 30, anneal_steps = 10,
                                   patience = 100, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  up <- sum(vapply(fit$models, function(m) {
    tr <- m$trace
    i <- trace_pairs(tr)
    a <- i[tr$kind[i] == "annealing" & tr$accepted[i]]
    sum(tr$risk[a] > tr$risk[a - 1L] * (1 + 1e-12))
  }, numeric(1)))
  expect_gt(up, 0)
})

test_that("reshuffles and stopping follow patience and reshuffles", {
  cd <- cls_data(n = 150, seed = 4)
  for (rs in 0:1) {
    set.seed(5)
    fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average",
               control = hgk_control(maxit = 30, patience = 1, reshuffles = rs,
                                     split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
    for (m in fit$models) {
      tr <- m$trace
      expect_identical(sum(tr$kind == "reshuffle"), m$info$reshuffles)
      expect_lte(m$info$reshuffles, rs)
      expect_identical(max(tr$step), m$info$steps)
      expect_identical(sum(tr$kind == "start"), 1L)
      expect_identical(as.character(tail(tr$kind, 1)), "final selection")
      # with patience 1 every step without a better D3 error reshuffles or ends the run
      if (m$info$stop == "maxit reached") expect_identical(m$info$steps, 30L)
      else expect_match(m$info$stop, "no better early-stopping error")
    }
    expect_true(any(vapply(fit$models, function(m) m$info$steps < 30L, logical(1))))
  }
})

strip_times <- function(f) {
  f$seconds <- NULL
  f$call <- NULL
  f$models <- lapply(f$models, function(m) {
    m$trace$seconds <- NULL
    m$info$seconds <- NULL
    m
  })
  f
}

test_that("the same seed gives the same model, another seed another one", {
  cd <- cls_data(n = 240, d = 5, seed = 71)
  fitit <- function(seed, ...) {
    set.seed(seed)
    hgk(cd$x, cd$y, nodes = 3, folds = 3, final = "average", control = hgk_control(maxit = 10), ..., baseline = FALSE, loss = "ls")
  }
  a <- fitit(7)
  b <- fitit(7)
  expect_identical(predict(a, cd$x, type = "decision"), predict(b, cd$x, type = "decision"))
  expect_identical(strip_times(a), strip_times(b))
  c2 <- fitit(8)
  expect_false(isTRUE(all.equal(kernlearn:::.hgk_params(learned_kernel(a)),
                                kernlearn:::.hgk_params(learned_kernel(c2)))))
})

test_that("1 and 2 threads give the same model (several kernel and Cholesky tiles)", {
  # 2600 rows: the final learning run's D1 has 1040 rows, enough for it to use both threads
  r <- reg_data(n = 2600, d = 4, seed = 72)
  fitit <- function(threads) {
    set.seed(9)
    hgk(r$x, r$y, depth = 1, final = "refit", folds = 2, lambda = 1e-3, threads = threads,
        control = hgk_control(maxit = 4, anneal_steps = 2), baseline = FALSE, loss = "ls")
  }
  a <- fitit(1)
  b <- fitit(2)
  expect_equal(strip_times(a), strip_times(b), tolerance = 1e-12)
  expect_equal(predict(a, r$x, type = "decision"),
               predict(b, r$x, type = "decision", threads = 2), tolerance = 1e-12)
})

test_that("the cross-validation's learning runs side by side give the runs' results one by one", {
  # threads = 2: the runs of the folds and architectures are tasks on two threads; threads = 1:
  # one after another. Also the same draws of random numbers (the C-SVMs' probability models
  # take seeds between the runs').
  cd <- cls_data(n = 180, d = 4, seed = 74, classes = 3)
  fitit <- function(threads, final) {
    set.seed(12)
    f <- hgk(cd$x, cd$y, folds = 3, loss = "hinge", probability = TRUE, final = final,
             threads = threads, control = hgk_control(maxit = 3, anneal_steps = 2))
    list(fit = strip_times(f), seed = .Random.seed,
         prob = predict(f, cd$x, type = "prob", threads = threads))
  }
  for (final in c("average", "refit")) {
    a <- fitit(1L, final)
    b <- fitit(2L, final)
    expect_identical(a$seed, b$seed)
    expect_identical(a$prob, b$prob)
    expect_identical(a$fit$cv, b$fit$cv)
    expect_identical(a$fit$selection, b$fit$selection)
    if (final == "average") {
      expect_length(a$fit$models, 3L)
      expect_identical(lapply(a$fit$models, `[[`, "trace"), lapply(b$fit$models, `[[`, "trace"))
      expect_identical(lapply(a$fit$models, `[[`, "kernel"), lapply(b$fit$models, `[[`, "kernel"))
    }
  }
})

test_that("precision = \"single\" gives the double objective to float accuracy", {
  r <- reg_data(n = 400, d = 6, seed = 73)
  fitit <- function(precision, maxit) {
    set.seed(11)
    hgk(r$x, r$y, nodes = 3, final = "average", folds = 2, lambda = 1e-3,
        control = hgk_control(maxit = maxit, anneal_steps = 2, precision = precision),
        baseline = FALSE, loss = "ls", candidates = 3)
  }
  # at the start weights (the same width and penalty, chosen in double): the risk on D2 of
  # the single-precision passes is that of the double ones to float accuracy
  a <- fitit("double", 1)
  b <- fitit("single", 1)
  for (f in seq_along(a$models)) {
    ra <- a$models[[f]]$trace$risk[1]
    rb <- b$models[[f]]$trace$risk[1]
    expect_lt(abs(ra - rb) / ra, 1e-5)
    expect_false(identical(ra, rb))  # the single-precision passes did run
    expect_identical(a$models[[f]]$gamma0, b$models[[f]]$gamma0)
  }
  # a whole fit runs and predicts as well as the double one on held-out rows
  s2 <- fitit("single", 10)
  d2 <- fitit("double", 10)
  te <- reg_data(n = 300, d = 6, seed = 74)
  mse <- function(m) mean((predict(m, te$x) - te$y)^2)
  expect_lt(mse(s2), 1.2 * mse(d2))
  # the default is single precision; print() names the double-precision passes only
  expect_output(print(d2), "double-precision passes")
  expect_false(any(grepl("precision passes", capture.output(print(s2)))))
  expect_identical(hgk_control(precision = "double")$precision, "double")
  expect_identical(hgk_control()$precision, "single")
  expect_error(hgk_control(precision = "half"), "'precision' must be one of")
})

test_that("on Friedman data the noise columns get much less relevance than the signal", {
  fried <- function(n, seed) {
    set.seed(seed)
    x <- matrix(runif(n * 10), n, 10)
    y <- 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] + 5 * x[, 5] +
      rnorm(n)
    list(x = x, y = y)
  }
  for (s in 1:2) {
    tr <- fried(500, s)
    te <- fried(1000, 100 + s)
    set.seed(200 + s)
    fit <- hgk(tr$x, tr$y, depth = 1, folds = 3, final = "average", control = hgk_control(maxit = 30), baseline = FALSE, loss = "ls")
    r <- fit$relevance
    expect_named(r, colnames(fit$x))
    # the nonlinear inputs x1..x3 beat every pure-noise input (x6..x10); linear x4, x5 need
    # little curvature, so they are not compared one by one
    expect_lt(max(r[6:10]), min(r[1:3]))
    expect_lt(mean(r[6:10]), 0.4 * mean(r[1:3]))
    # the start kernel gives every column the same relevance; learning improves the test error
    set.seed(200 + s)
    fit0 <- hgk(tr$x, tr$y, depth = 1, folds = 3, final = "average", control = hgk_control(maxit = 0), baseline = FALSE, loss = "ls")
    expect_lt(diff(range(fit0$relevance)) / max(fit0$relevance), 1e-12)
    mse <- mean((predict(fit, te$x) - te$y)^2)
    mse0 <- mean((predict(fit0, te$x) - te$y)^2)
    expect_lt(mse, 0.75 * mse0)
  }
})

# ---- architectures ---------------------------------------------------------------------------

test_that("depth-2 start kernels deal the columns as documented", {
  r <- reg_data(n = 150, d = 4, seed = 81)
  blocks_of <- function(nodes, saturation = NULL) {
    set.seed(82)
    hgk(r$x, r$y, nodes = nodes, saturation = saturation, final = "refit", gamma = 1,
        lambda = 0.01, control = ctl0, baseline = FALSE, loss = "ls")$start_kernel
  }
  k <- blocks_of(2)  # saturation 1: a partition of the columns
  expect_identical(sort(unlist(k$nodes)), 1:4)
  expect_equal(k$node_weights, rep(sqrt(1 / 2), 2))
  expect_equal(unname(unlist(k$weights)), rep(1, 4))
  k <- blocks_of(6, saturation = 1.5)  # 6 columns for 6 nodes: one each, all columns seen
  expect_length(k$nodes, 6L)
  expect_true(all(lengths(k$nodes) == 1L))
  expect_setequal(unlist(k$nodes), 1:4)
  expect_equal(k$node_weights, rep(sqrt(1 / 6), 6))
  k <- blocks_of(2, saturation = 2)  # 8 columns wrapped around: each node sees all 4
  expect_true(all(vapply(k$nodes, function(b) identical(b, 1:4), logical(1))))
  fit <- hgk(r$x, r$y, nodes = 2, gamma = 1, lambda = 0.01, final = "refit", control = ctl0, baseline = FALSE, loss = "ls")
  expect_identical(fit$architecture$label, "depth 2, 2 nodes")
  expect_null(fit$cv)
})

test_that("the architecture is chosen by cross-validation among the candidates", {
  cd <- cls_data(n = 150, d = 4, seed = 83)
  set.seed(84)
  fit <- hgk(cd$x, cd$y, candidates = c(0, 2), folds = 3, final = "average",
             control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_identical(fit$cv$architecture, c("depth 1", "depth 2, 2 nodes"))
  expect_identical(dim(attr(fit$cv, "folds")), c(2L, 3L))
  expect_equal(fit$cv$error, rowMeans(attr(fit$cv, "folds")))
  best <- which.min(fit$cv$error)
  expect_identical(fit$architecture$label, fit$cv$architecture[best])
  expect_length(fit$models, 3L)
  for (m in fit$models) expect_identical(is.null(m$kernel$nodes), best == 1L)
  # refit: the same CV table, one model on all rows
  set.seed(84)
  fit2 <- hgk(cd$x, cd$y, candidates = c(0, 2), folds = 3, final = "refit",
              control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_equal(fit2$cv, fit$cv)
  expect_length(fit2$models, 1L)
  expect_identical(fit2$models[[1]]$rows, seq_len(150))
  expect_s3_class(fit2$refit_cv, "data.frame")
})

# ---- predict ---------------------------------------------------------------------------------

test_that("predict gives classes, decisions and (hinge) probabilities", {
  c3 <- cls_data(n = 150, seed = 91, classes = 3)
  set.seed(92)
  fit <- hgk(c3$x, c3$y, depth = 1, folds = 3, final = "average",
             control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  cls <- predict(fit, c3$x)
  expect_s3_class(cls, "factor")
  expect_identical(levels(cls), c("u", "v", "w"))
  expect_identical(predict(fit), cls)
  dec <- predict(fit, c3$x, type = "decision")
  expect_identical(dim(dec), c(150L, 3L))
  expect_identical(colnames(dec), c("u", "v", "w"))
  expect_identical(cls, factor(c("u", "v", "w")[max.col(dec, "first")], levels = c("u", "v", "w")))
  expect_gt(mean(cls == c3$y), 0.7)
  expect_error(predict(fit, c3$x, type = "prob"), "not probabilities")
  expect_error(predict(fit, c3$x, type = "response"), "for regression")
  # two classes: one decision column, positive meaning the second level
  cd <- cls_data(n = 150, seed = 93)
  set.seed(94)
  fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average",
             control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  dec <- predict(fit, cd$x, type = "decision")
  expect_true(is.numeric(dec) && is.null(dim(dec)))
  expect_identical(predict(fit, cd$x), factor(ifelse(dec > 0, "b", "a"), levels = c("a", "b")))
  # hinge with Platt probabilities: rows sum to 1, the class is the most probable one
  set.seed(95)
  fit <- hgk(c3$x, c3$y, depth = 1, folds = 3, final = "average", loss = "hinge", probability = TRUE,
             control = hgk_control(maxit = 2, split = c(0.3, 0.3)), baseline = FALSE)
  expect_identical(attr(fit$cv, "criterion"), "misclassification rate")
  P <- predict(fit, c3$x, type = "prob")
  expect_identical(dim(P), c(150L, 3L))
  expect_identical(colnames(P), c("u", "v", "w"))
  expect_true(all(P >= 0 & P <= 1))
  expect_equal(rowSums(P), rep(1, 150), tolerance = 1e-8)
  expect_identical(predict(fit, c3$x), factor(c("u", "v", "w")[max.col(P, "first")],
                                               levels = c("u", "v", "w")))
  expect_identical(ncol(predict(fit, c3$x, type = "decision")), 3L)  # the pairwise decisions
  set.seed(95)
  fit <- hgk(c3$x, c3$y, depth = 1, folds = 3, final = "average", loss = "hinge",
             control = hgk_control(maxit = 2, split = c(0.3, 0.3)), baseline = FALSE)
  expect_error(predict(fit, c3$x, type = "prob"), "probability = TRUE")
  expect_gt(mean(predict(fit, c3$x) == c3$y), 0.7)
})

test_that("regression predictions stay in the (widened) training range; new data are matched by column", {
  r <- reg_data(n = 150, d = 4, seed = 96)
  colnames(r$x) <- c("a", "b", "c", "d")
  set.seed(97)
  fit <- hgk(r$x, r$y, depth = 1, folds = 3, final = "average", control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  set.seed(98)
  far <- matrix(runif(200 * 4, -3, 4), 200, 4, dimnames = list(NULL, colnames(r$x)))
  p <- predict(fit, far)
  # within the training range, widened by the fraction fit$clip of it that CV chose
  w <- fit$clip
  expect_true(is.finite(w))
  wide <- range(r$y) + c(-1, 1) * w * diff(range(r$y))
  expect_true(all(p >= wide[1] - 1e-12 & p <= wide[2] + 1e-12))
  dec <- predict(fit, far, type = "decision")
  expect_equal(p, min(r$y) + (pmin(pmax(dec, -1 - 2 * w), 1 + 2 * w) + 1) / 2 * diff(range(r$y)))
  expect_lt(mean((predict(fit, r$x) - r$y)^2), 0.1 * var(r$y))
  expect_error(predict(fit, r$x, type = "class"), "regression")
  expect_error(predict(fit, r$x, type = "prob"), "regression")
  # columns by name, in any order, as a matrix or a data.frame
  expect_identical(predict(fit, far[, 4:1]), p)
  expect_identical(predict(fit, as.data.frame(far)), p)
  expect_error(predict(fit, far[, 1:3]), "lacks column")
  expect_error(predict(fit, unname(far[, 1:3])), "3 columns")
})

test_that("regression: how far predictions may go past the training range is chosen by CV", {
  # a response with a long tail: held-out rows beyond a fold's range are reached only past it
  set.seed(131)
  n <- 150
  x <- matrix(runif(n * 2), n, 2)
  y <- exp(4 * x[, 1]) + rnorm(n, sd = 0.05)
  set.seed(132)
  fit <- hgk(x, y, depth = 1, folds = 5, control = hgk_control(maxit = 3), baseline = FALSE)
  cc <- fit$clip_cv
  expect_identical(cc$folds, 5L)
  expect_identical(cc$table$margin, c(0, 0.05, 0.1, 0.2, 0.5, 1))
  expect_identical(fit$clip, cc$margin)
  expect_identical(cc$margin, cc$table$margin[which.min(cc$table$error)])
  expect_gt(fit$clip, 0)
  # the errors by an independent computation: kernel ridge with the final kernel, width and
  # penalty on each fold's fitting rows (the folds of the refit's grid), the held-out decisions
  # clipped to that fold's range of the scaled response widened by each margin
  foldid <- attr(fit$refit_cv, "foldid")
  m <- fit$models[[1L]]
  k <- learned_kernel(fit)
  ys <- 2 * (y - min(y)) / diff(range(y)) - 1
  clipped_error <- function(decs, margin) {
    se <- 0
    for (f in 1:5) {
      te <- foldid == f
      lim <- range(ys[!te]) + c(-1, 1) * margin * diff(range(ys[!te]))
      if (!is.finite(margin)) lim <- c(-Inf, Inf)
      se <- se + sum((pmin(pmax(decs[[f]], lim[1]), lim[2]) - ys[te])^2)
    }
    se / n
  }
  decs <- lapply(1:5, function(f) {
    te <- foldid == f
    kr <- kernel_ridge(fit$x[!te, ], ys[!te], kernel = k, lambda = sum(!te) * m$lambda,
                       scale = "none")
    predict(kr, fit$x[te, , drop = FALSE])
  })
  expect_equal(cc$table$error, vapply(cc$table$margin, clipped_error, 0, decs = decs),
               tolerance = 1e-8)
  # predictions: the decision values clipped to [-1, 1] widened by the margin, on the
  # response's scale
  xn <- cbind(c(0.5, 1, 1.1, 1.5, 3), 0.5)
  dec <- predict(fit, xn, type = "decision")
  w <- fit$clip
  lim <- if (is.finite(w)) c(-1 - 2 * w, 1 + 2 * w) else c(-Inf, Inf)
  expect_equal(predict(fit, xn), min(y) + (pmin(pmax(dec, lim[1]), lim[2]) + 1) / 2 * diff(range(y)))
  expect_gt(max(predict(fit, xn)), max(y))
  # never further past the range than its width, however far the inputs
  xf <- cbind(c(-50, -5, 5, 50), c(50, -50, 0.5, 0.5))
  expect_true(all(abs(predict(fit, xf) - mean(range(y))) <= 1.5 * diff(range(y)) + 1e-9))
  expect_output(print(fit), "predictions (clipped to the training range of the response widened by|not clipped)")
  # final = "average": the fold models' own held-out decisions
  set.seed(133)
  fa <- hgk(x, y, depth = 1, folds = 5, final = "average", control = hgk_control(maxit = 3),
            baseline = FALSE)
  expect_identical(fa$clip, fa$clip_cv$margin)
  foldid <- rep(NA_integer_, n)
  for (f in 1:5) foldid[-fa$models[[f]]$rows] <- f
  decs <- lapply(1:5, function(f)
    kernlearn:::.hgk_model_decision(fa$models[[f]], fa$x, fa$x[foldid == f, , drop = FALSE], 2L))
  expect_equal(fa$clip_cv$table$error, vapply(fa$clip_cv$table$margin, clipped_error, 0,
                                              decs = decs), tolerance = 1e-10)
  # a response that saturates at both ends is best clipped at its range
  set.seed(134)
  yb <- pmin(pmax(3 * (x[, 1] - 0.5), -1), 1) + rnorm(n, sd = 0.02)
  set.seed(135)
  fb <- hgk(x, yb, depth = 1, folds = 5, control = hgk_control(maxit = 3), baseline = FALSE)
  expect_identical(fb$clip, 0)
  expect_true(all(predict(fb, matrix(runif(400, -1, 2), 200, 2)) <= max(yb) + 1e-12))
  expect_output(print(fb), "predictions clipped to the training range of the response \\(by 5-fold CV")
  # classification has no clipping to choose; a model without the field clips (0)
  cd <- cls_data(n = 150, seed = 136)
  set.seed(137)
  fc <- hgk(cd$x, cd$y, depth = 1, folds = 3, control = hgk_control(maxit = 2), baseline = FALSE)
  expect_null(fc$clip_cv)
  old <- fb
  old$clip <- NULL
  expect_identical(predict(old, x), predict(fb, x))
})

test_that("the formula interface one-hot encodes a factor predictor", {
  set.seed(101)
  n <- 180
  df <- data.frame(u = runif(n), v = runif(n), f = factor(sample(c("p", "q", "r"), n, TRUE)))
  df$y <- factor(ifelse(df$u + (df$f == "q") + rnorm(n, sd = 0.2) > 1, "yes", "no"))
  set.seed(102)
  fit <- hgk(y ~ ., data = df, depth = 1, folds = 3, final = "average",
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_identical(ncol(fit$x), 5L)  # u, v and three indicator columns of f
  expect_identical(names(fit$relevance), colnames(fit$x))
  expect_length(kernlearn:::.hgk_params(learned_kernel(fit)), 5L)
  expect_identical(predict(fit, df[1:20, ]), predict(fit)[1:20])
  expect_gt(mean(predict(fit, df) == df$y), 0.8)
  expect_identical(predict(fit, df[c("f", "v", "u")])[1:5], predict(fit)[1:5])
  bad <- df[1:3, ]
  bad$f <- factor(c("p", "s", "q"))
  expect_error(predict(fit, bad), "not seen in training")
  expect_error(predict(fit, df[c("u", "v")]), "lacks column")
  expect_identical(predict(fit, df[0, ]), factor(character(), levels = c("no", "yes")))
  expect_identical(predict(fit, df[0, ], type = "decision"), numeric())
  expect_error(hgk(y ~ ., data = df, depth = 1, folds = 3, final = "average", control = ctl0, extra = 1, baseline = FALSE, loss = "ls"),
               "unused argument")
})

# ---- the Gaussian start as a safeguard, the loss, small data ----------------------------------

test_that("the Gaussian start joins the cross-validation and wins when the learned kernel is worse", {
  r <- reg_data(n = 160, d = 5, seed = 141)
  n <- 160
  # a start tree that all but ignores the two informative columns, kept as it is (maxit = 0):
  # the equal-weight Gaussian must validate better and be the final kernel
  bad <- hierarchical_gaussian_kernel(c(1e-3, 1e-3, 1, 1, 1))
  set.seed(142)
  fit <- hgk(r$x, r$y, kernel = bad, folds = 4, final = "average", gamma = c(1, 4),
             lambda = c(1e-4, 1e-2), control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_identical(fit$cv$learned, c(TRUE, FALSE))
  expect_identical(dim(attr(fit$cv, "folds")), c(2L, 4L))
  expect_equal(fit$cv$error, rowMeans(attr(fit$cv, "folds")))
  expect_identical(fit$selection$choice, "baseline")
  expect_equal(fit$selection$baseline_error, fit$cv$error[2L])
  expect_equal(fit$selection$learned_error, fit$cv$error[1L])
  expect_lt(fit$selection$baseline_error, fit$selection$learned_error)
  expect_match(fit$selection$reason, "Gaussian start validated better")
  expect_false(fit$architecture$learned)
  expect_output(print(fit), "against the Gaussian start: the Gaussian start validated better")
  # nothing was optimised for the chosen kernel: plot() says why there is no trace
  expect_error(plot(fit), "kernel is the Gaussian start, not learned")
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  expect_identical(plot(fit, which = "relevance"), fit)
  # the baseline's fold models are least-squares SVMs with the Gaussian kernel (equal weights)
  # at their chosen width and penalty; their held-out errors are the table's (independent R)
  Yr <- 2 * (r$y - min(r$y)) / diff(range(r$y)) - 1
  errs <- vapply(fit$models, function(m) {
    expect_equal(unname(kernlearn:::.hgk_params(m$kernel)), rep(1, 5))
    sol <- ls_svm_r(gauss_gram(m$gamma, fit$x[m$rows, ]), matrix(Yr[m$rows]),
                    length(m$rows) * m$lambda)
    expect_equal(unname(m$alpha), sol$alpha, tolerance = 1e-8)
    te <- setdiff(seq_len(n), m$rows)
    d <- gauss_gram(m$gamma, fit$x[te, ], fit$x[m$rows, ]) %*% sol$alpha + sol$bias
    mean((pmin(pmax(d, -1), 1) - Yr[te])^2)
  }, numeric(1))
  expect_equal(attr(fit$cv, "folds")[2L, ], errs, tolerance = 1e-10)
  # final = "refit": the Gaussian start that wins the selection gives way to the tuned
  # Gaussian, the same kernel tuned over a full grid, whatever their errors
  set.seed(142)
  fr <- hgk(r$x, r$y, kernel = bad, folds = 4, loss = "ls",
            control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_false(fr$cv$learned[which.min(fr$cv$error)])
  expect_true(fr$selection$start_won)
  expect_true(fr$selection$tuned)
  expect_identical(fr$selection$choice, "baseline")
  expect_match(fr$selection$reason,
               "the Gaussian start won the selection \\(CV error .*\\); the Gaussian kernel as a least-squares SVM tuned over 6 widths x 6 penalties .*\\(CV error .*\\) is the model")
  tg <- fr$tuned_gaussian
  expect_equal(c(fr$models[[1L]]$gamma, fr$models[[1L]]$lambda), c(tg$gamma, tg$lambda))
  # a start that knows the informative columns beats the equal weights
  good <- hierarchical_gaussian_kernel(c(1, 1, 1e-3, 1e-3, 1e-3))
  set.seed(142)
  fit2 <- hgk(r$x, r$y, kernel = good, folds = 4, final = "refit", gamma = c(1, 4),
              lambda = c(1e-4, 1e-2), control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_identical(fit2$selection$choice, "learned")
  expect_true(fit2$architecture$learned)
  expect_match(fit2$selection$reason, "learned kernel's CV error .* below the Gaussian start's")
  # baseline = FALSE: no comparison, and with one architecture no cross-validation at all
  fit3 <- hgk(r$x, r$y, kernel = bad, final = "refit", gamma = c(1, 4), baseline = FALSE,
              control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_null(fit3$cv)
  expect_null(fit3$selection)
  expect_equal(unname(kernlearn:::.hgk_params(learned_kernel(fit3))), c(1e-3, 1e-3, 1, 1, 1))
  expect_error(hgk(r$x, r$y, depth = 1, baseline = NA), "'baseline' must be TRUE or FALSE")
})

test_that("the Gaussian kernel tuned over widths x costs is the final model when it validates better", {
  # classes: a start tree that all but ignores the two informative columns, kept as it is
  # (maxit = 0), against the Gaussian C-SVM tuned on the same folds
  c2 <- cls_data(n = 200, d = 4, seed = 161)
  bad <- hierarchical_gaussian_kernel(c(1e-3, 1e-3, 1, 1))
  set.seed(162)
  fit <- hgk(c2$x, c2$y, kernel = bad, loss = "hinge", folds = 4,
             control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  tg <- fit$tuned_gaussian
  expect_identical(tg$loss, "hinge")
  expect_identical(max(tg$foldid), 4L)
  # two classes: width and cost are chosen by the clipped squared error of the decision values,
  # as kernel_svm tuned by hand on the same folds chooses them (kl_tune, independent of hgk)
  m1 <- 200 - max(tabulate(tg$foldid))
  t <- exp(seq(log(0.2 * m1^(-1 / 4)), log(5 * (1 + 5 / m1)^4), length.out = 10))
  lam <- exp(seq(log(1e-3 / m1), log(0.1), length.out = 10))
  costs <- sort(1 / (2 * m1 * lam))
  sq <- structure(function(truth, pred) {
    mean((pmin(pmax(pred, -1), 1) - ifelse(truth == "b", 1, -1))^2)
  }, type = "decision")
  # averaged over the candidates' folds and a second draw of folds
  both_draws <- function(x, y, tg, grid, metric = NULL) {
    tu <- kl_tune(kernel_svm, x, y, grid = grid, foldid = tg$foldid, metric = metric,
                  scale = "none", refit = FALSE, extend = 2L)
    f2 <- attr(tg$table, "foldid2")
    expect_identical(sort(unique(f2)), sort(unique(tg$foldid)))
    expect_false(identical(f2, tg$foldid))
    tu2 <- kl_tune(kernel_svm, x, y, grid = list(gamma = sort(unique(tu$results$gamma)),
                                                 cost = sort(unique(tu$results$cost))),
                   foldid = f2, metric = metric, scale = "none", refit = FALSE, extend = 0L)
    r <- tu$results
    r2 <- tu2$results
    avg <- (r$mean + r2$mean[match(paste(r$gamma, r$cost), paste(r2$gamma, r2$cost))]) / 2
    b <- which.min(avg)
    list(tu = tu, b = b, avg = avg[b], gamma = r$gamma[b], cost = r$cost[b])
  }
  ref2 <- both_draws(fit$x, c2$y, tg, list(gamma = 1 / t^2, cost = costs), metric = sq)
  tu <- ref2$tu
  expect_equal(tg$selection_error, ref2$avg)
  expect_equal(c(tg$gamma, tg$cost), c(ref2$gamma, ref2$cost * m1 / 200))
  expect_identical(attr(tg$table, "criterion"), "mean squared error of decisions clipped to [-1, 1]")
  # its error is the misclassification rate at that point (the candidates' criterion): each
  # fold's recomputed with kernel_svm on the fold's rows
  for (k in 1:4) {
    tr <- tg$foldid != k
    sv <- kernel_svm(fit$x[tr, ], c2$y[tr], gamma = ref2$gamma, cost = ref2$cost,
                     scale = "none")
    expect_equal(tg$fold_errors[k], mean(predict(sv, fit$x[!tr, ]) != c2$y[!tr]))
  }
  expect_equal(tg$error, mean(tg$fold_errors))
  # more classes: chosen by the misclassification rate itself
  c3 <- cls_data(n = 180, d = 3, seed = 166, classes = 3)
  set.seed(167)
  fit5 <- hgk(c3$x, c3$y, kernel = hierarchical_gaussian_kernel(c(1, 1, 1)), loss = "hinge",
              folds = 3, control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  tg5 <- fit5$tuned_gaussian
  m5 <- 180 - max(tabulate(tg5$foldid))
  t5 <- exp(seq(log(0.2 * m5^(-1 / 3)), log(5 * (1 + 5 / m5)^3), length.out = 10))
  c5 <- sort(1 / (2 * m5 * exp(seq(log(1e-3 / m5), log(0.1), length.out = 10))))
  ref5 <- both_draws(fit5$x, c3$y, tg5, list(gamma = 1 / t5^2, cost = c5))
  expect_equal(tg5$selection_error, ref5$avg)
  expect_equal(c(tg5$gamma, tg5$cost), c(ref5$gamma, ref5$cost * m5 / 180))
  expect_equal(tg5$fold_errors, unname(ref5$tu$fold_metrics[ref5$b, ]))
  expect_equal(tg5$error, mean(tg5$fold_errors))
  expect_identical(attr(tg5$table, "criterion"), "misclassification rate")
  # the rule: the selection's winner is kept only when its CV error is below the tuned
  # Gaussian's, for classification by more than one standard error of the fold-wise
  # difference
  rule <- function(fit) {
    w <- order(fit$cv$error, seq_len(nrow(fit$cv)))[1L]
    dif <- attr(fit$cv, "folds")[w, ] - fit$tuned_gaussian$fold_errors
    se <- sd(dif) / sqrt(length(dif))
    expect_equal(fit$selection$difference_se, se)
    margin <- if (fit$task == "regression") 0 else se
    expect_equal(fit$selection$margin, margin)
    expect_identical(fit$selection$start_won, !fit$cv$learned[w])
    !fit$cv$learned[w] || !(fit$cv$error[w] < fit$tuned_gaussian$error - margin)
  }
  expect_identical(fit$selection$tuned, rule(fit))
  expect_true(fit$selection$tuned)
  expect_identical(fit$selection$choice, "baseline")
  expect_equal(fit$selection$baseline_error, tg$error)
  # (here the Gaussian start won the selection; the tuned C-SVM is the model)
  expect_true(fit$selection$start_won)
  expect_match(fit$selection$reason, "the Gaussian start won the selection .*; the Gaussian kernel as a C-SVM tuned over 10 widths x 10 costs \\(CV error .*\\) is the model")
  expect_false(fit$architecture$learned)
  expect_output(print(fit), "the tuned Gaussian, chosen over the 2 candidates by 4-fold CV")
  expect_error(plot(fit), "kernel is the Gaussian start, not learned")
  # the final model: the C-SVM with that width and the cost rescaled to all rows
  ref <- kernel_svm(fit$x, c2$y, gamma = tg$gamma, cost = ref2$cost * m1 / 200,
                    scale = "none")
  expect_equal(predict(fit, c2$x, type = "decision"), predict(ref, fit$x, type = "decision"),
               tolerance = 1e-6)
  expect_equal(unname(kernlearn:::.hgk_params(learned_kernel(fit))), rep(1, 4))
  # regression: the least-squares arm over 6 widths x 6 penalties; one grid point's error by
  # an independent R computation
  r <- reg_data(n = 120, d = 3, seed = 163)
  set.seed(164)
  fit2 <- hgk(r$x, r$y, kernel = hierarchical_gaussian_kernel(c(1, 1, 1)), folds = 3,
              control = hgk_control(maxit = 2, split = c(0.3, 0.3)))
  tg2 <- fit2$tuned_gaussian
  expect_identical(tg2$loss, "ls")
  expect_identical(nrow(tg2$table), 36L)
  expect_equal(tg2$error, mean(tg2$fold_errors))
  Yr <- 2 * (r$y - min(r$y)) / diff(range(r$y)) - 1
  i <- 8L
  g <- tg2$table$gamma[i]
  l <- tg2$table$lambda[i]
  e <- 0
  for (f in 1:3) {
    tr <- tg2$foldid != f
    sol <- ls_svm_r(gauss_gram(g, fit2$x[tr, ]), matrix(Yr[tr]), sum(tr) * l)
    dd <- gauss_gram(g, fit2$x[!tr, ], fit2$x[tr, ]) %*% sol$alpha + sol$bias
    e <- e + sum((pmin(pmax(dd, -1), 1) - Yr[!tr])^2)
  }
  expect_equal(tg2$table$error[i], e / 120, tolerance = 1e-8)
  expect_identical(fit2$selection$tuned, rule(fit2))
  # a kernel far better than the Gaussian in every fold is kept
  fq <- function(x) sin(8 * x[, 1]) * x[, 2] > 0.2
  set.seed(165)
  xq <- matrix(runif(300 * 6), 300, 6)
  yq <- factor(ifelse(fq(xq), "p", "q"))
  good <- hierarchical_gaussian_kernel(c(3, 3, 1e-3, 1e-3, 1e-3, 1e-3))
  fit4 <- hgk(xq, yq, kernel = good, loss = "ls", folds = 4,
              control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_false(fit4$selection$tuned)
  expect_identical(fit4$selection$choice, "learned")
  expect_match(fit4$selection$reason, "above by more than one standard error")
  # no tuned Gaussian without the baseline, or with final = "average"
  set.seed(164)
  fit3 <- hgk(r$x, r$y, candidates = c(0, 2), folds = 3, baseline = FALSE,
              control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_null(fit3$tuned_gaussian)
  expect_null(fit3$selection)
})

test_that("regression: the tuned Gaussian is the better of its least-squares SVM and epsilon-SVR", {
  # heavy-tailed noise (t with 1.5 degrees of freedom), which the SVR's linear loss lets go
  set.seed(171)
  n <- 150
  x <- matrix(runif(n * 3), n, 3)
  y <- sin(4 * x[, 1]) + x[, 2]^2 + 0.15 * rt(n, df = 1.5)
  set.seed(271)
  fit <- hgk(x, y, kernel = hierarchical_gaussian_kernel(c(1, 1, 1)), folds = 3,
             control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  tg <- fit$tuned_gaussian
  expect_identical(tg$loss, "svr")
  expect_identical(tg$alternative$loss, "ls")
  expect_lt(tg$error, tg$alternative$error)
  # the SVR's criterion, by kernel_svm on each fold's rows: the squared error of decisions
  # clipped to [-1, 1] on the response scaled to [-1, 1], epsilon 0.1 of its sd
  Y <- 2 * (y - min(y)) / diff(range(y)) - 1
  eps <- 0.1 * sd(Y)
  expect_equal(tg$epsilon, eps)
  m1 <- n - max(tabulate(tg$foldid))
  cost_m1 <- tg$cost * n / m1
  expect_true(any(abs(tg$table$cost - cost_m1) < 1e-9 * cost_m1))
  held <- numeric(n)
  for (k in 1:3) {
    tr <- tg$foldid != k
    sv <- kernel_svm(fit$x[tr, ], Y[tr], gamma = tg$gamma, cost = cost_m1, epsilon = eps,
                     scale = "none", scale_response = FALSE)
    held[!tr] <- predict(sv, fit$x[!tr, ])
    # (the tuning's solves are warm-started along the costs: equal to the solver's tolerance)
    expect_equal(tg$fold_errors[k], mean((pmin(pmax(held[!tr], -1), 1) - Y[!tr])^2),
                 tolerance = 1e-2)
  }
  expect_equal(tg$error, mean(tg$fold_errors))
  expect_lt(max(abs(tg$oof - held)), 0.01)
  # the widths: the least-squares SVM's and its two neighbours on its grid of 6; the costs
  # 2^-3 to 2^5, here grown past the largest (said on the scale of all rows)
  t6 <- exp(seq(log(0.2 * m1^(-1 / 3)), log(5 * (1 + 5 / m1)^3), length.out = 6))
  g6 <- sort(1 / t6^2)
  gl <- tg$alternative$gamma
  j <- which.min(abs(log(g6 / gl)))
  expect_equal(g6[j], gl)
  expect_equal(sort(unique(tg$table$gamma)), gl * (g6[2] / g6[1])^(-1:1))
  expect_equal(sort(unique(tg$table$cost[!tg$table$extended])), 2^seq(-3, 5, by = 2))
  expect_equal(max(tg$table$cost), 2^7)
  expect_identical(attr(tg$table, "extended"),
                   sprintf("grid extended past a winning edge: costs up to %s",
                           format(signif(2^7 * m1 / n, 4))))
  # the final model: that SVR refitted on all rows with the cost rescaled to them, mapped back
  # to the response's scale and clipped as the clipping's CV chose
  expect_identical(fit$loss, "svr")
  expect_true(fit$selection$tuned)
  expect_match(fit$selection$reason, "as an epsilon-SVR tuned over 3 widths x 5 costs \\(the grid extended past a winning edge: costs up to 85.33\\) \\(CV error 0.0313\\) is the model")
  expect_match(fit$selection$reason, "as a least-squares SVM tuned over 6 widths x 6 penalties: CV error")
  ref <- kernel_svm(fit$x, Y, gamma = tg$gamma, cost = tg$cost, epsilon = eps, scale = "none",
                    scale_response = FALSE)
  expect_equal(predict(fit, x, type = "decision"), predict(ref, fit$x), tolerance = 1e-6)
  w <- fit$clip
  dec <- pmin(pmax(predict(ref, fit$x), -1 - 2 * w), 1 + 2 * w)
  expect_equal(predict(fit, x), min(y) + (dec + 1) / 2 * diff(range(y)), tolerance = 1e-6)
  expect_output(print(fit), "epsilon-SVR regression \\(the tuned Gaussian kernel\\)")
  expect_output(print(fit), "predictor: epsilon-SVR refit on all rows")
  expect_s3_class(summary(fit), "summary.hgk")
  # the clipping was chosen on the SVR's own held-out decisions
  cc <- fit$clip_cv
  lim_err <- 0
  for (k in 1:3) {
    te <- tg$foldid == k
    lim <- range(Y[!te])
    lim_err <- lim_err + sum((pmin(pmax(held[te], lim[1]), lim[2]) - Y[te])^2)
  }
  expect_equal(cc$table$error[cc$table$margin == 0], lim_err / n, tolerance = 1e-2)
  # loss = "ls": no SVR arm, and the rest of the fit draws the same random numbers (the
  # learned candidates' errors are those of loss = "auto")
  set.seed(272)
  fa <- hgk(x, y, candidates = c(0, 2), folds = 3,
            control = hgk_control(maxit = 3, split = c(0.3, 0.3)))
  set.seed(272)
  fl <- hgk(x, y, candidates = c(0, 2), folds = 3, loss = "ls",
            control = hgk_control(maxit = 3, split = c(0.3, 0.3)))
  expect_identical(fl$tuned_gaussian$loss, "ls")
  expect_null(fl$tuned_gaussian$alternative)
  expect_false(grepl("SVR", fl$selection$reason))
  expect_identical(fa$cv$error, fl$cv$error)
  expect_false(is.null(fa$tuned_gaussian$alternative))
})

test_that("the learned kernel is kept against the tuned Gaussian: by a margin for classes, below it for regression", {
  # a winner below the tuned Gaussian in the mean, by less than one standard error of the
  # fold-wise difference
  mk <- function(win, gauss) {
    tab <- data.frame(architecture = c("depth 1", "Gaussian (start weights, not learned)"),
                      learned = c(TRUE, FALSE),
                      loss = "ls", error = c(mean(win), mean(gauss) + 0.01),
                      stringsAsFactors = FALSE)
    attr(tab, "folds") <- rbind(win, gauss + 0.01)
    list(table = tab, winner = list(architecture = "depth 1", loss = "ls"),
         selection = list(choice = "learned", learned_error = mean(win),
                          baseline_error = mean(gauss) + 0.01, reason = "r"))
  }
  win <- c(0.10, 0.30, 0.12, 0.25)
  gauss <- c(0.20, 0.22, 0.21, 0.23)
  dif <- win - gauss
  se <- sd(dif) / sqrt(4)
  expect_lt(mean(win), mean(gauss))
  expect_gt(mean(win), mean(gauss) - se)
  tuned <- list(loss = "ls", error = mean(gauss), fold_errors = gauss,
                label = "least-squares SVM tuned over 6 widths x 6 penalties")
  reg <- kernlearn:::.hgk_against_tuned(mk(win, gauss), tuned, "regression")
  expect_false(reg$tuned)
  expect_identical(reg$choice, "learned")
  expect_equal(reg$difference_se, se)
  expect_identical(reg$margin, 0)
  expect_match(reg$reason, "CV error 0.215, above \\(standard error of the difference")
  cls <- kernlearn:::.hgk_against_tuned(mk(win, gauss), tuned, "classification")
  expect_true(cls$tuned)
  expect_identical(cls$choice, "baseline")
  expect_equal(cls$margin, se)
  expect_equal(cls$baseline_error, mean(gauss))
  expect_match(cls$reason, "kept only when below by more than one standard error")
  # a tie goes to the Gaussian in regression too
  tie <- kernlearn:::.hgk_against_tuned(mk(gauss, gauss), tuned, "regression")
  expect_true(tie$tuned)
  expect_match(tie$reason, "validated as well \\(a tie goes to the Gaussian\\)")
  worse <- kernlearn:::.hgk_against_tuned(mk(gauss + 0.05, gauss), tuned, "regression")
  expect_true(worse$tuned)
  expect_match(worse$reason, "validated better \\(CV error 0.215 against 0.265")
  # the Gaussian start as the selection's winner gives way to the tuned Gaussian, even far
  # below it
  st <- mk(win - 0.1, gauss)
  st$winner$architecture <- "Gaussian (start weights, not learned)"
  attr(st$table, "folds") <- rbind(gauss, win - 0.1)
  st$table$error <- rowMeans(attr(st$table, "folds"))
  for (task in c("regression", "classification")) {
    a <- kernlearn:::.hgk_against_tuned(st, tuned, task)
    expect_true(a$start_won)
    expect_true(a$tuned)
    expect_identical(a$choice, "baseline")
    expect_match(a$reason, "^the Gaussian start won the selection \\(CV error 0.0925, ls\\); the Gaussian kernel as a least-squares SVM tuned over 6 widths x 6 penalties \\(CV error 0.215\\) is the model")
  }
  expect_false(reg$start_won)
})

test_that("noisy classes: the C-SVMs' width and cost are chosen by their misclassification rate", {
  # a third of the labels flipped: the decisions barely beat 0, and the clipped squared error
  # at its smallest is above .hgk_noisy_ls
  c2 <- cls_data(n = 200, d = 3, seed = 171)
  set.seed(172)
  flip <- runif(200) < 0.35
  y <- c2$y
  y[flip] <- ifelse(y[flip] == "a", "b", "a")
  set.seed(173)
  fit <- hgk(c2$x, y, depth = 1, loss = "hinge", folds = 4,
             control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  tg <- fit$tuned_gaussian
  tab <- tg$table
  expect_identical(is.null(attr(tab, "extended")), !any(tab$extended))
  expect_gt(min(tab$mean_both), kernlearn:::.hgk_noisy_ls)
  expect_match(attr(tab, "criterion"), "^misclassification rate .*noisy classes")
  # each draw's misclassification rates, by kl_tune's default metric on the same folds
  grid <- list(gamma = sort(unique(tab$gamma)), cost = sort(unique(tab$cost)))
  key <- paste(tab$gamma, tab$cost)
  for (v in list(list(col = "miss", f = tg$foldid), list(col = "miss2", f = attr(tab, "foldid2")))) {
    tu <- kl_tune(kernel_svm, fit$x, y, grid = grid, foldid = v$f, scale = "none",
                  refit = FALSE, extend = 0L)
    expect_equal(tab[[v$col]], tu$results$mean[match(key, paste(tu$results$gamma, tu$results$cost))])
  }
  # the point: the smallest mean of both draws, ties broken by the clipped squared error
  b <- order((tab$miss + tab$miss2) / 2, tab$mean_both)[1L]
  m1 <- 200 - max(tabulate(tg$foldid))
  expect_equal(c(tg$gamma, tg$cost), c(tab$gamma[b], tab$cost[b] * m1 / 200))
  expect_equal(tg$selection_error, (tab$miss[b] + tab$miss2[b]) / 2)
  # its fold errors, recomputed with kernel_svm on each fold's rows
  for (k in 1:4) {
    tr <- tg$foldid != k
    sv <- kernel_svm(fit$x[tr, ], y[tr], gamma = tab$gamma[b], cost = tab$cost[b], scale = "none")
    expect_equal(tg$fold_errors[k], mean(predict(sv, fit$x[!tr, ]) != y[!tr]))
  }
  # the C-SVM on a kernel kept as given (no baseline): its grid in the least-squares folds
  set.seed(174)
  fit2 <- hgk(c2$x, y, depth = 1, loss = "hinge", folds = 4, baseline = FALSE,
              control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  sc <- fit2$svm_cv
  expect_gt(min(sc$mean), kernlearn:::.hgk_noisy_ls)
  expect_match(attr(sc, "criterion"), "noisy classes")
  tu <- kl_tune(kernel_svm, fit2$x, y, grid = list(gamma = sort(unique(sc$gamma)),
                                                  cost = sort(unique(sc$cost))),
                foldid = attr(sc, "foldid"), kernel = learned_kernel(fit2), scale = "none",
                refit = FALSE, extend = 0L)
  expect_equal(sc$miss, tu$results$mean[match(paste(sc$gamma, sc$cost),
                                              paste(tu$results$gamma, tu$results$cost))])
  b2 <- order(sc$miss, sc$mean)[1L]
  sv <- fit2$models[[1L]]$svm
  expect_equal(sv$kernel$gamma, sc$gamma[b2])
  m2 <- 200 - max(tabulate(attr(sc, "foldid")))
  expect_equal(sv$cost, sc$cost[b2] * m2 / 200)
  # clean classes keep the clipped squared error (the test above checks its choice)
  set.seed(175)
  fit3 <- hgk(c2$x, c2$y, depth = 1, loss = "hinge", folds = 4,
              control = hgk_control(maxit = 0, split = c(0.3, 0.3)))
  expect_lt(min(fit3$tuned_gaussian$table$mean_both), kernlearn:::.hgk_noisy_ls)
  expect_identical(attr(fit3$tuned_gaussian$table, "criterion"),
                   "mean squared error of decisions clipped to [-1, 1]")
  expect_null(fit3$tuned_gaussian$table$miss)
})

test_that("loss = \"auto\" chooses between least squares and the hinge loss by misclassification", {
  c3 <- cls_data(n = 150, seed = 151, classes = 3)
  set.seed(152)
  fit <- hgk(c3$x, c3$y, depth = 1, folds = 3, final = "average", baseline = FALSE,
             control = hgk_control(maxit = 2, split = c(0.3, 0.3)))
  expect_identical(fit$cv$loss, c("ls", "hinge"))
  expect_identical(attr(fit$cv, "criterion"), "misclassification rate")
  # the criterion: the held-out misclassification rate of each predictor of the fold models
  best <- order(fit$cv$error, seq_len(2))[1L]
  tie <- fit$cv$error[1L] == fit$cv$error[2L]
  if (!tie) expect_identical(fit$loss, fit$cv$loss[best])
  expect_identical(fit$loss_arg, "auto")
  for (m in fit$models) {
    expect_identical(is.null(m$svm), fit$loss == "ls")
    expect_identical(is.null(m$alpha), fit$loss == "hinge")
  }
  row <- match(fit$loss, fit$cv$loss)
  errs <- vapply(fit$models, function(m) {
    te <- setdiff(seq_len(150), m$rows)
    cls <- if (fit$loss == "ls") {
      d <- gram_r(m$kernel, fit$x[te, ], fit$x[m$rows, ]) %*% m$alpha +
        matrix(m$bias, length(te), 3, byrow = TRUE)
      factor(levels(c3$y)[max.col(d, "first")], levels = levels(c3$y))
    } else predict(m$svm, fit$x[te, ])
    mean(cls != c3$y[te])
  }, numeric(1))
  expect_equal(attr(fit$cv, "folds")[row, ], errs, tolerance = 1e-12)
  cls <- predict(fit, c3$x)
  expect_gt(mean(cls == c3$y), 0.7)
  expect_output(print(fit), "loss: .*chosen by CV")
  # regression: least squares only; probability = TRUE implies the hinge loss
  r <- reg_data(n = 150, seed = 153)
  fr <- hgk(r$x, r$y, depth = 1, folds = 3, final = "average", baseline = FALSE,
            control = hgk_control(maxit = 1, split = c(0.3, 0.3)))
  expect_identical(fr$cv$loss, "ls")
  expect_identical(fr$loss, "ls")
  fp <- hgk(c3$x, c3$y, depth = 1, folds = 3, final = "refit", probability = TRUE,
            baseline = FALSE, control = hgk_control(maxit = 1, split = c(0.3, 0.3)))
  expect_identical(fp$loss, "hinge")
  expect_null(fp$cv)
  expect_equal(rowSums(predict(fp, c3$x[1:5, ], type = "prob")), rep(1, 5), tolerance = 1e-8)
})

test_that("the defaults adapt to small data and say so", {
  set.seed(161)
  fit <- hgk(Species ~ ., data = iris)
  expect_gte(mean(predict(fit, iris) == iris$Species), 0.95)
  expect_identical(unique(fit$cv$architecture[fit$cv$learned]), c("depth 1", "depth 2, 4 nodes"))
  expect_equal(fit$split, c(1, 1) / 3)
  expect_output(print(fit), "for 150 rows: architectures compared: depth 1, depth 2 with 4 nodes; split D1 / D2 / D3: a third each")
  set.seed(162)
  fm <- hgk(mpg ~ ., data = mtcars)
  expect_identical(unique(fm$cv$architecture[fm$cv$learned]), "depth 1")
  expect_gt(cor(predict(fm, mtcars), mtcars$mpg)^2, 0.7)
  # with enough rows the paper's protocol and split are kept, and nothing is said
  expect_identical(kernlearn:::.hgk_default_candidates(400, 10), c(0L, 4L, 6L, 8L, 10L, 12L, 14L, 16L))
  expect_equal(kernlearn:::.hgk_default_split(150), c(0.4, 0.4))
  expect_equal(kernlearn:::.hgk_default_split(140), c(1, 1) / 3)
  # below 30 rows the default folds are raised until every learning run has D1, D2, D3 of 8
  # rows, and no warning is given for classes with fewer rows than those folds
  r26 <- reg_data(n = 26, d = 3, seed = 164)
  set.seed(164)
  f26 <- expect_silent(hgk(r26$x, r26$y))
  expect_identical(f26$folds, 13L)
  expect_output(print(f26), "13-fold cross-validation \\(5 folds would leave 20 rows to a learning run\\)")
  expect_gt(cor(predict(f26, r26$x), r26$y), 0.5)
  d27 <- iris[c(1:9, 51:59, 101:109), ]
  set.seed(165)
  f27 <- expect_silent(hgk(Species ~ ., data = d27))
  expect_identical(f27$folds, 9L)
  expect_gte(mean(predict(f27, iris) == iris$Species), 0.9)
  expect_equal(kernlearn:::.hgk_fit_rows(25, 25L, TRUE), 24)
  expect_error(hgk(r26$x[1:24, ], r26$y[1:24]),
               "25 rows or more with these settings.*with 24 rows give one architecture")
  # folds the user gives are kept
  expect_error(hgk(r26$x, r26$y, folds = 5), "with 26 rows give folds = 13 or more")
  # given candidates are used as they are
  set.seed(163)
  fc <- hgk(Species ~ ., data = iris, candidates = c(0, 2, 3), baseline = FALSE, loss = "ls",
            control = hgk_control(maxit = 1))
  expect_identical(fc$cv$architecture, c("depth 1", "depth 2, 2 nodes", "depth 2, 3 nodes"))
  expect_false(any(grepl("architectures compared", fc$adapted)))
})

# ---- input errors ----------------------------------------------------------------------------

test_that("bad input is an error that names the problem", {
  r <- reg_data(n = 150, d = 5, seed = 111)
  x <- r$x; y <- r$y
  h <- function(..., final = "average") hgk(x, y, folds = 3, final = final, control = ctl0, baseline = FALSE, ...)
  expect_error(h(nodes = 7), "nodes = 7 exceeds the 5 input column.*saturation")
  expect_error(h(kernel = hierarchical_gaussian_kernel(rep(1, 4))),
               "does not cover input column\\(s\\) 5")
  expect_error(h(kernel = hierarchical_gaussian_kernel(rep(1, 6))), "uses column 6")
  expect_error(h(kernel = hierarchical_gaussian_kernel(weights = list(c(1, 1), c(1, 1, 1)),
                                                       nodes = list(1:2, 4:6),
                                                       node_weights = c(1, 1))),
               "uses column 6")
  expect_error(h(kernel = hierarchical_gaussian_kernel(weights = list(c(1, 1), c(1, 1, 1)),
                                                       nodes = list(1:2, 3:5),
                                                       node_weights = c(1, 0))),
               "weights equal to 0")
  expect_error(h(kernel = gaussian_kernel(1)), "must be a hierarchical_gaussian_kernel")
  expect_error(h(depth = 1, kernel = hierarchical_gaussian_kernel(rep(1, 5))), "either 'kernel'")
  expect_error(h(depth = 3), "'depth' must be 1 or 2")
  expect_error(h(depth = 1, nodes = 2), "depth-1 kernel has no 'nodes'")
  expect_error(h(depth = 2, candidates = 0), "depth = 2 needs")
  expect_error(h(nodes = 2.5), "'nodes' must hold whole numbers")
  expect_error(h(candidates = c(0, -1)), "'candidates' must hold whole numbers")
  expect_error(h(nodes = 2, saturation = 0.5), "'saturation' must be NULL or a number >= 1")
  expect_error(h(nodes = 2, saturation = 6), "more than the 5 columns")
  expect_error(h(depth = 1, loss = "foo"), "'loss' must be one of")
  expect_error(h(depth = 1, gradient = "foo"), "'gradient' must be one of")
  expect_error(h(depth = 1, final = "foo"), "'final' must be one of")
  expect_error(h(depth = 1, gamma = -1), "'gamma' must be NULL or a vector of positive")
  expect_error(h(depth = 1, lambda = c(0.1, NA)), "'lambda' must be NULL or a vector of positive")
  expect_error(h(depth = 1, loss = "hinge"), "hinge.*is for classification")
  expect_error(hgk(x, y, depth = 1, folds = 1, control = ctl0, baseline = FALSE, loss = "ls"),
               "'folds' must be a whole number >= 2")
  expect_error(hgk(x, y, depth = 1, folds = 3, final = "average", control = list(maxit = 0), baseline = FALSE, loss = "ls"),
               "must come from hgk_control")
  expect_error(h(depth = 1, foo = 1), "unused argument.*foo")
  # too few rows for D1 / D2 / D3 (8 each) in the CV folds or the refit; the message names the
  # settings to change
  expect_error(hgk(x[1:20, ], y[1:20], depth = 1, folds = 3, final = "average",
                   control = hgk_control(maxit = 0), baseline = FALSE, loss = "ls"),
               "too few rows.*at least 8.*no fewer than 24 rows.*kl_tune")
  expect_error(hgk(x[1:20, ], y[1:20], depth = 1, final = "refit",
                   control = hgk_control(maxit = 0), baseline = FALSE, loss = "ls"),
               "too few rows.*6 / 6 / 8.*no fewer than 24 rows")
  expect_error(hgk(x[1:26, ], y[1:26], depth = 1, folds = 5, final = "average",
                   control = hgk_control(maxit = 0), baseline = FALSE, loss = "ls"),
               "too few rows.*6 / 6 / 8.*with 26 rows give folds = 13 or more, or one architecture \\('depth = 1'\\) with baseline = FALSE")
  expect_error(hgk(x[1:100, ], y[1:100], depth = 1, final = "refit",
                   control = hgk_control(maxit = 0, split = c(0.45, 0.5)), baseline = FALSE),
               "too few rows.*45 / 50 / 5.*split = c\\(1, 1\\) / 3")
  expect_error(hgk(x, rep(1, 150), depth = 1, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls"), "response is constant")
  xn <- x
  xn[3, 2] <- NA
  expect_error(hgk(xn, y, depth = 1, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls"),
               "missing or infinite.*row\\(s\\) 3")
  expect_error(hgk(x, factor(rep("a", 150)), depth = 1, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls"),
               "only one class")
  yc <- factor(ifelse(y > median(y), "hi", "lo"))
  expect_error(hgk(x, yc, depth = 1, folds = 3, final = "average", control = ctl0, probability = TRUE, baseline = FALSE, loss = "ls"),
               "probability = TRUE needs loss = \"hinge\"")
  expect_error(hgk(x, yc, depth = 1, folds = 3, final = "average", control = ctl0, probability = NA, baseline = FALSE, loss = "ls"),
               "'probability' must be TRUE or FALSE")
  expect_error(hgk(y ~ x, depth = 1, baseline = FALSE, loss = "ls"), "'data' is required")
  # control
  expect_error(hgk_control(perturbation = 1), "'perturbation' must be a number in \\(0, 1\\)")
  expect_error(hgk_control(perturbation = 0), "'perturbation'")
  expect_error(hgk_control(split = c(0.5, 0.5)), "'split' must be NULL or two positive fractions")
  expect_error(hgk_control(split = c(0.6, 0.5)), "'split'")
  expect_error(hgk_control(split = 0.5), "'split'")
  expect_error(hgk_control(maxit = -1), "'maxit' must be a whole number >= 0")
  expect_error(hgk_control(maxit = 2.5), "'maxit'")
  expect_error(hgk_control(anneal_steps = -1), "'anneal_steps'")
  expect_error(hgk_control(temperature = -1), "'temperature' must be a number >= 0")
  expect_error(hgk_control(cooling = 0), "'cooling' must be a number in \\(0, 1\\]")
  expect_error(hgk_control(cooling = 1.5), "'cooling'")
  expect_error(hgk_control(patience = 0), "'patience' must be a whole number >= 1")
  expect_error(hgk_control(reshuffles = -1), "'reshuffles'")
  expect_error(hgk_control(extend = -1), "'extend' must be a whole number >= 0")
  expect_s3_class(hgk_control(), "hgk_control")
})

# ---- learned kernels, relevance and methods --------------------------------------------------

test_that("learned_kernel gives a usable hierarchical kernel; with refit it reproduces the model", {
  cd <- cls_data(n = 150, d = 4, seed = 121)
  set.seed(122)
  fit <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average",
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  k <- learned_kernel(fit)
  expect_s3_class(k, "kl_hierarchical_gaussian_kernel")
  # the geometric mean of the fold models' weights and widths
  W <- sapply(fit$models, function(m) abs(kernlearn:::.hgk_params(m$kernel)))
  expect_equal(kernlearn:::.hgk_params(k), exp(rowMeans(log(W))), tolerance = 1e-12)
  expect_equal(k$gamma, exp(mean(log(vapply(fit$models, `[[`, 0, "gamma")))), tolerance = 1e-12)
  expect_identical(learned_kernel(fit, fold = 2), fit$models[[2]]$kernel)
  expect_error(learned_kernel(fit, fold = 4), "'fold' must be one of 1..3")
  K <- kernel_matrix(k, fit$x)
  expect_equal(unname(K), gram_r(k, fit$x, fit$x), tolerance = 1e-12)
  expect_equal(unname(diag(K)), rep(1, 150))
  svm <- kernel_svm(fit$x, cd$y, kernel = k)
  expect_gt(mean(predict(svm, fit$x) == cd$y), 0.8)

  set.seed(123)
  fit <- hgk(cd$x, cd$y, nodes = 2, folds = 3, final = "refit",
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  k <- learned_kernel(fit)
  expect_identical(k, fit$models[[1]]$kernel)
  expect_length(k$nodes, 2L)
  expect_identical(k$gamma, fit$models[[1]]$gamma)
  kr <- kernel_ridge(fit$x, cd$y, kernel = k, lambda = 150 * fit$models[[1]]$lambda)
  expect_equal(predict(kr, fit$x, type = "decision"), predict(fit, cd$x, type = "decision"),
               tolerance = 1e-8)
})

# The relevance is the square root of the curvature of the root's argument -log k(x, z) along
# each coordinate at x = z (mean of squares over the models): -log k(z + h e_i, z) / h^2.
curvature_relevance <- function(fit, h = 1e-4) {
  d <- ncol(fit$x)
  z <- rep(0.5, d)
  sq <- sapply(fit$models, function(m) vapply(seq_len(d), function(i) {
    zi <- z
    zi[i] <- zi[i] + h
    -log(kernel_matrix(m$kernel, rbind(zi), rbind(z))[1, 1]) / h^2
  }, numeric(1)))
  sqrt(rowMeans(matrix(sq, d)))
}

test_that("relevance is the curvature of the learned kernel at depth 1, 2 and 3", {
  r <- reg_data(n = 150, d = 5, seed = 131)
  set.seed(132)
  fit <- hgk(r$x, r$y, depth = 1, folds = 3, final = "average", control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_equal(unname(fit$relevance), curvature_relevance(fit), tolerance = 1e-5)
  rel1 <- sqrt(rowMeans(sapply(fit$models, function(m) m$gamma * m$kernel$weights^2)))
  expect_equal(unname(fit$relevance), rel1, tolerance = 1e-12)
  set.seed(133)
  fit <- hgk(r$x, r$y, nodes = 3, saturation = 1.6, folds = 3, final = "average",
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_equal(unname(fit$relevance), curvature_relevance(fit), tolerance = 1e-5)
  set.seed(134)
  fit <- hgk(r$x, r$y, kernel = k_d3, final = "refit", folds = 3,
             control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_equal(unname(fit$relevance), curvature_relevance(fit), tolerance = 1e-5)
})

test_that("print, summary and plot run", {
  r <- reg_data(n = 150, d = 4, seed = 141)
  set.seed(142)
  fit <- hgk(r$x, r$y, depth = 1, folds = 3, final = "average", control = hgk_control(maxit = 5, split = c(0.3, 0.3)), baseline = FALSE, loss = "ls")
  expect_output(print(fit), "Hierarchical Gaussian kernel learning: least-squares SVM regression")
  expect_output(print(fit), "average of the 3 fold models")
  s <- summary(fit)
  expect_s3_class(s, "summary.hgk")
  expect_identical(nrow(s$models), 3L)
  expect_identical(s$models$steps, vapply(fit$models, function(m) m$info$steps, 0L))
  expect_identical(names(s$relevance), names(sort(fit$relevance, decreasing = TRUE)))
  expect_output(print(s), "Models of the predictor")
  expect_output(print(s), "Input relevance")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_invisible(plot(fit))
  expect_identical(plot(fit, which = "relevance"), fit)
  expect_error(plot(fit, which = "foo"), "'which' must be one of")
  cd <- cls_data(n = 150, seed = 143)
  set.seed(144)
  fit <- hgk(cd$x, cd$y, depth = 1, final = "refit", loss = "hinge", folds = 3,
             control = hgk_control(maxit = 3, split = c(0.3, 0.3)), baseline = FALSE)
  expect_output(print(fit), "SVM \\(hinge loss\\) classification, 2 classes")
  expect_output(print(fit), "refit on all rows")
  expect_output(print(summary(fit)), "Models of the predictor")
  expect_silent(plot(fit))
  fit0 <- hgk(cd$x, cd$y, depth = 1, folds = 3, final = "average", control = ctl0, baseline = FALSE, loss = "ls")
  expect_output(print(summary(fit0)), "maxit = 0")
  expect_error(plot(fit0), "not optimised \\(maxit = 0\\)")
  expect_silent(plot(fit0, which = "relevance"))
})


test_that("relevance counts a column listed twice in a node once per listing", {
  set.seed(1)
  n <- 150
  x <- matrix(runif(n * 3), n, 3)
  y <- sin(3 * x[, 1]) + x[, 2]
  k <- hierarchical_gaussian_kernel(weights = list(c(1, 2, 1), c(1, 1)),
                                    nodes = list(c(1, 1, 2), 2:3), node_weights = c(1, 1))
  fit <- hgk(x, y, kernel = k, gamma = 1, lambda = 0.01, final = "refit",
             control = hgk_control(maxit = 0), baseline = FALSE, loss = "ls")
  expect_equal(unname(fit$relevance), sqrt(c(1 + 4, 1 + 1, 1)))
})

test_that("the row hint of the too-few-rows error is a size that works", {
  set.seed(2)
  x <- matrix(runif(400 * 2), 400, 2)
  y <- x[, 1] + x[, 2]
  for (base in c(TRUE, FALSE)) {
    msg <- tryCatch(hgk(x[1:20, ], y[1:20], depth = 1, baseline = base), error = conditionMessage)
    need <- as.integer(sub(".*\\((\\d+) rows or more.*", "\\1", msg))
    expect_true(need > 20 && need <= 40)
    expect_s3_class(hgk(x[1:need, ], y[1:need], depth = 1, baseline = base,
                        control = hgk_control(maxit = 0)), "hgk")
    # with folds given, the size is one for those folds
    msg <- tryCatch(hgk(x[1:20, ], y[1:20], depth = 1, folds = 5, baseline = TRUE),
                    error = conditionMessage)
    need <- as.integer(sub(".*\\((\\d+) rows or more.*", "\\1", msg))
    expect_equal(need, 30L)
    expect_s3_class(hgk(x[1:need, ], y[1:need], depth = 1, folds = 5, baseline = TRUE,
                        control = hgk_control(maxit = 0)), "hgk")
  }
})
options(old_options)

test_that("kl_tune(hgk) fits its folds without the tuned Gaussian and compares once, in the refit", {
  expect_identical(attr(hgk, "kl_tune_fold_args"), list(baseline = FALSE))
  c2 <- cls_data(n = 120, d = 3, seed = 171)
  counter <- trace_count(".hgk_tuned_gaussian")
  on.exit(untrace_count(".hgk_tuned_gaussian"), add = TRUE)
  ctl <- hgk_control(maxit = 3)
  set.seed(172)
  tn <- kl_tune(hgk, c2$x, c2$y, grid = list(depth = 1:2), folds = 3, loss = "hinge",
                control = ctl, threads = 1)
  expect_identical(tn$fold_args, list(baseline = FALSE))
  expect_equal(counter$n, 1L)  # the refit's comparison only
  expect_true(is.list(tn$best_model$selection))
  expect_output(print(tn), "folds were fitted with baseline = FALSE")
  # the folds' fits are those of baseline = FALSE given (without a refit)
  set.seed(172)
  off <- kl_tune(hgk, c2$x, c2$y, grid = list(depth = 1:2), folds = 3, loss = "hinge",
                 control = ctl, threads = 1, baseline = FALSE)
  expect_identical(off$results, tn$results)
  expect_equal(counter$n, 1L)
  # baseline = TRUE given: the comparison in every fold
  set.seed(172)
  on <- kl_tune(hgk, c2$x, c2$y, grid = list(depth = 1:2), folds = 3, loss = "hinge",
                control = ctl, threads = 1, baseline = TRUE, refit = FALSE)
  expect_identical(on$fold_args, list())
  expect_equal(counter$n, 1L + 3L * 2L)  # one per fold and grid point
})

test_that("print() says when every input weighs the same instead of ranking them", {
  set.seed(181)
  x <- matrix(runif(300), 100, 3)
  y <- factor(ifelse(x[, 1] > 0.5, "a", "b"))
  f <- hgk(x, y, depth = 1, control = hgk_control(maxit = 0), baseline = FALSE, folds = 3,
           threads = 1)
  expect_equal(unname(f$relevance), rep(f$relevance[[1]], 3))
  expect_output(print(f), "every input weighs the same")
  g <- hgk(x, y, depth = 1, control = hgk_control(maxit = 5), baseline = FALSE, folds = 3,
           threads = 1)
  # learned: the informative first input ranks first
  expect_identical(names(which.max(g$relevance)), "V1")
  expect_output(print(g), "most relevant inputs: V1")
})
