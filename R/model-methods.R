#' Fitted values, residuals and size of a kernlearn model
#'
#' \code{nobs()} is the number of training rows of any kernlearn model.
#'
#' \code{fitted()} gives the predictions on the training rows: classes for
#' classification, fitted values for regression. \code{\link{kernel_svm}},
#' \code{\link{tkl}}, \code{\link{gem}} and \code{\link{dikl}} compute them at
#' the end of the fit and store them, as \code{e1071::svm} and
#' \code{kernlab::ksvm} do (argument \code{fitted = TRUE}, the default; it
#' costs one prediction pass over the training rows, which
#' \code{fitted = FALSE} saves, as the cross-validation and tuning fits do).
#' \code{\link{kernel_ridge}} and \code{\link{hgk}} keep their training inputs
#' (their predictions are expansions over all training rows) and recompute
#' them. \code{residuals()} is the response minus the fitted values
#' (regression only).
#'
#' \code{predict(fit)} without \code{newdata} returns the same values as
#' \code{fitted(fit)}; other prediction types on the training rows need the
#' training data as \code{newdata}.
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
#' sv <- kernel_svm(Species ~ ., data = iris)
#' table(fitted(sv), iris$Species)
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
  if (!is.null(object$fitted.values)) return(object$fitted.values)
  if (is.null(object$x))
    stop(sprintf("fitted(): the %s model was fitted with fitted = FALSE, so it keeps no predictions on its training rows; refit with fitted = TRUE or use predict(fit, <the training data>)",
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
  if (!is.null(object$residuals)) return(object$residuals)
  f <- fitted(object)
  if (is.null(object$y))
    stop(sprintf("residuals(): the %s model keeps no response", class(object)[1L]), call. = FALSE)
  as.numeric(object$y) - f
}

# At the end of a fit with fitted = TRUE: the predictions on the training rows (the learner's
# default prediction type) and, for regression, the residuals. `newdata` is the training data
# in the form the user gave it, so the values are what predict(fit, newdata) returns.
.kl_keep_fitted <- function(model, fitted, newdata, y, threads) {
  if (!fitted) return(model)
  f <- predict(model, newdata = newdata, threads = threads)
  names(f) <- NULL
  model$fitted.values <- f
  if (identical(model$task, "regression")) model$residuals <- as.numeric(y) - f
  model
}

# predict() without newdata, for the learners that keep their fitted values: those values, for
# the default type only.
.kl_predict_fitted <- function(object, type, caller) {
  if (is.null(object$fitted.values))
    stop(sprintf("%s: 'newdata' is required (the model was fitted with fitted = FALSE and keeps no training data)",
                 caller), call. = FALSE)
  default <- if (object$task == "regression") "response" else "class"
  if (!is.null(type) && !identical(type, default))
    stop(sprintf("%s: without 'newdata' only the fitted %s are kept (type = \"%s\"); for type = \"%s\" on the training rows, pass the training data as 'newdata'",
                 caller, if (default == "class") "classes" else "values", default,
                 paste(type, collapse = " ")), call. = FALSE)
  object$fitted.values
}

# Is `learner` one of the package's learners with a `fitted` argument? Their fits inside
# cross-validation, tuning and caret pass fitted = FALSE: only the final model needs the values.
.kl_takes_fitted <- function(learner) {
  if (!is.function(learner)) return(FALSE)
  ns <- asNamespace("kernlearn")
  for (nm in c("kernel_svm", "tkl", "gem", "dikl"))
    if (identical(learner, get(nm, envir = ns))) return(TRUE)
  FALSE
}
