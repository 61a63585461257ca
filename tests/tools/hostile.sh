#!/usr/bin/env bash
# tests/tools/hostile.sh -- the tools against hostile logs, strings and output
# paths (issue 35): each case the smallest input that shows it
#
# .design: design/tools.txt .tools.output .zstd.damage design/heap.txt .replay.touch
# .zstd.held .export.time .export.text .heap.symbols.file .eventcnv.follow.damage
#
# Usage: tests/tools/hostile.sh CONFIG     e.g. tests/tools/hostile.sh build/san
# CONFIG's eventcnv, heap, replay and tests/malloc_events must be built.
# Inputs are made by tests/lib/mkstream.py and tests/lib/hostile/mk.py; peak
# RSS is measured by tests/lib/hostile/rss.py, which kills a run past 2 GB.
#
# Covers:
#   archive-launder    a 3.0 log whose blocks are flagged zstd (damage in
#                      3.0) is not archived: a 4.0 archive would read them
#                      as sound; exit 1, the offset named, no archive
#   out-stdin          eventcnv -o LOG - <LOG: refused, exit 2, LOG kept
#   heap-out-stdin     telltale-heap -o LOG - <LOG: the same
#   replay-svg-log     replay --svg LOG LOG: the same
#   out-live           eventcnv -o LOG.live LOG (no live file yet): refused,
#                      nothing made; --format ctf -o LOG.live too
#   stdout-log         eventcnv LOG >>LOG: refused, LOG kept
#   out-fifo           -o a FIFO no one reads: exit 1 at once, no hang
#   sqlite-device      --format sqlite -o /dev/null: not a file, exit 1
#   replay-full        replay LOG >/dev/full: exit 1, said
#   follow-full        eventcnv --follow LOG >/dev/full: exit 1, said
#   replay-huge        a recorder log of 4096 mallocs of 4 GiB (tens of
#                      KB; 2 under ASan, whose allocator takes a second a
#                      block, and its shadow an eighth): replay's peak RSS
#                      stays under 200 MB (800), and what it did not touch
#                      is said
#   zstd-bomb          an archive with 8 blocks of 64 KiB whose zstd frames
#                      expand to 64 MiB of sound events: eventcnv --resync
#                      holds at most 256 MiB (peak RSS under 420 MB, 720
#                      under ASan, whose quarantine keeps what is freed), says
#                      which block passed it, exit 1
#   clock-limits       a wall time 1 us short of 2^63 ns: every export and
#                      the merge end with no overflow (UBSan in build/san),
#                      no negative time_ns
#   hostile-strings    program, registry and strings with ESC, BEL, DEL, C1
#                      and invalid UTF-8: text, --header, --list, merged
#                      text, --summary, jsonl, csv, chrome, html are UTF-8
#                      with no control byte; SQLite's event_fields is JSON
#   heap-fifo          a recorder log whose MapExec names what is now a
#                      FIFO: telltale-heap ends, exit 0
#   follow-damage      --follow on a damaged block of a running program's
#                      log: the damage named, exit 1, within 60 s
#   cut-agree          a recorder log cut at a block boundary with no live
#                      file: eventcnv, telltale-heap and replay all exit 1
# Prints "ok CASE" or "FAIL CASE: why", then "N passed, N failed".

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/results.sh"
cfg=${1:?usage: tests/tools/hostile.sh CONFIG}
case $cfg in /*) ;; *) cfg=$top/$cfg ;; esac
eventcnv=$cfg/eventcnv
heap=$cfg/heap
replay=$cfg/replay
# The recorder's test program, as tests/tools/replay.sh: build/'s under the
# sanitizers (it emits the events itself, with no sanitizer to care).
events=$top/build/tests/malloc_events
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostile.XXXXXX") || exit 2
running=
trap '[ -n "$running" ] && kill $running 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2

# expect CASE STATUS ERR-SUBSTRING CMD... -- CMD ends within 60 s with
# STATUS and says ERR-SUBSTRING on stderr; its stderr is CASE.err
expect() {
  local name=$1 want=$2 sub=$3 got
  shift 3
  timeout 60 "$@" >"$name.out" 2>"$name.err" </dev/null
  got=$?
  if [ $got != "$want" ]; then
    fail "$name" "exit $got, expected $want: $(head -c 600 "$name.err")"
    return 1
  elif [ -n "$sub" ] && ! grep -qF -- "$sub" "$name.err"; then
    fail "$name" "stderr lacks '$sub': $(head -c 600 "$name.err")"
    return 1
  fi
  return 0
}

python3 "$top/tests/lib/mkstream.py" --variant v3 v3.tt || exit 2
TELLTALE_FILE=clean.log "$events" clean >/dev/null || exit 2
# ASan's allocator takes a second or so over each 4 GiB block, and
# writes its shadow, an eighth of it: 2 there, and 512 MB more allowed
# ASan's quarantine keeps what the reader frees: the bomb's bound is
# higher there too.
case $cfg in */san) huge=2 rssMax=800 bombMax=720 ;; *) huge=4096 rssMax=200 bombMax=420 ;; esac
TELLTALE_FILE=huge.log "$events" huge $huge >/dev/null || exit 2

# 1. Archives carry the damage they were made from, or refuse.
python3 "$top/tests/lib/hostile/mk.py" v3-zstd-sound zs.tt "$eventcnv" || exit 2
expect archive-launder 1 "offset 2717: a block marked zstd in a stream of version 3" \
    "$eventcnv" --format telltale --zstd -o zs.arc zs.tt &&
  { [ ! -e zs.arc ] && ok archive-launder || fail archive-launder "an archive was made"; }

# 2. No tool replaces its input.
cp v3.tt a.tt
expect out-stdin 2 "it is the log read from standard input" sh -c "exec '$eventcnv' -o a.tt - <a.tt" &&
  { cmp -s v3.tt a.tt && ok out-stdin || fail out-stdin "the log changed"; }
cp clean.log c.log
expect heap-out-stdin 2 "it is the log read from standard input" sh -c "exec '$heap' -o c.log - <c.log" &&
  { cmp -s clean.log c.log && ok heap-out-stdin || fail heap-out-stdin "the log changed"; }
expect replay-svg-log 2 "it is a log to read" "$replay" -q --svg c.log c.log &&
  { cmp -s clean.log c.log && ok replay-svg-log || fail replay-svg-log "the log changed"; }
expect out-live 2 "it is the live file of a log to read" "$eventcnv" -o a.tt.live a.tt &&
  expect out-live 2 "it is the live file of a log to read" "$eventcnv" --format ctf -o a.tt.live a.tt &&
  { [ ! -e a.tt.live ] && ok out-live || fail out-live "a.tt.live was made"; }
expect stdout-log 2 "standard output: it is a log to read" sh -c "exec '$eventcnv' a.tt >>a.tt" &&
  { cmp -s v3.tt a.tt && ok stdout-log || fail stdout-log "the log changed"; }
mkfifo fifo
expect out-fifo 1 "cannot write fifo: a FIFO that no one reads" "$eventcnv" -o fifo a.tt &&
  expect out-fifo 1 "cannot write fifo: a FIFO that no one reads" "$eventcnv" --format jsonl -o fifo a.tt &&
  expect out-fifo 1 "cannot write fifo: a FIFO that no one reads" "$heap" -o fifo clean.log &&
  ok out-fifo
expect sqlite-device 1 "cannot write /dev/null: not a regular file" \
    "$eventcnv" --format sqlite -o /dev/null a.tt && ok sqlite-device

# 3. Output errors are reported.
expect replay-full 1 "error writing the report" sh -c "exec '$replay' -q clean.log >/dev/full" &&
  ok replay-full
expect follow-full 1 "error writing output: No space left on device" \
    sh -c "exec '$eventcnv' --follow v3.tt >/dev/full" && ok follow-full

# 4. Memory on forged input: replay touches at most --touch-max.
rss=$(python3 "$top/tests/lib/hostile/rss.py" 2000 replay-huge.err "$replay" -q huge.log)
if [ "${rss% *}" != 0 ]; then
  fail replay-huge "exit ${rss% *}: $(head -c 600 replay-huge.err)"
elif [ "${rss#* }" -gt $rssMax ]; then
  fail replay-huge "peak RSS ${rss#* } MB"
elif ! grep -q "$huge blocks made past it were not touched" replay-huge.err; then
  fail replay-huge "not said: $(head -c 600 replay-huge.err)"
else
  ok replay-huge
fi

# 4. A zstd bomb: 8 blocks of 64 KiB whose frames expand to 64 MiB of
# sound events each; --resync holds at most 256 MiB of them, and says so.
python3 "$top/tests/lib/hostile/mk.py" zstd-bomb bomb.tt "$eventcnv" || exit 2
rss=$(python3 "$top/tests/lib/hostile/rss.py" 2000 zstd-bomb.err "$eventcnv" --resync --count bomb.tt)
if [ "${rss% *}" != 1 ]; then
  fail zstd-bomb "exit ${rss% *}: $(head -c 600 zstd-bomb.err)"
elif [ "${rss#* }" -gt $bombMax ]; then
  fail zstd-bomb "peak RSS ${rss#* } MB"
elif ! grep -q "offset [0-9]*: expanding this block (thread 1, kind 0) would take the events held past 256 MiB" zstd-bomb.err; then
  fail zstd-bomb "not said: $(head -c 600 zstd-bomb.err)"
else
  ok zstd-bomb
fi

# 5. Clocks near 2^63 ns: no overflow (UBSan stops at one in build/san),
# and times saturate rather than wrap.
python3 "$top/tests/lib/hostile/mk.py" clock-limits cl.tt x || exit 2
why=
for f in jsonl csv chrome html sqlite; do
  "$eventcnv" --format $f -o cl.$f cl.tt 2>cl.err || why="$why $f: exit $?: $(grep -m1 'runtime error' cl.err)"
done
"$eventcnv" cl.tt cl.tt >/dev/null 2>cl.err || why="$why merge: exit $?: $(grep -m1 'runtime error' cl.err)"
"$eventcnv" --spans cl.tt >/dev/null 2>cl.err || why="$why spans: exit $?"
grep -q '"time_ns":-' cl.jsonl && why="$why jsonl: a negative time_ns"
[ "$(sqlite3 cl.sqlite 'SELECT count(*) FROM event WHERE time_ns < 0')" = 0 ] ||
  why="$why sqlite: a negative time_ns"
[ -z "$why" ] && ok clock-limits || fail clock-limits "$why"

# 6 and 7. A log's strings (program, registry, string fields, thread
# names) with ESC, BEL, DEL, C1 and invalid UTF-8: every text output is
# UTF-8 with no control byte but tab, LF and CR (.export.text), and
# SQLite's event_fields is JSON.
python3 "$top/tests/lib/hostile/mk.py" hostile-strings hs.tt x || exit 2
clean() {   # clean FILE -- UTF-8, and no control byte but tab, LF, CR
  python3 -c '
import re, sys
data = open(sys.argv[1], "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("not UTF-8: %s" % e)
m = re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", text)
if m:
    sys.exit("control U+%04X at %d" % (ord(m.group()), m.start()))' "$1"
}
why=
"$eventcnv" hs.tt >hs.text 2>/dev/null; "$eventcnv" --header hs.tt >hs.header 2>/dev/null
"$eventcnv" --list hs.tt >hs.list 2>/dev/null; "$eventcnv" hs.tt hs.tt >hs.merged 2>/dev/null
"$eventcnv" --summary hs.tt >hs.summary 2>/dev/null
for f in jsonl csv chrome html; do "$eventcnv" --format $f -o hs.$f hs.tt 2>/dev/null; done
for f in text header list merged summary jsonl csv chrome html; do
  w=$(clean hs.$f 2>&1) || why="$why $f: $w;"
done
"$eventcnv" --format sqlite -o hs.db hs.tt 2>/dev/null
[ "$(sqlite3 hs.db "SELECT count(*) FROM event_fields WHERE NOT json_valid(fields)")" = 0 ] ||
  why="$why sqlite: event_fields not JSON;"
sqlite3 hs.db "SELECT fields FROM event_fields; SELECT program FROM process; SELECT name FROM thread" >hs.dbtext
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' hs.dbtext 2>/dev/null ||
  why="$why sqlite: not UTF-8;"
grep -qF 'program       \033[2J\377\300\200\007' hs.header || why="$why header: $(grep program hs.header)"
[ -z "$why" ] && ok hostile-strings || fail hostile-strings "$why"

# 9. Inputs that would block: a MapExec naming what is now a FIFO is not
# opened; --follow ends at a damaged block of a running program's log.
cp /bin/ls prog
TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/fifo.log LD_PRELOAD="$top/build/libtelltale-malloc.so" ./prog >/dev/null
rm prog && mkfifo prog
expect heap-fifo 0 "" "$heap" fifo.log && ok heap-fifo
sleep 600 &   # outlives the 60 s expect gives --follow
running=$!
python3 "$top/tests/lib/hostile/mk.py" follow-damage fd.tt $running || exit 2
expect follow-damage 1 "offset 2989: block damaged" "$eventcnv" --follow fd.tt && ok follow-damage
kill $running 2>/dev/null; wait $running 2>/dev/null

# 8. The tools agree on a log cut at a block boundary, with no live file.
python3 - <<'EOF'
import struct
d = open("clean.log", "rb").read()
pos, last = struct.unpack_from("<I", d, 20)[0], None
while pos + 36 <= len(d):
    last = pos
    pos += struct.unpack_from("<I", d, pos + 4)[0]
open("cut.log", "wb").write(d[:last])
EOF
expect cut-agree 1 "no live file" "$eventcnv" --count cut.log &&
  expect cut-agree 1 "cut.log.live, from which they are recovered, is not there" "$heap" cut.log &&
  expect cut-agree 1 "there is no live file to recover from" "$replay" -q cut.log &&
  ok cut-agree

finish
