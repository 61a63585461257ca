#!/usr/bin/env bash
# tests/tools/tags.sh -- every design tag the code cites exists in the design.
#
# The code cites design/telemetry.txt by tag (".sol.flush"); a tag that
# is renamed or cut must not leave citations pointing nowhere.  A tag is
# a line of the design that starts with ".name.name:".  Citations are
# looked for in the sources, scripts and build files; "(MPS .tag ...)"
# cites the Memory Pool System's design, not ours.
# Every tag is defined once.
# Prints "ok tags" or "FAIL tags: ..." and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
prefixes='sol|req|reg|stream|gen|plinth|eventcnv|export|build|bench|malloc|replay|gdb|test|intro|readership|pack|compact|heap|stacks|tools'
tags=$(grep -oE '^\.[a-z0-9]+(\.[a-z0-9]+)*:' design/telemetry.txt | tr -d ':' | sort -u)
# (The fuzz corpus and findings are binary: grep would print only
# "binary file matches" for the whole stream.)
missing=$(git ls-files -- '*.c' '*.h' '*.py' '*.sh' '*.ninja' gen build.ninja .ci bench tests tools src examples \
    ':!tests/data/fuzz/corpus' ':!tests/data/fuzz/findings' |
  sort -u | xargs cat 2>/dev/null | sed -E 's/\(MPS [^)]*\)//g' |
  grep -a -oE "(^|[ (])\.($prefixes)(\.[a-z0-9]+)*" |
  sed 's/^[ (]//' | sort -u | comm -23 - <(echo "$tags"))
# A tag is defined once: a second definition (or a wrapped line that
# starts with a tag and a colon) would make its citations ambiguous.
twice=$(grep -oE '^\.[a-z0-9]+(\.[a-z0-9]+)*:' design/telemetry.txt | sort | uniq -d | tr -d ':')
if [ -n "$twice" ]; then
  echo "FAIL tags: defined more than once in design/telemetry.txt:"
  for t in $twice; do
    echo "  $t: lines $(grep -nE "^\\$t:" design/telemetry.txt | cut -d: -f1 | tr '\n' ' ')"
  done
  echo "0 passed, 1 failed"
  exit 1
fi
if [ -z "$missing" ]; then
  echo "ok tags"
  echo "1 passed, 0 failed"
else
  echo "FAIL tags: cited in the code but not in design/telemetry.txt:"
  for t in $missing; do
    echo "  $t: $(git grep -n -- "$t" -- ':!design' | head -3 | tr '\n' ' ')"
  done
  echo "0 passed, 1 failed"
  exit 1
fi
