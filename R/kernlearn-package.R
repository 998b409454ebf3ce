#' kernlearn: supervised kernel learning with a fast C++ core
#'
#' kernlearn learns kernels and kernel feature maps from labelled data and fits
#' kernel machines with them. Its numerical core is R-free C++ on Eigen,
#' parallel with OpenMP, with an optional CUDA backend.
#'
#' @section Learners and tools:
#' \itemize{
#'   \item \code{\link{kernel_ridge}}: exact kernel ridge regression and
#'     least-squares SVM classification.
#'   \item Kernel objects: \code{\link{gaussian_kernel}},
#'     \code{\link{laplacian_kernel}}, \code{\link{linear_kernel}},
#'     \code{\link{polynomial_kernel}}, and \code{\link{kernel_matrix}}.
#'   \item Model selection: \code{\link{kl_cv}} and \code{\link{kl_tune}}.
#'   \item Data: \code{\link{kl_dataset}} and \code{\link{read_libsvm}}.
#'   \item Computing: \code{\link{kl_backend}}.
#' }
#'
#' @section Options:
#' \describe{
#'   \item{\code{kernlearn.threads}}{default number of threads (2). The
#'     environment variable \code{KERNLEARN_THREADS} is used when the option is
#'     unset; a \code{threads} argument overrides both.}
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
