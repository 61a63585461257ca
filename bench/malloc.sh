#!/usr/bin/env bash
# bench/malloc.sh -- the allocation recorder and replay, measured
#
# .design: design/recorder.txt .malloc.perf design/heap.txt .replay.fidelity
#
# Usage: bench/malloc.sh [RUNS]        (default 5 runs; the medians are shown)
#        bench/malloc.sh --cost [RUNS] only the cost table, no replay
#        bench/malloc.sh --instr [ROUNDS]
#                                      the instruction table: callgrind
#                                      (valgrind), ROUNDS of the workload's
#                                      6 (default 1)
#        bench/malloc.sh --fidelity    only the peak RSS order check
#        bench/malloc.sh --floor [RUNS]
#                                      where the recorder's time goes:
#                                      its cost beside floors that any
#                                      recorder pays (default 11 runs)
#        bench/malloc.sh --threads [RUNS]
#                                      only replay of many recorded
#                                      threads (default 3 runs)
#        bench/malloc.sh --analysis    telltale-heap against heaptrack_print
#                                      on perl, jq and cppcheck: time,
#                                      memory, log bytes an event; and
#                                      recording time against the untraced
#                                      run and heaptrack's
#
# The workload is bench/malloc-workload.py under PYTHONMALLOC=malloc:
# build and drop large dicts of strings, about 16 million allocation
# events.  It measures
#   - the workload's wall and CPU time (or with --instr its instructions)
#     untraced, recorded by libtelltale-malloc.so
#     (compact, its default, .malloc.compact, through the writer thread,
#     .malloc.writer; without it, TELLTALE_WRITER=sync; raw, TELLTALE_COMPACT=0;
#     with TELLTALE_STACKS=32 by frame pointers and with
#     TELLTALE_STACKS=32:dwarf by libunwind, .stacks), and under
#     heaptrack when heaptrack is installed;
#   - the recorder's log: bytes per event in each of those;
#   - replay's speed, in events and allocator calls per second;
#   - replay of logs of 100 to 10,000 threads (tests/malloc_events
#     threads N: each thread one malloc, no ThreadExit; and "live": each
#     a malloc, then once all have, a free, so all are live at once):
#     the median wall time against glibc, and per thread
#     (.replay.threads.many);
#   - fidelity: the order of glibc, jemalloc, mimalloc and tcmalloc by
#     peak RSS growth in the replay, against their order by peak RSS
#     growth (less a trivial run's start-up RSS under the same allocator)
#     when the program itself runs under each (LD_PRELOAD), which must
#     match; for each workload: the Python one, sqlite3 and xz -T2 where
#     installed.
# Needs build/ built (ninja).  Never part of the tests.
set -u
cd "$(dirname "$0")/.."
top=$PWD
runs=${1:-5}
fidelity=0
cost=0
instr=0
[ "$runs" = --fidelity ] && fidelity=1 runs=1
[ "$runs" = --cost ] && cost=1 runs=${2:-5}
[ "$runs" = --instr ] && instr=1 rounds=${2:-1}
floor=0
[ "$runs" = --floor ] && floor=1 runs=${2:-11}
threads=0
[ "$runs" = --threads ] && threads=1 runs=${2:-3}
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

# Replay of many recorded threads: time against threads, which should
# be about linear.  .replay.threads.many
threadRows() {
  local n kind log TIMEFORMAT='%3R %3U %3S'
  echo "replay of many recorded threads, against glibc: medians of $runs runs of the"
  echo "whole command, wall and cpu (user + system) seconds, and cpu us a thread"
  for n in 100 1000 10000; do
    for kind in one live; do
      log=$tmp/threads-$n-$kind.log
      TELLTALE_MAP=off TELLTALE_COMPACT=1 TELLTALE_FILE=$log "$top/build/tests/malloc_events" \
        threads "$n" "$([ $kind = live ] && echo free)" >/dev/null
      : >"$tmp/t.threads"
      for _ in $(seq "$runs"); do
        { time "$replay" -q --no-progress -a glibc "$log" >/dev/null 2>&1; } 2>>"$tmp/t.threads"
      done
      read -r w c <<<"$(awk '{print $1, $2 + $3}' "$tmp/t.threads" | sort -g -k2 |
                        sed -n "$(( (runs + 1) / 2 ))p")"
      printf '  %6s threads, %-38s %6.2f s wall %6.2f s cpu %7.1f us\n' "$n" \
        "$([ $kind = live ] && echo "a malloc each, then a free (all live)" || echo "a malloc each, no ThreadExit")" \
        "$w" "$c" "$(echo "$c * 1000000 / $n" | bc -l)"
    done
  done
}
# The analysis, against heaptrack's: for perl, jq and cppcheck, each
# recorded by the recorder (TELLTALE_STACKS=32:dwarf, as heaptrack
# unwinds every stack) and by heaptrack; then telltale-heap's report
# against heaptrack_print's, wall and cpu time and peak RSS (the
# analysers' own, by getrusage of their children), and each log's bytes
# an event (telltale's events, eventcnv --count: the same allocation
# calls for both).  .heap.bounded
analysisRows() {
  local name log ht events tb hb
  command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null ||
    { echo "bench/malloc.sh --analysis: needs heaptrack" >&2; exit 1; }
  # usage NAME CMD... -- "wall cpu maxrss-MB" of CMD, output dropped
  usage() {
    python3 - "$@" <<'PYEOF'
import resource, subprocess, sys, time
# less what children of whatever started python3 took (a launcher's,
# counted across its exec)
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t = time.time()
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.2f %.2f %.1f" % (time.time() - t, r.ru_utime + r.ru_stime - r0.ru_utime - r0.ru_stime,
                          r.ru_maxrss / 1024))
PYEOF
  }
  seq 1 60000 | awk '{ printf "{\"id\":%d,\"name\":\"n%d\",\"tags\":[\"a\",\"b\",%d]}\n", $1, $1, $1 % 7 }' >"$tmp/in.json"
  echo "analysis: telltale-heap against heaptrack_print, each on its own recorder's log of the"
  echo "same run (TELLTALE_STACKS=32:dwarf); wall s, cpu s (user + system), peak RSS MB; log"
  echo "bytes per event (telltale's event count for both)"
  printf '\n%-10s %10s  %-22s %-22s %9s %9s\n' program events "telltale-heap" "heaptrack_print" \
    "telltale" "heaptrack"
  rec=
  for name in perl jq cppcheck; do
    command -v $name >/dev/null || { echo "$name: not installed"; continue; }
    log=$tmp/$name.log ht=$tmp/$name.ht
    case $name in
      perl) set -- perl -e 'my %h; for my $i (1..300000) { $h{"k$i"} = "v" x ($i % 50); } my @k = sort keys %h; print scalar(@k), "\n";' ;;
      jq) set -- jq -c '[.id, .name, (.tags | length)]' "$tmp/in.json" ;;
      cppcheck) set -- cppcheck --quiet --enable=all "$top/src/read/eventindex.c" "$top/tools/replay/replay.c" ;;
    esac
    rt=$(usage untraced "$@")
    tt=$(usage telltale env TELLTALE_STACKS=32:dwarf TELLTALE_FILE=$log LD_PRELOAD=$lib "$@")
    t0=$(usage telltale env TELLTALE_ZSTD=0 TELLTALE_STACKS=32:dwarf TELLTALE_FILE=$log.0 LD_PRELOAD=$lib "$@")
    htt=$(usage heaptrack heaptrack -o "$ht" "$@")
    ht=$(ls "$ht".* | head -1)
    events=$("$top/build/eventcnv" --summary "$log" 2>/dev/null | awk '$1 == "events" { print $2; exit }')
    tb=$(usage heap "$top/build/heap" "$log")
    hb=$(usage heaptrack_print heaptrack_print -f "$ht")
    printf '%-10s %10s  %-22s %-22s %9.2f %9.2f\n' "$name" "$events" \
      "$(awk '{ printf "%s s %s s %s MB", $1, $2, $3 }' <<<"$tb")" \
      "$(awk '{ printf "%s s %s s %s MB", $1, $2, $3 }' <<<"$hb")" \
      "$(echo "$(stat -c %s "$log") / $events" | bc -l)" "$(echo "$(stat -c %s "$ht") / $events" | bc -l)"
    rec+=$(printf '%-10s %-16s %-16s %-16s %-16s %6.2f' "$name" \
      "$(awk '{ printf "%s s %s s", $1, $2 }' <<<"$rt")" \
      "$(awk '{ printf "%s s %s s", $1, $2 }' <<<"$tt")" \
      "$(awk '{ printf "%s s %s s", $1, $2 }' <<<"$t0")" \
      "$(awk '{ printf "%s s %s s", $1, $2 }' <<<"$htt")" \
      "$(echo "$(stat -c %s "$log.0") / $events" | bc -l)")$'\n'
    rm -f "$log" "$log.0" "$tmp/$name.ht".*
  done
  echo
  echo "recording: wall s, cpu s (the program, the recorder's writer thread, heaptrack's"
  echo "interpreter and compressor); telltale with its zstd blocks (.malloc.zstd) and"
  echo "without (TELLTALE_ZSTD=0, whose log's bytes per event end the row)"
  printf '\n%-10s %-16s %-16s %-16s %-16s %6s\n' program untraced telltale "TELLTALE_ZSTD=0" heaptrack bytes
  printf '%s' "$rec"
}
if [ "$runs" = --analysis ]; then
  analysisRows
  exit 0
fi
if [ $threads = 1 ]; then
  [ -x "$top/build/tests/malloc_events" ] || { echo "bench/malloc.sh: build first (ninja)" >&2; exit 1; }
  threadRows
  exit 0
fi

# The instruction table.  Wall and CPU time on a shared virtual machine
# move by more than the recorder's choices do; the number of user-space
# instructions callgrind counts is the same every run (a fixed hash seed,
# PYTHONHASHSEED=0, makes the interpreter's dicts the same).  It leaves
# out the kernel: the log's bytes, which the kernel writes, are shown beside
# it, and --cost shows the system time.  .malloc.perf.instr
if [ $instr = 1 ]; then
  command -v valgrind >/dev/null 2>&1 || { echo "bench/malloc.sh --instr: needs valgrind" >&2; exit 1; }
  export PYTHONHASHSEED=0
  # ir NAME CMD... -- the instructions callgrind counts in CMD and every
  # program it execs (env, so that the valgrind launcher is not recorded):
  # "all program", all of them and those of the program's own threads,
  # which are all but telltale's writer thread (.malloc.writer)
  ir() {
    local name=$1 program=0 f n
    shift
    valgrind --tool=callgrind --trace-children=yes --separate-threads=yes \
      --callgrind-out-file="$tmp/cg.$name.%p" "$@" >/dev/null 2>"$tmp/vg.$name"
    for f in "$tmp/cg.$name".*-*; do
      n=$(sed -n 's/^summary: //p' "$f")
      grep -q writerRun "$f" || program=$((program + ${n:-0}))
    done
    echo "$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$tmp/vg.$name" | tail -1) $program"
  }
  # events LOG -- the events eventcnv counts in LOG
  events() { "$top/build/eventcnv" --count "$1" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
  # recorded NAME ENV... -- ir for the workload recorded with ENV
  recorded() {
    local name=$1
    shift
    ir "$name" env "$@" TELLTALE_FILE="$tmp/$name.log" LD_PRELOAD="$lib" "$python" "$work" "$rounds"
  }
  read -r base _ <<<"$(ir untraced "$python" "$work" "$rounds")"
  declare -A n
  n[compact]=$(recorded compact)
  n[sync]=$(recorded sync TELLTALE_WRITER=sync)
  n[raw]=$(recorded raw TELLTALE_COMPACT=0)
  n[fp]=$(recorded fp TELLTALE_STACKS=32)
  n[dwarf]=$(recorded dwarf TELLTALE_STACKS=32:dwarf)
  echo "workload: PYTHONMALLOC=malloc PYTHONHASHSEED=0 python3 bench/malloc-workload.py $rounds; callgrind"
  echo "(all: every thread's instructions; program: the program's own threads, all"
  echo " but telltale's writer thread, which compacts and writes the blocks)"
  echo
  printf '%-42s %14s %6s %14s %6s %10s %9s %8s\n' "" "all" "ratio" "program" "ratio" "events" \
    "+prog/ev" "bytes/ev"
  printf '%-42s %14s %6s %14s %6s\n' "untraced" "$base" "1.00" "$base" "1.00"
  for row in compact:"libtelltale-malloc.so" sync:"  no writer thread (TELLTALE_WRITER=sync)" \
             raw:"  raw blocks (TELLTALE_COMPACT=0)" fp:"  with stacks (32, frame pointers)" \
             dwarf:"  with stacks (32:dwarf)"; do
    k=${row%%:*}
    read -r a p <<<"${n[$k]}"
    e=$(events "$tmp/$k.log")
    [ "$e" -gt 0 ] || { echo "bench/malloc.sh: the $k run recorded nothing under valgrind" >&2; exit 1; }
    printf '%-42s %14s %6.3f %14s %6.3f %10s %9.1f %8.1f\n' "${row#*:}" "$a" "$(echo "$a / $base" | bc -l)" \
      "$p" "$(echo "$p / $base" | bc -l)" "$e" "$(echo "($p - $base) / $e" | bc -l)" \
      "$(echo "$(stat -c %s "$tmp/$k.log") / $e" | bc -l)"
  done
  # heaptrack's preload writes an empty trace under valgrind 3.19 (the
  # program's instructions alone would leave out its interpreter anyway)
  echo "heaptrack: not measured (its preload writes an empty trace under valgrind; see --cost)"
  exit 0
fi

# The cost runs are interleaved: each round runs every row once, so that
# the machine's load, which drifts over minutes on a shared virtual
# machine, falls on every row alike; each row's wall time and CPU time
# (user + system, the children's, from bash's time) are the medians of
# its $runs runs.  .malloc.perf.instr
# timed NAME CMD... -- one run of CMD: "wall user sys" appended to $tmp/t.NAME
timed() {
  local name=$1 TIMEFORMAT='%3R %3U %3S'
  shift
  { time "$@" >/dev/null 2>&1; } 2>>"$tmp/t.$name"
}
# median -- the median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'; }
# med NAME EXPR -- the median over NAME's runs of EXPR (awk, of $1 wall,
# $2 user, $3 system)
med() { awk "{print $2}" "$tmp/t.$1" | median; }
# paired NAME -- NAME's CPU time over the untraced run's of the same
# round: "median min max" of those ratios
paired() {
  paste -d ' ' "$tmp/t.untraced" "$tmp/t.$1" | awk '{print ($5 + $6) / ($2 + $3)}' >"$tmp/ratios"
  echo "$(median <"$tmp/ratios") $(sort -g "$tmp/ratios" | sed -n '1p;$p' | tr '\n' ' ')"
}

# The floor table: the recorder's wall time beside what any recorder of
# this program pays before it records anything, interleaved as above.
# The goal is a wall-time ratio, so wall time is shown, with each
# round's wall time over the untraced run's of that round.
# .malloc.perf.floor
if [ $floor = 1 ]; then
  for m in FORWARD THREAD; do
    cc -std=c11 -O2 -shared -fPIC -DFLOOR_$m -o "$tmp/floor-$m.so" "$top/bench/floor.c" -ldl -lpthread || exit 1
  done
  shm=/dev/shm
  [ "$(stat -f -c %T "$shm" 2>/dev/null)" = tmpfs ] || shm=""
  floorRows="untraced forward thread filtered ring"
  [ -n "$shm" ] && floorRows="$floorRows tmpfs"
  floorRows="$floorRows disk"
  for _ in $(seq "$runs"); do
    for r in $floorRows; do
      case $r in
        untraced) timed $r "$python" "$work" ;;
        forward) timed $r env LD_PRELOAD="$tmp/floor-FORWARD.so" "$python" "$work" ;;
        thread) timed $r env LD_PRELOAD="$tmp/floor-THREAD.so" "$python" "$work" ;;
        filtered) timed $r env TELLTALE_RECORD=none TELLTALE_FILE="$tmp/f.log" LD_PRELOAD="$lib" "$python" "$work" ;;
        ring) timed $r env TELLTALE_CONTROL=none TELLTALE_FILE="$tmp/r.log" LD_PRELOAD="$lib" "$python" "$work" ;;
        tmpfs) timed $r env TELLTALE_FILE="$shm/telltale-floor.$$.log" LD_PRELOAD="$lib" "$python" "$work"
               rm -f "$shm/telltale-floor.$$.log" "$shm/telltale-floor.$$.log.live" ;;
        disk) timed $r env TELLTALE_FILE="$tmp/d.log" LD_PRELOAD="$lib" "$python" "$work" ;;
      esac
    done
  done
  echo "workload: PYTHONMALLOC=malloc python3 bench/malloc-workload.py; medians of $runs interleaved runs"
  echo "(paired: the median of each round's wall time over the untraced run's in"
  echo " the same round; cpu: user + system, with telltale's writer thread)"
  echo
  printf '%-58s %7s %6s %7s %7s %6s
' "" "wall s" "ratio" "paired" "cpu s" "ratio"
  w0=$(med untraced '$1')
  c0=$(med untraced '$2 + $3')
  for r in $floorRows; do
    case $r in
      untraced) label=untraced ;;
      forward) label="an interposer that only forwards (bench/floor.c)" ;;
      thread) label="a second thread that sleeps (bench/floor.c)" ;;
      filtered) label="the recorder, events filtered (TELLTALE_RECORD=none)" ;;
      ring) label="the recorder, events kept in rings (TELLTALE_CONTROL=none)" ;;
      tmpfs) label="the recorder, the log on tmpfs" ;;
      disk) label="the recorder, the log on $(stat -f -c %T "$tmp")" ;;
    esac
    w=$(med "$r" '$1')
    c=$(med "$r" '$2 + $3')
    pw=$(paste -d ' ' "$tmp/t.untraced" "$tmp/t.$r" | awk '{print $4 / $1}' | median)
    printf '%-58s %7s %6.3f %7.3f %7s %6.3f\n' "$label" "$w" "$(echo "$w / $w0" | bc -l)" "$pw" \
      "$c" "$(echo "$c / $c0" | bc -l)"
  done
  exit 0
fi

rows="untraced compact sync raw fp dwarf"
command -v heaptrack >/dev/null 2>&1 && rows="$rows heaptrack"

if [ $fidelity = 0 ]; then
for _ in $(seq "$runs"); do
  timed untraced "$python" "$work"
  timed compact env TELLTALE_FILE="$tmp/py.log" LD_PRELOAD="$lib" "$python" "$work"
  timed sync env TELLTALE_WRITER=sync TELLTALE_FILE="$tmp/sync.log" LD_PRELOAD="$lib" "$python" "$work"
  timed raw env TELLTALE_COMPACT=0 TELLTALE_FILE="$tmp/raw.log" LD_PRELOAD="$lib" "$python" "$work"
  timed fp env TELLTALE_STACKS=32 TELLTALE_FILE="$tmp/fp.log" LD_PRELOAD="$lib" "$python" "$work"
  timed dwarf env TELLTALE_STACKS=32:dwarf TELLTALE_FILE="$tmp/dwarf.log" LD_PRELOAD="$lib" "$python" "$work"
  case $rows in *heaptrack) timed heaptrack heaptrack -o "$tmp/heaptrack" "$python" "$work" ;; esac
done
fi

TELLTALE_FILE="$tmp/py.log" LD_PRELOAD="$lib" "$python" "$work"
bytes=$(stat -c %s "$tmp/py.log")
allocs=glibc
for a in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
  [ -e "/usr/lib/x86_64-linux-gnu/${a#*:}" ] && allocs="$allocs,${a%%:*}"
done
# eventsIn LOG -- the events eventcnv counts in LOG
eventsIn() { "$top/build/eventcnv" --count "$1" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
if [ $cost = 0 ]; then
  "$replay" -q --no-progress -a "$allocs" --svg "$tmp/replay.svg" "$tmp/py.log" >"$tmp/report.txt" 2>&1
  events=$(sed -n 's/^replay .*: \([0-9]*\) events.*/\1/p' "$tmp/report.txt")
else
  events=$(eventsIn "$tmp/py.log")
fi
row() { grep "^$1  " "$tmp/report.txt" | cut -c27-; }

if [ $fidelity = 0 ]; then
echo "workload: PYTHONMALLOC=malloc python3 bench/malloc-workload.py; medians of $runs interleaved runs"
echo "(cpu: user + system seconds, the program's and its children's; least: the"
echo " least cpu over the untraced run's least; paired: the median, least and"
echo " greatest of each round's cpu over the untraced run's in the same round)"
echo
printf '%-42s %7s %6s %7s %6s %7s %6s %18s\n' "" "wall s" "ratio" "cpu s" "ratio" "sys s" "least" "paired cpu ratio"
w0=$(med untraced '$1')
c0=$(med untraced '$2 + $3')
l0=$(awk '{print $2 + $3}' "$tmp/t.untraced" | sort -g | head -1)
for r in $rows; do
  case $r in
    untraced) label=untraced ;;
    compact) label=libtelltale-malloc.so ;;
    sync) label="  no writer thread (TELLTALE_WRITER=sync)" ;;
    raw) label="  raw blocks (TELLTALE_COMPACT=0)" ;;
    fp) label="  with stacks (32, frame pointers)" ;;
    dwarf) label="  with stacks (32:dwarf)" ;;
    heaptrack) label=heaptrack ;;
  esac
  w=$(med "$r" '$1')
  c=$(med "$r" '$2 + $3')
  read -r pm plo phi <<<"$(paired "$r")"
  l=$(awk '{print $2 + $3}' "$tmp/t.$r" | sort -g | head -1)
  printf '%-42s %7s %6.2f %7s %6.2f %7s %6.2f %6.2f %5.2f-%4.2f\n' "$label" "$w" "$(echo "$w / $w0" | bc -l)" \
    "$c" "$(echo "$c / $c0" | bc -l)" "$(med "$r" '$3')" "$(echo "$l / $l0" | bc -l)" "$pm" "$plo" "$phi"
done
echo
printf '%-34s %10s\n' "events recorded" "$events"
printf '%-34s %10s\n' "log bytes" "$bytes"
printf '%-34s %10.1f\n' "bytes per event" "$(echo "$bytes / $events" | bc -l)"
for mode in raw:"raw blocks" fp:"with stacks (frame pointers)" dwarf:"with stacks (dwarf)"; do
  n=$(eventsIn "$tmp/${mode%%:*}.log")
  [ "$n" -gt 0 ] && printf '%-34s %10.1f\n' "  ${mode#*:}" "$(echo "$(stat -c %s "$tmp/${mode%%:*}.log") / $n" | bc -l)"
done
[ $cost = 1 ] && exit 0
wall=$(row "replay wall time (s)" | awk '{print $1}')
printf '%-34s %10.2f\n' "replay (glibc), M events/s" "$(echo "$events / $wall / 1000000" | bc -l)"
printf '%-34s %10s\n' "allocator calls/s (M), per allocator" "$(row 'allocator ops/s (M)' | tr -s ' ')"
echo
echo "replay report:"
sed 's/^/  /' "$tmp/report.txt"
echo
threadRows
cp "$tmp/replay.svg" "$top/bench/replay-python.svg" 2>/dev/null &&
  echo "chart: bench/replay-python.svg"
fi

# Fidelity: order by peak RSS, replayed and real, for every workload.
# A program's peak RSS includes what the allocator and the program cost
# before any work (a trivial run under the same allocator): that is
# subtracted, so that the program's growth is ranked against the
# replay's growth, like with like.  .replay.fidelity
preloadOf() {
  case $1 in
    glibc) echo "" ;;
    jemalloc) echo libjemalloc.so.2 ;;
    mimalloc) echo libmimalloc.so.2 ;;
    tcmalloc) echo libtcmalloc_minimal.so.4 ;;
  esac
}
# peakKb PRELOAD CMD... -- the median of three runs' peak RSS, in KiB,
# the command's own (bench/peakrss.c says why not python's rusage)
cc -O2 -o "$tmp/peakrss" "$top/bench/peakrss.c" || exit 1
peakKb() {
  local pre=$1
  shift
  for _ in 1 2 3; do
    "$tmp/peakrss" "$pre" "$@"
  done | sort -g | sed -n 2p
}
# fidelity NAME TRIVIAL -- WORKLOAD...: TRIVIAL is the same program doing
# nothing, a quoted command
mismatches=0
fidelity() {
  local name=$1 trivial=$2 log="$tmp/fid.log" i=1 real="" replayed="" a pre kb base rep ro po
  shift 3
  rm -f "$log"*
  TELLTALE_FILE="$log" LD_PRELOAD="$lib" "$@" >/dev/null 2>&1
  "$replay" -q --no-progress -a "$allocs" "$log" >"$tmp/fid.txt" 2>&1
  echo
  echo "peak RSS order check, $name ($(sed -n 's/^replay .*: \([0-9]*\) events.*/\1/p' "$tmp/fid.txt") events):"
  for a in $(echo "$allocs" | tr ',' ' '); do
    pre=$(preloadOf "$a")
    kb=$(peakKb "$pre" "$@")
    base=$(peakKb "$pre" sh -c "$trivial")
    rep=$(grep "^peak RSS growth (MB)  " "$tmp/fid.txt" | cut -c27- | awk -v c=$i '{print $c}')
    printf '  %-10s program %8.1f MB - start-up %6.1f MB = growth %8.1f MB   replay growth %8.1f MB\n' \
      "$a" "$(echo "$kb / 1024" | bc -l)" "$(echo "$base / 1024" | bc -l)" \
      "$(echo "($kb - $base) / 1024" | bc -l)" "$rep"
    real="$real$((kb - base)) $a
"
    replayed="$replayed$rep $a
"
    i=$((i + 1))
  done
  ro=$(printf '%s' "$real" | sort -g | awk '{print $2}' | tr '\n' ' ')
  po=$(printf '%s' "$replayed" | sort -g | awk '{print $2}' | tr '\n' ' ')
  echo "  program order: $ro"
  echo "  replay order:  $po"
  # Every pair of allocators whose program growth differs by more than
  # 5% must be in the same order in the replay; closer pairs are ties.
  if paste <(printf '%s' "$real") <(printf '%s' "$replayed") | awk '
       { g[NR] = $1; r[NR] = $3; n = NR }
       END { bad = 0
             for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) {
               d = g[i] - g[j]; m = g[i] > g[j] ? g[i] : g[j]
               if ((d > 0 ? d : -d) > 0.05 * m && (d > 0) != (r[i] - r[j] > 0)) bad = 1 }
             exit bad }'; then
    echo "  order: match (allocators within 5% of each other in the program are ties)"
  else
    echo "  order: MISMATCH"
    mismatches=$((mismatches + 1))
  fi
}
fidelity python "$python -c pass" -- "$python" "$work"
if command -v sqlite3 >/dev/null 2>&1; then
  fidelity sqlite3 "sqlite3 :memory: 'select 1'" -- sqlite3 :memory: \
    "create table t(a, b); with recursive n(i) as (select 1 union all select i + 1 from n where i < 300000) insert into t select i, hex(randomblob(40)) from n; create index ti on t(b); select count(*) from t group by substr(b, 1, 2);"
fi
if command -v xz >/dev/null 2>&1; then
  head -c 30000000 /dev/urandom | base64 >"$tmp/xz.in"
  fidelity "xz -T2" "xz --version" -- xz -T2 -6 -k -c "$tmp/xz.in"
fi
[ $mismatches -eq 0 ] || exit 1
