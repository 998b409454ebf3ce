# Developer and user entry points. `make demo` and `make check` do all set-up on a fresh
# Debian machine (R packages from Debian when run as root, else from the user's CRAN mirror).

R ?= R
RSCRIPT ?= Rscript
PKG := kernlearn
VERSION := $(shell sed -n 's/^Version: *//p' DESCRIPTION)
TARBALL := $(PKG)_$(VERSION).tar.gz
# Real benchmark data, when the project's shared data folder is beside the checkout.
DATA_DIR ?= $(abspath ../shared/data)

.PHONY: deps install demo check test test-core document clean bench bench-core sanitize

deps:
	sh tools/install-deps.sh

document:
	$(RSCRIPT) -e 'Rcpp::compileAttributes(); roxygen2::roxygenise()'

install: deps
	MAKEFLAGS=-j2 $(R) CMD INSTALL --preclean .

demo: install
	$(RSCRIPT) tools/demo.R

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

test: install
	KERNLEARN_DATA_DIR="$$( [ -d "$(DATA_DIR)" ] && echo "$(DATA_DIR)" )" \
	  $(RSCRIPT) -e 'testthat::test_local(".", load_package = "installed")'

# The core's own C++ tests, built and run without R (tests/core; FILTER= words of test names).
test-core:
	$(MAKE) -C tests/core -j2 test FILTER="$(FILTER)"

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer (slow: about 3x the
# plain run); FILTER= a regular expression on test file names.
sanitize: deps
	sh tools/sanitize.sh "$(FILTER)"

bench: install
	$(MAKE) -C tests/core -j2 build/bench_core
	$(RSCRIPT) bench/kernel_matrix.R

# The core's dense algebra and learner objectives timed without R (rows appended to
# bench/results; BENCH= sections, e.g. "dense gem"; BENCH_FLAGS=--smoke for a quick check).
bench-core:
	$(MAKE) -C tests/core -j2 bench BENCH="$(BENCH)" BENCH_FLAGS="$(BENCH_FLAGS)" \
	  DATA_DIR="$(or $(KERNLEARN_DATA_DIR),$(DATA_DIR))"

clean:
	rm -rf $(PKG).Rcheck $(PKG)_*.tar.gz demo-output
	$(MAKE) -C tests/core clean
	sh cleanup
