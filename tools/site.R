# Builds the pkgdown site (configured in _pkgdown.yml) into docs/ from the installed kernlearn,
# without the internet, and fails when the build fails or gives any warning (a topic missing
# from the reference index, a broken link, a missing image, an example or article that
# warns ...).
#
# Usage, from the package's folder, with the package installed (`make site` does both):
#   Rscript tools/site.R [--no-examples]
# --no-examples: the reference pages without running their examples (for a run right after
# R CMD check, which has run them).
args <- commandArgs(TRUE)
examples <- !("--no-examples" %in% args)
if (!file.exists("_pkgdown.yml")) stop("run tools/site.R from the package's folder")

# The site documents the installed package: it must be this version of it.
src_version <- read.dcf("DESCRIPTION", fields = "Version")[1, 1]
lib <- find.package("kernlearn", quiet = TRUE)
if (!length(lib)) stop("kernlearn is not installed: run `make install` (or set R_LIBS) first")
inst_version <- read.dcf(file.path(lib, "DESCRIPTION"), fields = "Version")[1, 1]
if (!identical(src_version, inst_version))
  stop(sprintf("installed kernlearn %s (%s) is not this source's version %s", inst_version,
               lib, src_version))
cat(sprintf("pkgdown %s; kernlearn %s from %s\n", utils::packageVersion("pkgdown"),
            inst_version, dirname(lib)))

# Offline: pkgdown's own look-ups (CRAN and Bioconductor links, release dates) are off with
# this option; downlit, which links code to the help of other packages, would look each
# package's pkgdown site up on the web: record "no site" for each in its per-session cache
# (downlit 0.4), so that those links go to rdrr.io without a network request.
options(pkgdown.internet = FALSE)
cache <- file.path(Sys.getenv("RMARKDOWN_PREVIEW_DIR", unset = tempdir()), "downlit")
dir.create(cache, showWarnings = FALSE, recursive = TRUE)
for (p in setdiff(rownames(utils::installed.packages()), "kernlearn"))
  saveRDS(NULL, file.path(cache, p))
# Without TZ, R asks timedatectl for the time zone, which warns where systemd does not run.
if (!nzchar(Sys.getenv("TZ"))) Sys.setenv(TZ = "UTC")

warned <- character()
t0 <- proc.time()[["elapsed"]]
ok <- tryCatch({
  withCallingHandlers(
    pkgdown::build_site(examples = examples, new_process = FALSE, install = FALSE,
                        preview = FALSE),
    warning = function(w) warned <<- c(warned, conditionMessage(w)))
  TRUE
}, error = function(e) {
  cat("\nsite: the build failed: ", conditionMessage(e), "\n", sep = "")
  FALSE
})
cat(sprintf("\nsite: built in %.0f s, %d warning(s)%s\n", proc.time()[["elapsed"]] - t0,
            length(warned), if (examples) "" else " (examples not run)"))
if (length(warned)) cat(paste0("  warning: ", warned, "\n"), sep = "")
if (!ok || length(warned)) quit(status = 1)
cat("site: open", normalizePath(file.path("docs", "index.html")), "\n")
