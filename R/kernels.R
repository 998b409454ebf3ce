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
  .check_number(gamma, "gamma", lower = 0, lower_open = TRUE, null_ok = TRUE)
  .new_kernel("gaussian", gamma = gamma)
}

#' @rdname kernels
#' @export
laplacian_kernel <- function(gamma = NULL) {
  .check_number(gamma, "gamma", lower = 0, lower_open = TRUE, null_ok = TRUE)
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
  .check_number(degree, "degree", lower = 1, integer = TRUE)
  .check_number(scale, "scale")
  .check_number(offset, "offset")
  .new_kernel("polynomial", degree = as.integer(degree), scale = scale, offset = offset)
}

#' @export
print.kl_kernel <- function(x, ...) {
  g <- if (is.null(x$gamma)) "1/ncol(x)" else format(x$gamma, digits = 6)
  txt <- switch(x$name,
    gaussian = sprintf("Gaussian kernel: exp(-gamma ||x - z||^2), gamma = %s", g),
    laplacian = sprintf("Laplacian kernel: exp(-gamma ||x - z||), gamma = %s", g),
    linear = "Linear kernel: <x, z>",
    polynomial = sprintf("Polynomial kernel: (%s <x, z> + %s)^%d", format(x$scale),
                         format(x$offset), x$degree),
    hierarchical_gaussian = {
      e <- .hgk_extent(x)
      if (e[["depth"]] == 1)
        sprintf("Hierarchical Gaussian kernel: depth 1, %d weights (range %s to %s), gamma = %s",
                length(x$weights), format(min(abs(x$weights)), digits = 3),
                format(max(abs(x$weights)), digits = 3), format(x$gamma, digits = 6))
      else
        sprintf("Hierarchical Gaussian kernel: depth %d, %d first-layer node(s) over columns up to %d, gamma = %s",
                e[["depth"]], length(.hgk_flatten(x)$leaf) - sum(!.hgk_flatten(x)$leaf),
                e[["cols"]], format(x$gamma, digits = 6))
    },
    tessellated = sprintf("Tessellated kernel: degree %d, P %d x %d, box [%s, %s]%s", x$degree,
                          nrow(x$P), ncol(x$P), paste(format(unique(x$lower)), collapse = ", "),
                          paste(format(unique(x$upper)), collapse = ", "),
                          if (is.na(x$d)) "" else sprintf(" in %d columns", x$d)),
    sprintf("%s kernel", x$name))
  cat(txt, "\n", sep = "")
  invisible(x)
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

# Fills in data-dependent defaults (gamma = 1 / p) and checks that the kernel is defined on p
# columns.
.resolve_kernel <- function(kernel, p, caller = "kernel") {
  if (kernel$name %in% c("gaussian", "laplacian") && is.null(kernel$gamma))
    kernel$gamma <- 1 / p
  if (kernel$name == "hierarchical_gaussian") {
    e <- .hgk_extent(kernel)
    if (is.null(kernel$nodes) && length(kernel$weights) != p)
      stop(sprintf("%s: the hierarchical Gaussian kernel has %d weights but the data have %d columns",
                   caller, length(kernel$weights), p), call. = FALSE)
    if (e[["cols"]] > p)
      stop(sprintf("%s: the hierarchical Gaussian kernel uses column %d but the data have %d columns",
                   caller, e[["cols"]], p), call. = FALSE)
    kernel$d <- as.integer(p)
  }
  if (kernel$name == "tessellated") {
    if (!is.na(kernel$d) && kernel$d != p)
      stop(sprintf("%s: the tessellated kernel's P (%d x %d, degree %d) is for %d columns but the data have %d",
                   caller, nrow(kernel$P), ncol(kernel$P), kernel$degree, kernel$d, p),
           call. = FALSE)
    if (!is.na(kernel$d) || length(kernel$lower) %in% c(1L, p) && length(kernel$upper) %in% c(1L, p)) {
      kernel$lower <- rep_len(kernel$lower, p)
      kernel$upper <- rep_len(kernel$upper, p)
    } else {
      stop(sprintf("%s: the tessellated kernel's box has %d bounds but the data have %d columns",
                   caller, max(length(kernel$lower), length(kernel$upper)), p), call. = FALSE)
    }
    kernel$d <- as.integer(p)
  }
  kernel
}

# The list the C++ glue reads (klr::kernel_from_r in src/glue.hpp) of a resolved kernel: the one
# place on the R side that knows what each family sends.
.kernel_spec <- function(kernel) {
  switch(kernel$name,
    gaussian = , laplacian = , linear = , polynomial =
      list(name = kernel$name,
           gamma = if (is.null(kernel$gamma)) 1 else as.numeric(kernel$gamma),
           degree = if (is.null(kernel$degree)) 1 else as.numeric(kernel$degree),
           scale = if (is.null(kernel$scale)) 1 else as.numeric(kernel$scale),
           offset = if (is.null(kernel$offset)) 0 else as.numeric(kernel$offset)),
    hierarchical_gaussian = c(list(name = kernel$name,
                                   d = if (is.null(kernel$d)) .hgk_extent(kernel)[["cols"]]
                                       else kernel$d),
                              .hgk_flatten(kernel)),
    tessellated = list(name = kernel$name, P = kernel$P, degree = kernel$degree,
                       lower = as.numeric(kernel$lower), upper = as.numeric(kernel$upper)),
    stop("internal error: unknown kernel ", kernel$name, call. = FALSE))
}

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
  if (is.data.frame(x)) x <- as.matrix(x)
  x <- .check_numeric_matrix(x, caller, "x")
  if (is.null(y)) {
    y <- x
  } else {
    if (is.data.frame(y)) y <- as.matrix(y)
    y <- .check_numeric_matrix(y, caller, "y")
  }
  if (ncol(x) != ncol(y))
    stop(sprintf("%s: 'x' has %d columns but 'y' has %d", caller, ncol(x), ncol(y)),
         call. = FALSE)
  kernel <- .resolve_kernel(kernel, ncol(x), caller)
  K <- cpp_kernel_matrix(x, y, .kernel_spec(kernel), .kl_threads(threads), .kl_backend_arg())
  if (!is.null(rownames(x)) || !is.null(rownames(y)))
    dimnames(K) <- list(rownames(x), rownames(y))
  K
}
