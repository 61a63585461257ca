#!/usr/bin/env bash
# tests/tools/foreign.sh -- logs written on foreign platforms decode exactly
#
# .design: design/tests.txt .test.foreign
#
# Usage: tests/tools/foreign.sh [CONFIG]     e.g. tests/tools/foreign.sh build
#
# Builds the runtime and tests/clients/foreign/client.c (the test registry,
# generated into build/foreign/gen) with Debian's cross compilers into
# build/foreign/<arch>/, and natively into build/foreign/x86_64/:
#   s390x    s390x-linux-gnu-gcc,  run by qemu-s390x   64-bit big-endian
#   powerpc  powerpc-linux-gnu-gcc, run by qemu-ppc    32-bit big-endian
#   i386     i686-linux-gnu-gcc,   run by qemu-i386    32-bit little-endian
# each on the cross sysroot's libraries (qemuSysroot).
# Each client runs in three endings: finish (StreamEnd), abort (the
# fatal-signal handler flushes) and kill (SIGKILL: the last events are
# in the live file, which CONFIG/eventcnv recovers, and says it took some
# from it).  For each platform:
#   ARCH-build          the runtime compiles warning-clean (-Werror)
#   ARCH-link           and links with libc and pthreads alone
#   ARCH-header         eventcnv --header gives its byte order, pointer
#                       and word sizes, and the fallback clock's rate
#                       (1 GHz, within 0.01%) elsewhere than x86-64
#   ARCH-MODE           the exit status is the ending's; CONFIG/eventcnv
#                       on x86-64 decodes the log to exactly the native
#                       log's lines, thread by thread, once times,
#                       thread serials, OS thread ids, ClockSync and ClockRate values
#                       and the block count are taken out; the times are
#                       sane: in order, within a minute of the start,
#                       and the start within five minutes of now
#   ARCH-traceback      the abort's traceback on stderr, decoded on the
#                       platform, has the native one's events
#   ARCH-drops          killed with drops not yet reported (the client's
#                       drops ending): every TestW is in the log with
#                       its live file or counted dropped, the live
#                       file's count read in the platform's word size
#                       and byte order (.sol.dropped)
#   ARCH-big            32-bit platforms: a log of 2.2 GB, past where a
#                       32-bit off_t ends, written whole and read back
#                       with every event (.plinth.large); not under
#                       TELLTALE_COMPACT=1, where it would test the same
# Packages (.ci/install installs them): a platform whose packages cannot
# be had from apt prints "skip ARCH: ..." and is not counted as passed;
# one whose packages are available but not installed fails.
# Prints "ok NAME", "FAIL NAME: why" or "skip NAME: why", then
# "N passed, N failed" (and "N skipped"); exit 77 if all that did not
# pass was skipped.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:-build}
cfg=${cfg%/}
top=$PWD
eventcnv=$top/$cfg/eventcnv
out=$top/build/foreign
[ -x "$eventcnv" ] || { fail setup "$eventcnv is not built"; finish; }
# The reference log and eventcnv are x86-64's.
if [ "$(uname -m)" != x86_64 ]; then
  skip all "the machine is $(uname -m), not x86_64"
  finish
fi
ulimit -c 0

cflags=(-std=c11 -g -O2 -fno-strict-aliasing -Wall -Wextra -Werror -Wshadow
        -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-function)

# The generated registries are platform-independent C.
mkdir -p "$out/gen"
python3 gen --out "$out/gen/core" eventdef.h &&
  python3 gen --core eventdef.h --out "$out/gen/test" tests/lib/eventdef.h ||
  { fail setup "gen failed"; finish; }

# build ARCH CC -- build $out/ARCH/client; 1 if it cannot be built
build() {
  local arch=$1 cc=$2 dir=$out/$1 o=$out/$1/obj
  local inputs=(src/event src/plinth tests/clients/foreign tests/tools/foreign.sh tests/lib/eventdef.h eventdef.h gen)
  if [ -x "$dir/client" ] && [ -z "$(find "${inputs[@]}" -newer "$dir/client" | head -1)" ]; then
    ok "$arch-build"; ok "$arch-link"
    return 0
  fi
  mkdir -p "$o"
  rm -f "$dir/client"
  # The runtime: every source of the runtime library (ninja/targets.ninja).
  local src objs=("$o/client.o" "$o/eventgen.o" "$o/core-eventgen.o")
  runtime() {
    for src in src/event/event.c src/event/eventbuf.c src/event/eventout.c \
               src/event/eventlevel.c src/event/eventfinish.c \
               src/event/eventhead.c src/event/eventlive.c src/event/eventwriter.c \
               src/event/eventdump.c src/event/eventctl.c src/event/eventfilter.c \
               src/event/eventsource.c \
               src/decode/eventdecode.c src/decode/eventformat.c src/decode/eventdouble.c \
               src/decode/eventclock.c \
               src/decode/eventcheck.c src/decode/eventpack.c src/event/eventcompact.c \
               src/plinth/plinth.c src/plinth/plinththread.c src/plinth/plinthio.c \
               src/plinth/plinthopen.c src/plinth/plinthsig.c src/plinth/plinthctl.c; do
      objs+=("$o/$(basename "$src" .c).o")
      "$cc" "${cflags[@]}" -Ibuild/include -Isrc/event -Isrc/decode -Isrc/plinth -I"$out/gen/core" -D_GNU_SOURCE \
        -c "$src" -o "${objs[-1]}" || return 1
    done
  }
  if ! { runtime &&
         "$cc" "${cflags[@]}" -Ibuild/include -Isrc/event -Isrc/decode -Isrc/plinth -I"$out/gen/core" \
           -c "$out/gen/core/eventgen.c" -o "$o/core-eventgen.o" &&
         "$cc" "${cflags[@]}" -Ibuild/include -Isrc/event -Isrc/decode -Isrc/plinth -I"$out/gen/test" \
           -c "$out/gen/test/eventgen.c" -o "$o/eventgen.o" &&
         "$cc" "${cflags[@]}" -Ibuild/include -Isrc/event -Isrc/decode -Isrc/plinth -I"$out/gen/test" \
           -c tests/clients/foreign/client.c -o "$o/client.o"; } >"$dir/build.err" 2>&1; then
    fail "$arch-build" "$(head -5 "$dir/build.err")"
    return 1
  fi
  ok "$arch-build"
  if "$cc" -o "$dir/client" "${objs[@]}" -lpthread >"$dir/link.err" 2>&1; then
    ok "$arch-link"
  elif grep -q "undefined reference to \`__atomic_" "$dir/link.err" &&
       "$cc" -o "$dir/client" "${objs[@]}" -lpthread -latomic >/dev/null 2>&1; then
    # Go on with libatomic, so that the log is still checked.
    fail "$arch-link" "the runtime needs libatomic here: $(grep -o "undefined reference to \`__atomic_[a-z_0-9]*'" "$dir/link.err" | sort -u | tr '\n' ' ')"
  else
    fail "$arch-link" "$(head -5 "$dir/link.err")"
    return 1
  fi
}

# normalize -- eventcnv's lines as "THREAD-NAME<TAB>line", times, thread
# serials, OS ids and names, ClockSync, ClockRate and block counts out, each
# thread's lines in their order, threads sorted by name
normalize() {
  awk '
    FNR == NR {
      if ($5 == "ThreadName" && match($0, /name="[^"]*"/))
        name[$3] = substr($0, RSTART + 6, RLENGTH - 7)
      next
    }
    $5 == "ClockSync" || $5 == "ClockRate" { next }
    {
      t = $3
      line = $0
      sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +/, "", line)
      if ($4 == "Telltale") {
        sub(/thread=[0-9]+/, "thread=" name[t], line)
        sub(/osid=[0-9]+/, "osid=*", line)
        # the first name of a thread is the OS one (under qemu, qemu-ARCH)
        if ($5 == "ThreadName" && !named[t]++)
          sub(/name=".*"$/, "name=*", line)
        sub(/blocks=[0-9]+/, "blocks=*", line)
      }
      print name[t] "\t" line
    }' "$1" "$1" | sort -s -t "$(printf '\t')" -k1,1
}

# sane FILE ARCH -- the times of a decoded log are sane; prints why not
sane() {
  local start now
  awk '
    { t = $1 + 0
      if (t < prev) { print "time goes back at line " NR ": " $1 " after " prev; exit 1 }
      if (t < 0 || t > 60) { print "elapsed time " $1 " at line " NR; exit 1 }
      prev = t }' "$1" || return 1
  start=$(awk '$1 == "start" && $2 != "clock" { print $2 }' "$2")
  now=$(date -u +%s)
  start=$(date -u -d "$start" +%s 2>/dev/null) || { echo "no start time in the header"; return 1; }
  [ $((now - start)) -ge 0 ] && [ $((now - start)) -le 300 ] ||
    { echo "start $start is not within five minutes of now ($now)"; return 1; }
}

# client ARCH MODE SECONDS [VAR=VALUE]... -- RUNNER... -- run the client
# in MODE in a fresh $out/ARCH/run-MODE, set as dir, with the variables
# and TELLTALE_FILE=f.log, killed after SECONDS; its status in r
client() {
  local arch=$1 mode=$2 seconds=$3 vars=()
  shift 3
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  dir=$out/$arch/run-$mode
  rm -rf "$dir"
  mkdir -p "$dir"
  { (cd "$dir" && exec env "${vars[@]}" TELLTALE_FILE=f.log \
       timeout "$seconds" "$@" "$out/$arch/client" "$mode" >out 2>err); } 2>/dev/null
  r=$?
}

# run ARCH MODE STATUS RUNNER... -- run the client, decode, compare
run() {
  local arch=$1 mode=$2 status=$3 dir r
  shift 3
  client "$arch" "$mode" 30 TELLTALE_BUFFER=4096 -- "$@"
  if [ "$r" = 124 ]; then
    fail "$arch-$mode" "still running after 30 s: killed"
    return 1
  elif [ "$r" != "$status" ]; then
    fail "$arch-$mode" "exit $r, not $status: $(head -3 "$dir/err")"
    return 1
  fi
  if [ "$mode" = abort ]; then
    traceback "$arch"
  fi
  (cd "$dir" && "$eventcnv" --header f.log >header 2>header.err)
  (cd "$dir" && "$eventcnv" f.log >log 2>log.err)
  r=$?
  case $mode in
    abort|kill)
      if ! grep -q "recovered after the crash" "$dir/log.err"; then
        fail "$arch-$mode" "eventcnv exit $r, no recovery: $(head -3 "$dir/log.err")"
        return 1
      fi ;;
    *)
      if [ $r != 0 ] || [ -s "$dir/log.err" ]; then
        fail "$arch-$mode" "eventcnv exit $r: $(head -3 "$dir/log.err")"
        return 1
      fi ;;
  esac
  if [ "$mode" = kill ] && ! grep -q "[1-9][0-9]* of them from f.log.live" "$dir/log.err"; then
    fail "$arch-$mode" "no events recovered from the live file: $(head -3 "$dir/log.err")"
    return 1
  fi
  normalize "$dir/log" >"$dir/norm"
  if [ "$arch" != x86_64 ]; then
    if ! cmp -s "$dir/norm" "$out/x86_64/run-$mode/norm"; then
      fail "$arch-$mode" "decodes differently from the native log ($(wc -l <"$dir/norm") lines, native $(wc -l <"$out/x86_64/run-$mode/norm")): $(diff "$out/x86_64/run-$mode/norm" "$dir/norm" | head -6 | tr '\n' '|')"
      return 1
    fi
  elif [ "$(grep -c TestThread "$dir/norm")" != 6000 ]; then
    fail "$arch-$mode" "the native log has $(grep -c TestThread "$dir/norm") TestThread events, not 6000"
    return 1
  fi
  local why
  if ! why=$(sane "$dir/log" "$dir/header"); then
    fail "$arch-$mode" "times: $why"
    return 1
  fi
  ok "$arch-$mode"
}

# traceback ARCH -- the traceback of the abort, decoded by the runtime
# on the platform (its shared decoder, .sol.traceback), says so and has
# the native one's events, times, OS ids and names, ClockSync and ClockRate out
traceback() {
  local arch=$1 dir=$out/$1/run-abort
  awk '/^ +[0-9]+\.[0-9]+ / && $5 != "ClockSync" && $5 != "ClockRate" {
         $1 = ""; $2 = ""
         sub(/osid=[0-9]+/, "osid=*")
         if ($5 == "ThreadName" && !named[$3]++)
           sub(/name=".*"$/, "name=*")
         print }' "$dir/err" >"$dir/traceback"
  if ! grep -q "^telltale: fatal signal SIGABRT in thread T1 (main)" "$dir/err"; then
    fail "$arch-traceback" "no \"fatal signal SIGABRT\" line: $(head -3 "$dir/err")"
  elif [ "$(wc -l <"$dir/traceback")" -lt 10 ]; then
    fail "$arch-traceback" "$(wc -l <"$dir/traceback") events: $(grep -v '^ ' "$dir/err" | tail -3)"
  elif [ "$arch" != x86_64 ] && ! cmp -s "$dir/traceback" "$out/x86_64/run-abort/traceback"; then
    fail "$arch-traceback" "differs from the native one: $(diff "$out/x86_64/run-abort/traceback" "$dir/traceback" | head -4 | tr '\n' '|')"
  else
    ok "$arch-traceback"
  fi
}

# header ARCH ORDER POINTER WORD [HZ] -- eventcnv --header says so; its
# clock rate is the header's, or one from ClockRate (.sol.clock), so
# within 0.01% of HZ
header() {
  local arch=$1 h=$out/$1/run-finish/header want got
  [ -s "$h" ] || { fail "$arch-header" "eventcnv --header printed nothing"; return; }
  want="byte order:$2 pointer size:$3 bytes word size:$4 bytes"
  got=$(awk '/^byte order|^pointer size|^word size/ {
               k = $1 " " $2; $1 = ""; $2 = ""; sub(/^ +/, ""); printf "%s%s:%s", sep, k, $0; sep = " " }' "$h")
  if [ "$got" != "$want" ]; then
    fail "$arch-header" "\"$got\", not \"$want\""
  elif [ -n "$5" ] && ! awk -v want="$5" '$1 == "clock" && $3 == "Hz" {
                           d = $2 - want; found = d <= want / 10000 && -d <= want / 10000 }
                         END { exit !found }' "$h"; then
    fail "$arch-header" "clock $(awk '$1 == "clock" { print $2, $3 }' "$h"), not $5 Hz within 0.01%"
  else
    ok "$arch-header"
  fi
}

# drops ARCH RUNNER... -- the drops ending: what eventcnv finds and
# what it says was dropped add up to what the client emitted
drops() {
  local arch=$1 dir r found dropped
  shift
  client "$arch" drops 60 TELLTALE_BUFFER=4096 -- "$@"
  if [ "$r" != 137 ]; then
    fail "$arch-drops" "exit $r, not 137: $(head -3 "$dir/err")"
    return
  fi
  (cd "$dir" && "$eventcnv" --summary f.log >summary 2>summary.err)
  found=$(cd "$dir" && "$eventcnv" f.log 2>/dev/null | grep -c " TestW ")
  dropped=$(awk '$1 == "dropped" { print $2 }' "$dir/summary")
  if ! grep -q "counted only in f.log.live" "$dir/summary.err"; then
    fail "$arch-drops" "eventcnv does not count drops from the live file: $(head -3 "$dir/summary.err")"
  elif [ $((found + ${dropped:-0})) != 100000 ]; then
    fail "$arch-drops" "$found TestW found and ${dropped:-no} dropped: not the 100000 emitted"
  else
    ok "$arch-drops"
  fi
}

# big ARCH RUNNER... -- a 32-bit platform's log past 2 GiB, where a
# 32-bit off_t ends (.plinth.large): written whole, every TestS in it
big() {
  local arch=$1 dir r size count
  shift
  # (600 s: 2.2 GB through qemu takes 30 s on a quiet machine, and far
  # more beside other work; the bound is for a hang)
  client "$arch" big 600 -- "$@"
  size=$(stat -c %s "$dir/f.log" 2>/dev/null || echo 0)
  count=$(cd "$dir" && "$eventcnv" --count f.log 2>count.err | awk '$2 == "TestS" { print $1 }')
  if [ "$r" != 0 ]; then
    fail "$arch-big" "exit $r, not 0: $(head -3 "$dir/err")"
  elif [ -s "$dir/err" ]; then
    fail "$arch-big" "the client said: $(head -3 "$dir/err")"
  elif [ "$size" -le 2147483648 ]; then
    fail "$arch-big" "the log is $size bytes, not past 2 GiB"
  elif [ "${count:-0}" != 2200000 ] || [ -s "$dir/count.err" ]; then
    fail "$arch-big" "${count:-no} TestS of 2200000 in $size bytes: $(head -3 "$dir/count.err")"
  else
    ok "$arch-big"
  fi
  rm -f "$dir/f.log"
}

# platform ARCH CC RUNNER... -- build, run every ending, check the header
platform() {
  local arch=$1 cc=$2
  shift 2
  build "$arch" "$cc" || return
  run "$arch" finish 0 "$@"
  header "$arch" "$order" "$ptr" "$word" "$clock"
  run "$arch" abort 134 "$@"
  run "$arch" kill 137 "$@"
  drops "$arch" "$@"
  # (the 2.2 GB log once, raw: compact blocks change nothing of offsets)
  [ "$ptr" = 8 ] || [ "${TELLTALE_COMPACT:-0}" = 1 ] || big "$arch" "$@"
}

# The native reference.
order=little-endian ptr=8 word=8 clock=""
platform x86_64 gcc env

# have ARCH PACKAGE COMMAND... -- the platform's commands are there; if
# not, install what is missing, and skip only when apt cannot have it
have() {
  local arch=$1 pkg=$2 c missing=()
  shift 2
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  bash .ci/install "$pkg" >/dev/null 2>&1
  for c in "${missing[@]}"; do
    command -v "$c" >/dev/null 2>&1 && continue
    if apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      fail "$arch" "$c is missing and package $pkg did not install (run .ci/install)"
    else
      skip "$arch" "$c is missing and package $pkg cannot be had from apt here"
    fi
    return 1
  done
}

# qemuSysroot TRIPLE -- qemu's options to run the guest on the cross
# sysroot's libraries.  -L alone is not enough: a path the guest opens
# is looked for in the sysroot first, then on the host, so the guest's
# ld.so reads the host's /etc/ld.so.cache and takes the host's libc of
# the same architecture where one is installed (libc6-i386's /lib32),
# which does not go with the sysroot's ld.so (pthread_create hangs).
qemuSysroot() {
  echo "-L /usr/$1 -E LD_LIBRARY_PATH=/usr/$1/lib"
}

order=big-endian ptr=8 word=8 clock=1000000000
have s390x gcc-s390x-linux-gnu s390x-linux-gnu-gcc &&
  have s390x qemu-user qemu-s390x &&
  platform s390x s390x-linux-gnu-gcc qemu-s390x $(qemuSysroot s390x-linux-gnu)

order=big-endian ptr=4 word=4 clock=1000000000
have powerpc gcc-powerpc-linux-gnu powerpc-linux-gnu-gcc &&
  have powerpc qemu-user qemu-ppc &&
  platform powerpc powerpc-linux-gnu-gcc qemu-ppc $(qemuSysroot powerpc-linux-gnu)

order=little-endian ptr=4 word=4 clock=1000000000
have i386 gcc-i686-linux-gnu i686-linux-gnu-gcc &&
  have i386 qemu-user qemu-i386 &&
  platform i386 i686-linux-gnu-gcc qemu-i386 $(qemuSysroot i686-linux-gnu)
finish
