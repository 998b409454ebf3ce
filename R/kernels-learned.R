#' Hierarchical Gaussian kernels
#'
#' A tree of Gaussian kernels, the kernel that \code{hgk()} learns (Steinwart,
#' Thomann and Schmid, 2016). Each first-layer node is a Gaussian kernel on a
#' subset of the input coordinates with a weight per coordinate; an inner node
#' combines its children, and the root is the kernel:
#' \deqn{K_j(x, z) = \exp\Big(-\sum_{i \in I_j} w_{ji}^2 (x_i - z_i)^2\Big), \qquad
#'       k(x, z) = \exp\Big(-\gamma \sum_j u_j^2 \big(1 - K_j(x, z)\big)\Big).}{K_j(x, z) = exp(-sum_{i in I_j} w_ji^2 (x_i - z_i)^2),  k(x, z) = exp(-gamma sum_j u_j^2 (1 - K_j(x, z))).}
#'
#' \describe{
#'   \item{Depth 1}{(\code{nodes = NULL}): \code{weights} has one entry per
#'     input column and \eqn{k(x, z) = \exp(-\gamma \sum_i w_i^2 (x_i - z_i)^2)}{k(x, z) = exp(-gamma sum_i w_i^2 (x_i - z_i)^2)};
#'     all weights 1 is \code{gaussian_kernel(gamma)}.}
#'   \item{Depth 2}{\code{nodes} is a list of \eqn{m} integer vectors, the
#'     input columns each first-layer node sees (overlaps allowed, not every
#'     column needs a node); \code{weights} a list of \eqn{m} numeric vectors
#'     of the same lengths; \code{node_weights} the \eqn{m} weights
#'     \eqn{u_j}.}
#'   \item{Deeper trees}{An element of \code{nodes} may itself be a
#'     \code{hierarchical_gaussian_kernel} (a subtree; its \code{gamma} is the
#'     width on top of its own node weights); its entry of \code{weights} is
#'     then \code{NULL}. A subtree of depth 1 sees the first
#'     \code{length(weights)} columns. So a depth-3 kernel is a list of depth-2
#'     subtrees, and so on.}
#' }
#' Weights enter squared, so their signs do not matter. The kernel is
#' symmetric, positive definite and equal to 1 on the diagonal. Like every
#' kernel of the package it works with \code{\link{kernel_matrix}},
#' \code{\link{kernel_svm}} (fit and predict, computed on demand from the
#' support vectors), \code{\link{kernel_ridge}} and \code{\link{kl_tune}}
#' grids; inside a learner it acts on the inputs after their \eqn{[0, 1]}
#' scaling. \code{gamma} of \code{kernel_svm} (and \code{kl_tune} grids over
#' it) replaces its \code{gamma}.
#'
#' @param weights Depth 1: a numeric vector, one weight per input column.
#'   Deeper: a list with one numeric vector per first-layer node (\code{NULL}
#'   for subtree nodes).
#' @param nodes \code{NULL} (depth 1) or a list of integer vectors (1-based
#'   input columns) and subtrees.
#' @param node_weights Numeric vector, one weight per element of \code{nodes}.
#' @param gamma Positive width on top of the root's weights.
#' @return An object of class
#'   \code{c("kl_hierarchical_gaussian_kernel", "kl_kernel")}.
#' @references Steinwart, I., Thomann, P. and Schmid, N. (2016). Learning with
#'   hierarchical Gaussian kernels. arXiv:1612.00824.
#' @seealso \code{\link{kernels}}, \code{\link{tessellated_kernel}}
#' @examples
#' x <- matrix(runif(12), 4, 3)
#' # depth 1: one weight per column
#' k1 <- hierarchical_gaussian_kernel(c(1, 0.5, 2))
#' kernel_matrix(k1, x)
#' # all weights 1 is the Gaussian kernel
#' all.equal(kernel_matrix(hierarchical_gaussian_kernel(c(1, 1, 1), gamma = 2), x),
#'           kernel_matrix(gaussian_kernel(2), x))
#' # depth 2: two nodes over columns {1, 2} and {2, 3}
#' k2 <- hierarchical_gaussian_kernel(weights = list(c(1, 2), c(0.5, 1)),
#'                                    nodes = list(1:2, 2:3), node_weights = c(1, 0.7))
#' k2
#' # depth 3: a root over two depth-2 subtrees
#' k3 <- hierarchical_gaussian_kernel(weights = list(NULL, NULL), nodes = list(k2, k2),
#'                                    node_weights = c(1, 2))
#' kernel_matrix(k3, x)
#' # in a kernel machine
#' fit <- kernel_svm(Species ~ ., data = iris,
#'                   kernel = hierarchical_gaussian_kernel(c(1, 1, 2, 2)), gamma = 2)
#' mean(predict(fit, iris) == iris$Species)
#' @export
hierarchical_gaussian_kernel <- function(weights, nodes = NULL, node_weights = NULL, gamma = 1) {
  caller <- "hierarchical_gaussian_kernel()"
  .check_number(gamma, "gamma", lower = 0, lower_open = TRUE)
  finite_vec <- function(w, what) {
    if (!is.numeric(w) || length(w) == 0L || any(!is.finite(w)))
      stop(sprintf("%s: %s must be a non-empty numeric vector of finite values", caller, what),
           call. = FALSE)
    as.numeric(w)
  }
  if (is.null(nodes)) {
    if (!is.null(node_weights))
      stop(sprintf("%s: 'node_weights' needs 'nodes' (a depth-2 or deeper tree)", caller),
           call. = FALSE)
    if (is.list(weights))
      stop(sprintf("%s: without 'nodes', 'weights' is a numeric vector with one weight per input column",
                   caller), call. = FALSE)
    weights <- finite_vec(weights, "'weights'")
    return(.new_kernel("hierarchical_gaussian", weights = weights, nodes = NULL,
                       node_weights = NULL, gamma = as.numeric(gamma)))
  }
  if (!is.list(nodes) || inherits(nodes, "kl_kernel") || length(nodes) == 0L)
    stop(sprintf("%s: 'nodes' must be a non-empty list of integer vectors (input columns) or subtrees",
                 caller), call. = FALSE)
  m <- length(nodes)
  if (!is.list(weights) || length(weights) != m)
    stop(sprintf("%s: 'weights' must be a list with one numeric vector per node (%d)", caller, m),
         call. = FALSE)
  node_weights <- finite_vec(node_weights, "'node_weights'")
  if (length(node_weights) != m)
    stop(sprintf("%s: 'node_weights' has length %d but there are %d nodes", caller,
                 length(node_weights), m), call. = FALSE)
  for (j in seq_len(m)) {
    nd <- nodes[[j]]
    if (inherits(nd, "kl_hierarchical_gaussian_kernel")) {
      if (!is.null(weights[[j]]))
        stop(sprintf("%s: node %d is a subtree, so weights[[%d]] must be NULL (its weights are inside it)",
                     caller, j, j), call. = FALSE)
      next
    }
    if (!is.numeric(nd) || length(nd) == 0L || any(!is.finite(nd)) || any(nd != round(nd)) ||
        any(nd < 1))
      stop(sprintf("%s: nodes[[%d]] must be a vector of input column numbers (>= 1) or a hierarchical_gaussian_kernel",
                   caller, j), call. = FALSE)
    nodes[[j]] <- as.integer(nd)
    w <- finite_vec(weights[[j]], sprintf("weights[[%d]]", j))
    if (length(w) != length(nd))
      stop(sprintf("%s: node %d sees %d column(s) but weights[[%d]] has %d value(s)", caller, j,
                   length(nd), j, length(w)), call. = FALSE)
    weights[[j]] <- w
  }
  .new_kernel("hierarchical_gaussian", weights = weights, nodes = nodes,
              node_weights = node_weights, gamma = as.numeric(gamma))
}

#' @export
format.kl_hierarchical_gaussian_kernel <- function(x, ...) {
  e <- .hgk_extent(x)
  if (e[["depth"]] == 1)
    sprintf("Hierarchical Gaussian kernel: depth 1, %d weights (range %s to %s), gamma = %s",
            length(x$weights), format(min(abs(x$weights)), digits = 3),
            format(max(abs(x$weights)), digits = 3), format(x$gamma, digits = 6))
  else
    sprintf("Hierarchical Gaussian kernel: depth %d, %d first-layer node(s) over columns up to %d, gamma = %s",
            e[["depth"]], length(.hgk_flatten(x)$leaf) - sum(!.hgk_flatten(x)$leaf),
            e[["cols"]], format(x$gamma, digits = 6))
}

#' @exportS3Method .kernel_has_gamma kl_hierarchical_gaussian_kernel
.kernel_has_gamma.kl_hierarchical_gaussian_kernel <- function(kernel, ...) TRUE

# A hierarchical kernel is defined on the data's columns when its depth-1 weights are one per
# column and no node sees a column beyond them; it records their number.
#' @exportS3Method .resolve_kernel kl_hierarchical_gaussian_kernel
.resolve_kernel.kl_hierarchical_gaussian_kernel <- function(kernel, p, caller = "kernel", ...) {
  e <- .hgk_extent(kernel)
  if (is.null(kernel$nodes) && length(kernel$weights) != p)
    stop(sprintf("%s: the hierarchical Gaussian kernel has %d weights but the data have %d columns",
                 caller, length(kernel$weights), p), call. = FALSE)
  if (e[["cols"]] > p)
    stop(sprintf("%s: the hierarchical Gaussian kernel uses column %d but the data have %d columns",
                 caller, e[["cols"]], p), call. = FALSE)
  kernel$d <- as.integer(p)
  kernel
}

#' @exportS3Method .kernel_spec kl_hierarchical_gaussian_kernel
.kernel_spec.kl_hierarchical_gaussian_kernel <- function(kernel, ...) {
  c(list(name = kernel$name,
         d = if (is.null(kernel$d)) .hgk_extent(kernel)[["cols"]] else kernel$d),
    .hgk_flatten(kernel))
}

# The largest input column a hierarchical kernel uses, and its depth.
.hgk_extent <- function(k) {
  if (is.null(k$nodes)) return(c(cols = length(k$weights), depth = 1))
  cols <- 0; depth <- 0
  for (nd in k$nodes) {
    e <- if (inherits(nd, "kl_kernel")) .hgk_extent(nd) else c(cols = max(nd), depth = 1)
    cols <- max(cols, e[["cols"]]); depth <- max(depth, e[["depth"]])
  }
  c(cols = cols, depth = depth + 1)
}

# The tree as the core reads it: nodes in post-order (children first, the root last), with
# 0-based members.
.hgk_flatten <- function(k) {
  leaf <- logical(); members <- list(); weights <- list(); scale <- numeric()
  add <- function(leaf_, members_, weights_, scale_) {
    leaf[[length(leaf) + 1L]] <<- leaf_
    members[[length(members) + 1L]] <<- as.integer(members_)
    weights[[length(weights) + 1L]] <<- as.numeric(weights_)
    scale[[length(scale) + 1L]] <<- scale_
    length(leaf) - 1L
  }
  walk <- function(k) {
    if (is.null(k$nodes)) return(add(TRUE, seq_along(k$weights) - 1L, k$weights, k$gamma))
    child <- integer(length(k$nodes))
    for (j in seq_along(k$nodes)) {
      nd <- k$nodes[[j]]
      child[j] <- if (inherits(nd, "kl_kernel")) walk(nd) else add(TRUE, nd - 1L, k$weights[[j]], 1)
    }
    add(FALSE, child, k$node_weights, k$gamma)
  }
  walk(k)
  list(leaf = leaf, members = members, weights = weights, scale = scale)
}

# All weights of a hierarchical kernel as one vector, in the order of the core's parameter
# derivatives (node by node in post-order, each node's weights in order), and back.
.hgk_params <- function(k) unlist(.hgk_flatten(k)$weights, use.names = FALSE)

.hgk_set_params <- function(k, theta) {
  pos <- 0L
  take <- function(n) {
    v <- theta[pos + seq_len(n)]
    pos <<- pos + n
    v
  }
  walk <- function(k) {
    if (is.null(k$nodes)) {
      k$weights <- take(length(k$weights))
      return(k)
    }
    for (j in seq_along(k$nodes)) {
      if (inherits(k$nodes[[j]], "kl_kernel")) k$nodes[[j]] <- walk(k$nodes[[j]])
      else k$weights[[j]] <- take(length(k$weights[[j]]))
    }
    k$node_weights <- take(length(k$node_weights))
    k
  }
  out <- walk(k)
  if (pos != length(theta)) stop("internal error: wrong number of kernel parameters", call. = FALSE)
  out
}

#' Tessellated kernels
#'
#' The kernel that \code{tkl()} learns (Colbert and Peet, 2020): on the box
#' \eqn{[a, b] = }\code{[lower, upper]} (every coordinate of every point is
#' clamped into it),
#' \deqn{k(x, y) = \int_{[a, b]} N(z, x)' P\, N(z, y)\, dz, \qquad
#'       N(z, x) = \begin{pmatrix} Z(x)\, 1\{z \ge x\} \\ Z(x)\, 1\{z < x\} \end{pmatrix},}{k(x, y) = integral over z in [a, b] of N(z, x)' P N(z, y) dz,  N(z, x) = (Z(x) 1{z >= x}; Z(x) 1{z < x}),}
#' where \eqn{Z(x)} holds the \eqn{h} monomials of \eqn{x} of degree at most
#' \code{degree}, in the order \eqn{1, x_1, \dots, x_d}{1, x_1, ..., x_d}, then
#' \eqn{x_i x_l}{x_i x_l} for \eqn{i \le l}{i <= l} in lexicographic order, and
#' so on; \eqn{h = \binom{d + q}{q}}{h = choose(d + q, q)}. \code{P} is a
#' symmetric positive semidefinite \eqn{2h \times 2h}{2h x 2h} matrix, so the
#' kernel is positive semidefinite, and linear in \code{P}. It is computed in
#' closed form: with \eqn{A(x, y) = \prod_i (b_i - \max(x_i, y_i))}{A(x, y) = prod_i (b_i - max(x_i, y_i))},
#' \eqn{B(x) = \prod_i (b_i - x_i)}{B(x) = prod_i (b_i - x_i)} and
#' \eqn{V = \prod_i (b_i - a_i)}{V = prod_i (b_i - a_i)}, the blocks of
#' \eqn{P} are weighted by \eqn{A}, \eqn{B(x) - A}, \eqn{B(y) - A} and
#' \eqn{V - B(x) - B(y) + A}.
#'
#' Inside a learner the kernel acts on the inputs after their \eqn{[0, 1]}
#' scaling, so the default box \eqn{[-0.1, 1.1]} is the paper's
#' \eqn{\delta = 0.1}{delta = 0.1}; \code{kernel_matrix()} applies it to the
#' data it is given.
#'
#' @param P Symmetric positive semidefinite numeric matrix of size
#'   \eqn{2h \times 2h}{2h x 2h} (for example \code{diag(2 * h)}, the
#'   algorithm's start).
#' @param degree Largest degree \eqn{q \ge 0} of the monomials.
#' @param lower,upper The box: numeric, recycled to the number of columns, with
#'   \code{lower < upper}.
#' @return An object of class \code{c("kl_tessellated_kernel", "kl_kernel")}.
#' @references Colbert, B. K. and Peet, M. M. (2020). A convex parametrization
#'   of a new class of universal kernel functions. JMLR 21(45).
#' @seealso \code{\link{kernels}}, \code{\link{hierarchical_gaussian_kernel}}
#' @examples
#' x <- matrix(runif(20), 10, 2)
#' # degree 1 in 2 columns: h = 3 monomials (1, x1, x2), P is 6 x 6
#' k <- tessellated_kernel(diag(6), degree = 1)
#' k
#' K <- kernel_matrix(k, x)
#' min(eigen(K, symmetric = TRUE, only.values = TRUE)$values) > -1e-10
#' # a kernel machine with it
#' fit <- kernel_svm(Species ~ ., data = iris, kernel = tessellated_kernel(diag(10)),
#'                   cost = 10)
#' mean(predict(fit, iris) == iris$Species)
#' @export
tessellated_kernel <- function(P, degree = 1, lower = -0.1, upper = 1.1) {
  caller <- "tessellated_kernel()"
  if (missing(P))
    stop(sprintf("%s: 'P' is required (a 2h x 2h positive semidefinite matrix; learned_kernel() gives that of a tkl() fit)",
                 caller), call. = FALSE)
  .check_number(degree, "degree", lower = 0, upper = 50, integer = TRUE)
  degree <- as.integer(degree)
  if (is.data.frame(P)) P <- as.matrix(P)
  if (!is.matrix(P) || !is.numeric(P))
    stop(sprintf("%s: 'P' must be a numeric matrix", caller), call. = FALSE)
  if (any(!is.finite(P)))
    stop(sprintf("%s: 'P' has missing or infinite values", caller), call. = FALSE)
  if (nrow(P) != ncol(P) || nrow(P) %% 2L != 0L || nrow(P) == 0L)
    stop(sprintf("%s: 'P' must be square with an even number of rows (2h x 2h); got %d x %d",
                 caller, nrow(P), ncol(P)), call. = FALSE)
  big <- max(1, abs(P))
  asym <- max(abs(P - t(P)))
  if (asym > 1e-10 * big)
    stop(sprintf("%s: 'P' must be symmetric (largest |P - t(P)| is %s)", caller,
                 format(asym, digits = 3)), call. = FALSE)
  P <- (P + t(P)) / 2
  ev <- min(eigen(P, symmetric = TRUE, only.values = TRUE)$values)
  if (ev < -1e-10 * big)
    stop(sprintf("%s: 'P' must be positive semidefinite (smallest eigenvalue %s)", caller,
                 format(ev, digits = 3)), call. = FALSE)
  h <- nrow(P) %/% 2L
  d <- NA_integer_
  if (degree > 0L) {
    dd <- 1L
    while (choose(dd + degree, degree) < h) dd <- dd + 1L
    if (choose(dd + degree, degree) != h)
      stop(sprintf("%s: 'P' is %d x %d, so h = %d, but no number of columns has %d monomials of degree <= %d (choose(d + %d, %d) is %s for d = %d, %d)",
                   caller, 2L * h, 2L * h, h, h, degree, degree, degree,
                   paste(choose(c(dd - 1L, dd) + degree, degree), collapse = ", "), dd - 1L, dd),
           call. = FALSE)
    d <- dd
  } else if (h != 1L) {
    stop(sprintf("%s: with degree 0 there is one monomial, so 'P' must be 2 x 2 (got %d x %d)",
                 caller, 2L * h, 2L * h), call. = FALSE)
  }
  for (nm in c("lower", "upper")) {
    v <- get(nm)
    if (!is.numeric(v) || length(v) == 0L || any(!is.finite(v)))
      stop(sprintf("%s: '%s' must be finite numbers", caller, nm), call. = FALSE)
    if (!is.na(d) && !(length(v) %in% c(1L, d)))
      stop(sprintf("%s: '%s' has length %d; it needs 1 or %d (the number of columns)", caller,
                   nm, length(v), d), call. = FALSE)
  }
  if (length(lower) > 1L && length(upper) > 1L && length(lower) != length(upper))
    stop(sprintf("%s: 'lower' and 'upper' have different lengths", caller), call. = FALSE)
  len <- max(length(lower), length(upper))
  if (any(rep_len(lower, len) >= rep_len(upper, len)))
    stop(sprintf("%s: 'lower' must be below 'upper' in every column", caller), call. = FALSE)
  .new_kernel("tessellated", P = P, degree = degree, lower = as.numeric(lower),
              upper = as.numeric(upper), d = d)
}

#' @export
format.kl_tessellated_kernel <- function(x, ...) {
  sprintf("Tessellated kernel: degree %d, P %d x %d, box [%s, %s]%s", x$degree,
          nrow(x$P), ncol(x$P), paste(format(unique(x$lower)), collapse = ", "),
          paste(format(unique(x$upper)), collapse = ", "),
          if (is.na(x$d)) "" else sprintf(" in %d columns", x$d))
}

# A tessellated kernel is defined on the columns its P was made for (when P says), and its box
# bounds are recycled to them.
#' @exportS3Method .resolve_kernel kl_tessellated_kernel
.resolve_kernel.kl_tessellated_kernel <- function(kernel, p, caller = "kernel", ...) {
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
  kernel
}

#' @exportS3Method .kernel_spec kl_tessellated_kernel
.kernel_spec.kl_tessellated_kernel <- function(kernel, ...) {
  list(name = kernel$name, P = kernel$P, degree = kernel$degree,
       lower = as.numeric(kernel$lower), upper = as.numeric(kernel$upper))
}
