#!/usr/bin/env bash
# tests/hostile.sh -- the tools against hostile logs, strings and output
# paths (issue 35): each case the smallest input that shows it
#
# .design: design/telemetry.txt .tools.output .zstd.damage .replay.touch
#
# Usage: tests/hostile.sh CONFIG     e.g. tests/hostile.sh build/san
# CONFIG's eventcnv, heap, replay and tests/malloc_events must be built.
# Inputs are made by tests/mkstream.py and tests/hostile/mk.py.
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
#   replay-huge        a recorder log of 4096 mallocs of 4 GiB (tens of
#                      KB; 2 under ASan, whose allocator takes a second a
#                      block, and its shadow an eighth): replay's peak RSS
#                      stays under 200 MB (800), and what it did not touch
#                      is said
#   cut-agree          a recorder log cut at a block boundary with no live
#                      file: eventcnv, telltale-heap and replay all exit 1
# Prints "ok CASE" or "FAIL CASE: why", then "N passed, N failed".

set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cfg=${1:?usage: tests/hostile.sh CONFIG}
case $cfg in /*) ;; *) cfg=$top/$cfg ;; esac
eventcnv=$cfg/eventcnv
heap=$cfg/heap
replay=$cfg/replay
# The recorder's test program, as tests/replay.sh: build/'s under the
# sanitizers (it emits the events itself, with no sanitizer to care).
events=$top/build/tests/malloc_events
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostile.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
passed=0
failed=0
ok() { echo "ok $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# expect CASE STATUS ERR-SUBSTRING CMD... -- CMD ends within 60 s with
# STATUS and says ERR-SUBSTRING on stderr; its stderr is CASE.err
expect() {
  local name=$1 want=$2 sub=$3 got
  shift 3
  timeout 60 "$@" >"$name.out" 2>"$name.err" </dev/null
  got=$?
  if [ $got != "$want" ]; then
    bad "$name" "exit $got, expected $want: $(head -c 600 "$name.err")"
    return 1
  elif [ -n "$sub" ] && ! grep -qF -- "$sub" "$name.err"; then
    bad "$name" "stderr lacks '$sub': $(head -c 600 "$name.err")"
    return 1
  fi
  return 0
}

python3 "$top/tests/mkstream.py" --variant v3 v3.tt || exit 2
TELLTALE_FILE=clean.log "$events" clean >/dev/null || exit 2
# ASan's allocator takes a second or so over each 4 GiB block, and
# writes its shadow, an eighth of it: 2 there, and 512 MB more allowed
case $cfg in */san) huge=2 rssMax=800 ;; *) huge=4096 rssMax=200 ;; esac
TELLTALE_FILE=huge.log "$events" huge $huge >/dev/null || exit 2

# 1. Archives carry the damage they were made from, or refuse.
python3 "$here/hostile/mk.py" v3-zstd-sound zs.tt "$eventcnv" || exit 2
expect archive-launder 1 "offset 2705: a block marked zstd in a stream of version 3" \
    "$eventcnv" --format telltale --zstd -o zs.arc zs.tt &&
  { [ ! -e zs.arc ] && ok archive-launder || bad archive-launder "an archive was made"; }

# 2. No tool replaces its input.
cp v3.tt a.tt
expect out-stdin 2 "it is the log read from standard input" sh -c "exec '$eventcnv' -o a.tt - <a.tt" &&
  { cmp -s v3.tt a.tt && ok out-stdin || bad out-stdin "the log changed"; }
cp clean.log c.log
expect heap-out-stdin 2 "it is the log read from standard input" sh -c "exec '$heap' -o c.log - <c.log" &&
  { cmp -s clean.log c.log && ok heap-out-stdin || bad heap-out-stdin "the log changed"; }
expect replay-svg-log 2 "it is a log to read" "$replay" -q --svg c.log c.log &&
  { cmp -s clean.log c.log && ok replay-svg-log || bad replay-svg-log "the log changed"; }
expect out-live 2 "it is the live file of a log to read" "$eventcnv" -o a.tt.live a.tt &&
  expect out-live 2 "it is the live file of a log to read" "$eventcnv" --format ctf -o a.tt.live a.tt &&
  { [ ! -e a.tt.live ] && ok out-live || bad out-live "a.tt.live was made"; }
expect stdout-log 2 "standard output: it is a log to read" sh -c "exec '$eventcnv' a.tt >>a.tt" &&
  { cmp -s v3.tt a.tt && ok stdout-log || bad stdout-log "the log changed"; }
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

# 4. Memory on forged input: replay touches at most --touch-max.
rss=$(python3 -c '
import resource, subprocess, sys
with open("replay-huge.err", "w") as err:
    r = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=err)
print(r, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$replay" -q huge.log)
if [ "${rss% *}" != 0 ]; then
  bad replay-huge "exit ${rss% *}: $(head -c 600 replay-huge.err)"
elif [ "${rss#* }" -gt $rssMax ]; then
  bad replay-huge "peak RSS ${rss#* } MB"
elif ! grep -q "$huge blocks made past it were not touched" replay-huge.err; then
  bad replay-huge "not said: $(head -c 600 replay-huge.err)"
else
  ok replay-huge
fi

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

echo "$passed passed, $failed failed"
[ $failed = 0 ]
