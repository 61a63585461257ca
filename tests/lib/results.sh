# tests/lib/results.sh -- the lines every shell suite prints, as
# tests/lib/results.py prints them for the Python ones: "ok NAME" or
# "FAIL NAME: why" per case, "skip NAME: why" for one that could not run
# here, then "N passed, N failed" (tests/suites).
#
# .design: design/tests.txt .test.suites
#
# Sourced by each shell suite, from the top of the tree as
#   . tests/lib/results.sh
# or else by its path.

passed=0 failed=0 skipped=0

# ok NAME [DETAIL] -- a case passed
ok() { passed=$((passed + 1)); echo "ok $1${2:+ ($2)}"; }

# fail NAME WHY -- a case failed
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# result NAME WHY -- ok NAME if WHY is empty, else fail NAME WHY (as
# tests/lib/results.py's result)
result() { if [ -z "$2" ]; then ok "$1"; else fail "$1" "$2"; fi; }

# skip NAME WHY -- a case could not run here: neither passed nor failed
skip() { skipped=$((skipped + 1)); echo "skip $1: $2"; }

# finish -- the counts, and exit: 1 if a case failed, else 77 if one was
# skipped (tests/run lists the suite as skipped, never as passed), else 0
finish() {
  [ "$skipped" -gt 0 ] && echo "$skipped skipped (not passed)"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] || exit 1
  [ "$skipped" -eq 0 ] || exit 77
  exit 0
}
