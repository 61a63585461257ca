#!/usr/bin/env bash
# tests/tools/replay.sh -- the allocation recorder and replay
#
# .design: design/recorder.txt .malloc design/heap.txt .replay
#
# Usage: tests/tools/replay.sh CONFIG     e.g. tests/tools/replay.sh build/san
# CONFIG's replay, replay-pool-null.so and tests/malloc_events must be
# built, and so must examples/pool.  The recorder libtelltale-malloc.so
# cannot be combined with a sanitizer, so under build/san and build/tsan
# the logs are recorded with build/'s recorder and test program, and
# replayed by CONFIG's replay.
#
# Covers:
#   threads-counts     tests/malloc_threads (4 threads, blocks freed by
#                      other threads) recorded; the replayed operation
#                      counts, less those of a run with no work (the C
#                      library's own), equal the program's own counts
#   threads-clean      and 0 unknown frees, double frees, duplicates
#   threads-serial     the same with --serial
#   threads-strict     replay --strict of the same log passes: glibc's
#                      free(NULL) at each thread's exit is counted, not
#                      an error (.replay.anomaly)
#   archive            the same from work.log's archive (eventcnv --format
#                      telltale --zstd)
#   handoff            tests/malloc_handoff (blocks freed by another thread
#                      tens of ns after they were allocated) recorded 20
#                      times: no anomaly in any replay, though the clock
#                      can put a free before its allocation (.replay.skew);
#                      says how many such inversions the logs held
#   recorder-clock     the handoff log's clock ticks at 1 to 50 MHz: the
#                      counter shifted (.malloc.clock), finer than the
#                      skew window, coarser than the counter
#   skew-order         a log with clocks out of causal order by hand
#                      (malloc_events skew): a cross-thread free stamped
#                      50 ns before its allocation and an address's reuse
#                      stamped 50 ns before its free, and a thread's free
#                      stamped before the other thread gave it the block
#                      (200 ns), followed by its own allocation of the
#                      address, are no anomaly; a free 900 us before its
#                      address is allocated is 1 unknown free
#   threads-jemalloc   the same counts replayed against jemalloc (build/
#                      and build/clang, when libjemalloc2 is installed)
#   record-command     tools/replay/record OUT -- CMD writes OUT, and a
#                      program CMD runs writes OUT.PID
#   file-default       without TELLTALE_FILE: telltale-malloc.PID.log
#   stacks-fp          TELLTALE_STACKS=16 on a program built with frame
#                      pointers (main -> outer -> middle -> leaf -> malloc):
#                      the stack its allocations name, symbolised by
#                      addr2line through the log's MapExec events, is
#                      leaf middle outer main; replay counts are those of
#                      a log without stacks, 0 anomalies
#   stacks-dwarf       TELLTALE_STACKS=16:dwarf on the same program built
#                      without frame pointers: the same four frames
#                      (libunwind8; skipped where it is not installed)
#   stacks-fork        TELLTALE_STACKS=8 on a program that allocates, then
#                      forks a child that allocates from the same place
#                      and calls _exit: each log defines every stack id
#                      it uses
#   file-refused       TELLTALE_FILE a symbolic link, or a file that is not a
#                      telltale log: left as it was, said once, exit 0
#                      (.plinth.stream.file)
#   exit-exec          a forked child that mallocs and frees 1000 blocks
#                      and calls _exit: LOG.PID holds the 1000 pairs, and
#                      ends clean; a program that does the same and execs
#                      another: LOG.exec1 keeps its 1000 pairs and ends
#                      at the exec, whole (eventcnv exit 0; .sol.exec),
#                      LOG is the new image's
#   exit-threads       _exit while three threads allocate: every malloc
#                      they counted (in a shared file) is in the log,
#                      from the live file, which _exit keeps as exit does
#   exec-threads       exec while three threads allocate: every malloc
#                      they counted is in LOG.exec1, those after the exec
#                      call from LOG.exec1.live, and eventcnv says it
#                      ended at the exec, exit 0 and nothing on stderr
#   exec-failed        a program that execs a program that is not there
#                      between 100,000 pairs and 100,000 more: LOG holds
#                      them all and Exec, and ends clean (the writer
#                      thread stopped for the exec and started again)
#   exec-end           replay of LOG.exec1 (the exec'ing image's log, no
#                      StreamEnd) says the log ends at an exec, not that
#                      the program died, exit 0
#   cxx-direct         the C++ program recorded directly: its log is whole,
#                      each block once (the reader refuses a repeated
#                      block), every allocation in it, ended clean
#   bash-exec          record OUT -- bash -c 'CXX; CXX' (bash execs its last
#                      command): OUT.exec1 is bash's and ends at its exec,
#                      OUT the last CXX's, clean
#   cxx-child          record OUT -- bash -c 'CXX; true', where CXX is a C++
#                      program (libstdc++ allocates before the recorder's
#                      constructor): OUT keeps bash's log, OUT.PID holds
#                      the C++ program's, both end clean
#   signal-handler     a handler's free_sized(NULL), up to 5000 times at
#                      any moment of a worker that allocates: every one is in the log,
#                      and every malloc of the worker, without stacks and
#                      with TELLTALE_STACKS=16, and the log reads clean
#                      (.malloc.signal)
#   clean              every allocation event replayed: counts match,
#                      and --strict passes
#   unknown, double, duplicate, null
#                      each anomaly is counted (1) and reported with its
#                      offset, exit 0; with --strict, exit 1, but for
#                      null (free(NULL) is legal): counted, exit 0
#   truncated          a log cut short: the events before the cut are
#                      replayed and reported, the damage named by its
#                      offset on stderr, exit 1
#   corrupt            a block's magic overwritten: the same
#   zstd-killed        a program killed after its log got zstd blocks
#                      (.malloc.zstd): each of its 150,000 mallocs read
#                      exactly once, with the live file's; the same with
#                      TELLTALE_ZSTD=0 (no zstd block), and =x said
#   killed             a recorded program killed by SIGKILL (with its
#                      live file, the default): replay says the log did not end
#                      cleanly, recovers LOG.live as eventcnv does, and
#                      replays as many events as eventcnv counts, exit 0
#   not-a-log          a file that is not a stream: an error, exit 1
#   missing            no such file: an error, exit 1
#   bad-alloc-name     an unknown allocator name: an error, exit 1
#   usage              an unknown option, an option without its value, no
#                      log: exit 2, as replay --help says
#   pool-events        pool events replayed against the example pool:
#                      create, alloc, free and destroy counts match
#   pool-example       the log of examples/pool replays with the counts
#                      eventcnv shows, and 0 anomalies
#   pool-user          --pool replay-pool-null.so: the same counts
#   pool-bad           --pool with a missing .so: an error, exit 1
#   svg                --svg writes a chart with a line per allocator
#   svg-escape         a log named R&D<1>'s.log: the chart is valid XML
#   svg-early          an --svg path that cannot be written: said at once,
#                      before any replay, exit 1
#   not-an-allocator   -a libz.so.1: refused, not measured as glibc
#   wide-name          an allocator named by a long path: the whole name
#                      heads its column
#   many-threads       a log of 1,000 threads, each one malloc and no
#                      ThreadExit (malloc_events threads): replay ends
#                      (within 120 s however busy the machine; it stalled
#                      on one polling replay thread each), 1,000 mallocs,
#                      1,000 threads
#   many-threads-live  2,000 threads each a malloc and, once all have, a
#                      free (all live at once, more than replay's 1,024
#                      threads): ends, every call made, no anomaly; the
#                      same counts as --serial (.replay.threads.many)
#   peak-short         a short log (40 blocks of 1 MiB live at once): the
#                      peak RSS growth is at least the peak live bytes
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh

cfg=${1:?usage: tests/tools/replay.sh CONFIG}
cfg=${cfg%/}
top=$PWD
rec=$cfg
case $cfg in
  */san | */tsan) rec=build ;;
esac
replay="$top/$cfg/replay"
events="$top/$cfg/tests/malloc_events"
preload="$top/$rec/libtelltale-malloc.so"
threads="$top/$rec/tests/malloc_threads"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# row FILE LABEL [COLUMN] -- a figure from a report (column 1 = first allocator)
row() {
  local col=${3:-1}
  grep "^$2  " "$1" | cut -c27- | awk -v c="$col" '{print $c}'
}

# counts FILE -- "name count" for every operation row of a report
counts() {
  for op in malloc calloc realloc free memalign aligned_alloc posix_memalign; do
    echo "$op $(row "$1" "$op")"
  done
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# --- the recorder, across threads -----------------------------------
TELLTALE_FILE=work.log LD_PRELOAD="$preload" "$threads" 20000 >program.txt
TELLTALE_FILE=base.log LD_PRELOAD="$preload" "$threads" 0 >/dev/null
"$replay" -q work.log >work.txt 2>work.err
r1=$?
"$replay" -q base.log >base.txt 2>/dev/null
expected=$(sort program.txt)
delta() {   # the counts of report $1 less those of base.txt
  for op in malloc calloc realloc free memalign aligned_alloc posix_memalign; do
    a=$(row "$1" "$op"); b=$(row base.txt "$op")
    echo "$op $(( ${a:-0} - ${b:-0} ))"
  done | sort
}
if [ $r1 -ne 0 ]; then
  fail threads-counts "replay exit $r1: $(head -3 work.err)"
elif [ "$(delta work.txt)" = "$expected" ]; then
  ok threads-counts
else
  fail threads-counts "replayed $(delta work.txt | tr '\n' ' ') program $(echo "$expected" | tr '\n' ' ')"
fi
anom() { echo "$(row "$1" 'unknown frees') $(row "$1" 'double frees') $(row "$1" 'duplicate live')"; }
if [ "$(anom work.txt)" = "0 0 0" ] && grep -q "threads" work.txt; then
  ok threads-clean
else
  fail threads-clean "unknown/double/duplicate: $(anom work.txt)"
fi
"$replay" -q --serial work.log >serial.txt 2>&1
if [ "$(delta serial.txt)" = "$expected" ] && [ "$(anom serial.txt)" = "0 0 0" ]; then
  ok threads-serial
else
  fail threads-serial "$(delta serial.txt | tr '\n' ' ') / $(anom serial.txt)"
fi
"$replay" -q --strict work.log >strict.txt 2>strict.err
r1=$?
if [ $r1 -eq 0 ] && [ "$(row strict.txt 'free(NULL)')" -gt 0 ] 2>/dev/null && [ "$(anom strict.txt)" = "0 0 0" ]; then
  ok threads-strict
else
  fail threads-strict "exit $r1, free(NULL) $(row strict.txt 'free(NULL)'): $(head -2 strict.err)"
fi
# archive: work.log made an archive with zstd blocks (eventcnv --format
# telltale --zstd, design/tools.txt .zstd) replays the same
if "$top/$cfg/eventcnv" --format telltale --zstd -o work.zst work.log 2>/dev/null &&
   "$top/$cfg/eventcnv" --header work.zst 2>/dev/null | grep -q "^zstd  "; then
  "$replay" -q work.zst >zst.txt 2>&1
  if [ "$(delta zst.txt)" = "$expected" ] && [ "$(anom zst.txt)" = "0 0 0" ]; then
    ok archive
  else
    fail archive "$(delta zst.txt | tr '\n' ' ') / $(anom zst.txt)"
  fi
else
  fail archive "no archive with zstd blocks of work.log"
fi
handoff="$top/$rec/tests/malloc_handoff"
anomalies=""
inversions=0
for i in $(seq 1 20); do
  TELLTALE_FILE=handoff.log LD_PRELOAD="$preload" "$handoff" 50000
  "$replay" -q handoff.log >handoff.txt 2>&1
  a=$(anom handoff.txt)
  # An anomaly is named with its offset and address (replay without -q),
  # so that a failure says how far apart the two events' clocks were.
  [ "$a" = "0 0 0" ] ||
    anomalies="$anomalies run $i: $a ($("$replay" handoff.log 2>&1 | grep -m2 ' of 0x' | tr '\n' ' '));"
  # frees of a block not live, and allocations of an address live, in
  # the log's own order by clock: what replay had to put right
  n=$("$top/$cfg/eventcnv" handoff.log 2>/dev/null | awk '
    $5 == "Malloc" { split($NF, a, "="); if (live[a[2]]) n++; live[a[2]] = 1 }
    $5 == "Free" { split($NF, a, "="); if (!live[a[2]]) n++; delete live[a[2]] }
    END { print n + 0 }')
  inversions=$((inversions + n))
done
if [ -z "$anomalies" ] && [ "$(row handoff.txt malloc)" -ge 100000 ]; then
  echo "  (handoff: $inversions events out of causal order by clock in the 20 logs, put right)"
  ok handoff
else
  fail handoff "unknown/double/duplicate:$anomalies"
fi
hz=$("$top/$cfg/eventcnv" --header handoff.log 2>/dev/null | sed -n 's/^clock  *\([0-9]*\) Hz.*/\1/p')
if [ -n "$hz" ] && [ "$hz" -ge 1000000 ] && [ "$hz" -le 50000000 ]; then
  ok recorder-clock
else
  fail recorder-clock "clock ${hz:-unknown} Hz, not 1 to 50 MHz: $("$top/$cfg/eventcnv" --header handoff.log 2>&1 | grep '^clock' | head -1)"
fi
TELLTALE_FILE=skew.log "$events" skew >skew.expected
"$replay" skew.log >skew.txt 2>skew.err
r=$?
if [ $r -eq 0 ] && [ "$(anom skew.txt)" = "1 0 0" ] && [ "$(row skew.txt malloc) $(row skew.txt free)" = "7 8" ] &&
   [ "$(grep -c 'unknown free of 0x10300' skew.err)" = 1 ] && [ "$(grep -c 'replay: skew.log: offset' skew.err)" = 1 ]; then
  ok skew-order
else
  fail skew-order "exit $r, unknown/double/duplicate $(anom skew.txt): $(head -3 skew.err)"
fi
if [ "$rec" = "$cfg" ] && [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ]; then
  "$replay" -q -a glibc,jemalloc work.log >je.txt 2>&1
  if [ "$(counts je.txt | awk '{print $1, $2}')" = "$(counts work.txt)" ] &&
     [ "$(for op in malloc free realloc; do row je.txt $op 2; done)" = "$(for op in malloc free realloc; do row je.txt $op 1; done)" ] &&
     [ "$(row je.txt 'unknown frees' 2)" = 0 ]; then
    ok threads-jemalloc
  else
    fail threads-jemalloc "$(head -20 je.txt)"
  fi
fi

# --- the record command and the log's name ----------------------------
if [ "$rec" = "$cfg" ]; then
  cat >ends.c <<'EOF'
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void *volatile keep;     /* so that the compiler keeps every pair */
static void pairs(void) { for (int i = 0; i < 1000; ++i) { keep = malloc(16 + i); free(keep); } }
int main(int argc, char **argv)
{
  int status;
  if (argc > 1 && argv[1][0] == 'f') {  /* a failed exec between pairs: 400 blocks of the writer's */
    for (int i = 0; i < 100; ++i)
      pairs();
    execlp("telltale-no-such-program", "telltale-no-such-program", (char *)NULL);
    for (int i = 0; i < 100; ++i)
      pairs();
    return 0;
  }
  if (argc > 1) {               /* exec: the pairs, then another image */
    pairs();
    execlp("true", "true", (char *)NULL);
    return 1;
  }
  pairs();                      /* the same stacks as the child's, defined here first */
  if (fork() == 0) {
    pairs();
    _exit(0);
  }
  wait(&status);
  return 0;
}
EOF
  if cc -O1 ends.c -o ends 2>ends.err; then
    pairsIn() { "$top/$cfg/eventcnv" --count "$1" 2>/dev/null | awk '$2 == "Malloc" || $2 == "Free" {n[$2] = $1} END {print n["Malloc"] + 0, n["Free"] + 0}'; }
    TELLTALE_FILE=ends.log LD_PRELOAD="$preload" ./ends
    child=$(ls ends.log.* 2>/dev/null | head -1)
    got1=$( [ -n "$child" ] && pairsIn "$child")
    clean1=$( [ -n "$child" ] && "$top/$cfg/eventcnv" --header "$child" 2>/dev/null | grep -c '^end  *clean')
    TELLTALE_FILE=exec.log LD_PRELOAD="$preload" ./ends exec
    got2=$(pairsIn exec.log.exec1)
    prog2=$("$top/$cfg/eventcnv" --header exec.log 2>/dev/null | sed -n 's/^program  *//p')
    end2=$("$top/$cfg/eventcnv" --header exec.log.exec1 2>/dev/null | sed -n 's/^end  *//p')
    if [ "${got1%% *}" -ge 1000 ] && [ "${got1##* }" -ge 1000 ] && [ "$clean1" = 1 ] &&
       [ "${got2%% *}" -ge 1000 ] && [ "${got2##* }" -ge 1000 ] && [ "$prog2" = true ] &&
       [ "${end2#at an exec: the program sent every event}" != "$end2" ] &&
       "$top/$cfg/eventcnv" --count exec.log.exec1 >/dev/null 2>&1; then
      ok exit-exec
    else
      fail exit-exec "_exit child ${child:-none}: '$got1' pairs, clean $clean1; exec: '$got2' pairs kept, ending '$end2', exec.log is ${prog2:-nothing}'s"
    fi
    TELLTALE_FILE=fail.log LD_PRELOAD="$preload" ./ends fail
    got3=$(pairsIn fail.log)
    if [ "$got3" = "200000 200000" ] && [ ! -e fail.log.exec1 ] &&
       "$top/$cfg/eventcnv" --header fail.log 2>/dev/null | grep -q '^end  *clean' &&
       [ "$("$top/$cfg/eventcnv" --count fail.log | awk '$2 == "Exec" {print $1}')" = 1 ]; then
      ok exec-failed
    else
      fail exec-failed "'$got3' pairs of 200000 around a failed exec (fail.log.exec1: $(ls fail.log.exec1 2>&1))"
    fi
    # _exit while three threads allocate: every pair counted is in the log
    cat >busy.c <<'EOF2'
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
static atomic_long *count;      /* in a file, so that it outlives the process */
static void *work(void *arg) { for (;;) { void *volatile p = malloc(33333); free(p); atomic_fetch_add(count, 1); } return arg; }
int main(int argc, char **argv)
{
  pthread_t t;
  int fd = open("busy.count", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof *count) != 0)
    return 1;
  count = mmap(NULL, sizeof *count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  for (int i = 0; i < 3; ++i)
    pthread_create(&t, NULL, work, NULL);
  usleep(30000);
  if (argc > 1)                 /* exec: the threads end with the image */
    execlp("true", "true", (char *)NULL);
  _exit(argv[0] == NULL);
}
EOF2
    if cc -O1 -pthread busy.c -o busy 2>busy.err; then
      TELLTALE_FILE=busy.log LD_PRELOAD="$preload" ./busy
      made=$(od -An -t d8 busy.count | tr -d ' ')
      got4=$("$top/$cfg/eventcnv" --format jsonl busy.log 2>busy.cnv | grep -c '"size":33333')
      if [ -n "$made" ] && [ "$got4" -ge "$made" ] && [ "$got4" -le $((made + 3)) ]; then
        ok exit-threads
      else
        fail exit-threads "$got4 mallocs in the log, $made made ($(head -c 300 busy.cnv))"
      fi
      TELLTALE_FILE=bexec.log LD_PRELOAD="$preload" ./busy exec
      made=$(od -An -t d8 busy.count | tr -d ' ')
      "$top/$cfg/eventcnv" --format jsonl bexec.log.exec1 >bexec.jsonl 2>bexec.cnv
      r=$?
      got5=$(grep -c '"size":33333' bexec.jsonl)
      end5=$("$top/$cfg/eventcnv" --header bexec.log.exec1 2>/dev/null | sed -n 's/^end  *//p')
      if [ -n "$made" ] && [ "$got5" -ge "$made" ] && [ "$got5" -le $((made + 3)) ] &&
         [ "$r" = 0 ] && [ ! -s bexec.cnv ] && [ "${end5#at an exec}" != "$end5" ]; then
        ok exec-threads
      else
        fail exec-threads "$got5 mallocs in the log, $made made; eventcnv exit $r, end '$end5' ($(head -c 300 bexec.cnv))"
      fi
    else
      fail exit-threads "cannot compile: $(head -2 busy.err)"
    fi
    "$replay" -q exec.log.exec1 >exec1.txt 2>exec1.err
    r=$?
    if [ $r -eq 0 ] && grep -q "exec.log.exec1: the log ends where the program exec'd another" exec1.err &&
       ! grep -q "died" exec1.err && [ "$(row exec1.txt malloc)" -ge 1000 ]; then
      ok exec-end
    else
      fail exec-end "exit $r: $(head -3 exec1.err)"
    fi
  else
    fail exit-exec "cannot compile: $(head -2 ends.err)"
  fi
fi
if [ "$rec" = "$cfg" ]; then
  printf '%s\n' '#include <string>' '#include <vector>' \
    'int main() { std::vector<std::string> v; for (int i = 0; i < 1000; ++i) v.push_back(std::string(100, (char)i)); return v.size() == 1000 ? 0 : 1; }' >cxx.cc
  if c++ -O1 cxx.cc -o cxx 2>cxx.err; then
    TELLTALE_PRELOAD="$preload" "$top/tools/replay/record" cxx.log -- bash -c './cxx; true' >/dev/null 2>&1
    parent=$("$top/$cfg/eventcnv" --header cxx.log 2>/dev/null | sed -n 's/^program  *//p')
    # cxx.log.PID.exec1: bash's forked child, before it exec'd cxx
    child=$(for f in $(ls cxx.log.* | grep -v exec); do "$top/$cfg/eventcnv" --header "$f" 2>/dev/null | sed -n 's/^program  *//p'; done)
    ends=$(for f in cxx.log $(ls cxx.log.* | grep -v exec); do "$top/$cfg/eventcnv" --header "$f" 2>/dev/null | grep -c '^end  *clean'; done | tr -d '\n')
    if [ "$parent" = bash ] && [ "$child" = cxx ] && [ "$ends" = 11 ]; then
      ok cxx-child
    else
      fail cxx-child "cxx.log is ${parent:-nothing}'s, cxx.log.* ${child:-nothing}'s, clean ends $ends"
    fi
    TELLTALE_FILE=cxxd.log LD_PRELOAD="$preload" ./cxx
    "$top/$cfg/eventcnv" --count cxxd.log >cxxd.txt 2>cxxd.err
    r=$?
    if [ $r -eq 0 ] && [ ! -s cxxd.err ] && [ "$(awk '$2 == "StreamStart"' cxxd.txt)" != "" ] &&
       [ "$(awk '$2 == "Malloc" {print $1}' cxxd.txt)" -ge 1000 ] &&
       "$top/$cfg/eventcnv" --header cxxd.log 2>/dev/null | grep -q '^end  *clean'; then
      ok cxx-direct
    else
      fail cxx-direct "eventcnv exit $r: $(head -2 cxxd.err)"
    fi
    TELLTALE_PRELOAD="$preload" "$top/tools/replay/record" bx.log -- bash -c './cxx; ./cxx' >/dev/null 2>&1
    last=$("$top/$cfg/eventcnv" --header bx.log 2>/dev/null | grep -c -e '^program  *cxx$' -e '^end  *clean')
    shell=$("$top/$cfg/eventcnv" --header bx.log.exec1 2>/dev/null | sed -n 's/^program  *//p')
    "$replay" -q bx.log.exec1 >bx.txt 2>bx.err
    r=$?
    if [ "$last" = 2 ] && [ "$shell" = bash ] && [ $r -eq 0 ] && [ "$(row bx.txt malloc)" -gt 0 ] &&
       grep -q "the log ends where the program exec'd another" bx.err && ! grep -q died bx.err; then
      ok bash-exec
    else
      fail bash-exec "bx.log: $last of cxx and clean; bx.log.exec1 is ${shell:-nothing}'s; replay exit $r: $(head -2 bx.err)"
    fi
  else
    fail cxx-child "cannot compile C++: $(head -2 cxx.err)"
  fi
fi
if [ "$rec" = "$cfg" ]; then
  # A handler's allocations, at any moment of the thread it interrupts:
  # the main thread signals a worker up to 5000 times, one at a time,
  # while the worker makes 2,000,000 pairs; the handler calls
  # free_sized(NULL, 4242), recorded as FreeSized (glibc takes no lock
  # for a null pointer; the recorder defines free_sized, glibc 2.36 not).
  cat >sig.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#define PAIRS 2000000
static void (*freeSized)(void *, size_t);
static atomic_long handled;
static atomic_int done;
static long made;
static void onSignal(int sig) { freeSized(NULL, 4242); atomic_fetch_add(&handled, sig > 0); }
static void *work(void *arg)
{
  for (; made < PAIRS; ++made) { void *volatile p = malloc(4321); free(p); }
  atomic_store(&done, 1);
  return arg;
}
int main(void)
{
  pthread_t worker;
  struct sigaction sa = {0};
  *(void **)&freeSized = dlsym(RTLD_DEFAULT, "free_sized");
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (freeSized == NULL || sigaction(SIGUSR1, &sa, NULL) != 0 ||
      pthread_create(&worker, NULL, work, NULL) != 0)
    return 1;
  for (long i = 0; i < 5000 && !atomic_load(&done); ++i) {
    long before = atomic_load(&handled);
    pthread_kill(worker, SIGUSR1);
    while (atomic_load(&handled) == before)
      ;
  }
  pthread_join(worker, NULL);
  printf("%ld %ld\n", atomic_load(&handled), made);
  return 0;
}
EOF
  if cc -O1 -pthread sig.c -o sig -ldl 2>sig.err; then
    for stacks in "" 16; do
      rm -f sig.log sig.log.*
      read -r handled made <<<"$(TELLTALE_STACKS=$stacks TELLTALE_FILE=sig.log LD_PRELOAD="$preload" ./sig)"
      "$top/$cfg/eventcnv" --count sig.log >sig.txt 2>sig.cnv
      r=$?
      frees=$(awk '$2 == "FreeSized" {print $1}' sig.txt)
      mallocs=$(awk '$2 == "Malloc" || $2 == "MallocAt" {n += $1} END {print n + 0}' sig.txt)
      # the C library allocates a few blocks of its own
      if [ -n "$handled" ] && [ "$handled" -gt 0 ] && [ "${frees:-0}" = "$handled" ] &&
         [ "$mallocs" -ge "$made" ] && [ "$mallocs" -le $((made + 20)) ] && [ $r = 0 ] && [ ! -s sig.cnv ]; then
        ok "signal-handler${stacks:+ (stacks $stacks)}"
      else
        fail "signal-handler${stacks:+ (stacks $stacks)}" "${frees:-0} of ${handled:-?} handlers' frees and $mallocs of ${made:-?} mallocs in the log; eventcnv exit $r: $(head -c 300 sig.cnv)"
      fi
    done
  else
    fail signal-handler "cannot compile: $(head -2 sig.err)"
  fi
fi
if [ "$rec" = "$cfg" ]; then
  cat >deep.c <<'EOF'
#include <stdlib.h>
void *volatile keep;
__attribute__((noinline)) void leaf(int i) { keep = malloc(32 + i % 8); free(keep); }
__attribute__((noinline)) void middle(int i) { leaf(i); __asm__ volatile(""); }
__attribute__((noinline)) void outer(int i) { middle(i); __asm__ volatile(""); }
int main(void) { for (int i = 0; i < 10000; ++i) outer(i); return 0; }
EOF
  # frames LOG PROG -- the innermost four frames of the stack most of
  # LOG's MallocAt events name, as PROG's function names
  frames() {
    "$top/$cfg/eventcnv" "$1" 2>/dev/null | awk -v prog="$PWD/$2" '
      function hex(s,  v, i) {
        v = 0; s = tolower(substr(s, 3))
        for (i = 1; i <= length(s); ++i) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
        return v }
      $5 == "MallocAt" { split($NF, a, "="); n[a[2]]++ }
      $5 == "StackFrames" { split($6, a, "="); def[a[2]] = $0 }
      $5 == "MapExec" && index($0, "path=\"" prog "\"") {
        split($6, a, "="); split($7, b, "="); split($8, c, "=")
        lo[++m] = hex(a[2]); hi[m] = hex(b[2]); off[m] = c[2] + 0 }
      END {
        for (id in n) if (n[id] > best) { best = n[id]; top = id }
        split(def[top], f, " ")
        for (i = 9; i <= 12; ++i) {
          split(f[i], p, "="); pc = hex(p[2])
          for (j = 1; j <= m; ++j) if (pc >= lo[j] && pc < hi[j]) printf "0x%x\n", pc - lo[j] + off[j] - 1
        } }' | addr2line -f -e "$2" | sed -n '1~2p' | tr '\n' ' '
  }
  if command -v addr2line >/dev/null &&
     cc -O2 -g -fno-omit-frame-pointer deep.c -o deep-fp 2>deep.err &&
     cc -O2 -g -fomit-frame-pointer deep.c -o deep-nofp 2>>deep.err; then
    TELLTALE_STACKS=16 TELLTALE_FILE=deep.log LD_PRELOAD="$preload" ./deep-fp
    TELLTALE_FILE=deep0.log LD_PRELOAD="$preload" ./deep-fp
    got=$(frames deep.log deep-fp)
    "$replay" -q deep.log >deep.txt 2>&1
    "$replay" -q deep0.log >deep0.txt 2>&1
    if [ "$got" = "leaf middle outer main " ] && [ "$(counts deep.txt)" = "$(counts deep0.txt)" ] &&
       [ "$(row deep.txt malloc)" -ge 10000 ] && [ "$(anom deep.txt)" = "0 0 0" ]; then
      ok stacks-fp
    else
      fail stacks-fp "frames '$got'; counts $(counts deep.txt | tr '\n' ' ') against $(counts deep0.txt | tr '\n' ' ')"
    fi
    if [ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ]; then
      TELLTALE_STACKS=16:dwarf TELLTALE_FILE=deepd.log LD_PRELOAD="$preload" ./deep-nofp 2>deepd.err
      got=$(frames deepd.log deep-nofp)
      if [ "$got" = "leaf middle outer main " ] && [ ! -s deepd.err ]; then
        ok stacks-dwarf
      else
        fail stacks-dwarf "frames '$got': $(head -2 deepd.err)"
      fi
    else
      echo "skip stacks-dwarf: libunwind.so.8 is not installed (Debian libunwind8)"
    fi
  else
    fail stacks-fp "cannot compile, or no addr2line: $(head -2 deep.err)"
  fi
  rm -f ends.log*
  TELLTALE_STACKS=8 TELLTALE_FILE=ends.log LD_PRELOAD="$preload" ./ends
  undefined=$(for f in ends.log ends.log.*; do
    "$top/$cfg/eventcnv" "$f" 2>/dev/null | awk -v f="$f" '
      $5 == "StackFrames" { split($6, a, "="); def[a[2]] = 1 }
      $5 ~ /At$/ { split($NF, a, "="); used[a[2]] = 1; n++ }
      END { for (id in used) if (id != 0 && !(id in def)) u++; print f, n + 0, u + 0 }'
  done)
  if [ "$(echo "$undefined" | wc -l)" = 2 ] && ! echo "$undefined" | awk '$2 == 0 || $3 != 0' | grep -q .; then
    ok stacks-fork
  else
    fail stacks-fork "logs, stacked events, undefined ids: $(echo "$undefined" | tr '\n' ';')"
  fi
fi
if [ "$rec" = "$cfg" ]; then
  echo secret >victim && ln -s victim linked.log && echo precious >notlog.log
  TELLTALE_FILE=linked.log LD_PRELOAD="$preload" "$threads" 2 >/dev/null 2>linked.err
  status1=$?
  TELLTALE_FILE=notlog.log LD_PRELOAD="$preload" "$threads" 2 >/dev/null 2>notlog.err
  status2=$?
  if [ "$status1" -ne 0 ] || [ "$status2" -ne 0 ] || [ "$(cat victim)" != secret ] ||
     [ "$(cat notlog.log)" != precious ]; then
    fail file-refused "status $status1 and $status2, victim: $(head -c 20 victim), notlog.log: $(head -c 20 notlog.log)"
  elif [ "$(grep -c telltale linked.err)" -ne 1 ] || [ "$(grep -c telltale notlog.err)" -ne 1 ] ||
       ! grep -q "not writing linked.log: it is a symbolic link" linked.err ||
       ! grep -q "not writing notlog.log: it is there and is not a telltale log" notlog.err; then
    fail file-refused "stderr: $(head -2 linked.err) / $(head -2 notlog.err)"
  else
    ok file-refused
  fi
fi
if [ "$rec" = "$cfg" ]; then
  TELLTALE_PRELOAD="$preload" "$top/tools/replay/record" rec.log -- \
    sh -c "\"$threads\" 10 >/dev/null; \"$threads\" 10 >/dev/null" >/dev/null 2>&1
  n=$(ls rec.log.* 2>/dev/null | wc -l)
  good=1
  for f in rec.log rec.log.*; do
    "$replay" -q "$f" >"$f.txt" 2>/dev/null && [ "$(anom "$f.txt")" = "0 0 0" ] || good=0
  done
  if [ $good -eq 1 ] && [ -s rec.log ] && [ "$n" -eq 2 ]; then
    ok record-command
  else
    fail record-command "$(ls -la rec.log* 2>&1 | tr '\n' ' ')"
  fi
  mkdir dflt && (cd dflt && LD_PRELOAD="$preload" "$threads" 10 >/dev/null)
  if ls dflt/telltale-malloc.*.log >/dev/null 2>&1; then
    ok file-default
  else
    fail file-default "$(ls dflt)"
  fi
fi

# --- every case replay must handle ------------------------------------
for s in clean unknown double duplicate null pool; do
  TELLTALE_FILE=$s.log "$events" $s >$s.expected
done
"$replay" clean.log >clean.txt 2>clean.err
r1=$?
"$replay" --strict clean.log >/dev/null 2>&1
r2=$?
if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$(counts clean.txt | sort)" = "$(sort clean.expected)" ] &&
   [ "$(anom clean.txt) $(row clean.txt 'free(NULL)')" = "0 0 0 0" ] && [ ! -s clean.err ]; then
  ok clean
else
  fail clean "exit $r1/$r2: $(counts clean.txt | tr '\n' ' ') $(cat clean.err)"
fi

anomaly() {   # anomaly CASE ROW MESSAGE [STRICT-EXIT]
  "$replay" "$1.log" >"$1.txt" 2>"$1.err"
  local r1=$?
  "$replay" --strict "$1.log" >"$1.stricttxt" 2>"$1.strict"
  local r2=$? want=${4:-1}
  if [ $r1 -eq 0 ] && [ "$(row "$1.txt" "$2")" = 1 ] && grep -q "offset [0-9]*: .*$3" "$1.err" &&
     [ $r2 -eq "$want" ] && { [ "$want" -eq 0 ] && [ "$(row "$1.stricttxt" "$2")" = 1 ] ||
                              grep -q "offset [0-9]*: .*$3" "$1.strict"; } &&
     [ "$(counts "$1.txt" | sort)" = "$(sort "$1.expected")" ]; then
    ok "$1"
  else
    fail "$1" "exit $r1, strict exit $r2, $2=$(row "$1.txt" "$2"): $(cat "$1.err" "$1.strict" | head -3)"
  fi
}
anomaly unknown 'unknown frees' 'unknown free'
anomaly double 'double frees' 'double free'
anomaly duplicate 'duplicate live' 'duplicate live pointer'
anomaly null 'free(NULL)' 'free(NULL)' 0

broken() {   # broken CASE FILE PATTERN
  "$replay" "$2" >"$1.txt" 2>"$1.err"
  local r=$?
  if [ $r -eq 1 ] && grep -q "$3" "$1.err"; then
    ok "$1"
  else
    fail "$1" "exit $r: $(head -3 "$1.err")"
  fi
}
damaged() {   # damaged CASE FILE: replayed up to the damage, named, exit 1
  "$replay" -q "$2" >"$1.txt" 2>"$1.err"
  local r=$? n
  n=$(sed -n "s/^replay $2: \([0-9]*\) events.*/\1/p" "$1.txt")
  if [ $r -eq 1 ] && grep -q "$2: offset [0-9]*: .*: replayed the $n events before it" "$1.err" &&
     [ "${n:-0}" -gt 0 ]; then
    ok "$1"
  else
    fail "$1" "exit $r, ${n:-no} events: $(grep -A12 -m1 "leak of" "$1.err"; head -3 "$1.err")"
  fi
}
size=$(stat -c %s work.log)
head -c $((size - 100)) work.log >truncated.log
damaged truncated truncated.log
cp work.log corrupt.log
# the second block's magic, somewhere after the header
at=$(grep -abo TTBK work.log | sed -n 2p | cut -d: -f1)
printf 'XXXX' | dd of=corrupt.log bs=1 seek="$at" conv=notrunc 2>/dev/null
damaged corrupt corrupt.log
# A killed program: its live file holds what its log lacks.
PYTHONMALLOC=malloc TELLTALE_FILE=killed.log LD_PRELOAD="$preload" python3 -c \
  'import os; x = [bytearray(64) for i in range(20000)]; os.kill(os.getpid(), 9)' 2>/dev/null &
wait $! 2>/dev/null
"$replay" -q killed.log >killed.txt 2>killed.err
r=$?
want=$("$top/$cfg/eventcnv" --count killed.log 2>/dev/null | awk '{s += $1} END {print s}')
got=$(sed -n 's/^replay killed.log: \([0-9]*\) events.*/\1/p' killed.txt)
if [ $r -eq 0 ] && grep -q "killed.log: the stream did not end cleanly" killed.err &&
   grep -q "of its events were recovered from killed.log.live" killed.err &&
   [ -n "$got" ] && [ "$got" = "$want" ] && [ "$got" -gt 20000 ]; then
  ok killed
else
  fail killed "exit $r, replayed ${got:-none}, eventcnv counts ${want:-none}: $(head -3 killed.err)"
fi
# The recorder's zstd blocks (.malloc.zstd): a program killed after
# several blocks went to the log as zstd frames; its live file gives back
# the rest, and every one of its own mallocs is read once, none twice.
# TELLTALE_ZSTD=0 writes no zstd block and reads the same; a bad value is
# said and the program carries on.
zk() {   # zk NAME [ENV...]: record, killed, in a directory of its own
  local name=$1
  shift
  mkdir -p "$name"
  (cd "$name" && env "$@" TELLTALE_FILE=k.log LD_PRELOAD="$preload" python3 -c '
import ctypes, os
m = ctypes.CDLL(None).malloc
m.restype = ctypes.c_void_p
for i in range(150000): m(12347)
os.kill(os.getpid(), 9)' 2>err) 2>/dev/null &
  wait $! 2>/dev/null
  "$top/$cfg/eventcnv" --header "$name/k.log" >"$name/header" 2>/dev/null
  "$top/$cfg/eventcnv" --format csv "$name/k.log" 2>/dev/null | grep -c '""size"":12347,' >"$name/count"
}
zk zkill
zk zkill0 TELLTALE_ZSTD=0
zk zkillbad TELLTALE_ZSTD=x
if grep -q "^zstd  *[1-9]" zkill/header && grep -q "recovered" zkill/header && [ "$(cat zkill/count)" = 150000 ] &&
   ! grep -q "^zstd" zkill0/header && [ "$(cat zkill0/count)" = 150000 ] &&
   grep -q "TELLTALE_ZSTD='x' is not" zkillbad/err && [ "$(cat zkillbad/count)" = 150000 ]; then
  ok zstd-killed
else
  fail zstd-killed "zstd: $(grep -h '^zstd\|^end' zkill/header | tr '\n' ' ') counts $(cat zkill/count) $(cat zkill0/count) $(cat zkillbad/count): $(head -2 zkillbad/err)"
fi
head -c 5000 /dev/urandom >garbage.log
broken not-a-log garbage.log "garbage.log: "
broken missing no-such.log "no-such.log: No such file"
"$replay" -a bogus clean.log >bad-alloc.txt 2>bad-alloc.err
if [ $? -eq 1 ] && grep -q "unknown allocator 'bogus'" bad-alloc.err; then
  ok bad-alloc-name
else
  fail bad-alloc-name "$(cat bad-alloc.err)"
fi
"$replay" --no-such-option clean.log >/dev/null 2>usage1.err
r1=$?
"$replay" clean.log -a >/dev/null 2>usage2.err
r2=$?
"$replay" >/dev/null 2>&1
r3=$?
if [ "$r1 $r2 $r3" = "2 2 2" ] && grep -q "unknown option: --no-such-option" usage1.err &&
   grep -q "missing argument to -a" usage2.err; then
  ok usage
else
  fail usage "exit $r1 $r2 $r3: $(head -1 usage1.err) / $(head -1 usage2.err)"
fi

# --- pools ------------------------------------------------------------
pools() { echo "$(row "$1" 'pool create') $(row "$1" 'pool alloc') $(row "$1" 'pool free') $(row "$1" 'pool destroy')"; }
"$replay" pool.log >pool.txt 2>pool.err
if [ $? -eq 0 ] && [ "$(pools pool.txt)" = "2 100 60 2" ] && [ "$(anom pool.txt)" = "0 0 0" ] &&
   [ "$(row pool.txt 'replay failures')" = 0 ]; then
  ok pool-events
else
  fail pool-events "$(pools pool.txt) / $(anom pool.txt) $(cat pool.err)"
fi
TELLTALE_FILE=example.log "$top/$cfg/examples/pool" >/dev/null 2>&1
want=$(for e in PoolCreate PoolAlloc PoolFree PoolDestroy; do
         "$top/$cfg/eventcnv" --event $e example.log | grep -c " $e "; done | tr '\n' ' ')
"$replay" --strict example.log >example.txt 2>example.err
if [ $? -eq 0 ] && [ "$(pools example.txt) " = "$want" ] && [ "$(row example.txt 'pool alloc')" -gt 0 ]; then
  ok pool-example
else
  fail pool-example "replayed $(pools example.txt), eventcnv $want: $(cat example.err)"
fi
"$replay" --pool "$top/$cfg/replay-pool-null.so" --strict example.log >user.txt 2>user.err
if [ $? -eq 0 ] && [ "$(pools user.txt) " = "$want" ]; then
  ok pool-user
else
  fail pool-user "$(pools user.txt) $(cat user.err)"
fi
"$replay" --pool "$tmp/no-such-pool.so" example.log >/dev/null 2>poolbad.err
if [ $? -eq 1 ] && grep -q "no-such-pool.so" poolbad.err; then
  ok pool-bad
else
  fail pool-bad "$(cat poolbad.err)"
fi

# --- the chart --------------------------------------------------------
allocs=glibc
[ "$rec" = "$cfg" ] && [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] && allocs=glibc,jemalloc
"$replay" -q -a $allocs --svg chart.svg work.log >/dev/null 2>&1
n=$(echo "$allocs" | tr ',' '\n' | wc -l)
if [ -s chart.svg ] && [ "$(grep -c '<polyline' chart.svg)" -eq $((n + 1)) ] &&
   grep -q '</svg>' chart.svg && ! grep -q 'DO NOT'' EDIT' chart.svg; then
  ok svg
else
  fail svg "$(head -c 300 chart.svg 2>&1)"
fi

cp work.log "R&D<1>'s.log"
if "$replay" -q --svg "R&D.svg" "R&D<1>'s.log" >/dev/null 2>&1 &&
   python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "R&D.svg" 2>/dev/null &&
   grep -q "R&amp;D&lt;1&gt;&apos;s.log" "R&D.svg"; then
  ok svg-escape
else
  fail svg-escape "$(head -c 300 "R&D.svg" 2>&1)"
fi
start=$(date +%s%N)
"$replay" -q --svg no-such-dir/chart.svg work.log >early.txt 2>early.err
r=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $r -eq 1 ] && grep -q "no-such-dir/chart.svg: No such file or directory" early.err &&
   [ ! -s early.txt ]; then
  ok svg-early
else
  fail svg-early "exit $r after $ms ms: $(head -3 early.err)"
fi
libz=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 / {print $NF; exit}')
if [ -n "$libz" ]; then
  "$replay" -q -a "$libz" work.log >libz.txt 2>libz.err
  r=$?
  if [ $r -eq 1 ] && grep -q "does not define malloc" libz.err; then
    ok not-an-allocator
  else
    fail not-an-allocator "exit $r: $(head -3 libz.err) $(head -3 libz.txt)"
  fi
fi
long=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ "$rec" = "$cfg" ] && [ -e "$long" ]; then
  "$replay" -q -a "$long" work.log >wide.txt 2>&1
  if grep -q -- " $long\$" wide.txt && [ "$(row wide.txt malloc)" = "$(row work.txt malloc)" ]; then
    ok wide-name
  else
    fail wide-name "$(head -4 wide.txt)"
  fi
fi
PYTHONMALLOC=malloc TELLTALE_FILE=peak.log LD_PRELOAD="$preload" python3 -c \
  'x = [bytearray(1 << 20) for i in range(40)]' 2>/dev/null
"$replay" -q peak.log >peak.txt 2>&1
live=$(row peak.txt 'peak live requested (MB)')
rss=$(row peak.txt 'peak RSS growth (MB)')
if [ -n "$live" ] && awk -v l="$live" -v r="$rss" 'BEGIN { exit !(l >= 40 && r >= l) }'; then
  ok peak-short
else
  fail peak-short "peak live $live MB, peak RSS $rss MB: $(head -3 peak.txt)"
fi

# Many threads (.replay.threads.many): the logs are made by build/'s
# malloc_events (no live file), replayed by CONFIG's replay; timeout
# only bounds a stall, it measures nothing.
manyThreads() {   # manyThreads NAME N [free]
  local name=$1 n=$2 frees=0 r why=""
  [ -n "${3:-}" ] && frees=$n
  TELLTALE_MAP=off TELLTALE_COMPACT=1 TELLTALE_FILE=$name.log "$top/$rec/tests/malloc_events" \
    threads "$n" ${3:-} >/dev/null 2>&1
  timeout 120 "$replay" -q "$name.log" >"$name.txt" 2>"$name.err"
  r=$?
  if [ $r = 124 ]; then
    why="replay of $n threads had not ended after 120 s"
  elif [ $r != 0 ]; then
    why="exit $r: $(head -3 "$name.err")"
  else
    grep -q " $n threads\$" "$name.txt" || why="$(head -1 "$name.txt")"
    [ "$(row "$name.txt" malloc) $(row "$name.txt" free)" = "$n $frees" ] ||
      why="$why; malloc $(row "$name.txt" malloc), free $(row "$name.txt" free)"
    [ "$(anom "$name.txt")" = "0 0 0" ] || why="$why; anomalies $(anom "$name.txt")"
    if [ $frees != 0 ]; then
      "$replay" -q --serial "$name.log" >"$name.serial" 2>&1
      [ "$(counts "$name.serial")" = "$(counts "$name.txt")" ] ||
        why="$why; --serial replays $(counts "$name.serial" | tr '\n' ' ')"
    fi
  fi
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "${why#; }"; fi
}
manyThreads many-threads 1000
manyThreads many-threads-live 2000 free

finish
