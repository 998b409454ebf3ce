# hgk(): the fit (.hgk_fit): the candidate start kernels, Algorithm 1 on each (in
# cross-validation when there are several), the final predictor and the input relevance.

.hgk_fit <- function(inp, depth, nodes, kernel, candidates, saturation, loss, gradient, final,
                     folds, gamma, lambda, probability, control, scale, threads, call) {
  caller <- "hgk()"
  loss <- .kl_choice(loss, c("ls", "hinge"), "loss", caller)[1L]
  gradient <- .kl_choice(gradient, c("bilevel", "fixed"), "gradient", caller)[1L]
  final <- .kl_choice(final, c("refit", "average"), "final", caller)[1L]
  if (!inherits(control, "hgk_control"))
    stop(sprintf("%s: 'control' must come from hgk_control()", caller), call. = FALSE)
  if (loss == "hinge" && inp$task != "classification")
    stop(sprintf("%s: loss = \"hinge\" is for classification; this is a regression (use loss = \"ls\")",
                 caller), call. = FALSE)
  if (!is.logical(probability) || length(probability) != 1L || is.na(probability))
    stop(sprintf("%s: 'probability' must be TRUE or FALSE", caller), call. = FALSE)
  if (probability && loss != "hinge")
    stop(sprintf("%s: probability = TRUE needs loss = \"hinge\"; least-squares outputs are not probabilities",
                 caller), call. = FALSE)
  grid_vec <- function(v, name) {
    if (is.null(v)) return(NULL)
    if (!is.numeric(v) || !length(v) || any(!is.finite(v)) || any(v <= 0))
      stop(sprintf("%s: '%s' must be NULL or a vector of positive numbers", caller, name),
           call. = FALSE)
    sort(unique(as.numeric(v)))
  }
  gamma <- grid_vec(gamma, "gamma")
  lambda <- grid_vec(lambda, "lambda")
  threads <- .kl_threads(threads)
  x <- inp$x
  n <- nrow(x)
  d <- ncol(x)
  if (!is.numeric(folds) || length(folds) != 1L || !is.finite(folds) || folds != round(folds) ||
      folds < 2)
    stop(sprintf("%s: 'folds' must be a whole number >= 2", caller), call. = FALSE)
  folds <- as.integer(folds)
  archs <- .hgk_architectures(depth, nodes, kernel, candidates, saturation, d, caller)
  .hgk_check_rows(n, folds, control$split, final, length(archs), caller)
  .check_memory(8 * (n * (folds - 1) / folds)^2 * 2.5,
                sprintf("hgk() on %d rows (kernel matrices of the fit and validation parts)", n),
                caller, hint = "; subsample the rows")

  if (inp$task == "classification") {
    Y <- .pm1_targets(inp$y)
    yr <- NULL
  } else {
    yr <- range(inp$y)
    if (yr[2L] <= yr[1L])
      stop(sprintf("%s: the response is constant (%s); there is nothing to learn", caller,
                   format(yr[1L])), call. = FALSE)
    Y <- matrix(2 * (inp$y - yr[1L]) / (yr[2L] - yr[1L]) - 1, ncol = 1L)
  }
  opts <- list(gradient = gradient, split1 = control$split[1L], split2 = control$split[2L],
               maxit = control$maxit, anneal_steps = control$anneal_steps,
               perturbation = control$perturbation, temperature = control$temperature,
               cooling = control$cooling, patience = control$patience,
               reshuffles = control$reshuffles, gammas = gamma, lambdas = lambda)
  ctx <- list(x = x, Y = Y, y = inp$y, task = inp$task, levels = inp$levels, opts = opts,
              loss = loss, probability = probability, threads = threads, d = d,
              features = colnames(x))

  need_cv <- length(archs) > 1L || final == "average"
  nfits <- (if (need_cv) folds * length(archs) else 0L) + (final == "refit")
  p <- .kl_progressor()
  ctx$progress <- if (is.null(p)) NULL else function(delta) p(delta / nfits)

  t0 <- proc.time()[["elapsed"]]
  cv <- NULL
  fold_models <- NULL
  best <- 1L
  if (need_cv) {
    foldid <- .klcv_folds(list(n = n, task = inp$task, y = inp$y), folds, NULL, caller)$foldid
    errs <- matrix(NA_real_, length(archs), folds)
    fold_models <- vector("list", length(archs))
    for (a in seq_along(archs)) {
      fold_models[[a]] <- vector("list", folds)
      for (f in seq_len(folds)) {
        tr <- which(foldid != f)
        te <- which(foldid == f)
        m <- .hgk_learn_model(ctx, archs[[a]]$kernel, tr, caller)
        errs[a, f] <- .hgk_cv_error(ctx, m, te)
        fold_models[[a]][[f]] <- m
      }
    }
    cv <- data.frame(architecture = vapply(archs, `[[`, "", "label"),
                     depth = vapply(archs, `[[`, 0, "depth"),
                     nodes = vapply(archs, `[[`, 0, "nodes"),
                     saturation = vapply(archs, `[[`, 0, "saturation"),
                     error = rowMeans(errs),
                     se = apply(errs, 1L, stats::sd) / sqrt(folds),
                     stringsAsFactors = FALSE)
    attr(cv, "folds") <- errs
    attr(cv, "criterion") <- if (loss == "hinge") "misclassification rate"
                             else "mean squared error of decisions clipped to [-1, 1]"
    best <- which.min(cv$error)
  }
  arch <- archs[[best]]
  refit_cv <- NULL
  if (final == "average") {
    models <- fold_models[[best]]
  } else {
    m <- .hgk_learn_model(ctx, arch$kernel, seq_len(n), caller, keep = FALSE)
    rc <- .hgk_refit_grid(ctx, m, folds, lambda, caller)
    refit_cv <- rc$table
    m <- .hgk_final_model(ctx, m, seq_len(n), rc$gamma, rc$lambda)
    models <- list(m)
  }
  seconds <- proc.time()[["elapsed"]] - t0
  fit <- structure(
    list(call = call, task = inp$task, levels = inp$levels, spec = inp$spec, x = x, y = inp$y,
         y_range = yr, loss = loss, gradient = gradient, final = final, folds = folds,
         probability = probability, architecture = arch[c("label", "depth", "nodes", "saturation")],
         start_kernel = arch$kernel, cv = cv, refit_cv = refit_cv, models = models,
         control = control, n = n, seconds = seconds),
    class = c("hgk", "kl_model"))
  fit$relevance <- .hgk_relevance(fit)
  fit
}

# The candidate start kernels: list(label, depth, nodes, saturation, kernel).
.hgk_architectures <- function(depth, nodes, kernel, candidates, saturation, d, caller) {
  if (!is.null(saturation) && (!is.numeric(saturation) || length(saturation) != 1L ||
                               !is.finite(saturation) || saturation < 1))
    stop(sprintf("%s: 'saturation' must be NULL or a number >= 1 (got %s)", caller,
                 .show_value(saturation)), call. = FALSE)
  if (!is.null(kernel)) {
    if (!is.null(depth) || !is.null(nodes))
      stop(sprintf("%s: give either 'kernel' (a start tree) or 'depth' / 'nodes', not both", caller),
           call. = FALSE)
    if (!inherits(kernel, "kl_hierarchical_gaussian_kernel"))
      stop(sprintf("%s: 'kernel' must be a hierarchical_gaussian_kernel() (got %s)", caller,
                   class(kernel)[1L]), call. = FALSE)
    .hgk_check_tree(kernel, d, caller)
    ext <- .hgk_extent(kernel)
    return(list(list(label = sprintf("given tree (depth %d)", ext[["depth"]]),
                     depth = ext[["depth"]], nodes = if (is.null(kernel$nodes)) 0 else length(kernel$nodes),
                     saturation = NA_real_, kernel = kernel)))
  }
  if (!is.null(depth)) {
    if (!is.numeric(depth) || length(depth) != 1L || !(depth %in% c(1, 2)))
      stop(sprintf("%s: 'depth' must be 1 or 2 (deeper trees are given as 'kernel')", caller),
           call. = FALSE)
    if (depth == 1 && !is.null(nodes))
      stop(sprintf("%s: a depth-1 kernel has no 'nodes'", caller), call. = FALSE)
  }
  whole_nodes <- function(m, what) {
    if (!is.numeric(m) || !length(m) || any(!is.finite(m)) || any(m != round(m)) || any(m < 0))
      stop(sprintf("%s: '%s' must hold whole numbers (>= 1 nodes, 0 for depth 1)", caller, what),
           call. = FALSE)
    as.integer(m)
  }
  if (!is.null(nodes)) {
    m <- whole_nodes(nodes, "nodes")
    if (length(m) != 1L || m < 1L)
      stop(sprintf("%s: 'nodes' must be one whole number >= 1 (use 'candidates' to compare several)",
                   caller), call. = FALSE)
    if (m > d && is.null(saturation))
      stop(sprintf("%s: nodes = %d exceeds the %d input column(s); give saturation >= %s so that every node sees a column",
                   caller, m, d, format(signif(m / d, 3))), call. = FALSE)
    ms <- m
  } else if (!is.null(depth)) {
    ms <- if (depth == 1) 0L else setdiff(whole_nodes(candidates, "candidates"), 0L)
    if (!length(ms))
      stop(sprintf("%s: depth = 2 needs 'nodes' or node counts >= 1 in 'candidates'", caller),
           call. = FALSE)
  } else {
    ms <- unique(whole_nodes(candidates, "candidates"))
  }
  lapply(ms, function(m) {
    if (m == 0L)
      return(list(label = "depth 1", depth = 1, nodes = 0, saturation = NA_real_,
                  kernel = hierarchical_gaussian_kernel(rep(1, d))))
    sat <- if (is.null(saturation)) max(1, m / d) else saturation
    full <- max(m, floor(d * sat + 1e-9))
    if (full / m > d)
      stop(sprintf("%s: saturation %s deals %d columns to %d node(s), more than the %d columns each node can see",
                   caller, format(sat), full, m, d), call. = FALSE)
    cols <- sample.int(d)[(seq_len(full) - 1L) %% d + 1L]
    blocks <- split(cols, cut(seq_len(full), m, labels = FALSE))
    blocks <- lapply(blocks, function(b) sort(unique(b)))
    k <- hierarchical_gaussian_kernel(weights = lapply(blocks, function(b) rep(1, length(b))),
                                      nodes = unname(blocks), node_weights = rep(sqrt(1 / m), m))
    list(label = sprintf("depth 2, %d nodes", m), depth = 2, nodes = m, saturation = sat,
         kernel = k)
  })
}

# A user tree: every input column under some leaf, none beyond the columns, no zero weight.
.hgk_check_tree <- function(kernel, d, caller) {
  ext <- .hgk_extent(kernel)
  if (ext[["cols"]] > d)
    stop(sprintf("%s: 'kernel' uses column %d but the data have %d input column(s) after encoding",
                 caller, ext[["cols"]], d), call. = FALSE)
  fl <- .hgk_flatten(kernel)
  seen <- unique(unlist(fl$members[fl$leaf])) + 1L
  unseen <- setdiff(seq_len(d), seen)
  if (length(unseen))
    stop(sprintf("%s: 'kernel' does not cover input column(s) %s; every column needs a leaf that sees it",
                 caller, .num_list(unseen)), call. = FALSE)
  w <- unlist(fl$weights)
  if (any(w == 0))
    stop(sprintf("%s: 'kernel' has weights equal to 0; start weights must be non-zero (log-weights are optimised)",
                 caller), call. = FALSE)
  invisible(TRUE)
}

.hgk_check_rows <- function(n, folds, split, final, narch, caller) {
  cv <- narch > 1L || final == "average"
  # The rows the smallest learning run sees (a fold's training rows, or all rows).
  fit_rows <- function(n) if (cv) n - max(tabulate(rep_len(seq_len(folds), n))) else n
  parts_of <- function(m) {
    p <- c(floor(split[1L] * m), floor(split[2L] * m))
    c(p, m - sum(p))
  }
  ok <- function(n) all(parts_of(fit_rows(n)) >= 30L)
  if (!ok(n)) {
    need <- n + 1L
    while (!ok(need) || !ok(need + 1L) || !ok(need + folds)) need <- need + 1L
    m <- fit_rows(n)
    stop(sprintf("%s: too few rows: each learning run sees %d rows, split into parts of %s; each of D1, D2, D3 needs at least 30 (%d rows or more with these settings)",
                 caller, m, paste(parts_of(m), collapse = " / "), need), call. = FALSE)
  }
  invisible(TRUE)
}

# Algorithm 1 on the rows `rows`; returns a model on those rows.
.hgk_learn_model <- function(ctx, start, rows, caller, keep = TRUE) {
  spec <- .kernel_spec(start)
  r <- .kl_core(caller, cpp_hgk_learn, ctx$x[rows, , drop = FALSE], ctx$Y[rows, , drop = FALSE],
                spec, NULL, ctx$opts, .kl_seed(), ctx$threads, ctx$progress)
  k <- .hgk_set_params(start, as.vector(r$weights))
  k$gamma <- r$gamma
  tr <- as.data.frame(r$trace)
  tr$kind <- factor(c("start", "gradient", "annealing", "reshuffle", "final selection")[tr$kind + 1L],
                    levels = c("start", "gradient", "annealing", "reshuffle", "final selection"))
  m <- list(rows = rows, kernel = k, gamma = r$gamma, lambda = r$lambda, gamma0 = r$gamma0,
            alpha = r$alpha, bias = as.vector(r$bias), trace = tr,
            info = list(steps = r$steps, reshuffles = r$reshuffles, stop = r$stop,
                        seconds = if (nrow(tr)) max(tr$seconds) else 0))
  if (keep) m <- .hgk_final_model(ctx, m, rows, m$gamma, m$lambda)
  m
}

# The model's predictor on its rows at (gamma, lambda): the least-squares fit of Algorithm 1
# when these are its own, else refitted; kernel_svm for the hinge loss.
.hgk_final_model <- function(ctx, m, rows, gamma, lambda) {
  if (gamma != m$gamma || lambda != m$lambda) {
    m$kernel$gamma <- gamma
    sol <- .kl_core("hgk()", cpp_kernel_ridge_fit, ctx$x[rows, , drop = FALSE],
                    ctx$Y[rows, , drop = FALSE], .kernel_spec(m$kernel), length(rows) * lambda,
                    TRUE, ctx$threads, .kl_backend_arg(), NULL)
    m$alpha <- sol$alpha
    m$bias <- as.vector(sol$bias)
    m$gamma <- gamma
    m$lambda <- lambda
  }
  if (ctx$loss == "hinge") {
    inp <- list(x = ctx$x[rows, , drop = FALSE], y = ctx$y[rows], task = "classification",
                levels = ctx$levels,
                spec = list(kind = "matrix", columns = ctx$features, features = ctx$features,
                            min = rep(0, ctx$d), scale = rep(1, ctx$d)))
    m$svm <- .kernel_svm_fit(inp, m$kernel, cost = 1 / (2 * length(rows) * m$lambda),
                             gamma = NULL, epsilon = 0.1, type = NULL, class.weights = NULL,
                             probability = ctx$probability, prob_folds = 5L, tol = 1e-3,
                             shrinking = TRUE, cache = 100, max_iter = NULL, warm_start = NULL,
                             threads = ctx$threads, call = NULL)
    m$alpha <- NULL
  }
  m
}

# The decision values of one model on scaled rows.
.hgk_model_decision <- function(m, xtrain, newx, threads, svm_type = "decision",
                                caller = "hgk()") {
  if (!is.null(m$svm)) return(stats::predict(m$svm, newx, type = svm_type, threads = threads))
  .kl_core(caller, cpp_kernel_predict, newx, xtrain[m$rows, , drop = FALSE], m$alpha, m$bias,
           .kernel_spec(m$kernel), threads, .kl_backend_arg())
}

.hgk_cv_error <- function(ctx, m, te) {
  xt <- ctx$x[te, , drop = FALSE]
  if (!is.null(m$svm)) {
    cls <- stats::predict(m$svm, xt, type = "class", threads = ctx$threads)
    return(mean(cls != ctx$y[te]))
  }
  dec <- .hgk_model_decision(m, ctx$x, xt, ctx$threads)
  mean((pmin(pmax(dec, -1), 1) - ctx$Y[te, , drop = FALSE])^2)
}

# final = "refit": (gamma, lambda) by k-fold CV of the least-squares SVM with the learned weights.
.hgk_refit_grid <- function(ctx, m, folds, lambda, caller) {
  n <- nrow(ctx$x)
  gammas <- if (is.null(ctx$opts$gammas)) m$gamma * c(0.5, 1, 2) else ctx$opts$gammas
  n1 <- n - ceiling(n / folds)
  lambdas <- if (is.null(lambda)) exp(seq(log(1e-3 / n1), log(0.1), length.out = 6L)) else lambda
  foldid <- .klcv_folds(list(n = n, task = ctx$task, y = ctx$y), folds, NULL, caller)$foldid
  err <- matrix(0, length(gammas), length(lambdas))
  k <- m$kernel
  for (gi in seq_along(gammas)) {
    k$gamma <- gammas[gi]
    spec <- .kernel_spec(k)
    for (f in seq_len(folds)) {
      tr <- which(foldid != f)
      te <- which(foldid == f)
      for (li in seq_along(lambdas)) {
        sol <- .kl_core(caller, cpp_kernel_ridge_fit, ctx$x[tr, , drop = FALSE],
                        ctx$Y[tr, , drop = FALSE], spec, length(tr) * lambdas[li], TRUE,
                        ctx$threads, .kl_backend_arg(), NULL)
        dec <- .kl_core(caller, cpp_kernel_predict, ctx$x[te, , drop = FALSE],
                        ctx$x[tr, , drop = FALSE], sol$alpha, as.vector(sol$bias), spec,
                        ctx$threads, .kl_backend_arg())
        err[gi, li] <- err[gi, li] +
          sum((pmin(pmax(dec, -1), 1) - ctx$Y[te, , drop = FALSE])^2) / (n * ncol(ctx$Y))
      }
    }
  }
  b <- which(err == min(err), arr.ind = TRUE)[1L, ]
  list(gamma = gammas[b[1L]], lambda = lambdas[b[2L]],
       table = data.frame(gamma = rep(gammas, length(lambdas)),
                          lambda = rep(lambdas, each = length(gammas)), error = as.vector(err)))
}

# The effective weight of each input on the kernel: the square root of the curvature of the
# root's argument along that coordinate at x = z (gamma w_i^2 at depth 1; at depth 2,
# gamma sum_j u_j^2 w_ji^2; and so on down the tree), averaged (in squares) over the models.
.hgk_relevance <- function(fit) {
  d <- ncol(fit$x)
  curv <- function(k) {
    out <- numeric(d)
    if (is.null(k$nodes)) {
      out[seq_along(k$weights)] <- k$weights^2
    } else {
      for (j in seq_along(k$nodes)) {
        nd <- k$nodes[[j]]
        c_j <- if (inherits(nd, "kl_kernel")) curv(nd) else {
          v <- numeric(d)
          for (t in seq_along(nd)) v[nd[t]] <- v[nd[t]] + k$weights[[j]][t]^2
          v
        }
        out <- out + k$node_weights[j]^2 * c_j
      }
    }
    k$gamma * out
  }
  r <- sqrt(Reduce(`+`, lapply(fit$models, function(m) curv(m$kernel))) / length(fit$models))
  names(r) <- colnames(fit$x)
  r
}
