#!/usr/bin/env bash
# tests/tools/toggle.sh -- output switched on and off takes effect at the call
#
# .design: design/tests.txt .test.toggle design/control.txt .sol.control.cut
#
# Usage: tests/tools/toggle.sh CONFIG [TOGGLES [few]]    e.g. tests/tools/toggle.sh build/san 300 few
#
# Runs CONFIG/tests/toggle_client (tests/clients/toggle/client.c: four workers,
# kind Job's output switched TOGGLES times, default 1000, at random
# intervals, by the program or by CONFIG/ctl from outside) in a fresh
# directory per case, under each writer, with and
# without the live file, raw and compact, with 64 KiB and 4 KiB
# buffers; ending cleanly, and killed (SIGKILL) while output is on and
# while it is off, where the live file is recovered, and once its files
# with a region torn as a kill during a retag leaves it (torn.py).  tests/clients/toggle/check.py
# checks that the log holds exactly the events emitted while output was
# on.  few: only 64 KiB buffers with the live file (each writer, raw and
# compact), as the sanitizers' builds are slow.  Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed,
# N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/toggle.sh CONFIG [TOGGLES]}
cfg=${cfg%/}
toggles=${2:-1000}
few=${3:-}
top=$PWD
client=$top/$cfg/tests/toggle_client
eventcnv=$top/$cfg/eventcnv
for f in "$client" "$eventcnv" "$top/$cfg/ctl"; do
  [ -x "$f" ] || { fail setup "$f is not built"; finish; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=detect_leaks=0

# run NAME ENDING ENV... -- ENDING: clean, kill-on / kill-off (killed
# after an even or odd count of changes: output on, or off), or ctl (each
# change made by telltale-ctl, from another process)
run() {
  local name=$1 ending=$2 n=$toggles kill="" killed="" how="" dir r out torn=""
  shift 2
  case $ending in
    torn) kill=kill killed=killed n=$(( toggles / 2 * 2 + 1 )) how=kill torn=1 ;;
    kill-on) kill=kill killed=killed n=$(( toggles / 2 * 2 )) how=kill ;;
    kill-off) kill=kill killed=killed n=$(( toggles / 2 * 2 + 1 )) how=kill ;;
    ctl) how="ctl $top/$cfg/ctl"; set -- TELLTALE_CTL=on "$@" ;;
  esac
  dir=$(mktemp -d "$tmp/run.XXXXXX")
  mkdir -m 700 "$dir/ctl"
  { (cd "$dir" && exec env TELLTALE_CTL_DIR="$dir/ctl" "$@" "$client" "$n" expect $how >out 2>err); } 2>/dev/null
  r=$?
  if [ -n "$kill" ] && [ "$r" != 137 ]; then
    fail "$name" "exit $r, not 137: $(head -3 "$dir/err")"; return
  elif [ -z "$kill" ] && [ "$r" != 0 ]; then
    fail "$name" "exit $r: $(head -3 "$dir/err")"; return
  fi
  if out=$(python3 "$top/tests/clients/toggle/check.py" "$eventcnv" "$dir/telltale.log" "$dir/expect" $killed 2>&1); then
    ok "$name" "$out"
  else
    fail "$name" "$out"
  fi
  # torn: the same files, a region torn as a kill during its retag
  # would leave it (tests/clients/toggle/torn.py, .sol.control.retag)
  if [ -n "$torn" ]; then
    if out=$(python3 "$top/tests/clients/toggle/torn.py" "$eventcnv" "$dir/telltale.log" 2>&1); then
      ok "$name,torn" "$(echo "$out" | grep -c '^ok') cases"
    else
      fail "$name,torn" "$(echo "$out" | grep '^FAIL' | tr '\n' ' ')"
    fi
  fi
  rm -rf "$dir"
}

for writer in sync async; do
  for map in on off; do
    [ -n "$few" ] && [ "$map" = off ] && continue
    for compact in 0 1; do
      for buffer in 65536 4096; do
        [ -n "$few" ] && [ "$buffer" = 4096 ] && continue
        env=(TELLTALE_WRITER=$writer TELLTALE_MAP=$map TELLTALE_COMPACT=$compact TELLTALE_BUFFER=$buffer)
        name="$writer,map=$map,compact=$compact,buffer=$buffer"
        run "$name" clean "${env[@]}"
        [ "$buffer" = 65536 ] && run "$name,by telltale-ctl" ctl "${env[@]}"
        if [ "$map" = on ]; then
          run "$name,kill-on" kill-on "${env[@]}"
          if [ "$writer,$compact,$buffer" = sync,0,65536 ]; then
            run "$name,kill-off" torn "${env[@]}"
          else
            run "$name,kill-off" kill-off "${env[@]}"
          fi
        fi
      done
    done
  done
done
# By gdb: "telltale off Job" and "telltale on Job" from the extension,
# which calls EventControl in the process, N times while it emits.
gdbRun() {
  local n=$1 dir pid i out what
  dir=$(mktemp -d "$tmp/run.XXXXXX")
  (cd "$dir" && exec "$client" 0 expect gdb "$n" >pid 2>err) &
  for i in $(seq 50); do [ -s "$dir/pid" ] && break; sleep 0.1; done
  pid=$(cat "$dir/pid")
  for i in $(seq "$n"); do
    sleep 0.2
    what=$([ $((i % 2)) = 1 ] && echo off || echo on)
    gdb -q -batch -p "$pid" -ex "source $top/tools/gdb/telltale.py" -ex "set var started = $i" \
        -ex "telltale $what Job" -ex "set var epoch = $i" >"$dir/gdb.$i" 2>&1
  done
  wait
  if ! grep -q "output" "$dir/gdb.1"; then
    fail "gdb" "$(head -3 "$dir/gdb.1")"
  elif grep -q "written to memory" "$dir"/gdb.*; then
    fail "gdb" "the extension did not call EventControl: $(grep -h 'written' "$dir"/gdb.* | head -1)"
  elif out=$(python3 "$top/tests/clients/toggle/check.py" "$eventcnv" "$dir/telltale.log" "$dir/expect" 2>&1); then
    ok "gdb" "$out"
  else
    fail "gdb" "$out"
  fi
}
if command -v gdb >/dev/null 2>&1 && [[ $cfg != *tsan* && $cfg != *san* ]]; then
  gdbRun 4
fi
finish
