#!/usr/bin/env bash
# tests/tools/export.sh -- eventcnv --format: each format read by its own reader
#
# .design: design/export.txt .export
#
# Usage: tests/tools/export.sh CONFIG      e.g. tests/tools/export.sh build/san
# CONFIG's eventcnv and examples/pool must be built.
#
# The test stream (tests/lib/export.py make) has every letter, three threads,
# labels, strings with control bytes and invalid UTF-8, and words on
# either side of 2^53.  tests/lib/export.py checks each record against the
# events mkstream.py wrote, after Python's json or csv module parsed it.
# Covers:
#   jsonl, csv            every record, field by field, against the oracle
#   jsonl-kind, -event    --kind and --event: only those, with their seq
#   FMT-many              30000 more events and a thread serial of 4000000000
#   jsonl-jq              jq reads every line (if jq is installed)
#   stdout                without -o the same bytes go to stdout
#   text                  --format text is the default output, and -o works
#   text-utf8             text prints valid UTF-8 (Cyrillic, CJK, the euro, an
#                         emoji) as itself, controls and invalid bytes in octal
#   cut-log               a log cut short: every sound event written in every
#                         format, exit 1
#   chrome(-event)        the Trace Event Format's rules (valid JSON, ph, pid
#                         and tid, ts not going back per thread, process and
#                         thread names as metadata before a thread's events),
#                         then every instant event against the oracle
#   sqlite                the event table and every event's table, by sqlite3
#   sqlite-schema         column types, indexes and their use, the thread,
#                         process, kind, registry, string and label tables,
#                         and the event_fields view
#   sqlite-kind(-strings) --kind: only those events; strings and labels whole
#   sqlite-replace        an existing database at -o is replaced
#   sqlite-same-pid       two logs of one pid: a thread of both is one row
#   ctf(-many)            every event as babeltrace2's Python bindings read
#                         it, thread by thread: name, time, each value, every
#                         letter (-many: 30000 more events, several packets,
#                         and a thread whose serial is 4000000000)
#                         (both copied block by block: .export.ctf.block)
#   ctf-kind              --kind: the events written one by one, checked the same
#   ctf-byte-order        mkstream's little-endian streams (copied block by
#                         block) and the same big-endian (written one by one),
#                         64- and 32-bit: babeltrace2 prints the same text
#   ctf-babeltrace2       the babeltrace2 command prints every event
#   ctf-not-empty         a trace directory that is not empty is refused
#   bad-format, sqlite-no-file, ctf-no-dir, not-with-summary   usage errors: exit 2
#   unwritable            an -o that cannot be written: exit 1, says why
#   example-*             the example's real log in every format; example-ctf:
#                         each event's time, thread and name as the text's
#   clock-back            a log whose thread steps back in time (mkstream.py
#                         v3-back): CTF copied block by block and with
#                         --kind, read by babeltrace2, and jsonl, chrome and
#                         the text never go back on a thread, and each says
#                         so with the offset (.stream.order.back)
#   recorder-stacks       sqlite3 inserting 300 rows recorded with
#                         TELLTALE_STACKS=8 (build/'s recorder): the log's
#                         threads never go back in time, no warning, and
#                         babeltrace2 reads both CTF exports whole
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed";
# exits 1 if any case failed.

set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/results.sh"
if [ $# -ne 1 ]; then
  echo "usage: $0 CONFIG" >&2
  exit 2
fi
config=$(cd "$1" && pwd) || exit 2
eventcnv=$config/eventcnv
tmp=$(mktemp -d "${TMPDIR:-/tmp}/export-test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# sane ERRFILE -- no sanitizer report
sane() {
  ! grep -q "Sanitizer\|runtime error" "$1"
}

log=$tmp/t.tt
python3 "$tests/lib/export.py" make "$log" || { echo "FAIL make: export.py make failed"; exit 1; }
python3 "$tests/lib/export.py" make-many "$tmp/many.tt" || { echo "FAIL make: export.py make-many failed"; exit 1; }

# check NAME FMT [EVENTCNV-ARGS...] -- -o NAME.FMT, exit 0, and checked
# against the oracle
check() {
  local name=$1 fmt=$2 why=""
  shift 2
  "$eventcnv" --format "$fmt" -o "$tmp/$name.$fmt" "$@" "$log" 2>"$tmp/$name.err"
  local st=$?
  [ $st = 0 ] || why="exit status $st, expected 0"
  sane "$tmp/$name.err" || why="sanitizer report"
  local only=()
  while [ $# -gt 0 ]; do only+=(${2//,/ }); shift 2; done
  if [ -z "$why" ]; then
    why=$(python3 "$tests/lib/export.py" "$fmt" "$tmp/$name.$fmt" "${only[@]}" 2>&1)
  fi
  result "$name" "$why"
}

check jsonl jsonl
check csv csv
check jsonl-kind jsonl --kind User,Pool
check jsonl-event jsonl --event Message,ThreadName
check sqlite sqlite
# The many-event stream, and a thread serial of 4000000000, in each format
for fmt in jsonl csv chrome sqlite; do
  "$eventcnv" --format $fmt -o "$tmp/many.$fmt" "$tmp/many.tt" 2>"$tmp/many.err"
  st=$?
  why=""
  [ $st = 0 ] || why="exit status $st"
  sane "$tmp/many.err" || why="$why; sanitizer report"
  [ -z "$why" ] && why=$(python3 "$tests/lib/export.py" $fmt-many "$tmp/many.$fmt" 2>&1)
  result $fmt-many "${why#; }"
done
check chrome chrome
check chrome-event chrome --event Measure,Everything
check sqlite-kind sqlite --kind User,Pool

# q DB SQL -- the sqlite3 command's answer
q() {
  sqlite3 "$1" "$2" 2>&1
}
db=$tmp/sqlite.sqlite
why=""
[ "$(q "$db" "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('Everything')")" = \
  "seq INTEGER, p INTEGER, a INTEGER, w INTEGER, u INTEGER, d REAL, s TEXT" ] ||
  why="$why; Everything's columns: $(q "$db" "SELECT group_concat(name || ' ' || type) FROM pragma_table_info('Everything')")"
# event is a view of event_row, whose name is an integer, the event's code
[ "$(q "$db" "SELECT group_concat(name) FROM (SELECT name FROM pragma_index_list('event_row') ORDER BY name)")" = \
  "event_name,event_time" ] || why="$why; indexes on event_row: $(q "$db" "SELECT group_concat(name) FROM pragma_index_list('event_row')")"
q "$db" "EXPLAIN QUERY PLAN SELECT * FROM event WHERE name = 'Measure'" | grep -q "USING INDEX event_name" ||
  why="$why; a query by name does not use event_name"
q "$db" "EXPLAIN QUERY PLAN SELECT * FROM event WHERE time_ns > 5" | grep -q "USING INDEX event_time" ||
  why="$why; a query by time does not use event_time"
[ "$(q "$db" "SELECT thread, tid, name, events FROM thread WHERE thread IN (1, 3) ORDER BY thread")" = \
  "$(printf '1|7001|main|%s\n3|7003||5' "$(q "$db" "SELECT count(*) FROM event WHERE thread = 1")")" ] ||
  why="$why; thread table: $(q "$db" "SELECT * FROM thread" | tr '\n' ' ')"
[ "$(q "$db" "SELECT pid, program, version FROM process")" = "4242|mkstream|2.0.0" ] ||
  why="$why; process: $(q "$db" "SELECT * FROM process")"
[ "$(q "$db" "SELECT name, doc FROM kind WHERE kind = 1")" = "Pool|per pool: creation, destruction" ] ||
  why="$why; kind 1: $(q "$db" "SELECT * FROM kind WHERE kind = 1")"
[ "$(q "$db" "SELECT p.name, p.letter, p.type, p.doc FROM registry_param p JOIN registry_event e USING (code)
             WHERE e.name = 'PoolCreate' AND p.position = 3")" = "name|S|TEXT|its name" ] ||
  why="$why; registry_param of PoolCreate"
[ "$(q "$db" "SELECT format, doc, tbl FROM registry_event WHERE name = 'Label'")" = \
  "AW|an address was labelled with an interned string|Label_" ] || why="$why; registry_event Label"
[ "$(q "$db" "SELECT id, text FROM string")" = "1|main pool" ] || why="$why; string: $(q "$db" "SELECT * FROM string")"
[ "$(q "$db" "SELECT printf('0x%x', address), id, text FROM label")" = "0x7f0000001000|1|main pool" ] ||
  why="$why; label: $(q "$db" "SELECT * FROM label")"
[ "$(q "$db" "SELECT fields FROM event_fields WHERE seq = 31")" = \
  '{"p":"0xdeadbeef","a":"0x7f0000001000","w":-1,"u":4294967295,"d":2.5,"s":"all letters"}' ] ||
  why="$why; event_fields of seq 31: $(q "$db" "SELECT * FROM event_fields WHERE seq = 31")"
[ "$(q "$db" "SELECT count(*) FROM event_fields")" = "$(q "$db" "SELECT count(*) FROM event")" ] ||
  why="$why; event_fields has not every event"
[ "$(q "$db" "SELECT count(*) FROM event_fields WHERE NOT json_valid(fields)")" = 0 ] ||
  why="$why; event_fields not JSON: $(q "$db" "SELECT fields FROM event_fields WHERE NOT json_valid(fields) LIMIT 1")"
result sqlite-schema "${why#; }"

# --kind leaves the string and label tables whole
why=""
[ "$(q "$tmp/sqlite-kind.sqlite" "SELECT count(*) FROM event WHERE kind NOT IN ('User', 'Pool')")" = 0 ] ||
  why="other kinds in the event table"
[ "$(q "$tmp/sqlite-kind.sqlite" "SELECT text FROM label")" = "main pool" ] || why="$why; no label"
result sqlite-kind-strings "${why#; }"

# CTF: babeltrace2 reads the trace; its Python bindings (Debian's
# python3-bt2, for Debian's python3) give every event to check.
btpython=""
for p in /usr/bin/python3 python3; do
  if "$p" -c "import bt2" 2>/dev/null; then btpython=$p; break; fi
done
if [ -z "$btpython" ] || ! command -v babeltrace2 >/dev/null; then
  echo "skip ctf: babeltrace2 or its Python bindings (python3-bt2) are not installed"
else
  # ctf and ctf-many are copied block by block, a stream file per
  # thread, kind and level; with a filter, events are written one by
  # one, a stream file per thread.
  for name in ctf ctf-many ctf-kind; do
    why=""
    src=$log
    args=() only=()
    files=stream_1_0_0
    [ $name = ctf-many ] && src=$tmp/many.tt
    [ $name = ctf-kind ] && args=(--kind User,Pool) only=(User Pool) files=stream_1_3
    "$eventcnv" --format ctf -o "$tmp/$name" "${args[@]}" "$src" 2>"$tmp/$name.err"
    st=$?
    [ $st = 0 ] || why="exit status $st"
    sane "$tmp/$name.err" || why="$why; sanitizer report"
    [ -f "$tmp/$name/$files" ] || why="$why; no $files: $(ls "$tmp/$name" | tr '\n' ' ')"
    [ -z "$why" ] && why=$("$btpython" "$tests/lib/export.py" ${name/-kind/} "$tmp/$name" "${only[@]}" 2>&1)
    result $name "${why#; }"
  done
  why=""
  for v in basic big ptr32 big32; do
    python3 "$tests/lib/mkstream.py" --variant $v "$tmp/$v.tt" || why="$why; mkstream.py --variant $v failed"
    "$eventcnv" --format ctf -o "$tmp/$v.ctf" "$tmp/$v.tt" 2>"$tmp/$v.err" || why="$why; $v: exit $?"
    sane "$tmp/$v.err" || why="$why; $v: sanitizer report"
    babeltrace2 "$tmp/$v.ctf" >"$tmp/$v.bt" 2>&1 || why="$why; $v: babeltrace2 exit $?"
  done
  for pair in basic:big ptr32:big32; do
    le=${pair%:*} be=${pair#*:}
    [ -f "$tmp/$le.ctf/stream_1_0_0" ] && [ -f "$tmp/$be.ctf/stream_1_0" ] ||
      why="$why; $le not block by block or $be not one by one"
    [ "$(wc -l <"$tmp/$le.bt")" = "$("$eventcnv" "$tmp/$le.tt" 2>/dev/null | wc -l)" ] ||
      why="$why; $le: babeltrace2 printed $(wc -l <"$tmp/$le.bt") lines"
    cmp -s "$tmp/$le.bt" "$tmp/$be.bt" || why="$why; $le and $be differ: $(diff "$tmp/$le.bt" "$tmp/$be.bt" | head -3)"
  done
  result ctf-byte-order "${why#; }"
  why=""
  babeltrace2 "$tmp/ctf" >"$tmp/ctf.txt" 2>"$tmp/ctf.bt.err" || why="babeltrace2 exit $?"
  [ "$(wc -l <"$tmp/ctf.txt")" = "$(wc -l <"$tmp/jsonl.jsonl")" ] ||
    why="$why; babeltrace2 printed $(wc -l <"$tmp/ctf.txt") events, want $(wc -l <"$tmp/jsonl.jsonl")"
  grep -qF 'Everything: { thread = 1, kind = ( "User" : container = 3 ), tid = 7001, thread_name = "main" }, { p = 0xDEADBEEF, a = 0x7F0000001000, w = 18446744073709551615, u = 4294967295, d = 2.5, s = "all letters" }' \
    "$tmp/ctf.txt" || why="$why; no Everything line as expected"
  [ "$(babeltrace2 "$tmp/ctf-many" 2>/dev/null | grep -c 'ObjectAlloc: { thread = 3, kind = ( "Object" : container = 2 ), tid = 7003, thread_name = "" }')" = 10002 ] ||
    why="$why; thread 3 of ctf-many has not its 10002 ObjectAlloc"
  result ctf-babeltrace2 "${why#; }"
  why=""
  "$eventcnv" --format ctf -o "$tmp/ctf" "$log" >/dev/null 2>"$tmp/ctf-again.err"
  st=$?
  [ $st = 1 ] || why="exit status $st"
  grep -q "is not empty" "$tmp/ctf-again.err" || why="$why; stderr: $(head -1 "$tmp/ctf-again.err")"
  result ctf-not-empty "${why#; }"
fi

# -o names an existing database: it is replaced
why=""
"$eventcnv" --format sqlite -o "$db" --event Tick "$log" 2>/dev/null || why="exit $?"
[ "$(q "$db" "SELECT count(*) FROM event")" = 1 ] || why="$why; $(q "$db" "SELECT count(*) FROM event") events, want the one Tick"
result sqlite-replace "${why#; }"

# Two logs of one pid (an image and the one it exec'd; here one log
# twice): one process's threads, each a row with both logs' events
why=""
cp "$log" "$tmp/again.log"
"$eventcnv" --format sqlite -o "$tmp/pid.sqlite" "$log" "$tmp/again.log" 2>"$tmp/pid.err" ||
  why="exit $?: $(head -1 "$tmp/pid.err")"
[ "$(q "$tmp/pid.sqlite" "SELECT sum(events) FROM thread")" = "$(q "$tmp/pid.sqlite" "SELECT count(*) FROM event")" ] ||
  why="$why; thread.events sum $(q "$tmp/pid.sqlite" "SELECT sum(events) FROM thread") against $(q "$tmp/pid.sqlite" "SELECT count(*) FROM event") events"
[ "$(q "$tmp/pid.sqlite" "SELECT count(*) FROM thread")" = "$(q "$tmp/pid.sqlite" "SELECT count(DISTINCT thread) FROM event")" ] ||
  why="$why; a thread in both logs has two rows"
result sqlite-same-pid "${why#; }"

why=""
if command -v jq >/dev/null; then
  n=$(jq -c . "$tmp/jsonl.jsonl" | wc -l)
  lines=$(wc -l <"$tmp/jsonl.jsonl")
  [ "$n" = "$lines" ] && [ "$n" -gt 30 ] || why="jq read $n records of $lines lines"
  w=$(jq -r 'select(.event=="Everything") | .fields.w' "$tmp/jsonl.jsonl" | tail -1)
  [ "$w" = 18446744073709551615 ] || why="$why; the largest word is $w"
  l=$(jq -r 'select(.event=="Label") | .labels.address' "$tmp/jsonl.jsonl")
  [ "$l" = "main pool" ] || why="$why; Label's label is '$l'"
  result jsonl-jq "$why"
else
  echo "skip jsonl-jq: jq is not installed"
fi

why=""
"$eventcnv" --format jsonl "$log" >"$tmp/stdout.jsonl" 2>/dev/null
cmp -s "$tmp/stdout.jsonl" "$tmp/jsonl.jsonl" || why="stdout differs from -o"
result stdout "$why"

why=""
"$eventcnv" "$log" >"$tmp/default.txt" 2>/dev/null
"$eventcnv" --format text "$log" >"$tmp/text.txt" 2>/dev/null
"$eventcnv" --format=text -o "$tmp/text-o.txt" "$log" 2>/dev/null
cmp -s "$tmp/default.txt" "$tmp/text.txt" || why="--format text differs from the default"
cmp -s "$tmp/default.txt" "$tmp/text-o.txt" || why="$why; -o differs from stdout"
result text "$why"

# Text shows valid UTF-8 as itself, and escapes in octal a control (C0,
# DEL, C1), and each byte of invalid UTF-8: a lone lead, a surrogate, an
# overlong form, a code point past U+10FFFF, a sequence cut by the
# string's end (.export.text).  Written out here, not by an oracle.
why=""
want='text="\377\376 bad \303 lone \355\240\200 surrogate \340\200\257 overlong"
text="ctl \001\033[0m\177 \"q\" \\ \n\r\t end"
text="ok é € 😀"
text="при 日本 c1 \302\205 nbsp   big \364\220\200\200 cut \342\202"'
got=$(grep -o 'text=.*' "$tmp/default.txt" | tail -n 4)
[ "$got" = "$want" ] || why="got: $got"
result text-utf8 "$why"

# A log cut inside a block: exit 1, and every event the text shows is written.
why=""
python3 "$tests/lib/mkstream.py" --variant v2-cut "$tmp/cut.tt"
"$eventcnv" "$tmp/cut.tt" >"$tmp/cut.txt" 2>/dev/null
for fmt in jsonl csv chrome sqlite ctf; do
  "$eventcnv" --format $fmt -o "$tmp/cut.$fmt" "$tmp/cut.tt" 2>"$tmp/cut.err"
  st=$?
  [ $st = 1 ] || why="$why; $fmt exit status $st"
  grep -q "offset" "$tmp/cut.err" || why="$why; $fmt: no message naming the offset"
done
want=$(wc -l <"$tmp/cut.txt")
[ "$want" -gt 0 ] || why="$why; the text shows no events"
[ "$(wc -l <"$tmp/cut.jsonl")" = "$want" ] || why="$why; jsonl has $(wc -l <"$tmp/cut.jsonl") records, text $want"
[ "$(python3 -c 'import csv,sys; print(len(list(csv.reader(open(sys.argv[1], newline=""))))-1)' "$tmp/cut.csv")" = "$want" ] ||
  why="$why; csv has not $want rows"
[ "$(python3 -c 'import json,sys; print(sum(e["ph"] == "i" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$tmp/cut.chrome")" = "$want" ] ||
  why="$why; chrome has not $want events"
[ "$(sqlite3 "$tmp/cut.sqlite" "SELECT count(*) FROM event")" = "$want" ] || why="$why; sqlite has not $want events"
if command -v babeltrace2 >/dev/null; then
  [ "$(babeltrace2 "$tmp/cut.ctf" 2>/dev/null | wc -l)" = "$want" ] || why="$why; ctf has not $want events"
fi
result cut-log "${why#; }"

# usage NAME SUBSTRING ARGS... -- exit 2 with SUBSTRING on stderr, no output
usage() {
  local name=$1 sub=$2 why=""
  shift 2
  "$eventcnv" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local st=$?
  [ $st = 2 ] || why="exit status $st, expected 2"
  grep -qF -- "$sub" "$tmp/$name.err" || why="$why; stderr lacks '$sub'"
  [ -s "$tmp/$name.out" ] && why="$why; wrote to stdout"
  result "$name" "${why#; }"
}
usage bad-format "unknown --format" --format yaml "$log"
usage sqlite-no-file "-o FILE" --format sqlite "$log"
usage ctf-no-dir "-o FILE" --format ctf "$log"
usage not-with-summary "not with" --format jsonl --summary "$log"

why=""
"$eventcnv" --format jsonl -o "$tmp/no/such/dir/out.jsonl" "$log" >/dev/null 2>"$tmp/unwritable.err"
st=$?
[ $st = 1 ] || why="exit status $st, expected 1"
grep -qF "cannot write $tmp/no/such/dir/out.jsonl: No such file or directory" "$tmp/unwritable.err" ||
  why="$why; stderr: $(head -1 "$tmp/unwritable.err")"
result unwritable "${why#; }"

# The example's real log, in every format: each reader accepts it, with
# as many events as the text.
(cd "$tmp" && TELLTALE_FILE=example.log "$config/examples/pool" >/dev/null 2>&1)
"$eventcnv" "$tmp/example.log" >"$tmp/example.txt" 2>"$tmp/example.err"
st=$?
want=$(wc -l <"$tmp/example.txt")
if [ $st != 0 ] || [ "$want" -lt 50 ]; then
  result example "the example's log does not read cleanly (exit $st, $want events)"
else
  why=""
  "$eventcnv" --format jsonl -o "$tmp/example.jsonl" "$tmp/example.log" 2>"$tmp/e.err" || why="exit $?"
  got=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)))' "$tmp/example.jsonl")
  [ "$got" = "$want" ] || why="$why; $got records, want $want"
  result example-jsonl "${why#; }"
  why=""
  "$eventcnv" --format csv -o "$tmp/example.csv" "$tmp/example.log" 2>"$tmp/e.err" || why="exit $?"
  got=$(python3 -c 'import csv,sys; print(len(list(csv.reader(open(sys.argv[1], newline=""), strict=True)))-1)' "$tmp/example.csv")
  [ "$got" = "$want" ] || why="$why; $got rows, want $want"
  result example-csv "${why#; }"
  why=""
  "$eventcnv" --format sqlite -o "$tmp/example.sqlite" "$tmp/example.log" 2>"$tmp/e.err" || why="exit $?"
  got=$(q "$tmp/example.sqlite" "SELECT count(*) FROM event_fields")
  [ "$got" = "$want" ] || why="$why; $got rows, want $want"
  [ "$(q "$tmp/example.sqlite" "SELECT count(*) FROM PoolAlloc")" = "$(grep -c ' PoolAlloc ' "$tmp/example.txt")" ] ||
    why="$why; PoolAlloc rows differ from the text"
  result example-sqlite "${why#; }"
  why=""
  "$eventcnv" --format chrome -o "$tmp/example.json" "$tmp/example.log" 2>"$tmp/e.err" || why="exit $?"
  got=$(python3 -c 'import json,sys; print(sum(e["ph"] == "i" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$tmp/example.json")
  [ "$got" = "$want" ] || why="$why; $got instant events, want $want"
  result example-chrome "${why#; }"
  if command -v babeltrace2 >/dev/null; then
    why=""
    "$eventcnv" --format ctf -o "$tmp/example.ctf" "$tmp/example.log" 2>"$tmp/e.err" || why="exit $?"
    got=$(babeltrace2 "$tmp/example.ctf" 2>/dev/null | wc -l)
    [ "$got" = "$want" ] || why="$why; babeltrace2 printed $got events, want $want"
    # Its clock counts ns from the start: --clock-cycles shows ELAPSED.
    babeltrace2 --clock-cycles "$tmp/example.ctf" >"$tmp/example.bt" 2>/dev/null
    why=$why$(python3 -c 'import re, sys
def times(lines, pattern):
    return sorted(m.groups() for m in map(re.compile(pattern).match, lines) if m)
bt = times(open(sys.argv[1]), r"\[0*(\d+)\] .*? (\w+): \{ thread = (\d+), ")
txt = [(str(round(float(s) * 1e9)), n, t) for s, t, n in
       times(open(sys.argv[2]), r" *(\d+\.\d{9}) \S+ T(\d+) +\S+ +(\w+)")]
txt.sort()
if bt != txt:
    print("; babeltrace2 differs from the text at %r" %
          (next((a, b) for a, b in zip(bt + [None] * len(txt), txt + [None] * len(bt)) if a != b),))
' "$tmp/example.bt" "$tmp/example.txt")
    result example-ctf "${why#; }"
  fi
fi

# forward FILE... -- nothing, or where a thread's time goes back: in
# eventcnv's text (ELAPSED, THREAD), jsonl (time_ns, thread) and chrome
# (ts, tid)
forward() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    last = {}
    if path.endswith(".txt"):
        rows = ((float(l.split()[0]), l.split()[2]) for l in open(path))
    elif path.endswith(".jsonl"):
        rows = ((r["time_ns"], r["thread"]) for r in map(json.loads, open(path)))
    else:
        rows = ((e["ts"], e["tid"]) for e in json.load(open(path))["traceEvents"] if e.get("ph") == "i")
    for n, (t, thread) in enumerate(rows):
        if t < last.get(thread, t):
            sys.stdout.write("; %s: thread %s goes back at event %d" % (path.rsplit("/", 1)[-1], thread, n))
            break
        last[thread] = t
PY
}

# clockBack NAME LOG KIND WARN -- LOG's exports (CTF whole and with
# --kind KIND) never go back on a thread, and say so (WARN: the stderr
# wanted, or "" for none)
clockBack() {
  local name=$1 in=$2 kind=$3 warn=$4 why="" f
  "$eventcnv" "$in" >"$tmp/$name.txt" 2>"$tmp/$name.err" || why="text: exit $?"
  for f in jsonl chrome; do
    "$eventcnv" --format $f -o "$tmp/$name.$f" "$in" 2>>"$tmp/$name.err" || why="$why; $f: exit $?"
  done
  why=$why$(forward "$tmp/$name.txt" "$tmp/$name.jsonl" "$tmp/$name.chrome")
  if command -v babeltrace2 >/dev/null; then
    "$eventcnv" --format ctf -o "$tmp/$name.ctf" "$in" 2>>"$tmp/$name.err" || why="$why; ctf: exit $?"
    "$eventcnv" --format ctf --kind "$kind" -o "$tmp/$name-kind.ctf" "$in" 2>>"$tmp/$name.err" ||
      why="$why; ctf --kind: exit $?"
    [ -f "$tmp/$name.ctf/stream_1_0_0" ] || why="$why; ctf not copied block by block"
    for f in "$name.ctf" "$name-kind.ctf"; do
      babeltrace2 "$tmp/$f" >"$tmp/$f.bt" 2>"$tmp/$f.bterr" || why="$why; babeltrace2 $f: exit $? $(grep -m1 -o 'timestamp is less[^:]*' "$tmp/$f.bterr")"
    done
    [ "$(wc -l <"$tmp/$name.ctf.bt")" = "$(wc -l <"$tmp/$name.txt")" ] ||
      why="$why; babeltrace2 printed $(wc -l <"$tmp/$name.ctf.bt") events of $(wc -l <"$tmp/$name.txt")"
  fi
  sane "$tmp/$name.err" || why="$why; sanitizer report"
  if [ -n "$warn" ]; then
    [ "$(grep -cF -- "$warn" "$tmp/$name.err")" -ge 4 ] || why="$why; not said in every format: $(grep -m1 'back' "$tmp/$name.err")"
  elif grep -q "time never goes back" "$tmp/$name.err"; then
    why="$why; $(grep -m1 'time never goes back' "$tmp/$name.err")"
  fi
  result "$name" "${why#; }"
}
python3 "$tests/lib/mkstream.py" --variant v3-back "$tmp/back.tt"
clockBack clock-back "$tmp/back.tt" Object "2 events were stamped before the event before them of the same thread, kind and signal level (the first at offset 2781, thread 2)"

# A real program's log with stacks: the recorder (build/'s, as no
# sanitizer can be combined with it) stamps a thread's events in order.
recorder=$tests/../build/libtelltale-malloc.so
if ! command -v sqlite3 >/dev/null || [ ! -e "$recorder" ]; then
  echo "skip recorder-stacks: sqlite3 or build/libtelltale-malloc.so is missing"
else
  { echo "CREATE TABLE t(a, b);"
    for i in $(seq 300); do echo "INSERT INTO t VALUES($i, printf('%.*c', $i % 50 + 1, 'x'));"; done
  } >"$tmp/rows.sql"
  TELLTALE_STACKS=8 TELLTALE_FILE=$tmp/sq.log LD_PRELOAD=$recorder sqlite3 "$tmp/t.db" <"$tmp/rows.sql" >/dev/null 2>&1
  if ! "$eventcnv" --count "$tmp/sq.log" 2>/dev/null | grep -q StackFrames; then
    result recorder-stacks "no log with StackFrames from sqlite3"
  else
    clockBack recorder-stacks "$tmp/sq.log" Malloc ""
  fi
fi

finish
