#' kernlearn: supervised kernel learning with a fast C++ core
#'
#' kernlearn learns kernels and kernel feature maps from labelled data and fits
#' kernel machines with them. Its numerical core is R-free C++ on Eigen,
#' parallel with OpenMP, with an optional CUDA backend.
#'
#' @section Learners and tools:
#' \itemize{
#'   \item \code{\link{kernel_svm}}: SVM classification (one-vs-one) and
#'     epsilon-regression with any kernel or a precomputed one.
#'   \item \code{\link{kernel_ridge}}: exact kernel ridge regression and
#'     least-squares SVM classification.
#'   \item \code{\link{dikl}}: Nystrom or random Fourier features trained by
#'     discriminant information; \code{\link{gem}}: generalized-eigenvector
#'     features.
#'   \item \code{\link{hgk}}: hierarchical Gaussian kernel learning;
#'     \code{\link{tkl}}: tessellated kernel learning; the learned kernel of
#'     either is \code{\link{learned_kernel}()}.
#'   \item Kernel objects: \code{\link{gaussian_kernel}},
#'     \code{\link{laplacian_kernel}}, \code{\link{linear_kernel}},
#'     \code{\link{polynomial_kernel}}, \code{\link{hierarchical_gaussian_kernel}},
#'     \code{\link{tessellated_kernel}}, and \code{\link{kernel_matrix}}.
#'   \item Model selection: \code{\link{kl_cv}} and \code{\link{kl_tune}}
#'     (with \code{plot()} and \code{summary()} methods), and
#'     \code{\link{kl_caret_model}} for caret.
#'   \item Data: \code{\link{kl_dataset}} and \code{\link{read_libsvm}}.
#'   \item Computing: \code{\link{kl_backend}}.
#' }
#'
#' @section Conventions of every learner:
#' \itemize{
#'   \item A formula method (\code{learner(y ~ ., data, subset =, na.action =)})
#'     and an x / y method (a matrix, data.frame or sparse \code{dgCMatrix}); a
#'     factor response means classification, a numeric one regression.
#'   \item Inputs are scaled to \eqn{[0, 1]} with the training range (the
#'     scaling is stored and applied to new data); factors are one-hot encoded.
#'   \item \code{predict(type = "decision")} gives, for regression and for two
#'     classes, a numeric vector (for two classes positive for the second
#'     level), and for more classes a matrix with named columns (one per
#'     level, or one per pair \code{"b/a"} for the one-vs-one SVMs), without
#'     row names. \code{type = "prob"} gives a matrix with one column per
#'     level whose rows sum to 1, where the learner has probabilities.
#'   \item Bad input gets an error that names the argument or column; Ctrl-C
#'     stops a fit with an R interrupt condition.
#' }
#'
#' @section Options:
#' \describe{
#'   \item{\code{kernlearn.threads}}{default number of threads (2). The
#'     environment variable \code{KERNLEARN_THREADS} is used when the option is
#'     unset; a \code{threads} argument overrides both. On a machine shared with
#'     other busy processes, OpenMP's idle threads wait by spinning (its
#'     default), and so take processor time from the threads that work: there
#'     two threads can be slower than one. Set the environment variable
#'     \code{OMP_WAIT_POLICY=passive} in the shell that starts R (for example
#'     \code{OMP_WAIT_POLICY=passive R}, or an \code{export} in the shell's
#'     profile; OpenMP reads it as R starts, before \file{~/.Renviron}, which
#'     is too late), or use one thread.}
#'   \item{\code{kernlearn.backend}}{\code{"auto"} (default), \code{"cpu"} or
#'     \code{"cuda"}; see \code{\link{kl_backend}}.}
#'   \item{\code{kernlearn.data_dir}}{where \code{\link{kl_dataset}} looks for
#'     data.}
#'   \item{\code{kernlearn.cache_dir}}{where \code{\link{kl_dataset}} stores
#'     downloads (default \code{tools::R_user_dir("kernlearn", "cache")}).}
#'   \item{\code{kernlearn.max_memory}}{the memory, in bytes, that exact solvers
#'     may use; by default the memory the operating system reports as available.}
#' }
#'
#' @keywords internal
#' @useDynLib kernlearn, .registration = TRUE
#' @importFrom Rcpp sourceCpp
"_PACKAGE"
