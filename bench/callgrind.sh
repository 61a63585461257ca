#!/usr/bin/env bash
# bench/callgrind.sh -- instructions per event for each benchmark case,
# counted by valgrind's callgrind: stable on a noisy machine.
#
# Usage: bench/callgrind.sh [BENCH [LTTNG-NOTE]]   (default build/bench/bench)
# For each case that BENCH --list names, runs it with N and 2N events; the
# difference in total instructions divided by N is the cost of one event,
# loop included.  The LTTng cases (bench/lttng.sh) that BENCH cannot run
# get a row saying LTTNG-NOTE, if it is given; one that cannot run under
# valgrind gets a row saying why, and the others are still counted.
set -eu
bench=${1:-build/bench/bench}
note=${2:-}
n=100000
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# liblttng-ust registers with the session daemon before main, and gives up
# after 3 s by default: too soon under valgrind.  Its blocking channel
# needs LTTNG_UST_ALLOW_BLOCKING (bench/lttng.sh).
export LTTNG_UST_REGISTER_TIMEOUT=60000 LTTNG_UST_ALLOW_BLOCKING=1
count() {   # count CASE N -> total instructions, or status 1 with the error in $dir/err
  valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$bench" --case "$1" --count "$2" \
    --file "$dir/log" >/dev/null 2>"$dir/err" || return 1
  sed -n 's/^summary: //p' "$dir/out"
}
# The duty-cycle cases' slices are calibrated in time, which valgrind
# stretches: their instructions would be valgrind's, so they are left out.
cases=$("$bench" --list | grep -v '^work\|^duty')
printf '%-10s %14s\n' case "instr/event"
for c in $cases; do
  if a=$(count "$c" $n) && b=$(count "$c" $((2 * n))); then
    awk -v a="$a" -v b="$b" -v n=$n -v c="$c" 'BEGIN { printf "%-10s %14.2f\n", c, (b - a) / n }'
  elif [ "${c#lttng-}" != "$c" ]; then
    printf '%-10s %14s  %s\n' "$c" - "callgrind: $(grep -v '^==' "$dir/err" | head -1)"
  else
    cat "$dir/err" >&2
    exit 1
  fi
done
for c in lttng-off lttng-on; do
  if [ -n "$note" ] && ! grep -qx -- "$c" <<<"$cases"; then
    printf '%-10s %14s  %s\n' "$c" - "$note"
  fi
done
if grep -qx lttng-on <<<"$cases"; then
  echo "lttng-on emitted $((3 * n)) events"
fi
