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
#' \strong{Cells.} With \code{cells}, the scaled input space is cut into
#' cells of at most \code{cell_size} training rows (the partition of
#' \code{\link{kernel_svm}(cells = )}, see \code{\link{kl_cells}}; its
#' grids and folds are not used here), and every cell gets its own GEM model
#' with the settings given, from its own rows and classes: local directions
#' and a local classifier, which on large data with many local structures
#' (all of Covertype) is far more accurate than one model, and faster, since
#' a cell has few classes and rows. The cells are fitted as tasks on the
#' \pkg{future} plan, as the cells of \code{kernel_svm()} are. A cell with
#' one class predicts it; a cell where no direction of its class pairs
#' reaches \code{threshold} (or whose fit fails) fits its classifier on the
#' inputs alone (\code{pairs = "none"}), and if that fails too predicts its
#' most frequent class; \code{print()} counts such cells. The warnings of a
#' cell's fit are kept with the cell (\code{fit$cells[[i]]$warnings}) and
#' counted by \code{print()}, not raised. \code{cells = "auto"} with many rows
#' fits one model and cells of 1000 rows on four fifths of a stratified
#' sample of at most 100,000 rows, and keeps the one with the smaller error on
#' the other fifth (a tie keeps one model); \code{fit$selection} and
#' \code{print()} give both errors. With more input columns than a tenth of
#' a cell's rows (more than 100), a cell's class moments cannot be estimated
#' from its rows, and \code{"auto"} fits one model without the comparison
#' (and says so).
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
#' errors. \code{fit$members[[m]]$head$single_factor} says which was used.
#' With many collinear features (inputs that take two values, whose powers
#' repeat them; one-hot groups) and a small penalty, those sums can leave
#' the system indefinite where the exact one is not: the Gram matrix is then
#' summed again in double precision (about twice the time of its first
#' sums) and the fit or the search goes on with it
#' (\code{fit$members[[m]]$head$exact_gram} is then \code{TRUE}). The
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
#' for the full fits. A ridge whose fit fails (with the larger ridge the
#' eigenvalues are smaller, and none may reach \code{threshold}: on the Pima
#' diabetes data the largest is 1.56 with 0.5 and 2.23 with 0.1) is left out
#' of the comparison, and \code{print()} says why; only when neither ridge
#' can be fitted is the error given, that of 0.1. Give \code{ridge} to fit
#' once.
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
#' @param threshold Eigenvectors with eigenvalue below this are dropped. When
#'   no eigenvector of any class pair reaches it (classes whose second moments
#'   differ by less than this factor in every direction, as on mlbench's
#'   ringnorm and two spirals, where the largest is about 1.5), the classifier is
#'   fitted on the inputs alone (\code{pairs = "none"}, one layer, no
#'   ensemble) from the same random state; \code{print()} and
#'   \code{fit$fallback} say so. A \code{threshold} given in the call also
#'   warns then; the default's fallback does not (the model is the default's
#'   documented outcome: on the LIBSVM cod-rna data the largest eigenvalue is
#'   1.38, and directions from a lower threshold erred as the inputs alone did).
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
#' @param cells \code{"auto"} (the default), \code{FALSE}, \code{TRUE} or
#'   \code{\link{kl_cells}(...)}: one model for the whole input space, or a
#'   localized model with one GEM model per cell (see Details, Cells).
#'   \code{TRUE} means \code{kl_cells(cell_size = 1000)}; \code{"auto"}
#'   compares the two on held-out rows when there are at least 100,000 rows
#'   (option \code{kernlearn.gem_cells_rows}) and fits one model below.
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
#'   to all the columns, so the model is the same), \code{selection} (with
#'   \code{cells = "auto"} on many rows: the held-out errors of one model and
#'   of cells, and the choice) and the call. With cells, an object of class
#'   \code{c("gem_cells", "kl_model")} (see \code{\link{predict.gem_cells}}):
#'   the partition, \code{cells} (per cell its rows, classes, \code{status}
#'   and GEM \code{model}), \code{selection} and the settings.
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
                        cells = "auto", subset = NULL, na.action = stats::na.fail,
                        threads = NULL, ...) {
  caller <- "gem()"
  .gem_check_moved(..., caller = caller)
  .no_dots(..., caller = caller)
  .check_flag(fitted, "fitted", caller)
  data <- .kl_formula_data(formula, if (missing(data)) NULL else data, substitute(subset),
                           na.action, "gem()", parent.frame())
  .check_flag(scale, "scale", caller)
  inp <- .kl_input_formula(formula, data, caller, scale = scale)
  .gem_fit_input(inp, mget(.gem_settings, envir = environment()), control, cells, scale,
                 threads, fitted, data, .kl_call(match.call(), "gem"),
                 threshold_given = !missing(threshold))
}

#' @rdname gem
#' @export
gem.default <- function(x, y, ridge = NULL, ridge_type = c("relative", "absolute"),
                        top = 30, threshold = 2, pairs = "all",
                        nonlinearity = c("smooth_sqrt", "relu_powers"), degree = 3,
                        keep_input = TRUE, head = c("cls", "logistic"), lambda = NULL,
                        depth = 1, first_layer = list(), rff = NULL, ensemble = 1,
                        scale = TRUE, control = gem_control(), fitted = TRUE,
                        cells = "auto", threads = NULL, ...) {
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
  .gem_fit_input(inp, mget(.gem_settings, envir = environment()), control, cells, scale,
                 threads, fitted, x, .kl_call(match.call(), "gem"),
                 threshold_given = !missing(threshold))
}

# Both methods of gem() from the checked input: one model, or cells (given, or chosen by
# validation with cells = "auto"). `newdata`: the training data as the user gave it.
.gem_fit_input <- function(inp, settings, control, cells, scale, threads, fitted, newdata,
                           call, threshold_given = TRUE) {
  caller <- "gem()"
  if (inp$task != "classification")
    stop(sprintf("%s: GEM is a classifier; 'y' must be a factor of class labels", caller),
         call. = FALSE)
  cells <- .gem_cells_arg(cells, settings, caller)
  selection <- NULL
  if (identical(cells, "auto")) {
    auto <- .gem_cells_auto(inp, settings, control, scale, threads, caller)
    cells <- auto$cells
    selection <- auto$selection
  }
  if (!is.null(cells))
    return(.gem_cells_fit(inp, settings, control, cells, scale, threads, fitted, call,
                          selection, caller))
  dz <- if (is.null(settings$rff)) .gem_drop_zero_columns(inp)
        else list(inp = inp, active = NULL)
  genv <- globalenv()
  if (!exists(".Random.seed", envir = genv, inherits = FALSE)) stats::runif(1)
  state <- get(".Random.seed", envir = genv, inherits = FALSE)
  fit <- tryCatch(.gem_fit_ridge(dz$inp, settings, control, threads, call),
                  error = function(e) e)
  if (inherits(fit, "error")) {
    # No direction of any class pair reaches the threshold: the classifier is fitted on the
    # inputs alone (pairs = "none"), from the random state the fit started with, as a cell
    # without directions is. The fit warns when the threshold was given; with the default it
    # is the default's documented outcome, kept in fit$fallback and printed.
    msg <- sub("^gem\\(\\): ", "", conditionMessage(fit))
    if (!startsWith(msg, "no eigenvalue reaches threshold") ||
        identical(settings$pairs, "none")) stop(fit)
    settings[c("pairs", "depth", "ensemble", "keep_input")] <- list("none", 1, 1, TRUE)
    settings["first_layer"] <- list(list())
    assign(".Random.seed", state, envir = genv)
    fit <- .gem_fit_ridge(dz$inp, settings, control, threads, call)
    fit$fallback <- sub("; lower 'threshold'$", "", msg)
    if (threshold_given)
      warning(sprintf("gem(): %s; the classifier was fitted on the inputs alone (pairs = \"none\"); lower 'threshold' to use generalized eigenvectors",
                      fit$fallback), call. = FALSE)
  }
  fit$active <- dz$active
  fit$selection <- selection
  .gem_keep_fitted(fit, fitted, newdata, inp$y, threads)
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
#'   them (default 50 and 0.002; \code{tol = 0} runs exactly \code{maxit}
#'   steps). The fits of a penalty search, which only rank the penalties,
#'   take at most 100 iterations (logistic) or 25 steps (calibrated least
#'   squares); the final fit has the full budget. \code{NULL} means the
#'   default of the head.
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
