# The registry of the benchmark collection behind kl_dataset(): the table of the sets
# (inst/datasets/registry.csv), how each set's files are found, read and downloaded, and
# kl_datasets() to list it.

# ---------------------------------------------------------------------------------------------
# The benchmark collection
# ---------------------------------------------------------------------------------------------

.kld_uci <- "https://archive.ics.uci.edu/ml/machine-learning-databases/"
.kld_libsvm <- "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"

# One download step: fetch the first working URL into `file` (in the dataset's cache folder),
# then post-process by `type`: "plain" keeps it; "Z" decompresses a .Z file into `file`;
# "zip"/"tgz" extract the archive members whose names match `members` (regular expressions,
# one per output in `file`); "openml" resolves an OpenML data id to its ARFF file.
.kld_dl <- function(file, urls, type = "plain", members = NULL) {
  list(file = file, urls = urls, type = type, members = members)
}

.kld_specs_cache <- new.env(parent = emptyenv())

.kld_specs <- function() {
  if (!is.null(.kld_specs_cache$specs)) return(.kld_specs_cache$specs)
  V <- function(k) paste0("V", seq_len(k))
  details <- function(...) list(...)
  mk <- function(s) {
    defaults <- list(format = "table", chr = character(), quote = "", drop = character(),
                     exclude = character(), targets = NULL, label = NULL, levels = NULL,
                     n_train = NULL, alt = NULL, alt_rows = NULL, chr_map = list(),
                     y_fun = list(), exclude_by = list(), notes = "")
    utils::modifyList(defaults, s)
  }
  covtype_cols <- c("Elevation", "Aspect", "Slope", "Horizontal_Distance_To_Hydrology",
                    "Vertical_Distance_To_Hydrology", "Horizontal_Distance_To_Roadways",
                    "Hillshade_9am", "Hillshade_Noon", "Hillshade_3pm",
                    "Horizontal_Distance_To_Fire_Points", paste0("Wilderness_Area", 1:4),
                    paste0("Soil_Type", 1:40), "Cover_Type")
  covtype_dl <- list(.kld_dl("covtype.data.gz", paste0(.kld_uci, "covtype/covtype.data.gz")))
  mnist_base <- c("https://yann.lecun.com/exdb/mnist/",
                  "https://ossci-datasets.s3.amazonaws.com/mnist/",
                  "https://storage.googleapis.com/cvdf-datasets/mnist/")
  mnist_files <- c("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                   "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
  higgs_cols <- c("lepton_pT", "lepton_eta", "lepton_phi", "missing_energy_magnitude",
                  "missing_energy_phi",
                  paste0(rep(paste0("jet", 1:4), each = 4),
                         rep(c("_pt", "_eta", "_phi", "_btag"), 4)),
                  "m_jj", "m_jjj", "m_lv", "m_jlv", "m_bb", "m_wbb", "m_wwbb")
  wdbc_feat <- c("radius", "texture", "perimeter", "area", "smoothness", "compactness",
                 "concavity", "concave_points", "symmetry", "fractal_dimension")
  d <- list(
    mnist = details(files = list(train = list(images = c("train-images-idx3-ubyte.gz",
                                            "train-images-idx3-ubyte",
                                            "train-images.idx3-ubyte"),
                                labels = c("train-labels-idx1-ubyte.gz",
                                           "train-labels-idx1-ubyte",
                                           "train-labels.idx1-ubyte")),
                   test = list(images = c("t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte",
                                          "t10k-images.idx3-ubyte"),
                               labels = c("t10k-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte",
                                          "t10k-labels.idx1-ubyte"))),
      downloads = lapply(mnist_files, function(f) .kld_dl(f, paste0(mnist_base, f)))),
    letter = details(files = list(all = c("letter-recognition.data.gz", "letter-recognition.data")),
      cols = c("lettr", "x_box", "y_box", "width", "high", "onpix", "x_bar", "y_bar", "x2bar",
               "y2bar", "xybar", "x2ybar", "xy2bar", "x_ege", "xegvy", "y_ege", "yegvx"),
      chr = "lettr",
      downloads = list(.kld_dl("letter-recognition.data",
                               paste0(.kld_uci, "letter-recognition/letter-recognition.data")))),
    covtype = details(files = list(all = c("covtype.data.gz", "covtype.data")),
      cols = covtype_cols,
      downloads = covtype_dl),
    covtype20k = details(files = list(all = c("covtype.20k.data.gz", "covtype.20k.data")),
      cols = covtype_cols,
      alt = "covtype",
      alt_rows = 20000L,
      downloads = covtype_dl),
    ccpp = details(files = list(all = c("CCPP_Folds5x2_pp_Sheet1.csv.gz", "CCPP_Folds5x2_pp_Sheet1.csv",
                           "Folds5x2_pp.xlsx")),
      cols = c("AT", "V", "AP", "RH", "PE"),
      targets = c(PE = "PE"),
      downloads = list(.kld_dl("Folds5x2_pp.xlsx", paste0(.kld_uci, "00294/CCPP.zip"),
                               type = "zip", members = "Folds5x2_pp\\.xlsx$"))),
    magic = details(files = list(all = c("magic04.data.gz", "magic04.data")),
      cols = c("fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long",
               "fM3Trans", "fAlpha", "fDist", "class"),
      chr = "class",
      downloads = list(.kld_dl("magic04.data", paste0(.kld_uci, "magic/magic04.data")))),
    pendigits = details(files = list(train = c("pendigits.tra.gz", "pendigits.tra"),
                   test = c("pendigits.tes.gz", "pendigits.tes")),
      cols = c(paste0(rep(c("x", "y"), 8), rep(1:8, each = 2)), "digit"),
      downloads = list(.kld_dl("pendigits.tra", paste0(.kld_uci, "pendigits/pendigits.tra")),
                       .kld_dl("pendigits.tes", paste0(.kld_uci, "pendigits/pendigits.tes")))),
    satimage = details(files = list(train = c("sat.trn.gz", "sat.trn"), test = c("sat.tst.gz", "sat.tst")),
      cols = c(sprintf("p%d_b%d", rep(1:9, each = 4), rep(1:4, 9)), "class"),
      downloads = list(.kld_dl("sat.trn", paste0(.kld_uci, "statlog/satimage/sat.trn")),
                       .kld_dl("sat.tst", paste0(.kld_uci, "statlog/satimage/sat.tst")))),
    shuttle = details(files = list(train = c("shuttle.trn.gz", "shuttle.trn", "shuttle.trn.Z"),
                   test = c("shuttle.tst.gz", "shuttle.tst")),
      cols = c(V(9), "class"),
      downloads = list(.kld_dl("shuttle.trn", paste0(.kld_uci, "statlog/shuttle/shuttle.trn.Z"),
                               type = "Z"),
                       .kld_dl("shuttle.tst", paste0(.kld_uci, "statlog/shuttle/shuttle.tst")))),
    thyroid = details(files = list(train = c("ann-train.data.gz", "ann-train.data"),
                   test = c("ann-test.data.gz", "ann-test.data")),
      cols = c(V(21), "class"),
      downloads = list(.kld_dl("ann-train.data", paste0(.kld_uci, "thyroid-disease/ann-train.data")),
                       .kld_dl("ann-test.data", paste0(.kld_uci, "thyroid-disease/ann-test.data")))),
    cadata = details(files = list(all = c("cal_housing.data.gz", "cal_housing.data")),
      cols = c("longitude", "latitude", "housingMedianAge", "totalRooms", "totalBedrooms",
               "population", "households", "medianIncome", "medianHouseValue"),
      targets = c(medianHouseValue = "medianHouseValue"),
      downloads = list(.kld_dl("cal_housing.data",
                               "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.tgz",
                               type = "tgz", members = "cal_housing\\.data$"))),
    cpusmall = details(files = list(all = c("cpu_small.arff.gz", "cpu_small.arff")),
      cols = c("lread", "lwrite", "scall", "sread", "swrite", "fork", "exec", "rchar",
               "wchar", "runqsz", "freemem", "freeswap", "usr"),
      targets = c(usr = "usr"),
      downloads = list(.kld_dl("cpu_small.arff",
                               c("https://www.openml.org/data/download/3664/dataset_2213_cpu_small.arff",
                                 "227"), type = "openml"))),
    bank8fm = details(files = list(all = c("bank8FM.arff.gz", "bank8FM.arff")),
      cols = c("a1cx", "a1cy", "b2x", "b2y", "a2pop", "a3pop", "temp", "mxql", "rej"),
      targets = c(rej = "rej"),
      downloads = list(.kld_dl("bank8FM.arff", "572", type = "openml"))),
    bank32nh = details(files = list(all = c("bank32NH.arff.gz", "bank32NH.arff", "bank32nh.arff")),
      cols = c(paste0(rep(c("a1", "a2", "a3"), each = 6),
                      rep(c("cx", "cy", "sx", "sy", "rho", "pop"), 3)), "temp",
               paste0(rep(c("b1", "b2", "b3"), each = 4), rep(c("x", "y", "call", "eff"), 3)),
               "mxql", "rej"),
      targets = c(rej = "rej"),
      downloads = list(.kld_dl("bank32NH.arff", "558", type = "openml"))),
    `cod-rna` = details(files = list(train = c("cod-rna.gz", "cod-rna"), test = c("cod-rna.t.gz", "cod-rna.t")),
      downloads = list(.kld_dl("cod-rna", paste0(.kld_libsvm, "binary/cod-rna")),
                       .kld_dl("cod-rna.t", paste0(.kld_libsvm, "binary/cod-rna.t")))),
    higgs = details(files = list(train = c("binary.train.gz", "binary.train"),
                   test = c("binary.test.gz", "binary.test")),
      cols = c("label", higgs_cols),
      downloads = list(
        .kld_dl("binary.train", paste0("https://raw.githubusercontent.com/microsoft/LightGBM/",
                                       "master/examples/binary_classification/binary.train")),
        .kld_dl("binary.test", paste0("https://raw.githubusercontent.com/microsoft/LightGBM/",
                                      "master/examples/binary_classification/binary.test")))),
    forest_fires = details(files = list(all = c("forestfires.csv.gz", "forestfires.csv")),
      cols = c("X", "Y", "month", "day", "FFMC", "DMC", "DC", "ISI", "temp", "RH", "wind",
               "rain", "area"),
      chr = c("month", "day"),
      chr_map = list(month = c("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                               "oct", "nov", "dec"),
                     day = c("mon", "tue", "wed", "thu", "fri", "sat", "sun")),
      targets = c(area = "area", log_area = "area"),
      y_fun = list(log_area = log1p),
      downloads = list(.kld_dl("forestfires.csv", paste0(.kld_uci, "forest-fires/forestfires.csv")))),
    concrete = details(files = list(all = c("Concrete_Data.csv.gz", "Concrete_Data.csv", "Concrete_Data.xls")),
      cols = c("Cement", "Blast_Furnace_Slag", "FlyAsh", "Water", "Superplasticizer",
               "Coarse_Aggregate", "Fine_Aggregate", "Age", "strength"),
      targets = c(strength = "strength"),
      downloads = list(.kld_dl("Concrete_Data.xls",
                               paste0(.kld_uci, "concrete/compressive/Concrete_Data.xls")))),
    yacht = details(files = list(all = c("yacht_hydrodynamics.data.gz", "yacht_hydrodynamics.data")),
      cols = c("LC", "PC", "LD", "BD", "LB", "Fr", "Rr"),
      targets = c(Rr = "Rr"),
      downloads = list(.kld_dl("yacht_hydrodynamics.data",
                               paste0(.kld_uci, "00243/yacht_hydrodynamics.data")))),
    auto_mpg = details(files = list(all = c("auto-mpg.data.gz", "auto-mpg.data")),
      cols = c("mpg", "cylinders", "displacement", "horsepower", "weight", "acceleration",
               "model_year", "origin", "car_name"),
      chr = "car_name",
      quote = "\"",
      drop = "car_name",
      targets = c(mpg = "mpg"),
      downloads = list(.kld_dl("auto-mpg.data", paste0(.kld_uci, "auto-mpg/auto-mpg.data")))),
    boston = details(files = list(all = c("housing.data.gz", "housing.data")),
      cols = c("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX",
               "PTRATIO", "B", "LSTAT", "MEDV"),
      targets = c(MEDV = "MEDV"),
      downloads = list(.kld_dl("housing.data",
                               c(paste0(.kld_uci, "housing/housing.data"),
                                 "https://raw.githubusercontent.com/jbrownlee/Datasets/master/housing.data")))),
    energy = details(files = list(all = c("ENB2012_data.csv.gz", "ENB2012_data.csv", "ENB2012_data.xlsx")),
      cols = c(paste0("X", 1:8), "Y1", "Y2"),
      exclude = c("Y1", "Y2"),
      targets = c(Y1 = "Y1", Y2 = "Y2"),
      downloads = list(.kld_dl("ENB2012_data.xlsx", paste0(.kld_uci, "00242/ENB2012_data.xlsx")))),
    bupa = details(files = list(all = c("bupa.data.gz", "bupa.data")),
      cols = c("mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks", "selector"),
      targets = c(selector = "selector", drinks = "drinks"),
      exclude_by = list(drinks = "selector"),
      downloads = list(.kld_dl("bupa.data", paste0(.kld_uci, "liver-disorders/bupa.data")))),
    breast_cancer = details(files = list(all = c("breast-cancer-wisconsin.data.gz", "breast-cancer-wisconsin.data")),
      cols = c("id", "clump_thickness", "cell_size_uniformity", "cell_shape_uniformity",
               "marginal_adhesion", "epithelial_cell_size", "bare_nuclei", "bland_chromatin",
               "normal_nucleoli", "mitoses", "class"),
      drop = "id",
      downloads = list(.kld_dl("breast-cancer-wisconsin.data",
                               paste0(.kld_uci, "breast-cancer-wisconsin/breast-cancer-wisconsin.data")))),
    wdbc = details(files = list(all = c("wdbc.data.gz", "wdbc.data")),
      cols = c("id", "diagnosis", paste0(rep(wdbc_feat, 3),
                                         rep(c("_mean", "_se", "_worst"), each = 10))),
      chr = "diagnosis",
      drop = "id",
      downloads = list(.kld_dl("wdbc.data", paste0(.kld_uci, "breast-cancer-wisconsin/wdbc.data")))),
    heart = details(files = list(all = c("heart.dat.gz", "heart.dat")),
      cols = c("age", "sex", "chest_pain", "resting_bp", "cholesterol", "fasting_blood_sugar",
               "resting_ecg", "max_heart_rate", "exercise_angina", "oldpeak", "slope",
               "major_vessels", "thal", "class"),
      downloads = list(.kld_dl("heart.dat", paste0(.kld_uci, "statlog/heart/heart.dat")))),
    pima = details(files = list(all = c("pima-indians-diabetes.data.gz", "pima-indians-diabetes.data",
                           "pima-indians-diabetes.data.csv")),
      cols = c("pregnant", "glucose", "pressure", "triceps", "insulin", "mass", "pedigree",
               "age", "diabetes"),
      downloads = list(.kld_dl("pima-indians-diabetes.data",
                               "https://raw.githubusercontent.com/jbrownlee/Datasets/master/pima-indians-diabetes.data.csv"))),
    ionosphere = details(files = list(all = c("ionosphere.data.gz", "ionosphere.data")),
      cols = c(V(34), "class"),
      chr = "class",
      downloads = list(.kld_dl("ionosphere.data", paste0(.kld_uci, "ionosphere/ionosphere.data")))),
    sonar = details(files = list(all = c("sonar.all-data.gz", "sonar.all-data")),
      cols = c(V(60), "class"),
      chr = "class",
      downloads = list(.kld_dl("sonar.all-data",
                               paste0(.kld_uci, "undocumented/connectionist-bench/sonar/sonar.all-data")))),
    parkinsons = details(files = list(all = c("parkinsons_updrs.data.gz", "parkinsons_updrs.data")),
      cols = c("subject", "age", "sex", "test_time", "motor_UPDRS", "total_UPDRS",
               "Jitter_pct", "Jitter_Abs", "Jitter_RAP", "Jitter_PPQ5", "Jitter_DDP",
               "Shimmer", "Shimmer_dB", "Shimmer_APQ3", "Shimmer_APQ5", "Shimmer_APQ11",
               "Shimmer_DDA", "NHR", "HNR", "RPDE", "DFA", "PPE"),
      drop = "subject",
      exclude = c("motor_UPDRS", "total_UPDRS"),
      targets = c(motor_UPDRS = "motor_UPDRS", total_UPDRS = "total_UPDRS"),
      downloads = list(.kld_dl("parkinsons_updrs.data",
                               paste0(.kld_uci, "parkinsons/telemonitoring/parkinsons_updrs.data"))))
  )
  tab <- .kld_table()
  if (!setequal(tab$name, names(d)))
    stop("the dataset registry table and the readers' details name different datasets: ",
         paste(union(setdiff(tab$name, names(d)), setdiff(names(d), tab$name)), collapse = ", "),
         call. = FALSE)
  s <- lapply(seq_len(nrow(tab)), function(i) {
    row <- tab[i, ]
    f <- list(name = row$name, folder = row$folder, title = row$title, task = row$task,
              format = row$format, rows = row$rows, features = row$features,
              source = row$source, notes = if (is.na(row$notes)) "" else row$notes)
    if (!is.na(row$n_train)) f$n_train <- row$n_train
    if (!is.na(row$label)) f$label <- row$label
    if (!is.na(row$levels)) f$levels <- strsplit(row$levels, "|", fixed = TRUE)[[1L]]
    mk(c(f, d[[row$name]]))
  })
  names(s) <- tab$name
  .kld_specs_cache$specs <- s
  s
}

# The table of the collection, one row per dataset: name, folder, title, task, format (how the
# files are read), rows, features, n_train (rows of the standard training part), label and
# levels (classification), source and notes. It is inst/datasets/registry.csv; .kld_specs()
# adds from code how each set's files are named, parsed and downloaded.
.kld_table <- function() {
  f <- system.file("datasets", "registry.csv", package = "kernlearn")
  if (!nzchar(f))
    stop("the dataset registry (datasets/registry.csv) is missing from the kernlearn installation",
         call. = FALSE)
  tab <- utils::read.csv(f, stringsAsFactors = FALSE, na.strings = "",
                         colClasses = c(name = "character", folder = "character",
                                        title = "character", task = "character",
                                        format = "character", rows = "integer",
                                        features = "integer", n_train = "integer",
                                        label = "character", levels = "character",
                                        source = "character", notes = "character"))
  tab
}

.kld_aliases <- c(mnist = "mnist", letter = "letter", letters = "letter",
                  "letter-recognition" = "letter", covtype = "covtype", covertype = "covtype",
                  covtype20k = "covtype20k", covtype_subset20k = "covtype20k",
                  ccpp = "ccpp", magic = "magic", magic04 = "magic", pendigits = "pendigits",
                  satimage = "satimage", shuttle = "shuttle", thyroid = "thyroid",
                  cadata = "cadata", california_housing = "cadata",
                  cadata_california_housing = "cadata", cpusmall = "cpusmall",
                  cpu_small = "cpusmall", bank8fm = "bank8fm", bank32nh = "bank32nh",
                  "cod-rna" = "cod-rna", cod_rna = "cod-rna", codrna = "cod-rna",
                  higgs = "higgs", higgs_subset = "higgs", forest_fires = "forest_fires",
                  forestfires = "forest_fires", concrete = "concrete", yacht = "yacht",
                  auto_mpg = "auto_mpg", "auto-mpg" = "auto_mpg", boston = "boston",
                  boston_housing = "boston", housing = "boston", energy = "energy",
                  energy_efficiency = "energy", bupa = "bupa", bupa_liver = "bupa",
                  liver = "bupa", breast_cancer = "breast_cancer", cancer = "breast_cancer",
                  breast_cancer_wisconsin = "breast_cancer", wdbc = "wdbc", heart = "heart",
                  statlog_heart = "heart", pima = "pima", diabetes = "pima",
                  ionosphere = "ionosphere", sonar = "sonar", parkinsons = "parkinsons",
                  parkinsons_telemonitoring = "parkinsons")

.kld_spec <- function(name) {
  if (!is.character(name) || length(name) != 1L || is.na(name))
    stop("'name' must be a single dataset name; see kl_datasets()", call. = FALSE)
  key <- .kld_aliases[tolower(name)]
  if (is.na(key))
    stop(sprintf("unknown dataset '%s'; available: %s", name,
                 paste(names(.kld_specs()), collapse = ", ")), call. = FALSE)
  .kld_specs()[[key]]
}

#' List the benchmark datasets kl_dataset() reads
#'
#' @return A data frame with one row per dataset: \code{name} (what to pass to
#'   \code{\link{kl_dataset}}), \code{folder} (the subfolder of the data directory that holds
#'   its files), \code{title}, \code{task} (\code{"classification"} or \code{"regression"}),
#'   \code{rows} and \code{features} (of the matrix \code{kl_dataset()} returns, after rows
#'   with missing values are dropped), \code{classes} (\code{NA} for regression),
#'   \code{n_train} (rows of the standard training part, \code{NA} where there is none),
#'   \code{files} (the file names looked for), \code{source} (the dataset's home page) and
#'   \code{notes}.
#' @examples
#' d <- kl_datasets()
#' d[d$task == "classification", c("name", "rows", "features", "classes")]
#' @seealso \code{\link{kl_dataset}}
#' @export
kl_datasets <- function() {
  s <- .kld_specs()
  first_names <- function(f) {
    f <- unlist(f, use.names = FALSE)
    paste(unique(f[grepl("\\.gz$", f)]), collapse = ", ")
  }
  data.frame(
    name = names(s),
    folder = vapply(s, `[[`, "", "folder"),
    title = vapply(s, `[[`, "", "title"),
    task = vapply(s, `[[`, "", "task"),
    rows = vapply(s, function(z) as.integer(z$rows), 1L),
    features = vapply(s, function(z) as.integer(z$features), 1L),
    classes = vapply(s, function(z) if (z$task == "classification") length(z$levels) else NA_integer_, 1L),
    n_train = vapply(s, function(z) if (is.null(z$n_train)) NA_integer_ else z$n_train, 1L),
    files = vapply(s, function(z) first_names(z$files), ""),
    source = vapply(s, `[[`, "", "source"),
    notes = vapply(s, `[[`, "", "notes"),
    row.names = NULL, stringsAsFactors = FALSE)
}
