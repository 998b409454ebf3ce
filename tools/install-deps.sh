#!/bin/sh
# Installs what building, checking and demonstrating kernlearn needs and is missing.
# On Debian as root: R and the R packages from Debian (r-cran-*). Elsewhere: the R packages
# from the user's CRAN mirror with install.packages().
# Usage: sh tools/install-deps.sh [set], the set one of
#   build  what `make install` needs: R, compilers, Rcpp, RcppEigen
#   demo   build, and what tools/demo.R uses (e1071, mlbench)
#   all    (the default) everything `make check` needs: the suggested packages, pandoc, qpdf,
#          checkbashisms
#   site   all, and pkgdown for `make site`
set -e

set_name=${1:-all}
BUILD_R="Rcpp RcppEigen"
BUILD_DEB="r-base-dev r-cran-rcpp r-cran-rcppeigen"
DEMO_R="e1071 mlbench"
DEMO_DEB="r-cran-e1071 r-cran-mlbench"
ALL_R="Rcpp RcppEigen testthat roxygen2 knitr rmarkdown e1071 kernlab ranger glmnet mlbench future future.apply future.batchtools progressr caret MASS readxl parallelly Matrix"
ALL_DEB="r-base-dev r-cran-rcpp r-cran-rcppeigen r-cran-testthat r-cran-roxygen2 r-cran-knitr r-cran-rmarkdown r-cran-e1071 r-cran-kernlab r-cran-ranger r-cran-glmnet r-cran-mlbench r-cran-future r-cran-future.apply r-cran-future.batchtools r-cran-progressr r-cran-caret r-cran-mass r-cran-readxl r-cran-parallelly r-cran-matrix r-cran-pkgbuild pandoc qpdf devscripts"
case "$set_name" in
  build) R_PKGS=$BUILD_R; DEB_PKGS=$BUILD_DEB; TOOLS="" ;;
  demo)  R_PKGS="$BUILD_R $DEMO_R"; DEB_PKGS="$BUILD_DEB $DEMO_DEB"; TOOLS="" ;;
  all)   R_PKGS=$ALL_R; DEB_PKGS=$ALL_DEB; TOOLS="pandoc qpdf checkbashisms" ;;
  site)  R_PKGS="$ALL_R pkgdown"; DEB_PKGS="$ALL_DEB r-cran-pkgdown"; TOOLS="pandoc qpdf checkbashisms" ;;
  *) echo "install-deps.sh: unknown set '$set_name' (build, demo, all or site)" >&2; exit 1 ;;
esac

missing_r() {
  command -v Rscript >/dev/null 2>&1 || { echo "R"; return; }
  Rscript --vanilla -e "p <- strsplit('${R_PKGS}', ' ')[[1]]; m <- p[!vapply(p, requireNamespace, logical(1), quietly = TRUE)]; cat(m)" 2>/dev/null
}

is_debian_root() {
  [ -f /etc/debian_version ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

need=$(missing_r)
tools_missing=""
for t in $TOOLS; do command -v "$t" >/dev/null 2>&1 || tools_missing="$tools_missing $t"; done

if [ -z "$need" ] && [ -z "$tools_missing" ]; then
  exit 0
fi

if is_debian_root; then
  echo "Installing from Debian: $need $tools_missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $DEB_PKGS >/dev/null
elif [ -n "$need" ] && [ "$need" != "R" ]; then
  echo "Installing R packages from CRAN: $need"
  Rscript -e "repos <- getOption('repos'); if (is.null(repos) || repos['CRAN'] %in% c('@CRAN@', '')) repos <- c(CRAN = 'https://cloud.r-project.org'); install.packages(strsplit('$need', ' ')[[1]], repos = repos)"
elif [ "$need" = "R" ]; then
  echo "R is not installed: install R (>= 4.0) first, e.g. 'apt-get install r-base-dev'." >&2
  exit 1
fi
if [ -n "$tools_missing" ] && ! is_debian_root; then
  echo "Note: $tools_missing not found; vignettes and the PDF checks may be skipped." >&2
fi
