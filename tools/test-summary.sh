#!/bin/sh
# Prints the testthat totals of an R CMD check folder as "N passed, N failed", and fails when
# the check reported an ERROR or a WARNING or a test failed.
dir="${1:-kernlearn.Rcheck}"
out="$dir/tests/testthat.Rout"
[ -f "$out" ] || out="$dir/tests/testthat.Rout.fail"
status=0
if [ -f "$out" ]; then
  line=$(grep -E '^\[ FAIL [0-9]+ \| WARN [0-9]+ \| SKIP [0-9]+ \| PASS [0-9]+ \]' "$out" | tail -n 1)
  fail=$(echo "$line" | sed -n 's/.*FAIL \([0-9]*\).*/\1/p')
  pass=$(echo "$line" | sed -n 's/.*PASS \([0-9]*\).*/\1/p')
  skip=$(echo "$line" | sed -n 's/.*SKIP \([0-9]*\).*/\1/p')
  if [ -z "$pass" ]; then
    echo "could not read the testthat summary in $out" >&2
    pass=0; fail=1; skip=0
  fi
else
  echo "no test output in $dir (the check stopped before the tests)" >&2
  pass=0; fail=1; skip=0
fi
log="$dir/00check.log"
if [ -f "$log" ]; then
  st=$(grep -E '^Status:' "$log" | tail -n 1)
  echo "R CMD check: ${st:-no status line}"
  case "$st" in *ERROR*|*WARNING*) status=1 ;; esac
  [ -n "$st" ] || status=1
else
  status=1
fi
[ "$fail" = 0 ] || status=1
echo "${pass} passed, ${fail} failed, ${skip} skipped"
exit $status
