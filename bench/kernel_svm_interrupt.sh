#!/bin/sh
# Usage: sh bench/kernel_svm_interrupt.sh   (after make install)
# Starts a long kernel_svm fit in R, sends SIGINT 6 s into it, and reports how long R took
# to return from the fit.
cat > "${TMPDIR:-/tmp}/kl_intr.R" <<'EOR'
library(kernlearn)
set.seed(1)
n <- 40000; x <- matrix(runif(n * 10), n); y <- factor(ifelse(rowSums(x[, 1:5]) + rnorm(n) > 2.5, "a", "b"))
cat("start\n")
t0 <- Sys.time()
r <- tryCatch(kernel_svm(x, y, gamma = 50, cost = 1000, cache = 50),
              interrupt = function(e) "interrupt condition", error = function(e) conditionMessage(e))
t1 <- Sys.time()
writeLines(sprintf("returned: %s; at %.3f", if (is.character(r)) r else "finished", as.numeric(t1)))
EOR
R --no-save --quiet -f "${TMPDIR:-/tmp}/kl_intr.R" > "${TMPDIR:-/tmp}/kl_intr.out" 2>&1 &
pid=$!
sleep 6
date +%s.%N > "${TMPDIR:-/tmp}/kl_intr.sent"
kill -INT $pid
wait $pid
cat "${TMPDIR:-/tmp}/kl_intr.out" | grep -v CUDA | tail -3
echo "signal sent at $(cat "${TMPDIR:-/tmp}/kl_intr.sent")"
