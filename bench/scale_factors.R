# kernel_svm() with its defaults (inputs scaled to [0, 1]) and with scale = "standardize"
# against e1071::svm() with its defaults, on mlbench sets with factor predictors (and Glass
# and Ionosphere, numeric, for reference). With "standardize" the factors' indicator columns
# stay 0 / 1, as in e1071, and only numeric columns are standardised.
#
# Usage: Rscript bench/scale_factors.R
# Splits: 5 random 70 / 30 splits (seeds 1..5) of each set, rows with missing values dropped.
# Methods, each with its defaults (Gaussian kernel, cost 1, epsilon 0.1, default width):
#   kl            kernel_svm(), inputs scaled to [0, 1], gamma = 1 / (sum of their variances)
#   kl_std        kernel_svm(scale = "standardize"), same width rule
#   e1071         e1071::svm(), numeric inputs standardised, gamma = 1 / ncol
# Metric: test misclassification rate, or test mean squared error (Servo, BostonHousing).
# Results: bench/results/scale_factors.csv (replaced): per set, the means over the splits in
# which all three methods ran (a test level missing from the training rows stops kernel_svm()).
suppressPackageStartupMessages({
  library(kernlearn)
  library(mlbench)
  library(e1071)
})
options(kernlearn.threads = 2L)
env <- new.env()
get_set <- function(nm) {
  utils::data(list = nm, package = "mlbench", envir = env)
  get(nm, envir = env)
}
bc <- stats::na.omit(get_set("BreastCancer")[, -1])
for (j in 1:9) bc[[j]] <- factor(bc[[j]], ordered = FALSE)
sets <- list(
  Vowel = list(d = get_set("Vowel"), f = Class ~ .),
  BreastCancer = list(d = bc, f = Class ~ .),
  HouseVotes84 = list(d = stats::na.omit(get_set("HouseVotes84")), f = Class ~ .),
  Servo = list(d = get_set("Servo"), f = Class ~ .),
  BostonHousing = list(d = get_set("BostonHousing"), f = medv ~ .),
  Ionosphere = list(d = get_set("Ionosphere")[, -2], f = Class ~ .),
  Soybean = list(d = droplevels(stats::na.omit(get_set("Soybean"))), f = Class ~ .),
  Glass = list(d = get_set("Glass"), f = Type ~ .))
res <- NULL
for (nm in names(sets)) {
  d <- sets[[nm]]$d
  f <- sets[[nm]]$f
  yn <- all.vars(f)[1L]
  for (s in 1:5) {
    set.seed(s)
    i <- sample(nrow(d), round(0.7 * nrow(d)))
    tr <- d[i, ]
    te <- d[-i, ]
    err <- function(p) if (is.factor(te[[yn]])) mean(as.character(p) != as.character(te[[yn]]))
                       else mean((p - te[[yn]])^2)
    # a split whose training rows miss a level of a factor that the test rows have is an error
    # for kernel_svm(); it is recorded as missing
    k <- tryCatch(err(predict(kernel_svm(f, data = tr), te)), error = function(e) NA)
    ks <- tryCatch(err(predict(kernel_svm(f, data = tr, scale = "standardize"), te)),
                   error = function(e) NA)
    e <- tryCatch(err(predict(suppressWarnings(svm(f, data = tr)), te)), error = function(e) NA)
    res <- rbind(res, data.frame(set = nm, split = s, kl = k, kl_std = ks, e1071 = e))
  }
}
# the means over the splits where all three ran
agg <- do.call(rbind, lapply(split(res, res$set), function(r) {
  r <- r[stats::complete.cases(r), ]
  data.frame(set = r$set[1], splits = nrow(r),
             metric = if (r$set[1] %in% c("Servo", "BostonHousing")) "mse" else "misclassification",
             kl = mean(r$kl, na.rm = TRUE), kl_std = mean(r$kl_std, na.rm = TRUE),
             e1071 = mean(r$e1071, na.rm = TRUE))
}))
agg$date <- format(Sys.time(), "%Y-%m-%d %H:%M")
print(agg, digits = 4, row.names = FALSE)
out <- file.path("bench", "results", "scale_factors.csv")
if (dir.exists(dirname(out))) utils::write.csv(agg, out, row.names = FALSE)
