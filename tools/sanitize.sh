#!/bin/sh
# Builds kernlearn with AddressSanitizer and UndefinedBehaviorSanitizer into a temporary library
# and runs the test suite with the sanitizer runtimes preloaded (R itself is not instrumented),
# as CRAN's additional checks do. Any report fails the run.
# Usage: sh tools/sanitize.sh [test filter, a regular expression on test file names]
set -e
cd "$(dirname "$0")/.."
filter=${1:-}
lib=$(mktemp -d)
mk=$(mktemp)
src=$(mktemp -d)
trap 'rm -rf "$lib" "$mk" "$src"' EXIT
# build from a copy, so that no instrumented object file is left in src/
tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.Rcheck' -cf - . | (cd "$src" && tar -xf -)
cat > "$mk" <<'EOM'
CXXFLAGS = -g -O1 -fno-omit-frame-pointer -fvisibility-inlines-hidden -fsanitize=address,undefined -fno-sanitize-recover=undefined
CXX17FLAGS = -g -O1 -fno-omit-frame-pointer -fvisibility-inlines-hidden -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS = -fsanitize=address,undefined
EOM
echo "== building with -fsanitize=address,undefined"
R_MAKEVARS_USER="$mk" KERNLEARN_CUDA=no MAKEFLAGS=-j2 R CMD INSTALL --preclean --no-test-load \
  --library="$lib" "$src" > "$lib/install.log" 2>&1 || { tail -n 40 "$lib/install.log"; exit 1; }
asan=$(${CC:-gcc} -print-file-name=libasan.so)
ubsan=$(${CC:-gcc} -print-file-name=libubsan.so)
echo "== running the tests with $asan and $ubsan preloaded"
LD_PRELOAD="$asan $ubsan" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
R_LIBS="$lib" KERNLEARN_THREADS=2 \
  Rscript -e "testthat::test_local('.', load_package = 'installed', filter = if (nzchar('$filter')) '$filter' else NULL, reporter = 'summary', stop_on_failure = TRUE)"
echo "== sanitizer run clean"
