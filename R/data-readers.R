# Dataset readers: LIBSVM sparse text, IDX (MNIST), ARFF and delimited text (and the Excel
# workbooks some UCI sets come in). Everything here is base R (utils, tools), except the Excel
# workbooks UCI serves for CCPP, energy and concrete, which need readxl.

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

# Joins a character matrix of cells into comma separated lines, quoting the text cells.
.kld_cells_to_lines <- function(m) {
  text <- !(.kld_is_num(m) & nzchar(m))
  m[text] <- paste0("\"", gsub("\"", "\"\"", m[text]), "\"")
  do.call(paste, c(lapply(seq_len(ncol(m)), function(j) m[, j]), sep = ","))
}

# Reads the first sheet of an Excel workbook (.xlsx or legacy .xls) into delimited lines for
# .kld_parse_table(), with readxl. Cells are read as their stored text, so numbers keep every
# digit the workbook holds.
.kld_excel_lines <- function(file) {
  if (!requireNamespace("readxl", quietly = TRUE))
    stop(sprintf(paste0("reading the Excel file '%s' needs the readxl package: ",
                        "install.packages(\"readxl\")"), basename(file)), call. = FALSE)
  df <- tryCatch(readxl::read_excel(file, sheet = 1L, col_names = FALSE, col_types = "text",
                                    .name_repair = "minimal"),
                 error = function(e)
                   stop(sprintf("cannot read the Excel file '%s': %s", basename(file),
                                conditionMessage(e)), call. = FALSE))
  m <- as.matrix(df)
  m[is.na(m)] <- ""
  if (!length(m)) stop(sprintf("the first sheet of '%s' is empty", basename(file)), call. = FALSE)
  m <- m[rowSums(matrix(nzchar(m), nrow(m))) > 0L, , drop = FALSE]
  .kld_cells_to_lines(m)
}

# Reads a delimited file (or an Excel workbook, by extension) with .kld_parse_table().
.kld_read_table <- function(file, col_names, chr_cols = character(), quote = "",
                            header = "auto", nrows = -1L) {
  if (grepl("\\.xlsx?$", file, ignore.case = TRUE)) {
    lines <- .kld_excel_lines(file)
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
  .check_flag(sparse, "sparse")
  if (sparse && !requireNamespace("Matrix", quietly = TRUE))
    stop("read_libsvm(): sparse = TRUE needs the Matrix package", call. = FALSE)
  if (!is.null(n_features) &&
      (!is.numeric(n_features) || length(n_features) != 1L || is.na(n_features) ||
       n_features < 1 || n_features != round(n_features)))
    stop("'n_features' must be NULL or a single whole number >= 1", call. = FALSE)
  .check_flag(zero_based, "zero_based")
  .check_flag(y_factor, "y_factor")
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
