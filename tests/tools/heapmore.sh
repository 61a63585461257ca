#!/usr/bin/env bash
# tests/tools/heapmore.sh -- the recorder and telltale-heap on what an outside
# tester found: threads under libunwind, frames without line
# information, the allocator's frames in the writers, the live files
# an exec leaves, and process trees
#
# .design: design/heap.txt .heap design/recorder.txt .malloc.reentry.stack .malloc.exec.live
#          .heap.symbols.cu .heap.site .heap.tree
#
# Usage: tests/tools/heapmore.sh CONFIG     e.g. tests/tools/heapmore.sh build/san
# CONFIG's heap, replay and eventcnv must be built; the logs are recorded
# with build/'s recorder (it cannot be combined with a sanitizer).
#
# Covers:
#   dwarf-threads      TELLTALE_STACKS=32:dwarf, 4 threads one after the
#                      other, each a malloc(10) that main frees: 4 frees,
#                      none of a block never seen (glibc's frees of
#                      libunwind's thread-local blocks, allocated inside the
#                      recorder, were), and replay counts no unknown free
#   no-line            a g++ -O2 -g program whose main is just before
#                      _start: _start has no file and line, as addr2line
#                      says ??:? (libdwfl gave it main's last line)
#   no-allocator       its --folded, --flame and --pprof have no frame of
#                      operator new, as the report has none, and its
#                      folded stacks end in the function that calls new
#   short-templates    --short-templates: its stacks' template argument
#                      lists are <> (std::unique_ptr<>), not without it
#   lsan-suppress      --suppress with LeakSanitizer's leak:TEXT lines:
#                      heap_target's leak suppressed by its function, its
#                      file and its module (^target$), not by a text that
#                      matches nothing
#   peak-rss           a program that touches 64 MiB: the summary's max RSS
#                      (PeakRss, at its exit) is at least that
#   exec-lone          a single-threaded image that execs another (bash
#                      -c 'exec bash -c "exec true"'): no LOG.execN.live
#                      is left, each LOG.execN ends at its exec, and no
#                      LOG.live.done either
#   exec-threads       an image with a second thread of its own that execs:
#                      its LOG.exec1.live is kept
#   tree-dir           heap DIR of a shell that forks children and execs:
#                      one report a process (its pid, its logs' program)
#                      and a report of the tree, whose allocations are the
#                      sum of the processes'
#   tree-logs          heap LOG LOG...: the same as heap of their directory
#   attach-late        instead of attaching: a process started with
#                      TELLTALE_RECORD=none TELLTALE_CTL=on, recording turned
#                      on by telltale-ctl: its allocations after are in the
#                      log, and no more frees of blocks never seen than
#                      the 16 live then
#   bounded            the report of a log of 3 M events takes no more
#                      memory (peak RSS within 8 MiB) than of 0.3 M events
#                      of the same program, and is the whole-log reader's
#                      (on its zstd archive, which it reads as before)
#   fork-inherited     a child forked with 3 blocks of its parent's live,
#                      which it frees: no free of a block never seen in the
#                      tree's report, the child's own report says it freed
#                      3 inherited blocks
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh

cfg=${1:?usage: tests/tools/heapmore.sh CONFIG}
cfg=${cfg%/}
top=$PWD
heap="$top/$cfg/heap"
replay="$top/$cfg/replay"
preload="$top/build/libtelltale-malloc.so"
unwind=/usr/lib/x86_64-linux-gnu/libunwind.so.8

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# dwarf-threads
cat >threads.c <<'EOF'
#include <pthread.h>
#include <stdlib.h>
void *volatile sink;
static void *run(void *arg) { (void)arg; sink = malloc(10); return NULL; }
int main(void)
{
  for (int i = 0; i < 4; ++i) {
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    pthread_join(t, NULL);
    free(sink);
  }
  return 0;
}
EOF
if [ -e "$unwind" ] && cc -O0 -g -pthread threads.c -o threads 2>cc.err; then
  TELLTALE_STACKS=32:dwarf TELLTALE_FILE=$PWD/th.log LD_PRELOAD="$preload" ./threads
  "$heap" th.log >th.txt 2>th.err
  r=$?
  "$replay" th.log >th.replay 2>/dev/null
  unknown=$(awk '$1 == "unknown" && $2 == "frees" { print $3 }' th.replay)
  if [ $r = 0 ] && grep -q "frees        4 (0 of blocks never seen allocated)" th.txt &&
     [ "$unknown" = 0 ]; then
    ok dwarf-threads
  else
    fail dwarf-threads "exit $r: $(grep frees th.txt) replay unknown frees '$unknown' $(head -1 th.err)"
  fi
else
  echo "skip dwarf-threads: no libunwind.so.8 (Debian libunwind8), or no C compiler"
fi

# no-line, no-allocator
cat >late.cc <<'EOF'
#include <thread>
#include <cstdio>
__attribute__((noinline)) void work(int n, int **out) { for (int i = 0; i < n; ++i) out[i] = new int(i); }
int main()
{
  int *a[100], *b[50];
  std::thread t(work, 100, a);
  t.join();
  work(50, b);
  std::printf("%d %d\n", *a[99], *b[49]);
  return 0;
}
EOF
if [ -e "$unwind" ] && command -v g++ >/dev/null && g++ -O2 -g -pthread late.cc -o late 2>cc.err; then
  TELLTALE_STACKS=32:dwarf TELLTALE_FILE=$PWD/late.log LD_PRELOAD="$preload" ./late >/dev/null
  "$heap" --stacks late.log >late.txt 2>late.err
  start=$(grep -E "^ +_start  " late.txt | sort -u)
  said=$(addr2line -e late "0x$(nm late | awk '$3 == "_start" { print $1 }')")
  if [ -n "$start" ] && [ "$start" = "$(printf '%24s_start  in late' '')" ] && [ "$said" = "??:?" ]; then
    ok no-line
  else
    fail no-line "the _start frames: $(echo $start); addr2line says $said"
  fi
  "$heap" --folded late.log >late.folded 2>/dev/null
  "$heap" --flame -o late.svg late.log 2>/dev/null
  "$heap" --pprof -o late.pb.gz late.log 2>/dev/null
  why=""
  grep -q "operator new" late.folded && why="$why folded;"
  grep -q "operator new" late.svg && why="$why flame;"
  gzip -dc late.pb.gz | grep -aq "operator new" && why="$why pprof;"
  [ "$(grep -c ';work(int, int\*\*) [0-9]*$' late.folded)" = 2 ] || why="$why the work stacks: $(grep -c work late.folded);"
  [ -s late.svg ] && [ -s late.pb.gz ] && [ -z "$why" ] && ok no-allocator ||
    fail no-allocator "operator new in:$why"
  # short-templates
  "$heap" --short-templates --stacks late.log >short.txt 2>/dev/null
  want='std::thread::_M_start_thread(std::unique_ptr<>, void (*)())'
  grep -qF "$want" short.txt && ! grep -qF "$want" late.txt && ! grep -q 'unique_ptr<std' short.txt &&
    ok short-templates || fail short-templates "$(grep -m1 _M_start_thread short.txt)"
else
  echo "skip no-line, no-allocator, short-templates: no C++ compiler, or no libunwind.so.8 (Debian libunwind8)"
fi

# lsan-suppress: LeakSanitizer's leak:TEXT lines, by function, file and
# module (anchored), and one that matches nothing
if cc -O0 -g -fno-omit-frame-pointer "$top/tests/clients/heap_target.c" -o target 2>cc.err; then
  TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/t.log LD_PRELOAD="$preload" ./target 1
  got=""
  for text in plantedLeak heap_target.c '^target$' nomatch; do
    printf '# LeakSanitizer\nleak:%s\n' "$text" >lsan.supp
    got="$got $("$heap" --suppress lsan.supp t.log 2>/dev/null | sed -n 's/^  leaked  *\([0-9]*\) bytes.*/\1/p')"
  done
  [ "$got" = " 0 0 0 231" ] && ok lsan-suppress || fail lsan-suppress "leaked with each: $got"
else
  fail lsan-suppress "cannot compile: $(head -1 cc.err)"
fi

# exec-lone
TELLTALE_FILE=$PWD/ex.log LD_PRELOAD="$preload" bash -c ': >/dev/null; exec bash -c "exec true"'
ends=$(for f in ex.log.exec1 ex.log.exec2; do "$top/$cfg/eventcnv" --summary $f 2>/dev/null | grep -c StreamExec; done)
if [ -e ex.log ] && [ -e ex.log.exec2 ] && [ "$(echo $ends)" = "1 1" ] &&
   [ -z "$(ls ex.log*.live* 2>/dev/null)" ]; then
  ok exec-lone
else
  fail exec-lone "$(ls ex.log* | tr '\n' ' ') ends: $(echo $ends)"
fi

# exec-threads
cat >execthread.c <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *run(void *arg) { (void)arg; for (;;) pause(); return NULL; }
int main(void)
{
  pthread_t t;
  pthread_create(&t, NULL, run, NULL);
  free(malloc(5));
  execl("/bin/true", "true", (char *)NULL);
  return 1;
}
EOF
if cc -O0 -pthread execthread.c -o execthread 2>cc.err; then
  TELLTALE_FILE=$PWD/et.log LD_PRELOAD="$preload" ./execthread
  [ -e et.log.exec1 ] && [ -e et.log.exec1.live ] && [ ! -e et.log.live.done ] && ok exec-threads ||
    fail exec-threads "$(ls et.log* | tr '\n' ' ')"
else
  fail exec-threads "cannot compile: $(head -1 cc.err)"
fi

# tree-dir, tree-logs
mkdir tree
TELLTALE_FILE=$PWD/tree/sh.log LD_PRELOAD="$preload" bash -c 'ls / >/dev/null; (echo x | cat >/dev/null); exec true'
"$heap" tree >tree.txt 2>tree.err
r=$?
logs=$(ls tree | grep -vc '\.live')
procs=$(grep -c '^PROCESS ' tree.txt)
# the allocations of each report, the tree's last
calls=$(awk '$1 == "allocations" { print $2 }' tree.txt)
sum=$(( $(echo "$calls" | head -n -1 | paste -sd+) ))
if [ $r = 0 ] && [ "$logs" -ge 5 ] && [ "$procs" = "$logs" ] && grep -q "^TREE: $logs logs" tree.txt &&
   [ "$sum" = "$(echo "$calls" | tail -1)" ] &&
   [ "$(grep -c '(0 of blocks never seen allocated)' tree.txt)" = $((logs + 1)) ]; then
  ok tree-dir
else
  fail tree-dir "exit $r, $logs logs, $procs reports, sum $sum, tree $(echo "$calls" | tail -1): $(grep 'never seen' tree.txt | grep -v '(0 of' | head -2)"
fi
"$heap" tree/* >trees.txt 2>/dev/null
cmp -s tree.txt trees.txt && ok tree-logs || fail tree-logs "$(diff tree.txt trees.txt | head -3)"

# fork-inherited
cat >fork.c <<'EOF'
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile keep[3];
int main(void)
{
  pid_t child;
  for (int i = 0; i < 3; ++i)
    keep[i] = malloc(100 + i);
  if ((child = fork()) == 0) {
    for (int i = 0; i < 3; ++i)
      free(keep[i]);
    return 0;
  }
  waitpid(child, NULL, 0);
  for (int i = 0; i < 3; ++i)
    free(keep[i]);
  return 0;
}
EOF
if cc -O0 fork.c -o fork 2>cc.err; then
  mkdir fk
  TELLTALE_FILE=$PWD/fk/f.log LD_PRELOAD="$preload" ./fork
  "$heap" fk >fk.txt 2>/dev/null
  "$heap" fk/f.log.* >fkalone.txt 2>/dev/null
  if grep -q "inherited    3 blocks, 303 bytes, live in its parent at the fork; 3 of the frees were of them" fk.txt &&
     [ "$(grep -c '(0 of blocks never seen allocated)' fk.txt)" = 3 ] &&
     grep -q "(3 of blocks never seen allocated)" fkalone.txt && grep -q "^  forked       by pid" fkalone.txt; then
    ok fork-inherited
  else
    fail fork-inherited "$(grep -E 'frees|inherited' fk.txt | tr '\n' ' ')"
  fi
else
  fail fork-inherited "cannot compile: $(head -1 cc.err)"
fi

# bounded: the report of a log of 3 M events takes no more memory than
# that of a log of 0.3 M events of the same program (a heap of 4,096
# blocks), and says what the whole-log reader says (its zstd archive,
# which the bounded reader leaves to it)
cat >many.c <<'EOF'
#include <stdlib.h>
void *volatile slot[4096];
int main(int argc, char **argv)
{
  long n = atol(argv[1]);
  for (long i = 0; i < n; ++i) {
    unsigned k = (unsigned)(i * 2654435761u) % 4096;
    free(slot[k]);
    slot[k] = malloc(16 + (i & 255));
  }
  return 0;
}
EOF
# rss CMD... -- the peak RSS of CMD in KiB
rss() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
if cc -O1 -g -fno-omit-frame-pointer many.c -o many 2>cc.err; then
  TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/small.log LD_PRELOAD="$preload" ./many 150000
  TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/large.log LD_PRELOAD="$preload" ./many 1500000
  small=$(rss "$heap" small.log)
  large=$(rss "$heap" large.log)
  "$top/$cfg/eventcnv" --format telltale --zstd -o large.tt large.log 2>/dev/null
  "$heap" large.log 2>&1 | sed 1d >large.txt
  "$heap" large.tt 2>&1 | sed 1d >whole.txt
  if [ $((large - small)) -lt 8192 ] && [ -s large.txt ] && cmp -s large.txt whole.txt &&
     grep -q "allocations  1500... calls" large.txt; then
    ok bounded
  else
    fail bounded "peak RSS $small KiB for 0.3 M events, $large KiB for 3 M; $(diff large.txt whole.txt | head -3)"
  fi
else
  fail bounded "cannot compile: $(head -1 cc.err)"
fi

# attach-late: a process started with recording off and its control
# file on (the README's answer to attaching): telltale-ctl turns
# recording on; what it allocates after is in the log, what it freed of
# the blocks made before is counted as never seen, and no more than the
# 16 live then
cat >late.c <<'EOF'
#include <stdlib.h>
#include <unistd.h>
void *volatile keep[16];
int main(int argc, char **argv)
{
  (void)argc;
  for (int round = 0; round < 400 && access(argv[1], F_OK) != 0; ++round) {
    for (int i = 0; i < 16; ++i) {
      free(keep[i]);
      keep[i] = malloc(32 + i);
    }
    usleep(20000);
  }
  return 0;
}
EOF
if cc -O0 late.c -o late-run 2>cc.err; then
  TELLTALE_CTL=on TELLTALE_CTL_DIR=$PWD/ctl TELLTALE_RECORD=none TELLTALE_FILE=$PWD/attach.log \
    LD_PRELOAD="$preload" ./late-run "$PWD/stop" &
  pid=$!
  sleep 0.3
  "$top/$cfg/ctl" --dir "$PWD/ctl" $pid record on Malloc >ctl.out 2>&1
  r=$?
  sleep 0.3
  : >stop
  wait $pid
  "$heap" attach.log >attach.txt 2>attach.err
  calls=$(awk '$1 == "allocations" { print $2 }' attach.txt)
  unknown=$(sed -n 's/^  frees .*(\([0-9]*\) of blocks never seen allocated)/\1/p' attach.txt)
  if [ $r = 0 ] && [ "${calls:-0}" -ge 16 ] && [ "${unknown:-99}" -le 16 ]; then
    ok attach-late
  else
    fail attach-late "ctl exit $r ($(head -1 ctl.out)), $calls allocations, $unknown frees never seen"
  fi
else
  fail attach-late "cannot compile: $(head -1 cc.err)"
fi

# peak-rss: a program that touches 64 MiB: its max RSS, from PeakRss at
# its exit, is at least that
cat >rss.c <<'EOF'
#include <stdlib.h>
#include <string.h>
int main(void)
{
  char *p = malloc(64 << 20);
  memset(p, 1, 64 << 20);
  free(p);
  return 0;
}
EOF
if cc -O0 rss.c -o rss 2>cc.err; then
  TELLTALE_FILE=$PWD/rss.log LD_PRELOAD="$preload" ./rss
  rss=$("$heap" rss.log 2>/dev/null | sed -n 's/^  max RSS  *\([0-9]*\) bytes.*/\1/p')
  [ "${rss:-0}" -ge $((64 << 20)) ] && [ "$rss" -lt $((512 << 20)) ] && ok peak-rss ||
    fail peak-rss "max RSS '$rss'"
else
  fail peak-rss "cannot compile: $(head -1 cc.err)"
fi

finish
