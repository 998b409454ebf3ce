#' Generalized eigenvector features (GEM)
#'
#' Learns discriminative features from the class-conditional second moments
#' and fits a multinomial logistic regression on them (Karampatziakis and
#' Mineiro, 2014). For each selected ordered pair of classes \eqn{(i, j)}, the
#' directions \eqn{v} maximising
#' \eqn{v' C_i v / v' (C_j + r_j I) v}{v'C_i v / v'(C_j + r_j I)v}, with
#' \eqn{C_m = E[x x' \mid y = m]}{C_m = E[xx' | y = m]}, are the top
#' generalized eigenvectors of \eqn{C_i v = \lambda (C_j + r_j I) v}{C_i v = lambda (C_j + r_j I) v};
#' the projections \eqn{v'x} go through a nonlinear map and become the
#' features of a linear classifier.
#'
#' @details
#' \strong{Algorithm.} The second moments (not centred) of every class are
#' accumulated in one pass over the data. For a pair \eqn{(i, j)} the
#' denominator is regularised by \eqn{r_j = } \code{ridge}
#' \eqn{\times \mathrm{tr}(C_j) / d}{x trace(C_j) / d} (\code{ridge_type =
#' "relative"}, Algorithm 1 of the paper) or \eqn{r_j = } \code{ridge}
#' (\code{"absolute"}). With the Cholesky factor \eqn{L_j L_j' = C_j + r_j I},
#' the top \code{top} eigenvectors \eqn{u} of \eqn{L_j^{-1} C_i L_j^{-T}} are
#' found by a block Krylov (Davidson) method that only multiplies by the
#' matrix (the dense eigensolver is used for small \eqn{d}, and as a fallback
#' when the iteration does not converge), and \eqn{v = L_j^{-T} u}. So
#' \eqn{v'(C_j + r_j I)v = 1} and \eqn{v' C_i v = \lambda}: on average the
#' squared projection is \eqn{\lambda} on class \eqn{i} and about 1 on class
#' \eqn{j}. Eigenvectors with \eqn{\lambda \ge} \code{threshold} are kept. The
#' sign of each \eqn{v} is chosen so that the mean projection of class \eqn{i}
#' is positive.
#'
#' \strong{Feature map.} With \eqn{p = v'x},
#' \code{nonlinearity = "smooth_sqrt"} (the paper's experiments) uses
#' \eqn{p_+ = \sqrt{1 + \max(p, 0)} - 1}{p+ = sqrt(1 + max(p, 0)) - 1} and
#' \eqn{p_- = \sqrt{1 + \max(-p, 0)} - 1}{p- = sqrt(1 + max(-p, 0)) - 1};
#' \code{"relu_powers"} (Algorithm 1, line 6) uses
#' \eqn{p_\pm = \max(0, \pm p)^{1/2}}{p+- = max(0, +-p)^(1/2)}. The raw
#' representation is \eqn{[x, p_+, p_-]} (without \eqn{x} when
#' \code{keep_input = FALSE}) and the features are its elementwise powers
#' \eqn{1, \dots,} \code{degree}: a two-piece cubic in \eqn{|p|^{1/2}} for
#' \code{"smooth_sqrt"}, and \eqn{\max(0, \pm p)^{\alpha/2}}{max(0, +-p)^(alpha/2)},
#' \eqn{\alpha = 1, \dots,} \code{degree} for \code{"relu_powers"}. With
#' \code{standardize = TRUE} (the default of \code{\link{gem_control}}) every
#' feature is centred and scaled to unit variance on the training rows before
#' the classifier.
#'
#' \strong{Class pairs.} \code{pairs = "all"} uses all \eqn{k(k - 1)} ordered
#' pairs. \code{"hypercube"} places the classes at random vertices of a
#' hypercube of dimension \eqn{\lceil \log_2 k \rceil}{ceiling(log2 k)} and
#' pairs immediate neighbours (both orders), \eqn{O(k \log k)} pairs; a class
#' left without a neighbour is paired with a random other class. A two-column
#' matrix (level names or numbers; numerator first) gives the pairs
#' explicitly, and \code{"none"} uses no pairs at all (a logistic regression on
#' the input representation, e.g. random Fourier features).
#'
#' \strong{Variants.} \code{depth = 2} is deep GEM: a first GEM layer
#' (\code{first_layer}: by default relative ridge 0.1, top 20, threshold 0,
#' features \eqn{[1, p_+, p_-]}) makes a representation to which the main
#' settings are applied as a second layer. \code{rff = list(dim, gamma)} first
#' maps \eqn{x} to \code{dim} random Fourier features
#' \eqn{\sqrt{2/D} \cos(W'x + b)}{sqrt(2/D) cos(W'x + b)} of the Gaussian
#' kernel \eqn{\exp(-\gamma \|x - x'\|^2)}{exp(-gamma ||x - x'||^2)} and
#' applies GEM to them (GEM + RFF). The mapped rows are never stored for the
#' whole data: the moments and the features apply the map to one block of rows
#' at a time. \code{ensemble = m} fits \code{m} models
#' on independent random hypercubes and predicts with the normalised geometric
#' mean of their class probabilities.
#'
#' \strong{Classifier.} \code{head = "logistic"} (the paper's): multinomial
#' logistic regression with the penalty
#' \eqn{(\lambda / 2) \sum_k \|\beta_k\|^2} on the mean log-loss (glmnet's
#' objective with \code{alpha = 0}), by L-BFGS. \code{head = "cls"}:
#' calibrated least squares (Agarwal et al., 2014; the classifier of the
#' authors' MNIST code). With \eqn{F} the features and a constant column,
#' \eqn{Y} the one-hot labels and \eqn{A = F'F/2 + \lambda \sqrt{n} I}{A = F'F/2 + lambda sqrt(n) I},
#' the scores start at \eqn{S = F A^{-1} F'Y}; each step fits a link
#' \eqn{P} by ridge regression (penalty \eqn{\sqrt{n}}{sqrt(n)}) of \eqn{Y} on
#' \eqn{[S, S^2/2, S^3/6, S^4/24]}, projects its rows onto the probability
#' simplex, and sets \eqn{S = P + F A^{-1} F'(Y - P)}. Steps stop when the
#' root-mean-square change of \eqn{S} falls below \code{tol}, or after
#' \code{maxit} steps (both set by \code{\link{gem_control}}). One Cholesky factorisation of \eqn{A} serves every
#' step, so the cost is dominated by \eqn{F'F} and that factorisation. Both
#' are blocked and parallel, with kernels vectorised for AVX2 or AVX-512 when
#' the processor has them (chosen at run time). The features are held in
#' single precision (with \code{head = "logistic"}, only feature matrices of
#' more than 2.5e7 entries), \eqn{F'F} is computed in single precision and
#' accumulated in double, the factorisation and the calibration are in
#' double. On the benchmark sets of the package the chosen penalty and the
#' test error were those of double-precision features, in a half to a third
#' of the time on the small sets. A head fitted on single-precision features
#' predicts from features built the same way, so \code{fitted()} and
#' \code{predict()} on the training rows agree exactly. Class probabilities
#' are the final scores projected onto the simplex (they can be exactly 0).
#'
#' \strong{Choosing the penalty.} With \code{lambda = NULL} (the default) the
#' penalty is chosen by validation, in the manner of \code{glmnet::cv.glmnet}
#' with a single fold. A stratified fifth of the rows (at most 10000) is held
#' out; the head is fitted on the other rows for each penalty tried and scored
#' on the held-out rows. The logistic head is scored by its error rate (among
#' equal error rates, the lower deviance). Calibrated least squares is scored
#' by the mean squared distance between its class probabilities (the scores
#' projected onto the simplex) and the one-hot classes (the Brier score, a
#' proper score like \code{cv.glmnet}'s default deviance, and smoother in the
#' penalty than the error rate; on seven of the eight sets of
#' \code{bench/gem_defaults.R} it chose a penalty with an equal or lower test
#' error than the error rate did, on Letter one 0.1 points higher); then the
#' head is refitted on all rows with the best penalty. The directions are learned from
#' the training part only, so that the held-out rows are unseen by the features
#' as new data would be (with directions learned from all rows the held-out
#' error favours too large a penalty); the feature standardisation, which does
#' not use the labels, comes from all rows. The logistic head follows a decreasing path \eqn{10^{-1}, 10^{-1.5},
#' \dots, 10^{-4}}{10^-1, 10^-1.5, ..., 10^-4}, each fit started from the
#' previous solution and limited to 100 iterations (the path only ranks the
#' penalties), and stops after two values without improvement; the final
#' fit starts from the solution of the chosen value. Calibrated least squares
#' tries powers of 4 from \eqn{4^{-7}}{4^-7} to \eqn{4^8}{4^8}: all of them
#' when a factorisation and its steps cost little next to the Gram matrix, and
#' otherwise a local search that starts at 1 (or where a comparison of the
#' ridges on a sample of the rows left it, below) and walks towards larger
#' penalties while the validation result improves: it stops after two values
#' in a row that improve neither the Brier score nor the error rate (the error
#' rate can still fall where the Brier score is flat; a lower error rate counts
#' only where the Brier score is within 0.5 percent of its lowest so far, since
#' the choice is by the Brier score), or after one such value with 5000
#' held-out rows or more. Unless that walk lowered the Brier score,
#' it then walks towards smaller penalties in the same way. For the values
#' tried, the system is factored and solved in single precision (about 1.5
#' times faster to factor, half the memory read by each solve), falling back
#' to double precision where that factorisation fails; on every benchmark set
#' the chosen penalty and the test error were those of a double-precision
#' search (on MNIST the held-out Brier scores agreed to five digits), in 10 to
#' 20 percent less time on the small sets and 18 percent less on MNIST. The
#' option \code{kernlearn.gem_single_factor} gives the smallest system (in
#' columns) factored that way, 0 by default. The final fit (after a search
#' or with \code{lambda} given) is factored and solved in single precision when
#' its system has at least 4096 columns (option
#' \code{kernlearn.gem_single_final}), where the factorisation is most of its
#' cost, and in double precision otherwise or where the single-precision
#' factorisation fails. The Gram matrix is summed in single precision within
#' blocks of rows, so its entries already carry errors of that order; on MNIST
#' the factorisation took about 6 s instead of 12 s, with the same test
#' errors. \code{fit$members[[m]]$head$single_factor} says which was used. The
#' Gram matrices of the
#' two parts are computed once and summed for the final fit. The values tried
#' are kept in \code{fit$members[[m]]$head$search} (the attribute
#' \code{"validation"} holds the held-out rows) and summarised by
#' \code{print()}. With fewer than 50 rows there is no search: \code{lambda}
#' is 1 for \code{"cls"} and 1e-3 for \code{"logistic"}.
#'
#' \strong{Choosing the ridge.} With \code{ridge = NULL} (the default) and
#' \code{lambda = NULL}, the fit (directions, features, penalty search) is
#' run with the relative ridges 0.1 and 0.5, from the same random state (the
#' same held-out rows), and the ridge whose chosen penalty scored better on the
#' held-out rows is kept (the Brier score for \code{"cls"}, the error rate then
#' the deviance for \code{"logistic"}; the first member's for an ensemble).
#' When \code{top} is above 5, these comparison fits keep at most 5 directions
#' per class pair, and the kept ridge is then fitted in full from the same
#' random state (unless no pair had more than 5 directions above
#' \code{threshold}: then its comparison fit is the full fit). With more than
#' 20000 rows (option \code{kernlearn.gem_compare_rows}), the comparison fits
#' use 20000 of them, sampled within each class in proportion (and compute
#' only the directions they keep), and the kept ridge is fitted on all rows
#' from the random state the call started with. With calibrated least squares,
#' a single model and at most 16 times as many rows as the sample, that fit
#' takes the penalty the sample chose for the ridge: the rows a search would
#' hold out are kept out of the directions as in a search, and the head is
#' fitted on all rows with that penalty, as a search on all rows that chose it
#' would fit it (the sample's search is then the one kept and printed). The
#' penalty is \code{lambda} \eqn{\sqrt{n}}{sqrt(n)}: whether the best total
#' penalty stays the same as the rows grow or grows in proportion to them, the
#' best \code{lambda} moves by at most a factor \eqn{\sqrt{n/m}}{sqrt(n / m)}
#' between a sample of \eqn{m} rows and all \eqn{n}, at most 4 there, one
#' step of the grid. Otherwise the penalty search on all rows starts at the
#' sample's choice. On MNIST the sample ranked the ridges as all rows did and
#' chose the penalty a search on all rows chooses, 16, so the model is the
#' one \code{gem()} gives with that ridge given (to rounding); each comparison
#' fit took about 10 s instead of 25 s, and the search on all rows that this
#' skips had taken 32 s. The
#' comparison is in \code{fit$params$ridge_search} (attributes
#' \code{directions}, the cap, \code{rows}, the rows compared on, and
#' \code{refit_seconds}) and is printed. Neither ridge was better on every
#' benchmark set: 0.1 on Letter (3.4\% test error against 8.0\%), satimage,
#' pendigits, shuttle, thyroid and Covertype, 0.5 on MNIST (114 test errors
#' against 137) and dna (3.6\% against 5.4\%). The capped comparison ranked
#' the two ridges as the comparison of the full models did on all of them, and
#' chose the better one on all but satimage (where it chose 0.5: 11.2\% against
#' 10.0\%). On MNIST it costs about 10 s per ridge against 104 s and 174 s
#' for the full fits. Give \code{ridge} to fit once.
#'
#' \strong{Default head.} Calibrated least squares with a chosen penalty is
#' the default because, on the multiclass benchmarks of the package
#' (\code{bench/gem_defaults.R}: Letter, a Covertype subset, pendigits,
#' satimage, shuttle, thyroid), it fitted 1.6 to 12 times faster than the
#' logistic head with its penalty chosen the same way, and erred less on
#' Letter and satimage; on MNIST it erred less than the validated logistic fits
#' of \code{inst/experiments/gem_mnist.R}. The logistic head erred less on thyroid,
#' pendigits, shuttle and the Covertype subset (by 0.1 to 4.4 percentage
#' points), and its class probabilities are calibrated; choose it with
#' \code{head = "logistic"}.
#'
#' \strong{Invariance.} With \code{ridge = 0}, \code{scale = FALSE} and
#' \code{keep_input = FALSE}, the projections \eqn{v'x}, hence the features
#' and the fit, do not change when \eqn{x} is replaced by \eqn{Ax} for an
#' invertible matrix \eqn{A} (Proposition 1 of the paper).
#'
#' @param x A formula with \code{data}, or a numeric matrix / data.frame of
#'   predictors.
#' @param formula A model formula.
#' @param data A data.frame holding the variables of \code{formula}.
#' @param subset Rows of \code{data} to use: a logical vector or row numbers,
#'   evaluated in \code{data} (formula interface).
#' @param na.action What to do with rows with missing values in the variables of
#'   the formula: \code{na.fail} (the default: an error naming the column) or
#'   \code{na.omit} (drop them, with a message saying how many).
#' @param y A factor of class labels (a vector of whole numbers is treated as
#'   labels; other numeric responses are an error, as is a numeric response in
#'   the formula interface).
#' @param ridge Regularisation of the denominator moments (\eqn{\ge 0}). By
#'   default (\code{NULL}) it is chosen by validation from 0.1 and 0.5 when
#'   \code{lambda} is chosen too, and is 0.1 otherwise (see Details).
#' @param ridge_type \code{"relative"} (\code{ridge} times the mean
#'   eigenvalue \eqn{\mathrm{tr}(C_j)/d}{trace(C_j)/d}) or \code{"absolute"}.
#' @param top Number of eigenvectors computed per pair.
#' @param threshold Eigenvectors with eigenvalue below this are dropped.
#' @param pairs \code{"all"}, \code{"hypercube"}, \code{"none"} or a two-column
#'   matrix of ordered class pairs (numerator, denominator).
#' @param nonlinearity \code{"smooth_sqrt"} or \code{"relu_powers"}.
#' @param degree Highest power of the raw representation.
#' @param keep_input Include the input (or the representation the layer
#'   receives) in the raw representation.
#' @param head \code{"cls"} (calibrated least squares, the default) or
#'   \code{"logistic"} (multinomial logistic regression); see Details.
#' @param lambda L2 penalty of the classifier (\eqn{\ge 0}); \code{NULL} (the
#'   default) chooses it on held-out rows (see Details).
#' @param depth 1 (GEM) or 2 (deep GEM).
#' @param first_layer Settings of the first layer when \code{depth = 2}: a
#'   list with any of \code{ridge}, \code{ridge_type}, \code{top},
#'   \code{threshold}, \code{nonlinearity}, \code{degree}, \code{keep_input}.
#' @param rff \code{NULL}, or \code{list(dim = , gamma = )} for GEM on random
#'   Fourier features.
#' @param ensemble Number of models on independent random hypercubes
#'   (\code{pairs = "hypercube"}).
#' @param scale Scale the inputs to \eqn{[0, 1]} with the training range (the
#'   kernlearn convention); \code{FALSE} uses them as they are.
#' @param control Tuning constants of the fit, from \code{\link{gem_control}}:
#'   the iteration cap and tolerance of the classifier, the feature
#'   standardisation, the eigensolver and the guard on the number of class
#'   pairs. The arguments \code{maxit}, \code{tol}, \code{standardize},
#'   \code{eigen_method} and \code{max_pairs} of earlier versions of
#'   \code{gem()} are set there; given to \code{gem()} directly they are an
#'   error that says so.
#' @param fitted If \code{TRUE} (the default), keep the predicted classes of
#'   the training rows for \code{\link[=kl_model_methods]{fitted}()}: with
#'   \code{head = "cls"} from the final fit's own training scores (no extra
#'   pass), with \code{"logistic"} by one prediction pass at the end of the fit.
#' @param threads Number of threads; default \code{getOption("kernlearn.threads", 2)}.
#' @param ... Not used; unknown arguments are an error.
#' @return An object of class \code{c("gem", "kl_model")}: a list with
#'   \code{members} (one per ensemble member, each with its \code{layers}:
#'   the class \code{pairs}, the directions \code{V} (one column per kept
#'   eigenvector), the eigenvalue \code{spectra} per pair and the feature-map
#'   settings; the random Fourier map \code{rff}; the feature standardisation;
#'   and the classifier \code{head}), \code{levels}, the input specification,
#'   \code{active} (the input columns the model uses, \code{NULL} for all: columns
#'   that are zero on every row after scaling, such as constant columns with
#'   \code{scale = TRUE}, contribute nothing and are left out of the fit and of
#'   new data, except with \code{rff}; a relative \code{ridge} stays relative
#'   to all the columns, so the model is the same) and the call.
#' @references
#' Karampatziakis, N. and Mineiro, P. (2014). Discriminative features via
#' generalized eigenvectors. ICML.
#'
#' Agarwal, A., Kakade, S. M., Karampatziakis, N., Song, L. and Valiant, G.
#' (2014). Least squares revisited: scalable approaches for multi-class
#' prediction. ICML.
#' @seealso \code{\link{gem_control}}, \code{\link{predict.gem}},
#'   \code{\link{features}}, \code{\link{plot.gem}}, \code{\link{kl_tune}}.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1, lambda = 1e-3)
#' fit
#' table(predict(fit, iris), iris$Species)
#' head(predict(fit, iris, type = "prob"))
#' dim(features(fit, iris))
#'
#' # deep GEM and GEM on random Fourier features
#' set.seed(1)
#' deep <- gem(Species ~ ., data = iris, depth = 2, top = 3, threshold = 2,
#'             degree = 2, lambda = 1e-3)
#' rf <- gem(Species ~ ., data = iris, rff = list(dim = 50, gamma = 1), top = 5,
#'           threshold = 2, lambda = 1e-3)
#' mean(predict(rf, iris) == iris$Species)
#'
#' # calibrated least squares instead of logistic regression
#' ls <- gem(Species ~ ., data = iris, top = 2, threshold = 1, head = "cls")
#' table(predict(ls, iris), iris$Species)
#'
#' # tuning constants: exactly 10 calibration steps, features not standardised
#' ls10 <- gem(Species ~ ., data = iris, top = 2, threshold = 1, lambda = 1,
#'             control = gem_control(maxit = 10, tol = 0, standardize = FALSE))
#' ls10$members[[1]]$head$iterations
#' @export
gem <- function(x, ...) UseMethod("gem")

#' @rdname gem
#' @export
gem.formula <- function(formula, data, ridge = NULL, ridge_type = c("relative", "absolute"),
                        top = 30, threshold = 2, pairs = "all",
                        nonlinearity = c("smooth_sqrt", "relu_powers"), degree = 3,
                        keep_input = TRUE, head = c("cls", "logistic"), lambda = NULL,
                        depth = 1, first_layer = list(), rff = NULL, ensemble = 1,
                        scale = TRUE, control = gem_control(), fitted = TRUE,
                        subset = NULL, na.action = stats::na.fail, threads = NULL, ...) {
  caller <- "gem()"
  .gem_check_moved(..., caller = caller)
  .no_dots(..., caller = caller)
  .check_flag(fitted, "fitted", caller)
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "gem()", parent.frame())
  .check_flag(scale, "scale", caller)
  inp <- .kl_input_formula(formula, data, caller, scale = scale)
  dz <- if (is.null(rff)) .gem_drop_zero_columns(inp) else list(inp = inp, active = NULL)
  fit <- .gem_fit_ridge(dz$inp, mget(.gem_settings, envir = environment()), control, threads,
                        .kl_call(match.call(), "gem"))
  fit$active <- dz$active
  .gem_keep_fitted(fit, fitted, data, inp$y, threads)
}

#' @rdname gem
#' @export
gem.default <- function(x, y, ridge = NULL, ridge_type = c("relative", "absolute"),
                        top = 30, threshold = 2, pairs = "all",
                        nonlinearity = c("smooth_sqrt", "relu_powers"), degree = 3,
                        keep_input = TRUE, head = c("cls", "logistic"), lambda = NULL,
                        depth = 1, first_layer = list(), rff = NULL, ensemble = 1,
                        scale = TRUE, control = gem_control(), fitted = TRUE,
                        threads = NULL, ...) {
  caller <- "gem()"
  .gem_check_moved(..., caller = caller)
  .no_dots(..., caller = caller)
  .check_flag(fitted, "fitted", caller)
  if (inherits(x, "formula"))
    stop(sprintf("%s: use gem(formula, data = ) with a formula", caller), call. = FALSE)
  .check_flag(scale, "scale", caller)
  if (is.numeric(y) && !is.factor(y)) {
    if (any(is.infinite(y)))
      stop(sprintf("%s: 'y' has %d infinite value(s) (row(s) %s)", caller, sum(is.infinite(y)),
                   paste(utils::head(which(is.infinite(y)), 5L), collapse = ", ")), call. = FALSE)
    if (any(is.finite(y) & y != round(y)))
      stop(sprintf("%s: GEM is a classifier; 'y' must be a factor of class labels or whole numbers, not a continuous response",
                   caller), call. = FALSE)
    y <- factor(y)
  }
  inp <- .kl_input_xy(x, y, caller, scale = scale)
  dz <- if (is.null(rff)) .gem_drop_zero_columns(inp) else list(inp = inp, active = NULL)
  fit <- .gem_fit_ridge(dz$inp, mget(.gem_settings, envir = environment()), control, threads,
                        .kl_call(match.call(), "gem"))
  fit$active <- dz$active
  .gem_keep_fitted(fit, fitted, x, inp$y, threads)
}

#' Tuning constants of gem()
#'
#' The settings of \code{\link{gem}} that tune how a model is computed rather
#' than what model it is: the classifier's iteration cap and tolerance, the
#' standardisation of the features, the eigensolver, and the guard on the
#' number of class pairs. Pass the result as \code{gem(control = )}.
#'
#' @param maxit,tol Iteration cap and gradient tolerance of the logistic
#'   regression (default 500 and 1e-6); for \code{head = "cls"}, the cap on
#'   the calibration steps and the root-mean-square score change that stops
#'   them (default 25 and 0.002; \code{tol = 0} runs exactly \code{maxit}
#'   steps). \code{NULL} means the default of the head.
#' @param standardize Centre and scale the features to unit variance on the
#'   training rows before the classifier.
#' @param eigen_method How the generalized eigenvectors are computed:
#'   \code{"auto"} (the block Krylov method, with the dense eigensolver for
#'   small problems and as a fallback), \code{"dense"} or \code{"iterative"}.
#' @param eigen_tol Convergence tolerance of the iterative eigensolver.
#' @param max_pairs Largest number of class pairs allowed (a guard against
#'   \code{pairs = "all"} with many classes).
#' @return A list of class \code{"gem_control"}.
#' @seealso \code{\link{gem}}
#' @examples
#' gem_control(maxit = 10, tol = 0)
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1, lambda = 1e-3,
#'            head = "logistic", control = gem_control(maxit = 1000, tol = 1e-8))
#' fit$members[[1]]$head$converged
#' @export
gem_control <- function(maxit = NULL, tol = NULL, standardize = TRUE,
                        eigen_method = c("auto", "dense", "iterative"), eigen_tol = 1e-8,
                        max_pairs = 1000) {
  caller <- "gem_control()"
  .check_number(maxit, "maxit", lower = 0, upper = 1e7, integer = TRUE, null_ok = TRUE,
                caller = caller)
  .check_number(tol, "tol", lower = 0, null_ok = TRUE, caller = caller)
  .check_flag(standardize, "standardize", caller)
  eigen_method <- .kl_choice(eigen_method, c("auto", "dense", "iterative"), "eigen_method",
                             caller)
  .check_number(eigen_tol, "eigen_tol", lower = 0, lower_open = TRUE, caller = caller)
  .check_number(max_pairs, "max_pairs", lower = 1, integer = TRUE, caller = caller)
  structure(list(maxit = maxit, tol = tol, standardize = standardize,
                 eigen_method = eigen_method, eigen_tol = as.numeric(eigen_tol),
                 max_pairs = max_pairs),
            class = "gem_control")
}

# The modelling arguments of the gem() methods, gathered by name (mget) into the settings
# list the fit reads.
.gem_settings <- c("ridge", "ridge_type", "top", "threshold", "pairs", "nonlinearity",
                   "degree", "keep_input", "head", "lambda", "depth", "first_layer", "rff",
                   "ensemble")

# Arguments that gem() took before gem_control(): given to gem() they are an error that says
# where they went.
.gem_control_args <- c("maxit", "tol", "standardize", "eigen_method", "max_pairs")

.gem_check_moved <- function(..., caller) {
  moved <- intersect(names(list(...)), .gem_control_args)
  if (length(moved))
    stop(sprintf("%s: '%s' is now set through control = gem_control(%s = ...)", caller,
                 moved[1L], moved[1L]), call. = FALSE)
  invisible(NULL)
}

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

# New data prepared as the fit's input: scaled, without the columns the fit left out.
.gem_newdata <- function(object, newdata, caller) {
  x <- .kl_newdata(object$spec, newdata, caller)
  if (is.null(object$active)) x else x[, object$active, drop = FALSE]
}

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
  secs <- numeric(length(fits))
  for (i in seq_along(fits)) {
    assign(".Random.seed", cstate, envir = globalenv())
    t0 <- proc.time()[["elapsed"]]
    # each candidate's warnings are held back; only the kept fit's are given
    # on a sample, the comparison fit is never the model, so only the directions it keeps are
    # computed (the eigensolver's cost grows with the number asked for)
    fits[[i]] <- withCallingHandlers(fit_with(.gem_ridge_candidates[i], cap, cinp, sampled,
                                              top_fit = if (sampled && cap > 0L) cap else top),
                                     warning = function(w) {
      warns[[i]] <<- c(warns[[i]], list(w))
      invokeRestart("muffleWarning")
    })
    secs[i] <- proc.time()[["elapsed"]] - t0
    if (is.null(fits[[i]]$members[[1L]]$head$search)) {  # no row could be held out
      if (refit_needed(fits[[i]])) {
        assign(".Random.seed", state, envir = globalenv())
        return(fit_with(.gem_ridge_candidates[i]))
      }
      for (w in warns[[i]]) warning(w)
      return(.gem_uncap(fits[[i]]))
    }
  }
  at <- lapply(fits, function(f) {
    s <- f$members[[1L]]$head$search
    s[which(s$lambda == f$members[[1L]]$head$lambda)[1L], ]
  })
  err <- vapply(at, `[[`, numeric(1), "error")
  loss <- vapply(at, `[[`, numeric(1), "loss")
  best <- if (identical(fits[[1L]]$params$head, "logistic"))
    order(err, loss, seq_along(loss))[1L] else order(loss, seq_along(loss))[1L]
  search <- data.frame(ridge = .gem_ridge_candidates,
                       lambda = vapply(at, `[[`, numeric(1), "lambda"),
                       error = err, loss = loss, seconds = round(secs, 3))
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

# The settings of the ridge comparison, for print(): the cap on the directions and the rows.
.gem_compare_note <- function(rs, n) {
  parts <- c(if (isTRUE(attr(rs, "directions") > 0))
               sprintf("at most %d directions per pair", attr(rs, "directions")),
             if (!is.null(attr(rs, "rows")) && attr(rs, "rows") < n)
               sprintf("on %d of the %d rows", attr(rs, "rows"), n))
  if (length(parts)) sprintf(" (%s)", paste(parts, collapse = ", ")) else ""
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

# One layer's settings, checked. `prefix` names the argument in error messages.
.gem_layer_settings <- function(ridge, ridge_type, top, threshold, nonlinearity, degree,
                                keep_input, ones, caller, prefix = "") {
  nm <- function(a) paste0(prefix, a)
  .check_number(ridge, nm("ridge"), lower = 0)
  ridge_type <- .kl_choice(ridge_type, c("relative", "absolute"), nm("ridge_type"), caller)
  .check_number(top, nm("top"), lower = 1, upper = 1e6, integer = TRUE)
  .check_number(threshold, nm("threshold"))
  nonlinearity <- .kl_choice(nonlinearity, c("smooth_sqrt", "relu_powers"), nm("nonlinearity"),
                              caller)
  .check_number(degree, nm("degree"), lower = 1, upper = 10, integer = TRUE)
  .check_flag(keep_input, nm("keep_input"), caller)
  list(ridge = as.numeric(ridge), ridge_type = ridge_type, top = as.integer(top),
       threshold = as.numeric(threshold), nonlinearity = nonlinearity,
       degree = as.integer(degree), keep_input = keep_input, ones = ones)
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
  last <- .gem_layer_settings(ridge, ridge_type, top, threshold, nonlinearity, degree,
                              keep_input, ones = FALSE, caller)
  if (keep_max > 0L) last$keep_max <- as.integer(keep_max)
  if (search_only) last$search_only <- TRUE
  .check_number(depth, "depth", lower = 1, upper = 2, integer = TRUE)
  head <- .kl_choice(head, c("cls", "logistic"), "head", caller)
  cls <- head == "cls"
  if (is.null(maxit)) maxit <- if (cls) 25 else 500
  if (is.null(tol)) tol <- if (cls) 0.002 else 1e-6
  if (!is.null(lambda)) .check_number(lambda, "lambda", lower = 0)
  # a penalty chosen on a sample of the rows (sample_search: that search): the rows are held
  # out as for a search on all rows and the directions learned from the others, then the head
  # is fitted on all rows with that penalty, as a search on all rows that chose it would
  on_sample <- !is.null(sample_search)
  if (on_sample) lambda <- attr(sample_search, "chosen")
  .check_number(ensemble, "ensemble", lower = 1, upper = 1000, integer = TRUE)
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
  # Without the input's zero columns, a relative ridge (ridge x trace / columns) is rescaled so
  # that the first layer's eigenproblems are those of the whole input.
  if (!is.null(inp$columns_all) && layers[[1L]]$ridge_type == "relative")
    layers[[1L]]$ridge_core <- layers[[1L]]$ridge * ncol(inp$x) / inp$columns_all
  if (!is.null(rff)) {
    if (!is.list(rff) || is.null(rff$dim) || is.null(rff$gamma) ||
        length(setdiff(names(rff), c("dim", "gamma"))))
      stop(sprintf("%s: 'rff' must be NULL or list(dim = , gamma = )", caller), call. = FALSE)
    .check_number(rff$dim, "rff$dim", lower = 1, upper = 1e6, integer = TRUE)
    .check_number(rff$gamma, "rff$gamma", lower = 0, lower_open = TRUE)
  }
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
                  threads = threads)
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

# Penalties searched: a decreasing path for the logistic head (warm-started from the largest),
# powers of 4 around 1 for calibrated least squares. The single value used when there are too
# few rows to validate.
.gem_lambda_grid <- function(head) {
  if (head == "cls") 4^(-7:8) else 10^seq(-1, -4, by = -0.5)
}
.gem_default_lambda <- function(head) if (head == "cls") 1 else 1e-3

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

.gem_base_code <- function(nl) if (nl == "smooth_sqrt") 0L else 1L

.gem_layer_map <- function(z, L, threads, standardize = FALSE, center = NULL, scale = NULL,
                           rmap = NULL, caller = "gem()") {
  .kl_core(caller, cpp_gem_features, z, L$V, .gem_base_code(L$nonlinearity), L$degree,
           L$keep_input, L$ones, standardize, center, scale, threads, NULL, rmap$W, rmap$b)
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
                            seconds = h$seconds)))
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

# The fitted classes. A calibrated least-squares head keeps its training rows' final scores,
# which are exactly what predict() computes for those rows: the classes come from them, without
# a prediction pass. The scores are not kept in the model.
.gem_keep_fitted <- function(fit, fitted, newdata, y, threads) {
  have <- all(vapply(fit$members, function(m) !is.null(m$scores), logical(1)))
  if (fitted && have) {
    lev <- fit$levels
    P <- 0
    for (m in fit$members) P <- P + .kl_core("gem()", cpp_simplex_project, m$scores)
    P <- P / length(fit$members)
    fit$fitted.values <- factor(lev[max.col(P, ties.method = "first")], levels = lev)
  }
  for (m in seq_along(fit$members)) fit$members[[m]]$scores <- NULL
  if (fitted && !have) fit <- .kl_keep_fitted(fit, fitted, newdata, y, threads)
  fit
}

# Scores of a member's calibrated least-squares head for prepared (scaled) inputs x. A head
# fitted on single-precision features predicts from features built the same way.
.gem_member_cls_scores <- function(mem, x, threads, standardize, caller = "gem()") {
  if (!isTRUE(mem$head$single)) {
    Z <- .gem_member_features(mem, x, threads, standardize, caller)
    return(.kl_core(caller, cpp_cls_scores, Z, mem$head$W0, mem$head$link, mem$head$delta,
                    threads))
  }
  li <- .gem_last_input(mem, x, threads, caller)
  L <- mem$layers[[length(mem$layers)]]
  .kl_core(caller, cpp_gem_cls_scores_single, li$z, L$V, .gem_base_code(L$nonlinearity),
           L$degree, L$keep_input, L$ones, standardize, mem$center, mem$scale, mem$head$W0,
           mem$head$link, mem$head$delta, threads, li$rmap$W, li$rmap$b)
}

# What the last layer of a member receives for prepared (scaled) inputs x: the representation
# of the layers before it, and the random Fourier map still to apply (NULL once applied).
.gem_last_input <- function(mem, x, threads, caller = "gem()") {
  z <- x
  pre <- mem$rff
  for (l in seq_len(length(mem$layers) - 1L)) {
    z <- .gem_layer_map(z, mem$layers[[l]], threads, rmap = pre, caller = caller)
    pre <- NULL
  }
  list(z = z, rmap = pre)
}

# The final features of one member for prepared (scaled) inputs x.
.gem_member_features <- function(mem, x, threads, standardize, caller = "gem()") {
  li <- .gem_last_input(mem, x, threads, caller)
  Z <- .gem_layer_map(li$z, mem$layers[[length(mem$layers)]], threads,
                      standardize = standardize, center = mem$center, scale = mem$scale,
                      rmap = li$rmap, caller = caller)
  attr(Z, "center") <- NULL
  attr(Z, "scale") <- NULL
  Z
}

.gem_feature_names <- function(mem, input_names) {
  L <- mem$layers[[length(mem$layers)]]
  lev_pairs <- if (nrow(L$pairs)) paste0(L$pairs[L$pair_of, 1L], "|", L$pairs[L$pair_of, 2L])
               else character()
  rank <- if (length(L$pair_of)) stats::ave(L$pair_of, L$pair_of, FUN = seq_along) else integer()
  dirs <- paste0(lev_pairs, "#", rank)
  inp <- if (L$keep_input) {
    if (length(mem$layers) > 1L || !is.null(mem$rff)) paste0("z", seq_len(nrow(L$V)))
    else input_names
  } else character()
  raw <- c(inp, paste0(dirs, "+"), paste0(dirs, "-"))
  nm <- raw
  if (L$degree > 1L) for (a in 2:L$degree) nm <- c(nm, paste0(raw, "^", a))
  if (L$ones) nm <- c("(one)", nm)
  nm
}

#' Features learned by a model
#'
#' The representation a feature-learning model feeds to its final predictor,
#' for new data.
#'
#' @param object A fitted model with a learned representation (\code{\link{gem}},
#'   \code{\link{dikl}}).
#' @param newdata New data, in the form the model was fitted with.
#' @param ... Further arguments of the methods.
#' @return A numeric matrix with one row per row of \code{newdata}.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1)
#' f <- features(fit, iris[1:5, ])
#' dim(f)
#' @export
features <- function(object, ...) UseMethod("features")

#' @rdname features
#' @param member For an ensemble of GEM models, which member's features.
#' @param threads Number of threads.
#' @export
features.gem <- function(object, newdata, member = 1, threads = NULL, ...) {
  caller <- "features()"
  .no_dots(..., caller = caller)
  .check_number(member, "member", lower = 1, upper = length(object$members), integer = TRUE)
  x <- .gem_newdata(object, newdata, caller)
  mem <- object$members[[member]]
  Z <- .gem_member_features(mem, x, .kl_threads(threads), object$params$standardize, caller)
  colnames(Z) <- .gem_feature_names(mem, colnames(x))
  rownames(Z) <- rownames(newdata)
  Z
}

#' Predict with a GEM model
#'
#' @param object A \code{gem} model.
#' @param newdata New data, in the form the model was fitted with. Without it,
#'   the classes of the training rows kept by \code{fitted = TRUE}.
#' @param type \code{"class"} (a factor), \code{"prob"} (a matrix of class
#'   probabilities, rows summing to 1; for an ensemble the normalised
#'   geometric mean of the members' probabilities; with \code{head = "cls"},
#'   the scores projected onto the simplex, averaged) or \code{"decision"}
#'   (the linear predictors of the logistic regression, or the final scores of
#'   the calibrated least squares, averaged over an ensemble: a matrix with one
#'   column per class; for two classes a vector, the second class's value
#'   minus the first's, positive for the second level).
#' @param threads Number of threads.
#' @param ... Not used.
#' @return A factor, or a matrix with one column per class.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 2, threshold = 1)
#' head(predict(fit, iris, type = "prob"))
#' @export
predict.gem <- function(object, newdata, type = "class", threads = NULL, ...) {
  caller <- "predict.gem()"
  .no_dots(..., caller = caller)
  type <- .kl_predict_type(type, "classification", caller)
  if (missing(newdata) || is.null(newdata)) return(.kl_predict_fitted(object, type, caller))
  threads <- .kl_threads(threads)
  x <- .gem_newdata(object, newdata, caller)
  lev <- object$levels
  n <- nrow(x)
  logp <- matrix(0, n, length(lev))
  if (identical(object$params$head, "cls")) {
    # Calibrated least squares: scores replayed step by step; probabilities are the scores
    # projected onto the simplex, averaged over an ensemble.
    for (mem in object$members) {
      S <- .gem_member_cls_scores(mem, x, threads, object$params$standardize, caller)
      logp <- logp + if (type == "decision") S else .kl_core(caller, cpp_simplex_project, S)
    }
    logp <- logp / length(object$members)
    dimnames(logp) <- list(rownames(newdata), lev)
    if (type == "decision") return(.kl_decision_output(logp, lev))
    if (type != "class") return(logp)
    return(factor(lev[max.col(logp, ties.method = "first")], levels = lev))
  }
  for (mem in object$members) {
    Z <- .gem_member_features(mem, x, threads, object$params$standardize, caller)
    eta <- .kl_core(caller, cpp_linear_predictor, Z, mem$head$coefficients, mem$head$intercept,
                    threads)
    if (type == "decision") {
      logp <- logp + eta
    } else {
      mx <- apply(eta, 1L, max)
      lse <- mx + log(rowSums(exp(eta - mx)))
      logp <- logp + (eta - lse)
    }
  }
  logp <- logp / length(object$members)
  dimnames(logp) <- list(rownames(newdata), lev)
  if (type == "decision") return(.kl_decision_output(logp, lev))
  mx <- apply(logp, 1L, max)
  P <- exp(logp - mx)
  P <- P / rowSums(P)
  if (type == "prob") return(P)
  factor(lev[max.col(P, ties.method = "first")], levels = lev)
}

#' @export
print.gem <- function(x, ...) {
  mem <- x$members[[1L]]
  L <- mem$layers[[length(mem$layers)]]
  cat(sprintf("GEM classifier (%s%s%s): %d classes, %d training rows\n",
              if (x$params$depth == 2) "deep, 2 layers" else "1 layer",
              if (!is.null(mem$rff)) sprintf(", on %d random Fourier features", ncol(mem$rff$W)) else "",
              if (length(x$members) > 1L) sprintf(", ensemble of %d", length(x$members)) else "",
              length(x$levels), x$n))
  for (l in seq_along(mem$layers)) {
    Ll <- mem$layers[[l]]
    cat(sprintf("  layer %d: %d class pairs, %d eigenvectors kept (ridge %s %s, top %d, threshold %s), %s, degree %d%s\n",
                l, nrow(Ll$pairs), ncol(Ll$V), format(Ll$ridge), Ll$ridge_type, Ll$top,
                format(Ll$threshold), Ll$nonlinearity, Ll$degree,
                if (Ll$keep_input) ", input kept" else ""))
  }
  rs <- x$params$ridge_search
  if (!is.null(rs))
    cat(sprintf("  ridge %s chosen from %s by the held-out %s at each one's best lambda%s: %s\n",
                format(x$params$ridge), paste(format(rs$ridge), collapse = ", "),
                if (identical(x$params$head, "cls")) "Brier score" else "error rate",
                .gem_compare_note(rs, x$n),
                paste(if (identical(x$params$head, "cls")) sprintf("%.4f", rs$loss) else
                  sprintf("%.2f%%", 100 * rs$error), collapse = ", ")))
  cat(sprintf("  %s: %d features, lambda %s%s, %d %s%s\n",
              if (identical(x$params$head, "cls")) "calibrated least squares" else "logistic regression",
              mem$p, format(signif(x$params$lambda, 4)), .gem_search_note(x),
              mem$head$iterations,
              if (identical(x$params$head, "cls")) "steps" else "iterations",
              if (isTRUE(mem$head$converged)) "" else " (not converged)"))
  invisible(x)
}

# How the penalty was set, for print(): chosen by validation (values tried, rows held out), or
# the fallback for too few rows.
.gem_search_note <- function(x) {
  if (!isTRUE(x$params$lambda_chosen)) return("")
  s <- x$members[[1L]]$head$search
  if (is.null(s)) return(" (too few rows to validate: the default)")
  lam <- if (length(x$members) > 1L) " (first member)" else ""
  how <- if (identical(x$params$head, "cls")) "the squared error of the probabilities" else "the error"
  tried <- s[order(s$lambda), , drop = FALSE]
  lams <- vapply(signif(tried$lambda, 6), format, "")
  vals <- if (identical(x$params$head, "cls"))
    sprintf("%s -> %.4f (%.2f%%)", lams, tried$loss, 100 * tried$error) else
    sprintf("%s -> %.2f%%", lams, 100 * tried$error)
  sample <- if (is.null(attr(s, "sample_rows"))) "" else
    sprintf(" of a sample of %d rows", as.integer(attr(s, "sample_rows")))
  sprintf(" (chosen%s from %d values by %s on %d held-out rows%s, fitted on %d: %s)", lam,
          nrow(s), how, as.integer(attr(s, "validation_rows")), sample,
          as.integer(attr(s, "train_rows")), paste(vals, collapse = ", "))
}

#' @export
summary.gem <- function(object, ...) {
  mem <- object$members[[1L]]
  L <- mem$layers[[length(mem$layers)]]
  lev <- object$levels
  pairs <- data.frame(numerator = lev[L$pairs[, 1L]], denominator = lev[L$pairs[, 2L]],
                      kept = tabulate(L$pair_of, nrow(L$pairs)),
                      largest = vapply(L$spectra, function(s) if (length(s)) s[1L] else NA_real_,
                                       numeric(1)),
                      stringsAsFactors = FALSE)
  structure(list(model = object, pairs = pairs), class = "summary.gem")
}

#' @export
print.summary.gem <- function(x, ...) {
  print(x$model)
  cat("\nEigenvectors kept per class pair (last layer of the first member):\n")
  print(utils::head(x$pairs, 20L), row.names = FALSE)
  if (nrow(x$pairs) > 20L) cat(sprintf("  ... and %d more pairs\n", nrow(x$pairs) - 20L))
  invisible(x)
}

#' Plot a GEM model
#'
#' Draws the generalized eigenvalues of every class pair (the paper's
#' guide to feature selection), or the eigenvectors as images when the inputs
#' are images (the paper's Figure 1 on MNIST).
#'
#' @param x A \code{gem} model.
#' @param type \code{"spectrum"} or \code{"vectors"}.
#' @param pairs Which class pairs to draw: row numbers of \code{summary(x)$pairs}
#'   or a two-column character matrix of levels; by default all (spectrum) or
#'   the first five (vectors).
#' @param image_dim For \code{type = "vectors"}: the image size, e.g.
#'   \code{c(28, 28)}; the number of inputs must equal its product.
#' @param n Eigenvectors drawn per pair.
#' @param layer Which layer (deep GEM).
#' @param member Which ensemble member.
#' @param ... Passed to the plotting functions.
#' @return \code{x}, invisibly.
#' @examples
#' fit <- gem(Species ~ ., data = iris, top = 4, threshold = 1)
#' plot(fit)
#' @export
plot.gem <- function(x, type = c("spectrum", "vectors"), pairs = NULL, image_dim = NULL, n = 5,
                     layer = NULL, member = 1, ...) {
  caller <- "plot.gem()"
  type <- .kl_choice(type, c("spectrum", "vectors"), "type", caller)
  .check_number(member, "member", lower = 1, upper = length(x$members), integer = TRUE)
  mem <- x$members[[member]]
  if (is.null(layer)) layer <- length(mem$layers)
  .check_number(layer, "layer", lower = 1, upper = length(mem$layers), integer = TRUE)
  L <- mem$layers[[layer]]
  lev <- x$levels
  np <- nrow(L$pairs)
  if (np == 0L) stop(sprintf("%s: the model has no class pairs", caller), call. = FALSE)
  if (is.null(pairs)) {
    sel <- if (type == "spectrum") seq_len(np) else seq_len(min(5L, np))
  } else if (is.character(pairs) && is.matrix(pairs) && ncol(pairs) == 2L) {
    key <- paste(lev[L$pairs[, 1L]], lev[L$pairs[, 2L]], sep = "\r")
    sel <- match(paste(pairs[, 1L], pairs[, 2L], sep = "\r"), key)
    if (anyNA(sel))
      stop(sprintf("%s: pair(s) %s are not in the model", caller,
                   .name_list(paste(pairs[is.na(sel), 1L], pairs[is.na(sel), 2L], sep = "/"))),
           call. = FALSE)
  } else {
    if (!is.numeric(pairs) || anyNA(pairs) || any(pairs < 1 | pairs > np | pairs != round(pairs)))
      stop(sprintf("%s: 'pairs' must be row numbers between 1 and %d, or a two-column matrix of levels",
                   caller, np), call. = FALSE)
    sel <- as.integer(pairs)
  }
  lab <- paste(lev[L$pairs[sel, 1L]], lev[L$pairs[sel, 2L]], sep = " / ")
  if (type == "spectrum") {
    sp <- L$spectra[sel]
    len <- max(lengths(sp))
    M <- vapply(sp, function(s) c(s, rep(NA_real_, len - length(s))), numeric(len))
    M <- matrix(M, nrow = len)
    pos <- M
    pos[!is.finite(pos) | pos <= 0] <- NA
    graphics::matplot(seq_len(len), pos, type = "l", lty = 1, log = "y",
                      col = grDevices::hcl.colors(max(2L, ncol(M)), "Dark 3"),
                      xlab = "eigenvector rank", ylab = "generalized eigenvalue",
                      main = sprintf("GEM spectra, layer %d (%d pairs)", layer, length(sel)), ...)
    if (L$threshold > 0) graphics::abline(h = L$threshold, lty = 2, col = "grey40")
    if (length(sel) <= 10L)
      graphics::legend("topright", legend = lab, lty = 1, bty = "n", cex = 0.8,
                       col = grDevices::hcl.colors(max(2L, ncol(M)), "Dark 3")[seq_along(sel)])
    return(invisible(x))
  }
  if (is.null(image_dim) || !is.numeric(image_dim) || length(image_dim) != 2L ||
      prod(image_dim) != nrow(L$V))
    stop(sprintf("%s: type = \"vectors\" needs 'image_dim' with prod(image_dim) equal to the layer's input dimension (%d)",
                 caller, nrow(L$V)), call. = FALSE)
  .check_number(n, "n", lower = 1, upper = 50, integer = TRUE)
  op <- graphics::par(mfrow = c(length(sel), n), mar = c(0.2, 0.2, 1.2, 0.2))
  on.exit(graphics::par(op))
  pal <- grDevices::hcl.colors(64L, "Blue-Red 3")
  for (q in seq_along(sel)) {
    cols <- which(L$pair_of == sel[q])
    for (r in seq_len(n)) {
      if (r > length(cols)) {
        graphics::plot.new()
        next
      }
      v <- L$V[, cols[r]]
      lim <- max(abs(v))
      img <- matrix(v, image_dim[1L], image_dim[2L], byrow = TRUE)
      graphics::image(t(img[nrow(img):1L, , drop = FALSE]), col = pal, zlim = c(-lim, lim),
                      axes = FALSE, main = if (r == 1L) lab[q] else "", cex.main = 0.8, ...)
    }
  }
  invisible(x)
}
