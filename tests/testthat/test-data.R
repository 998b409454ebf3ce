# Readers on small files written here, kl_dataset() on a fake data directory and through a
# simulated download, and (when KERNLEARN_DATA_DIR points at the benchmark data) the real sets.

write_gz <- function(lines, path) {
  con <- gzfile(path, "w")
  writeLines(lines, con)
  close(con)
  path
}

# Writes text exactly as given (no newline added), e.g. CRLF line ends.
write_raw <- function(text, path) {
  writeBin(charToRaw(text), path)
  path
}

write_idx <- function(path, magic_bytes, dims, values, gz = FALSE) {
  con <- if (gz) gzfile(path, "wb") else file(path, "wb")
  writeBin(as.raw(magic_bytes), con)
  writeBin(as.integer(dims), con, size = 4, endian = "big")
  writeBin(as.raw(values), con)
  close(con)
  path
}

# An empty cache so that nothing found or downloaded elsewhere interferes.
local_empty_cache <- function(env = parent.frame()) {
  old <- options(kernlearn.cache_dir = tempfile("kl-cache"), kernlearn.data_dir = NULL)
  do.call(on.exit, list(substitute(options(old), list(old = old)), add = TRUE), envir = env)
  invisible(old)
}

# ---- read_libsvm ------------------------------------------------------------------------------

test_that("read_libsvm reads labels and sparse features into a dense matrix", {
  f <- tempfile(fileext = ".txt")
  on.exit(unlink(f), add = TRUE)
  # comment, blank line, tab, qid token, CRLF line ends and no final newline
  write_raw(paste("# header comment", "1 1:0.5 3:2 # trailing comment", "",
                  "-1 qid:3 2:1.5", "+1\t1:-1 2:0.25 3:1e2", "0", sep = "\r\n"), f)
  d <- read_libsvm(f)
  expect_equal(dim(d$x), c(4L, 3L))
  expect_equal(colnames(d$x), c("V1", "V2", "V3"))
  expect_equal(unname(d$x), rbind(c(0.5, 0, 2), c(0, 1.5, 0), c(-1, 0.25, 100), c(0, 0, 0)))
  expect_identical(d$y, c(1, -1, 1, 0))
  yf <- read_libsvm(f, y_factor = TRUE)$y
  expect_s3_class(yf, "factor")
  expect_identical(levels(yf), c("-1", "0", "1"))
  wide <- read_libsvm(f, n_features = 5)
  expect_equal(ncol(wide$x), 5L)
  expect_equal(wide$x[, 1:3], d$x, ignore_attr = TRUE)
  expect_true(all(wide$x[, 4:5] == 0))
})

test_that("read_libsvm reads gzip files and zero-based indices", {
  g <- write_gz(c("2 0:1 4:3", "3 1:2"), tempfile(fileext = ".gz"))
  on.exit(unlink(g), add = TRUE)
  d <- read_libsvm(g, zero_based = TRUE)
  expect_equal(unname(d$x), rbind(c(1, 0, 0, 0, 3), c(0, 2, 0, 0, 0)))
  expect_error(read_libsvm(g), "line 1: feature index 0")
  h <- write_gz(c("1 1:1 2:2", "0 3:3"), tempfile(fileext = ".gz"))
  on.exit(unlink(h), add = TRUE)
  expect_equal(read_libsvm(h)$x[2, 3], c(V3 = 3))
})

test_that("read_libsvm errors name the offending line", {
  f <- tempfile()
  on.exit(unlink(f), add = TRUE)
  writeLines(c("1 1:0.5", "", "-1 2:1 abc"), f)
  expect_error(read_libsvm(f), "line 3: malformed token 'abc'")
  writeLines(c("1 1:0.5", "x 2:1"), f)
  expect_error(read_libsvm(f), "line 2: label 'x' is not a number")
  writeLines(c("1 1:0.5", "1 2:1 2:3"), f)
  expect_error(read_libsvm(f), "line 2: feature index 2 appears twice")
  writeLines(c("1 1:0.5", "1 1.5:1"), f)
  expect_error(read_libsvm(f), "line 2: malformed token '1.5:1'")
  writeLines(c("1 1:0.5", "1 2:x"), f)
  expect_error(read_libsvm(f), "line 2: malformed")
  writeLines(c("1 1:0.5", "1 7:1"), f)
  expect_error(read_libsvm(f, n_features = 3), "line 2: feature index 7 exceeds n_features = 3")
  expect_error(read_libsvm(tempfile()), "does not exist")
  expect_error(read_libsvm(f, n_features = 0), "n_features")
  expect_error(read_libsvm(f, zero_based = NA), "zero_based")
})

test_that("read_libsvm handles an empty file", {
  f <- tempfile()
  on.exit(unlink(f), add = TRUE)
  writeLines(character(), f)
  d <- read_libsvm(f, n_features = 2)
  expect_equal(dim(d$x), c(0L, 2L))
  expect_length(d$y, 0L)
})

# ---- read_idx --------------------------------------------------------------------------------

test_that("read_idx reads IDX images and labels, plain and gzip", {
  img <- write_idx(tempfile(), c(0, 0, 8, 3), c(2, 2, 3), c(0:10, 255))
  lab <- write_idx(tempfile(), c(0, 0, 8, 1), 2, c(7, 3), gz = TRUE)
  on.exit(unlink(c(img, lab)), add = TRUE)
  x <- read_idx(img, magic = 2051)
  expect_equal(dim(x), c(2L, 6L))
  expect_equal(x[1, ], c(0, 1, 2, 3, 4, 5))
  expect_equal(x[2, ], c(6, 7, 8, 9, 10, 255))
  expect_equal(attr(x, "idx_dim"), c(2L, 2L, 3L))
  expect_type(x, "double")
  y <- read_idx(lab, magic = 2049)
  expect_equal(as.vector(y), c(7, 3))
  expect_error(read_idx(lab, magic = 2051), "magic number 2049, expected 2051")
})

test_that("read_idx rejects malformed files", {
  f <- tempfile()
  on.exit(unlink(f), add = TRUE)
  write_idx(f, c(1, 0, 8, 1), 2, c(1, 2))
  expect_error(read_idx(f), "not an IDX file")
  write_idx(f, c(0, 0, 7, 1), 2, c(1, 2))
  expect_error(read_idx(f), "unknown IDX element type")
  write_idx(f, c(0, 0, 8, 1), 5, c(1, 2))
  expect_error(read_idx(f), "file ends after 2 of 5 values")
  write_idx(f, c(0, 0, 8, 1), 2, c(1, 2, 3))
  expect_error(read_idx(f), "unexpected bytes")
  writeBin(as.raw(c(0, 0)), f)
  expect_error(read_idx(f), "not an IDX file")
})

# ---- read_arff -------------------------------------------------------------------------------

test_that("read_arff reads header and data", {
  f <- tempfile(fileext = ".arff")
  on.exit(unlink(f), add = TRUE)
  writeLines(c("% comment", "@RELATION tiny", "", "@attribute width numeric",
               "@attribute 'colour name' {red, blue}", "@attribute label string",
               "@ATTRIBUTE y REAL", "@data", "% another comment",
               "1.5, red, 'a b', 3", "2.0,blue,c,?"), f)
  d <- read_arff(f)
  expect_s3_class(d, "data.frame")
  expect_named(d, c("width", "colour name", "label", "y"))
  expect_equal(d$width, c(1.5, 2))
  expect_equal(levels(d[["colour name"]]), c("red", "blue"))
  expect_equal(as.character(d[["colour name"]]), c("red", "blue"))
  expect_equal(d$label, c("a b", "c"))
  expect_equal(d$y, c(3, NA))
  expect_equal(attr(d, "relation"), "tiny")
})

test_that("read_arff errors name the line", {
  f <- tempfile(fileext = ".arff")
  on.exit(unlink(f), add = TRUE)
  hdr <- c("@relation t", "@attribute a numeric", "@attribute b numeric", "@data")
  writeLines(c(hdr, "1,2", "3"), f)
  expect_error(read_arff(f), "line 6: found 1 values, expected 2")
  writeLines(c(hdr, "1,2", "3,x"), f)
  expect_error(read_arff(f), "line 6: attribute 'b' holds 'x'")
  writeLines(c(hdr, "{0 1, 1 2}"), f)
  expect_error(read_arff(f), "sparse ARFF")
  writeLines(hdr[1:3], f)
  expect_error(read_arff(f), "no @data section")
  writeLines(c("@relation t", "@attribute a {x, y}", "@data", "x", "z"), f)
  expect_error(read_arff(f), "line 5: attribute 'a' holds 'z'")
})

# ---- delimited text --------------------------------------------------------------------------

test_that("tables: header, BOM, CRLF, missing final newline, '?' values", {
  f <- tempfile(fileext = ".csv")
  on.exit(unlink(f), add = TRUE)
  bom <- rawToChar(as.raw(c(0xef, 0xbb, 0xbf)))
  write_raw(paste0(bom, "a,b,cls\r\n1,2.5,x\r\n3,?,y\r\n-4,1e3,x"), f)
  tab <- .kld_read_table(f, col_names = c("a", "b", "cls"), chr_cols = "cls")
  expect_equal(unname(tab$num), rbind(c(1, 2.5), c(3, NA), c(-4, 1000)))
  expect_equal(colnames(tab$num), c("a", "b"))
  expect_equal(tab$chr$cls, c("x", "y", "x"))
  # numeric only, fast path, gzip, no header
  g <- write_gz(c("1,2", "3,4"), tempfile(fileext = ".gz"))
  on.exit(unlink(g), add = TRUE)
  expect_equal(unname(.kld_read_table(g, c("u", "v"))$num), rbind(c(1, 2), c(3, 4)))
  # a numeric header over a text column is still a header
  write_raw("1,2,3\n10,M,1.5\n11,B,2.5\n", f)
  tab <- .kld_read_table(f, c("id", "dx", "v"), chr_cols = "dx")
  expect_equal(tab$chr$dx, c("M", "B"))
  # white space, tabs, padding, a trailing comma on every line, quoted text, nrows
  write_raw("  1   2\t3\n4 5 6\n", f)
  expect_equal(unname(.kld_read_table(f, c("a", "b", "c"))$num), rbind(1:3, 4:6))
  write_raw(" 1, 2,3,\n4,5, 6,\n", f)
  expect_equal(unname(.kld_read_table(f, c("a", "b", "c"))$num), rbind(1:3, 4:6))
  write_raw("18.0 8 307.\t\"chevy, malibu\"\n15 8 ?\t\"buick\"\n", f)
  tab <- .kld_read_table(f, c("mpg", "cyl", "disp", "name"), chr_cols = "name", quote = "\"")
  expect_equal(tab$chr$name, c("chevy, malibu", "buick"))
  expect_equal(unname(tab$num[2, ]), c(15, 8, NA))
  write_raw("1,2\n3,4\n5,6\n", f)
  expect_equal(nrow(.kld_read_table(f, c("a", "b"), nrows = 2)$num), 2L)
})

test_that("tables: wrong field counts and non-numbers name the line", {
  f <- tempfile(fileext = ".csv")
  on.exit(unlink(f), add = TRUE)
  write_raw("a,b\n1,2\n\n3\n", f)
  expect_error(.kld_read_table(f, c("a", "b")), "line 4: found 1 fields, expected 2")
  write_raw("1,2\n3,oops\n", f)
  expect_error(.kld_read_table(f, c("a", "b")), "line 2: column 'b' holds 'oops'")
})

# A minimal valid .xlsx workbook (the parts a spreadsheet program writes), zipped by hand.
write_xlsx_book <- function(book, rows) {
  td <- tempfile("xlsx")
  on.exit(unlink(td, recursive = TRUE), add = TRUE)
  for (d in c("_rels", "xl/_rels", "xl/worksheets")) dir.create(file.path(td, d), recursive = TRUE)
  ns <- "http://schemas.openxmlformats.org/"
  ct <- paste0(ns, "officeDocument/2006/relationships/")
  writeLines(c('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>',
               paste0('<Types xmlns="', ns, 'package/2006/content-types">',
                      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>',
                      '<Default Extension="xml" ContentType="application/xml"/>',
                      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>',
                      '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>',
                      '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>')),
             file.path(td, "[Content_Types].xml"))
  writeLines(paste0('<Relationships xmlns="', ns, 'package/2006/relationships">',
                    '<Relationship Id="rId1" Type="', ct, 'officeDocument" Target="xl/workbook.xml"/></Relationships>'),
             file.path(td, "_rels", ".rels"))
  writeLines(paste0('<workbook xmlns="', ns, 'spreadsheetml/2006/main" xmlns:r="', ct, '">',
                    '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'),
             file.path(td, "xl", "workbook.xml"))
  writeLines(paste0('<Relationships xmlns="', ns, 'package/2006/relationships">',
                    '<Relationship Id="rId1" Type="', ct, 'worksheet" Target="worksheets/sheet1.xml"/>',
                    '<Relationship Id="rId2" Type="', ct, 'sharedStrings" Target="sharedStrings.xml"/></Relationships>'),
             file.path(td, "xl", "_rels", "workbook.xml.rels"))
  writeLines(paste0('<sst xmlns="', ns, 'spreadsheetml/2006/main" count="2" uniqueCount="2">',
                    '<si><t>AT</t></si><si><t>P&amp;E</t></si></sst>'),
             file.path(td, "xl", "sharedStrings.xml"))
  writeLines(paste0('<worksheet xmlns="', ns, 'spreadsheetml/2006/main"><sheetData>',
                    paste(rows, collapse = ""), '</sheetData></worksheet>'),
             file.path(td, "xl", "worksheets", "sheet1.xml"))
  old <- setwd(td)
  on.exit(setwd(old), add = TRUE, after = FALSE)
  utils::zip(book, c("[Content_Types].xml", "_rels/.rels", "xl/workbook.xml",
                     "xl/_rels/workbook.xml.rels", "xl/sharedStrings.xml",
                     "xl/worksheets/sheet1.xml"), flags = "-q")
}

test_that("xlsx worksheets are read with readxl, every stored digit kept", {
  skip_if(!nzchar(Sys.which("zip")), "no zip program")
  skip_if_not_installed("readxl")
  book <- tempfile(fileext = ".xlsx")
  on.exit(unlink(book), add = TRUE)
  write_xlsx_book(book, c(
    '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>',
    '<row r="2"><c r="A2"><v>14.96</v></c><c r="B2"><v>463.26</v></c></row>',
    '<row r="3"><c r="A3" s="1"><v>0.12345678901234568</v></c><c r="B3"><v>444.37</v></c></row>',
    '<row r="5"><c r="A5"><v>-3.5E-2</v></c><c r="B5"><v>1</v></c></row>'))
  expect_equal(.kld_excel_lines(book),
               c("\"AT\",\"P&E\"", "14.96,463.26", "0.12345678901234568,444.37", "-3.5E-2,1"))
  tab <- .kld_read_table(book, c("AT", "PE"))
  expect_identical(unname(tab$num),
                   rbind(c(14.96, 463.26), c(0.12345678901234568, 444.37), c(-0.035, 1)))
  # not a workbook: the error names the file
  bad <- tempfile(fileext = ".xlsx")
  on.exit(unlink(bad), add = TRUE)
  writeLines("not a zip", bad)
  expect_error(.kld_read_table(bad, c("AT", "PE")), "cannot read the Excel file")
})

# ---- kl_datasets / kl_dataset without the real data ------------------------------------------

test_that("kl_datasets lists every dataset once with its folder and task", {
  d <- kl_datasets()
  expect_s3_class(d, "data.frame")
  expect_true(all(c("name", "folder", "task", "rows", "source") %in% names(d)))
  expect_false(anyDuplicated(d$name) > 0)
  expect_true(all(c("mnist", "letter", "covtype", "covtype20k", "ccpp", "cadata", "cod-rna",
                    "higgs", "bank8fm", "bank32nh", "breast_cancer", "wdbc") %in% d$name))
  expect_true(all(d$task %in% c("classification", "regression")))
  expect_equal(d$rows[d$name == "letter"], 20000L)
  expect_equal(d$n_train[d$name == "mnist"], 60000L)
  expect_true(all(grepl("^https?://", d$source)))
})

test_that("kl_dataset gives clear errors for bad names, directories and arguments", {
  local_empty_cache()
  expect_error(kl_dataset("nope"), "unknown dataset 'nope'; available: mnist, letter")
  expect_error(kl_dataset(c("a", "b")), "single dataset name")
  expect_error(kl_dataset("letter", dir = file.path(tempdir(), "no-such-dir")),
               "does not exist")
  empty <- tempfile("kl-data")
  dir.create(empty)
  on.exit(unlink(empty, recursive = TRUE), add = TRUE)
  err <- tryCatch(kl_dataset("letter", dir = empty, download = FALSE), error = identity)
  expect_s3_class(err, "error")
  expect_match(conditionMessage(err), "dataset 'letter' not found")
  expect_match(conditionMessage(err), "letter-recognition.data.gz", fixed = TRUE)
  expect_match(conditionMessage(err), file.path(empty, "letter"), fixed = TRUE)
  expect_match(conditionMessage(err), "KERNLEARN_DATA_DIR")
  expect_match(conditionMessage(err), "download = TRUE")
  old <- options(kernlearn.data_dir = file.path(empty, "missing"))
  expect_error(kl_dataset("letter", download = FALSE), "kernlearn.data_dir")
  options(old)
  expect_error(kl_dataset("magic", dir = empty, part = "train"), "no standard train/test split")
  expect_error(kl_dataset("letter", dir = empty, part = "validation"), "'part'")
  expect_error(kl_dataset("energy", dir = empty, target = "Y3"), "\"Y1\", \"Y2\"")
  expect_error(kl_dataset("letter", dir = empty, target = "x"), "single target")
})

test_that("kl_dataset reads a fake data directory: split files, headers, '?' rows", {
  local_empty_cache()
  root <- tempfile("kl-data")
  on.exit(unlink(root, recursive = TRUE), add = TRUE)
  for (f in c("pendigits", "auto_mpg", "bupa_liver", "mnist", "letter"))
    dir.create(file.path(root, f), recursive = TRUE)
  row <- function(lab) paste(c(sprintf("%3d", 1:16), lab), collapse = ",")
  write_gz(c(row(1), row(2), row(1)), file.path(root, "pendigits", "pendigits.tra.gz"))
  writeLines(c(row(0), row(9)), file.path(root, "pendigits", "pendigits.tes"))
  d <- kl_dataset("pendigits", dir = root)
  expect_s3_class(d, "kl_dataset")
  expect_equal(dim(d$x), c(5L, 16L))
  expect_equal(colnames(d$x)[1:4], c("x1", "y1", "x2", "y2"))
  expect_equal(d$train, 1:3)
  expect_equal(levels(d$y), as.character(0:9))
  expect_equal(as.character(d$y), c("1", "2", "1", "0", "9"))
  expect_equal(d$task, "classification")
  expect_output(print(d), "pendigits: classification, 5 rows x 16 features")
  te <- kl_dataset("pendigits", dir = root, part = "test")
  expect_equal(nrow(te$x), 2L)
  expect_equal(te$train, integer(0))
  expect_equal(kl_dataset("pendigits", dir = root, part = "train")$train, 1:3)

  write_raw(paste0("18.0   8   307.0      130.0      3504.      12.0   70  1\t\"chevrolet malibu\"\n",
                   "25.0   4   98.00      ?          2046.      19.0   71  1\t\"ford pinto\"\n",
                   "15.0   8   350.0      165.0      3693.      11.5   70  1\t\"buick skylark 320\""),
            file.path(root, "auto_mpg", "auto-mpg.data"))
  expect_message(a <- kl_dataset("auto_mpg", dir = root), "dropped 1 of 3 rows .*horsepower")
  expect_equal(a$y, c(18, 15))
  expect_equal(colnames(a$x), c("cylinders", "displacement", "horsepower", "weight",
                                "acceleration", "model_year", "origin"))
  expect_null(a$train)
  expect_silent(kl_dataset("auto_mpg", dir = root, quiet = TRUE))

  write_gz(c("mcv,alkphos,sgpt,sgot,gammagt,drinks,selector", "85,92,45,27,31,0.0,1",
             "85,64,59,32,23,0.5,2"), file.path(root, "bupa_liver", "bupa.data.gz"))
  b <- kl_dataset("liver", dir = root)
  expect_equal(b$name, "bupa")
  expect_equal(ncol(b$x), 6L)
  expect_equal(as.character(b$y), c("1", "2"))
  r <- kl_dataset("bupa", dir = root, target = "drinks")
  expect_equal(r$task, "regression")
  expect_equal(r$y, c(0, 0.5))
  expect_false(any(c("drinks", "selector") %in% colnames(r$x)))

  img <- c(0:23, 255 - 0:23)
  write_idx(file.path(root, "mnist", "train-images-idx3-ubyte.gz"), c(0, 0, 8, 3), c(2, 4, 6),
            img, gz = TRUE)
  write_idx(file.path(root, "mnist", "train-labels-idx1-ubyte.gz"), c(0, 0, 8, 1), 2, c(5, 0),
            gz = TRUE)
  write_idx(file.path(root, "mnist", "t10k-images-idx3-ubyte"), c(0, 0, 8, 3), c(1, 4, 6), 1:24)
  write_idx(file.path(root, "mnist", "t10k-labels-idx1-ubyte"), c(0, 0, 8, 1), 1, 9)
  m <- kl_dataset("mnist", dir = root)
  expect_equal(dim(m$x), c(3L, 24L))
  expect_equal(m$x[2, ], 255 - 0:23, ignore_attr = TRUE)
  expect_equal(as.character(m$y), c("5", "0", "9"))
  expect_equal(m$train, 1:2)
  expect_equal(nrow(kl_dataset("mnist", dir = root, part = "test")$x), 1L)
  # images and labels swapped: the magic numbers differ
  file.copy(file.path(root, "mnist", "t10k-labels-idx1-ubyte"),
            file.path(root, "mnist", "t10k-images-idx3-ubyte"), overwrite = TRUE)
  expect_error(kl_dataset("mnist", dir = root, part = "test"), "magic number 2049, expected 2051")

  # letter: classic split takes the first 16000 rows; a short file keeps all as train
  writeLines(c("T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8", "I,5,12,3,7,2,10,5,5,4,13,3,9,2,8,4,10"),
             file.path(root, "letter", "letter-recognition.data"))
  old <- options(kernlearn.data_dir = root)
  l <- kl_dataset("letter")
  options(old)
  expect_equal(levels(l$y), LETTERS)
  expect_equal(l$train, 1:2)
  expect_equal(unname(l$x[1, 1:3]), c(2, 8, 3))
})

test_that("kl_dataset downloads into the cache when asked (simulated with file URLs)", {
  local_empty_cache()
  cache <- getOption("kernlearn.cache_dir")
  on.exit(unlink(cache, recursive = TRUE), add = TRUE)
  src <- tempfile("kl-src")
  dir.create(src)
  on.exit(unlink(src, recursive = TRUE), add = TRUE)
  writeLines(c("28.7967,16.0021,2.6449,0.3918,0.1982,27.7004,22.011,-8.2027,40.092,81.8828,g",
               "162.052,136.031,4.0612,0.0374,0.0187,116.741,-64.858,-45.216,76.96,256.788,h"),
             file.path(src, "magic04.data"))
  specs <- .kld_specs()
  on.exit(.kld_specs_cache$specs <- NULL, add = TRUE)
  .kld_specs_cache$specs$magic$downloads[[1L]]$urls <-
    c(paste0("file://", file.path(src, "missing.data")), paste0("file://", file.path(src, "magic04.data")))
  empty <- tempfile("kl-data")
  dir.create(empty)
  on.exit(unlink(empty, recursive = TRUE), add = TRUE)
  expect_error(kl_dataset("magic", dir = empty, download = FALSE), "not found")
  msgs <- capture_messages(d <- kl_dataset("magic", dir = empty, download = TRUE))
  expect_match(msgs, "downloading file://.*magic04.data", all = FALSE)
  expect_true(file.exists(file.path(cache, "magic", "magic04.data")))
  expect_equal(dim(d$x), c(2L, 10L))
  expect_equal(as.character(d$y), c("g", "h"))
  # found in the cache next time, without downloading
  expect_silent(kl_dataset("magic", dir = empty, download = FALSE))

  # an archive step: extract the member from a .tgz
  dir.create(file.path(src, "CaliforniaHousing"))
  writeLines(c("-122.23,37.88,41,880,129,322,126,8.3252,452600",
               "-122.22,37.86,21,7099,1106,2401,1138,8.3014,358500"),
             file.path(src, "CaliforniaHousing", "cal_housing.data"))
  tgz <- file.path(src, "cal_housing.tgz")
  old <- setwd(src)
  utils::tar(tgz, "CaliforniaHousing", compression = "gzip", tar = "internal")
  setwd(old)
  .kld_specs_cache$specs$cadata$downloads[[1L]]$urls <- paste0("file://", tgz)
  d <- kl_dataset("cadata", dir = empty, download = TRUE, quiet = TRUE)
  expect_equal(d$y, c(452600, 358500))
  expect_equal(colnames(d$x)[8], "medianIncome")

  expect_error(.kld_fetch(paste0("file://", file.path(src, "nothing")), file.path(src, "x"),
                          quiet = TRUE), "could not download x")
})

# ---- the real benchmark data -----------------------------------------------------------------

real_dir <- function() {
  dir <- Sys.getenv("KERNLEARN_DATA_DIR")
  skip_if(!nzchar(dir) || !dir.exists(dir), "KERNLEARN_DATA_DIR not set")
  dir
}

counts <- function(y) as.vector(table(y))

test_that("real data: multiclass sets match their documented sizes and class counts", {
  dir <- real_dir()
  local_empty_cache()
  l <- kl_dataset("letter", dir = dir)
  expect_equal(dim(l$x), c(20000L, 16L))
  expect_equal(nlevels(l$y), 26L)
  expect_equal(l$train, 1:16000)
  expect_equal(sum(l$y == "U"), 813L)
  expect_equal(sum(l$y == "A"), 789L)
  expect_equal(unname(l$x[1, 1:4]), c(2, 8, 3, 5))

  m <- kl_dataset("mnist", dir = dir, part = "test")
  expect_equal(dim(m$x), c(10000L, 784L))
  expect_equal(range(m$x), c(0, 255))
  expect_equal(counts(m$y), c(980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009))

  p <- kl_dataset("pendigits", dir = dir)
  expect_equal(dim(p$x), c(10992L, 16L))
  expect_equal(length(p$train), 7494L)
  expect_equal(counts(p$y[p$train]), c(780, 779, 780, 719, 780, 720, 720, 778, 719, 719))

  s <- kl_dataset("satimage", dir = dir)
  expect_equal(dim(s$x), c(6435L, 36L))
  expect_equal(levels(s$y), c("1", "2", "3", "4", "5", "7"))
  expect_equal(counts(s$y[s$train]), c(1072, 479, 961, 415, 470, 1038))
  expect_equal(counts(s$y[-s$train]), c(461, 224, 397, 211, 237, 470))

  sh <- kl_dataset("shuttle", dir = dir)
  expect_equal(dim(sh$x), c(58000L, 9L))
  expect_equal(counts(sh$y[sh$train]), c(34108, 37, 132, 6748, 2458, 6, 11))
  expect_equal(counts(sh$y[-sh$train]), c(11478, 13, 39, 2155, 809, 4, 2))

  th <- kl_dataset("thyroid", dir = dir)
  expect_equal(dim(th$x), c(7200L, 21L))
  expect_equal(counts(th$y[th$train]), c(93, 191, 3488))
  expect_equal(counts(th$y[-th$train]), c(73, 177, 3178))

  cv <- kl_dataset("covtype20k", dir = dir)
  expect_equal(dim(cv$x), c(20000L, 54L))
  expect_equal(counts(cv$y), c(2942, 6022, 2160, 2160, 2396, 2160, 2160))
  expect_equal(counts(cv$y[cv$train]), rep(2160, 7))
  expect_equal(colnames(cv$x)[1], "Elevation")
  ct <- kl_dataset("covtype", dir = dir, part = "train")
  expect_equal(unname(ct$x), unname(cv$x[cv$train, ]))
})

test_that("real data: binary sets match their documented sizes and class counts", {
  dir <- real_dir()
  local_empty_cache()
  expect_counts <- function(name, n, p, cnt, levels = NULL, ...) {
    d <- kl_dataset(name, dir = dir, quiet = TRUE, ...)
    expect_equal(dim(d$x), c(n, p), info = name)
    expect_equal(counts(d$y), cnt, info = name)
    if (!is.null(levels)) expect_equal(levels(d$y), levels, info = name)
    expect_true(all(is.finite(d$x)), info = name)
    invisible(d)
  }
  expect_counts("magic", 19020L, 10L, c(12332, 6688), c("g", "h"))
  h <- expect_counts("higgs", 7500L, 28L, c(3284 + 228, 3716 + 272), c("0", "1"))
  expect_equal(counts(h$y[h$train]), c(3284, 3716))
  expect_equal(unname(h$x[1, 1:3]), c(0.869, -0.635, 0.226))
  expect_counts("bupa", 345L, 6L, c(145, 200))
  expect_message(kl_dataset("breast_cancer", dir = dir), "dropped 16 of 699 rows")
  expect_counts("breast_cancer", 683L, 9L, c(444, 239), c("2", "4"))
  expect_counts("wdbc", 569L, 30L, c(357, 212), c("B", "M"))
  expect_counts("heart", 270L, 13L, c(150, 120))
  expect_counts("pima", 768L, 8L, c(500, 268))
  expect_counts("ionosphere", 351L, 34L, c(126, 225), c("b", "g"))
  expect_counts("sonar", 208L, 60L, c(111, 97), c("M", "R"))
  cr <- expect_counts("cod-rna", 59535L, 8L, c(39690, 19845), c("-1", "1"), part = "train")
  expect_equal(unname(cr$x[1, 1:3]), c(-766, 128, 0.140625))
})

test_that("real data: regression sets match their documented sizes", {
  dir <- real_dir()
  local_empty_cache()
  expect_reg <- function(name, n, p, first_y, ...) {
    d <- kl_dataset(name, dir = dir, quiet = TRUE, ...)
    expect_equal(d$task, "regression", info = name)
    expect_equal(dim(d$x), c(n, p), info = name)
    expect_type(d$y, "double")
    expect_false(anyNA(d$x), info = name)
    expect_equal(d$y[1], first_y, info = name)
    invisible(d)
  }
  cc <- expect_reg("ccpp", 9568L, 4L, 463.26)
  expect_equal(colnames(cc$x), c("AT", "V", "AP", "RH"))
  ca <- expect_reg("cadata", 20640L, 8L, 452600)
  expect_equal(colnames(ca$x)[1], "longitude")
  expect_reg("cpusmall", 8192L, 12L, 90)
  expect_reg("bank8fm", 8192L, 8L, 0.657019)
  expect_reg("bank32nh", 8192L, 32L, 0.049118)
  co <- expect_reg("concrete", 1030L, 8L, 79.99)
  expect_equal(colnames(co$x)[1], "Cement")
  expect_reg("yacht", 308L, 6L, 0.11)
  expect_reg("auto_mpg", 392L, 7L, 18)
  expect_reg("boston", 506L, 13L, 24)
  expect_reg("energy", 768L, 8L, 15.55)
  expect_reg("energy", 768L, 8L, 21.33, target = "Y2")
  ff <- expect_reg("forest_fires", 517L, 12L, 0)
  expect_equal(unname(ff$x[1, c("month", "day")]), c(3, 5))
  expect_equal(kl_dataset("forest_fires", dir = dir, target = "log_area")$y, log1p(ff$y))
  pk <- expect_reg("parkinsons", 5875L, 19L, 28.199)
  expect_false(any(c("subject", "motor_UPDRS", "total_UPDRS") %in% colnames(pk$x)))
  expect_reg("parkinsons", 5875L, 19L, 34.398, target = "total_UPDRS")
})

test_that("the dataset registry is one table, and every row has its reader", {
  tab <- .kld_table()
  expect_identical(names(tab), c("name", "folder", "title", "task", "format", "rows",
                                 "features", "n_train", "label", "levels", "source", "notes"))
  expect_false(anyDuplicated(tab$name) > 0)
  expect_true(all(tab$task %in% c("classification", "regression")))
  expect_true(all(tab$format %in% c("table", "idx", "arff", "libsvm")))
  expect_true(all(is.na(tab$n_train) | (tab$n_train > 0 & tab$n_train < tab$rows)))
  cls <- tab$task == "classification"
  expect_true(all(!is.na(tab$levels[cls])))
  specs <- .kld_specs()
  expect_identical(names(specs), tab$name)
  expect_identical(unname(vapply(specs, function(z) length(z$levels), 1L))[cls],
                   lengths(strsplit(tab$levels[cls], "|", fixed = TRUE)))
  # kl_datasets() lists the table
  d <- kl_datasets()
  expect_identical(d$name, tab$name)
  expect_identical(d$n_train, tab$n_train)
  expect_identical(d[d$name == "letter", "n_train"], 16000L)
  expect_identical(d[d$name == "mnist", "n_train"], 60000L)
})
