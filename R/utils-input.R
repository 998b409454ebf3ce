# Shared input handling for every learner: formula and x/y interfaces, validation with errors
# that name the column or argument, [0, 1] scaling stored in the model, and the matching
# preparation of new data at predict time.
#
# .kl_input_formula() and .kl_input_xy() both return
#   list(x = scaled numeric matrix, y = factor or numeric, task, levels, spec)
# where `spec` is everything predict needs to turn new data into the same matrix:
#   list(kind = "formula" | "data.frame" | "matrix", terms, xlevels (factors are one-hot),
#        columns (original predictor columns), features (matrix column names),
#        min, scale (1 / range, 0 for constant columns))

# A formula method's data reach this after .kl_formula_data(): with na.action = na.omit the rows
# with missing values are gone, so an error about missing values here comes from na.fail (the
# default), and it says how to drop them.
.kl_input_formula <- function(formula, data, caller, subset_rows = NULL, scale = TRUE) {
  tryCatch(.kl_input_formula_checked(formula, data, caller, subset_rows, scale),
           error = function(e) {
             msg <- conditionMessage(e)
             if (!grepl("missing or infinite value", msg, fixed = TRUE)) stop(e)
             stop(paste0(msg, "; remove those rows or use na.action = na.omit"), call. = FALSE)
           })
}

.kl_input_formula_checked <- function(formula, data, caller, subset_rows = NULL, scale = TRUE) {
  if (!inherits(formula, "formula"))
    stop(sprintf("%s: 'formula' must be a formula such as y ~ .", caller), call. = FALSE)
  if (missing(data) || is.null(data))
    stop(sprintf("%s: 'data' is required with a formula", caller), call. = FALSE)
  if (is.matrix(data)) data <- as.data.frame(data)
  if (!is.data.frame(data))
    stop(sprintf("%s: 'data' must be a data.frame (got %s)", caller, class(data)[1L]),
         call. = FALSE)
  if (length(formula) != 3L)
    stop(sprintf("%s: the formula needs a response on its left-hand side", caller),
         call. = FALSE)
  vars <- all.vars(formula)
  vars <- setdiff(vars, ".")
  missing_cols <- setdiff(vars, names(data))
  if (length(missing_cols))
    stop(sprintf("%s: 'data' has no column(s) %s", caller,
                 paste0("'", missing_cols, "'", collapse = ", ")), call. = FALSE)
  if (nrow(data) == 0L) stop(sprintf("%s: 'data' has no rows", caller), call. = FALSE)
  used <- if ("." %in% all.vars(formula)) names(data) else intersect(all.vars(formula), names(data))
  lists <- used[vapply(used, function(nm) is.list(data[[nm]]), NA)]
  if (length(lists))
    stop(sprintf("%s: column %s of 'data' is a list; use numeric, factor, character or logical columns",
                 caller, paste0("'", lists, "'", collapse = ", ")), call. = FALSE)
  # (unused response levels are dropped by .kl_check_y() with the same warning as in the x / y
  # interface)
  mf <- stats::model.frame(formula, data = data, na.action = stats::na.pass,
                           drop.unused.levels = FALSE)
  tt <- stats::delete.response(stats::terms(mf))
  if (!is.null(attr(tt, "offset")))
    stop(sprintf("%s: offset() terms are not supported in the formula; give the offset as a column or subtract it from the response",
                 caller), call. = FALSE)
  yname <- deparse(formula[[2L]])
  y <- .kl_check_y(stats::model.response(mf), caller, yname)
  if (length(attr(tt, "term.labels")) == 0L)
    stop(sprintf("%s: the formula has no predictors", caller), call. = FALSE)
  enc <- .encode_frame(data, tt, caller, "data")
  .kl_finish_input(enc$x, y, caller,
                   spec = list(kind = "formula", terms = enc$terms, xlevels = enc$xlevels,
                               columns = all.vars(tt)), scale = scale,
                   indicator = enc$indicator)
}

# The rows of `data` a formula method uses: `subset_expr` (the unevaluated `subset`
# argument: a logical vector or row numbers, evaluated in data) and `na.action` (na.fail, the
# default, leaves missing values to the input checks, which name the column; na.omit and
# na.exclude drop the rows with a missing or non-finite value in a variable of the formula and
# say how many).
.kl_formula_data <- function(formula, data, subset_expr, na.action, caller, env) {
  if (!is.data.frame(data) || !inherits(formula, "formula")) return(data)
  if (!is.null(subset_expr)) {
    r <- eval(subset_expr, data, env)
    n <- nrow(data)
    if (is.logical(r)) {
      if (length(r) != n)
        stop(sprintf("%s: 'subset' is a logical vector of length %d; 'data' has %d rows",
                     caller, length(r), n), call. = FALSE)
      r <- which(r & !is.na(r))
    } else if (is.numeric(r)) {
      if (any(!is.finite(r)) || any(r != round(r)) || any(r < 1 | r > n))
        stop(sprintf("%s: 'subset' must hold row numbers between 1 and %d", caller, n),
             call. = FALSE)
    } else {
      stop(sprintf("%s: 'subset' must be a logical vector or row numbers, not %s", caller,
                   class(r)[1L]), call. = FALSE)
    }
    if (!length(r)) stop(sprintf("%s: 'subset' selects no rows", caller), call. = FALSE)
    data <- data[r, , drop = FALSE]
  }
  mode <- .kl_na_mode(na.action, caller)
  if (mode == "omit") {
    vars <- all.vars(formula)
    cols <- if ("." %in% vars) names(data) else intersect(vars, names(data))
    ok <- rep(TRUE, nrow(data))
    for (nm in cols) {
      v <- data[[nm]]
      bad <- if (is.numeric(v)) !is.finite(v) else is.na(v)
      if (is.matrix(bad)) bad <- rowSums(bad) > 0
      ok <- ok & !bad
    }
    if (!any(ok))
      stop(sprintf("%s: every row has a missing value in a variable of the formula", caller),
           call. = FALSE)
    if (!all(ok)) {
      message(sprintf("%s: %d row(s) with missing or infinite values dropped (na.action = na.omit)",
                      caller, sum(!ok)))
      data <- data[ok, , drop = FALSE]
    }
  }
  data
}

.kl_na_mode <- function(na.action, caller) {
  if (is.null(na.action)) return("fail")
  if (is.character(na.action) && length(na.action) == 1L)
    na.action <- tryCatch(match.fun(na.action), error = function(e) NULL)
  if (identical(na.action, stats::na.fail)) return("fail")
  if (identical(na.action, stats::na.omit) || identical(na.action, stats::na.exclude))
    return("omit")
  stop(sprintf("%s: 'na.action' must be na.fail or na.omit (or na.exclude)", caller),
       call. = FALSE)
}

.kl_input_xy <- function(x, y, caller, scale = TRUE) {
  if (missing(y) || is.null(y))
    stop(sprintf("%s: 'y' is required when 'x' is not a formula", caller), call. = FALSE)
  if (is.data.frame(x)) {
    if (nrow(x) == 0L || ncol(x) == 0L)
      stop(sprintf("%s: 'x' is empty (%d x %d)", caller, nrow(x), ncol(x)), call. = FALSE)
    if (is.null(names(x)) || any(!nzchar(names(x))))
      names(x) <- paste0("V", seq_len(ncol(x)))
    .check_unique_names(names(x), caller, "x")
    .check_frame_values(x, caller, "x")
    if (length(y) != nrow(x))
      stop(sprintf("%s: 'x' has %d rows but 'y' has length %d", caller, nrow(x), length(y)),
           call. = FALSE)
    y <- .kl_check_y(y, caller, "y")
    tt <- stats::terms(stats::reformulate(sprintf("`%s`", names(x))), data = x)
    enc <- .encode_frame(x, tt, caller, "x")
    return(.kl_finish_input(enc$x, y, caller,
                            spec = list(kind = "data.frame", terms = enc$terms,
                                        xlevels = enc$xlevels, columns = names(x)),
                            scale = scale, indicator = enc$indicator))
  }
  x <- .check_numeric_matrix(x, caller, "x")
  .check_unique_names(colnames(x), caller, "x")
  if (length(y) != nrow(x))
    stop(sprintf("%s: 'x' has %d rows but 'y' has length %d", caller, nrow(x), length(y)),
         call. = FALSE)
  y <- .kl_check_y(y, caller, "y")
  .kl_finish_input(x, y, caller, spec = list(kind = "matrix", columns = colnames(x)),
                   scale = scale)
}

# A numeric matrix with column names and finite values, or an error naming the problem.
# A sparse matrix of the Matrix package (dgCMatrix, ...) as a dense one, after a memory check:
# kernels of sparse rows are computed on dense rows here.
.kl_densify <- function(x, caller, name) {
  if (!inherits(x, "sparseMatrix")) return(x)
  .check_memory(8 * as.numeric(nrow(x)) * ncol(x),
                sprintf("the dense form of the sparse '%s' (%d x %d)", name, nrow(x), ncol(x)),
                caller, "; use fewer rows or columns")
  as.matrix(x)
}

# A data.frame of numeric (or logical) columns as a matrix; other columns are an error that
# names them (as.matrix() would make a character matrix of the whole frame).
.kl_numeric_frame <- function(x, caller, name) {
  if (!is.data.frame(x)) return(x)
  bad <- !vapply(x, function(v) is.numeric(v) || is.logical(v), logical(1))
  if (any(bad))
    stop(sprintf("%s: '%s' has non-numeric column(s) %s; a kernel matrix needs numeric inputs (encode factors first, e.g. with model.matrix())",
                 caller, name, .name_list(names(x)[bad])), call. = FALSE)
  as.matrix(x)
}

.check_numeric_matrix <- function(x, caller, name) {
  x <- .kl_densify(x, caller, name)
  if (is.vector(x) && is.numeric(x)) x <- matrix(x, ncol = 1L)
  if (!is.matrix(x))
    stop(sprintf("%s: '%s' must be a numeric matrix or a data.frame (got %s)", caller, name,
                 class(x)[1L]), call. = FALSE)
  if (!is.numeric(x) && !is.logical(x))
    stop(sprintf("%s: '%s' must be numeric (got a %s matrix)", caller, name, typeof(x)),
         call. = FALSE)
  if (nrow(x) == 0L || ncol(x) == 0L)
    stop(sprintf("%s: '%s' is empty (%d x %d)", caller, name, nrow(x), ncol(x)), call. = FALSE)
  storage.mode(x) <- "double"
  if (is.null(colnames(x))) colnames(x) <- paste0("V", seq_len(ncol(x)))
  if (!.kl_core(caller, cpp_all_finite, x, .kl_threads(NULL))) {
    bad <- !is.finite(x)
    cols <- which(colSums(bad) > 0)
    rows <- which(rowSums(bad) > 0)
    stop(sprintf("%s: '%s' has missing or infinite values in column(s) %s (row(s) %s)",
                 caller, name, .name_list(colnames(x)[cols]), .num_list(rows)), call. = FALSE)
  }
  x
}

# Columns are matched by name at predict time, so training names must be unique.
.check_unique_names <- function(nms, caller, name) {
  dup <- unique(nms[duplicated(nms)])
  if (length(dup))
    stop(sprintf("%s: '%s' has duplicated column name(s) %s; columns are matched by name at predict time, so give every column its own name",
                 caller, name, .name_list(dup)), call. = FALSE)
  invisible(TRUE)
}

.name_list <- function(v, max = 5L) {
  s <- paste0("'", utils::head(v, max), "'", collapse = ", ")
  if (length(v) > max) s <- paste0(s, sprintf(" and %d more", length(v) - max))
  s
}

.num_list <- function(v, max = 5L) {
  s <- paste(utils::head(v, max), collapse = ", ")
  if (length(v) > max) s <- paste0(s, sprintf(" and %d more", length(v) - max))
  s
}

# Every predictor column must be numeric, logical, factor or character, with no NA / Inf.
.check_frame_values <- function(df, caller, name) {
  for (nm in names(df)) {
    v <- df[[nm]]
    if (is.character(v)) v <- factor(v)
    if (!(is.numeric(v) || is.factor(v) || is.logical(v)))
      stop(sprintf("%s: column '%s' of '%s' has unsupported type %s", caller, nm, name,
                   class(v)[1L]), call. = FALSE)
    bad <- if (is.numeric(v)) !is.finite(v) else is.na(v)
    if (is.matrix(bad)) bad <- rowSums(bad) > 0
    if (any(bad))
      stop(sprintf("%s: column '%s' of '%s' has %d missing or infinite value(s) (row(s) %s)",
                   caller, nm, name, sum(bad), .num_list(which(bad))), call. = FALSE)
  }
  invisible(TRUE)
}

# Logical columns become 0 / 1 so that they encode the same way whatever values occur.
.logical_to_numeric <- function(df) {
  for (nm in names(df)) if (is.logical(df[[nm]])) df[[nm]] <- as.numeric(df[[nm]])
  df
}

# Factors become one indicator column per level (no reference level is dropped: kernels
# treat all levels alike). Returns the matrix and what predict needs to rebuild it.
# Factor levels without rows are dropped (a level the model never saw is an error at predict
# time), except in the fits of cross-validation folds (.kl_with_fold_levels()).
.encode_frame <- function(df, tt, caller, name) {
  attr(tt, "intercept") <- 0L
  df <- .logical_to_numeric(df)
  mf <- stats::model.frame(tt, df, na.action = stats::na.pass,
                           drop.unused.levels = !isTRUE(getOption("kernlearn.keep_levels")))
  .check_frame_values(mf, caller, name)
  xlevels <- stats::.getXlevels(tt, mf)
  for (nm in names(xlevels)) {
    if (length(xlevels[[nm]]) < 2L)
      stop(sprintf("%s: factor column '%s' of '%s' has a single level ('%s'); remove it",
                   caller, nm, name, xlevels[[nm]][1L]), call. = FALSE)
  }
  x <- .model_matrix(tt, df, xlevels)
  # the indicator columns of factor predictors (the terms that are a factor itself)
  asg <- attr(x, "kl_assign")
  attr(x, "kl_assign") <- NULL
  labs <- attr(tt, "term.labels")
  indicator <- asg > 0L & labs[pmax(asg, 1L)] %in% names(xlevels)
  list(x = x, terms = tt, xlevels = xlevels, indicator = indicator)
}

# Evaluates `expr` (the encoding of a cross-validation fold's training rows with a formula, and
# of its held-out rows) keeping the levels of factor predictors that the fold's rows lack, as
# the data declare them: such a level gets an indicator column of zeros, which the scaling maps
# to 0, so held-out rows with a level rare enough to be missing from the other folds are
# predicted (as rows with none of the levels seen), as by a model on all rows, instead of
# stopping the cross-validation. cross-validation declares every level of the whole data
# (.klcv_spec() makes character predictors factors).
.kl_with_fold_levels <- function(expr) {
  old <- options(kernlearn.keep_levels = TRUE)
  on.exit(options(old))
  expr
}

.model_matrix <- function(tt, df, xlevels) {
  attr(tt, "intercept") <- 0L
  mf <- stats::model.frame(tt, df, xlev = xlevels, na.action = stats::na.pass)
  ca <- lapply(xlevels, function(lv) stats::contrasts(factor(lv, levels = lv), contrasts = FALSE))
  x <- stats::model.matrix(tt, mf, contrasts.arg = if (length(ca)) ca else NULL)
  attr(x, "kl_assign") <- attr(x, "assign")
  attr(x, "assign") <- NULL
  attr(x, "contrasts") <- NULL
  storage.mode(x) <- "double"
  # A factor's indicator columns are named by pasting the level to the column name, which can
  # repeat another column's name (factor V1 with level 1 and a column V11). Columns are found by
  # name at predict time, so every name is made unique, the same way at fit and predict time
  # (the matrix is built from the same terms and levels).
  cn <- colnames(x)
  if (anyDuplicated(cn)) colnames(x) <- make.unique(cn)
  x
}

# y: a factor (classification) or a numeric vector (regression), with no missing values.
.kl_check_y <- function(y, caller, name = "y") {
  if (is.data.frame(y) || (is.matrix(y) && ncol(y) > 1L))
    stop(sprintf("%s: '%s' must be a vector or factor, not a matrix", caller, name),
         call. = FALSE)
  if (is.matrix(y)) y <- drop(y)
  if (is.character(y) || is.logical(y))
    stop(sprintf("%s: '%s' is %s; use a factor for classification or a numeric vector for regression",
                 caller, name, typeof(y)), call. = FALSE)
  if (!(is.factor(y) || is.numeric(y)))
    stop(sprintf("%s: '%s' must be a factor or numeric (got %s)", caller, name, class(y)[1L]),
         call. = FALSE)
  if (length(y) == 0L) stop(sprintf("%s: '%s' is empty", caller, name), call. = FALSE)
  bad <- if (is.numeric(y)) !is.finite(y) else is.na(y)
  if (any(bad))
    stop(sprintf("%s: '%s' has %d missing or infinite value(s) (row(s) %s)", caller, name,
                 sum(bad), .num_list(which(bad))), call. = FALSE)
  if (is.factor(y)) {
    # an ordered factor's classes are classes: its order plays no part in any learner
    if (is.ordered(y)) y <- factor(y, levels = levels(y), ordered = FALSE)
    unused <- setdiff(levels(y), levels(droplevels(y)))
    if (length(unused)) {
      warning(sprintf("%s: dropping unused level(s) %s of '%s'", caller, .name_list(unused),
                      name), call. = FALSE)
      all_levels <- levels(y)
      y <- droplevels(y)
      # the response's own levels, kept for the predicted classes (.kl_finish_input())
      attr(y, "kl_all_levels") <- all_levels
    }
    if (nlevels(y) < 2L)
      stop(sprintf("%s: '%s' has only one class ('%s'); classification needs at least two",
                   caller, name, levels(y)[1L]), call. = FALSE)
  } else {
    y <- as.numeric(y)
  }
  y
}

# The input scaling of a learner's `scale` argument: TRUE or "minmax" (to [0, 1] with the
# training range), "standardize" (centred, unit standard deviation: what e1071 does), FALSE or
# "none".
.kl_scale_mode <- function(scale, caller) {
  if (is.logical(scale) && length(scale) == 1L && !is.na(scale))
    return(if (scale) "minmax" else "none")
  modes <- c("minmax", "standardize", "none")
  if (!is.character(scale) || length(scale) != 1L || !(scale %in% modes))
    stop(sprintf("%s: 'scale' must be one of \"minmax\", \"standardize\" or \"none\" (or TRUE / FALSE); got %s",
                 caller, .show_value(scale)), call. = FALSE)
  scale
}

# Scales the matrix with its own columns and stores how: to [0, 1] with the min / max
# (scale = TRUE or "minmax"), centred and divided by the standard deviation ("standardize"),
# or the identity map (FALSE or "none"). Constant columns map to 0 (none: kept). indicator:
# which columns are factors' indicators (NULL: none), which "standardize" leaves as they are
# (min / max maps them to themselves).
.kl_finish_input <- function(x, y, caller, spec, scale = TRUE, indicator = NULL) {
  if (nrow(x) == 0L) stop(sprintf("%s: no rows", caller), call. = FALSE)
  mode <- .kl_scale_mode(scale, caller)
  # one pass over the columns each: the values of apply(x, 2, min) and max, or of colMeans(x)
  # and apply(x, 2, sd)
  if (mode == "minmax") {
    r <- .kl_core(caller, cpp_column_range, x, .kl_threads(NULL))
    mn <- r[1L, ]
    rg <- r[2L, ] - mn
    sc <- ifelse(rg > 0, 1 / rg, 0)
  } else if (mode == "standardize") {
    if (nrow(x) > 1L) {
      r <- .kl_core(caller, cpp_column_mean_sd, x, .kl_threads(NULL))
      mn <- r[1L, ]
      sdv <- r[2L, ]
    } else {
      mn <- colMeans(x)
      sdv <- rep(0, ncol(x))
    }
    sc <- ifelse(sdv > 0, 1 / sdv, 0)
    # factors' indicator columns stay 0 / 1, as e1071::svm() leaves them (only numeric
    # columns are standardised there)
    if (length(indicator) == ncol(x) && any(indicator)) {
      mn[indicator] <- 0
      sc[indicator] <- 1
    }
  } else {
    mn <- rep(0, ncol(x))
    sc <- rep(1, ncol(x))
  }
  big <- if (mode == "none" && length(x)) max(abs(range(x))) else 0
  if (big > .kl_overflow_limit)
    stop(sprintf("%s: input values as large as %s overflow the kernels' squared distances; scale the inputs (scale = TRUE) or rescale 'x'",
                 caller, format(signif(big, 3))), call. = FALSE)
  if (mode != "none" && nrow(x) > 1L && all(sc == 0))
    stop(sprintf("%s: every input column is constant (all %d rows are the same point): there is nothing to learn from",
                 caller, nrow(x)), call. = FALSE)
  spec$features <- colnames(x)
  # levels of the response without rows: the model has no class for them, but its predicted
  # classes keep them as levels (.kl_all_levels())
  spec$response_levels <- attr(y, "kl_all_levels")
  attr(y, "kl_all_levels") <- NULL
  spec$scaling <- mode
  spec$min <- unname(mn)
  spec$scale <- unname(sc)
  xs <- .scale_apply(x, spec, caller)
  task <- if (is.factor(y)) "classification" else "regression"
  list(x = xs, y = y, task = task, levels = if (is.factor(y)) levels(y) else NULL, spec = spec)
}

# How the inputs were scaled, for print methods.
.kl_scaling_text <- function(spec) {
  switch(if (is.null(spec$scaling)) "minmax" else spec$scaling,
         minmax = "scaled to [0, 1]", standardize = "standardized", none = "not scaled")
}

.scale_apply <- function(x, spec, caller = "scaling") {
  # (x - min) * scale column by column, as two sweep()s give it, in one pass
  if (!is.double(x)) storage.mode(x) <- "double"
  x <- .kl_core(caller, cpp_scale_columns, x, as.double(spec$min), as.double(spec$scale),
                .kl_threads(NULL))
  dimnames(x) <- list(NULL, spec$features)
  x
}

# New data at predict time: the same columns, encodings and scaling as the training data.
.kl_newdata <- function(spec, newdata, caller) {
  if (missing(newdata) || is.null(newdata))
    stop(sprintf("%s: 'newdata' is required", caller), call. = FALSE)
  if (spec$kind == "matrix") {
    newdata <- .kl_densify(newdata, caller, "newdata")
    if (is.data.frame(newdata)) {
      if (!all(vapply(newdata, is.numeric, logical(1))))
        stop(sprintf("%s: the model was fitted on a numeric matrix; 'newdata' has non-numeric column(s) %s",
                     caller, .name_list(names(newdata)[!vapply(newdata, is.numeric, logical(1))])),
             call. = FALSE)
      newdata <- as.matrix(newdata)
    }
    # a numeric vector: the one column of a model fitted on one (as a vector x is taken at
    # fit time), else one row
    if (is.vector(newdata) && is.numeric(newdata) && length(spec$columns) == 1L)
      newdata <- matrix(newdata, ncol = 1L, dimnames = list(NULL, spec$columns))
    if (is.vector(newdata) && is.numeric(newdata)) {
      if (length(spec$columns) != length(newdata))
        stop(sprintf("%s: 'newdata' is a numeric vector of length %d; as one row it needs one value for each of the model's %d input columns (give several rows as a matrix or data.frame)",
                     caller, length(newdata), length(spec$columns)), call. = FALSE)
      newdata <- matrix(newdata, nrow = 1L, dimnames = list(NULL, spec$columns))
    }
    if (!is.matrix(newdata))
      stop(sprintf("%s: 'newdata' must be a numeric matrix or data.frame (got %s)", caller,
                   class(newdata)[1L]), call. = FALSE)
    cols <- spec$columns
    if (!is.null(colnames(newdata)) && all(cols %in% colnames(newdata))) {
      newdata <- newdata[, cols, drop = FALSE]
    } else if (!is.null(colnames(newdata)) && !all(grepl("^V[0-9]+$", cols))) {
      stop(sprintf("%s: 'newdata' lacks column(s) %s", caller,
                   .name_list(setdiff(cols, colnames(newdata)))), call. = FALSE)
    } else if (ncol(newdata) != length(cols)) {
      stop(sprintf("%s: 'newdata' has %d columns but the model was fitted on %d", caller,
                   ncol(newdata), length(cols)), call. = FALSE)
    }
    if (nrow(newdata) == 0L)
      return(matrix(numeric(), 0L, length(spec$features), dimnames = list(NULL, spec$features)))
    x <- .check_numeric_matrix(newdata, caller, "newdata")
    colnames(x) <- cols
    return(.scale_apply(x, spec, caller))
  }
  if (is.matrix(newdata)) newdata <- as.data.frame(newdata)
  if (!is.data.frame(newdata))
    stop(sprintf("%s: 'newdata' must be a data.frame (got %s)", caller, class(newdata)[1L]),
         call. = FALSE)
  miss <- setdiff(spec$columns, names(newdata))
  if (length(miss))
    stop(sprintf("%s: 'newdata' lacks column(s) %s", caller, .name_list(miss)), call. = FALSE)
  if (nrow(newdata) == 0L)
    return(matrix(numeric(), 0L, length(spec$features), dimnames = list(NULL, spec$features)))
  df <- .logical_to_numeric(newdata[, spec$columns, drop = FALSE])
  .check_frame_values(df, caller, "newdata")
  for (nm in intersect(names(spec$xlevels), names(df))) {
    v <- df[[nm]]
    if (is.numeric(v))
      stop(sprintf("%s: column '%s' of 'newdata' is numeric but was a factor in training",
                   caller, nm), call. = FALSE)
    v <- as.character(v)
    new_lv <- setdiff(unique(v), spec$xlevels[[nm]])
    if (length(new_lv))
      stop(sprintf("%s: column '%s' of 'newdata' has level(s) %s not seen in training", caller,
                   nm, .name_list(new_lv)), call. = FALSE)
    df[[nm]] <- factor(v, levels = spec$xlevels[[nm]])
  }
  num_cols <- setdiff(spec$columns, names(spec$xlevels))
  num_cols <- num_cols[vapply(num_cols, function(nm) !any(grepl(nm, names(spec$xlevels), fixed = TRUE)),
                              logical(1))]
  for (nm in num_cols) {
    if (is.factor(df[[nm]]) || is.character(df[[nm]]))
      stop(sprintf("%s: column '%s' of 'newdata' is %s but was numeric (or logical) in training",
                   caller, nm, if (is.factor(df[[nm]])) "a factor" else "character"),
           call. = FALSE)
  }
  x <- .model_matrix(spec$terms, df, spec$xlevels)
  miss <- setdiff(spec$features, colnames(x))
  if (length(miss))
    stop(sprintf("%s: 'newdata' could not be encoded like the training data (missing %s)",
                 caller, .name_list(miss)), call. = FALSE)
  x <- x[, spec$features, drop = FALSE]
  .scale_apply(x, spec, caller)
}

# predict() type handling shared by the learners.
.kl_predict_type <- function(type, task, caller, prob = TRUE) {
  choices <- c("class", "prob", "response", "decision")
  if (is.null(type)) type <- if (task == "classification") "class" else "response"
  if (!is.character(type) || length(type) != 1L || !(type %in% choices))
    stop(sprintf("%s: 'type' must be one of %s", caller,
                 paste0("\"", choices, "\"", collapse = ", ")), call. = FALSE)
  if (task == "regression" && type %in% c("class", "prob"))
    stop(sprintf("%s: type = \"%s\" is for classification; this model is a regression (use \"response\")",
                 caller, type), call. = FALSE)
  if (task == "classification" && type == "response")
    stop(sprintf("%s: type = \"response\" is for regression; use \"class\", \"prob\" or \"decision\"",
                 caller), call. = FALSE)
  if (type == "prob" && !isTRUE(prob))
    stop(sprintf("%s: type = \"prob\" is not available: %s", caller, prob), call. = FALSE)
  type
}

# Class from a decision matrix (one column per class, larger wins), or from a single column
# (binary: positive means the second level).
# The package's convention for predict(type = "decision"): regression, a numeric vector; two
# classes, a numeric vector positive for the second level (a two-column score matrix becomes
# second minus first); more classes, a matrix with one column per level. No row names.
.kl_decision_output <- function(D, levels) {
  D <- as.matrix(D)
  if (is.null(levels)) return(as.vector(D))
  if (length(levels) == 2L)
    return(if (ncol(D) == 2L) as.vector(D[, 2L] - D[, 1L]) else as.vector(D))
  dimnames(D) <- list(NULL, levels)
  D
}

.kl_decision_to_class <- function(dec, levels, all = levels) {
  if (is.null(dim(dec)) || ncol(dec) == 1L) {
    idx <- ifelse(as.vector(dec) > 0, 2L, 1L)
  } else {
    idx <- max.col(dec, ties.method = "first")
  }
  factor(levels[idx], levels = all)
}

# The levels of a classifier's predicted classes: those of the response it was fitted on,
# levels without rows included (as e1071, kernlab and ranger keep them), so that predictions
# compare with held-out labels of the same factor. The model's classes are object$levels.
.kl_all_levels <- function(object) {
  all <- object$spec$response_levels
  if (is.null(all)) object$levels else all
}
