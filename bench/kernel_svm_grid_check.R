# Held-out check of the (gamma, cost) chosen by each tuner in bench/kernel_svm.R grid:
# kernel_svm and e1071::svm fitted on the same 5000 Letter rows with each choice, tested on
# rows 16001..20000. Usage: KERNLEARN_DATA_DIR=<data> Rscript bench/kernel_svm_grid_check.R
suppressPackageStartupMessages({ library(kernlearn); library(e1071) })
d <- kl_dataset("letter", dir = Sys.getenv("KERNLEARN_DATA_DIR"))
set.seed(1)
idx <- sample(16000, 5000)
te <- 16001:20000
mn <- apply(d$x[idx, ], 2, min); rg <- apply(d$x[idx, ], 2, max) - mn; rg[rg == 0] <- 1
sc <- function(x) sweep(sweep(x, 2, mn), 2, rg, "/")
choices <- data.frame(tuner = c("kl_tune", "e1071::tune", "caret svmRadial"),
                      gamma = c(8, 4, 8), cost = c(4, 64, 64))
for (i in seq_len(nrow(choices))) {
  f <- kernel_svm(d$x[idx, ], d$y[idx], gamma = choices$gamma[i], cost = choices$cost[i])
  e <- svm(sc(d$x[idx, ]), d$y[idx], gamma = choices$gamma[i], cost = choices$cost[i],
           scale = FALSE)
  choices$test_error_kernel_svm[i] <- mean(predict(f, d$x[te, ]) != d$y[te])
  choices$test_error_e1071[i] <- mean(predict(e, sc(d$x[te, ])) != d$y[te])
}
print(choices)
utils::write.csv(choices, file.path("bench", "results", "kernel_svm_grid_check.csv"),
                 row.names = FALSE)
