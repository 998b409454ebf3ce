# The learned kernels with their defaults, hgk() and tkl(), against the Gaussian kernel they
# start from, tuned as a user would: kernel_svm() (C-SVC, or epsilon-SVR for a numeric
# response) tuned by kl_tune() over 6 widths x 7 costs with 5-fold CV, on small sets from
# mlbench the package was not tuned on.
#
# Usage: Rscript bench/learned_vs_gaussian.R [sets] [splits] [methods]
#   sets    comma list among vehicle, glass, sonar, ionosphere, pima, boston, friedman1,
#           friedman2, vowel (the speaker column left out), dna, waveform, ringnorm, spirals,
#           friedman3, servo (factor inputs), housevotes (factor inputs),
#           satellite (1,200 random rows), zoo (7 classes, some of 4 to 5 rows), soybean
#           (factor inputs, 15 classes), ozone (the day columns left out) (mlbench; rows with
#           missing values left out), twonorm, threenorm (20 inputs), circle (2 inputs),
#           cassini, xor (3 inputs), smiley (2 inputs) (mlbench generators, 800 rows), and
#           concrete, auto_mpg, wdbc, bupa, breast_cancer, ccpp, yacht, energy (heating load),
#           forest_fires (log(1 + area)), heart, thyroid, parkinsons (motor UPDRS),
#           shuttle, cadata, cpusmall, bank8fm, bank32nh, magic and cod-rna (1,200 random rows
#           where there are more; shuttle's rarest classes may be absent from a split's
#           training rows) read by kl_dataset() from the data directory
#           (KERNLEARN_DATA_DIR or options(kernlearn.data_dir = )), and the small sets that
#           come with R: mcycle (1 input, heteroscedastic noise), crabs (species from the five
#           measurements), cpus (log10 of performance), birthwt (birth weight; 'low' left
#           out) (MASS), faithful (eruption time from waiting time, 1 input), quakes
#           (magnitude), airquality (ozone; rows with missing values left out), swiss
#           (fertility, 47 rows), rock (log permeability, 48 rows) and iris (datasets)
#           (default all)
#   splits  random 70 / 30 splits per set (default 3)
#   methods comma list among hgk, tkl (default both), and gauss: the peer below tuned on another
#           draw of the folds, which shows how often two tunings of the one kernel fall more
#           than one standard error apart (the noise floor of the comparison)
# Per set and method: test error (misclassification rate, or mean squared error on the
# response's scale) as the mean over the splits with its standard error, against the tuned
# Gaussian's on the same splits, the seconds of the fit (tuning included), and how often the
# learner's own safeguard chose the Gaussian (fit$selection); for hgk the loss it chose. tkl runs
# with its defaults (cost 10, delta 0.1; the response standardised for regression, as the
# authors did, and its error taken back to the response's scale). The peer runs with
# kernel_svm()'s defaults otherwise: for regression the response standardised on the training
# rows (scale_response = TRUE), epsilon 0.1 on that scale, predictions on the response's scale.
# (Regression rows dated before 2026-12-03 10:00 fitted the raw response with epsilon 0.1: a
# wide tube where the response's sd is near 0.15, bank8fm and bank32nh, and costs far below
# the scale of cadata's response, which flattered the learners.) 2 threads. Results:
# bench/results/learned_vs_gaussian.csv (rows of earlier runs of other sets or methods are kept).
suppressPackageStartupMessages({
  library(kernlearn)
  library(mlbench)
})
args <- commandArgs(TRUE)
data_sets <- c("concrete", "auto_mpg", "wdbc", "bupa", "breast_cancer", "ccpp", "yacht", "energy",
               "forest_fires", "heart", "thyroid", "parkinsons", "shuttle", "cadata", "cpusmall",
               "bank8fm", "bank32nh", "magic", "cod-rna")
r_sets <- c("mcycle", "crabs", "cpus", "birthwt", "faithful", "quakes", "airquality", "swiss",
            "rock", "iris")
all_sets <- c("vehicle", "glass", "sonar", "ionosphere", "pima", "boston", "friedman1",
              "friedman2", "vowel", "dna", "waveform", "ringnorm", "spirals", "friedman3",
              "servo", "housevotes", "satellite", "zoo", "soybean", "ozone", "twonorm",
              "threenorm", "circle", "cassini", "xor", "smiley", data_sets, r_sets)
sets <- if (length(args) >= 1L) strsplit(args[1L], ",")[[1L]] else all_sets
splits <- if (length(args) >= 2L) as.integer(args[2L]) else 3L
methods <- if (length(args) >= 3L) strsplit(args[3L], ",")[[1L]] else c("hgk", "tkl")
stopifnot(all(sets %in% all_sets), all(methods %in% c("hgk", "tkl", "gauss")))
options(kernlearn.threads = 2L, kernlearn.backend = "cpu")
out <- file.path("bench", "results", "learned_vs_gaussian.csv")

load_set <- function(name) {
  if (name %in% data_sets) {
    k <- kl_dataset(name, quiet = TRUE,
                    target = if (name == "forest_fires") "log_area")
    d <- data.frame(k$x, y = k$y)
    if (nrow(d) > 1200L) {
      set.seed(107)
      d <- d[sort(sample.int(nrow(d), 1200L)), ]
    }
    return(d)
  }
  if (name %in% r_sets) {
    d <- switch(name,
      mcycle = { d <- MASS::mcycle; names(d) <- c("x", "y"); d },
      crabs = { d <- MASS::crabs[, c("FL", "RW", "CL", "CW", "BD")]; d$y <- MASS::crabs$sp; d },
      cpus = { d <- MASS::cpus[, c("syct", "mmin", "mmax", "cach", "chmin", "chmax")]
               d$y <- log10(MASS::cpus$perf); d },
      birthwt = { d <- MASS::birthwt; d$y <- d$bwt; d$bwt <- NULL; d$low <- NULL; d },
      faithful = { d <- datasets::faithful; data.frame(x = d$waiting, y = d$eruptions) },
      quakes = { d <- datasets::quakes; names(d)[names(d) == "mag"] <- "y"; d },
      airquality = { d <- datasets::airquality; names(d)[names(d) == "Ozone"] <- "y"; d },
      swiss = { d <- datasets::swiss; names(d)[names(d) == "Fertility"] <- "y"; d },
      rock = { d <- datasets::rock; d$y <- log(d$perm); d$perm <- NULL; d },
      iris = { d <- datasets::iris; names(d)[names(d) == "Species"] <- "y"; d })
    return(d[stats::complete.cases(d), ])
  }
  e <- new.env()
  switch(name,
    vehicle = { utils::data("Vehicle", envir = e); d <- e$Vehicle; names(d)[ncol(d)] <- "y" },
    glass = { utils::data("Glass", envir = e); d <- e$Glass; names(d)[names(d) == "Type"] <- "y"
              d$y <- droplevels(d$y) },
    sonar = { utils::data("Sonar", envir = e); d <- e$Sonar; names(d)[names(d) == "Class"] <- "y" },
    ionosphere = { utils::data("Ionosphere", envir = e); d <- e$Ionosphere
                   d$V2 <- NULL  # constant
                   d$V1 <- as.numeric(as.character(d$V1))
                   names(d)[names(d) == "Class"] <- "y" },
    pima = { utils::data("PimaIndiansDiabetes", envir = e); d <- e$PimaIndiansDiabetes
             names(d)[names(d) == "diabetes"] <- "y" },
    boston = { utils::data("BostonHousing", envir = e); d <- e$BostonHousing
               d$chas <- as.numeric(as.character(d$chas))
               names(d)[names(d) == "medv"] <- "y" },
    friedman1 = { set.seed(101); s <- mlbench.friedman1(800, sd = 1)
                  d <- data.frame(s$x, y = s$y) },
    friedman2 = { set.seed(102); s <- mlbench.friedman2(800, sd = 125)
                  d <- data.frame(s$x, y = s$y) },
    vowel = { utils::data("Vowel", envir = e); d <- e$Vowel; d$V1 <- NULL  # the speaker
              names(d)[names(d) == "Class"] <- "y" },
    dna = { utils::data("DNA", envir = e); d <- e$DNA
            d[-ncol(d)] <- lapply(d[-ncol(d)], function(v) as.numeric(as.character(v)))
            names(d)[names(d) == "Class"] <- "y" },
    waveform = { set.seed(103); s <- mlbench.waveform(800)
                 d <- data.frame(s$x, y = s$classes) },
    ringnorm = { set.seed(104); s <- mlbench.ringnorm(800, d = 20)
                 d <- data.frame(s$x, y = s$classes) },
    spirals = { set.seed(105); s <- mlbench.spirals(600, cycles = 1.5, sd = 0.05)
                d <- data.frame(s$x, y = s$classes) },
    friedman3 = { set.seed(106); s <- mlbench.friedman3(800, sd = 0.1)
                  d <- data.frame(s$x, y = s$y) },
    servo = { utils::data("Servo", envir = e); d <- e$Servo
              names(d)[names(d) == "Class"] <- "y" },
    housevotes = { utils::data("HouseVotes84", envir = e); d <- e$HouseVotes84
                   names(d)[names(d) == "Class"] <- "y" },
    satellite = { utils::data("Satellite", envir = e); d <- e$Satellite
                  set.seed(108); d <- d[sort(sample.int(nrow(d), 1200L)), ]
                  names(d)[names(d) == "classes"] <- "y" },
    zoo = { utils::data("Zoo", envir = e); d <- e$Zoo
            d[-ncol(d)] <- lapply(d[-ncol(d)], as.numeric)
            names(d)[names(d) == "type"] <- "y" },
    soybean = { utils::data("Soybean", envir = e); d <- e$Soybean
                d <- d[, c(2:ncol(d), 1L)]
                d <- d[stats::complete.cases(d), ]
                d[-ncol(d)] <- lapply(d[-ncol(d)], function(v) factor(as.character(v)))
                d <- d[, vapply(d, function(v) length(unique(v)) > 1L, TRUE)]
                names(d)[names(d) == "Class"] <- "y"; d$y <- droplevels(d$y) },
    ozone = { utils::data("Ozone", envir = e); d <- e$Ozone[, -(1:3)]
              names(d)[names(d) == "V4"] <- "y" },
    twonorm = { set.seed(109); s <- mlbench.twonorm(800, d = 20)
                d <- data.frame(s$x, y = s$classes) },
    threenorm = { set.seed(110); s <- mlbench.threenorm(800, d = 20)
                  d <- data.frame(s$x, y = s$classes) },
    circle = { set.seed(111); s <- mlbench.circle(800, d = 2)
               d <- data.frame(s$x, y = s$classes) },
    cassini = { set.seed(112); s <- mlbench.cassini(800)
                d <- data.frame(s$x, y = s$classes) },
    xor = { set.seed(113); s <- mlbench.xor(800, d = 3)
            d <- data.frame(s$x, y = s$classes) },
    smiley = { set.seed(114); s <- mlbench.smiley(800, sd1 = 0.1, sd2 = 0.2)
               d <- data.frame(s$x, y = s$classes) })
  d <- d[stats::complete.cases(d), ]
  d
}

err_of <- function(pred, y) {
  if (is.factor(y)) mean(as.character(pred) != as.character(y)) else mean((pred - y)^2)
}

# the peer's grid: 6 widths x 7 costs for p inputs
peer_grid <- function(p) list(gamma = 2^(-3:2) / p, cost = 2^seq(-1, 11, by = 2))

fit_method <- function(method, d, tr) {
  dt <- d[tr, ]
  if (method == "gauss") {
    # the peer's own tuning on another draw of the folds (this function runs after
    # set.seed(2000 + s), the peer after set.seed(3000 + s))
    f <- kl_tune(kernel_svm, y ~ ., data = dt, folds = 5,
                 grid = peer_grid(ncol(d) - 1L))
    return(list(fit = f, pred = function(nd) predict(f$best_model, nd), loss = "-",
                arch = sprintf("gamma %g cost %g", f$best$gamma, f$best$cost)))
  }
  if (method == "hgk") {
    f <- hgk(y ~ ., data = dt)
    return(list(fit = f, pred = function(nd) predict(f, nd), loss = f$loss,
                arch = f$architecture$label))
  }
  if (is.factor(d$y)) {
    f <- tkl(y ~ ., data = dt)
    return(list(fit = f, pred = function(nd) predict(f, nd), loss = "hinge", arch = "tkl"))
  }
  mu <- mean(dt$y)
  s <- stats::sd(dt$y)
  dt$y <- (dt$y - mu) / s
  f <- tkl(y ~ ., data = dt, scale_response = FALSE)
  list(fit = f, pred = function(nd) mu + s * predict(f, nd), loss = "eps", arch = "tkl")
}

rows <- list()
for (method in methods) for (name in sets) {
  d <- load_set(name)
  n <- nrow(d)
  p <- ncol(d) - 1L
  res <- list()
  for (s in seq_len(splits)) {
    set.seed(1000 + s)
    tr <- sort(sample.int(n, round(0.7 * n)))
    te <- setdiff(seq_len(n), tr)
    set.seed(2000 + s)
    t_h <- system.time(h <- fit_method(method, d, tr))[["elapsed"]]
    e_h <- err_of(h$pred(d[te, ]), d$y[te])
    sel <- h$fit$selection
    grid <- peer_grid(p)
    set.seed(3000 + s)
    t_g <- system.time(g <- kl_tune(kernel_svm, y ~ ., data = d[tr, ], grid = grid,
                                    folds = 5))[["elapsed"]]
    e_g <- err_of(predict(g$best_model, d[te, ]), d$y[te])
    cat(sprintf("%s %-10s split %d: %.4f (%.1f s, %s, %s)  gaussian %.4f (%.1f s, gamma %g cost %g)\n",
                method, name, s, e_h, t_h, if (is.null(sel)) "-" else sel$choice, h$loss,
                e_g, t_g, g$best$gamma, g$best$cost))
    res[[s]] <- data.frame(split = s, learned = e_h, learned_s = t_h,
                           choice = if (is.null(sel)) NA else sel$choice,
                           loss = h$loss, arch = h$arch, gauss = e_g, gauss_s = t_g)
  }
  r <- do.call(rbind, res)
  se <- function(v) if (length(v) > 1L) stats::sd(v) / sqrt(length(v)) else NA_real_
  rows[[paste(method, name)]] <- data.frame(
    date = format(Sys.time(), "%Y-%m-%d %H:%M"), method = method, set = name,
    n_train = length(tr), inputs = p,
    task = if (is.factor(d$y)) "classification" else "regression",
    metric = if (is.factor(d$y)) "misclassification" else "MSE", splits = splits,
    error = mean(r$learned), se = se(r$learned), gauss_error = mean(r$gauss),
    gauss_se = se(r$gauss), ratio = mean(r$learned) / mean(r$gauss),
    within_1se = mean(r$learned) <= mean(r$gauss) + se(r$gauss),
    seconds = stats::median(r$learned_s), gauss_seconds = stats::median(r$gauss_s),
    baseline_chosen = sum(r$choice == "baseline", na.rm = TRUE),
    losses = paste(r$loss, collapse = "/"), arch = paste(r$arch, collapse = "/"),
    per_split = paste(sprintf("%.4f:%.4f", r$learned, r$gauss), collapse = " "))
  print(rows[[paste(method, name)]][, c("method", "set", "error", "se", "gauss_error",
                                        "gauss_se", "ratio", "within_1se", "seconds",
                                        "gauss_seconds", "baseline_chosen")],
        row.names = FALSE)
  tab <- do.call(rbind, rows)
  if (file.exists(out)) {
    old <- utils::read.csv(out, stringsAsFactors = FALSE)
    old <- old[!(paste(old$method, old$set) %in% paste(tab$method, tab$set)), , drop = FALSE]
    tab <- rbind(old, tab)
  }
  utils::write.csv(tab, out, row.names = FALSE)
}
