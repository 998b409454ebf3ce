# kernlearn demo: the package's six learners on the Letter data (mlbench), next to e1071's SVM.
#  1. kernel_svm, kernel_ridge, gem and dikl on 4000 training rows;
#  2. the two learners that learn the kernel itself, hgk and tkl (whose cost grows faster with
#     the rows), on the first 1500 of those rows, with kernel_svm and e1071's SVM on the same
#     rows as the fixed-kernel reference; what they learned: hgk's weight on each input and
#     tkl's convergence (dual objective, lower bound, duality gap).
# Every model is tested on the same 4000 held-out rows. Prints a table of test errors and fit
# times and saves a plot to demo-output/kernlearn-demo.png. Runs in well under a minute on two
# cores.
suppressPackageStartupMessages({
  library(kernlearn)
  library(e1071)
})
t_start <- proc.time()[["elapsed"]]
data("LetterRecognition", package = "mlbench")
d <- LetterRecognition
# The same [0, 1] scaling for every method: the training rows' range, which is what kernlearn
# applies itself (so it sees these columns unchanged); e1071 gets the same scaled data.
x <- as.matrix(d[, -1])
mn <- apply(x[1:4000, ], 2, min); rg <- apply(x[1:4000, ], 2, max) - mn
d[, -1] <- sweep(sweep(x, 2, mn), 2, rg, "/")
train <- d[1:4000, ]
small <- d[1:1500, ]
test <- d[16001:20000, ]
cat(sprintf("Letter: %d training rows (%d for hgk and tkl), %d test rows, %d classes, %d features in [0, 1]\n",
            nrow(train), nrow(small), nrow(test), nlevels(d$lettr), ncol(d) - 1L))
cat("backend:", kl_backend(), "| threads:", getOption("kernlearn.threads", 2), "\n")

results <- data.frame(method = character(), rows = integer(), test_error = numeric(),
                      fit_seconds = numeric())
add <- function(method, rows, fit_time, pred) {
  err <- mean(pred != test$lettr)
  cat(sprintf("%-50s %5d   %5.2f%%   %6.2f s\n", method, rows, 100 * err, fit_time))
  results[nrow(results) + 1L, ] <<- list(method, rows, err, fit_time)
}
header <- function(title) {
  cat("\n", title, "\n", sprintf("%-50s %5s   %6s   %8s", "method", "rows", "error", "fit"),
      "\n", sep = "")
}

# ---- 1. fixed kernels and learned feature maps, 4000 rows ----------------------------------
header("1. Kernel machines and learned feature maps")
t <- system.time(svf <- kernel_svm(lettr ~ ., data = train, gamma = 16, cost = 16))
add("kernel_svm (C-SVM, Gaussian gamma 16, cost 16)", nrow(train), t[["elapsed"]],
    predict(svf, test))

t <- system.time(krf <- kernel_ridge(lettr ~ ., data = train,
                                     kernel = gaussian_kernel(gamma = 16), lambda = 0.01))
add("kernel_ridge (least-squares SVM, gamma 16)", nrow(train), t[["elapsed"]],
    predict(krf, test))

# gem's moment ridge and dikl's head cost are given (the values validation picks here), not
# chosen on held-out rows, to keep the demo short.
set.seed(1)
t <- system.time(gf <- gem(lettr ~ ., data = train, top = 16, threshold = 1.5,
                           pairs = "hypercube", ridge = 0.1))
add("gem (generalized eigenvectors, top 16)", nrow(train), t[["elapsed"]], predict(gf, test))

set.seed(1)
t <- system.time(df <- dikl(lettr ~ ., data = train, dim = 300, gamma = 16, max_epochs = 40,
                            cost = 64))
add("dikl (DI-trained Nystrom, 300 features)", nrow(train), t[["elapsed"]], predict(df, test))

t <- system.time(sv <- svm(lettr ~ ., data = train, kernel = "radial", gamma = 16,
                           cost = 16, scale = FALSE))
add("e1071::svm (C-SVM, gamma 16, cost 16)", nrow(train), t[["elapsed"]], predict(sv, test))
speed <- results$fit_seconds[1] / results$fit_seconds[5]

# ---- 2. learned kernels, 1500 rows ---------------------------------------------------------
header("2. Learned kernels, with the fixed Gaussian kernel as reference")
t <- system.time(svs <- kernel_svm(lettr ~ ., data = small, gamma = 16, cost = 16))
add("kernel_svm (fixed Gaussian kernel, gamma 16)", nrow(small), t[["elapsed"]],
    predict(svs, test))

t <- system.time(svs1 <- svm(lettr ~ ., data = small, kernel = "radial", gamma = 16,
                             cost = 16, scale = FALSE))
add("e1071::svm (fixed Gaussian kernel, gamma 16)", nrow(small), t[["elapsed"]],
    predict(svs1, test))

# One weight per input (depth 1), learned on a least-squares SVM's validation error; width
# and penalty by 3-fold cross-validation.
set.seed(1)
t <- system.time(hf <- hgk(lettr ~ ., data = small, depth = 1, folds = 3))
add("hgk (hierarchical Gaussian kernel, depth 1)", nrow(small), t[["elapsed"]],
    predict(hf, test))

# The positive matrix P of a tessellated kernel (no width to choose), one P shared by the
# 325 one-vs-one SVMs; at most 30 exponentiated-gradient steps.
t <- system.time(tf <- tkl(lettr ~ ., data = small, cost = 100, maxit = 30))
add("tkl (tessellated kernel, degree 1, cost 100)", nrow(small), t[["elapsed"]],
    predict(tf, test))

# ---- what the learned kernels learned ------------------------------------------------------
# Both check themselves against the Gaussian kernel they start from, on rows they did not fit.
cat("\nhgk against its Gaussian start (3-fold CV): ", hf$selection$reason, "\n",
    sep = "")
cat("tkl against a tuned Gaussian SVM: ", tf$selection$reason, "\n", sep = "")
rel <- sort(hf$relevance, decreasing = TRUE)
cat("\nhgk: the weight the learned kernel puts on each input, sqrt(gamma) * |w| (the kernel\n",
    "falls to 1/e when that input alone moves by 1/weight of its range; 0: input ignored):\n",
    sep = "")
print(round(rel, 2))
tr <- tf$trace
last <- tr[nrow(tr), ]
cat(sprintf(paste0("\ntkl: %d steps (stopped: %s); the SVM dual objective went from %.0f to %.0f,",
                   "\nthe best lower bound on the optimum from %.0f to %.0f (relative duality gap %.2f;",
                   "\nthe run stops at %s)\n"),
            tf$iterations, tf$stop, tr$objective[1], last$objective,
            tr$lower[1], max(tr$lower), last$gap / last$objective, format(tf$tol)))

# ---- plot ----------------------------------------------------------------------------------
dir.create("demo-output", showWarnings = FALSE)
png_file <- file.path("demo-output", "kernlearn-demo.png")
grDevices::png(png_file, width = 1200, height = 900)
op <- graphics::par(mfrow = c(2, 2), cex = 1.05)
labels <- sprintf("%s, %d", sub(" .*", "", results$method), results$rows)
cols <- ifelse(grepl("^e1071", results$method), "#7570b3",
               ifelse(results$rows == nrow(train), "#1b9e77", "#d95f02"))
graphics::par(mar = c(4, 11, 3, 1))
graphics::barplot(rev(100 * results$test_error), names.arg = rev(labels), horiz = TRUE,
                  las = 1, col = rev(cols), xlab = "test error (%)",
                  main = "Letter: test error (learner, training rows)")
graphics::barplot(rev(results$fit_seconds), names.arg = rev(labels), horiz = TRUE, las = 1,
                  col = rev(cols), xlab = "fit time (s)",
                  main = sprintf("Fit time (%d threads)", getOption("kernlearn.threads", 2)))
graphics::par(mar = c(6, 4, 4.5, 1))
plot(hf, which = "relevance")
graphics::mtext("hgk: the learned weight of each input", side = 3, line = 0.2)
graphics::par(mar = c(4, 5, 4.5, 1))
plot(tf, which = "objective")
graphics::mtext(sprintf("tkl: %d steps, relative duality gap %.2f at the end", tf$iterations,
                        last$gap / last$objective), side = 3, line = 0.2)
graphics::par(op)
invisible(grDevices::dev.off())

cat(sprintf("\nkernel_svm fit time / e1071 fit time on %d rows: %.2f (same kernel, cost, tolerance)\n",
            nrow(train), speed))
cat("plot saved to", normalizePath(png_file), "\n")
cat(sprintf("demo run time: %.1f s\n", proc.time()[["elapsed"]] - t_start))
