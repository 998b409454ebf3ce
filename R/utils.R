# Small internal helpers shared by all learners.

# Package state that lives for the R session (backend probe results, one-time messages).
.kl_state <- new.env(parent = emptyenv())

# Two integers drawn with R's RNG: the seed of the core's own random engine. set.seed()
# therefore makes every random choice of the core reproducible.
.kl_seed <- function() sample.int(.Machine$integer.max, 2L)

# Values beyond this in an input or a response that is used as given overflow the squares the
# learners form (squared distances, squared errors); they are refused with an error.
.kl_overflow_limit <- 1e150

# More threads than this are refused: OpenMP would try to start them all (a billion hangs).
.kl_max_threads <- 1024L

# Thread count: argument > option kernlearn.threads > env KERNLEARN_THREADS > 2. A bad value
# is an error naming where it came from.
.kl_threads <- function(threads = NULL) {
  from <- "'threads'"
  shown <- NULL
  if (is.null(threads)) {
    threads <- getOption("kernlearn.threads", NULL)
    from <- "options(kernlearn.threads)"
    if (is.null(threads)) {
      env <- Sys.getenv("KERNLEARN_THREADS", "")
      from <- "the environment variable KERNLEARN_THREADS"
      shown <- sprintf("\"%s\"", env)
      threads <- if (nzchar(env)) suppressWarnings(as.numeric(env)) else 2
    }
  }
  if (!is.numeric(threads) || length(threads) != 1L || is.na(threads) ||
      !is.finite(threads) || threads < 1 || threads > .kl_max_threads ||
      threads != round(threads))
    stop(sprintf("%s must be a single whole number from 1 to %d (got %s)", from,
                 .kl_max_threads, if (is.null(shown)) .show_value(threads) else shown),
         call. = FALSE)
  as.integer(threads)
}

# The package's argument checks: a single number in a range (whole when asked), or a single
# TRUE / FALSE. `caller` ("gem()") prefixes the message when given. Both return the value.
.check_number <- function(x, name, lower = -Inf, upper = Inf, lower_open = FALSE,
                          integer = FALSE, null_ok = FALSE, caller = NULL) {
  if (is.null(x) && null_ok) return(invisible(NULL))
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && is.finite(x)
  if (ok) ok <- if (lower_open) x > lower else x >= lower
  if (ok) ok <- x <= upper
  if (ok && integer) ok <- x == round(x) && abs(x) <= .Machine$integer.max
  if (!ok) {
    what <- if (integer) "a whole number" else "a number"
    bound <- if (is.finite(lower)) paste0(if (lower_open) " > " else " >= ", format(lower)) else ""
    ubound <- if (is.finite(upper)) paste0(" and <= ", format(upper)) else ""
    stop(sprintf("%s'%s' must be %s%s%s (got %s)", if (is.null(caller)) "" else paste0(caller, ": "),
                 name, what, bound, ubound, .show_value(x)), call. = FALSE)
  }
  invisible(x)
}

.check_flag <- function(x, name, caller = NULL) {
  if (!is.logical(x) || length(x) != 1L || is.na(x))
    stop(sprintf("%s'%s' must be TRUE or FALSE", if (is.null(caller)) "" else paste0(caller, ": "),
                 name), call. = FALSE)
  invisible(x)
}

.show_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (length(x) != 1L) return(sprintf("a %s of length %d", class(x)[1L], length(x)))
  if (is.character(x)) return(sprintf("\"%s\"", x))
  format(x)
}

.fmt_bytes <- function(b) {
  units <- c("B", "KiB", "MiB", "GiB", "TiB")
  i <- max(1L, min(length(units), floor(log(max(b, 1), 1024)) + 1L))
  sprintf("%.1f %s", b / 1024^(i - 1L), units[i])
}

# Memory the exact solvers may use, in bytes (NA when unknown).
.kl_memory_limit <- function() {
  opt <- getOption("kernlearn.max_memory", NULL)
  if (!is.null(opt)) {
    .check_number(opt, "options(kernlearn.max_memory)", lower = 0, lower_open = TRUE)
    return(as.numeric(opt))
  }
  if (file.exists("/proc/meminfo")) {
    lines <- tryCatch(readLines("/proc/meminfo", warn = FALSE), error = function(e) character())
    hit <- grep("^MemAvailable:", lines, value = TRUE)
    if (length(hit)) {
      kb <- suppressWarnings(as.numeric(gsub("[^0-9]", "", hit[1L])))
      if (!is.na(kb)) return(kb * 1024)
    }
  }
  NA_real_
}

# Stops with an error naming the limit when `bytes` do not fit in the available memory.
.check_memory <- function(bytes, what, caller, hint) {
  limit <- .kl_memory_limit()
  if (!is.na(limit) && bytes > limit)
    stop(sprintf("%s: %s needs %s but only %s of memory is available%s",
                 caller, what, .fmt_bytes(bytes), .fmt_bytes(limit), hint), call. = FALSE)
  invisible(TRUE)
}

# A progress function for the core: called with the fraction of work done since the last
# call. NULL when progressr is not installed. The progressor belongs to the caller's frame and
# finishes when that function returns.
.kl_progressor <- function(envir = parent.frame()) {
  if (!requireNamespace("progressr", quietly = TRUE)) return(NULL)
  p <- progressr::progressor(steps = 1000L, envir = envir)
  function(delta) p(amount = round(1000 * delta))
}

# Evaluates expr with the warnings of internal fits on folds silenced: a class with fewer rows
# than folds (the caller has said so once) and the response levels a fold's rows lack.
.kl_quiet_folds <- function(expr) {
  withCallingHandlers(expr, warning = function(w) {
    if (grepl("fewer rows than folds|unused level", conditionMessage(w)))
      invokeRestart("muffleWarning")
  })
}

# One of a set of strings (the first element of v, as match.arg's default vectors give), or
# an error listing the choices.
.kl_choice <- function(v, choices, name, caller) {
  if (!is.character(v) || length(v) < 1L || anyNA(v) || !(v[1L] %in% choices))
    stop(sprintf("%s: '%s' must be one of %s", caller, name,
                 paste0("\"", choices, "\"", collapse = ", ")), call. = FALSE)
  v[1L]
}

# The call a model stores: the generic as the user writes it (so that update() works), with
# the formula as its first, unnamed argument.
.kl_call <- function(cl, generic) {
  cl[[1L]] <- as.name(generic)
  nm <- names(cl)
  if (!is.null(nm)) {
    nm[nm == "formula"] <- ""
    names(cl) <- nm
  }
  cl
}

# Validation rows for choosing a penalty inside a fit: a fifth of the rows (at most 10000),
# stratified by class for a factor (at least one row of every class with two or more, and never
# a class's last row); NULL when there are fewer than 50 rows or no class has two.
.kl_validation_rows <- function(y) {
  n <- length(y)
  if (n < 50L) return(NULL)
  frac <- min(0.2, 10000 / n)
  if (!is.factor(y)) return(sort(sample.int(n, max(1L, round(frac * n)))))
  rows <- split(seq_len(n), y)
  val <- unlist(lapply(rows, function(r) {
    m <- length(r)
    if (m < 2L) return(integer())
    k <- min(m - 1L, max(1L, round(frac * m)))
    r[sample.int(m, k)]
  }), use.names = FALSE)
  if (!length(val)) return(NULL)
  sort(val)
}

# Every call into the C++ core goes through here: fun (a cpp_*() export) is called with `...`
# and its errors become R errors prefixed by the caller ("kernel_svm(): ..."). An error about
# one class (condition "kl_class_error", which the glue raises with the class number, 1-based)
# names the class by its level in `levels`; this is the one place where that happens. A user
# interrupt (Ctrl-C, which the glue turns into R's condition of class "interrupt") is not an
# error: it passes through unchanged and stops the caller as an interrupt.
.kl_core <- function(caller, fun, ..., levels = NULL) {
  # the arguments are evaluated first, so that only the errors of the core get the prefix
  list(...)
  # one handler: tryCatch() nests several, so an error raised by an inner one would reach the
  # outer one
  tryCatch(fun(...), error = function(e) {
    if (!inherits(e, "kl_class_error"))
      stop(sprintf("%s: %s", caller, conditionMessage(e)), call. = FALSE)
    lab <- if (e$index >= 1L && e$index <= length(levels)) sprintf("class '%s'", levels[e$index])
           else sprintf("class %d", e$index)
    stop(sprintf("%s: %s%s%s", caller, e$before, lab, e$after), call. = FALSE)
  })
}
