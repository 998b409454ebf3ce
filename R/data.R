# Dataset readers: LIBSVM sparse text, IDX (MNIST), ARFF, delimited text, and the benchmark
# collection behind kl_dataset(). Everything here is base R (utils, tools); readxl is used only
# for the legacy Excel file UCI serves for the concrete data.

# ---------------------------------------------------------------------------------------------
# Low-level helpers
# ---------------------------------------------------------------------------------------------

.kld_check_file <- function(file, arg = "file") {
  if (!is.character(file) || length(file) != 1L || is.na(file) || !nzchar(file))
    stop(sprintf("'%s' must be a single file path", arg), call. = FALSE)
  if (!file.exists(file))
    stop(sprintf("'%s': file '%s' does not exist", arg, file), call. = FALSE)
  if (dir.exists(file))
    stop(sprintf("'%s': '%s' is a directory, not a file", arg, file), call. = FALSE)
  invisible(file)
}

.kld_check_flag <- function(x, name) {
  if (!is.logical(x) || length(x) != 1L || is.na(x))
    stop(sprintf("'%s' must be TRUE or FALSE", name), call. = FALSE)
  invisible(x)
}

# Decompresses a Unix 'compress' (.Z) file with gzip, which reads that format.
.kld_uncompress_z <- function(file) {
  gz <- Sys.which("gzip")
  if (!nzchar(gz))
    stop(sprintf("reading '%s' needs the 'gzip' program to decompress the .Z format",
                 basename(file)), call. = FALSE)
  out <- tempfile(fileext = ".txt")
  status <- suppressWarnings(system2(gz, c("-dc", shQuote(file)), stdout = out, stderr = FALSE))
  if (!identical(as.integer(status), 0L) || !file.exists(out))
    stop(sprintf("could not decompress '%s' with gzip", file), call. = FALSE)
  out
}

# All lines of a text file, plain or compressed (gzip, bzip2, xz; .Z through gzip). LF, CRLF
# and CR line ends are all accepted, a missing final newline is fine, and a UTF-8 byte order
# mark at the start is removed.
.kld_read_lines <- function(file, n = -1L) {
  if (grepl("\\.Z$", file)) {
    file <- .kld_uncompress_z(file)
    on.exit(unlink(file), add = TRUE)
  }
  con <- gzfile(file, "rt")
  on.exit(close(con), add = TRUE)
  lines <- readLines(con, n = n, warn = FALSE)
  if (length(lines)) {
    b <- charToRaw(lines[1L])
    if (length(b) >= 3L && identical(b[1:3], as.raw(c(0xef, 0xbb, 0xbf))))
      lines[1L] <- rawToChar(b[-(1:3)])
  }
  # A stray carriage return left by mixed line ends.
  sub("\r$", "", lines)
}

# TRUE where a field is a number or a missing-value marker.
.kld_is_num <- function(s) {
  s <- trimws(s)
  s %in% c("?", "") | !is.na(suppressWarnings(as.numeric(s)))
}

.kld_split_line <- function(line, sep, quote) {
  scan(text = line, what = "", sep = sep, quote = quote, quiet = TRUE, strip.white = TRUE,
       comment.char = "", na.strings = character(), blank.lines.skip = FALSE)
}

# ---------------------------------------------------------------------------------------------
# Delimited text tables
# ---------------------------------------------------------------------------------------------

# Parses delimited lines into list(num = numeric matrix of the numeric columns, chr = list of
# the character columns). `col_names` gives every column of the file; `chr_cols` names those
# kept as text. The separator is a comma when the first lines hold one, otherwise white space
# (spaces or tabs, runs count as one). One trailing comma on every line is dropped (a comma
# ended copy of a space separated file). `header = "auto"` treats the first line as a header
# when its fields differ in kind (number or text) from those of the second line.
.kld_parse_table <- function(lines, lineno = seq_along(lines), col_names, chr_cols = character(),
                             quote = "", header = "auto", nrows = -1L, what = "file") {
  force(lineno)
  ncol <- length(col_names)
  keep <- nzchar(trimws(lines))
  lines <- lines[keep]
  lineno <- lineno[keep]
  if (!length(lines)) stop(sprintf("%s holds no data lines", what), call. = FALSE)
  head_lines <- lines[seq_len(min(5L, length(lines)))]
  if (nzchar(quote)) head_lines <- gsub(sprintf("[%s][^%s]*[%s]", quote, quote, quote), "",
                                         head_lines)
  sep <- if (any(grepl(",", head_lines, fixed = TRUE))) "," else ""
  if (sep == "," && all(grepl(",[[:space:]]*$", lines)))
    lines <- sub(",[[:space:]]*$", "", lines)
  has_header <- FALSE
  if (identical(header, "auto") && length(lines) >= 2L) {
    f1 <- .kld_split_line(lines[1L], sep, quote)
    f2 <- .kld_split_line(lines[2L], sep, quote)
    if (length(f1) == length(f2)) {
      has_header <- any(.kld_is_num(f1) != .kld_is_num(f2))
    } else {
      has_header <- !all(.kld_is_num(f1))
    }
  } else if (isTRUE(header)) {
    has_header <- TRUE
  }
  if (has_header) {
    lines <- lines[-1L]
    lineno <- lineno[-1L]
  }
  if (nrows >= 0L && length(lines) > nrows) {
    lines <- lines[seq_len(nrows)]
    lineno <- lineno[seq_len(nrows)]
  }
  n <- length(lines)
  if (n == 0L) stop(sprintf("%s holds no data lines", what), call. = FALSE)
  tc <- textConnection(lines)
  counts <- tryCatch(utils::count.fields(tc, sep = sep, quote = quote, comment.char = "",
                                         blank.lines.skip = FALSE),
                     finally = close(tc))
  bad <- which(is.na(counts) | counts != ncol)
  if (length(bad)) {
    b <- bad[1L]
    stop(sprintf("%s, line %d: found %s fields, expected %d%s", what, lineno[b],
                 if (is.na(counts[b])) "unbalanced quotes or" else counts[b], ncol,
                 if (length(bad) > 1L) sprintf(" (%d lines differ)", length(bad)) else ""),
         call. = FALSE)
  }
  num_cols <- setdiff(col_names, chr_cols)
  if (!length(chr_cols)) {
    v <- tryCatch(scan(text = lines, what = double(), sep = sep, quote = quote, quiet = TRUE,
                       na.strings = c("?", ""), comment.char = "", strip.white = TRUE),
                  error = function(e) NULL)
    if (!is.null(v) && length(v) == n * ncol) {
      num <- matrix(v, nrow = n, ncol = ncol, byrow = TRUE, dimnames = list(NULL, col_names))
      return(list(num = num, chr = list()))
    }
  }
  # Mixed columns, or a non-numeric value to locate: read as text, convert column by column.
  s <- scan(text = lines, what = "", sep = sep, quote = quote, quiet = TRUE,
            na.strings = character(), comment.char = "", strip.white = TRUE)
  s <- matrix(s, nrow = n, ncol = ncol, byrow = TRUE, dimnames = list(NULL, col_names))
  num <- matrix(NA_real_, n, length(num_cols), dimnames = list(NULL, num_cols))
  for (j in num_cols) {
    col <- trimws(s[, j])
    missing <- col %in% c("?", "")
    val <- suppressWarnings(as.numeric(col))
    wrong <- which(is.na(val) & !missing)
    if (length(wrong))
      stop(sprintf("%s, line %d: column '%s' holds '%s', not a number", what,
                   lineno[wrong[1L]], j, col[wrong[1L]]), call. = FALSE)
    num[, j] <- val
  }
  chr <- lapply(stats::setNames(chr_cols, chr_cols), function(j) trimws(s[, j]))
  list(num = num, chr = chr)
}

# Reads an .xlsx workbook's first sheet into delimited lines (fields quoted) for
# .kld_parse_table(). Only cell values are used: numbers, shared and inline strings.
.kld_xlsx_lines <- function(file) {
  entries <- utils::unzip(file, list = TRUE)$Name
  sheets <- grep("^xl/worksheets/sheet[0-9]+\\.xml$", entries, value = TRUE)
  if (!length(sheets)) stop(sprintf("'%s' holds no worksheet", basename(file)), call. = FALSE)
  sheet <- sheets[order(as.integer(gsub("[^0-9]", "", sheets)))][1L]
  shared <- "xl/sharedStrings.xml"
  td <- tempfile("xlsx")
  dir.create(td)
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  utils::unzip(file, files = c(sheet, intersect(shared, entries)), exdir = td)
  read_xml <- function(f) paste(readLines(file.path(td, f), warn = FALSE, encoding = "UTF-8"),
                                collapse = "\n")
  unescape <- function(s) {
    s <- gsub("&lt;", "<", s, fixed = TRUE)
    s <- gsub("&gt;", ">", s, fixed = TRUE)
    s <- gsub("&quot;", "\"", s, fixed = TRUE)
    s <- gsub("&apos;", "'", s, fixed = TRUE)
    gsub("&amp;", "&", s, fixed = TRUE)
  }
  strings <- character()
  if (shared %in% entries) {
    ss <- read_xml(shared)
    si <- regmatches(ss, gregexpr("<si>.*?</si>|<si/>", ss, perl = TRUE))[[1L]]
    strings <- unescape(gsub("<rPh\\b.*?</rPh>|<[^>]+>", "", si, perl = TRUE))
  }
  xml <- read_xml(sheet)
  cells <- regmatches(xml, gregexpr("<c\\b[^>]*?/>|<c\\b[^>]*?>.*?</c>", xml, perl = TRUE))[[1L]]
  if (!length(cells)) stop(sprintf("the first sheet of '%s' is empty", basename(file)),
                           call. = FALSE)
  tag <- sub("^(<c\\b[^>]*?)/?>.*$", "\\1", cells, perl = TRUE)
  if (!all(grepl("\\br=\"[A-Z]+[0-9]+\"", tag)))
    stop(sprintf("'%s': cells without references are not supported", basename(file)),
         call. = FALSE)
  ref <- sub(".*\\br=\"([A-Z]+[0-9]+)\".*", "\\1", tag)
  type <- ifelse(grepl("\\bt=\"", tag), sub(".*\\bt=\"([a-zA-Z]+)\".*", "\\1", tag), "n")
  has_v <- grepl("<v>", cells, fixed = TRUE)
  val <- ifelse(has_v, sub(".*?<v>(.*?)</v>.*", "\\1", cells, perl = TRUE), "")
  inl <- type == "inlineStr"
  val[inl] <- gsub("<[^>]+>", "", sub(".*?<is>(.*?)</is>.*", "\\1", cells[inl], perl = TRUE))
  val <- unescape(val)
  sst <- type == "s" & has_v
  val[sst] <- strings[as.integer(val[sst]) + 1L]
  val[type == "e"] <- ""
  letters_part <- sub("[0-9]+$", "", ref)
  ul <- unique(letters_part)
  ucol <- vapply(ul, function(ch) {
    k <- utf8ToInt(ch) - 64L
    sum(k * 26^(rev(seq_along(k)) - 1L))
  }, numeric(1))
  col <- ucol[match(letters_part, ul)]
  row <- as.integer(sub("^[A-Z]+", "", ref))
  m <- matrix("", max(row), max(col))
  m[cbind(row, col)] <- val
  nz <- matrix(nzchar(m), nrow(m))
  m <- m[rowSums(nz) > 0L, colSums(nz) > 0L, drop = FALSE]
  .kld_cells_to_lines(m)
}

# Joins a character matrix of cells into comma separated lines, quoting the text cells.
.kld_cells_to_lines <- function(m) {
  text <- !(.kld_is_num(m) & nzchar(m))
  m[text] <- paste0("\"", gsub("\"", "\"\"", m[text]), "\"")
  do.call(paste, c(lapply(seq_len(ncol(m)), function(j) m[, j]), sep = ","))
}

# Reads a legacy .xls workbook (first sheet) into delimited lines; needs readxl.
.kld_xls_lines <- function(file) {
  if (!requireNamespace("readxl", quietly = TRUE))
    stop(sprintf(paste0("reading the Excel file '%s' needs the readxl package: ",
                        "install.packages(\"readxl\")"), basename(file)), call. = FALSE)
  df <- readxl::read_excel(file, sheet = 1L, col_names = FALSE, col_types = "text",
                           .name_repair = "minimal")
  m <- as.matrix(df)
  m[is.na(m)] <- ""
  m <- m[rowSums(matrix(nzchar(m), nrow(m))) > 0L, , drop = FALSE]
  .kld_cells_to_lines(m)
}

# Reads a delimited file (or an Excel workbook, by extension) with .kld_parse_table().
.kld_read_table <- function(file, col_names, chr_cols = character(), quote = "",
                            header = "auto", nrows = -1L) {
  if (grepl("\\.xlsx$", file, ignore.case = TRUE)) {
    lines <- .kld_xlsx_lines(file)
    quote <- "\""
  } else if (grepl("\\.xls$", file, ignore.case = TRUE)) {
    lines <- .kld_xls_lines(file)
    quote <- "\""
  } else {
    lines <- .kld_read_lines(file, n = if (nrows >= 0L) nrows + 100L else -1L)
  }
  .kld_parse_table(lines, col_names = col_names, chr_cols = chr_cols, quote = quote,
                   header = header, nrows = nrows, what = basename(file))
}

# ---------------------------------------------------------------------------------------------
# LIBSVM / SVMlight
# ---------------------------------------------------------------------------------------------

#' Read a LIBSVM / SVMlight sparse data file
#'
#' Reads the sparse text format used by LIBSVM and SVMlight, one example per line:
#' \code{label index:value index:value ...}, and returns a dense matrix, or a sparse one
#' with \code{sparse = TRUE}.
#'
#' @param file path to the file. Files compressed with gzip (\code{.gz}), bzip2 or xz are
#'   read directly.
#' @param n_features number of columns of the returned matrix, or \code{NULL} (default) to use
#'   the largest feature index in the file. Must be at least that index; useful to give a
#'   training and a test file the same columns.
#' @param zero_based \code{TRUE} when feature indices start at 0 instead of 1 (default
#'   \code{FALSE}, the LIBSVM convention). Index 0 in a file read with
#'   \code{zero_based = FALSE} is an error.
#' @param y_factor \code{TRUE} to return the labels as a factor (levels in increasing
#'   numeric order) instead of numbers.
#' @param sparse \code{TRUE} to return \code{x} as a sparse \code{Matrix::dgCMatrix}
#'   (needs the Matrix package); every learner and \code{kernel_matrix()} accept it.
#'
#' @return A list with \describe{
#'   \item{\code{x}}{a dense numeric matrix (or, with \code{sparse = TRUE}, a
#'     \code{dgCMatrix}), one row per example, columns \code{V1} ... \code{Vp}; absent
#'     entries are 0.}
#'   \item{\code{y}}{the labels: a numeric vector, or a factor when \code{y_factor = TRUE}.}
#' }
#'
#' @details Fields are separated by spaces or tabs. Text after \code{#} on a line is a
#'   comment, and SVMlight \code{qid:} tokens are skipped. Blank lines are ignored. LF and
#'   CRLF line ends and a missing final newline are accepted. Indices need not be sorted but
#'   must not repeat within a line. A label that is not a number, a token that is not
#'   \code{index:value} with a whole index and a numeric value, a repeated index, or an index
#'   above \code{n_features} gives an error that names the line. Parsing is vectorised (about
#'   a second per million non-zero entries). A dense result needs \code{8 * rows *
#'   n_features} bytes; a sparse one about 12 bytes per non-zero entry. The learners compute
#'   kernels on dense rows: they convert a sparse \code{x} after checking that the dense
#'   form fits in memory.
#'
#' @examples
#' f <- tempfile(fileext = ".txt")
#' writeLines(c("1 1:0.5 3:2", "-1 2:1.5", "1 1:-1 2:0.25 3:1"), f)
#' d <- read_libsvm(f)
#' d$x
#' d$y
#'
#' # gzip-compressed, zero-based indices, labels as a factor
#' g <- tempfile(fileext = ".gz")
#' con <- gzfile(g, "w")
#' writeLines(c("2 0:1 4:3", "3 1:2"), con)
#' close(con)
#' read_libsvm(g, zero_based = TRUE, y_factor = TRUE)
#' unlink(c(f, g))
#' @export
read_libsvm <- function(file, n_features = NULL, zero_based = FALSE, y_factor = FALSE,
                        sparse = FALSE) {
  .kld_check_file(file)
  .kld_check_flag(sparse, "sparse")
  if (sparse && !requireNamespace("Matrix", quietly = TRUE))
    stop("read_libsvm(): sparse = TRUE needs the Matrix package", call. = FALSE)
  if (!is.null(n_features) &&
      (!is.numeric(n_features) || length(n_features) != 1L || is.na(n_features) ||
       n_features < 1 || n_features != round(n_features)))
    stop("'n_features' must be NULL or a single whole number >= 1", call. = FALSE)
  .kld_check_flag(zero_based, "zero_based")
  .kld_check_flag(y_factor, "y_factor")
  what <- basename(file)
  lines <- .kld_read_lines(file)
  lineno <- seq_along(lines)
  lines <- trimws(sub("#.*$", "", lines))
  keep <- nzchar(lines)
  lines <- lines[keep]
  lineno <- lineno[keep]
  n <- length(lines)
  if (n == 0L) {
    p <- if (is.null(n_features)) 0L else as.integer(n_features)
    x <- if (sparse) Matrix::sparseMatrix(i = integer(), j = integer(), x = numeric(),
                                          dims = c(0L, p),
                                          dimnames = list(NULL, paste0("V", seq_len(p))))
         else matrix(0, 0L, p, dimnames = list(NULL, paste0("V", seq_len(p))))
    return(list(x = x, y = if (y_factor) factor() else numeric()))
  }
  tok <- strsplit(lines, "[[:space:]]+")
  len <- lengths(tok)
  all_tok <- unlist(tok, use.names = FALSE)
  rm(tok)
  first <- cumsum(len) - len + 1L
  lab <- all_tok[first]
  y <- suppressWarnings(as.numeric(lab))
  bad <- which(is.na(y))
  if (length(bad))
    stop(sprintf("%s, line %d: label '%s' is not a number", what, lineno[bad[1L]],
                 lab[bad[1L]]), call. = FALSE)
  ft <- all_tok[-first]
  row <- rep.int(seq_len(n), len - 1L)
  rm(all_tok)
  qid <- startsWith(ft, "qid:")
  if (any(qid)) {
    ft <- ft[!qid]
    row <- row[!qid]
  }
  pos <- regexpr(":", ft, fixed = TRUE)
  idx_s <- substr(ft, 1L, pos - 1L)
  val <- suppressWarnings(as.numeric(substring(ft, pos + 1L)))
  ok <- pos > 1L & grepl("^[0-9]+$", idx_s) & !is.na(val)
  if (!all(ok)) {
    b <- which(!ok)[1L]
    stop(sprintf("%s, line %d: malformed token '%s' (expected index:value)", what,
                 lineno[row[b]], ft[b]), call. = FALSE)
  }
  idx <- as.numeric(idx_s)
  if (zero_based) {
    idx <- idx + 1
  } else if (any(idx == 0)) {
    b <- which(idx == 0)[1L]
    stop(sprintf("%s, line %d: feature index 0 found; use zero_based = TRUE for 0-based indices",
                 what, lineno[row[b]]), call. = FALSE)
  }
  max_idx <- if (length(idx)) max(idx) else 0
  if (is.null(n_features)) {
    p <- max_idx
  } else {
    if (max_idx > n_features) {
      b <- which(idx > n_features)[1L]
      stop(sprintf("%s, line %d: feature index %s exceeds n_features = %d", what,
                   lineno[row[b]], format(idx[b] - zero_based), as.integer(n_features)),
           call. = FALSE)
    }
    p <- n_features
  }
  if (!sparse && as.numeric(n) * p > .Machine$integer.max)
    stop(sprintf("%s: a dense %d x %s matrix is too large (use sparse = TRUE)", what, n,
                 format(p)), call. = FALSE)
  dup <- duplicated(row * (max_idx + 1) + idx)
  if (any(dup)) {
    b <- which(dup)[1L]
    stop(sprintf("%s, line %d: feature index %s appears twice", what, lineno[row[b]],
                 format(idx[b] - zero_based)), call. = FALSE)
  }
  p <- as.integer(p)
  if (sparse) {
    x <- Matrix::sparseMatrix(i = row, j = as.integer(idx), x = val, dims = c(n, p),
                              dimnames = list(NULL, paste0("V", seq_len(p))))
  } else {
    x <- matrix(0, n, p, dimnames = list(NULL, paste0("V", seq_len(p))))
    if (length(idx)) x[cbind(row, as.integer(idx))] <- val
  }
  if (y_factor) y <- factor(y)
  list(x = x, y = y)
}

# ---------------------------------------------------------------------------------------------
# IDX (MNIST)
# ---------------------------------------------------------------------------------------------

#' Read an IDX file (the MNIST format)
#'
#' Reads the IDX binary format of LeCun's MNIST files: a big-endian header (a magic number
#' that gives the element type and the number of dimensions, then the size of each
#' dimension) followed by the values in row-major order.
#'
#' @param file path to the file, plain or gzip-compressed.
#' @param magic \code{NULL} (default) to accept any valid IDX file, or the magic number the
#'   file must have, e.g. \code{2051} for MNIST images (unsigned bytes, 3 dimensions) and
#'   \code{2049} for MNIST labels (unsigned bytes, 1 dimension).
#'
#' @return For a one-dimensional file, a numeric vector. Otherwise a numeric matrix with one
#'   row per item (the first dimension) and the remaining dimensions flattened in row-major
#'   order: for MNIST images, a \code{n x 784} matrix whose columns run through each 28 x 28
#'   image row by row, with pixel values 0 to 255. The attribute \code{"idx_dim"} holds the
#'   dimensions from the header.
#'
#' @details Element types 0x08 (unsigned byte), 0x09 (signed byte), 0x0B (16-bit integer),
#'   0x0C (32-bit integer), 0x0D (32-bit float) and 0x0E (64-bit float) are read. An error is
#'   given when the first two bytes are not zero, the type is unknown, the magic number is
#'   not the one asked for, the file ends early, or bytes follow the data.
#'
#' @examples
#' # a tiny file of two 2 x 3 "images"
#' f <- tempfile(fileext = ".idx3-ubyte")
#' con <- file(f, "wb")
#' writeBin(as.raw(c(0, 0, 8, 3)), con)
#' writeBin(c(2L, 2L, 3L), con, size = 4, endian = "big")
#' writeBin(as.raw(0:11), con)
#' close(con)
#' read_idx(f, magic = 2051)
#' unlink(f)
#' @export
read_idx <- function(file, magic = NULL) {
  .kld_check_file(file)
  if (!is.null(magic) && (!is.numeric(magic) || length(magic) != 1L || is.na(magic)))
    stop("'magic' must be NULL or a single number", call. = FALSE)
  what <- basename(file)
  con <- gzfile(file, "rb")
  on.exit(close(con))
  head <- readBin(con, "raw", 4L)
  if (length(head) < 4L || head[1L] != as.raw(0) || head[2L] != as.raw(0))
    stop(sprintf("%s is not an IDX file (bad magic number)", what), call. = FALSE)
  code <- as.integer(head[3L])
  ndim <- as.integer(head[4L])
  found <- code * 256L + ndim
  if (!is.null(magic) && found != magic)
    stop(sprintf("%s: magic number %d, expected %d", what, found, as.integer(magic)),
         call. = FALSE)
  types <- list("8" = list("integer", 1L, FALSE), "9" = list("integer", 1L, TRUE),
                "11" = list("integer", 2L, TRUE), "12" = list("integer", 4L, TRUE),
                "13" = list("double", 4L, TRUE), "14" = list("double", 8L, TRUE))
  ty <- types[[as.character(code)]]
  if (is.null(ty))
    stop(sprintf("%s: unknown IDX element type 0x%02X", what, code), call. = FALSE)
  if (ndim < 1L) stop(sprintf("%s: IDX header gives no dimensions", what), call. = FALSE)
  dims <- readBin(con, "integer", n = ndim, size = 4L, endian = "big")
  if (length(dims) < ndim || any(dims < 0L))
    stop(sprintf("%s: truncated or invalid IDX header", what), call. = FALSE)
  total <- prod(as.numeric(dims))
  if (total > .Machine$integer.max)
    stop(sprintf("%s: too many values (%s)", what, format(total)), call. = FALSE)
  v <- readBin(con, ty[[1L]], n = total, size = ty[[2L]], signed = ty[[3L]], endian = "big")
  if (length(v) < total)
    stop(sprintf("%s: file ends after %d of %s values", what, length(v), format(total)),
         call. = FALSE)
  if (length(readBin(con, "raw", 1L)))
    stop(sprintf("%s: unexpected bytes after the %s values", what, format(total)), call. = FALSE)
  storage.mode(v) <- "double"
  out <- if (ndim == 1L) v else matrix(v, nrow = dims[1L], byrow = TRUE)
  attr(out, "idx_dim") <- dims
  out
}

# ---------------------------------------------------------------------------------------------
# ARFF
# ---------------------------------------------------------------------------------------------

#' Read a WEKA ARFF file
#'
#' Parses the header (\code{@relation}, \code{@attribute}) and the \code{@data} section of a
#' dense ARFF file.
#'
#' @param file path to the file, plain or compressed (gzip, bzip2, xz).
#'
#' @return A data frame with one column per attribute, named as in the file: numeric
#'   attributes (\code{numeric}, \code{real}, \code{integer}) as numbers, nominal attributes
#'   (\code{\{a, b, ...\}}) as factors with the declared levels, \code{string} and
#'   \code{date} attributes as character. \code{?} marks a missing value (\code{NA}). The
#'   relation name is kept in the attribute \code{"relation"}.
#'
#' @details Lines starting with \code{\%} are comments. Values are separated by commas and
#'   may be quoted with single or double quotes. Keywords are not case-sensitive. Sparse
#'   ARFF (\code{\{index value, ...\}} rows) and relational attributes are not supported and
#'   give an error, as do a row with the wrong number of values, a non-numeric value of a
#'   numeric attribute and an undeclared nominal value (each naming the line).
#'
#' @examples
#' f <- tempfile(fileext = ".arff")
#' writeLines(c("% a tiny example", "@relation tiny",
#'              "@attribute width numeric", "@attribute 'colour name' {red, blue}",
#'              "@attribute y real", "@data",
#'              "1.5, red, 3", "2.0, blue, ?"), f)
#' read_arff(f)
#' unlink(f)
#' @export
read_arff <- function(file) {
  .kld_check_file(file)
  what <- basename(file)
  lines <- .kld_read_lines(file)
  lineno <- seq_along(lines)
  trimmed <- trimws(lines)
  keep <- nzchar(trimmed) & !startsWith(trimmed, "%")
  lines <- trimmed[keep]
  lineno <- lineno[keep]
  at_data <- which(grepl("^@data\\b", lines, ignore.case = TRUE))
  if (!length(at_data)) stop(sprintf("%s: no @data section", what), call. = FALSE)
  at_data <- at_data[1L]
  hdr <- lines[seq_len(at_data - 1L)]
  rel <- grep("^@relation\\b", hdr, ignore.case = TRUE, value = TRUE)
  relation <- if (length(rel)) trimws(sub("^@relation[[:space:]]*", "", rel[1L],
                                          ignore.case = TRUE)) else ""
  att_i <- grep("^@attribute\\b", hdr, ignore.case = TRUE)
  if (!length(att_i)) stop(sprintf("%s: no @attribute declarations", what), call. = FALSE)
  unquote <- function(s) sub("^(['\"])(.*)\\1$", "\\2", trimws(s))
  names_ <- character(length(att_i))
  kinds <- character(length(att_i))
  levels_ <- vector("list", length(att_i))
  for (k in seq_along(att_i)) {
    rest <- sub("^@attribute[[:space:]]+", "", hdr[att_i[k]], ignore.case = TRUE)
    if (grepl("^['\"]", rest)) {
      qch <- substr(rest, 1L, 1L)
      end <- regexpr(qch, substring(rest, 2L), fixed = TRUE)
      if (end < 0L) stop(sprintf("%s, line %d: unbalanced quote in attribute name", what,
                                 lineno[att_i[k]]), call. = FALSE)
      names_[k] <- substr(rest, 2L, end)
      type <- trimws(substring(rest, end + 2L))
    } else {
      names_[k] <- sub("[[:space:]{].*$", "", rest)
      type <- trimws(substring(rest, nchar(names_[k]) + 1L))
    }
    ltype <- tolower(type)
    if (startsWith(type, "{")) {
      inner <- sub("^\\{(.*)\\}$", "\\1", type)
      kinds[k] <- "nominal"
      levels_[[k]] <- unquote(strsplit(inner, ",", fixed = TRUE)[[1L]])
    } else if (ltype %in% c("numeric", "real", "integer")) {
      kinds[k] <- "numeric"
    } else if (ltype == "string" || startsWith(ltype, "date")) {
      kinds[k] <- "character"
    } else {
      stop(sprintf("%s, line %d: attribute type '%s' is not supported", what,
                   lineno[att_i[k]], type), call. = FALSE)
    }
  }
  data <- lines[-seq_len(at_data)]
  dline <- lineno[-seq_len(at_data)]
  p <- length(names_)
  if (!length(data)) {
    out <- as.data.frame(stats::setNames(lapply(kinds, function(k) {
      switch(k, numeric = numeric(), character = character(), factor())
    }), names_), stringsAsFactors = FALSE)
    attr(out, "relation") <- relation
    return(out)
  }
  if (any(startsWith(data, "{")))
    stop(sprintf("%s, line %d: sparse ARFF rows are not supported", what,
                 dline[which(startsWith(data, "{"))[1L]]), call. = FALSE)
  tc <- textConnection(data)
  counts <- tryCatch(utils::count.fields(tc, sep = ",", quote = "\"'", comment.char = "",
                                         blank.lines.skip = FALSE),
                     finally = close(tc))
  bad <- which(is.na(counts) | counts != p)
  if (length(bad))
    stop(sprintf("%s, line %d: found %s values, expected %d", what, dline[bad[1L]],
                 if (is.na(counts[bad[1L]])) "unbalanced quotes or" else counts[bad[1L]], p),
         call. = FALSE)
  s <- scan(text = data, what = "", sep = ",", quote = "\"'", quiet = TRUE, strip.white = TRUE,
            na.strings = character(), comment.char = "")
  s <- matrix(s, ncol = p, byrow = TRUE)
  cols <- vector("list", p)
  for (k in seq_len(p)) {
    v <- s[, k]
    miss <- v == "?"
    if (kinds[k] == "numeric") {
      num <- suppressWarnings(as.numeric(v))
      wrong <- which(is.na(num) & !miss)
      if (length(wrong))
        stop(sprintf("%s, line %d: attribute '%s' holds '%s', not a number", what,
                     dline[wrong[1L]], names_[k], v[wrong[1L]]), call. = FALSE)
      cols[[k]] <- num
    } else if (kinds[k] == "nominal") {
      wrong <- which(!miss & !(v %in% levels_[[k]]))
      if (length(wrong))
        stop(sprintf("%s, line %d: attribute '%s' holds '%s', not one of its declared values",
                     what, dline[wrong[1L]], names_[k], v[wrong[1L]]), call. = FALSE)
      v[miss] <- NA
      cols[[k]] <- factor(v, levels = levels_[[k]])
    } else {
      v[miss] <- NA
      cols[[k]] <- v
    }
  }
  names(cols) <- names_
  out <- as.data.frame(cols, stringsAsFactors = FALSE, optional = TRUE)
  names(out) <- names_
  attr(out, "relation") <- relation
  out
}

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
  mk <- function(...) {
    s <- list(...)
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
  lv <- function(x) as.character(x)
  s <- list(
    mnist = mk(name = "mnist", folder = "mnist", title = "MNIST handwritten digits",
      task = "classification", format = "idx", rows = 70000L, features = 784L,
      source = "http://yann.lecun.com/exdb/mnist/",
      files = list(train = list(images = c("train-images-idx3-ubyte.gz",
                                            "train-images-idx3-ubyte",
                                            "train-images.idx3-ubyte"),
                                labels = c("train-labels-idx1-ubyte.gz",
                                           "train-labels-idx1-ubyte",
                                           "train-labels.idx1-ubyte")),
                   test = list(images = c("t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte",
                                          "t10k-images.idx3-ubyte"),
                               labels = c("t10k-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte",
                                          "t10k-labels.idx1-ubyte"))),
      levels = lv(0:9),
      downloads = lapply(mnist_files, function(f) .kld_dl(f, paste0(mnist_base, f))),
      notes = "train/test 60000/10000; pixels 0-255"),
    letter = mk(name = "letter", folder = "letter", title = "Letter Recognition",
      task = "classification", rows = 20000L, features = 16L,
      source = "https://archive.ics.uci.edu/ml/datasets/Letter+Recognition",
      files = list(all = c("letter-recognition.data.gz", "letter-recognition.data")),
      cols = c("lettr", "x_box", "y_box", "width", "high", "onpix", "x_bar", "y_bar", "x2bar",
               "y2bar", "xybar", "x2ybar", "xy2bar", "x_ege", "xegvy", "y_ege", "yegvx"),
      chr = "lettr", label = "lettr", levels = LETTERS, n_train = 16000L,
      downloads = list(.kld_dl("letter-recognition.data",
                               paste0(.kld_uci, "letter-recognition/letter-recognition.data"))),
      notes = "train = first 16000 rows"),
    covtype = mk(name = "covtype", folder = "covtype", title = "Forest Covertype (full)",
      task = "classification", rows = 581012L, features = 54L,
      source = "https://archive.ics.uci.edu/ml/datasets/Covertype",
      files = list(all = c("covtype.data.gz", "covtype.data")),
      cols = covtype_cols, label = "Cover_Type", levels = lv(1:7), n_train = 15120L,
      downloads = covtype_dl, notes = "train = rows 1..15120 (UCI train + validation)"),
    covtype20k = mk(name = "covtype20k", folder = "covtype_subset20k",
      title = "Forest Covertype, first 20000 rows", task = "classification", rows = 20000L,
      features = 54L, source = "https://archive.ics.uci.edu/ml/datasets/Covertype",
      files = list(all = c("covtype.20k.data.gz", "covtype.20k.data")),
      cols = covtype_cols, label = "Cover_Type", levels = lv(1:7), n_train = 15120L,
      alt = "covtype", alt_rows = 20000L, downloads = covtype_dl,
      notes = "train = rows 1..15120; rows 1..20000 of covtype"),
    ccpp = mk(name = "ccpp", folder = "ccpp", title = "Combined Cycle Power Plant",
      task = "regression", rows = 9568L, features = 4L,
      source = "https://archive.ics.uci.edu/ml/datasets/Combined+Cycle+Power+Plant",
      files = list(all = c("CCPP_Folds5x2_pp_Sheet1.csv.gz", "CCPP_Folds5x2_pp_Sheet1.csv",
                           "Folds5x2_pp.xlsx")),
      cols = c("AT", "V", "AP", "RH", "PE"), targets = c(PE = "PE"),
      downloads = list(.kld_dl("Folds5x2_pp.xlsx", paste0(.kld_uci, "00294/CCPP.zip"),
                               type = "zip", members = "Folds5x2_pp\\.xlsx$")),
      notes = "target PE"),
    magic = mk(name = "magic", folder = "magic", title = "MAGIC Gamma Telescope",
      task = "classification", rows = 19020L, features = 10L,
      source = "https://archive.ics.uci.edu/ml/datasets/MAGIC+Gamma+Telescope",
      files = list(all = c("magic04.data.gz", "magic04.data")),
      cols = c("fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long",
               "fM3Trans", "fAlpha", "fDist", "class"),
      chr = "class", label = "class", levels = c("g", "h"),
      downloads = list(.kld_dl("magic04.data", paste0(.kld_uci, "magic/magic04.data")))),
    pendigits = mk(name = "pendigits", folder = "pendigits",
      title = "Pen-Based Recognition of Handwritten Digits", task = "classification",
      rows = 10992L, features = 16L,
      source = "https://archive.ics.uci.edu/ml/datasets/Pen-Based+Recognition+of+Handwritten+Digits",
      files = list(train = c("pendigits.tra.gz", "pendigits.tra"),
                   test = c("pendigits.tes.gz", "pendigits.tes")),
      cols = c(paste0(rep(c("x", "y"), 8), rep(1:8, each = 2)), "digit"),
      label = "digit", levels = lv(0:9),
      downloads = list(.kld_dl("pendigits.tra", paste0(.kld_uci, "pendigits/pendigits.tra")),
                       .kld_dl("pendigits.tes", paste0(.kld_uci, "pendigits/pendigits.tes"))),
      notes = "train/test 7494/3498"),
    satimage = mk(name = "satimage", folder = "satimage",
      title = "Statlog (Landsat Satellite)", task = "classification", rows = 6435L,
      features = 36L,
      source = "https://archive.ics.uci.edu/ml/datasets/Statlog+(Landsat+Satellite)",
      files = list(train = c("sat.trn.gz", "sat.trn"), test = c("sat.tst.gz", "sat.tst")),
      cols = c(sprintf("p%d_b%d", rep(1:9, each = 4), rep(1:4, 9)), "class"),
      label = "class", levels = lv(c(1:5, 7)),
      downloads = list(.kld_dl("sat.trn", paste0(.kld_uci, "statlog/satimage/sat.trn")),
                       .kld_dl("sat.tst", paste0(.kld_uci, "statlog/satimage/sat.tst"))),
      notes = "train/test 4435/2000; no class 6"),
    shuttle = mk(name = "shuttle", folder = "shuttle", title = "Statlog (Shuttle)",
      task = "classification", rows = 58000L, features = 9L,
      source = "https://archive.ics.uci.edu/ml/datasets/Statlog+(Shuttle)",
      files = list(train = c("shuttle.trn.gz", "shuttle.trn", "shuttle.trn.Z"),
                   test = c("shuttle.tst.gz", "shuttle.tst")),
      cols = c(V(9), "class"), label = "class", levels = lv(1:7),
      downloads = list(.kld_dl("shuttle.trn", paste0(.kld_uci, "statlog/shuttle/shuttle.trn.Z"),
                               type = "Z"),
                       .kld_dl("shuttle.tst", paste0(.kld_uci, "statlog/shuttle/shuttle.tst"))),
      notes = "train/test 43500/14500"),
    thyroid = mk(name = "thyroid", folder = "thyroid", title = "Thyroid (ann-thyroid)",
      task = "classification", rows = 7200L, features = 21L,
      source = "https://archive.ics.uci.edu/ml/datasets/Thyroid+Disease",
      files = list(train = c("ann-train.data.gz", "ann-train.data"),
                   test = c("ann-test.data.gz", "ann-test.data")),
      cols = c(V(21), "class"), label = "class", levels = lv(1:3),
      downloads = list(.kld_dl("ann-train.data", paste0(.kld_uci, "thyroid-disease/ann-train.data")),
                       .kld_dl("ann-test.data", paste0(.kld_uci, "thyroid-disease/ann-test.data"))),
      notes = "train/test 3772/3428"),
    cadata = mk(name = "cadata", folder = "cadata_california_housing",
      title = "California Housing (LIBSVM cadata)", task = "regression", rows = 20640L,
      features = 8L, source = "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
      files = list(all = c("cal_housing.data.gz", "cal_housing.data")),
      cols = c("longitude", "latitude", "housingMedianAge", "totalRooms", "totalBedrooms",
               "population", "households", "medianIncome", "medianHouseValue"),
      targets = c(medianHouseValue = "medianHouseValue"),
      downloads = list(.kld_dl("cal_housing.data",
                               "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.tgz",
                               type = "tgz", members = "cal_housing\\.data$")),
      notes = "target medianHouseValue"),
    cpusmall = mk(name = "cpusmall", folder = "cpusmall",
      title = "cpusmall (DELVE comp-activ cpu_small)", task = "regression", rows = 8192L,
      features = 12L, format = "arff",
      source = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/regression.html#cpusmall",
      files = list(all = c("cpu_small.arff.gz", "cpu_small.arff")),
      cols = c("lread", "lwrite", "scall", "sread", "swrite", "fork", "exec", "rchar",
               "wchar", "runqsz", "freemem", "freeswap", "usr"),
      targets = c(usr = "usr"),
      downloads = list(.kld_dl("cpu_small.arff",
                               c("https://www.openml.org/data/download/3664/dataset_2213_cpu_small.arff",
                                 "227"), type = "openml")),
      notes = "target usr"),
    bank8fm = mk(name = "bank8fm", folder = "bank", title = "Bank 8FM (DELVE)",
      task = "regression", rows = 8192L, features = 8L, format = "arff",
      source = "https://www.dcc.fc.up.pt/~ltorgo/Regression/bank.html",
      files = list(all = c("bank8FM.arff.gz", "bank8FM.arff")),
      cols = c("a1cx", "a1cy", "b2x", "b2y", "a2pop", "a3pop", "temp", "mxql", "rej"),
      targets = c(rej = "rej"),
      downloads = list(.kld_dl("bank8FM.arff", "572", type = "openml")),
      notes = "target rej"),
    bank32nh = mk(name = "bank32nh", folder = "bank", title = "Bank 32nh (DELVE)",
      task = "regression", rows = 8192L, features = 32L, format = "arff",
      source = "https://www.dcc.fc.up.pt/~ltorgo/Regression/bank.html",
      files = list(all = c("bank32NH.arff.gz", "bank32NH.arff", "bank32nh.arff")),
      cols = c(paste0(rep(c("a1", "a2", "a3"), each = 6),
                      rep(c("cx", "cy", "sx", "sy", "rho", "pop"), 3)), "temp",
               paste0(rep(c("b1", "b2", "b3"), each = 4), rep(c("x", "y", "call", "eff"), 3)),
               "mxql", "rej"),
      targets = c(rej = "rej"),
      downloads = list(.kld_dl("bank32NH.arff", "558", type = "openml")),
      notes = "target rej"),
    `cod-rna` = mk(name = "cod-rna", folder = "cod-rna", title = "cod-rna (LIBSVM)",
      task = "classification", rows = 331152L, features = 8L, format = "libsvm",
      source = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#cod-rna",
      files = list(train = c("cod-rna.gz", "cod-rna"), test = c("cod-rna.t.gz", "cod-rna.t")),
      levels = c("-1", "1"),
      downloads = list(.kld_dl("cod-rna", paste0(.kld_libsvm, "binary/cod-rna")),
                       .kld_dl("cod-rna.t", paste0(.kld_libsvm, "binary/cod-rna.t"))),
      notes = "train/test 59535/271617"),
    higgs = mk(name = "higgs", folder = "higgs_subset", title = "HIGGS subset (LightGBM example)",
      task = "classification", rows = 7500L, features = 28L,
      source = "https://archive.ics.uci.edu/ml/datasets/HIGGS",
      files = list(train = c("binary.train.gz", "binary.train"),
                   test = c("binary.test.gz", "binary.test")),
      cols = c("label", higgs_cols), label = "label", levels = c("0", "1"),
      downloads = list(
        .kld_dl("binary.train", paste0("https://raw.githubusercontent.com/microsoft/LightGBM/",
                                       "master/examples/binary_classification/binary.train")),
        .kld_dl("binary.test", paste0("https://raw.githubusercontent.com/microsoft/LightGBM/",
                                      "master/examples/binary_classification/binary.test"))),
      notes = "subset: train/test 7000/500"),
    forest_fires = mk(name = "forest_fires", folder = "forest_fires", title = "Forest Fires",
      task = "regression", rows = 517L, features = 12L,
      source = "https://archive.ics.uci.edu/ml/datasets/Forest+Fires",
      files = list(all = c("forestfires.csv.gz", "forestfires.csv")),
      cols = c("X", "Y", "month", "day", "FFMC", "DMC", "DC", "ISI", "temp", "RH", "wind",
               "rain", "area"),
      chr = c("month", "day"),
      chr_map = list(month = c("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                               "oct", "nov", "dec"),
                     day = c("mon", "tue", "wed", "thu", "fri", "sat", "sun")),
      targets = c(area = "area", log_area = "area"), y_fun = list(log_area = log1p),
      downloads = list(.kld_dl("forestfires.csv", paste0(.kld_uci, "forest-fires/forestfires.csv"))),
      notes = "target area or log_area = log(1 + area)"),
    concrete = mk(name = "concrete", folder = "concrete",
      title = "Concrete Compressive Strength", task = "regression", rows = 1030L,
      features = 8L,
      source = "https://archive.ics.uci.edu/ml/datasets/Concrete+Compressive+Strength",
      files = list(all = c("Concrete_Data.csv.gz", "Concrete_Data.csv", "Concrete_Data.xls")),
      cols = c("Cement", "Blast_Furnace_Slag", "FlyAsh", "Water", "Superplasticizer",
               "Coarse_Aggregate", "Fine_Aggregate", "Age", "strength"),
      targets = c(strength = "strength"),
      downloads = list(.kld_dl("Concrete_Data.xls",
                               paste0(.kld_uci, "concrete/compressive/Concrete_Data.xls"))),
      notes = "target strength"),
    yacht = mk(name = "yacht", folder = "yacht", title = "Yacht Hydrodynamics",
      task = "regression", rows = 308L, features = 6L,
      source = "https://archive.ics.uci.edu/ml/datasets/Yacht+Hydrodynamics",
      files = list(all = c("yacht_hydrodynamics.data.gz", "yacht_hydrodynamics.data")),
      cols = c("LC", "PC", "LD", "BD", "LB", "Fr", "Rr"), targets = c(Rr = "Rr"),
      downloads = list(.kld_dl("yacht_hydrodynamics.data",
                               paste0(.kld_uci, "00243/yacht_hydrodynamics.data"))),
      notes = "target Rr (residuary resistance)"),
    auto_mpg = mk(name = "auto_mpg", folder = "auto_mpg", title = "Auto MPG",
      task = "regression", rows = 392L, features = 7L,
      source = "https://archive.ics.uci.edu/ml/datasets/Auto+MPG",
      files = list(all = c("auto-mpg.data.gz", "auto-mpg.data")),
      cols = c("mpg", "cylinders", "displacement", "horsepower", "weight", "acceleration",
               "model_year", "origin", "car_name"),
      chr = "car_name", quote = "\"", drop = "car_name", targets = c(mpg = "mpg"),
      downloads = list(.kld_dl("auto-mpg.data", paste0(.kld_uci, "auto-mpg/auto-mpg.data"))),
      notes = "target mpg; 6 rows with missing horsepower dropped"),
    boston = mk(name = "boston", folder = "boston_housing", title = "Boston Housing",
      task = "regression", rows = 506L, features = 13L,
      source = "https://archive.ics.uci.edu/ml/machine-learning-databases/housing/",
      files = list(all = c("housing.data.gz", "housing.data")),
      cols = c("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX",
               "PTRATIO", "B", "LSTAT", "MEDV"),
      targets = c(MEDV = "MEDV"),
      downloads = list(.kld_dl("housing.data",
                               c(paste0(.kld_uci, "housing/housing.data"),
                                 "https://raw.githubusercontent.com/jbrownlee/Datasets/master/housing.data"))),
      notes = "target MEDV"),
    energy = mk(name = "energy", folder = "energy_efficiency", title = "Energy Efficiency",
      task = "regression", rows = 768L, features = 8L,
      source = "https://archive.ics.uci.edu/ml/datasets/Energy+efficiency",
      files = list(all = c("ENB2012_data.csv.gz", "ENB2012_data.csv", "ENB2012_data.xlsx")),
      cols = c(paste0("X", 1:8), "Y1", "Y2"), exclude = c("Y1", "Y2"),
      targets = c(Y1 = "Y1", Y2 = "Y2"),
      downloads = list(.kld_dl("ENB2012_data.xlsx", paste0(.kld_uci, "00242/ENB2012_data.xlsx"))),
      notes = "target Y1 (heating) or Y2 (cooling)"),
    bupa = mk(name = "bupa", folder = "bupa_liver", title = "BUPA Liver Disorders",
      task = "classification", rows = 345L, features = 6L,
      source = "https://archive.ics.uci.edu/ml/datasets/Liver+Disorders",
      files = list(all = c("bupa.data.gz", "bupa.data")),
      cols = c("mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks", "selector"),
      targets = c(selector = "selector", drinks = "drinks"),
      label = "selector", levels = lv(1:2), exclude_by = list(drinks = "selector"),
      downloads = list(.kld_dl("bupa.data", paste0(.kld_uci, "liver-disorders/bupa.data"))),
      notes = "target selector (class) or drinks (regression)"),
    breast_cancer = mk(name = "breast_cancer", folder = "breast_cancer_wisconsin",
      title = "Breast Cancer Wisconsin (Original)", task = "classification", rows = 683L,
      features = 9L,
      source = "https://archive.ics.uci.edu/ml/datasets/Breast+Cancer+Wisconsin+(Original)",
      files = list(all = c("breast-cancer-wisconsin.data.gz", "breast-cancer-wisconsin.data")),
      cols = c("id", "clump_thickness", "cell_size_uniformity", "cell_shape_uniformity",
               "marginal_adhesion", "epithelial_cell_size", "bare_nuclei", "bland_chromatin",
               "normal_nucleoli", "mitoses", "class"),
      drop = "id", label = "class", levels = c("2", "4"),
      downloads = list(.kld_dl("breast-cancer-wisconsin.data",
                               paste0(.kld_uci, "breast-cancer-wisconsin/breast-cancer-wisconsin.data"))),
      notes = "2 benign / 4 malignant; 16 rows with missing bare_nuclei dropped"),
    wdbc = mk(name = "wdbc", folder = "breast_cancer_wisconsin",
      title = "Breast Cancer Wisconsin (Diagnostic)", task = "classification", rows = 569L,
      features = 30L,
      source = "https://archive.ics.uci.edu/ml/datasets/Breast+Cancer+Wisconsin+(Diagnostic)",
      files = list(all = c("wdbc.data.gz", "wdbc.data")),
      cols = c("id", "diagnosis", paste0(rep(wdbc_feat, 3),
                                         rep(c("_mean", "_se", "_worst"), each = 10))),
      chr = "diagnosis", drop = "id", label = "diagnosis", levels = c("B", "M"),
      downloads = list(.kld_dl("wdbc.data", paste0(.kld_uci, "breast-cancer-wisconsin/wdbc.data"))),
      notes = "B benign / M malignant"),
    heart = mk(name = "heart", folder = "statlog_heart", title = "Statlog (Heart)",
      task = "classification", rows = 270L, features = 13L,
      source = "https://archive.ics.uci.edu/ml/datasets/Statlog+(Heart)",
      files = list(all = c("heart.dat.gz", "heart.dat")),
      cols = c("age", "sex", "chest_pain", "resting_bp", "cholesterol", "fasting_blood_sugar",
               "resting_ecg", "max_heart_rate", "exercise_angina", "oldpeak", "slope",
               "major_vessels", "thal", "class"),
      label = "class", levels = lv(1:2),
      downloads = list(.kld_dl("heart.dat", paste0(.kld_uci, "statlog/heart/heart.dat"))),
      notes = "1 absence / 2 presence"),
    pima = mk(name = "pima", folder = "pima", title = "Pima Indians Diabetes",
      task = "classification", rows = 768L, features = 8L,
      source = "https://archive.ics.uci.edu/ml/datasets/Pima+Indians+Diabetes",
      files = list(all = c("pima-indians-diabetes.data.gz", "pima-indians-diabetes.data",
                           "pima-indians-diabetes.data.csv")),
      cols = c("pregnant", "glucose", "pressure", "triceps", "insulin", "mass", "pedigree",
               "age", "diabetes"),
      label = "diabetes", levels = lv(0:1),
      downloads = list(.kld_dl("pima-indians-diabetes.data",
                               "https://raw.githubusercontent.com/jbrownlee/Datasets/master/pima-indians-diabetes.data.csv")),
      notes = "zeros in glucose, pressure, ... are kept as stored"),
    ionosphere = mk(name = "ionosphere", folder = "ionosphere", title = "Ionosphere",
      task = "classification", rows = 351L, features = 34L,
      source = "https://archive.ics.uci.edu/ml/datasets/Ionosphere",
      files = list(all = c("ionosphere.data.gz", "ionosphere.data")),
      cols = c(V(34), "class"), chr = "class", label = "class", levels = c("b", "g"),
      downloads = list(.kld_dl("ionosphere.data", paste0(.kld_uci, "ionosphere/ionosphere.data")))),
    sonar = mk(name = "sonar", folder = "sonar", title = "Sonar (Mines vs. Rocks)",
      task = "classification", rows = 208L, features = 60L,
      source = "https://archive.ics.uci.edu/ml/datasets/Connectionist+Bench+(Sonar,+Mines+vs.+Rocks)",
      files = list(all = c("sonar.all-data.gz", "sonar.all-data")),
      cols = c(V(60), "class"), chr = "class", label = "class", levels = c("M", "R"),
      downloads = list(.kld_dl("sonar.all-data",
                               paste0(.kld_uci, "undocumented/connectionist-bench/sonar/sonar.all-data")))),
    parkinsons = mk(name = "parkinsons", folder = "parkinsons_telemonitoring",
      title = "Parkinsons Telemonitoring", task = "regression", rows = 5875L, features = 19L,
      source = "https://archive.ics.uci.edu/ml/datasets/Parkinsons+Telemonitoring",
      files = list(all = c("parkinsons_updrs.data.gz", "parkinsons_updrs.data")),
      cols = c("subject", "age", "sex", "test_time", "motor_UPDRS", "total_UPDRS",
               "Jitter_pct", "Jitter_Abs", "Jitter_RAP", "Jitter_PPQ5", "Jitter_DDP",
               "Shimmer", "Shimmer_dB", "Shimmer_APQ3", "Shimmer_APQ5", "Shimmer_APQ11",
               "Shimmer_DDA", "NHR", "HNR", "RPDE", "DFA", "PPE"),
      drop = "subject", exclude = c("motor_UPDRS", "total_UPDRS"),
      targets = c(motor_UPDRS = "motor_UPDRS", total_UPDRS = "total_UPDRS"),
      downloads = list(.kld_dl("parkinsons_updrs.data",
                               paste0(.kld_uci, "parkinsons/telemonitoring/parkinsons_updrs.data"))),
      notes = "target motor_UPDRS or total_UPDRS; subject# dropped")
  )
  .kld_specs_cache$specs <- s
  s
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
  n_train <- c(mnist = 60000L, pendigits = 7494L, satimage = 4435L, shuttle = 43500L,
               thyroid = 3772L, "cod-rna" = 59535L, higgs = 7000L)
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
    n_train = vapply(names(s), function(k) {
      if (!is.null(s[[k]]$n_train)) s[[k]]$n_train
      else if (k %in% names(n_train)) n_train[[k]] else NA_integer_
    }, 1L),
    files = vapply(s, function(z) first_names(z$files), ""),
    source = vapply(s, `[[`, "", "source"),
    notes = vapply(s, `[[`, "", "notes"),
    row.names = NULL, stringsAsFactors = FALSE)
}

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
#' the \code{gzip} program), the CCPP zip archive and the energy workbook (\code{.xlsx}, read
#' by a small built-in reader), the concrete workbook (\code{.xls}, needs the readxl
#' package), the California housing archive from L. Torgo's site, the DELVE cpusmall / bank
#' ARFF files from OpenML, the HIGGS subset from the LightGBM repository and Pima from
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
  .kld_check_flag(download, "download")
  .kld_check_flag(quiet, "quiet")
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
