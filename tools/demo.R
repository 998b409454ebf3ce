# kernlearn demo: fits the package's learners (kernel_svm, kernel_ridge, gem, dikl) from a formula on the Letter data (mlbench),
# compares test error and fit time with e1071's SVM on the same split, and saves a plot.
suppressPackageStartupMessages({
  library(kernlearn)
  library(e1071)
})
data("LetterRecognition", package = "mlbench")
d <- LetterRecognition
# The same [0, 1] scaling for every method: the training rows' range, which is what kernlearn
# applies itself (so it sees these columns unchanged); e1071 gets the same scaled data.
x <- as.matrix(d[, -1])
mn <- apply(x[1:4000, ], 2, min); rg <- apply(x[1:4000, ], 2, max) - mn
d[, -1] <- sweep(sweep(x, 2, mn), 2, rg, "/")
train <- d[1:4000, ]
test <- d[16001:20000, ]
cat(sprintf("Letter: %d training rows, %d test rows, %d classes, %d features in [0, 1]\n",
            nrow(train), nrow(test), nlevels(d$lettr), ncol(d) - 1L))
cat("backend:", kl_backend(), "\n\n")

results <- data.frame(method = character(), test_error = numeric(), fit_seconds = numeric())
add <- function(method, fit_time, pred) {
  err <- mean(pred != test$lettr)
  cat(sprintf("%-44s test error %5.2f%%   fit %5.2f s\n", method, 100 * err, fit_time))
  results[nrow(results) + 1L, ] <<- list(method, err, fit_time)
}

t <- system.time(svf <- kernel_svm(lettr ~ ., data = train, gamma = 16, cost = 16))
add("kernlearn::kernel_svm (C-SVM, gamma 16, cost 16)", t[["elapsed"]], predict(svf, test))

t <- system.time(fit <- kernel_ridge(lettr ~ ., data = train,
                                     kernel = gaussian_kernel(gamma = 16), lambda = 0.01))
add("kernlearn::kernel_ridge (LS-SVM, gamma 16)", t[["elapsed"]], predict(fit, test))

set.seed(1)
t <- system.time(gf <- gem(lettr ~ ., data = train, top = 16, threshold = 1.5,
                           pairs = "hypercube"))
add("kernlearn::gem (hypercube pairs, top 16)", t[["elapsed"]], predict(gf, test))

set.seed(1)
t <- system.time(df <- dikl(lettr ~ ., data = train, dim = 300, gamma = 16, max_epochs = 40))
add("kernlearn::dikl (DI-trained Nystrom, 300 features)", t[["elapsed"]], predict(df, test))

t <- system.time(sv <- svm(lettr ~ ., data = train, kernel = "radial", gamma = 16,
                           cost = 16, scale = FALSE))
add("e1071::svm (C-SVM, gamma 16, cost 16)", t[["elapsed"]], predict(sv, test))

dir.create("demo-output", showWarnings = FALSE)
png_file <- file.path("demo-output", "kernlearn-demo.png")
grDevices::png(png_file, width = 900, height = 420)
op <- graphics::par(mfrow = c(1, 2), mar = c(4, 12, 3, 1))
cols <- c("#1b9e77", "#66a61e", "#d95f02", "#e7298a", "#7570b3")
labels <- c("kernel_svm", "kernel_ridge", "gem", "dikl", "e1071::svm")
graphics::barplot(100 * results$test_error, names.arg = labels,
                  horiz = TRUE, las = 1, col = cols, xlab = "test error (%)",
                  main = "Letter, 4000 training rows")
graphics::barplot(results$fit_seconds, names.arg = labels,
                  horiz = TRUE, las = 1, col = cols, xlab = "fit time (s)",
                  main = "Fit time (2 threads)")
graphics::par(op)
invisible(grDevices::dev.off())
cat(sprintf("\nkernel_svm fit time / e1071 fit time: %.2f (same kernel, cost, tolerance)\n",
            results$fit_seconds[1] / results$fit_seconds[5]))
cat("plot saved to", normalizePath(png_file), "\n")
