#!/usr/bin/env bash
# tests/tools/example.sh -- the example pool allocator, read by eventcnv, and
# the environment variables
#
# .design: design/index.txt .req.self design/runtime.txt .sol.intern .sol.env .sol.multi
#
# Usage: tests/tools/example.sh CONFIG      e.g. tests/tools/example.sh build/san
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
#   control-mask     TELLTALE_CONTROL=0x1bf and all,-0x40 (MPS-style masks,
#                    Object is bit 6): no PoolAlloc, Pool events kept
#   events-bad       TELLTALE_EVENTS=-Bogus and =PoolAlloc (no sign): exit 0,
#                    one warning, and every event on (the default)
#   control-bogus    TELLTALE_CONTROL=Bogus: exit 0, a warning naming the
#                    variable and listing the kinds, and the default (all)
#   buffer-bad       TELLTALE_BUFFER=5000: exit 0, 8192 used, said once
#   buffer-decimal   TELLTALE_BUFFER=010000 is 10000 (not octal 4096): 16384
#                    used; a huge value is 64M, not a wrapped 4096, and so
#                    is 1G (the nearest bound, not the default)
#   settings-bad     every TELLTALE_* variable with a bad value (and an empty
#                    TELLTALE_FILE): the program
#                    runs to completion with exit 0, one warning naming the
#                    variable and what is used, and a log eventcnv reads
#   buffer-small     TELLTALE_BUFFER=4k: the same events as the default
#   mirror-pool      TELLTALE_MIRROR=Pool: Pool events as text on stderr,
#                    no Object events there, and the binary log still written
#   file-none        TELLTALE_FILE=none: no file written
#   file-default     TELLTALE_FILE unset: telltale.log in the working directory
#   file-keep        a second run in the same directory keeps the first's
#                    log as telltale.log.1: both whole, of two processes
#   keep-onto-notes  telltale.log.1 is notes, not a log: two runs leave it as
#                    it was, the first run's log where it is, and say so once
#   keep-onto-live-notes  the same for telltale.log.1.live
#   keep-onto-dir    telltale.log.1 is a directory: the message names it, not
#                    telltale.log; the first run's log stays
#   file-proc        TELLTALE_FILE=/proc/self/mem: refused, said once (not
#                    written, no /proc/self/mem.live), exit 0
#   file-dev-null    TELLTALE_FILE=/dev/null: written, silently, no live file
#   file-not-log     TELLTALE_FILE names a file that is not a telltale log:
#                    it is left as it was, and the program says so
#   file-link        TELLTALE_FILE names a symbolic link: not followed, the
#                    file it points to is left as it was
#   file-pattern     TELLTALE_FILE=p.%p.%t.%%.log: the log is named with the
#                    process id of its header and the UTC start time, and a
#                    second run writes another file, not p...log.1
#   live-link        LOG.live is a symbolic link planted beside the log: not
#                    followed (the file it points to is left as it was), said
#                    once; the log is written and read, exit 0
#   live-not-log     LOG.live is a file that is not a telltale file: left as
#                    it was, said once; the log is written and read
#   fifo-no-reader   TELLTALE_FILE is a FIFO no process reads: the program
#                    says so once, within about a second, and ends with exit 0
#   fifo-reader      TELLTALE_FILE is a FIFO a reader opens: the log arrives
#   closed-std       stdout and stderr closed: the log is not on descriptor 1
#                    or 2, so the program's printf is not in it, and it reads;
#                    nor is the text mirror (TELLTALE_MIRROR, to stderr)
# (fork is covered by tests/unit/test_threads.c, threads-2.1 and 2.2.)
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh

cfg=${1:?usage: tests/tools/example.sh CONFIG}
cfg=${cfg%/}
top=$PWD
pool="$top/$cfg/examples/pool"
eventcnv="$top/$cfg/eventcnv"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in "$pool" "$eventcnv"; do
  if [ ! -x "$f" ]; then
    fail setup "$f is not built"
    finish
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
     -u TELLTALE_MIRROR -u TELLTALE_BUFFER -u TELLTALE_EVENTS -u TELLTALE_WRITER \
     -u TELLTALE_MAP -u TELLTALE_SIGNALS -u TELLTALE_DUMP "$@" "$pool" \
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
  finish
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

run mask TELLTALE_FILE="$tmp/mask/x.log" TELLTALE_CONTROL=0x1bf
status1=$status; allocs1=$(count "$tmp/mask/x.log" PoolAlloc)
run mask2 TELLTALE_FILE="$tmp/mask2/x.log" TELLTALE_CONTROL=all,-0x40
if [ "$status1" -ne 0 ] || [ "$status" -ne 0 ] || [ -s "$tmp/mask.err" ] || [ -s "$tmp/mask2.err" ]; then
  fail control-mask "status $status1 and $status: $(head -2 "$tmp/mask.err") $(head -2 "$tmp/mask2.err")"
elif [ "$allocs1" -ne 0 ] || [ "$(count "$tmp/mask2/x.log" PoolAlloc)" -ne 0 ]; then
  fail control-mask "PoolAlloc in the log"
elif [ "$(count "$tmp/mask/x.log" PoolCreate)" -ne 2 ] || [ "$(count "$tmp/mask2/x.log" PoolCreate)" -ne 2 ]; then
  fail control-mask "PoolCreate missing"
else
  ok control-mask
fi

# warned VARIABLE NAME -- the run NAME printed exactly one line on stderr,
# a telltale warning naming VARIABLE and what it uses instead
warned() {
  [ "$(wc -l <"$tmp/$2.err")" -eq 1 ] && grep -q "^telltale: $1: .*; using " "$tmp/$2.err"
}

run eventsbad TELLTALE_FILE="$tmp/eventsbad/x.log" TELLTALE_EVENTS=-PoolFree,-Bogus
status1=$status
grep -q "^telltale: TELLTALE_EVENTS: unknown event 'Bogus'.*; using the default, every event on" \
  "$tmp/eventsbad.err"; found1=$?
run eventsbad2 TELLTALE_FILE="$tmp/eventsbad2/x.log" TELLTALE_EVENTS=PoolAlloc
if [ "$status1" -ne 0 ] || [ "$status" -ne 0 ]; then
  fail events-bad "status $status1 and $status, not 0"
elif [ "$found1" -ne 0 ] || ! warned TELLTALE_EVENTS eventsbad ||
     ! grep -q '^telltale: TELLTALE_EVENTS: .*needs - (off) or + (on)' "$tmp/eventsbad2.err"; then
  fail events-bad "messages: $(head -2 "$tmp/eventsbad.err") / $(head -2 "$tmp/eventsbad2.err")"
elif [ "$(count "$tmp/eventsbad/x.log" PoolFree)" -ne "$(count "$log" PoolFree)" ]; then
  fail events-bad "PoolFree was turned off by a variable that was not used"
else
  ok events-bad
fi

run bogus TELLTALE_FILE="$tmp/bogus/x.log" TELLTALE_CONTROL=Bogus
if [ "$status" -ne 0 ]; then
  fail control-bogus "status $status, not 0"
elif ! warned TELLTALE_CONTROL bogus || ! grep -q '^telltale: TELLTALE_CONTROL: .*Bogus' "$tmp/bogus.err"; then
  fail control-bogus "message: $(head -3 "$tmp/bogus.err")"
elif ! grep -q 'Telltale, Arena, Pool, Trace, Seg, Ref, Object, User' "$tmp/bogus.err"; then
  fail control-bogus "the kinds are not listed: $(head -3 "$tmp/bogus.err")"
elif [ "$(count "$tmp/bogus/x.log" PoolAlloc)" -ne "$(count "$log" PoolAlloc)" ]; then
  fail control-bogus "not every kind output (the default)"
else
  ok control-bogus
fi

run bufbad TELLTALE_FILE="$tmp/bufbad/x.log" TELLTALE_BUFFER=5000
if [ "$status" -ne 0 ]; then
  fail buffer-bad "status $status, not 0"
elif ! warned TELLTALE_BUFFER bufbad || ! grep -q "using 8192 bytes" "$tmp/bufbad.err"; then
  fail buffer-bad "message: $(head -3 "$tmp/bufbad.err")"
else
  ok buffer-bad
fi

run bufoct TELLTALE_FILE="$tmp/bufoct/x.log" TELLTALE_BUFFER=010000
status1=$status
run bufhuge TELLTALE_FILE="$tmp/bufhuge/x.log" TELLTALE_BUFFER=18014398509481988k
status2=$status
run bufgiga TELLTALE_FILE="$tmp/bufgiga/x.log" TELLTALE_BUFFER=1G
if [ "$status1" -ne 0 ] || [ "$status2" -ne 0 ] || [ "$status" -ne 0 ]; then
  fail buffer-decimal "status $status1, $status2 and $status, not 0"
elif ! warned TELLTALE_BUFFER bufgiga || ! grep -q "using 67108864 bytes" "$tmp/bufgiga.err"; then
  fail buffer-decimal "1G: $(head -3 "$tmp/bufgiga.err")"
elif ! warned TELLTALE_BUFFER bufoct || ! grep -q "'010000' .*; using 16384 bytes" "$tmp/bufoct.err"; then
  fail buffer-decimal "010000: $(head -3 "$tmp/bufoct.err")"
elif ! warned TELLTALE_BUFFER bufhuge || ! grep -q "using 67108864 bytes" "$tmp/bufhuge.err"; then
  fail buffer-decimal "a huge value: $(head -3 "$tmp/bufhuge.err")"
else
  ok buffer-decimal
fi

why=""
n=0
for setting in TELLTALE_CONTROL=Pool,Nope TELLTALE_RECORD=0x12345 TELLTALE_MIRROR=- \
               TELLTALE_EVENTS=+ TELLTALE_WRITER=asynch TELLTALE_BUFFER=64q \
               TELLTALE_MAP=yes TELLTALE_SIGNALS=maybe TELLTALE_DUMP=lots \
               TELLTALE_FILE=x%d.log TELLTALE_FILE=; do
  n=$((n + 1))
  var=${setting%%=*}
  run "bad$n" "$setting"
  logf="$tmp/bad$n/telltale.log"
  if [ "$status" -ne 0 ]; then
    why="$why; $setting: status $status"
  elif ! warned "$var" "bad$n"; then
    why="$why; $setting: stderr $(head -c 300 "$tmp/bad$n.err" | tr '\n' '|')"
  elif ! "$eventcnv" "$logf" >/dev/null 2>"$tmp/bad$n.cnv" ||
       [ "$(count "$logf" PoolAlloc)" -ne "$(count "$log" PoolAlloc)" ]; then
    why="$why; $setting: the log: $(head -2 "$tmp/bad$n.cnv")"
  fi
done
if [ -n "$why" ]; then
  fail settings-bad "${why#; }"
else
  ok settings-bad
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

# keep-onto NAME FILE -- FILE (beside telltale.log) is notes, not a log:
# two runs in one directory leave it as it was, the second saying once
# why, naming FILE, and leaving the first run's log where it is
keepOnto() {
  local name=$1 file=$2 pid
  mkdir -p "$tmp/$name" && echo "my notes" >"$tmp/$name/$file"
  run "$name"
  run "$name"
  pid=$("$eventcnv" --header "$tmp/$name/telltale.log" 2>/dev/null | sed -n 's/^pid  *//p')
  if [ "$status" -ne 0 ] || ! echo "my notes" | cmp -s - "$tmp/$name/$file"; then
    fail "$name" "status $status, $file: $(head -c 40 "$tmp/$name/$file" | tr -d '\0')"
  elif [ "$(wc -l <"$tmp/$name.err")" -ne 1 ] ||
       ! grep -q "not writing telltale.log: the last log there cannot be kept as $file (it is there and is not a telltale log)" "$tmp/$name.err"; then
    fail "$name" "stderr: $(head -3 "$tmp/$name.err")"
  elif [ -z "$pid" ] || [ "$(count "$tmp/$name/telltale.log" PoolAlloc)" -eq 0 ] ||
       { [ "$file" != telltale.log.1 ] && [ -e "$tmp/$name/telltale.log.1" ]; }; then
    fail "$name" "the first run's log was not left whole: $(ls -A "$tmp/$name" | tr '\n' ' ')"
  else
    ok "$name"
  fi
}
keepOnto keep-onto-notes telltale.log.1
keepOnto keep-onto-live-notes telltale.log.1.live

mkdir -p "$tmp/keepdir/telltale.log.1"
run keepdir
run keepdir
if [ "$status" -ne 0 ] || [ ! -d "$tmp/keepdir/telltale.log.1" ] ||
   [ "$(count "$tmp/keepdir/telltale.log" PoolAlloc)" -eq 0 ]; then
  fail keep-onto-dir "status $status: $(ls -A "$tmp/keepdir" | tr '\n' ' ')"
elif [ "$(wc -l <"$tmp/keepdir.err")" -ne 1 ] ||
     ! grep -q "cannot be kept as telltale.log.1 (it is a directory)" "$tmp/keepdir.err"; then
  fail keep-onto-dir "stderr: $(head -3 "$tmp/keepdir.err")"
else
  ok keep-onto-dir
fi

run procmem TELLTALE_FILE=/proc/self/mem
if [ "$status" -ne 0 ] || [ "$(wc -l <"$tmp/procmem.err")" -ne 1 ] ||
   ! grep -q "not writing /proc/self/mem: it is a file of /proc" "$tmp/procmem.err"; then
  fail file-proc "status $status, stderr: $(head -3 "$tmp/procmem.err" | tr '\n' '|')"
else
  ok file-proc
fi

run devnull TELLTALE_FILE=/dev/null
if [ "$status" -ne 0 ] || [ -s "$tmp/devnull.err" ] || [ -n "$(ls -A "$tmp/devnull")" ]; then
  fail file-dev-null "status $status, stderr: $(head -3 "$tmp/devnull.err"), files: $(ls -A "$tmp/devnull")"
else
  ok file-dev-null
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
   [ "$(wc -l <"$tmp/link.err")" -eq 1 ] &&
   grep -q "not writing l.log: it is a symbolic link" "$tmp/link.err"; then
  ok file-link
else
  fail file-link "status $status, victim: $(head -c 40 "$tmp/link/victim"): $(head -2 "$tmp/link.err")"
fi

run pattern 'TELLTALE_FILE=p.%p.%t.%%.log'
status1=$status
run pattern 'TELLTALE_FILE=p.%p.%t.%%.log'
today=$(date -u +%Y%m%d)
why=""
[ "$status1" -eq 0 ] && [ "$status" -eq 0 ] || why="status $status1 and $status"
logs=$(cd "$tmp/pattern" && ls)
[ "$(echo "$logs" | wc -l)" -eq 2 ] || why="$why; files: $(echo $logs)"
for f in $logs; do
  pid=$("$eventcnv" --header "$tmp/pattern/$f" 2>/dev/null | sed -n 's/^pid  *//p')
  case $f in
    "p.$pid.${today}T"[0-2][0-9][0-5][0-9][0-5][0-9]"Z.%.log") ;;
    *) why="$why; $f is not p.$pid.${today}THHMMSSZ.%.log" ;;
  esac
  [ "$(count "$tmp/pattern/$f" PoolAlloc)" -eq "$(count "$log" PoolAlloc)" ] || why="$why; $f lacks events"
done
if [ -n "$why" ] || [ -s "$tmp/pattern.err" ]; then
  fail file-pattern "${why#; } $(head -2 "$tmp/pattern.err")"
else
  ok file-pattern
fi

# readable LOG [LIVE] -- eventcnv reads LOG without a complaint (with
# LIVE, but for one about the LOG.live planted there), and it has every
# PoolAlloc the default run has
readable() {
  "$eventcnv" "$1" >/dev/null 2>"$1.cnv" &&
    { [ $# -eq 1 ] && [ ! -s "$1.cnv" ] ||
      [ $# -eq 2 ] && ! grep -qv "$1.live: the live file has no readable header" "$1.cnv"; } &&
    [ "$(count "$1" PoolAlloc)" -eq "$(count "$log" PoolAlloc)" ]
}

mkdir -p "$tmp/livelink" && echo secret >"$tmp/livelink/victim" && ln -s victim "$tmp/livelink/x.log.live"
run livelink TELLTALE_FILE=x.log
if [ "$status" -ne 0 ] || [ "$(cat "$tmp/livelink/victim")" != secret ] || [ ! -L "$tmp/livelink/x.log.live" ]; then
  fail live-link "status $status, victim: $(head -c 40 "$tmp/livelink/victim")"
elif [ "$(wc -l <"$tmp/livelink.err")" -ne 1 ] ||
     ! grep -q "not writing x.log.live: it is a symbolic link" "$tmp/livelink.err"; then
  fail live-link "stderr: $(head -3 "$tmp/livelink.err")"
elif ! readable "$tmp/livelink/x.log" live; then
  fail live-link "the log: $(head -2 "$tmp/livelink/x.log.cnv")"
else
  ok live-link
fi

mkdir -p "$tmp/livenotlog" && echo precious >"$tmp/livenotlog/x.log.live"
run livenotlog TELLTALE_FILE=x.log
if [ "$status" -ne 0 ] || [ "$(cat "$tmp/livenotlog/x.log.live")" != precious ]; then
  fail live-not-log "status $status, x.log.live: $(head -c 40 "$tmp/livenotlog/x.log.live")"
elif [ "$(wc -l <"$tmp/livenotlog.err")" -ne 1 ] ||
     ! grep -q "not writing x.log.live: it is there and is not a telltale log" "$tmp/livenotlog.err"; then
  fail live-not-log "stderr: $(head -3 "$tmp/livenotlog.err")"
elif ! readable "$tmp/livenotlog/x.log" live; then
  fail live-not-log "the log: $(head -2 "$tmp/livenotlog/x.log.cnv")"
else
  ok live-not-log
fi

mkdir -p "$tmp/fifo" && mkfifo "$tmp/fifo/f.log"
start=$(date +%s)
run fifo timeout 30 env TELLTALE_FILE=f.log
took=$(( $(date +%s) - start ))
if [ "$status" -ne 0 ]; then
  fail fifo-no-reader "status $status (124: it hung) after $took s: $(head -2 "$tmp/fifo.err")"
elif [ "$took" -gt 10 ] || [ "$(wc -l <"$tmp/fifo.err")" -ne 1 ] ||
     ! grep -q "not writing f.log: it is a FIFO that no process opened for reading" "$tmp/fifo.err"; then
  fail fifo-no-reader "$took s, stderr: $(head -3 "$tmp/fifo.err")"
else
  ok fifo-no-reader
fi

mkdir -p "$tmp/fiforead" && mkfifo "$tmp/fiforead/f.log"
cat "$tmp/fiforead/f.log" >"$tmp/fiforead.log" &
reader=$!
run fiforead timeout 30 env TELLTALE_FILE=f.log
wait "$reader"
if [ "$status" -ne 0 ] || [ -s "$tmp/fiforead.err" ]; then
  fail fifo-reader "status $status: $(head -2 "$tmp/fiforead.err")"
elif ! readable "$tmp/fiforead.log"; then
  fail fifo-reader "the log: $(head -2 "$tmp/fiforead.log.cnv")"
else
  ok fifo-reader
fi

mkdir -p "$tmp/closed"
(cd "$tmp/closed" && env -u TELLTALE_CONTROL -u TELLTALE_RECORD -u TELLTALE_MIRROR \
   -u TELLTALE_BUFFER -u TELLTALE_EVENTS -u TELLTALE_WRITER -u TELLTALE_MAP -u TELLTALE_DUMP \
   TELLTALE_FILE=x.log "$pool" >&- 2>&-)
status=$?
mkdir -p "$tmp/closed2"
(cd "$tmp/closed2" && env -u TELLTALE_CONTROL -u TELLTALE_RECORD -u TELLTALE_BUFFER \
   -u TELLTALE_EVENTS -u TELLTALE_WRITER -u TELLTALE_MAP -u TELLTALE_DUMP \
   TELLTALE_FILE=x.log TELLTALE_MIRROR=Pool "$pool" >/dev/null 2>&-)
status2=$?
if [ "$status" -ne 0 ] || [ "$status2" -ne 0 ]; then
  fail closed-std "status $status and $status2"
elif ! readable "$tmp/closed2/x.log"; then
  fail closed-std "the log, with stderr closed and a mirror to it: $(head -2 "$tmp/closed2/x.log.cnv")"
elif grep -q "pool example: done" "$tmp/closed/x.log"; then
  fail closed-std "the program's printf is in the log"
elif ! readable "$tmp/closed/x.log"; then
  fail closed-std "the log: $(head -2 "$tmp/closed/x.log.cnv")"
else
  ok closed-std
fi

# --- archives: eventcnv --format telltale --zstd (design/tools.txt .zstd)
# same NAME LOG [live] -- LOG's archive has zstd blocks and reads as LOG
# does: the same text, --count, --summary and jsonl, and exit status;
# with live, LOG.live is recovered into the archive, which has no live
# file, so only what it prints is the same.
same() {
  local name=$1 log=$2 a=$tmp/$1.archive why="" args s1 s2
  "$eventcnv" --format telltale --zstd -o "$a" "$log" 2>"$tmp/$name.archive.err" ||
    why="$why the archive step failed: $(head -2 "$tmp/$name.archive.err")"
  for args in "" --count --summary "--format jsonl"; do
    # shellcheck disable=SC2086
    "$eventcnv" $args "$log" >"$tmp/$name.1" 2>/dev/null
    s1=$?
    # shellcheck disable=SC2086
    "$eventcnv" $args "$a" >"$tmp/$name.2" 2>"$tmp/$name.2.err"
    s2=$?
    [ "$s1" = "$s2" ] || [ $# -eq 3 ] || why="$why '$args': exit $s2, the log's $s1"
    cmp -s "$tmp/$name.1" "$tmp/$name.2" || why="$why '$args': what it prints differs"
    [ -s "$tmp/$name.1" ] || why="$why '$args': the log printed nothing"
    ! grep -q "Sanitizer\|runtime error" "$tmp/$name.2.err" || why="$why '$args': sanitizer report"
  done
  "$eventcnv" --header "$a" 2>/dev/null | grep -q "^zstd  " || why="$why no zstd block"
  [ "$(stat -c %s "$a")" -lt "$(stat -c %s "$log")" ] || why="$why the archive is not smaller"
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "$why"; fi
}
same archive-example "$log"
client="$top/$cfg/tests/trust_client"
if [ -x "$client" ]; then
  mkdir -p "$tmp/threads" "$tmp/killed"
  (cd "$tmp/threads" && TRUST_COUNTS=counts TELLTALE_FILE=t.log "$client" return >/dev/null 2>&1)
  same archive-threads "$tmp/threads/t.log"
  (cd "$tmp/killed" && exec env TRUST_COUNTS=counts TELLTALE_FILE=t.log "$client" kill >out 2>&1) &
  pid=$!
  for _ in $(seq 500); do grep -q ready "$tmp/killed/out" 2>/dev/null && break; sleep 0.01; done
  sleep 0.05
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ ! -s "$tmp/killed/t.log.live" ]; then
    fail archive-live "the killed client left no live file"
  else
    same archive-live "$tmp/killed/t.log" live
  fi
else
  fail archive-threads "$client is not built"
fi

finish
