#!/usr/bin/env bash
# bench/malloc.sh -- the allocation recorder and replay, measured
#
# .design: design/telemetry.txt .malloc.perf .replay.fidelity
#
# Usage: bench/malloc.sh [RUNS]        (default 5 runs; the median is shown)
#        bench/malloc.sh --fidelity    only the peak RSS order check
#
# The workload is bench/malloc-workload.py under PYTHONMALLOC=malloc:
# build and drop large dicts of strings, about 16 million allocation
# events.  It measures
#   - the workload's wall time untraced, recorded by libtelltale-malloc.so,
#     and under heaptrack when heaptrack is installed;
#   - the recorder's log: bytes per event;
#   - replay's speed, in events and allocator calls per second;
#   - fidelity: the order of glibc, jemalloc, mimalloc and tcmalloc by
#     peak RSS in the replay, against their order by peak RSS when the
#     program itself runs under each (LD_PRELOAD), which must match.
# Needs build/ built (ninja).  Never part of the tests.
set -u
cd "$(dirname "$0")/.."
top=$PWD
runs=${1:-5}
fidelity=0
[ "$runs" = --fidelity ] && fidelity=1 runs=1
lib=$top/build/libtelltale-malloc.so
replay=$top/build/replay
work=$top/bench/malloc-workload.py
[ -e "$lib" ] && [ -x "$replay" ] || { echo "bench/malloc.sh: build first (ninja)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONMALLOC=malloc
# The interpreter itself, not a wrapper script (pyenv's shims are shell
# scripts that would be recorded and timed too).
python=$(python3 -c 'import sys; print(sys.executable)')

# seconds CMD... -- wall time of one run
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

# median CMD... -- the median wall time of $runs runs
median() {
  for _ in $(seq "$runs"); do seconds "$@"; done | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

if [ $fidelity = 0 ]; then
untraced=$(median "$python" "$work")
traced=$(median env TELLTALE_FILE="$tmp/py.log" LD_PRELOAD="$lib" "$python" "$work")
heaptrack=""
if command -v heaptrack >/dev/null 2>&1; then
  heaptrack=$(median heaptrack -o "$tmp/heaptrack" "$python" "$work")
fi
fi

TELLTALE_FILE="$tmp/py.log" LD_PRELOAD="$lib" "$python" "$work"
bytes=$(stat -c %s "$tmp/py.log")
allocs=glibc
for a in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
  [ -e "/usr/lib/x86_64-linux-gnu/${a#*:}" ] && allocs="$allocs,${a%%:*}"
done
"$replay" -q --no-progress -a "$allocs" --svg "$tmp/replay.svg" "$tmp/py.log" >"$tmp/report.txt" 2>&1
events=$(sed -n 's/^replay .*: \([0-9]*\) events.*/\1/p' "$tmp/report.txt")
row() { grep "^$1  " "$tmp/report.txt" | cut -c27-; }

if [ $fidelity = 0 ]; then
echo "workload: PYTHONMALLOC=malloc python3 bench/malloc-workload.py; median of $runs runs"
echo
printf '%-34s %10s %8s\n' "" "seconds" "ratio"
printf '%-34s %10s %8s\n' "untraced" "$untraced" "1.00"
printf '%-34s %10s %8.2f\n' "libtelltale-malloc.so" "$traced" "$(echo "$traced / $untraced" | bc -l)"
[ -n "$heaptrack" ] &&
  printf '%-34s %10s %8.2f\n' "heaptrack" "$heaptrack" "$(echo "$heaptrack / $untraced" | bc -l)"
echo
printf '%-34s %10s\n' "events recorded" "$events"
printf '%-34s %10s\n' "log bytes" "$bytes"
printf '%-34s %10.1f\n' "bytes per event" "$(echo "$bytes / $events" | bc -l)"
wall=$(row "replay wall time (s)" | awk '{print $1}')
printf '%-34s %10.2f\n' "replay (glibc), M events/s" "$(echo "$events / $wall / 1000000" | bc -l)"
printf '%-34s %10s\n' "allocator calls/s (M), per allocator" "$(row 'allocator ops/s (M)' | tr -s ' ')"
echo
echo "replay report:"
sed 's/^/  /' "$tmp/report.txt"
cp "$tmp/replay.svg" "$top/bench/replay-python.svg" 2>/dev/null &&
  echo "chart: bench/replay-python.svg"
fi

# Fidelity: order by peak RSS, replayed and real.
echo
echo "peak RSS order check:"
i=1
real=""
for a in $(echo "$allocs" | tr ',' ' '); do
  case $a in
    glibc) pre="" ;;
    jemalloc) pre=libjemalloc.so.2 ;;
    mimalloc) pre=libmimalloc.so.2 ;;
    tcmalloc) pre=libtcmalloc_minimal.so.4 ;;
  esac
  kb=$(for _ in 1 2 3; do
         { /usr/bin/time -f '%M' env LD_PRELOAD="$pre" "$python" "$work" >/dev/null; } 2>&1 | tail -1
       done | sort -g | sed -n 2p)      # the median of three
  rep=$(row "peak RSS growth (MB)" | awk -v c=$i '{print $c}')
  printf '  %-10s program peak RSS %8.1f MB   replay peak RSS growth %8.1f MB\n' "$a" "$(echo "$kb / 1024" | bc -l)" "$rep"
  real="$real$kb $a
"
  replayed="${replayed:-}$rep $a
"
  i=$((i + 1))
done
ro=$(printf '%s' "$real" | sort -g | awk '{print $2}' | tr '\n' ' ')
po=$(printf '%s' "$replayed" | sort -g | awk '{print $2}' | tr '\n' ' ')
echo "  program order: $ro"
echo "  replay order:  $po"
if [ "$ro" = "$po" ]; then echo "  order: match"; else echo "  order: MISMATCH"; exit 1; fi
