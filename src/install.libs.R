# Installs the package library, and the separate GPU library when it was built. The GPU
# library goes into libs/cuda/: it is loaded with dlopen() on first use, not by R.
files <- Sys.glob(paste0("*", SHLIB_EXT))
gpu <- grepl("^kernlearn_cuda", files)
dest <- file.path(R_PACKAGE_DIR, paste0("libs", R_ARCH))
dir.create(dest, recursive = TRUE, showWarnings = FALSE)
file.copy(files[!gpu], dest, overwrite = TRUE)
if (file.exists("symbols.rds"))
  file.copy("symbols.rds", dest, overwrite = TRUE)
if (any(gpu)) {
  dir.create(file.path(dest, "cuda"), showWarnings = FALSE)
  file.copy(files[gpu], file.path(dest, "cuda"), overwrite = TRUE)
}
# Strip debugging information when R asks for it (R CMD INSTALL --strip, or
# _R_SHLIB_STRIP_=true); the symbol table stays, so R CMD check can still inspect it.
if (tolower(Sys.getenv("_R_SHLIB_STRIP_")) %in% c("true", "yes") &&
    nzchar(Sys.which("strip")) && !WINDOWS) {
  installed <- c(file.path(dest, files[!gpu]), if (any(gpu)) file.path(dest, "cuda", files[gpu]))
  for (f in installed) system2("strip", c("--strip-debug", shQuote(f)))
}
