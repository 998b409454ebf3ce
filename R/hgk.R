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
#' counts; 0 is depth 1), by default the paper's protocol: depth 1 and depth 2
#' with 4 to 16 nodes.
#'
#' \strong{The Gaussian start as a safeguard.} A depth-1 kernel with equal
#' weights is the Gaussian kernel on the scaled inputs, where the learning
#' starts. With \code{baseline = TRUE} (the default) that kernel, with its
#' width and penalty chosen on the same grid but its weights not learned,
#' joins the cross-validation as one more candidate, so that the fit never
#' ends worse on held-out rows than the kernel it started from: when it
#' validates better, it is the final kernel. With \code{final = "refit"} the
#' Gaussian kernel is also tuned as a user would tune it, on the same folds:
#' for classification with the hinge loss among the losses, a C-SVM
#' (\code{\link{kernel_svm}}) over 10 widths x 10 costs (\code{\link{kl_tune}},
#' the grid extended past a winning edge), chosen as the C-SVM on a learned
#' kernel is: for two classes by the clipped squared error of its decision
#' values (a steadier criterion than the count of misclassified rows), unless
#' that error is above 0.75 at its smallest (noisy classes, where it favours
#' small decision values over right ones; then by the misclassification rate,
#' ties broken by the clipped squared error), for
#' more by the misclassification rate, which is also what the comparison
#' below uses; the grid's errors are averaged over the candidates' folds and
#' a second draw of folds, since one draw's noise would pick the point on a
#' flat error surface; otherwise
#' the least-squares SVM over 6 widths x 6 penalties by the clipped squared
#' error (extended past a winning end as the refit's grid below), and for
#' regression also the epsilon-SVR (\code{\link{kernel_svm}}) over the
#' least-squares SVM's chosen width and its two neighbours on that grid x 5
#' costs from \eqn{2^{-3}}{2^-3} to \eqn{2^5}{2^5} (grown past a winning
#' edge), on the response scaled to \eqn{[-1, 1]} with
#' \eqn{\epsilon}{epsilon} 0.1 of its standard deviation, by the same
#' criterion on the same folds; the better of the two is the tuned Gaussian
#' (a response with a few far-off values favours the SVR, whose loss grows
#' linearly, and one with little noise the least-squares SVM). The widths are \eqn{\gamma = 1/t^2}{gamma = 1/t^2} with \eqn{t}
#' geometric from \eqn{0.2 m^{-1/d}}{0.2 m^(-1/d)} to
#' \eqn{5 (1 + 5/m)^d}{5 (1 + 5/m)^d}, the penalties geometric from
#' \eqn{10^{-3}/m}{1e-3/m} to 0.1 (cost \eqn{1/(2 m \lambda)}{1/(2 m lambda)}),
#' \eqn{m} the rows of a fold's fit (the grid of the paper's SVM baseline).
#' For classification, the selected kernel's cross-validation error is the
#' smallest of several candidates' (architectures and losses) and so biased
#' low; as in the one-standard-error rule, it is kept only when it is below
#' the tuned Gaussian's by more than one standard error of their fold-wise
#' difference. For regression, where both are compared by their squared
#' error, it is kept when it is below (on the regression sets
#' of the package's benchmarks the margin kept the Gaussian where the learned
#' kernel did better on test rows more often than the reverse). Otherwise the
#' tuned Gaussian is
#' refitted on all rows and is the final model; the learned weights are then
#' not used. When the Gaussian start itself wins the selection, the tuned
#' Gaussian is the final model whatever their errors: it is the same kernel,
#' tuned over a full grid, whereas the start's width and penalty come from the
#' learning runs and, for the refit, from a narrow grid around one run's
#' width (\code{fit$selection$start_won}). The choice, the errors and
#' the reason are kept in \code{fit$selection} and printed. The comparison
#' costs little when architectures are compared anyway (the start kernel is
#' cheap, and the tuning uses warm-started cost paths); with one given
#' architecture and \code{final = "refit"} it adds a cross-validation
#' (\code{folds} learning runs), which \code{baseline = FALSE} saves.
#' \code{\link{kl_tune}()} fits its folds with \code{baseline = FALSE}
#' unless the call gives \code{baseline}, and makes the comparison once, in
#' the refit on all rows (\code{best_model}); \code{\link{kl_cv}()} runs
#' \code{hgk()} as called, the comparison in every fold.
#'
#' \strong{The loss.} For classification, \code{loss = "auto"} (the default)
#' compares the least-squares SVM and the C-SVM (hinge loss) on each
#' candidate kernel in the same cross-validation by their misclassification
#' rates (ties go to the smaller clipped squared error) and keeps the better;
#' regression uses the least-squares SVM on a learned kernel, and the tuned
#' Gaussian's epsilon-SVR where that validates best (\code{fit$loss} is then
#' \code{"svr"}).
#'
#' \strong{Small data.} The defaults follow the number of rows: when a
#' learning run of the cross-validation sees fewer than 400 rows, the
#' architectures compared are depth 1 and depth 2 with 4 nodes (depth 1 alone
#' below 60 rows), and when the 40/40/20 split would leave a part with fewer
#' than 30 rows, \eqn{D_1, D_2, D_3} get a third each, and when 5 folds
#' would leave a learning run fewer than 24 rows (below 30 rows), the number
#' of folds is raised until each run has 24 (up to leave-one-out).
#' \code{print()} says what was chosen. Each part needs at least 8 rows, so
#' 25 rows are the least \code{hgk()} fits with cross-validation and 24
#' without (one architecture, one loss, \code{baseline = FALSE}).
#'
#' \strong{The final predictor.} With \code{final = "refit"} (the default)
#' the weights of the chosen architecture are learned once more on all rows,
#' \eqn{(\gamma, \lambda)} are chosen by \code{folds}-fold cross-validation
#' of the least-squares SVM (over \eqn{\gamma} in \eqn{\{1/2, 1, 2\}} times
#' the learned width, or the given \code{gamma} values, and the
#' \eqn{\lambda} grid, both extended past an end where it validates best;
#' see \code{extend} in \code{\link{hgk_control}}), and the model is fitted
#' on all rows. A C-SVM (the
#' hinge loss) gets its own width and cost on the learned weights by
#' cross-validation in the same folds, as \code{\link{kl_tune}} tunes
#' \code{\link{kernel_svm}}: for two classes by the squared error of its
#' decision values clipped to \eqn{[-1, 1]} (the misclassification rates of
#' neighbouring costs often differ by a row or two; for noisy classes as
#' above), for more classes by the
#' misclassification rate (widths as above, costs
#' \eqn{1 / (2 m \lambda)}{1 / (2 m lambda)} over the \eqn{\lambda} grid for
#' the \eqn{m} rows of a fold; these grids are not extended past their
#' ends);
#' the refit keeps the chosen \eqn{\lambda}, i.e. cost
#' \eqn{1 / (2 n \lambda)}{1 / (2 n lambda)} on all \eqn{n} rows. With
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
#' \strong{Clipping in regression.} The paper clips the decision values to
#' \eqn{[-1, 1]}, that is regression predictions to the training range of the
#' response. A response with a long tail has new rows beyond that range,
#' which a clipped model cannot reach; unclipped, a model fitted on a few
#' dozen rows can extrapolate far past it. How far past the range the
#' predictions may go is therefore chosen by cross-validation on the folds of
#' the fit: each fold's held-out decision values of the final predictor
#' (refitted on the other folds, or the fold models with \code{final =
#' "average"}) are clipped to the range of that fold's fitting rows widened
#' on each side by 0, 5, 10, 20, 50 or 100\% of its width; the
#' smallest squared error over all rows wins, a tie the smaller widening.
#' Predictions never go further than the range's width past it: at new rows
#' far from the training rows in the inputs, a least-squares SVM with a
#' small penalty can give values far outside the response's range, which
#' the folds need not show.
#' \code{fit$clip} is the chosen fraction (0: the paper's clipping;
#' \code{Inf}, none, only in fits of earlier versions), \code{fit$clip_cv} holds the errors, and
#' \code{print()} says which. (The candidates' cross-validation clips at the
#' range of all rows, the paper's criterion.)
#'
#' \strong{Penalty convention.} \eqn{\lambda} is the paper's: the
#' least-squares SVM on \eqn{n} rows solves
#' \eqn{(K + n\lambda I)\alpha = y - b}, so it equals
#' \code{kernel_ridge(lambda = n * lambda)}; the hinge loss uses
#' \code{kernel_svm(cost = 1 / (2 * n * lambda))} (in the learning and the
#' fold models; the refit's C-SVM validates its own, see above).
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
#'   architecture is not given (0 means depth 1). \code{NULL}: \code{c(0, 4,
#'   6, 8, 10, 12, 14, 16)}, fewer for small data (see Details).
#' @param saturation Depth 2: the factor \eqn{\ge 1} of columns dealt to the
#'   nodes (see Details). \code{NULL}: 1, or \eqn{m/d} for a candidate with
#'   more nodes than columns. Giving \code{nodes} larger than the number of
#'   columns needs an explicit \code{saturation}.
#' @param loss \code{"auto"} (classification: the better of the two by
#'   cross-validation, see Details; regression: least squares, or the tuned
#'   Gaussian's epsilon-SVR when it validates best), \code{"ls"}
#'   (the least-squares SVM; for regression the tuned Gaussian is then a
#'   least-squares SVM too) or \code{"hinge"} (classification only: the
#'   weights are learned with the least-squares risk, the models are
#'   \code{\link{kernel_svm}} fits with the learned kernel).
#' @param gradient \code{"bilevel"} or \code{"fixed"} (see Details).
#' @param final \code{"refit"} or \code{"average"} (see Details).
#' @param folds Number of cross-validation folds (stratified for
#'   classification). Left at its default on fewer than 30 rows, it is raised
#'   as far as the learning runs need (see Small data).
#' @param gamma Candidate widths on top of the root; \code{NULL}:
#'   \eqn{\gamma_0 \times \{1/4, 1/2, 1, 2, 4, 8\}}, with \eqn{1/\gamma_0} the
#'   median over random pairs of rows of the root's argument at the start
#'   weights.
#' @param lambda Candidate penalties (paper convention, see Details);
#'   \code{NULL}: six values geometric from \eqn{10^{-3}/n_1} to 0.1.
#' @param probability With \code{loss = "hinge"}: fit Platt probability models
#'   so that \code{predict(type = "prob")} works.
#'   With \code{loss = "auto"} it implies the hinge loss.
#' @param baseline Compare the learned kernel with the Gaussian kernel it
#'   starts from, and with \code{final = "refit"} with the tuned Gaussian
#'   kernel, in the cross-validation and keep the better (see Details).
#' @param control Optimisation constants: \code{\link{hgk_control}()}.
#' @param scale Scale inputs to \eqn{[0, 1]} with the training range.
#' @param cells \code{FALSE} (the default) for one global model; \code{TRUE}
#'   or \code{\link{kl_cells}(...)} for large data: the kernel's weights are
#'   learned as above on a stratified sample of \code{sample_learn} rows (5000
#'   by default), and then one machine per cell of the input space is fitted
#'   with the learned kernel (a \code{\link{kernel_svm}} per cell with
#'   \code{loss = "hinge"}, \code{\link{kernel_ridge}} with \code{"ls"}), its
#'   width on top of the learned weights and its cost or penalty chosen in each
#'   cell by cross-validation. The result is a
#'   \code{\link[=predict.kl_localized]{kl_localized}} model.
#' @param threads Number of threads; default \code{getOption("kernlearn.threads", 2)}.
#'   A learning run's search uses one thread while its fit part \eqn{D_1} is
#'   small (\eqn{m^2 \max(d, 8) < 8 \cdot 10^6}{m^2 max(d, 8) < 8e6} for
#'   \eqn{m} rows of \eqn{d} inputs: below 1000 rows at 8 inputs, 211 at 180):
#'   its passes are then too short for a second thread to gain much, and on a
#'   machine shared with busy processes the fork and join of each made two
#'   threads slower than one. The learning runs of the cross-validation
#'   (every fold of every candidate) run side by side instead, one thread
#'   each, when no run's \eqn{D_1} has more than 4000 rows, and so do the
#'   (width, fold) pairs of the least-squares refit's grid while a fold's
#'   fit has at most about 5500 rows. Results are the same at any number of
#'   threads.
#' @param ... Not used; unknown arguments are an error.
#' @return An object of class \code{c("hgk", "kl_model")}: a list with
#'   \code{models} (the fold models, or one refit model: training
#'   \code{rows}, \code{kernel}, \code{gamma}, \code{lambda}, coefficients,
#'   \code{trace} and \code{info}), \code{architecture}, the cross-validation
#'   table \code{cv} (one row per candidate kernel and loss), \code{selection}
#'   (the comparison with the Gaussian start: \code{choice}, both errors and
#'   the \code{reason}; with \code{final = "refit"} also \code{tuned_error},
#'   the tuned Gaussian's error, \code{difference_se}, the standard error of
#'   the fold-wise difference, \code{margin}, the margin the selected kernel
#'   had to beat it by (\code{difference_se}, or 0 for regression),
#'   \code{start_won}, whether the Gaussian start won the selection, and
#'   \code{tuned}, whether the tuned Gaussian is the final model), \code{tuned_gaussian} (that tuning: \code{loss}, \code{error}
#'   and \code{fold_errors} in the candidates' criterion and folds, with the
#'   hinge loss also \code{selection_error}, the grid's criterion at the
#'   chosen point averaged over both draws of folds, the chosen \code{gamma} and \code{cost} or \code{lambda}, its
#'   \code{table} and \code{foldid}; for regression \code{loss} is
#'   \code{"ls"} or \code{"svr"} (then also \code{epsilon} and \code{oof},
#'   its held-out decisions) and \code{alternative} holds the other one's
#'   \code{loss}, \code{error}, width and cost or penalty), \code{refit_cv} (the least-squares refit's
#'   cross-validation over width and penalty: \code{gamma}, \code{lambda},
#'   \code{error} and \code{extended}, \code{TRUE} for the points past the
#'   first grid, which the attribute \code{"extended"} then describes) and
#'   \code{svm_cv} (the C-SVM's
#'   over width and cost, \code{\link{kl_tune}}'s \code{results}, with
#'   \code{extended} and, for the tuned Gaussian's grid, the attribute
#'   \code{"extended"} as for \code{refit_cv}; hinge loss, or the tuned
#'   Gaussian's epsilon-SVR), \code{clip} (regression: the fraction of the training range of the
#'   response by which predictions may pass it on each side; 0 clips to the
#'   range, 1 the most; \code{Inf}, not at all, in fits of earlier versions) and \code{clip_cv} (regression: the
#'   chosen \code{margin}, the \code{table} of the cross-validated squared
#'   errors by margin on the \eqn{[-1, 1]} scale and the number of
#'   \code{folds}; \code{NULL} without folds), \code{relevance} (see \code{\link{plot.hgk}}), the scaled
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
#' # classification on 150 rows: the defaults adapt to the small data
#' fit2 <- hgk(Species ~ ., data = iris, control = hgk_control(maxit = 5))
#' fit2
#' table(predict(fit2, iris), iris$Species)
#' @export
hgk <- function(x, ...) UseMethod("hgk")

#' @rdname hgk
#' @export
hgk.formula <- function(formula, data, depth = NULL, nodes = NULL, kernel = NULL,
                        candidates = NULL, saturation = NULL,
                        loss = c("auto", "ls", "hinge"), gradient = c("bilevel", "fixed"),
                        final = c("refit", "average"), folds = 5, gamma = NULL, lambda = NULL,
                        probability = FALSE, baseline = TRUE, control = hgk_control(),
                        scale = TRUE, subset = NULL, na.action = stats::na.fail, cells = FALSE,
                        threads = NULL, ...) {
  .no_dots(..., caller = "hgk()")
  cells <- .kl_cells_arg(cells, "hgk()")
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "hgk()", parent.frame())
  inp <- .kl_input_formula(formula, data, "hgk()", scale = scale)
  if (!is.null(cells))
    return(.hgk_cells(inp, .hgk_cell_args(environment()), cells, threads,
                      .kl_call(match.call(), "hgk")))
  .hgk_fit(inp, depth, nodes, kernel, candidates, saturation, loss, gradient, final, folds,
           gamma, lambda, probability, control, scale, threads, .kl_call(match.call(), "hgk"),
           baseline = baseline, folds_given = !missing(folds))
}

#' @rdname hgk
#' @export
hgk.default <- function(x, y, depth = NULL, nodes = NULL, kernel = NULL,
                        candidates = NULL, saturation = NULL,
                        loss = c("auto", "ls", "hinge"), gradient = c("bilevel", "fixed"),
                        final = c("refit", "average"), folds = 5, gamma = NULL, lambda = NULL,
                        probability = FALSE, baseline = TRUE, control = hgk_control(),
                        scale = TRUE, cells = FALSE, threads = NULL, ...) {
  .no_dots(..., caller = "hgk()")
  cells <- .kl_cells_arg(cells, "hgk()")
  if (inherits(x, "formula"))
    stop("hgk(): use hgk(formula, data = ) with a formula", call. = FALSE)
  inp <- .kl_input_xy(x, y, "hgk()", scale = scale)
  if (!is.null(cells))
    return(.hgk_cells(inp, .hgk_cell_args(environment()), cells, threads,
                      .kl_call(match.call(), "hgk")))
  .hgk_fit(inp, depth, nodes, kernel, candidates, saturation, loss, gradient, final, folds,
           gamma, lambda, probability, control, scale, threads, .kl_call(match.call(), "hgk"),
           baseline = baseline, folds_given = !missing(folds))
}

# The arguments of an hgk() call that the cells path passes on to the sample fit.
.hgk_cell_args <- function(env) {
  nm <- c("depth", "nodes", "kernel", "candidates", "saturation", "loss", "gradient", "final",
          "folds", "gamma", "lambda", "probability", "control", "baseline")
  stats::setNames(lapply(nm, function(v) get(v, envir = env)), nm)
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
#'   objective); the rest is \eqn{D_3} (early stopping). \code{NULL}: 40/40/20,
#'   or a third each when a part would have fewer than 30 rows. Each part needs
#'   at least 8 rows.
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
#' @param precision \code{"single"} (the default) or \code{"double"}: the
#'   arithmetic of the learning's passes over pairs of rows (the kernel
#'   values of the objective, of the width and penalty selection and of the
#'   early-stopping error, the validation residuals and the gradient's
#'   derivative sums). \code{"single"} does that work on twice as many values
#'   per vector instruction with a cheaper exponential, with relative errors
#'   near 1e-6 in the gradient and 1e-5 in the validation residuals. The
#'   objective's kernel block is then held in single precision and factored
#'   in single precision, its systems refined in double to a relative
#'   accuracy of 1e-9 (a block too ill-conditioned for that, as with a tiny
#'   penalty, is factored in double instead). An objective and gradient with
#'   the weights of the fit held fixed take about 0.3 of the
#'   double-precision time, one with the weights re-solved (the default)
#'   about 0.45, a whole fit 0.65 to 0.85 (the least gain with many classes;
#'   AVX2, two cores). Every sum stays in double, and the
#'   cross-validation of the candidates and the final predictor (the fit on
#'   all rows with the learned kernel) are computed in double. On 2000
#'   training rows of 11 benchmark sets both precisions gave the same test
#'   error (\code{bench/hgk.R}, section \code{precision}). The optimisation
#'   path can differ from \code{"double"}'s, so results differ in their last
#'   digits or, through a different accepted step or a different width,
#'   more; \code{"double"} gives the earlier default's results. Single
#'   precision needs a processor with AVX2 and at most 16 inputs per node of
#'   the tree, else the learning runs in double (as do the kernel blocks of a
#'   depth-1 tree, the Gaussian kernel), so results can differ between
#'   machines with and without AVX2.
#' @param extend Values at most past each end of the least-squares grids
#'   of width and penalty (the refit's with \code{final = "refit"}, and the
#'   tuned Gaussian's when it is a least-squares SVM) when their best point
#'   lies at that end: the grid grows by its own ratio, one value at a time
#'   on the same folds, while the new value validates better, as
#'   \code{\link{kl_tune}} extends its grids; penalties stop at
#'   \eqn{10^{-10}}{1e-10}. A nearly noise-free response often wants
#'   penalties below the paper's grid. \code{0} keeps the grids as they are.
#' @return A list of class \code{"hgk_control"}.
#' @examples
#' hgk_control(maxit = 50, temperature = 0)
#' hgk_control(precision = "double")
#' @export
hgk_control <- function(split = NULL, maxit = 30, anneal_steps = 5, perturbation = 0.5,
                        temperature = 0.01, cooling = 0.9, patience = 5, reshuffles = 2,
                        precision = c("single", "double"), extend = 2) {
  caller <- "hgk_control()"
  precision <- .kl_choice(precision, c("single", "double"), "precision", caller)[1L]
  if (!is.null(split) && (!is.numeric(split) || length(split) != 2L || any(!is.finite(split)) ||
                          any(split <= 0) || sum(split) >= 1))
    stop(sprintf("%s: 'split' must be NULL or two positive fractions (D1, D2) with a sum below 1", caller),
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
  structure(list(split = if (!is.null(split)) as.numeric(split), maxit = whole(maxit, "maxit", 0L),
                 anneal_steps = whole(anneal_steps, "anneal_steps", 0L),
                 perturbation = as.numeric(perturbation), temperature = as.numeric(temperature),
                 cooling = as.numeric(cooling), patience = whole(patience, "patience", 1L),
                 reshuffles = whole(reshuffles, "reshuffles", 0L), precision = precision,
                 extend = whole(extend, "extend", 0L)),
            class = "hgk_control")
}
