#!/usr/bin/env bash
# bench/callgrind.sh -- instructions per event for each benchmark case,
# counted by valgrind's callgrind: stable on a noisy machine.
#
# Usage: bench/callgrind.sh [BENCH]   (default build/bench/bench)
# For each case, runs it with N and 2N events; the difference in total
# instructions divided by N is the cost of one event, loop included.
set -eu
bench=${1:-build/bench/bench}
n=100000
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count() {   # count CASE N -> total instructions
  valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$bench" --case "$1" --count "$2" \
    --file "$dir/log" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; exit 1; }
  sed -n 's/^summary: //p' "$dir/out"
}
printf '%-10s %14s\n' case "instr/event"
for c in floor enabled async recorded filtered compiled fprintf; do
  a=$(count "$c" $n)
  b=$(count "$c" $((2 * n)))
  awk -v a="$a" -v b="$b" -v n=$n -v c="$c" 'BEGIN { printf "%-10s %14.2f\n", c, (b - a) / n }'
done
