# kl_dataset(): finding a benchmark set in a data directory or the download cache, fetching
# it when asked, and reading it with the readers of data-readers.R.

.kld_cache_dir <- function() {
  d <- getOption("kernlearn.cache_dir", NULL)
  if (is.null(d)) d <- tools::R_user_dir("kernlearn", "cache")
  d
}

# Where to look, in order: list of list(path, how).
.kld_locations <- function(dir) {
  locs <- list()
  if (!is.null(dir)) {
    if (!is.character(dir) || length(dir) != 1L || is.na(dir) || !nzchar(dir))
      stop("'dir' must be NULL or a single directory path", call. = FALSE)
    if (!dir.exists(dir))
      stop(sprintf("data directory '%s' (the 'dir' argument) does not exist", dir), call. = FALSE)
    locs[[1L]] <- list(path = dir, how = "the 'dir' argument")
  } else {
    opt <- getOption("kernlearn.data_dir", NULL)
    env <- Sys.getenv("KERNLEARN_DATA_DIR", "")
    if (!is.null(opt) && !identical(opt, "")) {
      if (!is.character(opt) || length(opt) != 1L || is.na(opt))
        stop("options(kernlearn.data_dir) must be a single directory path", call. = FALSE)
      if (!dir.exists(opt))
        stop(sprintf("data directory '%s' (options(kernlearn.data_dir)) does not exist", opt),
             call. = FALSE)
      locs[[1L]] <- list(path = opt, how = "options(kernlearn.data_dir)")
    } else if (nzchar(env)) {
      if (!dir.exists(env))
        stop(sprintf("data directory '%s' (environment variable KERNLEARN_DATA_DIR) does not exist",
                     env), call. = FALSE)
      locs[[1L]] <- list(path = env, how = "KERNLEARN_DATA_DIR")
    }
  }
  cache <- .kld_cache_dir()
  known <- vapply(locs, function(l) normalizePath(l$path, mustWork = FALSE), "")
  if (!normalizePath(cache, mustWork = FALSE) %in% known)
    locs[[length(locs) + 1L]] <- list(path = cache, how = "the download cache")
  locs
}

# The files of the requested parts, found in one folder: a named list (per part; MNIST parts
# are lists of images/labels) of paths, or NULL.
.kld_find_in <- function(folder_path, files, parts) {
  pick <- function(cands) {
    hit <- file.path(folder_path, cands)
    hit <- hit[file.exists(hit) & !dir.exists(hit)]
    if (length(hit)) hit[1L] else NA_character_
  }
  out <- list()
  for (p in parts) {
    f <- files[[p]]
    if (is.list(f)) {
      got <- lapply(f, pick)
      if (any(is.na(unlist(got)))) return(NULL)
      out[[p]] <- got
    } else {
      got <- pick(f)
      if (is.na(got)) return(NULL)
      out[[p]] <- got
    }
  }
  out
}

# Finds the dataset's files in the locations: list(paths, spec_used, nrows) or NULL.
.kld_find <- function(spec, parts, locs) {
  for (l in locs) {
    hit <- .kld_find_in(file.path(l$path, spec$folder), spec$files, parts)
    if (!is.null(hit)) return(list(paths = hit, nrows = -1L, where = l))
    if (!is.null(spec$alt)) {
      alt <- .kld_specs()[[spec$alt]]
      hit <- .kld_find_in(file.path(l$path, alt$folder), alt$files, "all")
      if (!is.null(hit)) return(list(paths = hit, nrows = spec$alt_rows, where = l))
    }
  }
  NULL
}

.kld_not_found <- function(spec, parts, locs) {
  alts <- function(v) paste(v, collapse = " or ")
  wanted <- unlist(lapply(spec$files[parts], function(f) {
    if (is.list(f)) vapply(f, alts, "") else alts(f)
  }), use.names = FALSE)
  where <- vapply(locs, function(l) sprintf("  %s (%s)", file.path(l$path, spec$folder), l$how), "")
  stop(sprintf(paste0("dataset '%s' not found: looked for %s in\n%s\n",
                      "Set the data directory with kl_dataset(dir = ), ",
                      "options(kernlearn.data_dir = ) or the KERNLEARN_DATA_DIR environment ",
                      "variable (a folder holding the subfolder '%s'), or use download = TRUE ",
                      "to fetch it from the canonical source (%s)."),
               spec$name, paste(wanted, collapse = ", "), paste(where, collapse = "\n"),
               spec$folder, spec$source), call. = FALSE)
}

# Downloads the first working URL to `dest`.
.kld_fetch <- function(urls, dest, quiet = FALSE) {
  old <- options(timeout = max(600, getOption("timeout", 60)))
  on.exit(options(old), add = TRUE)
  tmp <- paste0(dest, ".part")
  errs <- character()
  for (u in urls) {
    if (!quiet) message(sprintf("downloading %s", u))
    res <- tryCatch(suppressWarnings(utils::download.file(u, tmp, mode = "wb", quiet = TRUE)),
                    error = function(e) e)
    if (inherits(res, "error")) {
      errs <- c(errs, sprintf("%s: %s", u, conditionMessage(res)))
    } else if (!identical(as.integer(res), 0L) || !file.exists(tmp) || file.size(tmp) == 0) {
      errs <- c(errs, sprintf("%s: download failed", u))
    } else {
      if (file.exists(dest)) unlink(dest)
      if (!file.rename(tmp, dest)) file.copy(tmp, dest, overwrite = TRUE)
      unlink(tmp)
      return(invisible(dest))
    }
    unlink(tmp)
  }
  stop(sprintf("could not download %s:\n  %s", basename(dest), paste(errs, collapse = "\n  ")),
       call. = FALSE)
}

# Resolves an OpenML data id to the URL of its ARFF file through the OpenML REST API.
.kld_openml_url <- function(id) {
  tmp <- tempfile(fileext = ".json")
  on.exit(unlink(tmp))
  .kld_fetch(sprintf("https://www.openml.org/api/v1/json/data/%s", id), tmp, quiet = TRUE)
  js <- paste(readLines(tmp, warn = FALSE), collapse = "")
  url <- regmatches(js, regexpr("\"url\"[[:space:]]*:[[:space:]]*\"[^\"]+\"", js))
  if (!length(url)) stop(sprintf("OpenML data %s: no file URL in the API answer", id),
                         call. = FALSE)
  gsub("\\\\/", "/", sub("^\"url\"[[:space:]]*:[[:space:]]*\"([^\"]+)\"$", "\\1", url))
}

# Runs one download step into `folder`.
.kld_download_step <- function(step, folder, quiet = FALSE) {
  dest <- file.path(folder, step$file)
  switch(step$type,
    plain = .kld_fetch(step$urls, dest, quiet),
    Z = {
      zfile <- paste0(dest, ".Z")
      .kld_fetch(step$urls, zfile, quiet)
      out <- .kld_uncompress_z(zfile)
      file.copy(out, dest, overwrite = TRUE)
      unlink(c(out, zfile))
    },
    zip = , tgz = {
      arch <- file.path(folder, basename(step$urls[1L]))
      .kld_fetch(step$urls, arch, quiet)
      td <- tempfile("kld")
      dir.create(td)
      on.exit(unlink(td, recursive = TRUE), add = TRUE)
      if (step$type == "zip") utils::unzip(arch, exdir = td) else utils::untar(arch, exdir = td)
      all_files <- list.files(td, recursive = TRUE, full.names = TRUE)
      hit <- all_files[grepl(step$members, all_files)]
      if (!length(hit))
        stop(sprintf("the downloaded archive %s holds no file matching '%s'",
                     basename(arch), step$members), call. = FALSE)
      file.copy(hit[1L], dest, overwrite = TRUE)
      unlink(arch)
    },
    openml = {
      urls <- step$urls[grepl("^https?://", step$urls)]
      ids <- step$urls[!grepl("^https?://", step$urls)]
      done <- FALSE
      if (length(urls))
        done <- tryCatch({
          .kld_fetch(urls, dest, quiet)
          TRUE
        }, error = function(e) FALSE)
      if (!done) {
        if (!length(ids)) stop(sprintf("could not download %s", step$file), call. = FALSE)
        .kld_fetch(.kld_openml_url(ids[1L]), dest, quiet)
      }
    },
    stop(sprintf("unknown download type '%s'", step$type), call. = FALSE))
  invisible(dest)
}

.kld_download <- function(spec, cache, quiet = FALSE) {
  if (!is.null(spec$alt)) spec <- .kld_specs()[[spec$alt]]
  folder <- file.path(cache, spec$folder)
  if (!dir.exists(folder) && !dir.create(folder, recursive = TRUE, showWarnings = FALSE))
    stop(sprintf("cannot create the download folder '%s'", folder), call. = FALSE)
  for (step in spec$downloads) {
    if (!is.null(.kld_find_in(folder, list(x = step$file), "x"))) next
    .kld_download_step(step, folder, quiet)
  }
  invisible(folder)
}

# Reads one part (one file, or MNIST's images + labels) into list(x, y, dropped).
.kld_read_part <- function(spec, path, tcol, tname = tcol, nrows = -1L) {
  if (spec$format == "idx") {
    img <- read_idx(path$images, magic = 2051)
    lab <- read_idx(path$labels, magic = 2049)
    if (nrow(img) != length(lab))
      stop(sprintf("%s has %d images but %s has %d labels", basename(path$images), nrow(img),
                   basename(path$labels), length(lab)), call. = FALSE)
    attr(img, "idx_dim") <- NULL
    attr(lab, "idx_dim") <- NULL
    colnames(img) <- paste0("pixel", seq_len(ncol(img)))
    return(list(x = img, y = lab, dropped = 0L, na_cols = character()))
  }
  if (spec$format == "libsvm") {
    d <- read_libsvm(path, n_features = spec$features)
    return(list(x = d$x, y = d$y, dropped = 0L, na_cols = character()))
  }
  if (spec$format == "arff") {
    df <- read_arff(path)
    if (ncol(df) != length(spec$cols))
      stop(sprintf("%s has %d attributes, expected %d", basename(path), ncol(df),
                   length(spec$cols)), call. = FALSE)
    if (!all(vapply(df, is.numeric, TRUE)))
      stop(sprintf("%s: expected numeric attributes only", basename(path)), call. = FALSE)
    num <- as.matrix(df)
    dimnames(num) <- list(NULL, spec$cols)
    tab <- list(num = num, chr = list())
  } else {
    tab <- .kld_read_table(path, col_names = spec$cols, chr_cols = spec$chr, quote = spec$quote,
                           nrows = nrows)
  }
  num <- tab$num
  for (j in names(spec$chr_map)) {
    v <- match(tolower(tab$chr[[j]]), spec$chr_map[[j]])
    if (anyNA(v))
      stop(sprintf("%s: unexpected value '%s' in column '%s'", basename(path),
                   tab$chr[[j]][which(is.na(v))[1L]], j), call. = FALSE)
    num <- cbind(num, v)
    colnames(num)[ncol(num)] <- j
  }
  excl <- c(spec$drop, spec$exclude, tcol, spec$exclude_by[[tname]],
            setdiff(spec$chr, names(spec$chr_map)))
  x <- num[, setdiff(spec$cols, excl), drop = FALSE]
  y <- if (tcol %in% spec$chr) tab$chr[[tcol]] else num[, tcol]
  miss <- !stats::complete.cases(x) | is.na(y)
  na_cols <- character()
  if (any(miss)) {
    na_cols <- c(colnames(x)[colSums(is.na(x)) > 0L], if (anyNA(y)) tcol)
    x <- x[!miss, , drop = FALSE]
    y <- y[!miss]
  }
  list(x = x, y = y, dropped = sum(miss), na_cols = na_cols)
}

#' Read a benchmark dataset
#'
#' Reads one of the benchmark datasets used in the kernlearn papers and vignettes from a data
#' directory, or downloads it from its canonical source into a cache folder.
#'
#' @param name the dataset name, as listed by \code{\link{kl_datasets}} (case-insensitive;
#'   the folder names, e.g. \code{"boston_housing"}, are accepted too).
#' @param dir the data directory: a folder holding one subfolder per dataset, named as in
#'   \code{kl_datasets()$folder}. \code{NULL} (default) uses
#'   \code{getOption("kernlearn.data_dir")}, else the environment variable
#'   \code{KERNLEARN_DATA_DIR}. The download cache is searched after it.
#' @param download \code{TRUE} to download missing files from the canonical source into the
#'   cache folder; by default only in interactive sessions.
#' @param part \code{"all"} (default) for every row, or \code{"train"} / \code{"test"} for
#'   the standard training or test part only (datasets with a standard split only; see
#'   Details). Reading one part of MNIST, covtype or cod-rna is much faster than all.
#' @param target for datasets with more than one target, which one: \code{"Y1"} (default) or
#'   \code{"Y2"} for \code{energy}; \code{"motor_UPDRS"} (default) or \code{"total_UPDRS"} for
#'   \code{parkinsons}; \code{"area"} (default) or \code{"log_area"} (\code{log(1 + area)})
#'   for \code{forest_fires}; \code{"selector"} (default, classification) or \code{"drinks"}
#'   (regression) for \code{bupa}. \code{NULL} takes the default.
#' @param quiet \code{TRUE} to suppress messages (dropped rows, downloads).
#'
#' @return A list of class \code{"kl_dataset"} with \describe{
#'   \item{\code{x}}{a numeric matrix of the features, with the source's attribute names
#'     where it has them (otherwise \code{V1}, \code{V2}, ...); values as stored (MNIST
#'     pixels 0 to 255, no scaling).}
#'   \item{\code{y}}{a factor (classification; levels as coded in the source) or a numeric
#'     vector (regression).}
#'   \item{\code{train}}{integer row indices of the standard training part, or \code{NULL}
#'     when the dataset has no standard split. For \code{part = "train"} all rows, for
#'     \code{part = "test"} \code{integer(0)}.}
#'   \item{\code{name}, \code{task}, \code{target}, \code{part}}{the dataset name, the task
#'     (\code{"classification"} or \code{"regression"}), the target column and the part read.}
#' }
#'
#' @details
#' \strong{Directory.} The data directory is, in order: \code{dir}, the option
#' \code{kernlearn.data_dir}, the environment variable \code{KERNLEARN_DATA_DIR}. A directory
#' that is named but does not exist is an error. The download cache,
#' \code{tools::R_user_dir("kernlearn", "cache")} (or the option
#' \code{kernlearn.cache_dir}), is searched after it. Each dataset's files may be stored
#' gzip-compressed (\code{name.gz}) or as served by the source.
#'
#' \strong{Splits.} Datasets distributed as separate training and test files (mnist 60000 /
#' 10000, pendigits 7494 / 3498, satimage 4435 / 2000, shuttle 43500 / 14500, thyroid
#' 3772 / 3428, cod-rna 59535 / 271617, higgs 7000 / 500) are returned training rows first,
#' with \code{train = 1:n_train}. \code{letter} uses the classic split: the first 16000 rows
#' train, the last 4000 test. \code{covtype} follows the UCI description: rows 1 to 11340 are
#' the training and rows 11341 to 15120 the validation set (2160 rows per class together), so
#' \code{train = 1:15120} and the remaining 565892 rows are the test set; \code{covtype20k}
#' (the first 20000 rows of covtype) uses the same \code{train}. The other datasets have no
#' standard split and \code{train = NULL}.
#'
#' \strong{Cleaning.} Headers that some copies add are detected and skipped, as are a UTF-8
#' byte order mark, CRLF line ends and a missing final newline. Rows with missing values
#' (\code{?}) are dropped with a message: 6 rows of \code{auto_mpg} (horsepower) and 16 of
#' \code{breast_cancer} (bare nuclei). Identifier columns (breast cancer ids, the
#' Parkinsons subject number) and \code{auto_mpg}'s car names are left out of \code{x}; so are
#' the other targets of \code{energy} and \code{parkinsons}. \code{forest_fires}' month and
#' day become numbers (1 = January, 1 = Monday).
#'
#' \strong{Downloads.} With \code{download = TRUE}, missing files are fetched with
#' \code{utils::download.file()} into the cache, in the format the source serves: plain text
#' from the UCI archive and the LIBSVM site, MNIST's gzip files (LeCun's site, with two
#' public mirrors as fallbacks), UCI's \code{.Z} shuttle training file (decompressed with
#' the \code{gzip} program), the CCPP zip archive, the energy and concrete workbooks
#' (\code{.xlsx} and \code{.xls}, read with the readxl package), the California housing
#' archive from L. Torgo's site, the DELVE cpusmall / bank ARFF files from OpenML, the HIGGS subset from the LightGBM repository and Pima from
#' J. Brownlee's dataset collection (UCI has withdrawn it). \code{covtype20k} downloads
#' covtype and reads its first 20000 rows.
#'
#' @examples
#' kl_datasets()[, c("name", "task", "rows", "features")]
#' if (nzchar(Sys.getenv("KERNLEARN_DATA_DIR"))) {
#'   d <- kl_dataset("letter")
#'   dim(d$x)
#'   table(d$y[d$train])
#'   h <- kl_dataset("energy", target = "Y2")
#'   summary(h$y)
#' }
#' @seealso \code{\link{kl_datasets}}, \code{\link{read_libsvm}}, \code{\link{read_idx}},
#'   \code{\link{read_arff}}
#' @export
kl_dataset <- function(name, dir = NULL, download = interactive(),
                       part = c("all", "train", "test"), target = NULL, quiet = FALSE) {
  spec <- .kld_spec(name)
  .check_flag(download, "download")
  .check_flag(quiet, "quiet")
  if (!is.character(part) || !length(part) || is.na(part[1L]))
    stop("'part' must be one of \"all\", \"train\", \"test\"", call. = FALSE)
  part <- part[1L]
  if (!part %in% c("all", "train", "test"))
    stop(sprintf("'part' must be one of \"all\", \"train\", \"test\" (got \"%s\")", part),
         call. = FALSE)
  two_files <- all(c("train", "test") %in% names(spec$files))
  if (part != "all" && !two_files && is.null(spec$n_train))
    stop(sprintf("dataset '%s' has no standard train/test split; use part = \"all\"",
                 spec$name), call. = FALSE)
  # Target.
  if (is.null(spec$targets)) {
    if (!is.null(target) && !identical(target, spec$label))
      stop(sprintf("dataset '%s' has a single target; 'target' must be NULL", spec$name),
           call. = FALSE)
    tname <- spec$label
    tcol <- spec$label
  } else {
    if (is.null(target)) target <- names(spec$targets)[1L]
    if (!is.character(target) || length(target) != 1L || !target %in% names(spec$targets))
      stop(sprintf("'target' for '%s' must be one of %s", spec$name,
                   paste0("\"", names(spec$targets), "\"", collapse = ", ")), call. = FALSE)
    tname <- target
    tcol <- spec$targets[[target]]
  }
  task <- if (is.null(spec$targets)) spec$task else
    if (!is.null(spec$label) && identical(tcol, spec$label)) "classification" else "regression"
  # Files.
  parts <- if (two_files) {
    if (part == "all") c("train", "test") else part
  } else "all"
  locs <- .kld_locations(dir)
  found <- .kld_find(spec, parts, locs)
  if (is.null(found)) {
    if (!download) .kld_not_found(spec, parts, locs)
    cache <- .kld_cache_dir()
    .kld_download(spec, cache, quiet = quiet)
    found <- .kld_find(spec, parts, list(list(path = cache, how = "the download cache")))
    if (is.null(found))
      stop(sprintf("dataset '%s': the download did not produce the expected files", spec$name),
           call. = FALSE)
  }
  rspec <- if (found$nrows > 0L) .kld_specs()[[spec$alt]] else spec
  nrows <- found$nrows
  if (!two_files && part == "train" && !is.null(spec$n_train))
    nrows <- if (nrows > 0L) min(nrows, spec$n_train) else spec$n_train
  pieces <- lapply(found$paths, function(p) .kld_read_part(rspec, p, tcol, tname, nrows))
  dropped <- sum(vapply(pieces, `[[`, 0L, "dropped"))
  if (dropped > 0L && !quiet) {
    na_cols <- unique(unlist(lapply(pieces, `[[`, "na_cols")))
    total <- dropped + sum(vapply(pieces, function(z) length(z$y), 0L))
    message(sprintf("kl_dataset(\"%s\"): dropped %d of %d rows with missing values (in %s)",
                    spec$name, dropped, total, paste(na_cols, collapse = ", ")))
  }
  if (length(pieces) == 1L) {
    x <- pieces[[1L]]$x
    y <- pieces[[1L]]$y
  } else {
    x <- do.call(rbind, lapply(pieces, `[[`, "x"))
    y <- unlist(lapply(pieces, `[[`, "y"), use.names = FALSE)
  }
  n_first <- nrow(pieces[[1L]]$x)
  train <- NULL
  if (two_files) {
    train <- switch(part, all = seq_len(n_first), train = seq_len(nrow(x)), test = integer(0))
  } else if (!is.null(spec$n_train)) {
    if (part == "test") {
      keep <- seq_len(nrow(x)) > spec$n_train
      x <- x[keep, , drop = FALSE]
      y <- y[keep]
      train <- integer(0)
    } else {
      train <- seq_len(min(spec$n_train, nrow(x)))
    }
  }
  if (task == "classification") {
    lab <- as.character(y)
    bad <- which(!lab %in% spec$levels)
    if (length(bad))
      stop(sprintf("dataset '%s': unexpected class label '%s'", spec$name, lab[bad[1L]]),
           call. = FALSE)
    y <- factor(lab, levels = spec$levels)
  } else {
    y <- as.numeric(y)
    if (!is.null(spec$y_fun[[tname]])) y <- spec$y_fun[[tname]](y)
  }
  rownames(x) <- NULL
  structure(list(x = x, y = y, train = train, name = spec$name, task = task, target = tname,
                 part = part),
            class = c("kl_dataset", "list"))
}

#' @rdname kl_dataset
#' @param x a \code{kl_dataset} object.
#' @param ... ignored.
#' @export
print.kl_dataset <- function(x, ...) {
  cat(sprintf("<kl_dataset> %s: %s, %d rows x %d features", x$name, x$task, nrow(x$x),
              ncol(x$x)))
  if (x$task == "classification") {
    cat(sprintf(", %d classes\n", nlevels(x$y)))
  } else {
    cat(sprintf(", target %s\n", x$target))
  }
  if (x$part != "all") {
    cat(sprintf("  part: %s\n", x$part))
  } else if (!is.null(x$train)) {
    cat(sprintf("  train rows 1..%d, test rows %d..%d\n", length(x$train),
                length(x$train) + 1L, nrow(x$x)))
  } else {
    cat("  no standard train/test split\n")
  }
  invisible(x)
}
