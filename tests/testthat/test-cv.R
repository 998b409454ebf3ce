# Tiny learners that follow the kernlearn learner interface, so that kl_cv() and kl_tune()
# are tested without any compiled code.

# Nearest-centroid classifier; mean regressor for a numeric response.
tinycent <- function(x, ...) UseMethod("tinycent")

tinycent.formula <- function(formula, data, ...) {
  mf <- stats::model.frame(formula, data)
  tt <- stats::terms(mf)
  x <- stats::model.matrix(tt, mf)[, -1L, drop = FALSE]
  fit <- tinycent.default(x, stats::model.response(mf), ...)
  fit$terms <- stats::delete.response(tt)
  fit
}

tinycent.default <- function(x, y, ...) {
  x <- as.matrix(x)
  if (is.factor(y)) {
    centers <- t(vapply(levels(y), function(l) colMeans(x[y == l, , drop = FALSE]),
                        numeric(ncol(x))))
    structure(list(levels = levels(y), centers = centers, terms = NULL), class = "tinycent")
  } else {
    structure(list(levels = NULL, mean = mean(y), terms = NULL), class = "tinycent")
  }
}

predict.tinycent <- function(object, newdata, type = "class", ...) {
  x <- if (is.null(object$terms)) as.matrix(newdata) else
    stats::model.matrix(object$terms, stats::model.frame(object$terms, newdata))[, -1L, drop = FALSE]
  if (is.null(object$levels)) {
    if (type != "response") stop("tinycent: regression predicts type = \"response\"")
    return(rep(object$mean, nrow(x)))
  }
  d2 <- matrix(vapply(object$levels, function(l) colSums((t(x) - object$centers[l, ])^2),
                      numeric(nrow(x))), nrow = nrow(x))
  if (type == "class")
    return(factor(object$levels[max.col(-d2, ties.method = "first")], levels = object$levels))
  if (type == "prob") {
    e <- exp(-(d2 - apply(d2, 1L, min)))
    p <- e / rowSums(e)
    colnames(p) <- object$levels
    return(p)
  }
  stop("tinycent: unsupported type ", type)
}

# Mean of a random half of the training rows, plus a little random noise at prediction
# time: its results depend on R's random number generator.
tinyrand <- function(x, ...) UseMethod("tinyrand")

tinyrand.default <- function(x, y, frac = 0.5, ...) {
  keep <- sample.int(length(y), max(1L, floor(frac * length(y))))
  structure(list(mean = mean(y[keep])), class = "tinyrand")
}

tinyrand.formula <- function(formula, data, ...) {
  mf <- stats::model.frame(formula, data)
  tinyrand.default(NULL, stats::model.response(mf), ...)
}

predict.tinyrand <- function(object, newdata, type = "response", ...) {
  object$mean + stats::rnorm(nrow(newdata), sd = 0.01)
}

# Predicts slope * first column; nothing is fitted.
tinyline <- function(x, ...) UseMethod("tinyline")
tinyline.default <- function(x, y, slope = 1, ...) {
  structure(list(slope = slope), class = "tinyline")
}
predict.tinyline <- function(object, newdata, type = "response", ...) {
  object$slope * as.matrix(newdata)[, 1L]
}

# Predictions read from column "p" of newdata: known predictions for metric checks.
tinylookup <- function(x, ...) UseMethod("tinylookup")
tinylookup.default <- function(x, y, ...) {
  structure(list(levels = if (is.factor(y)) levels(y)), class = "tinylookup")
}
predict.tinylookup <- function(object, newdata, type = "class", ...) {
  p <- as.matrix(newdata)[, "p"]
  lev <- object$levels
  switch(type,
         class = factor(ifelse(p > 0.5, lev[2L], lev[1L]), levels = lev),
         prob = matrix(c(1 - p, p), ncol = 2L, dimnames = list(NULL, lev)),
         response = p,
         decision = p)
}

# Predicts center(y) * mult + shift, or k$a * w when given a classed object k.
tinyconst <- function(x, ...) UseMethod("tinyconst")
tinyconst.default <- function(x, y, center = mean, shift = 0, k = NULL, w = 1, ...) {
  value <- if (is.null(k)) center(y) + shift else k$a * w
  structure(list(value = value), class = "tinyconst")
}
predict.tinyconst <- function(object, newdata, type = "response", ...) {
  rep(object$value, nrow(as.matrix(newdata)))
}

with_seed <- function(seed, expr) {
  set.seed(seed)
  expr
}

make_class_data <- function(sizes = c(a = 31, b = 22, c = 7), seed = 11) {
  set.seed(seed)
  y <- factor(rep(names(sizes), sizes), levels = names(sizes))
  x <- matrix(stats::rnorm(length(y) * 2L), ncol = 2L, dimnames = list(NULL, c("u", "v")))
  x[, 1L] <- x[, 1L] + 2 * as.integer(y)
  list(x = x, y = y, df = data.frame(x, cls = y))
}

test_that("classification folds are stratified by class and balanced", {
  d <- make_class_data()
  set.seed(1)
  cv <- kl_cv(tinycent, d$x, d$y, folds = 5)
  expect_s3_class(cv, "kl_cv")
  expect_true(cv$stratified)
  tab <- table(cv$foldid, d$y)
  expect_equal(dim(tab), c(5L, 3L))
  spread <- apply(tab, 2L, function(v) max(v) - min(v))
  expect_true(all(spread <= 1L))
  expect_equal(colSums(tab), c(a = 31, b = 22, c = 7))
  sizes <- tabulate(cv$foldid, 5L)
  expect_lte(max(sizes) - min(sizes), 1L)
  expect_equal(cv$fold_sizes, sizes)
  expect_equal(sum(sizes), 60L)

  # every class is split evenly for every seed, and the draw differs between seeds
  for (s in 2:6) {
    set.seed(s)
    f <- kl_cv(tinycent, d$x, d$y, folds = 4)$foldid
    expect_true(all(apply(table(f, d$y), 2L, function(v) max(v) - min(v)) <= 1L))
  }
  set.seed(2)
  f2 <- kl_cv(tinycent, d$x, d$y, folds = 5)$foldid
  expect_false(identical(f2, cv$foldid))
})

test_that("regression folds are random and balanced", {
  set.seed(5)
  x <- matrix(stats::rnorm(47), ncol = 1L)
  y <- stats::rnorm(47)
  set.seed(1)
  cv <- kl_cv(tinycent, x, y, folds = 6)
  expect_false(cv$stratified)
  expect_setequal(unique(cv$foldid), 1:6)
  sizes <- tabulate(cv$foldid, 6L)
  expect_lte(max(sizes) - min(sizes), 1L)
  expect_false(identical(cv$foldid, rep_len(1:6, 47L)))
  expect_equal(cv$metric, "mse")
})

test_that("a class with fewer rows than folds gives a warning", {
  d <- make_class_data(c(a = 20, b = 20, c = 3))
  expect_warning(kl_cv(tinycent, d$x, d$y, folds = 5, seed = 1),
                 "fewer rows than folds")
  expect_silent(kl_cv(tinycent, d$x, d$y, folds = 3, seed = 1))
})

test_that("foldid is respected and out-of-fold predictions come from the other folds", {
  y <- c(1, 2, 3, 4, 10, 20, 30, 40, 5)
  x <- matrix(seq_along(y), ncol = 1L)
  foldid <- c(1L, 2L, 3L, 1L, 2L, 3L, 1L, 2L, 3L)
  cv <- kl_cv(tinycent, x, y, foldid = foldid, folds = 7)
  expect_identical(cv$foldid, foldid)
  expect_equal(cv$folds, 3L)
  expected_pred <- vapply(foldid, function(k) mean(y[foldid != k]), 0)
  expect_equal(cv$predictions, expected_pred)
  expected_mse <- vapply(1:3, function(k) mean((y[foldid == k] - mean(y[foldid != k]))^2), 0)
  expect_equal(unname(cv$fold_metrics), expected_mse)
  expect_equal(cv$mean, mean(expected_mse))
  expect_equal(cv$se, stats::sd(expected_mse) / sqrt(3))
  cv_mae <- kl_cv(tinycent, x, y, foldid = foldid, metric = "mae")
  expected_mae <- vapply(1:3, function(k) mean(abs(y[foldid == k] - mean(y[foldid != k]))), 0)
  expect_equal(unname(cv_mae$fold_metrics), expected_mae)
})

test_that("metrics match hand computation on known predictions", {
  p <- c(0.9, 0.2, 0.6, 0.4, 1, 0, 0.7, 0.1)
  y <- factor(c("n", "n", "y", "y", "n", "y", "y", "n"), levels = c("n", "y"))
  x <- cbind(p = p, z = 0)
  foldid <- c(1L, 1L, 1L, 1L, 2L, 2L, 2L, 2L)
  pclass <- ifelse(p > 0.5, "y", "n")
  ptrue <- ifelse(y == "y", p, 1 - p)
  clip <- pmin(pmax(ptrue, 1e-15), 1 - 1e-15)

  err <- kl_cv(tinylookup, x, y, foldid = foldid)
  expect_equal(err$metric, "error")
  expect_equal(unname(err$fold_metrics),
               c(mean(pclass[1:4] != y[1:4]), mean(pclass[5:8] != y[5:8])))
  expect_equal(unname(err$fold_metrics), c(0.5, 0.5))
  expect_identical(err$predictions, factor(pclass, levels = c("n", "y")))

  ll <- kl_cv(tinylookup, x, y, foldid = foldid, metric = "logloss")
  expect_equal(unname(ll$fold_metrics),
               c(-mean(log(clip[1:4])), -mean(log(clip[5:8]))))
  expect_equal(ll$fold_metrics[[2]], -mean(log(c(1e-15, 1e-15, 0.7, 0.9))))
  expect_true(is.finite(ll$mean))
  expect_equal(dim(ll$predictions), c(8L, 2L))
  expect_equal(colnames(ll$predictions), c("n", "y"))
  expect_equal(unname(ll$predictions[, "y"]), p)

  yr <- c(1, 0, 0.5, 0.5, 2, -1, 0.7, 0.3)
  mse <- kl_cv(tinylookup, x, yr, foldid = foldid)
  expect_equal(unname(mse$fold_metrics),
               c(mean((yr[1:4] - p[1:4])^2), mean((yr[5:8] - p[5:8])^2)))
  mae <- kl_cv(tinylookup, x, yr, foldid = foldid, metric = "mae")
  expect_equal(unname(mae$fold_metrics),
               c(mean(abs(yr[1:4] - p[1:4])), mean(abs(yr[5:8] - p[5:8]))))

  maxerr <- function(truth, pred) max(abs(truth - pred))
  cm <- kl_cv(tinylookup, x, yr, foldid = foldid, metric = maxerr)
  expect_equal(cm$metric, "maxerr")
  expect_equal(unname(cm$fold_metrics), c(max(abs(yr[1:4] - p[1:4])), max(abs(yr[5:8] - p[5:8]))))

  brier <- function(truth, pred) mean((pred[, "y"] - (truth == "y"))^2)
  attr(brier, "type") <- "prob"
  cb <- kl_cv(tinylookup, x, y, foldid = foldid, metric = brier)
  expect_equal(unname(cb$fold_metrics),
               c(mean((p[1:4] - (y[1:4] == "y"))^2), mean((p[5:8] - (y[5:8] == "y"))^2)))
  expect_equal(cb$pred_type, "prob")
})

test_that("x/y and formula interfaces give the same results", {
  set.seed(3)
  a <- kl_cv(tinycent, Species ~ ., data = iris, folds = 5)
  set.seed(3)
  b <- kl_cv(tinycent, iris[, 1:4], iris$Species, folds = 5)
  set.seed(3)
  c3 <- kl_cv(tinycent, Species ~ ., iris, folds = 5)
  expect_identical(a$foldid, b$foldid)
  expect_identical(a$predictions, b$predictions)
  expect_identical(a$fold_metrics, b$fold_metrics)
  expect_identical(a$fold_metrics, c3$fold_metrics)
  expect_lt(a$mean, 0.2)
  expect_s3_class(a$predictions, "factor")
  expect_identical(levels(a$predictions), levels(iris$Species))
  expect_identical(a$y, iris$Species)

  set.seed(3)
  lp <- kl_cv(tinycent, Species ~ ., data = iris, folds = 5, metric = "logloss")
  expect_equal(unname(rowSums(lp$predictions)), rep(1, 150))
  expect_identical(lp$foldid, a$foldid)

  set.seed(4)
  r1 <- kl_cv(tinycent, Sepal.Length ~ Petal.Width, data = iris, folds = 4)
  set.seed(4)
  r2 <- kl_cv(tinycent, iris[, "Petal.Width", drop = FALSE], iris$Sepal.Length, folds = 4)
  expect_identical(r1$fold_metrics, r2$fold_metrics)
  expect_identical(r1$predictions, r2$predictions)
})

test_that("set.seed() and seed = reproduce results, and the RNG state is handled", {
  set.seed(5)
  x <- matrix(stats::rnorm(40), ncol = 2L)
  y <- stats::rnorm(20)
  set.seed(10)
  a <- kl_cv(tinyrand, x, y, folds = 4)
  after_a <- stats::runif(1)
  set.seed(10)
  b <- kl_cv(tinyrand, x, y, folds = 4)
  after_b <- stats::runif(1)
  set.seed(11)
  c2 <- kl_cv(tinyrand, x, y, folds = 4)
  expect_identical(a$predictions, b$predictions)
  expect_identical(a$fold_metrics, b$fold_metrics)
  expect_identical(after_a, after_b)
  expect_false(identical(a$predictions, c2$predictions))

  # seed = gives the same as set.seed() and leaves the caller's stream alone
  set.seed(99)
  expected_next <- stats::runif(1)
  set.seed(99)
  s <- kl_cv(tinyrand, x, y, folds = 4, seed = 10)
  expect_identical(stats::runif(1), expected_next)
  expect_identical(s$predictions, a$predictions)

  # the caller's RNG kind is kept
  keep_kind <- function() {
    old <- RNGkind()
    on.exit(RNGkind(old[1L], old[2L], old[3L]))
    RNGkind("L'Ecuyer-CMRG", "Box-Muller")
    set.seed(1)
    kl_cv(tinyrand, x, y, folds = 4)
    RNGkind()
  }
  expect_identical(keep_kind()[1:2], c("L'Ecuyer-CMRG", "Box-Muller"))
})

test_that("results are identical with a multisession future plan", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  skip_on_cran()
  set.seed(5)
  x <- matrix(stats::rnorm(60), ncol = 2L)
  y <- stats::rnorm(30)

  # a learner, its methods and a constant defined in the global environment, as in a script
  defs <- list(
    klcvtest_shift = 0.5,
    klcvtest_learner = function(x, ...) UseMethod("klcvtest_learner"),
    klcvtest_learner.default = function(x, y, ...) {
      structure(list(m = mean(y) + klcvtest_shift + stats::runif(1)), class = "klcvtest_fit")
    },
    predict.klcvtest_fit = function(object, newdata, type = "response", ...) {
      rep(object$m, nrow(newdata))
    })
  glob <- globalenv()
  skip_if(any(vapply(names(defs), exists, NA, envir = glob, inherits = FALSE)),
          "test names already exist in the global environment")
  on.exit(rm(list = names(defs), envir = glob), add = TRUE)
  for (nm in names(defs)) {
    v <- defs[[nm]]
    if (is.function(v)) environment(v) <- glob
    assign(nm, v, envir = glob)
  }
  global_learner <- get("klcvtest_learner", envir = glob)

  run_all <- function() {
    set.seed(21)
    a <- kl_cv(tinyrand, x, y, folds = 3)
    set.seed(22)
    b <- kl_tune(tinyrand, x, y, folds = 3, grid = list(frac = c(0.3, 0.6)))
    set.seed(23)
    cc <- kl_cv(tinycent, Species ~ ., data = iris, folds = 3, metric = "logloss")
    set.seed(24)
    gl <- kl_cv(global_learner, x, y, folds = 3)
    list(gl = gl$predictions,a = a[c("predictions", "fold_metrics", "foldid")],
         b = b[c("results", "fold_metrics", "foldid", "best_index")],
         b_model = b$best_model$mean,
         cc = cc[c("predictions", "fold_metrics", "foldid")],
         next_draw = stats::runif(1))
  }
  with_plan <- function() {
    oplan <- future::plan(future::multisession, workers = 2)
    on.exit(future::plan(oplan), add = TRUE)
    expect_false(inherits(future::plan(), "sequential"))
    run_all()
  }
  seq_res <- run_all()
  par_res <- with_plan()
  expect_true(inherits(future::plan(), "sequential"))
  expect_identical(par_res, seq_res)
})

test_that("progress is signalled once per fit", {
  skip_if_not_installed("progressr")
  n_update <- 0L
  old <- options(progressr.enable = TRUE)
  on.exit(options(old), add = TRUE)
  withCallingHandlers(
    kl_tune(tinycent, Species ~ ., data = iris, folds = 3,
            grid = data.frame(dummy = 1:2), seed = 1),
    progression = function(cond) {
      if (identical(cond$type, "update")) n_update <<- n_update + 1L
    })
  expect_equal(n_update, 6L)
})

test_that("kl_tune picks the known best grid point", {
  set.seed(8)
  x <- matrix(stats::runif(40, 1, 2), ncol = 1L)
  y <- 2 * x[, 1L]
  set.seed(1)
  tn <- kl_tune(tinyline, x, y, folds = 4, grid = list(slope = c(0, 1, 2, 3)))
  expect_s3_class(tn, "kl_tune")
  expect_equal(tn$best_index, 3L)
  expect_equal(tn$best, list(slope = 2))
  expect_equal(tn$results$slope, c(0, 1, 2, 3))
  expect_equal(tn$results$mean[3], 0)
  f <- tn$foldid
  hand <- vapply(c(0, 1, 2, 3), function(s)
    mean(vapply(1:4, function(k) mean(((2 - s) * x[f == k, 1L])^2), 0)), 0)
  expect_equal(tn$results$mean, hand)
  expect_equal(dim(tn$fold_metrics), c(4L, 4L))
  expect_s3_class(tn$best_model, "tinyline")
  expect_equal(tn$best_model$slope, 2)
  expect_s3_class(tn$cv, "kl_cv")
  expect_equal(tn$cv$mean, 0)

  # maximize with a custom metric; refit = FALSE
  negmse <- function(truth, pred) -mean((truth - pred)^2)
  set.seed(1)
  tm <- kl_tune(tinyline, x, y, folds = 4, grid = data.frame(slope = c(3, 2.5, 1.9, 0)),
                metric = negmse, maximize = TRUE, refit = FALSE)
  expect_equal(tm$best_index, 3L)
  expect_null(tm$best_model)
  # predict() uses the refitted model; without one it says how to get one
  xn <- matrix(c(0.5, 4), ncol = 1L)
  expect_equal(predict(tn, xn), c(1, 8))
  expect_equal(predict(tn, xn), predict(tn$best_model, xn))
  expect_error(predict(tm, xn), "refit = FALSE.*slope = 1.9")
  # further arguments reach the learner's method
  set.seed(2)
  ts <- kl_tune(kernel_svm, Species ~ ., data = iris, folds = 3,
                grid = list(cost = c(1, 4)), gamma = 1)
  expect_equal(predict(ts, iris[1:5, ], type = "decision"),
               predict(ts$best_model, iris[1:5, ], type = "decision"))
  expect_identical(predict(ts), predict(ts$best_model))
  expect_identical(tm$foldid, tn$foldid)

  # a grid point's results equal kl_cv() with the same seed and parameters
  set.seed(9)
  z <- matrix(stats::rnorm(50), ncol = 2L)
  w <- stats::rnorm(25)
  set.seed(4)
  tr <- kl_tune(tinyrand, z, w, folds = 5, grid = list(frac = c(0.2, 0.5, 0.8)))
  set.seed(4)
  cv2 <- kl_cv(tinyrand, z, w, folds = 5, frac = 0.5)
  expect_equal(tr$fold_metrics[2, ], cv2$fold_metrics)
  expect_equal(tr$results$mean[2], cv2$mean)
  expect_equal(tr$results$se[2], cv2$se)
})

test_that("kl_tune extends a scale grid past an edge that wins, and says so", {
  set.seed(8)
  x <- matrix(stats::runif(40, 1, 2), ncol = 1L)
  y <- 2 * x[, 1L]
  # slopes 1/4, 1/2, 1 (ratio 2): the best is the top edge, so 2 (exact) and then 4 are tried
  set.seed(1)
  tn <- kl_tune(tinyline, x, y, folds = 4, grid = list(slope = c(0.25, 0.5, 1)))
  expect_equal(tn$results$slope, c(0.25, 0.5, 1, 2, 4))
  expect_identical(tn$results$extended, c(FALSE, FALSE, FALSE, TRUE, TRUE))
  expect_equal(tn$best, list(slope = 2))
  expect_equal(tn$best_model$slope, 2)
  f <- tn$foldid
  hand <- vapply(c(0.25, 0.5, 1, 2, 4), function(s)
    mean(vapply(1:4, function(k) mean(((2 - s) * x[f == k, 1L])^2), 0)), 0)
  expect_equal(tn$results$mean, hand)
  expect_identical(dim(tn$fold_metrics), c(5L, 4L))
  expect_identical(tn$extension$parameter, c("slope", "slope"))
  expect_equal(tn$extension$value, c(2, 4))
  expect_identical(tn$extension$better, c(TRUE, FALSE))
  expect_output(print(tn), "extended past its edge: slope = 2 \\(better\\), slope = 4 \\(not better\\)")
  # at most `extend` steps; extend = 0, a data.frame grid and a whole-number step grid
  # (a count, such as a degree) are kept as given
  set.seed(1)
  t1 <- kl_tune(tinyline, x, y, folds = 4, grid = list(slope = c(0.125, 0.25, 0.5)), extend = 1)
  expect_equal(t1$results$slope, c(0.125, 0.25, 0.5, 1))
  set.seed(1)
  expect_null(kl_tune(tinyline, x, y, folds = 4, grid = list(slope = c(0.25, 0.5, 1)),
                      extend = 0)$extension)
  set.seed(1)
  expect_identical(nrow(kl_tune(tinyline, x, y, folds = 4,
                                grid = data.frame(slope = c(0.25, 0.5, 1)))$results), 3L)
  set.seed(1)
  expect_null(kl_tune(tinyline, x, y, folds = 4, grid = list(slope = c(-1, 0, 1)))$extension)
  expect_null(kernlearn:::.kl_tune_spacing(c(1, 2, 3)))
  expect_null(kernlearn:::.kl_tune_spacing(c(1, 2)))
  expect_null(kernlearn:::.kl_tune_spacing(c(0.1, 0.5, 0.6)))
  expect_equal(kernlearn:::.kl_tune_spacing(2^(0:4)), list(kind = "ratio", by = 2))
  expect_equal(kernlearn:::.kl_tune_spacing(c(0.5, 2)), list(kind = "ratio", by = 4))
  expect_equal(kernlearn:::.kl_tune_spacing(c(0.3, 0.1, 0.2)), list(kind = "step", by = 0.1))
  # the points past the edge run on the same folds with the same fold seeds: equal to kl_cv()
  set.seed(9)
  z <- matrix(stats::rnorm(50), ncol = 2L)
  w <- stats::rnorm(25)
  set.seed(4)
  tr <- kl_tune(tinyline, z, w, folds = 5, grid = list(slope = c(4, 8, 16)), extend = 1)
  expect_equal(tr$results$slope, c(4, 8, 16, 2))
  set.seed(4)
  tq <- kl_tune(tinyrand, z, w, folds = 5, grid = list(frac = c(0.5, 0.6, 0.7)), extend = 1,
                metric = function(truth, pred) -mean(pred), maximize = TRUE)
  added <- which(tq$results$extended)
  if (length(added)) {
    set.seed(4)
    cv2 <- kl_cv(tinyrand, z, w, folds = 5, frac = tq$results$frac[added[1L]],
                 metric = function(truth, pred) -mean(pred))
    expect_equal(tq$fold_metrics[added[1L], ], cv2$fold_metrics)
  }
  # a fit that fails past the edge ends the search there, without an error
  failing <- function(x, y, slope = 1, ...) {
    if (slope > 1.5) stop("slope too large")
    tinyline(x, y, slope = slope)
  }
  set.seed(1)
  tf <- kl_tune(failing, x, y, folds = 4, grid = list(slope = c(0.25, 0.5, 1)))
  expect_equal(tf$best, list(slope = 1))
  expect_identical(nrow(tf$results), 3L)
  expect_identical(tf$extension$better, FALSE)
  expect_true(is.na(tf$extension$mean))
  expect_error(kl_tune(tinyline, x, y, grid = list(slope = 1:2), extend = -1),
               "'extend' must be a whole number >= 0")
  expect_error(kl_tune(tinyline, x, y, grid = list(extended = 1:2)), "'extended'")
})

test_that("list columns of functions and objects work in grids", {
  y <- c(rep(0, 15), 100, 200, 300)
  x <- matrix(0, length(y), 1L)
  set.seed(2)
  tn <- kl_tune(tinyconst, x, y, folds = 3, metric = "mae",
                grid = list(center = list(mean = mean, median = stats::median),
                            shift = c(1, 0)))
  expect_equal(nrow(tn$results), 4L)
  expect_identical(tn$best$center, stats::median)
  expect_equal(tn$best$shift, 0)
  expect_equal(tn$best_index, 4L)
  expect_true(is.list(tn$results$center))
  expect_equal(tn$labels$center, c("mean", "median", "mean", "median"))

  mk <- function(a) structure(list(a = a), class = "fakekernel")
  z <- rep(4, 12)
  xz <- matrix(0, 12, 1L)
  set.seed(3)
  tk <- kl_tune(tinyconst, xz, z, folds = 3,
                grid = list(k = list(mk(1), mk(2), mk(3)), w = c(1, 2)))
  expect_equal(nrow(tk$results), 6L)
  expect_s3_class(tk$best$k, "fakekernel")
  expect_equal(tk$best$k$a, 2)
  expect_equal(tk$best$w, 2)
  expect_equal(tk$best_index, 5L)
  expect_equal(tk$results$mean[5], 0)
  expect_equal(vapply(tk$results$k, function(o) o$a, 0), c(1, 2, 3, 1, 2, 3))

  # a single object is one value, not expanded over its fields
  tk1 <- kl_tune(tinyconst, xz, z, folds = 3, seed = 1,
                 grid = list(k = mk(2), w = c(1, 2, 3)))
  expect_equal(nrow(tk1$results), 3L)
  expect_equal(tk1$best$w, 2)

  # a data.frame grid with a list column
  g <- data.frame(w = c(2, 1, 4))
  g$k <- I(list(mk(2), mk(3), mk(2)))
  tk2 <- kl_tune(tinyconst, xz, z, folds = 3, grid = g, seed = 1)
  expect_equal(tk2$best_index, 1L)
  expect_equal(tk2$best$k$a, 2)
  expect_equal(nrow(tk2$results), 3L)
  expect_output(print(tk2), "best \\(row 1\\)")
})

test_that("print and summary methods work", {
  set.seed(1)
  cv <- kl_cv(tinycent, Species ~ ., data = iris, folds = 3)
  expect_output(print(cv), "3-fold cross-validation of tinycent")
  expect_output(print(cv), "error")
  utils::capture.output(vis <- withVisible(print(cv)))
  expect_false(vis$visible)
  s <- summary(cv)
  expect_s3_class(s, "summary.kl_cv")
  expect_equal(sum(s$confusion), 150L)
  expect_equal(s$folds$rows, cv$fold_sizes)
  expect_output(print(s), "confusion")
  set.seed(1)
  tn <- kl_tune(tinyline, matrix(1:10, ncol = 1L), 2 * (1:10), folds = 2,
                grid = list(slope = c(1, 2)))
  expect_output(print(tn), "Tuning tinyline over 2 grid points")
  expect_output(print(tn), "best \\(row 2\\): slope = 2")
})

test_that("bad input gives clear errors", {
  d <- make_class_data(c(a = 6, b = 6))
  expect_error(kl_cv(tinycent, d$x, d$y, folds = 13), "'folds' \\(13\\) must not exceed")
  expect_error(kl_cv(tinycent, d$x, d$y, folds = 1), "'folds' must be at least 2")
  expect_error(kl_cv(tinycent, d$x, d$y, folds = 2.5), "'folds' must be a single whole")
  expect_error(kl_cv(tinycent, d$x, d$y, foldid = c(1, 2, 1)), "'foldid' has length 3")
  expect_error(kl_cv(tinycent, d$x, d$y, foldid = rep(c(1, 3), 6)), "'foldid' must use every")
  expect_error(kl_cv(tinycent, d$x, d$y, foldid = rep(1, 12)), "at least 2 folds")
  expect_error(kl_cv(tinycent, d$x, d$y, metric = "auc"), "unknown metric \"auc\"")
  expect_error(kl_cv(tinycent, d$x, d$y, metric = "mse"), "is for regression")
  expect_error(kl_cv(tinycent, d$x, as.numeric(d$y), metric = "error"),
               "is for classification")
  expect_error(kl_cv(tinycent, d$x, d$y, metric = 3), "'metric' must be one of")
  expect_error(kl_cv("tinycent", d$x, d$y), "'learner' must be a function")
  expect_error(kl_cv(list(), d$x, d$y), "'learner' must be a function")
  expect_error(kl_cv(tinycent, cls ~ .), "'data' is required")
  expect_error(kl_cv(tinycent, d$x), "'y' is required")
  expect_error(kl_cv(tinycent, d$x, d$y[-1]), "has 11 values but there are 12 rows")
  expect_error(kl_cv(tinycent, d$x, as.character(d$y)), "use a factor")
  expect_error(kl_cv(tinycent, letters[1:12], d$y), "'x' must be a formula, a matrix")
  expect_error(kl_cv(tinycent, d$x, d$y, data = d$df), "'data' is used only")
  expect_error(kl_cv(tinycent, d$x, d$y, seed = "a"), "'seed'")

  expect_error(kl_tune(tinyline, d$x, 1:12, grid = 1:3), "'grid' must be a data.frame")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = list()), "no points")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = data.frame()), "no points")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = list(slope = numeric())), "has no values")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = list(1, 2)), "must be named")
  expect_error(kl_tune(tinyline, d$x, 1:12), "'grid' is required")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = list(slope = 1), slope = 2),
               "'slope' is given both")
  expect_error(kl_tune(3, d$x, 1:12, grid = list(slope = 1)), "'learner' must be a function")
  expect_error(kl_tune(tinyline, d$x, 1:12, grid = list(slope = 1), folds = 20),
               "'folds' \\(20\\) must not exceed")

  # failures inside the learner name the fold; predict errors are passed on
  failing <- function(x, y, ...) stop("cannot fit this")
  expect_error(kl_cv(failing, d$x, d$y, folds = 2), "failed in fold 1: cannot fit this")
  expect_error(kl_cv(tinycent, d$x, as.numeric(d$y), folds = 2,
                     metric = structure(function(truth, pred) 0, type = "class")),
               "regression predicts")
  bad_metric <- function(truth, pred) c(1, 2)
  expect_error(kl_cv(tinycent, d$x, d$y, folds = 2, metric = bad_metric),
               "must return a single number")
})

test_that("kl_cv and kl_tune cut a precomputed kernel matrix by rows and columns per fold", {
  x <- as.matrix(iris[, 1:4])
  x01 <- apply(x, 2, function(v) (v - min(v)) / diff(range(v)))
  K <- kernel_matrix(gaussian_kernel(2), x01)
  set.seed(7)
  a <- kl_cv(kernel_svm, K, iris$Species, folds = 5, kernel = "precomputed", cost = 3)
  set.seed(7)
  b <- kl_cv(kernel_svm, x01, iris$Species, folds = 5, gamma = 2, cost = 3, scale = "none")
  expect_identical(a$foldid, b$foldid)
  expect_identical(a$predictions, b$predictions)
  expect_equal(a$fold_metrics, b$fold_metrics)
  set.seed(8)
  ta <- kl_tune(kernel_svm, K, iris$Species, folds = 4, kernel = "precomputed",
                grid = list(cost = c(0.5, 5)))
  set.seed(8)
  tb <- kl_tune(kernel_svm, x01, iris$Species, folds = 4, gamma = 2, scale = "none",
                grid = list(cost = c(0.5, 5)))
  expect_equal(ta$results$mean, tb$results$mean)
  expect_identical(ta$best_model$kernel, "precomputed")
})

test_that("kernel_svm cost paths run on a multisession plan with the sequential results", {
  skip_on_cran()
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  grid <- list(cost = c(0.5, 4, 32), gamma = c(0.5, 2))
  set.seed(11)
  seq_run <- kl_tune(kernel_svm, Species ~ ., data = iris, grid = grid, folds = 4)
  oplan <- future::plan(future::multisession, workers = 2)
  on.exit(future::plan(oplan), add = TRUE)
  set.seed(11)
  par_run <- kl_tune(kernel_svm, Species ~ ., data = iris, grid = grid, folds = 4)
  expect_equal(par_run$results$mean, seq_run$results$mean)
  expect_identical(par_run$best, seq_run$best)
  expect_identical(par_run$cv$predictions, seq_run$cv$predictions)
})

test_that("the kernel_svm cost paths report progress", {
  skip_if_not_installed("progressr")
  n <- 0L
  progressr::with_progress(
    withCallingHandlers({
      set.seed(12)
      kl_tune(kernel_svm, Species ~ ., data = iris, grid = list(cost = c(0.5, 4), gamma = c(0.5, 2)),
              folds = 3)
    }, progression = function(c) n <<- n + 1L),
    handlers = progressr::handler_void(), enable = TRUE)
  expect_gte(n, 3L * 2L)   # a step per (fold, kernel) path, besides the start and the end
})

test_that("a factor level missing from a fold's training rows does not stop cross-validation", {
  set.seed(11)
  n <- 100
  d <- data.frame(x1 = runif(n), x2 = runif(n),
                  g = factor(sample(c("a", "b"), n, TRUE), levels = c("a", "b", "rare")))
  foldid <- rep(1:5, length.out = n)
  d$g[foldid == 1][1:2] <- "rare"   # only in fold 1: its fit on folds 2 to 5 lacks the level
  d$y <- factor(ifelse(d$x1 + d$x2 + 0.3 * (d$g == "b") > 1.1, "p", "q"))
  d$r <- d$x1 - d$x2 + 0.2 * (d$g == "b") + rnorm(n, sd = 0.05)
  # the general path (any learner), the kernel_svm cost path and the tkl cost path
  cv <- kl_cv(kernel_ridge, r ~ x1 + x2 + g, data = d, foldid = foldid, lambda = 0.1,
              kernel = gaussian_kernel(gamma = 0.5))
  expect_true(all(is.finite(cv$fold_metrics)))
  expect_equal(length(cv$predictions), n)
  tu <- kl_tune(kernel_svm, y ~ x1 + x2 + g, data = d, foldid = foldid,
                grid = list(cost = c(1, 10), gamma = 1))
  expect_true(all(is.finite(tu$results$mean)))
  tt <- kl_tune(tkl, r ~ x1 + x2 + g, data = d, foldid = foldid, baseline = FALSE,
                grid = list(cost = c(1, 10)), maxit = 3)
  expect_true(all(is.finite(tt$results$mean)))
  # the held-out rows with the level are predicted as rows with none of the levels seen
  # (the default width depends on the number of columns: the zero column is one more)
  fit <- kernel_ridge(r ~ x1 + x2 + g, data = d[foldid != 1, ], lambda = 0.1,
                      kernel = gaussian_kernel(gamma = 0.5))
  expect_error(predict(fit, d[foldid == 1, ]), "level\\(s\\) 'rare' not seen in training")
  held <- d[foldid == 1, ]
  p_cv <- cv$predictions[foldid == 1]
  expect_equal(p_cv[held$g != "rare"], unname(predict(fit, held[held$g != "rare", ])))
  # a character predictor, with a value only in fold 1
  dc <- d
  dc$g <- as.character(dc$g)
  cvc <- kl_cv(kernel_ridge, r ~ x1 + x2 + g, data = dc, foldid = foldid, lambda = 0.1,
               kernel = gaussian_kernel(gamma = 0.5))
  expect_equal(cvc$predictions, cv$predictions)
  # the model on all rows is unchanged: levels without rows are dropped, an unseen one is an
  # error at predict time
  full <- kernel_ridge(r ~ x1 + x2 + g, data = d[d$g != "rare", ], lambda = 0.1)
  expect_false(any(grepl("rare", full$spec$features)))
  expect_null(getOption("kernlearn.keep_levels"))
})

test_that("kl_cv and kl_tune take a numeric vector x as one column, and a sparse matrix", {
  set.seed(1)
  a <- kl_cv(kernel_svm, iris$Petal.Length, iris$Species, folds = 3)
  set.seed(1)
  b <- kl_cv(kernel_svm, matrix(iris$Petal.Length, ncol = 1), iris$Species, folds = 3)
  expect_equal(a$fold_metrics, b$fold_metrics)
  expect_equal(a$predictions, b$predictions)
  t1 <- kl_tune(kernel_ridge, iris$Petal.Length, iris$Species, grid = list(lambda = c(0.1, 1)),
                folds = 3, seed = 2)
  t2 <- kl_tune(kernel_ridge, matrix(iris$Petal.Length, ncol = 1), iris$Species,
                grid = list(lambda = c(0.1, 1)), folds = 3, seed = 2)
  expect_equal(t1$results, t2$results)
  skip_if_not_installed("Matrix")
  S <- Matrix::Matrix(as.matrix(iris[, 1:4]), sparse = TRUE)
  set.seed(3)
  s <- kl_cv(kernel_svm, S, iris$Species, folds = 3)
  set.seed(3)
  d <- kl_cv(kernel_svm, as.matrix(iris[, 1:4]), iris$Species, folds = 3)
  expect_equal(s$fold_metrics, d$fold_metrics)
  expect_error(kl_cv(kernel_svm, list(1, 2), iris$Species),
               "'x' must be a formula, a matrix \\(dense or sparse\\), a data.frame or a numeric vector \\(got list\\)")
})

test_that("na.action applies to the rows the folds are drawn from", {
  set.seed(51)
  d <- data.frame(y = factor(rep(c("a", "b"), 30)), u = rnorm(60), v = rnorm(60), w = rnorm(60))
  d$u[c(3, 17)] <- NA
  d$w[40] <- NA  # a column the formula does not use
  expect_error(kl_cv(kernel_svm, y ~ u + v, data = d, folds = 3), "na.action = na.omit")
  set.seed(52)
  expect_message(cv <- kl_cv(kernel_svm, y ~ u + v, data = d, folds = 3, na.action = na.omit),
                 "2 row\\(s\\) with missing values dropped by na.action before the folds")
  expect_length(cv$foldid, 58L)
  # the same as cross-validating the complete rows
  set.seed(52)
  ref <- kl_cv(kernel_svm, y ~ u + v, data = d[-c(3, 17), ], folds = 3)
  expect_identical(cv$foldid, ref$foldid)
  expect_equal(cv$fold_metrics, ref$fold_metrics)
  set.seed(53)
  tn <- suppressMessages(kl_tune(kernel_svm, y ~ ., data = d, folds = 3, na.action = na.omit,
                                 grid = list(cost = c(1, 10))))
  expect_length(tn$foldid, 57L)
  expect_error(kl_cv(kernel_svm, y ~ u + v, data = d, folds = 3, na.action = na.fail),
               "kl_cv\\(\\): na.action: missing values")
})

test_that("a warning the fold fits repeat is given once, with the number of fits", {
  warns <- function(expr) {
    w <- character()
    withCallingHandlers(expr, warning = function(cond) {
      w <<- c(w, conditionMessage(cond))
      invokeRestart("muffleWarning")
    })
    w
  }
  noisy <- function(x, y, cost = 1, ...) {
    warning("the learner warns")
    if (cost > 1) warning("a large cost")
    kernel_svm(x, y, cost = cost, ...)
  }
  x <- as.matrix(iris[, 1:4])
  set.seed(61)
  w <- warns(kl_tune(noisy, x, iris$Species, grid = list(cost = c(1, 10)), folds = 3,
                     refit = FALSE))
  expect_identical(w, c("the learner warns (in 6 of 6 fits)", "a large cost (in 3 of 6 fits)"))
  set.seed(61)
  w <- warns(kl_cv(noisy, x, iris$Species, folds = 3))
  expect_identical(w, "the learner warns (in 3 of 3 fits)")
  # the warm-started path prepares every fold's rows itself: one warning for all folds
  d <- iris[1:100, ]  # a response with an unused level
  set.seed(62)
  w <- warns(kl_tune(kernel_svm, Species ~ ., data = d, grid = list(cost = c(1, 10)),
                     folds = 3, refit = FALSE))
  expect_identical(w, "kl_tune(): dropping unused level(s) 'virginica' of 'Species' (in 3 of 3 folds)")
})
