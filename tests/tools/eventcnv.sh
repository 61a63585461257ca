#!/usr/bin/env bash
# tests/tools/eventcnv.sh -- golden-file tests of eventcnv and the stream reader
#
# .design: design/tools.txt .eventcnv design/stream.txt .stream
#
# Usage: tests/tools/eventcnv.sh [--update] EVENTCNV
#   e.g. tests/tools/eventcnv.sh build/eventcnv
#        tests/tools/eventcnv.sh build/san/eventcnv
#
# Each case writes a synthetic stream with tests/lib/mkstream.py, runs
# EVENTCNV on it, and checks the exit status, stdout against
# tests/data/golden/CASE.out, and (where given) that stderr contains a
# substring.  The oracle-* cases also check the default output of every
# sound variant against mkstream.py --expect, a second formatter written
# in Python, so the golden files are not merely what eventcnv printed.
#
# Prints "ok CASE" or "FAIL CASE: why" per case, then "N passed, N failed";
# exits 1 if any case failed.  --update rewrites the golden files instead
# of comparing (check the diff, and the oracle cases, before committing).

set -u

tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/results.sh"
update=0
if [ "${1:-}" = --update ]; then
  update=1
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: $0 [--update] path/to/eventcnv" >&2
  exit 2
fi
eventcnv=$1
case $eventcnv in
  /*) ;;
  *) eventcnv=$PWD/$eventcnv ;;
esac
if [ ! -x "$eventcnv" ]; then
  echo "$0: $eventcnv is not an executable" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/eventcnv-test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# stream VARIANT -- make tests' stream for VARIANT, once
stream() {
  local f=$tmp/$1.tt
  if [ ! -f "$f" ]; then
    python3 "$tests/lib/mkstream.py" --variant "$1" "$f" || {
      echo "$0: mkstream.py --variant $1 failed" >&2
      exit 2
    }
  fi
}

# check CASE VARIANT STATUS STDERR-SUBSTRING [ARG...]
#   Runs EVENTCNV ARG... FILE, where FILE is VARIANT's stream; VARIANT
#   "none" passes no file, and "stdin:VARIANT" feeds it on stdin.
check() {
  local name=$1 variant=$2 status=$3 errsub=$4
  shift 4
  local out=$tmp/$name.out err=$tmp/$name.err golden=$tests/data/golden/$name.out got why=""
  case $variant in
    none)
      "$eventcnv" "$@" >"$out" 2>"$err" ;;
    stdin:*)
      stream "${variant#stdin:}"
      "$eventcnv" "$@" <"$tmp/${variant#stdin:}.tt" >"$out" 2>"$err" ;;
    *)
      stream "$variant"
      "$eventcnv" "$@" "$tmp/$variant.tt" >"$out" 2>"$err" ;;
  esac
  got=$?
  if [ $update -eq 1 ]; then
    cp "$out" "$golden"
  fi
  if [ "$got" -ge 128 ]; then
    why="$why crashed with signal $((got - 128))"
  elif [ "$got" -ne "$status" ]; then
    why="$why exit status $got, expected $status"
  fi
  if [ ! -f "$golden" ]; then
    why="$why no golden/$name.out"
  elif ! cmp -s "$golden" "$out"; then
    why="$why stdout differs from golden/$name.out"
  fi
  if [ -n "$errsub" ] && ! grep -qF -- "$errsub" "$err"; then
    why="$why stderr lacks '$errsub'"
  fi
  if grep -q "Sanitizer\|runtime error" "$err"; then
    why="$why sanitizer report on stderr"
  fi
  if [ -n "$why" ]; then
    sed 's/^/    stderr: /' "$err" | head -5
  fi
  result "$name" "$why"
}

# oracle VARIANT -- default output equals mkstream.py --expect
oracle() {
  local why=""
  stream "$1"
  python3 "$tests/lib/mkstream.py" --variant "$1" --expect "$tmp/$1.expect" || why=" mkstream.py --expect failed"
  "$eventcnv" "$tmp/$1.tt" >"$tmp/$1.oracle" 2>/dev/null
  if [ -z "$why" ] && ! cmp -s "$tmp/$1.expect" "$tmp/$1.oracle"; then
    why=" output differs from mkstream.py --expect"
  fi
  result "oracle-$1" "$why"
}

unknown="skipped 1 event with codes not in the stream's registry"

# Sound streams: every layout, a newer minor, and clock variations.
check basic            basic    0 "$unknown"
check big              big      0 "$unknown"
check ptr32            ptr32    0 "$unknown"
check big32            big32    0 "$unknown"
check minor            minor    0 ""
check noend            noend    1 "did not end cleanly (no StreamEnd event) and there is no live file"
check hz0sync          hz0sync  0 ""
check hz0              hz0      0 ""
check stdin            stdin:basic 0 "$unknown" -
check stdin-default    stdin:basic 0 "$unknown"
check dropped          basic    0 "the program dropped 3 events of kind Object (EventsDropped)"
check v2               v2       0 "$unknown"
check v2-big32         v2-big32 0 "$unknown"
check v2-noend         v2-noend 1 "it is incomplete (39 events in 10 blocks; it ends at offset"
# A thread's time never goes back (design/stream.txt .stream.order.back):
# thread 2's Object events step back twice, in a block and across two;
# each is shown at the time of the one before it, and said.
check clock-back       v3-back  0 "2 events were stamped before the event before them of the same thread, kind and signal level (the first at offset 2781, thread 2)"
for v in basic big ptr32 big32 minor noend hz0sync hz0 v2 v2-big32 v2-noend v2-many v3 v3-big32 v3-raw v3-back; do
  oracle "$v"
done

# jobs VARIANT -- the text is the same on 1, 2 and 5 formatting threads
# (design/tools.txt .eventcnv.text): v2-many spans several batches
# and relabels an address between them.
jobs() {
  local why="" j
  stream "$1"
  "$eventcnv" --jobs 1 "$tmp/$1.tt" >"$tmp/$1.jobs1" 2>/dev/null
  for j in 2 5; do
    "$eventcnv" --jobs $j "$tmp/$1.tt" >"$tmp/$1.jobs$j" 2>/dev/null
    cmp -s "$tmp/$1.jobs1" "$tmp/$1.jobs$j" || why="$why --jobs $j differs from --jobs 1"
  done
  [ "$(wc -l <"$tmp/$1.jobs1")" -gt 0 ] || why="$why no lines"
  result "jobs-$1" "$why"
}
for v in basic v2 v2-many; do
  jobs "$v"
done
check jobs-bad         basic    2 "--jobs wants a number from 1 to 999: 0" --jobs 0

# Options.
check list             basic    0 "" --list
check header           basic    0 "" --header
check header-big32     big32    0 "" --header
check header-hz0       hz0      0 "" --header
check header-hz0sync   hz0sync  0 "" --header
check header-list      basic    0 "" --header --list
check count            basic    0 "" --count
check count-kind       basic    0 "" --count --kind Object
check count-big32      big32    0 "$unknown" --count
check count-stdin      stdin:basic 0 "$unknown" --count
check summary          basic    0 "the program dropped 3 events of kind Object" --summary
check summary-kind     basic    0 "" --summary --kind Object,User
check summary-big32    big32    0 "$unknown" --summary
check summary-noend    noend    1 "did not end cleanly (no StreamEnd event)" --summary
check summary-header   basic    0 "" --header --summary
check kind             basic    0 "" --kind Pool,Object
check event            basic    0 "" --event Intern,Label,PoolDestroy,Everything
check kind-event       basic    0 "" --kind=User --event=Measure,Tick
check big32-kind       big32    0 "" --kind Object
check help             none     0 "" --help

# Usage errors: exit 2.
check bad-kind         basic    2 "--kind: the stream has no kind named 'Nope'" --kind Pool,Nope
check bad-kind-list    basic    2 "valid kind names are: Telltale Pool Object User" --kind Nope
check bad-event        basic    2 "--event: the stream has no event named 'Nope'" --event Nope
check bad-option       none     2 "unknown option: --bogus" --bogus
check two-stdins       none     2 "standard input (-) can be read once" - -
check missing-arg      none     2 "missing argument to --kind" --kind
check missing-file     none     1 "No such file or directory" /nonexistent/stream.tt

# Bad streams: exit 1, naming the offset, after printing what could be read.
check empty            empty              1 "offset 0: empty file"
check trunc-header     trunc-header       1 "offset 0: header truncated: the file is 40 bytes, the fixed header is 64"
check trunc-registry   trunc-registry     1 "offset 20: header length 2315 runs past end of file (size 2305)"
check bad-magic        bad-magic          1 "offset 0: bad magic: not a telltale stream"
check bad-bom          bad-bom            1 "offset 14: bad byte-order mark"
check version5         version5           1 "offset 8: stream version 5.0.0 is not supported: this reader reads 1.0.x, 2.0.x, 3.0.x and 4.0.x"
check median1          median1            1 "offset 8: stream version 1.1.0 is not supported: this reader reads 1.0.x, 2.0.x, 3.0.x and 4.0.x"
check trunc-block      trunc-block        1 "offset 4575: block cut short: its length is 72, the stream has 30 of its bytes: the 0 whole events before the cut are shown, unchecked"
check trunc-block-header trunc-block-header 1 "offset 4575: block header cut short: 10 bytes left"
check bad-block-magic  bad-block-magic    1 "offset 2593: bad block magic \"TTBX\" (expected \"TTBK\")"
check event-overrun    event-overrun      1 "offset 2997: event code 0x0104 length 4095: event runs past the end"
check short-event      short-event        1 "offset 2729: event code 0x0102 length 4: event length is less than the 12-byte event header"
check bad-string       bad-string         1 "offset 2641: event code 0x0008 length 32: string does not end with a NUL"
check block-kind       block-kind         1 "offset 2789: block kind 9 (registry 0, kind 9) is in no registry of the stream"
check bad-header-only  bad-block-magic    1 "offset 2593: bad block magic" --header
check count-overrun    event-overrun      1 "offset 2997: event code 0x0104 length 4095: event runs past the end" --count
check count-trunc-block trunc-block       1 "offset 4575: block cut short: its length is 72" --count
check summary-bad-string bad-string       1 "offset 2641: event code 0x0008 length 32: string does not end with a NUL" --summary
check count-trunc-registry trunc-registry 1 "offset 20: header length 2315 runs past end of file (size 2305)" --count
check count-empty      empty              1 "offset 0: empty file" --count

# A length field that claims gigabytes costs no memory (the scan's
# window grows with the bytes that come): under a 256 MiB address-space
# limit the fault is named, not "out of memory".
limited() {   # limited CASE VARIANT STDERR-SUBSTRING ARG...
  local name=$1 variant=$2 errsub=$3 got why=""
  shift 3
  stream "$variant"
  (ulimit -v 262144; exec "$eventcnv" "$@" "$tmp/$variant.tt") >/dev/null 2>"$tmp/$name.err"
  got=$?
  [ "$got" -eq 1 ] || why=" exit status $got, expected 1"
  grep -qF -- "$errsub" "$tmp/$name.err" || why="$why stderr lacks '$errsub': $(head -c 300 "$tmp/$name.err")"
  result "$name" "$why"
}
# (Not under ASan or TSan, whose shadow memory needs terabytes of address space.)
if [ -z "${ASAN_OPTIONS:-}" ] && ! nm "$eventcnv" 2>/dev/null | grep -q '__asan_init\|__tsan_init'; then
  limited count-huge-header huge-header "offset 20: header length 4294967040 runs past end of file" --count
  limited count-huge-block  huge-block  "block length 4294967040 is more than any block's" --count
fi

# Checked blocks (2.0, .stream.check): damage anywhere in a block, a
# block missing, twice or of another session, and a cut, are found and
# said, after every sound event before them is shown; exit 1.
check v2-zero-code     v2-zero-code       1 "offset 2713: block damaged (thread 2, kind 2, 128 bytes)"
check v2-flip          v2-flip            1 "offset 2989: block damaged (thread 1, kind 3, 1445 bytes)"
check v2-missing       v2-missing         1 "block 4 of the log is missing: between offsets 2713 and 2841"
check v2-dup           v2-dup             1 "offset 2841: block 3 of the log again (first at offset 2713): its events are not shown twice"
check v2-foreign       v2-foreign         1 "offset 4766: block of another session: id 0xbadf00d, the stream's is 0x5e551011"
check v2-cut           v2-cut             1 "the 4 whole events before the cut are shown, unchecked; the rest of the block is lost"
check v2-reorder       v2-reorder         1 "the log's blocks are not in the order written"
check v2-dup-cut       v2-dup-cut         1 "block 3 of the log again (first at offset 2713): its events are not shown twice"
check v2-header-flip   v2-header-flip     1 "header damaged: its check is"
check v2-flip-resync   v2-flip            1 "skipped 1445 bytes to the next block at offset 4434" --resync
check v2-count-flip    v2-flip            1 "offset 2989: block damaged" --count
check v2-count-missing v2-missing         1 "block 4 of the log is missing" --count
check v2-header-cut    v2-cut             1 "block cut short" --header

# Compact blocks (3.0, design/runtime.txt .compact), written by
# mkstream.py's own encoder: the same events as v2, in every layout and
# every reading; damage, a cut and a sound block whose data do not
# decode are said, after the sound events; a 2.0 stream has none.
check v3               v3       0 "$unknown"
check v3-big32         v3-big32 0 "$unknown"
check v3-raw           v3-raw   0 "$unknown"
check v3-header        v3       0 "" --header
check v3-count         v3       0 "$unknown" --count
check v3-summary-big32 v3-big32 0 "$unknown" --summary
check v3-kind          v3       0 "" --kind Object
check v3-flip          v3-flip  1 "offset 2853: block damaged (thread 1, kind 3, 1258 bytes)"
check v3-flip-resync   v3-flip  1 "skipped 1258 bytes to the next block at offset 4111" --resync
check v3-count-flip    v3-flip  1 "offset 2853: block damaged" --count
check v3-cut           v3-cut   1 "offset 2853: block cut short: its length is 1258, the stream has 1255 of its bytes: the 15 whole events before the cut are shown"
check v3-count-cut     v3-cut   1 "the 15 whole events before the cut are shown" --count
check v3-bad-tag       v3-bad-tag 1 "offset 2624: compact block uses a code it has not defined (thread 2, kind 2)"
check v3-bad-tag-resync v3-bad-tag 1 "offset 2624: compact block uses a code it has not defined" --resync
check v3-count-bad-tag v3-bad-tag 1 "offset 2624: compact block uses a code it has not defined" --count
check v2-compact-flag  v2-compact-flag 1 "offset 2713: block is marked compact in a stream of version 2, which has none"

# Archives (design/tools.txt .zstd): --format telltale, compact and
# with --zstd, reads as the log does, in every way of reading it; a log
# older than 3.0 is copied as it is.
archive() {
  local v=$1 why="" form a args s1 s2
  stream "$v"
  for form in compact zstd again; do
    a=$tmp/$v.$form
    if [ $form = zstd ]; then
      "$eventcnv" --format telltale --zstd=19 -o "$a" "$tmp/$v.tt" 2>/dev/null
    elif [ $form = again ]; then     # the archive archived without --zstd: .zstd.again
      "$eventcnv" --format telltale -o "$a" "$tmp/$v.zstd" 2>/dev/null
    else
      "$eventcnv" --format telltale -o "$a" "$tmp/$v.tt" 2>/dev/null
    fi
    [ -s "$a" ] || why="$why $form: no archive"
    for args in "" --count --summary "--format jsonl" --resync "--resync --count" --spans; do
      # shellcheck disable=SC2086
      "$eventcnv" $args "$tmp/$v.tt" >"$tmp/a1" 2>/dev/null
      s1=$?
      # shellcheck disable=SC2086
      "$eventcnv" $args "$a" >"$tmp/a2" 2>"$tmp/a2.err"
      s2=$?
      [ "$s1" = "$s2" ] || why="$why $form '$args': exit $s2, the log's $s1"
      cmp -s "$tmp/a1" "$tmp/a2" || why="$why $form '$args': stdout differs"
      ! grep -q "Sanitizer\|runtime error" "$tmp/a2.err" || why="$why $form '$args': sanitizer report"
    done
  done
  case $v in
    v3|v3-big32|v3-raw|v3-flip|v3-cut) "$eventcnv" --header "$tmp/$v.zstd" 2>/dev/null | grep -q "^version  *4\.0\..*" ||
           why="$why the archive is not of version 4"
         "$eventcnv" --header "$tmp/$v.zstd" 2>/dev/null | grep -q "^zstd  " || why="$why no zstd block"
         ! "$eventcnv" --header "$tmp/$v.again" 2>/dev/null | grep -q "^zstd  " ||
           why="$why the archive archived without --zstd keeps zstd blocks" ;;
    basic|v2*) cmp -s "$tmp/$v.tt" "$tmp/$v.zstd" || why="$why a log older than 3.0 was changed" ;;
  esac
  result "archive-$v" "$why"
}
for v in basic v2 v2-many v3 v3-big32 v3-raw v3-flip v3-cut v3-bad-tag; do
  archive "$v"
done
check v3-zstd-flag     v3-zstd-flag 1 "block is marked zstd in a stream of version 3, which has none"
check archive-zstd-only-archive basic 2 "--zstd compresses the blocks of --format telltale, and nothing else" --zstd
check archive-needs-o  basic    2 "this --format writes a file: give it with -o FILE: telltale" --format telltale
check archive-level    basic    2 "--zstd wants a level from 1 to 22: 23" --format telltale --zstd=23 -o "$tmp/x"
check archive-kind     basic    2 "--format telltale rewrites one FILE whole" --format telltale --kind Pool -o "$tmp/x"
check archive-two      basic    2 "--format telltale rewrites one FILE, not several" --format telltale --zstd 5 -o "$tmp/x"
check archive-damaged  v3-flip  1 "holds every block of the log, the damaged ones as they are" --format telltale -o "$tmp/x"
# An archive's flags say whether its log's live file was recovered into
# it, which ends it cleanly (.zstd.live); from 4.0.5 (3.0.5 in a log)
# they have a check of their own (.stream.header.check).  The recovered
# flag set in an archive of a log with no StreamEnd and no live file is
# refused, where it made the archive "recovered", exit 0; a 4.0.4
# archive's flag, which no check covers, is said and not taken: whether
# it is whole cannot be known, exit 1.
stream v3-noend
"$eventcnv" --format telltale -o "$tmp/v3-noend.arc" "$tmp/v3-noend.tt" 2>/dev/null
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[19] |= 2; open(sys.argv[2], "wb").write(b)' \
  "$tmp/v3-noend.arc" "$tmp/archive-flag.tt"
check archive-flag     archive-flag 1 "offset 19: header damaged: its flags byte is 0x02, whose check is"
"$eventcnv" --header "$tmp/v3-noend.arc" 2>/dev/null | grep -q "^version  *4\.0\.5\$" &&
  "$eventcnv" "$tmp/v3-noend.arc" 2>&1 >/dev/null | grep -q "there is no live file to recover from" ||
  result archive-flag-version " the archive of a 3.0.0 log is not 4.0.5, or not read as incomplete"
check v4-recovered     v4-recovered 0 "and the log was recovered after the crash"
check v4-recovered-old v4-recovered-old 1 "offset 19: its flags say its log's live file was recovered into it when it was archived, but an archive older than 4.0.5 has no check of its flags"
check v4-flags-flip    v4-flags-flip 1 "offset 19: header damaged: its flags byte is 0x02"
# zstd blocks damaged (tests/lib/zstdblock.py): a bit flipped is found by the
# block's check before any decompression; a block whose check holds but
# whose data are not a frame, or whose frame claims 2^40 bytes, is
# refused before anything is allocated.  --resync goes on after it.
stream v3
"$eventcnv" --format telltale --zstd -o "$tmp/v3.zst" "$tmp/v3.tt" 2>/dev/null
for m in flip garbage huge; do
  python3 "$tests/lib/zstdblock.py" $m 2 "$tmp/v3.zst" "$tmp/zstd-$m.tt" >/dev/null
done
check zstd-flip          zstd-flip    1 "block damaged (thread 1, kind 3, 207 bytes)"
check zstd-flip-resync   zstd-flip    1 "so none of its events are shown; skipped 207 bytes to the next block" --resync
check zstd-garbage-resync zstd-garbage 1 "zstd block (thread 1, kind 3): its data are not a zstd frame, so none of its events are shown" --resync
check zstd-huge-resync   zstd-huge    1 "its zstd frame's size is more than its bytes could expand to" --resync
check zstd-huge-count    zstd-huge    1 "its zstd frame's size is more than its bytes could expand to" --count --resync
check zstd-garbage-count zstd-garbage 1 "its data are not a zstd frame" --count

# Recovery: --resync skips a corrupt block and goes on, still exit 1.
check resync-magic     bad-block-magic    1 "offset 2593: bad block magic \"TTBX\" (expected \"TTBK\"); skipped 80 bytes to the next block at offset 2673" --resync
check resync-overrun   event-overrun      1 "offset 2997: event code 0x0104 length 4095" --resync
check resync-short     short-event        1 "offset 2729: event code 0x0102 length 4" --resync
check count-resync     bad-block-magic    1 "skipped 80 bytes to the next block at offset 2673" --count --resync

# output-is-input: -o naming the log to read is refused (exit 2, said)
# and the log is left as it was, text or export
stream basic
cp "$tmp/basic.tt" "$tmp/basic.copy"
why=""
for format in text jsonl; do
  "$eventcnv" --format "$format" -o "$tmp/basic.tt" "$tmp/basic.tt" >/dev/null 2>"$tmp/oi.err"
  got=$?
  [ $got = 2 ] || why="$why $format: exit $got, expected 2"
  grep -q "which writing would replace" "$tmp/oi.err" || why="$why $format: not said"
done
cmp -s "$tmp/basic.tt" "$tmp/basic.copy" || why="$why the log was changed"
result output-is-input "$why"

finish
