#!/usr/bin/env bash
# tests/tools/trust.sh -- nothing emitted is lost, in every way a program ends
#
# .design: design/tests.txt .test.trust design/plinth.txt .sol.death.limits
#
# Usage: tests/tools/trust.sh CONFIG [REPEAT]    e.g. tests/tools/trust.sh build/san 3
#
# Runs CONFIG/tests/trust_client (tests/clients/trust/client.c: a registry of its
# own, four workers counting what they emit outside telltale) in a fresh
# directory per run, with 4 KiB buffers so that buffers switch often,
# and checks each log against the counts with tests/clients/trust/check.py:
#   exact    every event of every worker is there once, in order, whole
#            (the live file recovered where the program died);
#   prefix   TELLTALE_MAP=off: what is there is in order, and what is
#            lost is lost at the end, and then the log does not say
#            "end clean";
#   finish   at least what was emitted before EventFinish.
# The racy endings (return from main and exit from a worker while the
# others emit, a crash under a slow handler) run REPEAT times each
# (default 20), the others a few times.  The
# fatal ones also check the traceback (TELLTALE_DUMP=4096): in time
# order, threads named, the failing worker shown, nothing stamped after
# the moment of failure it states.  Prints "ok NAME" or "FAIL NAME: why" per case, then
# "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/trust.sh CONFIG}
cfg=${cfg%/}
repeat=${2:-20}
few=$(( repeat < 3 ? repeat : 3 ))
top=$PWD
client=$top/$cfg/tests/trust_client
eventcnv=$top/$cfg/eventcnv
checker=$top/tests/clients/trust/check.py
for f in "$client" "$eventcnv"; do
  [ -x "$f" ] || { fail setup "$f is not built"; finish; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The sanitizers' own handlers would take the faults before telltale.
export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:detect_stack_use_after_return=0
export TELLTALE_BUFFER=4096 TELLTALE_DUMP=4096

# run NAME MODE STATUS PROMISE [traceback] [ENV...] -- one run, checked
run() {
  local name=$1 mode=$2 status=$3 promise=$4 tb="" dir r
  shift 4
  # traceback[=N]: check the traceback, and that it shows N events
  case ${1:-} in traceback) tb=" "; shift ;; traceback=*) tb=${1#traceback=}; shift ;; esac
  dir=$(mktemp -d "$tmp/run.XXXXXX")
  # (the braces keep the shell's own "Segmentation fault" line quiet)
  { (cd "$dir" && exec env "$@" TRUST_COUNTS=counts TELLTALE_FILE=t.log "$client" "$mode" \
       >out 2>err); } 2>/dev/null
  r=$?
  if [ "$r" != "$status" ]; then
    echo "$name: exit $r, not $status: $(head -3 "$dir/err")"
    return 1
  fi
  if ! (cd "$dir" && python3 "$checker" "$eventcnv" t.log counts "$mode" "$promise" \
          ${tb:+err} ${tb:+$tb}) >"$dir/check" 2>&1; then
    echo "$name: $(grep FAIL "$dir/check" | head -3 | tr '\n' ' ') $(grep -v FAIL "$dir/check" | head -5 | tr '\n' ' ')"
    return 1
  fi
  if [ "$mode" = fork ]; then
    local child
    child=$(ls "$dir"/t.log.[0-9]* 2>/dev/null | grep -v live | head -1)
    if [ -z "$child" ] || ! (cd "$dir" && python3 "$checker" "$eventcnv" "$child" counts \
                             fork-child exact) >"$dir/check" 2>&1; then
      echo "$name: the child's log ${child:-(none)}: $(grep FAIL "$dir/check" | head -3 | tr '\n' ' ')"
      return 1
    fi
  fi
  rm -rf "$dir"
  return 0
}

# many NAME TIMES ARGS... -- run TIMES times: ok if every run is
many() {
  local name=$1 times=$2 why="" i
  shift 2
  for i in $(seq "$times"); do
    why=$(run "$name" "$@") || { fail "$name" "run $i of $times: $why"; return; }
  done
  ok "$name"
}

many return $repeat return 0 exact
many exit-worker $repeat exit-worker 3 exact
many segv-slow $repeat segv-slow 139 exact traceback
many finish $few finish 0 finish
many pthread-exit $few pthread-exit 0 exact
many segv $few segv 139 exact traceback
# With the default 64 KiB buffers the flight recorder holds more than
# 4096 events: the traceback shows that many, where the rings hold them:
# the failing worker's ring holds 1,800 to 3,600 events, and it faults
# only once the others have taken as many steps (client.c), so theirs
# hold the rest; under the sanitizers their rings may still hold fewer.
case $cfg in
  */san|*/tsan) many segv-4096 1 segv 139 exact traceback TELLTALE_BUFFER=65536 ;;
  *) many segv-4096 1 segv 139 exact traceback=4096 TELLTALE_BUFFER=65536 ;;
esac
many abort $few abort 134 exact
many assert $few assert 134 exact traceback
many overflow $few overflow 139 exact traceback
many fork $few fork 0 exact
many signal $few signal 0 exact
many return-async $few return 0 exact TELLTALE_WRITER=async
many exit-worker-async $few exit-worker 3 exact TELLTALE_WRITER=async
many return-async-drop $few return 0 exact TELLTALE_WRITER=async,drop
many exit-worker-async-drop $few exit-worker 3 exact TELLTALE_WRITER=async,drop
many segv-async $few segv 139 exact traceback TELLTALE_WRITER=async
many exec $few exec 0 exact
many exec-async $few exec 0 exact TELLTALE_WRITER=async
many exec-failed $few exec-failed 0 exact TELLTALE_WRITER=async
many exec-map-off $few exec 0 prefix TELLTALE_MAP=off
many return-map-off $few return 0 prefix TELLTALE_MAP=off
many exit-worker-map-off $few exit-worker 3 prefix TELLTALE_MAP=off
many segv-map-off $few segv 139 prefix traceback TELLTALE_MAP=off

# kill -9 from outside, at a moment of our choosing, 5 times
killed() {   # killed NAME PROMISE [ENV...]
  local name=$1 promise=$2 i dir pid why=""
  shift 2
  for i in 1 2 3 4 5; do
    dir=$(mktemp -d "$tmp/kill.XXXXXX")
    (cd "$dir" && exec env "$@" TRUST_COUNTS=counts TELLTALE_FILE=t.log "$client" kill \
       >out 2>err) &
    pid=$!
    for _ in $(seq 500); do grep -q ready "$dir/out" 2>/dev/null && break; sleep 0.01; done
    sleep "0.0$((RANDOM % 9 + 1))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if ! (cd "$dir" && python3 "$checker" "$eventcnv" t.log counts kill "$promise") \
         >"$dir/check" 2>&1; then
      why="run $i: $(grep FAIL "$dir/check" | head -3 | tr '\n' ' ')"
      break
    fi
    rm -rf "$dir"
  done
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "$why"; fi
}
killed kill exact
killed kill-map-off prefix TELLTALE_MAP=off

finish
