# The classification sets of bench/hgk_binary_rule.R and bench/hgk_hinge_extend.R as data
# frames with the class in column y and complete rows only: pima, sonar, ionosphere (its
# constant second column left out), bc (BreastCancer, 683 complete rows), vehicle, vowel (the
# speaker column left out) (mlbench); twonorm, threenorm, ringnorm (800 rows, 20 inputs),
# circle (800 rows, 2 inputs), spirals (800 rows, one cycle, sd 0.05), xor (800 rows, 4
# inputs) (mlbench generators, each with its own seed); any other name is read by
# kl_dataset() from the data directory (KERNLEARN_DATA_DIR). Needs kernlearn and mlbench
# attached.
hgk_bench_set <- function(name) {
  e <- new.env()
  named_y <- function(d, col) { names(d)[names(d) == col] <- "y"; d }
  sim <- function(seed, f, ...) { set.seed(seed); s <- f(800, ...); data.frame(s$x, y = s$classes) }
  d <- switch(name,
    pima = { utils::data("PimaIndiansDiabetes", envir = e); named_y(e$PimaIndiansDiabetes, "diabetes") },
    sonar = { utils::data("Sonar", envir = e); named_y(e$Sonar, "Class") },
    ionosphere = { utils::data("Ionosphere", envir = e); d <- e$Ionosphere
                   d$V2 <- NULL; d$V1 <- as.numeric(as.character(d$V1)); named_y(d, "Class") },
    bc = { utils::data("BreastCancer", envir = e); d <- e$BreastCancer[, -1]
           for (j in 1:9) d[[j]] <- as.numeric(as.character(d[[j]])); names(d)[10] <- "y"; d },
    vehicle = { utils::data("Vehicle", envir = e); named_y(e$Vehicle, "Class") },
    vowel = { utils::data("Vowel", envir = e); d <- e$Vowel; d$V1 <- NULL; named_y(d, "Class") },
    twonorm = sim(109, mlbench.twonorm, d = 20),
    circle = sim(111, mlbench.circle, d = 2),
    threenorm = sim(113, mlbench.threenorm, d = 20),
    ringnorm = sim(115, mlbench.ringnorm, d = 20),
    spirals = sim(117, mlbench.spirals, cycles = 1, sd = 0.05),
    xor = sim(119, mlbench.xor, d = 4),
    { k <- kl_dataset(name, quiet = TRUE); data.frame(k$x, y = k$y) })
  d[stats::complete.cases(d), ]
}
