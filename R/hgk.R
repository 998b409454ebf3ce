#' Hierarchical Gaussian kernel learning
#'
#' Learns the weights of a \code{\link{hierarchical_gaussian_kernel}} from the
#' data (Steinwart, Thomann and Schmid, 2016, Algorithm 1) and fits a
#' least-squares SVM (or, with \code{loss = "hinge"}, a
#' \code{\link{kernel_svm}}) with the learned kernel.
#'
#' \strong{Learning the weights.} The training rows are split at random into
#' three parts \eqn{D_1, D_2, D_3} (fractions \code{control$split}). The
#' least-squares SVM is fitted on \eqn{D_1}; its mean squared error on
#' \eqn{D_2} is the objective, a function of the log-weights of the kernel.
#' The width \eqn{\gamma} on top of the root and the penalty \eqn{\lambda} are
#' first chosen on a grid (\eqn{D_1} against \eqn{D_2}). The objective is
#' minimised by gradient descent with an Armijo backtracking line search; at
#' a local minimum (a step gains less than a relative \eqn{10^{-4}}) an
#' annealing phase perturbs one weight at a time (a factor drawn from
#' \eqn{U[1 - p, 1 + p]}) and accepts a worse objective with probability
#' \eqn{\exp(-\Delta / T)}, \eqn{\Delta} the relative increase and
#' \eqn{T = T_0\, c^{s-1}} at step \eqn{s}. After each step the error on
#' \eqn{D_3} is recorded and the weights with the smallest \eqn{D_3} error are
#' kept; after \code{patience} steps without a better \eqn{D_3} error the rows of
#' \eqn{D_1} and \eqn{D_2} are reshuffled (at most \code{reshuffles} times, the
#' next stall ends the run). Finally \eqn{(\gamma, \lambda)} are chosen again
#' on the grid for the learned weights (fit on \eqn{D_1}, validate on
#' \eqn{D_3}, which the optimisation never saw) and the least-squares SVM is
#' fitted on all rows. Everything runs in the
#' C++ core.
#'
#' \code{gradient = "bilevel"} differentiates the validation risk with the SVM
#' re-solved at every weight vector (one Cholesky factorisation per
#' evaluation, the exact gradient); \code{"fixed"} holds the SVM's
#' coefficients fixed between fits, as the paper's update does (cheaper per
#' evaluation, no factorisation in the line search).
#'
#' \strong{Architectures.} Depth 1 has one weight per input column. Depth 2
#' with \eqn{m} nodes: \code{floor(d * saturation)} columns taken from a
#' random permutation of the \eqn{d} columns (wrapped around, so columns
#' repeat when \code{saturation > 1}) are cut into \eqn{m} blocks; each node
#' sees one block. Leaf weights start at 1 and node weights at
#' \eqn{\sqrt{1/m}}{sqrt(1/m)}. A deeper tree is given as \code{kernel}.
#' Without \code{depth}, \code{nodes} or \code{kernel}, the architecture is
#' chosen by \code{folds}-fold cross-validation among \code{candidates} (node
#' counts; 0 is depth 1), the paper's protocol: depth 1 and depth 2 with 4 to
#' 16 nodes.
#'
#' \strong{The final predictor.} With \code{final = "refit"} (the default)
#' the weights of the chosen architecture are learned once more on all rows,
#' \eqn{(\gamma, \lambda)} are chosen by \code{folds}-fold cross-validation
#' of the least-squares SVM (over \eqn{\gamma} in \eqn{\{1/2, 1, 2\}} times
#' the learned width, or the given \code{gamma} values, and the
#' \eqn{\lambda} grid), and the model is fitted on all rows. With
#' \code{final = "average"} (the paper's choice) the prediction is the average
#' of the decision functions of the \code{folds} models fitted in the
#' cross-validation of the chosen architecture, each learned on the rows
#' outside its fold; it costs nothing beyond the cross-validation. The default
#' is the refit because it was as accurate or better in our runs: on 2000
#' training rows of bank32nh, magic and satimage (3 splits each, depth 1 and
#' depth 2 with 8 nodes) its test error was 0.925 to 1.0 times that of the
#' average (lower in 14 of the 18 runs), at about the same time for a given
#' architecture (\code{bench/hgk.R}, section \code{final}).
#'
#' \strong{Targets and errors.} Classification uses \eqn{\pm 1}{+-1} targets
#' (one output for two classes; one-vs-all outputs sharing one kernel for
#' more); regression scales the response to \eqn{[-1, 1]} with its training
#' range. The cross-validation criterion is the paper's: the mean squared
#' error of the decision values clipped to \eqn{[-1, 1]} (for \code{loss =
#' "hinge"}, the misclassification rate). Inputs are scaled to
#' \eqn{[0, 1]} with the training range (\code{scale = TRUE}); factors are
#' one-hot encoded.
#'
#' \strong{Penalty convention.} \eqn{\lambda} is the paper's: the
#' least-squares SVM on \eqn{n} rows solves
#' \eqn{(K + n\lambda I)\alpha = y - b}, so it equals
#' \code{kernel_ridge(lambda = n * lambda)}; the hinge loss uses
#' \code{kernel_svm(cost = 1 / (2 * n * lambda))}.
#'
#' @param x A formula with \code{data}, or a numeric matrix or data.frame of
#'   predictors.
#' @param formula A model formula such as \code{y ~ .}.
#' @param data A data.frame holding the variables of \code{formula}.
#' @param subset Rows of \code{data} to use: a logical vector or row numbers,
#'   evaluated in \code{data} (formula interface).
#' @param na.action What to do with rows with missing values in the variables of
#'   the formula: \code{na.fail} (the default: an error naming the column) or
#'   \code{na.omit} (drop them, with a message saying how many).
#' @param y Response: a factor (classification) or numeric vector
#'   (regression).
#' @param depth \code{NULL} (chosen by cross-validation, or implied by
#'   \code{nodes}), 1 or 2.
#' @param nodes Number of first-layer nodes of a depth-2 kernel.
#' @param kernel A \code{\link{hierarchical_gaussian_kernel}} on the encoded
#'   input columns whose tree (of any depth) is kept and whose weights are the
#'   start values; its \code{gamma} is ignored (the width is chosen on a grid).
#' @param candidates Node counts compared by cross-validation when the
#'   architecture is not given (0 means depth 1).
#' @param saturation Depth 2: the factor \eqn{\ge 1} of columns dealt to the
#'   nodes (see Details). \code{NULL}: 1, or \eqn{m/d} for a candidate with
#'   more nodes than columns. Giving \code{nodes} larger than the number of
#'   columns needs an explicit \code{saturation}.
#' @param loss \code{"ls"} (the least-squares SVM) or \code{"hinge"}
#'   (classification only: the weights are learned with the least-squares
#'   risk, the models are \code{\link{kernel_svm}} fits with the learned
#'   kernel).
#' @param gradient \code{"bilevel"} or \code{"fixed"} (see Details).
#' @param final \code{"refit"} or \code{"average"} (see Details).
#' @param folds Number of cross-validation folds (stratified for
#'   classification).
#' @param gamma Candidate widths on top of the root; \code{NULL}:
#'   \eqn{\gamma_0 \times \{1/4, 1/2, 1, 2, 4, 8\}}, with \eqn{1/\gamma_0} the
#'   median over random pairs of rows of the root's argument at the start
#'   weights.
#' @param lambda Candidate penalties (paper convention, see Details);
#'   \code{NULL}: six values geometric from \eqn{10^{-3}/n_1} to 0.1.
#' @param probability With \code{loss = "hinge"}: fit Platt probability models
#'   so that \code{predict(type = "prob")} works.
#' @param control Optimisation constants: \code{\link{hgk_control}()}.
#' @param scale Scale inputs to \eqn{[0, 1]} with the training range.
#' @param threads Number of threads; default \code{getOption("kernlearn.threads", 2)}.
#' @param ... Not used; unknown arguments are an error.
#' @return An object of class \code{c("hgk", "kl_model")}: a list with
#'   \code{models} (the fold models, or one refit model: training
#'   \code{rows}, \code{kernel}, \code{gamma}, \code{lambda}, coefficients,
#'   \code{trace} and \code{info}), \code{architecture}, the cross-validation
#'   table \code{cv}, \code{relevance} (see \code{\link{plot.hgk}}), the scaled
#'   training inputs \code{x} and the response \code{y}, and what \code{predict}
#'   needs.
#' @references Steinwart, I., Thomann, P. and Schmid, N. (2016). Learning with
#'   hierarchical Gaussian kernels. arXiv:1612.00824.
#' @seealso \code{\link{predict.hgk}}, \code{\link{plot.hgk}},
#'   \code{\link{learned_kernel}}, \code{\link{hgk_control}},
#'   \code{\link{hierarchical_gaussian_kernel}}.
#' @examples
#' set.seed(1)
#' n <- 300
#' x <- matrix(runif(n * 6), n, 6)
#' y <- sin(3 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.05)  # columns 3-6 are noise
#' fit <- hgk(x, y, depth = 1, control = hgk_control(maxit = 10))
#' fit
#' round(fit$relevance, 2)
#' head(predict(fit, x))
#'
#' # classification with a depth-2 kernel of 3 nodes
#' fit2 <- hgk(Species ~ ., data = iris[rep(1:150, 2), ], nodes = 3,
#'             control = hgk_control(maxit = 5))
#' table(predict(fit2, iris), iris$Species)
#' @export
hgk <- function(x, ...) UseMethod("hgk")

#' @rdname hgk
#' @export
hgk.formula <- function(formula, data, depth = NULL, nodes = NULL, kernel = NULL,
                        candidates = c(0, 4, 6, 8, 10, 12, 14, 16), saturation = NULL,
                        loss = c("ls", "hinge"), gradient = c("bilevel", "fixed"),
                        final = c("refit", "average"), folds = 5, gamma = NULL, lambda = NULL,
                        probability = FALSE, control = hgk_control(), scale = TRUE,
                        subset = NULL, na.action = stats::na.fail,
                        threads = NULL, ...) {
  .no_dots(..., caller = "hgk()")
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "hgk()", parent.frame())
  inp <- .kl_input_formula(formula, data, "hgk()", scale = scale)
  .hgk_fit(inp, depth, nodes, kernel, candidates, saturation, loss, gradient, final, folds,
           gamma, lambda, probability, control, scale, threads, .kl_call(match.call(), "hgk"))
}

#' @rdname hgk
#' @export
hgk.default <- function(x, y, depth = NULL, nodes = NULL, kernel = NULL,
                        candidates = c(0, 4, 6, 8, 10, 12, 14, 16), saturation = NULL,
                        loss = c("ls", "hinge"), gradient = c("bilevel", "fixed"),
                        final = c("refit", "average"), folds = 5, gamma = NULL, lambda = NULL,
                        probability = FALSE, control = hgk_control(), scale = TRUE,
                        threads = NULL, ...) {
  .no_dots(..., caller = "hgk()")
  if (inherits(x, "formula"))
    stop("hgk(): use hgk(formula, data = ) with a formula", call. = FALSE)
  inp <- .kl_input_xy(x, y, "hgk()", scale = scale)
  .hgk_fit(inp, depth, nodes, kernel, candidates, saturation, loss, gradient, final, folds,
           gamma, lambda, probability, control, scale, threads, .kl_call(match.call(), "hgk"))
}

#' Optimisation constants of hgk()
#'
#' The constants of the paper's Algorithm 1 that its text does not give.
#' The defaults were chosen on benchmark data (Letter, CCPP, Magic and
#' synthetic Friedman data, 2000-5000 rows): 40/40/20 splits gave the
#' steadiest \eqn{D_3} errors; most runs reach their best \eqn{D_3} error
#' within 15-25 steps, so 30 steps with a patience of 5 and two reshuffles
#' rarely stop a run that was still improving; a perturbation of 0.5 (the
#' authors' later package) with a start temperature of 1\% of relative risk
#' increase accepts a few uphill moves early and almost none after 20 steps.
#'
#' @param split Fractions of the rows in \eqn{D_1} (fit) and \eqn{D_2} (the
#'   objective); the rest is \eqn{D_3} (early stopping). Each part needs at
#'   least 30 rows.
#' @param maxit Optimisation steps (a gradient step, or an annealing phase at
#'   a local minimum). 0 keeps the start weights and only chooses
#'   \eqn{(\gamma, \lambda)}.
#' @param anneal_steps Proposals per annealing phase.
#' @param perturbation \eqn{p \in (0, 1)}: a proposal multiplies one weight by
#'   a factor from \eqn{U[1 - p, 1 + p]}.
#' @param temperature Start temperature \eqn{T_0 \ge 0} on the relative change
#'   of the objective; 0 accepts only improvements.
#' @param cooling Factor \eqn{c \in (0, 1]} of the temperature per step.
#' @param patience Steps without a better \eqn{D_3} error before
#'   \eqn{D_1, D_2} are reshuffled.
#' @param reshuffles Reshuffles at most; the next stall ends the run.
#' @return A list of class \code{"hgk_control"}.
#' @examples
#' hgk_control(maxit = 50, temperature = 0)
#' @export
hgk_control <- function(split = c(0.4, 0.4), maxit = 30, anneal_steps = 5, perturbation = 0.5,
                        temperature = 0.01, cooling = 0.9, patience = 5, reshuffles = 2) {
  caller <- "hgk_control()"
  if (!is.numeric(split) || length(split) != 2L || any(!is.finite(split)) || any(split <= 0) ||
      sum(split) >= 1)
    stop(sprintf("%s: 'split' must be two positive fractions (D1, D2) with a sum below 1", caller),
         call. = FALSE)
  whole <- function(v, name, lower) {
    if (!is.numeric(v) || length(v) != 1L || !is.finite(v) || v != round(v) || v < lower)
      stop(sprintf("%s: '%s' must be a whole number >= %d", caller, name, lower), call. = FALSE)
    as.integer(v)
  }
  num <- function(v, name, ok, what) {
    if (!is.numeric(v) || length(v) != 1L || !is.finite(v) || !ok(v))
      stop(sprintf("%s: '%s' must be %s (got %s)", caller, name, what, .show_value(v)),
           call. = FALSE)
    as.numeric(v)
  }
  num(perturbation, "perturbation", function(v) v > 0 && v < 1, "a number in (0, 1)")
  num(temperature, "temperature", function(v) v >= 0, "a number >= 0")
  num(cooling, "cooling", function(v) v > 0 && v <= 1, "a number in (0, 1]")
  structure(list(split = as.numeric(split), maxit = whole(maxit, "maxit", 0L),
                 anneal_steps = whole(anneal_steps, "anneal_steps", 0L),
                 perturbation = as.numeric(perturbation), temperature = as.numeric(temperature),
                 cooling = as.numeric(cooling), patience = whole(patience, "patience", 1L),
                 reshuffles = whole(reshuffles, "reshuffles", 0L)),
            class = "hgk_control")
}

# ---- fitting ------------------------------------------------------------------------------

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

# ---- methods ------------------------------------------------------------------------------

#' Predict with a learned hierarchical Gaussian kernel model
#'
#' @param object An \code{hgk} model.
#' @param newdata New data with the training columns (a data.frame for formula
#'   fits). Missing means the training data.
#' @param type \code{"class"} (default for classification), \code{"prob"}
#'   (\code{loss = "hinge"} with \code{probability = TRUE}: the averaged
#'   class probabilities), \code{"decision"} (the averaged decision values:
#'   least-squares outputs, one column per class for more than two classes;
#'   for the hinge loss, the pairwise SVM decisions) or \code{"response"}
#'   (default for regression: the prediction on the scale of the response,
#'   decision values clipped to \eqn{[-1, 1]} as in the paper, that is, to the
#'   training range).
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, numeric vector or matrix with one row per row of
#'   \code{newdata}.
#' @examples
#' set.seed(2)
#' fit <- hgk(Species ~ ., data = iris[rep(1:150, 2), ], depth = 1,
#'            control = hgk_control(maxit = 5))
#' head(predict(fit, iris, type = "decision"))
#' @export
predict.hgk <- function(object, newdata, type = NULL, threads = NULL, ...) {
  caller <- "predict.hgk()"
  .no_dots(..., caller = caller)
  prob_ok <- if (object$loss == "hinge" && isTRUE(object$probability)) TRUE
             else if (object$loss == "hinge") "fit with probability = TRUE"
             else "least-squares outputs are not probabilities; use type = \"decision\" or loss = \"hinge\" with probability = TRUE"
  type <- .kl_predict_type(type, object$task, caller, prob = prob_ok)
  threads <- .kl_threads(threads)
  x <- if (missing(newdata) || is.null(newdata)) object$x
       else .kl_newdata(object$spec, newdata, caller)
  lev <- object$levels
  if (nrow(x) == 0L) {
    if (type == "class") return(factor(character(), levels = lev))
    if (type == "prob") return(matrix(numeric(), 0L, length(lev), dimnames = list(NULL, lev)))
    if (type == "decision" && length(lev) > 2L) {
      cn <- if (object$loss == "hinge") .svm_pair_names(lev) else lev
      return(matrix(numeric(), 0L, length(cn), dimnames = list(NULL, cn)))
    }
    return(numeric())
  }
  nm <- length(object$models)
  if (object$loss == "hinge") {
    if (type == "prob" || (type == "class" && isTRUE(object$probability))) {
      P <- Reduce(`+`, lapply(object$models, function(m)
        .hgk_model_decision(m, object$x, x, threads, "prob", caller))) / nm
      if (type == "prob") return(P)
      return(factor(lev[max.col(P, ties.method = "first")], levels = lev))
    }
    D <- Reduce(`+`, lapply(object$models, function(m)
      as.matrix(.hgk_model_decision(m, object$x, x, threads, caller = caller)))) / nm
    if (type == "decision") {
      if (length(lev) == 2L) return(as.vector(D))
      colnames(D) <- .svm_pair_names(lev)
      return(D)
    }
    return(factor(lev[.kl_core(caller, cpp_ovo_vote, D, length(lev))], levels = lev))
  }
  D <- Reduce(`+`, lapply(object$models, function(m)
    .hgk_model_decision(m, object$x, x, threads, caller = caller))) / nm
  if (object$task == "regression") {
    if (type == "decision") return(as.vector(D))
    yr <- object$y_range
    return(yr[1L] + (pmin(pmax(as.vector(D), -1), 1) + 1) / 2 * (yr[2L] - yr[1L]))
  }
  if (type == "class") return(.kl_decision_to_class(D, lev))
  if (ncol(D) == 1L) return(as.vector(D))
  colnames(D) <- lev
  D
}

#' The kernel a model learned
#'
#' @param object A fitted model that learns a kernel (\code{\link{hgk}}).
#' @param ... Passed to methods.
#' @return A kernel object, usable in \code{\link{kernel_matrix}},
#'   \code{\link{kernel_svm}} and \code{\link{kernel_ridge}}; it acts on
#'   inputs scaled as the model scaled them (\code{fit$x} holds the scaled
#'   training inputs).
#' @examples
#' set.seed(3)
#' x <- matrix(runif(900), 300, 3)
#' y <- factor(x[, 1] + x[, 2] > 1)
#' fit <- hgk(x, y, depth = 1, folds = 3, control = hgk_control(maxit = 5))
#' k <- learned_kernel(fit)
#' k
#' svm <- kernel_svm(fit$x, y, kernel = k)
#' mean(predict(svm, fit$x) == y)
#' @export
learned_kernel <- function(object, ...) UseMethod("learned_kernel")

#' @rdname learned_kernel
#' @param fold For \code{final = "average"}: \code{NULL} (the default) gives
#'   the kernel with the geometric mean of the fold models' weights and widths
#'   (one kernel summarising the average); a fold number gives that fold
#'   model's kernel.
#' @export
learned_kernel.hgk <- function(object, fold = NULL, ...) {
  .no_dots(..., caller = "learned_kernel()")
  ms <- object$models
  if (!is.null(fold)) {
    if (!is.numeric(fold) || length(fold) != 1L || !(fold %in% seq_along(ms)))
      stop(sprintf("learned_kernel(): 'fold' must be one of 1..%d", length(ms)), call. = FALSE)
    return(ms[[fold]]$kernel)
  }
  if (length(ms) == 1L) return(ms[[1L]]$kernel)
  w <- exp(Reduce(`+`, lapply(ms, function(m) log(abs(.hgk_params(m$kernel))))) / length(ms))
  k <- .hgk_set_params(ms[[1L]]$kernel, w)
  k$gamma <- exp(mean(log(vapply(ms, `[[`, 0, "gamma"))))
  k
}

#' @export
print.hgk <- function(x, ...) {
  what <- if (x$task == "classification")
    sprintf("%s classification, %d classes",
            if (x$loss == "hinge") "SVM (hinge loss)" else "least-squares SVM", length(x$levels))
  else "least-squares SVM regression"
  cat("Hierarchical Gaussian kernel learning: ", what, "\n", sep = "")
  cat(sprintf("  %d training rows, %d features (scaled to [0, 1])\n", x$n, ncol(x$x)))
  a <- x$architecture
  how <- if (!is.null(x$cv) && nrow(x$cv) > 1L)
    sprintf(" (chosen by %d-fold CV among %d)", x$folds, nrow(x$cv)) else ""
  cat(sprintf("  kernel: %s%s, %s gradient\n", a$label, how, x$gradient))
  if (x$final == "average") {
    cat(sprintf("  predictor: average of the %d fold models", length(x$models)))
    cat(sprintf("; CV error %s\n", format(signif(x$cv$error[x$cv$architecture == a$label][1L], 4))))
  } else {
    m <- x$models[[1L]]
    cat(sprintf("  predictor: refit on all rows, gamma %s, lambda %s (by %d-fold CV)\n",
                format(signif(m$gamma, 4)), format(signif(m$lambda, 4)), x$folds))
  }
  r <- sort(x$relevance, decreasing = TRUE)
  cat("  most relevant inputs: ", paste(sprintf("%s %s", names(utils::head(r, 5L)),
                                                  format(signif(utils::head(r, 5L), 3))),
                                          collapse = ", "), "\n", sep = "")
  invisible(x)
}

#' Summarise a learned hierarchical Gaussian kernel model
#'
#' @param object An \code{hgk} model.
#' @param x A \code{summary.hgk} object.
#' @param ... Not used.
#' @return \code{summary()} returns an object of class \code{"summary.hgk"}:
#'   the cross-validation table of the architectures, one row per model of the
#'   predictor (width, penalty, optimisation steps, reshuffles, why it stopped,
#'   seconds) and the input relevance.
#' @examples
#' set.seed(4)
#' fit <- hgk(Species ~ ., data = iris[rep(1:150, 2), ], depth = 1,
#'            control = hgk_control(maxit = 5))
#' summary(fit)
#' @export
summary.hgk <- function(object, ...) {
  models <- data.frame(
    model = seq_along(object$models),
    rows = vapply(object$models, function(m) length(m$rows), 0L),
    gamma = vapply(object$models, `[[`, 0, "gamma"),
    lambda = vapply(object$models, `[[`, 0, "lambda"),
    steps = vapply(object$models, function(m) m$info$steps, 0L),
    reshuffles = vapply(object$models, function(m) m$info$reshuffles, 0L),
    stop = vapply(object$models, function(m) m$info$stop, ""),
    seconds = vapply(object$models, function(m) m$info$seconds, 0))
  structure(list(model = object, cv = object$cv, models = models,
                 relevance = sort(object$relevance, decreasing = TRUE)),
            class = "summary.hgk")
}

#' @rdname summary.hgk
#' @export
print.summary.hgk <- function(x, ...) {
  print(x$model)
  if (!is.null(x$cv)) {
    cat(sprintf("\nArchitectures by %d-fold CV (%s):\n", x$model$folds,
                attr(x$cv, "criterion")))
    print(x$cv, row.names = FALSE, digits = 4)
  }
  cat("\nModels of the predictor:\n")
  print(x$models, row.names = FALSE, digits = 4)
  cat("\nInput relevance (effective weight on the kernel):\n")
  print(signif(x$relevance, 3))
  cat(sprintf("\nTotal time: %.1f s\n", x$model$seconds))
  invisible(x)
}

#' Plot a learned hierarchical Gaussian kernel model
#'
#' \code{which = "trace"} draws the optimisation of each model of the
#' predictor: the objective (least-squares risk on \eqn{D_2}) and the
#' early-stopping error on \eqn{D_3} after every move (gradient steps,
#' annealing proposals, reshuffles), with accepted annealing proposals
#' marked. \code{which = "relevance"} draws the effective weight of each input
#' on the learned kernel: the square root of the curvature of the kernel's
#' exponent along that coordinate (at depth 1, \eqn{\sqrt{\gamma} |w_i|}),
#' averaged over the models; inputs the kernel ignores have relevance near 0.
#'
#' @param x An \code{hgk} model.
#' @param which \code{"trace"} or \code{"relevance"}.
#' @param ... Passed to the plotting function.
#' @return \code{x}, invisibly.
#' @examples
#' set.seed(5)
#' x <- matrix(runif(1200), 300, 4)
#' y <- sin(4 * x[, 1]) + x[, 2] + rnorm(300, sd = 0.05)
#' fit <- hgk(x, y, depth = 1, folds = 3, control = hgk_control(maxit = 10))
#' plot(fit)
#' plot(fit, which = "relevance")
#' @export
plot.hgk <- function(x, which = c("trace", "relevance"), ...) {
  which <- .kl_choice(which, c("trace", "relevance"), "which", "plot.hgk()")[1L]
  if (which == "relevance") {
    r <- sort(x$relevance, decreasing = TRUE)
    graphics::barplot(r, las = 2, ylab = "effective weight", main = "Input relevance", ...)
    return(invisible(x))
  }
  trs <- lapply(x$models, function(m) m$trace[m$trace$kind != "final selection", ])
  if (all(vapply(trs, nrow, 0L) <= 1L))
    stop("plot.hgk(): the weights were not optimised (maxit = 0); there is no trace to draw",
         call. = FALSE)
  yr <- range(unlist(lapply(trs, function(t) c(t$risk, t$error))), na.rm = TRUE)
  xr <- c(1, max(vapply(trs, nrow, 0L)))
  graphics::plot(xr, yr, type = "n", xlab = "move (gradient step or annealing proposal)",
                 ylab = "mean squared error", main = sprintf("hgk: %s", x$architecture$label), ...)
  cols <- grDevices::hcl.colors(max(2L, length(trs)), "Dark 3")
  for (i in seq_along(trs)) {
    t <- trs[[i]]
    s <- seq_len(nrow(t))
    graphics::lines(s, t$risk, col = cols[i], lty = 1)
    graphics::lines(s, t$error, col = cols[i], lty = 2)
    acc <- t$kind == "annealing" & t$accepted
    if (any(acc)) graphics::points(s[acc], t$risk[acc], col = cols[i], pch = 1)
    rs <- t$kind == "reshuffle"
    if (any(rs)) graphics::abline(v = s[rs], col = cols[i], lty = 3)
  }
  graphics::legend("topright", bty = "n",
                   legend = c("objective (D2)", "early-stopping error (D3)",
                              "accepted annealing move", "reshuffle"),
                   lty = c(1, 2, NA, 3), pch = c(NA, NA, 1, NA))
  invisible(x)
}
