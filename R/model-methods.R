#' Fitted values, residuals and size of a kernlearn model
#'
#' \code{nobs()} is the number of training rows of any kernlearn model.
#' \code{fitted()} and \code{residuals()} need the training inputs, which
#' \code{\link{kernel_ridge}} and \code{\link{hgk}} models keep (their
#' predictions are expansions over all training rows): \code{fitted()} is
#' \code{predict(object)} on the training rows (classes for classification,
#' fitted values for regression), \code{residuals()} the response minus the
#' fitted values (regression only). The other learners keep only what
#' \code{predict()} needs (support vectors, a feature map and a head), so
#' for them \code{fitted()} is an error that says so; use
#' \code{predict(fit, <training data>)}.
#'
#' @param object A kernlearn model.
#' @param ... Not used.
#' @return \code{nobs()}: an integer. \code{fitted()}: a factor or numeric
#'   vector, one value per training row. \code{residuals()}: a numeric vector.
#' @examples
#' fit <- kernel_ridge(mpg ~ wt + hp, data = mtcars, lambda = 0.1)
#' nobs(fit)
#' head(fitted(fit))
#' head(residuals(fit))
#' nobs(kernel_svm(Species ~ ., data = iris))
#' @name kl_model_methods
#' @importFrom stats fitted residuals nobs predict
NULL

#' @rdname kl_model_methods
#' @export
nobs.kl_model <- function(object, ...) as.integer(object$n)

#' @rdname kl_model_methods
#' @export
fitted.kl_model <- function(object, ...) {
  .no_dots(..., caller = "fitted()")
  if (is.null(object$x))
    stop(sprintf("fitted(): %s models keep no training inputs (only what predict() needs); use predict(fit, <the training data>)",
                 class(object)[1L]), call. = FALSE)
  out <- predict(object, type = if (object$task == "regression") "response" else "class")
  names(out) <- NULL
  out
}

#' @rdname kl_model_methods
#' @export
residuals.kl_model <- function(object, ...) {
  .no_dots(..., caller = "residuals()")
  if (!identical(object$task, "regression"))
    stop("residuals(): residuals are defined for regression models; this one classifies (compare fitted() with the classes)",
         call. = FALSE)
  f <- fitted(object)
  if (is.null(object$y))
    stop(sprintf("residuals(): the %s model keeps no response", class(object)[1L]), call. = FALSE)
  as.numeric(object$y) - f
}
