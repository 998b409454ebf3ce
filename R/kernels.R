#' Kernel objects
#'
#' Constructors for the kernels kernlearn computes in its C++ core. A kernel
#' object is a small list (plain R data, so fitted models that contain one can
#' be saved with \code{saveRDS()}); use it with \code{\link{kernel_matrix}} or
#' as the \code{kernel} argument of a learner such as \code{\link{kernel_ridge}}.
#'
#' \describe{
#'   \item{Gaussian}{\eqn{k(x, z) = \exp(-\gamma \|x - z\|^2)}{k(x, z) = exp(-gamma ||x - z||^2)}
#'     (e1071's \code{gamma}, kernlab's \code{sigma} of \code{rbfdot}).}
#'   \item{Laplacian}{\eqn{k(x, z) = \exp(-\gamma \|x - z\|)}{k(x, z) = exp(-gamma ||x - z||)},
#'     with the Euclidean norm (as kernlab's \code{laplacedot}).}
#'   \item{Linear}{\eqn{k(x, z) = x'z}.}
#'   \item{Polynomial}{\eqn{k(x, z) = (\mathrm{scale}\, x'z + \mathrm{offset})^{\mathrm{degree}}}{k(x, z) = (scale x'z + offset)^degree}
#'     (kernlab's \code{polydot}).}
#' }
#'
#' @param gamma Positive width parameter. \code{NULL} (the default) means
#'   \code{1 / ncol(x)} of the data the kernel is first used with (the rule of
#'   e1071); learners store the resolved value in the fitted model.
#'   \code{\link{kernel_svm}} and \code{\link{kernel_ridge}} give a Gaussian
#'   kernel without a width one over the sum of their scaled inputs' variances
#'   instead (see \code{\link{kernel_svm}}).
#' @param degree Integer degree \eqn{\ge 1} of the polynomial kernel.
#' @param scale,offset Scale of the inner product and constant of the
#'   polynomial kernel.
#' @return An object of class \code{c("kl_<name>_kernel", "kl_kernel")}.
#' @seealso \code{\link{kernel_matrix}}, \code{\link{kernel_ridge}}; the learned kernels
#'   \code{\link{hierarchical_gaussian_kernel}} and \code{\link{tessellated_kernel}}
#' @examples
#' k <- gaussian_kernel(gamma = 0.5)
#' k
#' kernel_matrix(k, matrix(c(0, 1, 2), ncol = 1))
#' polynomial_kernel(degree = 2, offset = 0)
#' @name kernels
NULL

.new_kernel <- function(name, ...) {
  structure(list(name = name, ...), class = c(paste0("kl_", name, "_kernel"), "kl_kernel"))
}

#' @rdname kernels
#' @export
gaussian_kernel <- function(gamma = NULL) {
  .check_number(gamma, "gamma", lower = 0, lower_open = TRUE, null_ok = TRUE,
                caller = "gaussian_kernel()")
  .new_kernel("gaussian", gamma = gamma)
}

#' @rdname kernels
#' @export
laplacian_kernel <- function(gamma = NULL) {
  .check_number(gamma, "gamma", lower = 0, lower_open = TRUE, null_ok = TRUE,
                caller = "laplacian_kernel()")
  .new_kernel("laplacian", gamma = gamma)
}

#' @rdname kernels
#' @export
linear_kernel <- function() {
  .new_kernel("linear")
}

#' @rdname kernels
#' @export
polynomial_kernel <- function(degree = 3, scale = 1, offset = 1) {
  .check_number(degree, "degree", lower = 1, integer = TRUE, caller = "polynomial_kernel()")
  .check_number(scale, "scale", caller = "polynomial_kernel()")
  .check_number(offset, "offset", caller = "polynomial_kernel()")
  .new_kernel("polynomial", degree = as.integer(degree), scale = scale, offset = offset)
}

#' @export
print.kl_kernel <- function(x, ...) {
  cat(format(x), "\n", sep = "")
  invisible(x)
}

# format() of a kernel: the one line print() writes, a method per kernel class (the learned
# kernels' are in R/kernels-learned.R).
#' @export
format.kl_kernel <- function(x, ...) sprintf("%s kernel", x$name)

#' @export
format.kl_gaussian_kernel <- function(x, ...) {
  sprintf("Gaussian kernel: exp(-gamma ||x - z||^2), gamma = %s", .kernel_gamma_text(x))
}

#' @export
format.kl_laplacian_kernel <- function(x, ...) {
  sprintf("Laplacian kernel: exp(-gamma ||x - z||), gamma = %s", .kernel_gamma_text(x))
}

#' @export
format.kl_linear_kernel <- function(x, ...) "Linear kernel: <x, z>"

#' @export
format.kl_polynomial_kernel <- function(x, ...) {
  sprintf("Polynomial kernel: (%s <x, z> + %s)^%d", format(x$scale), format(x$offset),
          x$degree)
}

# The width of a Gaussian or Laplacian kernel as print() shows it (NULL: the data's rule).
.kernel_gamma_text <- function(x) {
  if (is.null(x$gamma)) "1/ncol(x)" else format(x$gamma, digits = 6)
}

# A kernel argument: a kernel object, or one of the names "gaussian", "laplacian", "linear",
# "polynomial" (with default parameters).
.as_kernel <- function(kernel, caller) {
  if (is.character(kernel) && length(kernel) == 1L) {
    kernel <- switch(kernel,
      gaussian = , rbf = gaussian_kernel(),
      laplacian = laplacian_kernel(),
      linear = linear_kernel(),
      polynomial = polynomial_kernel(),
      stop(sprintf("%s: unknown kernel \"%s\"; use gaussian_kernel(), laplacian_kernel(), linear_kernel(), polynomial_kernel(), hierarchical_gaussian_kernel() or tessellated_kernel()",
                   caller, kernel), call. = FALSE))
  }
  if (!inherits(kernel, "kl_kernel"))
    stop(sprintf("%s: 'kernel' must be a kernel object such as gaussian_kernel(gamma = 1)",
                 caller), call. = FALSE)
  kernel
}

# What differs between kernel families on the R side is behind the internal generics below,
# with a method per kernel class (c("kl_<name>_kernel", "kl_kernel")); the learned kernels'
# methods are in R/kernels-learned.R. The `name` field stays in every kernel object: the glue
# reads it (klr::kernel_from_r in src/glue.hpp), and saved models keep it.

# TRUE for kernels with a width `gamma` that kernel_svm()'s `gamma` argument (and kl_tune()
# grids over it) may replace.
.kernel_has_gamma <- function(kernel, ...) UseMethod(".kernel_has_gamma")

#' @exportS3Method .kernel_has_gamma kl_kernel
.kernel_has_gamma.kl_kernel <- function(kernel, ...) FALSE

#' @exportS3Method .kernel_has_gamma kl_gaussian_kernel
.kernel_has_gamma.kl_gaussian_kernel <- function(kernel, ...) TRUE

#' @exportS3Method .kernel_has_gamma kl_laplacian_kernel
.kernel_has_gamma.kl_laplacian_kernel <- function(kernel, ...) TRUE

# Fills in data-dependent defaults (gamma = 1 / p) and checks that the kernel is defined on p
# columns.
.resolve_kernel <- function(kernel, p, caller = "kernel", ...) UseMethod(".resolve_kernel")

#' @exportS3Method .resolve_kernel kl_kernel
.resolve_kernel.kl_kernel <- function(kernel, p, caller = "kernel", ...) kernel

#' @exportS3Method .resolve_kernel kl_gaussian_kernel
.resolve_kernel.kl_gaussian_kernel <- function(kernel, p, caller = "kernel", ...) {
  if (is.null(kernel$gamma)) kernel$gamma <- 1 / p
  kernel
}

#' @exportS3Method .resolve_kernel kl_laplacian_kernel
.resolve_kernel.kl_laplacian_kernel <- .resolve_kernel.kl_gaussian_kernel

# The list the C++ glue reads (klr::kernel_from_r in src/glue.hpp) of a resolved kernel: what
# each family sends, one method per kernel class.
.kernel_spec <- function(kernel, ...) UseMethod(".kernel_spec")

#' @exportS3Method .kernel_spec default
.kernel_spec.default <- function(kernel, ...) {
  stop("internal error: unknown kernel ", class(kernel)[1L], call. = FALSE)
}

# The Gaussian, Laplacian, linear and polynomial kernels: one list with every parameter.
#' @exportS3Method .kernel_spec kl_gaussian_kernel
.kernel_spec.kl_gaussian_kernel <- function(kernel, ...) {
  list(name = kernel$name,
       gamma = if (is.null(kernel$gamma)) 1 else as.numeric(kernel$gamma),
       degree = if (is.null(kernel$degree)) 1 else as.numeric(kernel$degree),
       scale = if (is.null(kernel$scale)) 1 else as.numeric(kernel$scale),
       offset = if (is.null(kernel$offset)) 0 else as.numeric(kernel$offset))
}

#' @exportS3Method .kernel_spec kl_laplacian_kernel
.kernel_spec.kl_laplacian_kernel <- .kernel_spec.kl_gaussian_kernel

#' @exportS3Method .kernel_spec kl_linear_kernel
.kernel_spec.kl_linear_kernel <- .kernel_spec.kl_gaussian_kernel

#' @exportS3Method .kernel_spec kl_polynomial_kernel
.kernel_spec.kl_polynomial_kernel <- .kernel_spec.kl_gaussian_kernel

#' Kernel matrix between two sets of points
#'
#' Computes \eqn{K_{ij} = k(x_i, y_j)} in the C++ core, in blocks through
#' matrix products (\eqn{\|x\|^2 + \|z\|^2 - 2 x'z} for the distance kernels),
#' in parallel with OpenMP, or on the GPU when the CUDA backend is in use (see
#' \code{\link{kl_backend}}). The data are used as given (no scaling).
#'
#' @param kernel A kernel object (\code{\link{gaussian_kernel}}, ...) or the
#'   name of one.
#' @param x Numeric matrix (or data.frame of numeric columns), one row per point.
#' @param y Numeric matrix with the same number of columns; \code{NULL} (the
#'   default) means \code{x}.
#' @param threads Number of threads; default
#'   \code{getOption("kernlearn.threads", 2)}.
#' @return The \code{nrow(x)} by \code{nrow(y)} kernel matrix, with the row
#'   names of \code{x} and \code{y} as dimnames.
#' @examples
#' x <- matrix(rnorm(20), 10, 2)
#' K <- kernel_matrix(gaussian_kernel(gamma = 1), x)
#' dim(K)
#' all.equal(K[1, 2], exp(-sum((x[1, ] - x[2, ])^2)))
#' kernel_matrix(linear_kernel(), x[1:3, ], x[4:5, ])
#' @export
kernel_matrix <- function(kernel, x, y = NULL, threads = NULL) {
  caller <- "kernel_matrix()"
  kernel <- .as_kernel(kernel, caller)
  x <- .kl_numeric_frame(x, caller, "x")
  x <- .check_numeric_matrix(x, caller, "x")
  if (is.null(y)) {
    y <- x
  } else {
    y <- .kl_numeric_frame(y, caller, "y")
    y <- .check_numeric_matrix(y, caller, "y")
  }
  if (ncol(x) != ncol(y))
    stop(sprintf("%s: 'x' has %d columns but 'y' has %d", caller, ncol(x), ncol(y)),
         call. = FALSE)
  kernel <- .resolve_kernel(kernel, ncol(x), caller)
  K <- .kl_core(caller, cpp_kernel_matrix, x, y, .kernel_spec(kernel), .kl_threads(threads),
                .kl_backend_arg())
  if (!is.null(rownames(x)) || !is.null(rownames(y)))
    dimnames(K) <- list(rownames(x), rownames(y))
  K
}
