# Developer and user entry points. `make demo` and `make check` do all set-up on a fresh
# Debian machine (R packages from Debian when run as root, else from the user's CRAN mirror).

R ?= R
RSCRIPT ?= Rscript
# The R library `make install` (and so demo, site, test, bench) installs into and runs from;
# empty: R's default library. Set on the command line only (`make demo LIB=$HOME/R/dev`): an
# environment variable LIB, which other tools use, is not read.
LIB =
# Compile jobs for `make install`: every core.
JOBS ?= $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
# What tools/install-deps.sh installs before `make install`: build (compilers, Rcpp, RcppEigen),
# demo (and e1071, mlbench), all (everything make check needs), site (all and pkgdown).
DEPS ?= build
PKG := kernlearn
VERSION := $(shell sed -n 's/^Version: *//p' DESCRIPTION)
TARBALL := $(PKG)_$(VERSION).tar.gz
# Real benchmark data, when the project's shared data folder is beside the checkout.
DATA_DIR ?= $(abspath ../shared/data)
LIB_ENV = $(if $(LIB),R_LIBS="$(abspath $(LIB))$${R_LIBS:+:$$R_LIBS}")

.PHONY: deps install demo site check test test-core document clean bench bench-core sanitize

deps:
	sh tools/install-deps.sh

# roxygenise() loads the package with pkgload, which compiles src/ for debugging (-O0); those
# objects are removed, so that a later R CMD INSTALL without --preclean does not reuse them
# (the core runs about 20 times slower at -O0).
document:
	$(RSCRIPT) -e 'Rcpp::compileAttributes(); roxygen2::roxygenise()'
	rm -f src/*.o src/core/*/*.o src/*.so

# A stripped library (--strip; install.libs.R strips on _R_SHLIB_STRIP_), compiled without
# debugging information (tools/install.mk) on every core.
install:
	sh tools/install-deps.sh $(DEPS)
	$(if $(LIB),mkdir -p "$(LIB)")
	user_makevars=$$($(RSCRIPT) -e 'cat(tools::makevars_user())'); \
	MAKEFLAGS=-j$(JOBS) _R_SHLIB_STRIP_=true KL_USER_MAKEVARS="$$user_makevars" \
	  R_MAKEVARS_USER="$(abspath tools/install.mk)" \
	  $(R) CMD INSTALL --preclean --strip $(if $(LIB),--library="$(LIB)") .

demo: DEPS = demo
demo: install
	$(LIB_ENV) $(RSCRIPT) tools/demo.R

# The pkgdown site, in docs/, from the installed package; fails on any warning.
site: DEPS = site
site: install
	$(LIB_ENV) $(RSCRIPT) tools/site.R

$(TARBALL): deps
	$(R) CMD build .

check: deps
	rm -rf $(PKG).Rcheck $(PKG)_*.tar.gz
	$(R) CMD build .
	MAKEFLAGS=-j2 _R_CHECK_CRAN_INCOMING_REMOTE_=false _R_CHECK_CRAN_INCOMING_=false \
	  _R_CHECK_FORCE_SUGGESTS_=false _R_CHECK_FUTURE_FILE_TIMESTAMPS_=false \
	  _R_SHLIB_STRIP_=true NOT_CRAN=true \
	  KERNLEARN_DATA_DIR="$$( [ -d "$(DATA_DIR)" ] && echo "$(DATA_DIR)" )" \
	  $(R) CMD check --as-cran --no-manual $(TARBALL); status=$$?; \
	  sh tools/test-summary.sh $(PKG).Rcheck; exit $$status

test: DEPS = all
test: install
	KERNLEARN_DATA_DIR="$$( [ -d "$(DATA_DIR)" ] && echo "$(DATA_DIR)" )" $(LIB_ENV) \
	  $(RSCRIPT) -e 'testthat::test_local(".", load_package = "installed")'

# The core's own C++ tests, built and run without R (tests/core; FILTER= words of test names).
test-core:
	$(MAKE) -C tests/core -j2 test FILTER="$(FILTER)"

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer (slow: about 3x the
# plain run); FILTER= a regular expression on test file names.
sanitize: deps
	sh tools/sanitize.sh "$(FILTER)"

bench: DEPS = all
bench: install
	$(MAKE) -C tests/core -j2 build/bench_core
	$(LIB_ENV) $(RSCRIPT) bench/kernel_matrix.R

# The core's dense algebra and learner objectives timed without R (rows appended to
# bench/results; BENCH= sections, e.g. "dense gem"; BENCH_FLAGS=--smoke for a quick check).
bench-core:
	$(MAKE) -C tests/core -j2 bench BENCH="$(BENCH)" BENCH_FLAGS="$(BENCH_FLAGS)" \
	  DATA_DIR="$(or $(KERNLEARN_DATA_DIR),$(DATA_DIR))"

clean:
	rm -rf $(PKG).Rcheck $(PKG)_*.tar.gz demo-output docs
	$(MAKE) -C tests/core clean
	sh cleanup
