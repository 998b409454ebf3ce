# gem(): the fit with one ridge (.gem_fit): the settings checked, the class pairs and
# everything random drawn in R, one call into the core for all ensemble members, and the
# model built from what the core returns.

# Columns that are zero on every row after scaling (under the default scalings, every constant
# column) contribute nothing to the model: nothing to the class moments, a zero coordinate in
# every direction, and input features that standardise to 0 with a zero coefficient. They are
# left out of the fit, which costs less (MNIST: 67 of 784 pixels), and out of new data
# (.gem_newdata); a relative ridge keeps its value per column of the whole input (see
# .gem_fit). Not with a random Fourier map, whose draws depend on the number of columns.
# Returns the input without them (and columns_all, the number of columns with them) and
# `active`, the columns kept (NULL: all).
.gem_drop_zero_columns <- function(inp) {
  r <- .kl_core("gem()", cpp_column_range, inp$x, .kl_threads(NULL))
  keep <- which(r[1L, ] != 0 | r[2L, ] != 0)
  if (length(keep) == ncol(inp$x) || !length(keep)) return(list(inp = inp, active = NULL))
  inp$columns_all <- ncol(inp$x)
  inp$x <- inp$x[, keep, drop = FALSE]
  list(inp = inp, active = keep)
}

# One layer's settings, checked. `prefix` names the argument in error messages.
.gem_layer_settings <- function(ridge, ridge_type, top, threshold, nonlinearity, degree,
                                keep_input, ones, caller, prefix = "") {
  nm <- function(a) paste0(prefix, a)
  .check_number(ridge, nm("ridge"), lower = 0, caller = caller)
  ridge_type <- .kl_choice(ridge_type, c("relative", "absolute"), nm("ridge_type"), caller)
  .check_number(top, nm("top"), lower = 1, upper = 1e6, integer = TRUE, caller = caller)
  .check_number(threshold, nm("threshold"), caller = caller)
  nonlinearity <- .kl_choice(nonlinearity, c("smooth_sqrt", "relu_powers"), nm("nonlinearity"),
                              caller)
  .check_number(degree, nm("degree"), lower = 1, upper = 10, integer = TRUE, caller = caller)
  .check_flag(keep_input, nm("keep_input"), caller)
  list(ridge = as.numeric(ridge), ridge_type = ridge_type, top = as.integer(top),
       threshold = as.numeric(threshold), nonlinearity = nonlinearity,
       degree = as.integer(degree), keep_input = keep_input, ones = ones)
}

# The model settings of gem() checked (errors name the argument): the layers' settings (the
# first layer's from `first_layer` with depth 2), the head, the penalty, the ensemble size and
# the random Fourier map. `ridge` NULL is checked as the first candidate ridge. Returns
# list(layers, head).
.gem_check_model <- function(ridge, ridge_type, top, threshold, nonlinearity, degree,
                             keep_input, head, lambda, depth, first_layer, rff, ensemble,
                             caller) {
  if (is.null(ridge)) ridge <- .gem_ridge_candidates[1L]
  last <- .gem_layer_settings(ridge, ridge_type, top, threshold, nonlinearity, degree,
                              keep_input, ones = FALSE, caller)
  .check_number(depth, "depth", lower = 1, upper = 2, integer = TRUE, caller = caller)
  head <- .kl_choice(head, c("cls", "logistic"), "head", caller)
  if (!is.null(lambda)) .check_number(lambda, "lambda", lower = 0, caller = caller)
  .check_number(ensemble, "ensemble", lower = 1, upper = 1000, integer = TRUE, caller = caller)
  layers <- list(last)
  if (depth == 2) {
    if (!is.list(first_layer))
      stop(sprintf("%s: 'first_layer' must be a list of layer settings", caller), call. = FALSE)
    known <- c("ridge", "ridge_type", "top", "threshold", "nonlinearity", "degree",
               "keep_input")
    unknown <- setdiff(names(first_layer), known)
    if (length(unknown) || (length(first_layer) && is.null(names(first_layer))))
      stop(sprintf("%s: 'first_layer' has unknown setting(s) %s (known: %s)", caller,
                   .name_list(if (length(unknown)) unknown else "<unnamed>"),
                   .name_list(known, 10L)), call. = FALSE)
    fl <- utils::modifyList(list(ridge = 0.1, ridge_type = "relative", top = 20,
                                 threshold = 0, nonlinearity = "smooth_sqrt", degree = 1,
                                 keep_input = FALSE), first_layer)
    layers <- list(.gem_layer_settings(fl$ridge, fl$ridge_type, fl$top, fl$threshold,
                                       fl$nonlinearity, fl$degree, fl$keep_input,
                                       ones = TRUE, caller, prefix = "first_layer$"),
                   last)
  } else if (length(first_layer)) {
    stop(sprintf("%s: 'first_layer' applies only with depth = 2", caller), call. = FALSE)
  }
  if (!is.null(rff)) {
    if (!is.list(rff) || is.null(rff$dim) || is.null(rff$gamma) ||
        length(setdiff(names(rff), c("dim", "gamma"))))
      stop(sprintf("%s: 'rff' must be NULL or list(dim = , gamma = )", caller), call. = FALSE)
    .check_number(rff$dim, "rff$dim", lower = 1, upper = 1e6, integer = TRUE, caller = caller)
    .check_number(rff$gamma, "rff$gamma", lower = 0, lower_open = TRUE, caller = caller)
  }
  list(layers = layers, head = head)
}

# Ordered class pairs (1-based, numerator first) as a two-column integer matrix.
.gem_pairs <- function(pairs, levels, max_pairs, caller) {
  k <- length(levels)
  if (is.character(pairs) && length(pairs) == 1L && !is.matrix(pairs)) {
    kind <- .kl_choice(pairs, c("all", "hypercube", "none"), "pairs", caller)
    if (kind == "none") return(matrix(integer(), 0L, 2L))
    if (kind == "all") {
      if (k * (k - 1) > max_pairs)
        stop(sprintf("%s: pairs = \"all\" with %d classes gives %d ordered pairs, more than max_pairs = %d; use pairs = \"hypercube\" or raise max_pairs in gem_control()",
                     caller, k, k * (k - 1), as.integer(max_pairs)), call. = FALSE)
      g <- expand.grid(num = seq_len(k), den = seq_len(k))
      g <- g[g$num != g$den, , drop = FALSE]
      return(unname(as.matrix(g[order(g$num, g$den), ])))
    }
    return(.gem_hypercube(k))
  }
  if (!is.matrix(pairs) || ncol(pairs) != 2L || nrow(pairs) == 0L)
    stop(sprintf("%s: 'pairs' must be \"all\", \"hypercube\", \"none\" or a two-column matrix of class pairs",
                 caller), call. = FALSE)
  if (is.character(pairs)) {
    bad <- setdiff(as.vector(pairs), levels)
    if (length(bad))
      stop(sprintf("%s: 'pairs' names %s, not a class (levels %s)", caller, .name_list(bad),
                   .name_list(levels)), call. = FALSE)
    pm <- matrix(match(pairs, levels), ncol = 2L)
  } else if (is.numeric(pairs)) {
    if (anyNA(pairs) || any(pairs != round(pairs)) || any(pairs < 1) || any(pairs > k))
      stop(sprintf("%s: numeric 'pairs' must be class numbers between 1 and %d", caller, k),
           call. = FALSE)
    pm <- matrix(as.integer(pairs), ncol = 2L)
  } else {
    stop(sprintf("%s: 'pairs' must be a character or numeric matrix", caller), call. = FALSE)
  }
  if (any(pm[, 1L] == pm[, 2L]))
    stop(sprintf("%s: 'pairs' has a class paired with itself (row %d)", caller,
                 which(pm[, 1L] == pm[, 2L])[1L]), call. = FALSE)
  pm <- unique(pm)
  if (nrow(pm) > max_pairs)
    stop(sprintf("%s: %d class pairs, more than max_pairs = %d of gem_control()", caller,
                 nrow(pm), as.integer(max_pairs)), call. = FALSE)
  unname(pm)
}

# Classes at random vertices of a hypercube; ordered pairs of immediate neighbours. A class
# without a neighbour is paired (both ways) with a random other class.
.gem_hypercube <- function(k) {
  D <- max(1L, as.integer(ceiling(log2(k))))
  vert <- sample.int(2L^D, k) - 1L
  at <- rep(NA_integer_, 2L^D)
  at[vert + 1L] <- seq_len(k)
  out <- list()
  for (a in seq_len(k)) {
    nb <- at[bitwXor(vert[a], 2L^(0:(D - 1L))) + 1L]
    nb <- nb[!is.na(nb)]
    if (length(nb)) out[[length(out) + 1L]] <- cbind(a, nb)
  }
  pm <- if (length(out)) do.call(rbind, out) else matrix(integer(), 0L, 2L)
  lonely <- setdiff(seq_len(k), pm[, 1L])
  for (a in lonely) {
    b <- sample(setdiff(seq_len(k), a), 1L)
    pm <- rbind(pm, c(a, b), c(b, a))
  }
  pm <- unique(pm)
  unname(pm[order(pm[, 1L], pm[, 2L]), , drop = FALSE])
}

# `keep_max` (> 0) caps the directions kept per pair in the last layer (the ridge comparison);
# with `search_only`, the cls head stops after its penalty search (a comparison on a sample).
# `lambda_start`: the first value of the cls head's local penalty search (a value of the grid;
# otherwise 1).
.gem_fit <- function(inp, ridge, ridge_type, top, threshold, pairs, nonlinearity, degree,
                     keep_input, head, lambda, depth, first_layer, rff, ensemble, control,
                     threads, call, keep_max = 0L, search_only = FALSE, lambda_start = 1,
                     sample_search = NULL) {
  caller <- "gem()"
  if (!inherits(control, "gem_control"))
    stop(sprintf("%s: 'control' must come from gem_control()", caller), call. = FALSE)
  maxit <- control$maxit
  tol <- control$tol
  standardize <- control$standardize
  max_pairs <- control$max_pairs
  if (inp$task != "classification")
    stop(sprintf("%s: GEM is a classifier; 'y' must be a factor of class labels", caller),
         call. = FALSE)
  threads <- .kl_threads(threads)
  chk <- .gem_check_model(ridge, ridge_type, top, threshold, nonlinearity, degree, keep_input,
                          head, lambda, depth, first_layer, rff, ensemble, caller)
  layers <- chk$layers
  head <- chk$head
  if (keep_max > 0L) layers[[length(layers)]]$keep_max <- as.integer(keep_max)
  if (search_only) layers[[length(layers)]]$search_only <- TRUE
  cls <- head == "cls"
  if (is.null(maxit)) maxit <- if (cls) 50 else 500
  if (is.null(tol)) tol <- if (cls) 0.002 else 1e-6
  # a penalty chosen on a sample of the rows (sample_search: that search): the rows are held
  # out as for a search on all rows and the directions learned from the others, then the head
  # is fitted on all rows with that penalty, as a search on all rows that chose it would
  on_sample <- !is.null(sample_search)
  if (on_sample) lambda <- attr(sample_search, "chosen")
  # Without the input's zero columns, a relative ridge (ridge x trace / columns) is rescaled so
  # that the first layer's eigenproblems are those of the whole input.
  if (!is.null(inp$columns_all) && layers[[1L]]$ridge_type == "relative")
    layers[[1L]]$ridge_core <- layers[[1L]]$ridge * ncol(inp$x) / inp$columns_all
  lev <- inp$levels
  k <- length(lev)
  hyper <- is.character(pairs) && length(pairs) == 1L && identical(pairs, "hypercube")
  if (ensemble > 1 && !hyper)
    stop(sprintf("%s: ensemble = %d needs pairs = \"hypercube\" (other pair choices give identical members)",
                 caller, as.integer(ensemble)), call. = FALSE)
  if (ensemble > 1 && k < 3L)
    stop(sprintf("%s: ensemble = %d needs at least 3 classes (with 2 every random hypercube gives the same pairs)",
                 caller, as.integer(ensemble)), call. = FALSE)
  if (depth == 2 && is.character(pairs) && length(pairs) == 1L && identical(pairs, "none"))
    stop(sprintf("%s: depth = 2 with pairs = \"none\" leaves the first layer without directions; use depth = 1",
                 caller), call. = FALSE)
  x <- inp$x
  n <- nrow(x)
  yi <- as.integer(inp$y)
  # Everything random is drawn here, member by member (pairs, random Fourier map, held-out
  # rows, eigensolver seeds, warm-start rows); the core then fits all members in one call.
  inputs <- vector("list", ensemble)
  for (m in seq_len(ensemble)) {
    pm <- .gem_pairs(pairs, lev, max_pairs, caller)
    if (nrow(pm) > max_pairs)
      stop(sprintf("%s: %d class pairs, more than max_pairs = %d; raise max_pairs in gem_control()",
                   caller, nrow(pm), as.integer(max_pairs)), call. = FALSE)
    if (nrow(pm) == 0L && !layers[[length(layers)]]$keep_input)
      stop(sprintf("%s: with pairs = \"none\" the input must be kept (keep_input = TRUE)", caller),
           call. = FALSE)
    rmap <- if (is.null(rff)) NULL else .gem_rff_map(ncol(x), rff, length(lev), caller)
    # Without lambda, the penalty is chosen on a stratified held-out part of the rows; the
    # directions are learned from the other rows only (so that the held-out rows are unseen by
    # the features), and the head is refitted on all rows with the chosen penalty.
    val <- if (is.null(lambda) || on_sample) .kl_validation_rows(inp$y) else NULL
    train <- if (is.null(val)) seq_len(n) else setdiff(seq_len(n), val)
    if (layers[[1L]]$ridge == 0 && nrow(pm)) {
      d <- if (is.null(rmap)) ncol(x) else ncol(rmap$W)
      counts <- tabulate(yi[train], k)
      small <- unique(pm[, 2L][counts[pm[, 2L]] < d])
      if (length(small))
        stop(sprintf("%s: with ridge = 0 each denominator class needs at least as many rows as features (%d); class(es) %s have fewer (%s); use ridge > 0",
                     caller, d, .name_list(lev[small]), paste(counts[small], collapse = ", ")),
             call. = FALSE)
    }
    seeds <- lapply(layers, function(l) .kl_seed())
    grid <- .gem_grid(head, lambda, val)
    # Continuation for large n: the logistic optimum on a random fifth of the rows starts the
    # full fit (the objective is a mean, so both optima are close); the result is the full-data
    # optimum.
    m0 <- max(10000L, n %/% 5L)
    warm <- NULL
    if (head == "logistic" && length(grid) == 1L && n >= 3L * m0 && maxit > 0) {
      idx <- sort(sample.int(n, m0))
      if (all(tabulate(yi[idx], k) > 0L)) warm <- idx
    }
    inputs[[m]] <- list(pairs = pm, val = val, rmap = rmap, grid = grid,
                        core = list(num = pm[, 1L], den = pm[, 2L], validation = val,
                                    seeds = seeds, warm = warm, W = rmap$W, b = rmap$b))
  }
  grid <- inputs[[1L]]$grid
  limit <- .kl_memory_limit()
  progress <- .kl_progressor()
  # the fit's options, which the glue reads by name
  options <- list(head = head, lambda = grid, start = .gem_search_start(grid, lambda_start),
                  maxit = as.integer(maxit), tol = as.double(tol), standardize = standardize,
                  eigen_method = control$eigen_method, eigen_tol = control$eigen_tol,
                  single_cells = as.double(.gem_single_cells(head)),
                  single_factor = .gem_single_factor(), single_final = .gem_single_final(),
                  memory_limit = if (is.na(limit)) NA_real_ else as.double(limit),
                  threads = threads, backend = .kl_backend_arg())
  fits <- .kl_core(caller, cpp_gem_fit, x, yi, k, lapply(layers, .gem_layer_core),
                   lapply(inputs, `[[`, "core"), options, progress, levels = lev)
  members <- lapply(seq_len(ensemble), function(m)
    .gem_member_from_core(fits[[m]], inputs[[m]], layers, head, maxit, tol, n, lev, caller))
  if (on_sample) members[[1L]]$head$search <- sample_search
  structure(list(members = members, levels = lev, task = "classification", spec = inp$spec,
                 n = nrow(x), params = list(head = head,
                                            lambda = members[[1L]]$head$lambda,
                                            lambda_chosen = is.null(lambda) || on_sample,
                                            maxit = maxit,
                                            tol = tol, depth = depth, ensemble = ensemble,
                                            standardize = standardize, pairs = if (is.character(pairs)) pairs else "matrix"),
                 call = call),
            class = c("gem", "kl_model"))
}

# Feature matrices with more entries than this are held in single precision: all of them for
# calibrated least squares (its vectorised kernels are single-precision; on the benchmark sets
# the chosen penalty and the test error were those of double precision), the large ones for
# the logistic head.
.gem_single_cells <- function(head) {
  getOption("kernlearn.gem_single_cells", if (head == "cls") 0 else 2.5e7)
}

# The final fit of calibrated least squares factors and solves systems of at least this many
# columns in single precision (falling back to double where that factorisation fails). There
# the factorisation costs most (p^3 / 3 against n p^2 for the Gram matrix, whose entries are
# summed in single precision within blocks of rows anyway); below it the saving is small.
.gem_single_final <- function() {
  as.double(getOption("kernlearn.gem_single_final", 4096))
}

# The penalty search of calibrated least squares factors systems of at least this many columns
# in single precision for the values tried (the final fit is factored in double): all of them
# by default (on the benchmark sets, the same penalties and errors as in double, faster).
.gem_single_factor <- function() {
  as.double(getOption("kernlearn.gem_single_factor", 0))
}

# The settings of a layer as the core reads them.
.gem_layer_core <- function(L) {
  list(ridge = if (is.null(L$ridge_core)) L$ridge else L$ridge_core,
       relative = L$ridge_type == "relative", top = L$top,
       threshold = L$threshold, keep_max = if (is.null(L$keep_max)) 0L else L$keep_max,
       search_only = isTRUE(L$search_only),
       nonlinearity = L$nonlinearity, degree = L$degree, keep_input = L$keep_input,
       ones = L$ones)
}

# A random Fourier map (d inputs, rff$dim features) for a member.
.gem_rff_map <- function(d, rff, k, caller) {
  D <- as.integer(rff$dim)
  # the map (d x D) and, per class, a D x D second moment, plus the eigenproblems' workspace
  .check_memory(8 * (as.numeric(D)^2 * (k + 3) + as.numeric(d) * D),
                sprintf("the random Fourier map's class moments (%d classes, %d x %d each)",
                        k, D, D),
                caller, "; lower 'rff$dim'")
  list(W = matrix(stats::rnorm(d * D, sd = sqrt(2 * rff$gamma)), d, D),
       b = stats::runif(D, 0, 2 * pi), gamma = rff$gamma)
}

# A member of the model from the core's fit: its layers (the settings with the pairs, the kept
# directions and the spectra), the random Fourier map, the standardisation and the head.
.gem_member_from_core <- function(f, input, layers, head, maxit, tol, n, lev, caller) {
  pm <- input$pairs
  fitted <- lapply(seq_along(layers), function(l) {
    cl <- f$layers[[l]]
    kept <- cl$kept
    spectra <- lapply(cl$spectra, as.vector)
    out <- c(layers[[l]], list(pairs = pm, V = cl$V, spectra = spectra,
                               values = unlist(lapply(seq_along(spectra), function(q)
                                 spectra[[q]][seq_len(kept[q])])),
                               pair_of = rep(seq_len(nrow(pm)), kept)))
    if (nrow(pm)) out <- c(out, list(dense = cl$dense, applications = cl$applications))
    else out$values <- numeric()
    out
  })
  h <- f$head
  val <- input$val
  search <- if (is.null(h$search)) NULL
            else structure(data.frame(lambda = h$search$lambda, error = h$search$error,
                                      loss = h$search$loss),
                           train_rows = h$search$train_rows,
                           validation_rows = h$search$validation_rows,
                           validation = val)
  timing <- f$timing
  if (head == "cls" && isTRUE(h$search_only)) {
    # a comparison fit: the penalty search alone, no head to predict with
    return(list(layers = fitted, rff = input$rmap, p = as.integer(h$p), timing = timing,
                head = list(type = "cls", lambda = h$lambda, search = search,
                            search_only = TRUE, seconds = h$seconds)))
  }
  if (head == "cls") {
    if (!isTRUE(h$converged) && tol > 0)
      warning(sprintf("%s: the calibrated least squares took all %d steps without the scores settling (last change %s > tol = %s); raise maxit or tol in gem_control()",
                      caller, as.integer(maxit), format(signif(utils::tail(h$change, 1L), 3)),
                      format(tol)), call. = FALSE)
    # the training rows' final scores, in the caller's row order (for the fitted values)
    scores <- h$scores
    if (!is.null(val)) scores[c(setdiff(seq_len(n), val), val), ] <- h$scores
    W0 <- h$W0
    colnames(W0) <- lev
    return(list(layers = fitted, rff = input$rmap, center = h$center, scale = h$scale,
                p = as.integer(h$p), timing = timing, scores = scores,
                head = list(type = "cls", lambda = h$lambda, search = search, W0 = W0,
                            link = h$link, delta = h$delta,
                            change = as.vector(h$change), train_error = as.vector(h$train_error),
                            iterations = h$iterations, converged = h$converged,
                            single = h$single, single_factor = h$single_factor,
                            exact_gram = isTRUE(h$exact_gram), seconds = h$seconds)))
  }
  # In single precision the line search ends when the objective cannot decrease any more in
  # float arithmetic: that is convergence to the precision of the features.
  if (!isTRUE(h$converged) && !(isTRUE(h$single) && grepl("line search", h$message)))
    warning(sprintf("%s: the logistic regression stopped before converging (%s); raise maxit in gem_control() or 'lambda'",
                    caller, h$message), call. = FALSE)
  coef <- h$coefficients
  colnames(coef) <- lev
  intercept <- as.vector(h$intercept)
  names(intercept) <- lev
  list(layers = fitted, rff = input$rmap, center = h$center, scale = h$scale,
       p = as.integer(h$p), timing = timing,
       head = list(type = "logistic", lambda = h$lambda, search = search,
                   coefficients = coef, intercept = intercept,
                   objective = h$objective,
                   iterations = h$iterations, sub_iterations = h$sub_iterations,
                   converged = h$converged, grad_norm = h$grad_norm,
                   single = h$single, vectorised = h$vectorised))
}
