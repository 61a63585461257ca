#!/usr/bin/env bash
# tests/tools/gdb.sh CONFIG -- the gdb extension (tools/gdb/telltale.py) on a
# live process and on a core file.  CONFIG is a build directory: build,
# build/clang, ...
#
# .design: design/tools.txt .gdb
#
# Covers:
#   gdb-attach    gdb can attach to a process here (ptrace); if it cannot,
#                 every other check fails: this test never skips
#   gdb-kinds     "telltale kinds" shows Noisy's output off, and Test's
#                 output on, then off after "telltale off Test"
#   gdb-control   the change is in the process: the registry's control is 0xff,
#                 read back by gdb and again by a second gdb session
#   gdb-refuse    an unknown kind is an error listing the kinds; Telltale
#                 cannot be turned off
#   gdb-dump      "telltale dump 5": the last 5 events in time order, from
#                 three threads and two kinds, Noisy (output off, so only
#                 in the flight recorder) among them, P and A fields
#                 labelled as EventDump labels them
#   gdb-eventdump "call EventDump(4096)" prints to the target's stderr
#                 exactly the lines "telltale dump 4096" prints; the Noisy
#                 ring has wrapped: its latest events run without a gap to
#                 w=5000, its first ones are gone
#   gdb-core-filter the runtime set bit 3 of the process's coredump_filter
#                 at start-up (.plinth.core)
#   gdb-core      a core made with gcore (coredump_filter bit 3 set, so the
#                 live file's regions are in it), read after the process
#                 and its log are gone: the same 5 events; kinds readable;
#                 changing a kind is refused (a core is read-only)
#   gdb-core-nolog a core without the live file's regions and without the
#                 log file: each unreadable buffer is reported, Test's
#                 and Noisy's alike (a kind whose output is off fills
#                 regions of the live file too: .sol.control.cut), and
#                 nothing else is shown; no traceback
#   gdb-core-other the same core after a new run in the same place has
#                 written a live file of the same name: the extension
#                 says that file is another session's and reads none of
#                 its regions (no T1 Test events)
#   gdb-corrupt   a corrupt event in a live buffer: reported, the rest of
#                 that buffer skipped, the other buffers dumped
#   gdb-clocksync with the plinth's frequency 0 in memory, the dump works
#                 one out from the ClockSync events: within 1% of it
#   gdb-notelltale a process without telltale: a clear error
#   gdb-help      "help telltale" documents every command
#   gdb-crash     gdb_target crash: abort() prints the traceback to stderr
# Prints "ok NAME" or "FAIL NAME: why" for each, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/gdb.sh CONFIG-DIR}
bin=$PWD/$cfg/tests/gdb_target
py=$PWD/tools/gdb/telltale.py
tmp=$(mktemp -d)
pid=
other=

cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$other" ] && kill "$other" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# events FILE -- the event lines of gdb's or the target's output, without
# the time columns and with runs of spaces squeezed: "T1 Test TestW w=1"
events() {
  grep -E '^ *-?[0-9]+\.[0-9]{9} [0-9:.]{18} T[0-9]+ ' "$1" | awk '{$1 = $2 = ""; sub(/^ +/, ""); print}'
}
# elapsed FILE -- the elapsed column of the event lines
elapsed() {
  grep -E '^ *-?[0-9]+\.[0-9]{9} [0-9:.]{18} T[0-9]+ ' "$1" | awk '{print $1}'
}
# traceback FILE -- fail if gdb printed a Python traceback
notraceback() {
  ! grep -q -e 'Traceback' -e 'Python Exception' "$1"
}

if [ ! -x "$bin" ]; then
  fail gdb-attach "$bin is not built"
  finish
fi
if ! command -v gdb >/dev/null || ! command -v gcore >/dev/null; then
  fail gdb-attach "gdb and gcore are needed (.ci/install installs them)"
  finish
fi

# The target, with its log in $tmp.
export TELLTALE_FILE=$tmp/t.log
unset TELLTALE_CONTROL TELLTALE_RECORD TELLTALE_MIRROR TELLTALE_BUFFER TELLTALE_MAP TELLTALE_DUMP
"$bin" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^ready$' "$tmp/out" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q '^ready$' "$tmp/out"; then
  fail gdb-attach "gdb_target did not say ready: $(cat "$tmp/err")"
  finish
fi

# (a) live
gdb -p "$pid" -batch -nx -x "$py" -ex 'telltale kinds' -ex 'telltale off Test' \
    -ex 'telltale kinds' -ex 'print/x EventSource_telltale_tests_in_eventgen_c.control' -ex 'telltale dump 5' \
    -ex 'telltale on Bogus' -ex 'telltale off Telltale' >"$tmp/live" 2>&1
if grep -q -i -e 'ptrace' -e 'could not attach' -e 'Operation not permitted' "$tmp/live" ||
   ! grep -q 'registries "telltale tests"' "$tmp/live"; then
  fail gdb-attach "gdb cannot attach to process $pid (ptrace forbidden here?): $(head -5 "$tmp/live")"
  finish
fi
ok gdb-attach

# Slot 0 is telltale's own registry's, kind Telltale; the program's
# kinds follow, from slot 1 (.reg.many).
if [ "$(grep -c -E '^ +10 +Noisy +on +off ' "$tmp/live")" = 2 ] &&
   [ "$(grep -c -E '^ +9 +Test +on +on ' "$tmp/live")" = 1 ] &&
   [ "$(grep -c -E '^ +9 +Test +on +off ' "$tmp/live")" = 1 ] &&
   grep -q -F 'output off: Test (1 of 1 were on, now 0)' "$tmp/live" &&
   [ "$(grep -n -E '^ +9 +Test +on +on ' "$tmp/live" | cut -d: -f1)" -lt \
     "$(grep -n -E '^ +9 +Test +on +off ' "$tmp/live" | cut -d: -f1)" ]; then
  ok gdb-kinds
else
  fail gdb-kinds "kinds listings wrong: $(grep -E '^ +(9|10) ' "$tmp/live")"
fi

cat >"$tmp/expect5" <<'EOF'
T2 Noisy TestPAW p=0x1386 a=0x270c w=4998
T2 Noisy TestPAW p=0x1387[p4999] a=0x270e w=4999
T2 Noisy TestPAW p=0x1388 a=0x2710[last] w=5000
T1 Test TestW w=999
T1 Test TestW w=1000
EOF
events "$tmp/live" >"$tmp/live5"
if grep -q -F 'telltale: the last 5 of ' "$tmp/live" && cmp -s "$tmp/expect5" "$tmp/live5" &&
   elapsed "$tmp/live" | sort -c -g && notraceback "$tmp/live"; then
  ok gdb-dump
else
  fail gdb-dump "$(diff "$tmp/expect5" "$tmp/live5"; grep -e '^telltale' -e Traceback "$tmp/live")"
fi

if grep -q -F "telltale: unknown kind 'Bogus'; the kinds are all, Telltale, Arena, Pool, Trace, Seg, Ref, Object, User, Test, Noisy" "$tmp/live" &&
   grep -q -F "telltale: the Telltale kind can't be turned off: the runtime keeps it on" "$tmp/live"; then
  ok gdb-refuse
else
  fail gdb-refuse "$(grep '^telltale' "$tmp/live")"
fi

# EventDump through the process, against the extension, in a second session,
# once the control thread has sent the session's ClockRate (a second after
# the start: .sol.clock.rate), so that the clock's rate cannot change
# between the two dumps.
for _ in $(seq 100); do
  "$cfg/eventcnv" --count "$TELLTALE_FILE" 2>/dev/null | grep -q ' ClockRate$' && break
  sleep 0.1
done
: >"$tmp/err"
gdb -p "$pid" -batch -nx -x "$py" -ex 'print/x EventSource_telltale_tests_in_eventgen_c.control' -ex 'call EventDump(4096)' \
    -ex 'telltale dump 4096' >"$tmp/both" 2>&1
if grep -q -E '^\$1 = 0xff$' "$tmp/live" && grep -q -E '^\$1 = 0xff$' "$tmp/both"; then
  ok gdb-control
else
  fail gdb-control "the program's registry's control is not 0xff in the process: $(grep '^\$1' "$tmp/live" "$tmp/both")"
fi
events "$tmp/err" >"$tmp/eventdump"
events "$tmp/both" >"$tmp/ours"
grep -E '^T2 Noisy TestPAW ' "$tmp/ours" | sed 's/.*w=//' >"$tmp/noisy"
first=$(head -1 "$tmp/noisy"); first=${first:-0}
if grep -q -F 'telltale: the last 4096 events in the flight recorder, oldest first' "$tmp/err" &&
   [ "$(wc -l <"$tmp/eventdump")" = 4096 ] && cmp -s "$tmp/eventdump" "$tmp/ours" &&
   [ "$(elapsed "$tmp/err" | tr '\n' ' ')" = "$(elapsed "$tmp/both" | tr '\n' ' ')" ] &&
   [ "$first" -gt 1 ] && [ "$(tail -1 "$tmp/noisy")" = 5000 ] &&
   [ "$(seq "$first" 5000 | tr '\n' ' ')" = "$(tr '\n' ' ' <"$tmp/noisy")" ]; then
  ok gdb-eventdump
else
  fail gdb-eventdump "EventDump (target's stderr, $(wc -l <"$tmp/eventdump") events) and telltale dump ($(wc -l <"$tmp/ours")) differ, or the ring is wrong (Noisy w=$first..$(tail -1 "$tmp/noisy")): $(diff "$tmp/eventdump" "$tmp/ours" | head -5; diff "$tmp/eventdump" "$tmp/ours" | grep "^>" | head -5)"
fi

# (b) cores, made by gdb: one with the process's own coredump_filter,
# which the runtime gave bit 3 at start-up (file-backed shared mappings,
# so the live file's regions are in it), and one without bit 3.
filter=$(cat "/proc/$pid/coredump_filter")
if [ $((0x$filter & 0x8)) -ne 0 ]; then
  ok gdb-core-filter
else
  fail gdb-core-filter "the process's coredump_filter is $filter: bit 3 not set"
fi
gdb -p "$pid" -batch -nx -ex "gcore $tmp/core" >"$tmp/gcore" 2>&1
printf '0x%x\n' $((0x$filter & ~0x8)) >"/proc/$pid/coredump_filter"
gdb -p "$pid" -batch -nx -ex "gcore $tmp/core.nolog" >"$tmp/gcore0" 2>&1
printf '0x%x\n' $((0x$filter)) >"/proc/$pid/coredump_filter"

# A corrupt event: T1's TestW w=999 (the last but one of its Test
# buffer, 20 bytes an event) gets length 5.
gdb -p "$pid" -batch -nx -x "$py" \
    -ex 'python
t = gdb.parse_and_eval("eventSession.threads")
while int(t["serial"]) != 1:
    t = t["next"]
end = int(t["hot"][int(gdb.parse_and_eval("EventSource_telltale_tests_in_eventgen_c.base")) + 8].dereference()["next"])
gdb.selected_inferior().write_memory(end - 40 + 2, b"\x05\x00")
end' -ex 'telltale dump 5' >"$tmp/corrupt" 2>&1
gdb -p "$pid" -batch -nx -x "$py" -ex "set var 'plinth.c'::clockFrequency = 0" \
    -ex 'telltale dump 1' >"$tmp/clocksync" 2>&1
cat >"$tmp/expect-corrupt" <<'EOF'
T2 Noisy TestPAW p=0x1384 a=0x2708 w=4996
T2 Noisy TestPAW p=0x1385 a=0x270a w=4997
T2 Noisy TestPAW p=0x1386 a=0x270c w=4998
T2 Noisy TestPAW p=0x1387[p4999] a=0x270e w=4999
T2 Noisy TestPAW p=0x1388 a=0x2710[last] w=5000
EOF
events "$tmp/corrupt" >"$tmp/corrupt5"
if grep -q -E '^telltale: T1 Test: corrupt event at 0x[0-9a-f]+: event length 5 is less than the 12-byte event header: stopped reading this buffer$' "$tmp/corrupt" &&
   cmp -s "$tmp/expect-corrupt" "$tmp/corrupt5" && notraceback "$tmp/corrupt"; then
  ok gdb-corrupt
else
  fail gdb-corrupt "$(grep -v '^\[' "$tmp/corrupt" | tail -12)"
fi

# Without the plinth's frequency: one from the ClockSync events, within 3%
# (the target lives for tens of milliseconds, and on a loaded machine a
# preemption between the paired clock reads shows at about 1%).
# (The live dump's rate is the plinth's, or the session's ClockRate once
# the target has run a second: .sol.clock.rate.)
hz=$(sed -n 's/^telltale: the last 5 of .*(clock: \([0-9]*\) Hz, \(the plinth.s estimate, from memory\|from the session.s ClockRate\)):$/\1/p' "$tmp/live")
synced=$(sed -n 's/^telltale: the last 1 of .*(clock: \([0-9]*\) Hz, from ClockSync events):$/\1/p' "$tmp/clocksync")
if [ -n "$hz" ] && [ -n "$synced" ] &&
   [ $(( (synced - hz) * 100 / hz )) -lt 3 ] && [ $(( (hz - synced) * 100 / hz )) -lt 3 ]; then
  ok gdb-clocksync
else
  fail gdb-clocksync "plinth's frequency '$hz', from ClockSync '$synced'"
fi

kill "$pid"
wait "$pid" 2>/dev/null
pid=
rm -f "$tmp"/t.log*

if [ ! -s "$tmp/core" ] || [ ! -s "$tmp/core.nolog" ]; then
  fail gdb-core "gcore made no core: $(tail -3 "$tmp/gcore")"
else
  gdb -batch -nx "$bin" "$tmp/core" -x "$py" -ex 'telltale kinds' -ex 'telltale dump 5' \
      -ex 'telltale on Noisy' >"$tmp/core.out" 2>&1
  events "$tmp/core.out" >"$tmp/core5"
  if cmp -s "$tmp/expect5" "$tmp/core5" && grep -q -F 'telltale: the last 5 of ' "$tmp/core.out" &&
     grep -q -E '^ +9 +Test +on +off ' "$tmp/core.out" &&
     grep -q -F 'telltale: cannot change output' "$tmp/core.out" &&
     ! grep -q 'cannot read the buffer' "$tmp/core.out" && notraceback "$tmp/core.out"; then
    ok gdb-core
  else
    fail gdb-core "$(diff "$tmp/expect5" "$tmp/core5"; grep -e '^telltale' -e Traceback "$tmp/core.out")"
  fi
  gdb -batch -nx "$bin" "$tmp/core.nolog" -x "$py" -ex 'telltale dump 5' >"$tmp/nolog.out" 2>&1
  events "$tmp/nolog.out" >"$tmp/nolog5"
  if [ ! -s "$tmp/nolog5" ] &&
     grep -q -E '^telltale: T1 Test: cannot read the buffer at 0x[0-9a-f]+-0x[0-9a-f]+: skipped \(a region of the live file' "$tmp/nolog.out" &&
     grep -q -E '^telltale: T2 Noisy: cannot read the buffer at 0x[0-9a-f]+-0x[0-9a-f]+: skipped \(a region of the live file' "$tmp/nolog.out" &&
     notraceback "$tmp/nolog.out"; then
    ok gdb-core-nolog
  else
    fail gdb-core-nolog "$(grep -e '^telltale' -e Traceback "$tmp/nolog.out"; cat "$tmp/nolog5")"
  fi
  # A new run in the same place writes a live file of the same name: the
  # old core must not be read against it.
  "$bin" >"$tmp/other.out" 2>&1 &
  other=$!
  for _ in $(seq 100); do grep -q ready "$tmp/other.out" 2>/dev/null && break; sleep 0.05; done
  gdb -batch -nx "$bin" "$tmp/core.nolog" -x "$py" -ex 'telltale dump 5' >"$tmp/otherlive.out" 2>&1
  kill "$other"
  wait "$other" 2>/dev/null
  events "$tmp/otherlive.out" >"$tmp/otherlive5"
  if [ -e "$tmp/t.log.live" ] &&
     grep -q "on disk is another session's" "$tmp/otherlive.out" &&
     ! grep -q -E '^T1 Test ' "$tmp/otherlive5" && notraceback "$tmp/otherlive.out"; then
    ok gdb-core-other
  else
    fail gdb-core-other "$(grep -e '^telltale' -e Traceback "$tmp/otherlive.out" | head -5; cat "$tmp/otherlive5")"
  fi
fi

# A process without telltale.
sleep 30 &
other=$!
gdb -p "$other" -batch -nx -x "$py" -ex 'telltale dump' -ex 'telltale kinds' >"$tmp/none" 2>&1
kill "$other"
wait "$other" 2>/dev/null
other=
if [ "$(grep -c -F 'telltale: this program has no telltale runtime: eventSlots is not found' "$tmp/none")" = 2 ] &&
   notraceback "$tmp/none"; then
  ok gdb-notelltale
else
  fail gdb-notelltale "$(grep -v '^\[' "$tmp/none" | tail -5)"
fi

gdb -batch -nx -x "$py" -ex 'help telltale' >"$tmp/help" 2>&1
missing=
for cmd in 'telltale kinds' 'telltale on KIND' 'telltale off KIND' 'telltale record on KIND' \
           'telltale record off KIND' 'telltale dump [N]' 'core file' 'no calls' "can't be turned off"; do
  grep -q -i -F "$cmd" "$tmp/help" || missing="$missing '$cmd'"
done
if [ -z "$missing" ]; then
  ok gdb-help
else
  fail gdb-help "help telltale does not mention$missing"
fi

# gdb_target crash: abort() after emitting; telltale's handler prints the
# traceback.  No core: ulimit -c 0.
{ (ulimit -c 0; TELLTALE_FILE=$tmp/crash.log exec "$bin" crash) >"$tmp/crash.out" 2>"$tmp/crash.err"; } 2>/dev/null
status=$?
if [ "$status" = 134 ] && grep -q -F 'telltale: fatal signal SIGABRT' "$tmp/crash.err" &&
   [ "$(events "$tmp/crash.err" | tail -1)" = 'T1 Test TestW w=1000' ]; then
  ok gdb-crash
else
  fail gdb-crash "status $status: $(tail -3 "$tmp/crash.err")"
fi

finish
