#' The computing backend in use
#'
#' kernlearn computes kernel matrices and other dense algebra on the CPU (Eigen
#' and OpenMP), or on an NVIDIA GPU through its optional CUDA library (Gaussian
#' kernel matrices and the matrix products of \code{\link{dikl}} training). The GPU
#' library is built when the package is installed with a CUDA toolkit
#' (\code{KERNLEARN_CUDA=auto}, the default, or \code{yes}); it is loaded on
#' first use. When no driver or device is found the CPU is used: silently in
#' the default mode (\code{kl_backend()} says why), with a warning (once per
#' session) when the GPU was asked for explicitly.
#'
#' Select with \code{options(kernlearn.backend = )}: \code{"auto"} (the GPU when
#' usable, else the CPU), \code{"cpu"}, or \code{"cuda"} (the GPU, falling back
#' to the CPU with a warning when it is not usable).
#'
#' Which operations run on the GPU is chosen per operation with
#' \code{options(kernlearn.gpu_ops = )}, a character vector of
#' \code{"kernel_matrix"} (Gaussian kernel matrices), \code{"gemm"} (the
#' matrix products of \code{\link{dikl}} training), \code{"cholesky"} (with
#' cuSOLVER: the factorisation and solve of \code{\link{kernel_ridge}}, and
#' the factorisations of the calibrated least-squares head of \code{\link{gem}}
#' and of the least-squares SVM in \code{\link{hgk}}'s learning (in double
#' precision), kept on the GPU for their solves; systems of 2048 rows or more) and
#' \code{"gram"} (with cuBLAS: the Gram matrix of that head's single-precision
#' features, for 512 features or more), \code{"kernel_rows"} (the kernel
#' rows of the SVM solver of \code{\link{kernel_svm}}, for the four standard
#' kernels and the hierarchical Gaussian kernels of \code{\link{hgk}} (trees of
#' at most 64 nodes; its hinge-loss SVMs), the training points held on the GPU
#' for the whole solve and each row the solver's cache misses computed there;
#' problems of 2048 rows or more; also the kernel matrices, hence the
#' predictions, of the Laplacian, linear, polynomial and hierarchical Gaussian
#' kernels, among them the fit block of \code{\link{hgk}}'s objective in double
#' precision), \code{"hgk_pass"} (the passes over pairs of points when
#' \code{\link{hgk}} learns kernel weights: the sums \eqn{K \alpha} of its
#' least-squares SVM and the derivatives of its validation risk in the weights,
#' every pair in double precision; trees of at most 64 nodes, 256 weights and
#' 64 outputs, a million pairs or more) and \code{"tkl_block"} (kernel matrices
#' of the tessellated kernel of \code{\link{tkl}}, a million entries or more:
#' the start kernel of a fit in double precision, and the kernel expansions of
#' predictions). The default,
#' \code{c("kernel_matrix", "gemm")}, holds the operations whose GPU results and
#' timings have been checked against the CPU; the others are to be switched on
#' explicitly until then. Problems too small
#' to gain from the transfers stay on the CPU, and so does an operation that does
#' not fit in the GPU's memory.
#'
#' On the CPU, the dense algebra (products, kernel matrices, exponentials,
#' Cholesky) runs through kernels vectorised for AVX2 or AVX-512 when the
#' processor has them (chosen at run time; attribute \code{simd}), and through
#' portable code otherwise. The environment variable \code{KERNLEARN_SIMD}
#' (\code{"none"}, \code{"avx2"} or \code{"avx512"}), set before the package is
#' loaded, caps that choice, for example to compare results with the portable
#' path. Results agree up to rounding.
#'
#' @param verbose If \code{TRUE}, also print why the GPU is not in use.
#' @return A string: \code{"cpu"} or \code{"cuda: <device name>"}, with
#'   attributes \code{gpu_library} (path of the GPU library, or \code{""} when
#'   the package was built without CUDA), \code{reason} (why the GPU is not
#'   in use, or \code{""}), \code{gpu_ops} (the operations that run on the
#'   GPU: empty when the CPU is in use) and \code{simd} (the CPU's vector
#'   kernels in use: \code{"avx512"}, \code{"avx2"} or \code{"none"}).
#' @examples
#' kl_backend()
#' op <- options(kernlearn.backend = "cpu")
#' kl_backend()
#' options(op)
#' @export
kl_backend <- function(verbose = FALSE) {
  arg <- .kl_backend_arg(message = FALSE)
  probe <- if (nzchar(arg$lib)) .gpu_probe() else NULL
  name <- if (arg$gpu) probe$name else "cpu"
  reason <- if (arg$gpu) "" else if (.backend_mode() == "cpu") "options(kernlearn.backend = \"cpu\")"
            else if (!nzchar(arg$lib)) "kernlearn was built without CUDA"
            else probe$why
  if (isTRUE(verbose) && nzchar(reason)) message("kernlearn uses the CPU: ", reason)
  structure(name, gpu_library = arg$lib, reason = reason,
            gpu_ops = if (arg$gpu) .gpu_op_names[bitwAnd(arg$ops, .gpu_op_bits) > 0L]
                      else character(0),
            simd = .kl_core("kl_backend()", cpp_simd_level))
}

# The operations the GPU can take over, with their flags in the C++ core (GpuOp in
# src/core/backend/backend.hpp), and those run there by default.
.gpu_op_names <- c("kernel_matrix", "gemm", "cholesky", "gram", "kernel_rows", "hgk_pass",
                   "tkl_block")
.gpu_op_bits <- c(1L, 2L, 4L, 8L, 16L, 32L, 64L)
.gpu_ops_default <- c("kernel_matrix", "gemm")

# The flags of options(kernlearn.gpu_ops), checked.
.gpu_ops_mask <- function() {
  ops <- getOption("kernlearn.gpu_ops", .gpu_ops_default)
  if (is.null(ops)) ops <- character(0)
  if (!is.character(ops) || anyNA(ops) || !all(ops %in% .gpu_op_names))
    stop("options(kernlearn.gpu_ops) must be a character vector of ",
         paste0("\"", .gpu_op_names, "\"", collapse = ", "), " (got ", .show_value(ops), ")",
         call. = FALSE)
  sum(.gpu_op_bits[.gpu_op_names %in% ops])
}

.backend_mode <- function() {
  mode <- getOption("kernlearn.backend", "auto")
  if (!is.character(mode) || length(mode) != 1L || !(mode %in% c("auto", "cpu", "cuda")))
    stop("options(kernlearn.backend) must be \"auto\", \"cpu\" or \"cuda\" (got ",
         .show_value(mode), ")", call. = FALSE)
  mode
}

# Path of the GPU library installed beside the package library, or "" when it was not built.
.gpu_lib_path <- function() {
  lib <- paste0("kernlearn_cuda", .Platform$dynlib.ext)
  arch <- .Platform$r_arch
  f <- if (nzchar(arch)) system.file("libs", arch, "cuda", lib, package = "kernlearn") else ""
  if (!nzchar(f)) f <- system.file("libs", "cuda", lib, package = "kernlearn")
  f
}

# Loads the GPU library once per session and remembers the answer.
.gpu_probe <- function() {
  if (is.null(.kl_state$gpu))
    .kl_state$gpu <- .kl_core("kl_backend()", cpp_gpu_probe, .gpu_lib_path())
  .kl_state$gpu
}

# The backend argument of the C++ glue: list(gpu = TRUE/FALSE, lib = path, ops = GpuOp flags).
.kl_backend_arg <- function(message = TRUE) {
  mode <- .backend_mode()
  lib <- .gpu_lib_path()
  ops <- .gpu_ops_mask()
  if (mode == "cpu") return(list(gpu = FALSE, lib = lib, ops = ops))
  # "auto" falls back to the CPU silently (kl_backend() says why); an explicit "cuda" that
  # cannot be honoured warns, once per session.
  if (!nzchar(lib)) {
    if (mode == "cuda" && message && !isTRUE(.kl_state$told_nolib)) {
      .kl_state$told_nolib <- TRUE
      warning("options(kernlearn.backend = \"cuda\"): using the CPU: the package was built ",
              "without CUDA (reinstall with KERNLEARN_CUDA=yes and a CUDA toolkit)",
              call. = FALSE)
    }
    return(list(gpu = FALSE, lib = lib, ops = ops))
  }
  probe <- .gpu_probe()
  if (!isTRUE(probe$available) && mode == "cuda" && message && !isTRUE(.kl_state$told_nogpu)) {
    .kl_state$told_nogpu <- TRUE
    warning("options(kernlearn.backend = \"cuda\"): using the CPU: ", probe$why, call. = FALSE)
  }
  list(gpu = isTRUE(probe$available), lib = lib, ops = ops)
}
