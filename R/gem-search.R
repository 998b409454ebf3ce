# gem(): choosing the ridge and the penalty. Without a ridge, the candidate ridges are compared
# on held-out rows (with a cap on the directions, and on a sample of the rows when there are
# many) and the kept one is fitted (.gem_fit_ridge, the entry of both gem() methods); the
# penalty grids and where the head's search on them starts.

# The ridges compared when `ridge` is not given and the penalty is chosen by validation: 0.1
# was the better of the two on Letter, satimage, pendigits, shuttle, thyroid and the Covertype
# subset, 0.5 on MNIST and dna (bench/gem_defaults.R).
.gem_ridge_candidates <- c(0.1, 0.5)
# The comparison keeps at most this many directions per class pair: on the benchmark sets it
# ranked the two ridges as the full models did, at a fraction of their cost where more
# directions pass the threshold (MNIST: 15 s per candidate instead of 104 and 174 s).
.gem_compare_directions <- 5L
# With more rows than this, the comparison fits use a sample of this many, stratified by class
# (option kernlearn.gem_compare_rows): on MNIST (60000 rows) a sample of 20000 ranked the ridges
# as all rows did, and each comparison fit took 13 to 15 s instead of 25 s.
.gem_compare_rows <- function() {
  v <- getOption("kernlearn.gem_compare_rows", 20000)
  if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 100)
    stop("gem(): option 'kernlearn.gem_compare_rows' must be a number of at least 100",
         call. = FALSE)
  v
}

# After a ridge comparison on a sample, calibrated least squares on all rows takes the penalty
# the sample chose when there are at most this many times as many rows as in the sample. The
# penalty is lambda sqrt(n): whether the best total penalty stays the same as n grows or grows
# with n, the best lambda moves by at most a factor sqrt(n / m) between m and n rows, here at
# most 4, one step of the grid. With more rows, the search on all rows starts at the sample's
# choice.
.gem_sample_reach <- 16

# About m of the rows, sampled within each class in proportion; a class of at most 10 rows is
# kept whole, a larger one keeps at least 10.
.gem_compare_sample <- function(y, m) {
  n <- length(y)
  rows <- split(seq_len(n), y)
  sort(unlist(lapply(rows, function(r) {
    k <- length(r)
    if (k <= 10L) return(r)
    r[sample.int(k, max(10L, round(m / n * k)))]
  }), use.names = FALSE))
}

# Fits with the given ridge; without one, with 0.1 when lambda is given (or there are too few
# rows to validate), else compares the candidate ridges, from the same random state (so the
# same held-out rows, pairs and seeds), by the score of each one's chosen penalty on the
# held-out rows (the search's own criterion: the Brier score for calibrated least squares, the
# error rate then the deviance for logistic regression; the first member's). The comparison
# fits keep at most .gem_compare_directions directions per pair and use at most
# .gem_compare_rows() rows (a stratified sample). Where the cap keeps a direction out or the
# rows are a sample, the core stops such a fit after its penalty search, and the kept ridge is
# then fitted in full on all rows from the random state the comparison started from (the fit
# gem() makes with that ridge given); otherwise the comparison fit is the full fit.
# `settings`: the modelling arguments of gem() by name (.gem_settings); `control`: a
# gem_control().
.gem_fit_ridge <- function(inp, settings, control, threads, call) {
  ridge <- settings$ridge
  lambda <- settings$lambda
  pairs <- settings$pairs
  top <- settings$top
  fit_with <- function(r, keep_max = 0L, data = inp, search_only = FALSE, lambda_start = 1,
                       sample_search = NULL, top_fit = top) {
    s <- settings
    s["ridge"] <- list(r)
    s["top"] <- list(top_fit)
    # (quote = TRUE: `call` is passed as the call it is, not evaluated)
    f <- do.call(.gem_fit, c(list(data), s,
                             list(control = control, threads = threads, call = call,
                                  keep_max = keep_max, search_only = search_only,
                                  lambda_start = lambda_start, sample_search = sample_search)),
                 quote = TRUE)
    f$params$ridge <- r
    f
  }
  if (!is.null(ridge)) return(fit_with(ridge))
  # no penalty search on held-out rows, or no directions for the ridge to change
  if (!is.null(lambda) || length(inp$y) < 50L || (is.character(pairs) && identical(pairs, "none")))
    return(fit_with(.gem_ridge_candidates[1L]))
  if (!exists(".Random.seed", envir = globalenv(), inherits = FALSE)) stats::runif(1)
  state <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
  cap <- if (is.numeric(top) && length(top) == 1L && !is.na(top) &&
             top > .gem_compare_directions) .gem_compare_directions else 0L
  n_cmp <- .gem_compare_rows()
  sampled <- length(inp$y) > n_cmp
  cinp <- inp
  if (sampled) {
    rows <- .gem_compare_sample(inp$y, n_cmp)
    cinp$x <- inp$x[rows, , drop = FALSE]
    cinp$y <- inp$y[rows]
  }
  cstate <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
  # TRUE when the comparison fit f is not the model: the kept ridge is then fitted in full
  refit_needed <- function(f) sampled || (cap > 0L && .gem_cap_binds(f))
  fits <- vector("list", length(.gem_ridge_candidates))
  warns <- vector("list", length(fits))
  fails <- vector("list", length(fits))
  secs <- numeric(length(fits))
  for (i in seq_along(fits)) {
    assign(".Random.seed", cstate, envir = globalenv())
    t0 <- proc.time()[["elapsed"]]
    # each candidate's warnings are held back; only the kept fit's are given
    # on a sample, the comparison fit is never the model, so only the directions it keeps are
    # computed (the eigensolver's cost grows with the number asked for)
    # A candidate that cannot be fitted (most often: with the larger ridge no eigenvalue
    # reaches the threshold) is left out of the comparison; only when none can be fitted is
    # the error given, the smallest ridge's (the largest eigenvalues).
    fi <- tryCatch(withCallingHandlers(fit_with(.gem_ridge_candidates[i], cap, cinp, sampled,
                                                top_fit = if (sampled && cap > 0L) cap else top),
                                       warning = function(w) {
      warns[[i]] <<- c(warns[[i]], list(w))
      invokeRestart("muffleWarning")
    }), error = function(e) e)
    secs[i] <- proc.time()[["elapsed"]] - t0
    if (inherits(fi, "error")) {
      fails[[i]] <- fi
      next
    }
    fits[i] <- list(fi)
    if (is.null(fits[[i]]$members[[1L]]$head$search)) {  # no row could be held out
      if (refit_needed(fits[[i]])) {
        assign(".Random.seed", state, envir = globalenv())
        return(fit_with(.gem_ridge_candidates[i]))
      }
      for (w in warns[[i]]) warning(w)
      return(.gem_uncap(fits[[i]]))
    }
  }
  ok <- !vapply(fits, is.null, NA)
  if (!any(ok)) stop(fails[[which(!vapply(fails, is.null, NA))[1L]]])
  na_row <- data.frame(lambda = NA_real_, error = NA_real_, loss = NA_real_)
  at <- lapply(fits, function(f) {
    if (is.null(f)) return(na_row)
    s <- f$members[[1L]]$head$search
    s[which(s$lambda == f$members[[1L]]$head$lambda)[1L], ]
  })
  err <- vapply(at, `[[`, numeric(1), "error")
  loss <- vapply(at, `[[`, numeric(1), "loss")
  # (order() puts the failed candidates' NA last)
  best <- if (identical(fits[[which(ok)[1L]]]$params$head, "logistic"))
    order(err, loss, seq_along(loss))[1L] else order(loss, seq_along(loss))[1L]
  search <- data.frame(ridge = .gem_ridge_candidates,
                       lambda = vapply(at, `[[`, numeric(1), "lambda"),
                       error = err, loss = loss, seconds = round(secs, 3),
                       failed = vapply(fails, function(e)
                         if (is.null(e)) NA_character_ else conditionMessage(e), ""))
  if (refit_needed(fits[[best]])) {
    # after a comparison on a sample, calibrated least squares takes the penalty the sample
    # chose for the kept ridge when all rows are at most .gem_sample_reach times the sample
    # (a single model), else its local search starts there
    take <- sampled && identical(fits[[best]]$params$head, "cls") &&
      length(fits[[best]]$members) == 1L &&
      length(inp$y) <= .gem_sample_reach * length(cinp$y)
    from <- NULL
    if (take) {
      from <- fits[[best]]$members[[1L]]$head$search
      attr(from, "validation") <- rows[attr(from, "validation")]
      attr(from, "sample_rows") <- length(cinp$y)
      attr(from, "chosen") <- search$lambda[best]
    }
    fits <- NULL
    assign(".Random.seed", state, envir = globalenv())
    t0 <- proc.time()[["elapsed"]]
    fit <- fit_with(.gem_ridge_candidates[best],
                    lambda_start = if (sampled) search$lambda[best] else 1, sample_search = from)
    refit <- proc.time()[["elapsed"]] - t0
  } else {
    fit <- .gem_uncap(fits[[best]])
    for (w in warns[[best]]) warning(w)
    refit <- 0
  }
  attr(search, "directions") <- if (cap > 0L) cap else NA_integer_
  attr(search, "rows") <- length(cinp$y)
  attr(search, "refit_seconds") <- round(refit, 3)
  fit$params$ridge_search <- search
  fit
}

# TRUE when the cap on the directions per pair kept out a direction that passed the threshold,
# in the last layer of any member.
.gem_cap_binds <- function(fit) {
  any(vapply(fit$members, function(m) {
    L <- m$layers[[length(m$layers)]]
    cap <- L$keep_max
    if (is.null(cap) || !length(L$spectra)) return(FALSE)
    kept <- tabulate(L$pair_of, length(L$spectra))
    passed <- vapply(L$spectra, function(s) sum(cumprod(s >= L$threshold)), numeric(1))
    any(kept == cap & passed > cap)
  }, logical(1)))
}

# A fit whose cap on the directions bound nothing is the uncapped fit: the cap is dropped
# from its settings.
.gem_uncap <- function(fit) {
  fit$members <- lapply(fit$members, function(m) {
    m$layers <- lapply(m$layers, function(L) {
      L$keep_max <- NULL
      L
    })
    m
  })
  fit
}

# Penalties searched: a decreasing path for the logistic head (warm-started from the largest),
# powers of 4 around 1 for calibrated least squares. The single value used when there are too
# few rows to validate.
.gem_lambda_grid <- function(head) {
  if (head == "cls") 4^(-7:8) else 10^seq(-1, -4, by = -0.5)
}
.gem_default_lambda <- function(head) if (head == "cls") 1 else 1e-3

# The index (from 0) in `grid` of the first value the local penalty search tries: `from` when
# the grid has it, else 1, else the first.
.gem_search_start <- function(grid, from) {
  i <- match(from, grid)
  if (is.na(i)) i <- match(1, grid, nomatch = 1L)
  i - 1L
}

# The penalty of the head: given, the grid searched on the held-out rows, or the fallback when
# there are too few rows to hold any out.
.gem_grid <- function(head, lambda, val) {
  if (!is.null(lambda)) return(as.double(lambda))
  if (is.null(val)) return(.gem_default_lambda(head))
  .gem_lambda_grid(head)
}
