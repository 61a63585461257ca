#!/usr/bin/env bash
# tests/example.sh -- the example pool allocator, read by eventcnv, and
# the environment variables
#
# .design: design/telemetry.txt .req.self .sol.intern .sol.env .sol.multi
#
# Usage: tests/example.sh CONFIG      e.g. tests/example.sh build/san
# CONFIG's examples/pool and eventcnv must be built.
#
# Covers:
#   cross-registry   eventcnv, built without the pool registry, prints the
#                    example's PoolAlloc events with their field names
#                    (pool=0x... addr=0x... size=N), from the stream's own
#                    registry; it reads the log without a complaint
#   label-nodes      the pool created as "nodes" is shown as [nodes] after
#                    its address in the later Label event (labels are shown
#                    for A fields; the pool is a P field elsewhere)
#   list-registry    --list shows the pool registry's kinds, events and
#                    parameter docs, and the retired PoolCheck as retired
#   thread-name      the worker thread's name
#   control-minus    TELLTALE_CONTROL=all,-Object: no PoolAlloc, Pool events kept
#   record-minus     TELLTALE_RECORD=all,-Object: the same by recording
#   events-minus     TELLTALE_EVENTS=-PoolAlloc: no PoolAlloc, PoolFree kept
#   events-bad       TELLTALE_EVENTS=-Bogus and =PoolAlloc (no sign): exit 2
#   control-bogus    TELLTALE_CONTROL=Bogus: exit 2, a message naming the
#                    variable and listing the kinds, and no log
#   buffer-bad       TELLTALE_BUFFER=5000: exit 2 and a message
#   buffer-small     TELLTALE_BUFFER=4k: the same events as the default
#   mirror-pool      TELLTALE_MIRROR=Pool: Pool events as text on stderr,
#                    no Object events there, and the binary log still written
#   file-none        TELLTALE_FILE=none: no file written
#   file-default     TELLTALE_FILE unset: telltale.log in the working directory
#   file-keep        a second run in the same directory keeps the first's
#                    log as telltale.log.1: both whole, of two processes
#   file-not-log     TELLTALE_FILE names a file that is not a telltale log:
#                    it is left as it was, and the program says so
#   file-link        TELLTALE_FILE names a symbolic link: not followed, the
#                    file it points to is left as it was
# (fork is covered by tests/test_threads.c, threads-2.1.)
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/.."

cfg=${1:?usage: tests/example.sh CONFIG}
cfg=${cfg%/}
top=$PWD
pool="$top/$cfg/examples/pool"
eventcnv="$top/$cfg/eventcnv"

passed=0
failed=0
ok() { echo "ok $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in "$pool" "$eventcnv"; do
  if [ ! -x "$f" ]; then
    echo "FAIL setup: $f is not built"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# run NAME VAR=VALUE... -- run the example in the empty directory
# $tmp/NAME with the given environment; its status is in $status, its
# output in $tmp/NAME.out and $tmp/NAME.err
run() {
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  (cd "$tmp/$name" && env -u TELLTALE_CONTROL -u TELLTALE_RECORD -u TELLTALE_FILE \
     -u TELLTALE_MIRROR -u TELLTALE_BUFFER -u TELLTALE_EVENTS "$@" "$pool" \
     >"$tmp/$name.out" 2>"$tmp/$name.err")
  status=$?
}

# count LOG NAME -- how many NAME events eventcnv counts in LOG (0 if none)
count() {
  "$eventcnv" --count "$1" 2>/dev/null | awk -v name="$2" '$2 == name { n = $1 } END { print n + 0 }'
}

# --- the default run, read by eventcnv ----------------------------------

log="$tmp/main/pool.log"
run main TELLTALE_FILE="$log"
if [ "$status" -ne 0 ] || [ ! -s "$log" ]; then
  fail example-runs "status $status, log $(ls -l "$log" 2>&1)"
  echo "$passed passed, $((failed)) failed"
  exit 1
fi
"$eventcnv" "$log" >"$tmp/main.txt" 2>"$tmp/main.cnv.err"
cnvStatus=$?

if [ "$cnvStatus" -ne 0 ]; then
  fail cross-registry "eventcnv exited $cnvStatus: $(head -3 "$tmp/main.cnv.err")"
elif [ -s "$tmp/main.cnv.err" ]; then
  fail cross-registry "eventcnv complained: $(head -3 "$tmp/main.cnv.err")"
elif ! grep -Eq ' PoolAlloc +pool=0x[0-9a-f]+(\[(nodes|strings)\])? addr=0x[0-9a-f]+ size=[0-9]+$' "$tmp/main.txt"; then
  fail cross-registry "no 'PoolAlloc pool=0x... addr=0x... size=N' line: $(grep -m1 PoolAlloc "$tmp/main.txt")"
elif [ "$(grep -c ' PoolAlloc ' "$tmp/main.txt")" -ne "$(count "$log" PoolAlloc)" ]; then
  fail cross-registry "--count and the listing disagree on PoolAlloc"
else
  ok cross-registry
fi

# the address of the pool named "nodes", and a later line labelling it
nodes=$(sed -n 's/.* PoolCreate .*pool=\(0x[0-9a-f]*\) .*name="nodes".*/\1/p' "$tmp/main.txt")
if [ -z "$nodes" ]; then
  fail label-nodes "no PoolCreate with name=\"nodes\""
elif ! awk -v create="pool=$nodes " -v label="=$nodes[nodes]" '
       index($0, " PoolCreate ") && index($0, create) { seen = 1; next }
       seen && index($0, label) { found = 1 }
       END { exit !found }' "$tmp/main.txt"; then
  fail label-nodes "no '$nodes[nodes]' after the PoolCreate line"
else
  ok label-nodes
fi

"$eventcnv" --list "$log" >"$tmp/list.txt" 2>&1
missing=""
for want in "Arena" "Pool" "Object" \
            "PoolAlloc: kind Object, always, format PAW" \
            "an object was allocated from a pool" \
            "P pool: the pool" "A addr: the object" "W size: its size in bytes" \
            "PoolVerify: kind Pool" "PoolCheck: kind Pool, retired" \
            "UserMark: kind User" "S what: what the phase does"; do
  grep -qF -- "$want" "$tmp/list.txt" || missing="$missing '$want'"
done
if [ -n "$missing" ]; then
  fail list-registry "--list lacks$missing"
else
  ok list-registry
fi

if grep -Eq ' ThreadName +thread=[0-9]+ name="worker"$' "$tmp/main.txt"; then
  ok thread-name
else
  fail thread-name "no ThreadName name=\"worker\""
fi

# --- the environment -----------------------------------------------------

run control TELLTALE_FILE="$tmp/control/x.log" TELLTALE_CONTROL=all,-Object
if [ "$status" -ne 0 ]; then
  fail control-minus "status $status: $(head -3 "$tmp/control.err")"
elif [ "$(count "$tmp/control/x.log" PoolAlloc)" -ne 0 ] || [ "$(count "$tmp/control/x.log" PoolFree)" -ne 0 ]; then
  fail control-minus "Object events in the log"
elif [ "$(count "$tmp/control/x.log" PoolCreate)" -ne 2 ] || [ "$(count "$tmp/control/x.log" PoolGrow)" -eq 0 ]; then
  fail control-minus "Pool events missing"
else
  ok control-minus
fi

run record TELLTALE_FILE="$tmp/record/x.log" TELLTALE_RECORD=all,-Object
if [ "$status" -ne 0 ]; then
  fail record-minus "status $status: $(head -3 "$tmp/record.err")"
elif [ "$(count "$tmp/record/x.log" PoolAlloc)" -ne 0 ]; then
  fail record-minus "PoolAlloc in the log"
elif [ "$(count "$tmp/record/x.log" PoolCreate)" -ne 2 ]; then
  fail record-minus "PoolCreate missing"
else
  ok record-minus
fi

run events TELLTALE_FILE="$tmp/events/x.log" TELLTALE_EVENTS=-PoolAlloc
if [ "$status" -ne 0 ]; then
  fail events-minus "status $status: $(head -3 "$tmp/events.err")"
elif [ "$(count "$tmp/events/x.log" PoolAlloc)" -ne 0 ]; then
  fail events-minus "PoolAlloc in the log"
elif [ "$(count "$tmp/events/x.log" PoolFree)" -eq 0 ]; then
  fail events-minus "PoolFree missing"
else
  ok events-minus
fi

run eventsbad TELLTALE_FILE="$tmp/eventsbad/x.log" TELLTALE_EVENTS=-Bogus
status1=$status
grep -q "^telltale: TELLTALE_EVENTS: unknown event 'Bogus'" "$tmp/eventsbad.err"; found1=$?
run eventsbad2 TELLTALE_FILE="$tmp/eventsbad2/x.log" TELLTALE_EVENTS=PoolAlloc
if [ "$status1" -ne 2 ] || [ "$status" -ne 2 ]; then
  fail events-bad "status $status1 and $status, not 2"
elif [ "$found1" -ne 0 ] || ! grep -q '^telltale: TELLTALE_EVENTS: .*needs - (off) or + (on)' "$tmp/eventsbad2.err"; then
  fail events-bad "messages: $(head -2 "$tmp/eventsbad.err") / $(head -2 "$tmp/eventsbad2.err")"
else
  ok events-bad
fi

run bogus TELLTALE_FILE="$tmp/bogus/x.log" TELLTALE_CONTROL=Bogus
if [ "$status" -ne 2 ]; then
  fail control-bogus "status $status, not 2"
elif ! grep -q '^telltale: TELLTALE_CONTROL: .*Bogus' "$tmp/bogus.err"; then
  fail control-bogus "message: $(head -3 "$tmp/bogus.err")"
elif ! grep -q 'Telltale, Arena, Pool, Trace, Seg, Ref, Object, User' "$tmp/bogus.err"; then
  fail control-bogus "the kinds are not listed: $(head -3 "$tmp/bogus.err")"
elif [ -n "$(ls -A "$tmp/bogus")" ]; then
  fail control-bogus "files were written: $(ls -A "$tmp/bogus")"
else
  ok control-bogus
fi

run bufbad TELLTALE_FILE="$tmp/bufbad/x.log" TELLTALE_BUFFER=5000
if [ "$status" -ne 2 ]; then
  fail buffer-bad "status $status, not 2"
elif ! grep -q '^telltale: TELLTALE_BUFFER: ' "$tmp/bufbad.err"; then
  fail buffer-bad "message: $(head -3 "$tmp/bufbad.err")"
else
  ok buffer-bad
fi

run bufsmall TELLTALE_FILE="$tmp/bufsmall/x.log" TELLTALE_BUFFER=4k
if [ "$status" -ne 0 ]; then
  fail buffer-small "status $status: $(head -3 "$tmp/bufsmall.err")"
elif ! "$eventcnv" "$tmp/bufsmall/x.log" >/dev/null 2>"$tmp/bufsmall.cnv.err" || [ -s "$tmp/bufsmall.cnv.err" ]; then
  fail buffer-small "eventcnv: $(head -3 "$tmp/bufsmall.cnv.err")"
else
  diffs=""
  for e in PoolAlloc PoolFree PoolCreate PoolGrow PoolVerify UserMark; do
    [ "$(count "$tmp/bufsmall/x.log" $e)" -eq "$(count "$log" $e)" ] || diffs="$diffs $e"
  done
  if [ -n "$diffs" ]; then
    fail buffer-small "counts differ from the default run:$diffs"
  else
    ok buffer-small
  fi
fi

run mirror TELLTALE_FILE="$tmp/mirror/x.log" TELLTALE_MIRROR=Pool
if [ "$status" -ne 0 ]; then
  fail mirror-pool "status $status: $(head -3 "$tmp/mirror.err")"
elif ! grep -Eq ' Pool +PoolCreate +pool=0x[0-9a-f]+ .*name="nodes"' "$tmp/mirror.err"; then
  fail mirror-pool "no PoolCreate line on stderr: $(head -3 "$tmp/mirror.err")"
elif grep -q ' PoolAlloc ' "$tmp/mirror.err"; then
  fail mirror-pool "Object events mirrored too"
elif [ "$(count "$tmp/mirror/x.log" PoolAlloc)" -eq 0 ]; then
  fail mirror-pool "the binary log lacks PoolAlloc"
else
  ok mirror-pool
fi

run none TELLTALE_FILE=none
if [ "$status" -ne 0 ]; then
  fail file-none "status $status: $(head -3 "$tmp/none.err")"
elif [ -n "$(ls -A "$tmp/none")" ]; then
  fail file-none "files were written: $(ls -A "$tmp/none")"
else
  ok file-none
fi

run default
if [ "$status" -ne 0 ]; then
  fail file-default "status $status: $(head -3 "$tmp/default.err")"
elif [ "$(ls -A "$tmp/default")" != "telltale.log" ]; then
  fail file-default "files written: $(ls -A "$tmp/default" | tr '\n' ' ')"
elif [ "$(count "$tmp/default/telltale.log" PoolAlloc)" -eq 0 ]; then
  fail file-default "telltale.log lacks PoolAlloc"
else
  ok file-default
fi

run default
pids=$(for f in telltale.log telltale.log.1; do
         "$eventcnv" --header "$tmp/default/$f" 2>/dev/null | sed -n 's/^pid  *//p'; done | sort -u | wc -l)
if [ "$status" -eq 0 ] && [ "$(count "$tmp/default/telltale.log.1" PoolAlloc)" -gt 0 ] &&
   [ "$(count "$tmp/default/telltale.log" PoolAlloc)" -gt 0 ] && [ "$pids" -eq 2 ]; then
  ok file-keep
else
  fail file-keep "status $status, $pids pids: $(ls -A "$tmp/default" | tr '\n' ' ')"
fi

mkdir -p "$tmp/notlog" && echo precious >"$tmp/notlog/p.log"
run notlog TELLTALE_FILE=p.log
if [ "$status" -eq 0 ] && [ "$(cat "$tmp/notlog/p.log")" = precious ] &&
   grep -q "not writing p.log: it is there and is not a telltale log" "$tmp/notlog.err"; then
  ok file-not-log
else
  fail file-not-log "status $status, p.log: $(head -c 40 "$tmp/notlog/p.log"): $(head -2 "$tmp/notlog.err")"
fi

mkdir -p "$tmp/link" && echo secret >"$tmp/link/victim" && ln -s victim "$tmp/link/l.log"
run link TELLTALE_FILE=l.log
if [ "$status" -eq 0 ] && [ "$(cat "$tmp/link/victim")" = secret ] &&
   grep -q "cannot open l.log" "$tmp/link.err"; then
  ok file-link
else
  fail file-link "status $status, victim: $(head -c 40 "$tmp/link/victim"): $(head -2 "$tmp/link.err")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
