#!/usr/bin/env bash
# tests/tools/heap.sh -- telltale-heap, the allocation profile of a recorder log
#
# .design: design/heap.txt .heap
#
# Usage: tests/tools/heap.sh CONFIG     e.g. tests/tools/heap.sh build/san
# CONFIG's heap and tests/malloc_events must be built.  The logs are
# recorded with build/'s recorder (it cannot be combined with a
# sanitizer) from tests/clients/heap_target.c, compiled here with -O0 -g
# -fno-omit-frame-pointer, whose call sites are known.
#
# Covers:
#   sites-allocations  the top call sites by allocations are the target's
#                      five functions, each with its count exactly
#   sites-bytes        and by bytes, each with its bytes exactly
#   sites-peak         by bytes live at the peak: bigBlocks 50000 and
#                      plantedLeak 231, and the summary's peak is their sum
#   sites-temporary    by temporary allocations, as heaptrack_print counts
#                      them: temporaries 50 (each freed at once),
#                      growRealloc 10 (each realloc frees the block just
#                      made), manySmall 1 and bigBlocks 1 (the first free
#                      after the last malloc is of a block of the same
#                      stack and size), no other
#   summary            allocations, bytes, leaks and temporaries of the
#                      summary are the sums of the sites'
#   leak-named         the leak report names plantedLeak with its file and
#                      line (the line of its malloc call), 231 bytes in 3
#                      blocks, and main below it with --stacks
#   suppress           --suppress FILE (a comment, a blank line, planted*)
#                      hides the leak, and says 231 bytes were suppressed
#   suppress-everywhere  and the summary's leaked is 0 (it says 231 bytes in
#                      3 blocks were suppressed), --folded leaked and --flame
#                      leaked have no stack, --diff's leaked row is 0 0
#   diff               --diff of runs with K=1 and K=2: manySmall and
#                      temporaries changed by +100 and +50 calls, the
#                      sites that did not change are not listed
#   folded             --folded's values add up to the summary's
#                      allocations, bytes, leaks, temporaries and peak (each
#                      stack's bytes live at the peak); the leak's line ends
#                      main;plantedLeak 3
#   writers            --flame leaked and --chart write well-formed SVG
#                      naming plantedLeak and the program; --pprof's file
#                      read by pprof (build/pprof/pprof, made by
#                      .ci/install; skipped without it) gives plantedLeak
#                      231 bytes leaked, and none with --suppress supp
#   pprof-inlined      a -O2 program whose malloc call is inlined into its
#                      caller: pprof -traces shows one location with both
#                      lines (make (inline), then outer), not make twice
#   pprof-recursive    f calling itself 3 times (3 frames at one address):
#                      pprof -traces shows f 4 times, not merged
#   archive            a.log's archive (eventcnv --format telltale --zstd):
#                      the same report and folded stacks
#   no-stacks          a log recorded without TELLTALE_STACKS: the same
#                      totals, one site "[unknown]"
#   threads            tests/malloc_threads (4 threads, blocks freed by
#                      other threads, thousands live at once) with stacks:
#                      its allocations, less a run with no work (the C
#                      library's own), are the program's own count, no
#                      free is of a block never seen, and it leaks what
#                      the run with no work leaks
#   threads-ended      the same log read by eventcnv: exit 0, a ThreadExit
#                      for every ThreadStart but the main thread's (StreamEnd
#                      ends it), although the C library frees after each
#                      thread's exit ran (.sol.thread.late)
#   skew-order         malloc_events skew (a cross-thread free stamped
#                      before its allocation, an address reused before
#                      its free is stamped, a free stamped before the other
#                      thread gave the block, then the address allocated
#                      again by the same thread): nothing leaked, one free
#                      of a block never seen (the one 900 us early)
#   unclean            a program killed by SIGKILL: said on stderr, exit 0,
#                      its events recovered from LOG.live (the default)
#   unclean-lost       and, with TELLTALE_MAP=off (no LOG.live), that the
#                      events still in its buffers are lost, exit 1 as
#                      eventcnv's (tests/tools/hostile.sh cut-agree)
#   archive-flag       that log's archive with its recovered flag set (byte
#                      19): refused as damage, not read as recovered
#                      (.stream.header.check)
#   no-allocations     logs with no allocation event (true recorded, and
#                      build/examples/pool's, which is no recorder log):
#                      said on stderr, exit 0, no "unknown site"
#   changed-file       the program's file touched after it was recorded:
#                      one warning that its frames may be named wrongly
#                      (none for a.log, whose files did not change)
#   output-is-input    -o naming the input log (itself, by a link, the NEW of
#                      --diff): exit 2, said, the log unchanged
#   damaged            8 bytes flipped in a block: reading stopped at the
#                      damage at its offset, exit 1, no "died"
#   exec-end           bash -c ':; exec true' recorded: bash's log (LOG.exec1)
#                      is said to end at an exec, not a death, exit 0
#   truncated          a log cut short: the damage named with the file and
#                      its offset, the events before it reported, exit 1
#   unknown-value      --folded nonsense LOG, --flame nonsense LOG: exit 2,
#                      saying the value is unknown (not "give one LOG")
#   ties               two sites of one count on lines 9 and 10 of a file:
#                      9 first (numerically, not as strings)
#   plural             one block leaked: "1 block", not "1 blocks"
#   many-live          300,000 blocks live at once (a table past 2 MiB, in
#                      huge pages: .heap.bounded.huge), freed in a
#                      scrambled order but every seventh: the peak, the
#                      frees and the leak exact to the byte
#   dlclose-reload     a program dlopens libA, allocates 3 blocks through
#                      its siteOfA (leaking 1), dlcloses it, dlopens libB
#                      (built alike, so most often mapped where A was: said
#                      in the case's name) and allocates 5 through siteOfB:
#                      siteOfA 3 and siteOfB 5 exactly, and the leak is
#                      siteOfA's (libA.c:2) after A is gone (.stacks.unmap)
#   dlclose-pprof      its --pprof file read by pprof: siteOfA 3 and siteOfB
#                      5, each address a location of its own in each library
#   dlclose-read       that log: eventcnv prints two MapUnmap, one for each
#                      dlclose that unloaded (none for one that dropped a
#                      reference), and replay reads it (exit 0)
#   dlclose-threads    two threads allocate through libC all along while
#                      main loads, uses and unloads A and B 40 times (their
#                      destructors allocate inside dlclose), and dlcloses
#                      one library from atexit and one from a destructor
#                      after the session ended: exit 0, every site's count
#                      exact (the threads' as they counted), no unknown free
#   dlclose-race       two threads each load, use and unload its own library
#                      300 times, A and B taking each other's addresses:
#                      every count exact (siteOfA and siteOfB 1200, byeA
#                      and byeB 300), no allocation without its stack
#   usage              --help exit 0; an unknown option, --top x,
#                      --folded nonsense, no log: exit 2; not a log,
#                      a missing file: exit 1
#   cxx-site           a C++ program whose function allocates with new 300
#                      times, recorded with TELLTALE_STACKS=16:dwarf (the
#                      C++ library's operator new has no frame pointer, so
#                      a frame-pointer walk skips its caller): its site is
#                      that function, demangled ("Tree::grow(int)"), not
#                      operator new (skipped without a C++ compiler or
#                      libunwind8)
#   cxx-pool           its leak is none: libstdc++'s emergency pool, made by
#                      its initialiser under call_init, is suppressed by
#                      default and said so; --no-default-suppressions shows
#                      it (libstdc++ over call_init) as the leak
#   system-program     sqlite3 (Debian's: no frame pointers, no debug
#                      information for its library) recorded with
#                      TELLTALE_STACKS=32:dwarf: every report and writer runs
#                      clean (under build/san, no sanitizer report) and no
#                      free is of a block never seen (skipped without
#                      sqlite3 or libunwind8)
#   heaptrack-agree    heaptrack_print on the same target names the same
#                      top call sites by allocations, in the same order,
#                      with the same counts (skipped without heaptrack)
#   heaptrack-temporary  and the same sites by temporary allocations, with
#                      the same counts
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh

cfg=${1:?usage: tests/tools/heap.sh CONFIG}
cfg=${cfg%/}
top=$PWD
heap="$top/$cfg/heap"
events="$top/$cfg/tests/malloc_events"
preload="$top/build/libtelltale-malloc.so"
source="$top/tests/clients/heap_target.c"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

if ! cc -O0 -g -fno-omit-frame-pointer "$source" -o target 2>cc.err; then
  fail compile "$(head -3 cc.err)"
  finish
fi
TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/a.log LD_PRELOAD="$preload" ./target 1
TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/b.log LD_PRELOAD="$preload" ./target 2
TELLTALE_FILE=$PWD/n.log LD_PRELOAD="$preload" ./target 1
"$heap" --stacks a.log >a.txt 2>a.err
r=$?

# section FILE TITLE -- the rows of a report's section
section() { awk -v t="$2" 'index($0, t) == 1 { on = 1; next } /^$/ { on = 0 } on' "$1"; }
# sites FILE TITLE -- "function value" for each site of a section
sites() { section "$1" "$2" | awk 'NF >= 3 && $1 ~ /^[0-9]+$/ { print $3, $1 }'; }
# summary FILE WORD -- the first number after WORD in the summary
summary() { awk -v w="$2" '$1 == w { print $2 ($2 ~ /^[0-9]/ ? "" : " " $3); exit }' "$1"; }
line() { grep -n "SITE $1" "$source" | cut -d: -f1; }

expect="manySmall 100
temporaries 50
growRealloc 10
bigBlocks 5
plantedLeak 3"
got=$(sites a.txt "MOST ALLOCATIONS")
[ $r = 0 ] && [ "$got" = "$expect" ] && ok sites-allocations ||
  fail sites-allocations "exit $r: $(echo $got) $(head -2 a.err)"
expect="bigBlocks 50000
temporaries 5000
growRealloc 3520
manySmall 2400
plantedLeak 231"
got=$(sites a.txt "MOST BYTES ALLOCATED")
[ "$got" = "$expect" ] && ok sites-bytes || fail sites-bytes "$(echo $got)"
got=$(sites a.txt "MOST BYTES LIVE AT THE PEAK")
[ "$got" = "$(printf 'bigBlocks 50000\nplantedLeak 231')" ] && [ "$(summary a.txt peak)" = "heap 50231" ] &&
  ok sites-peak || fail sites-peak "$(echo $got); summary $(summary a.txt peak)"
got=$(sites a.txt "MOST TEMPORARY ALLOCATIONS")
[ "$got" = "$(printf 'temporaries 50\ngrowRealloc 10\nmanySmall 1\nbigBlocks 1')" ] && ok sites-temporary ||
  fail sites-temporary "$(echo $got)"
got="$(summary a.txt allocations) $(summary a.txt temporary) $(summary a.txt leaked)"
[ "$got" = "168 62 231" ] && grep -q "61151 bytes" a.txt && grep -q "231 bytes in 3 blocks" a.txt &&
  ok summary || fail summary "allocations temporary leaked: $got"

leak=$(section a.txt "LEAKS")
if echo "$leak" | grep -q "231 bytes in 3 blocks from  plantedLeak  .*heap_target.c:$(line plantedLeak)\$" &&
   echo "$leak" | sed -n 2p | grep -q "^ *main  .*heap_target.c:"; then
  ok leak-named
else
  fail leak-named "$(echo "$leak" | head -3)"
fi

printf '# the planted leak\n\nplanted*\n' >supp
"$heap" --suppress supp a.log >s.txt 2>s.err
leak=$(section s.txt "LEAKS")
[ $? = 0 ] && ! grep -q plantedLeak <<<"$leak" && grep -q "^LEAKS.*231 bytes from 1 stack suppressed" s.txt &&
  ok suppress || fail suppress "$(grep -A2 ^LEAKS s.txt)"
"$heap" --suppress supp --folded leaked a.log >sf.txt
"$heap" --suppress supp --diff a.log b.log >sd.txt
"$heap" --suppress supp --flame leaked -o sf.svg a.log
got="$(summary s.txt leaked) $(wc -l <sf.txt) $(awk '$1 == "leaked" { print $2, $3 }' sd.txt)"
[ "$got" = "0 0 0 0" ] && grep -q "leaked       0 bytes in 0 blocks (and 231 bytes in 3 blocks suppressed)" s.txt &&
  ! grep -q plantedLeak sf.svg && ok suppress-everywhere ||
  fail suppress-everywhere "summary, folded lines, diff old new: $got; $(grep leaked s.txt)"

"$heap" --diff a.log b.log >d.txt 2>d.err
r=$?
changed=$(section d.txt "CALL SITES THAT CHANGED" | awk '{ print $7, $1, $2, $3 }' | sort)
[ $r = 0 ] && [ "$changed" = "$(printf 'manySmall 100 200 +100\ntemporaries 50 100 +50')" ] &&
  ok diff || fail diff "exit $r: $(echo $changed) $(head -2 d.err)"

fsum() { "$heap" --folded "$1" a.log | awk '{ s += $NF } END { print s + 0 }'; }
got="$(fsum allocations) $(fsum bytes) $(fsum leaked) $(fsum temporary) $(fsum peak)"
"$heap" --folded leaked a.log >f.txt
[ "$got" = "168 61151 231 62 50231" ] && grep -q "main;plantedLeak 3\$" <("$heap" --folded a.log) &&
  [ "$(wc -l <f.txt)" = 1 ] && ok folded || fail folded "sums $got; $(head -2 f.txt)"

"$heap" --flame leaked -o flame.svg a.log && "$heap" --chart a.log >chart.svg &&
  "$heap" --pprof -o a.pb.gz a.log
r=$?
wellformed() { python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$1" 2>&1; }
[ $r = 0 ] && [ -z "$(wellformed flame.svg)" ] && [ -z "$(wellformed chart.svg)" ] &&
  grep -q plantedLeak flame.svg && grep -q target chart.svg && ok writers ||
  fail writers "exit $r: $(wellformed flame.svg | tail -1) $(wellformed chart.svg | tail -1)"
if [ -x "$top/build/pprof/pprof" ]; then
  got=$("$top/build/pprof/pprof" -top -sample_index=leaked a.pb.gz 2>&1 | awk '$NF == "plantedLeak" { print $1 }')
  "$heap" --suppress supp --pprof -o s.pb.gz a.log
  sgot=$("$top/build/pprof/pprof" -top -sample_index=leaked s.pb.gz 2>&1 | awk '$NF == "plantedLeak" { print $1 }')
  [ "$got" = 231B ] && [ -z "$sgot" ] && ok pprof-leaked || fail pprof-leaked "pprof -top: '$got', suppressed '$sgot'"
  cat >inl.c <<'EOF'
#include <stdlib.h>
static inline __attribute__((always_inline)) void *make(size_t n) { return malloc(n); }
__attribute__((noinline)) void *outer(size_t n) { void *p = make(n); __asm__ volatile("" ::: "memory"); return p; }
int main(void) { for (int i = 0; i < 7; i++) free(outer(100 + (size_t)i)); return 0; }
EOF
  cc -O2 -g -fno-omit-frame-pointer inl.c -o inl &&
    TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/inl.log LD_PRELOAD="$preload" ./inl &&
    "$heap" --pprof -o inl.pb.gz inl.log
  got=$("$top/build/pprof/pprof" -traces inl.pb.gz 2>&1 | awk '/^ *721B / { on = 1 } on { $1 = $1; print } /^---/ { on = 0 }' |
        sed -n '1,3p' | tr '\n' ';')
  [ "$got" = "721B make (inline);outer;main;" ] && ok pprof-inlined || fail pprof-inlined "pprof -traces: '$got'"
  cat >rec.c <<'EOF'
#include <stdlib.h>
void *keep;
__attribute__((noinline)) void f(int n) { if (n == 0) { keep = malloc(33); return; } f(n - 1); __asm__ volatile("" ::: "memory"); }
int main(void) { f(3); free(keep); return 0; }
EOF
  cc -O0 -g -fno-omit-frame-pointer rec.c -o rec &&
    TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/rec.log LD_PRELOAD="$preload" ./rec &&
    "$heap" --pprof -o rec.pb.gz rec.log
  got=$("$top/build/pprof/pprof" -traces rec.pb.gz 2>&1 | awk '/^ *33B / { on = 1 } on { $1 = $1; print } /^---/ { on = 0 }' |
        sed -n '1,5p' | tr '\n' ';')
  [ "$got" = "33B f;f;f;f;main;" ] && ok pprof-recursive || fail pprof-recursive "pprof -traces: '$got'"
else
  echo "skip pprof-leaked, pprof-inlined, pprof-recursive: build/pprof/pprof is not built (.ci/install builds it)"
fi

"$heap" n.log >n.txt 2>n.err
got="$(summary n.txt allocations) $(summary n.txt temporary) $(summary n.txt leaked)"
[ "$got" = "168 62 231" ] && [ "$(sites n.txt "MOST ALLOCATIONS")" = "[unknown] 168" ] &&
  grep -q "none recorded" n.txt && ok no-stacks || fail no-stacks "$got: $(sites n.txt "MOST ALLOCATIONS")"

threads="$top/build/tests/malloc_threads"
TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/th.log LD_PRELOAD="$preload" "$threads" 20000 >th.expected
TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/th0.log LD_PRELOAD="$preload" "$threads" 0 >/dev/null
"$heap" th.log >th.txt 2>th.err
"$heap" th0.log >th0.txt 2>&1
own=$(awk '$1 != "free" { s += $2 } END { print s }' th.expected)
got=$(( $(summary th.txt allocations) - $(summary th0.txt allocations) ))
[ "$got" = "$own" ] && grep -q "(0 of blocks never seen allocated)" th.txt &&
  [ "$(grep leaked th.txt)" = "$(grep leaked th0.txt)" ] && ok threads ||
  fail threads "allocations $got, the program's $own; $(grep -E 'frees|leaked' th.txt | tr '\n' ' ') $(head -1 th.err)"
"$top/$cfg/eventcnv" th.log >th.events 2>th.cnv
status=$?
starts=$(grep -c ' ThreadStart ' th.events)
exits=$(grep -c ' ThreadExit ' th.events)
[ $status = 0 ] && [ "$starts" = $((exits + 1)) ] && [ "$starts" -ge 5 ] && ok threads-ended ||
  fail threads-ended "eventcnv exit $status, $starts ThreadStart, $exits ThreadExit: $(head -1 th.cnv)"

TELLTALE_FILE=skew.log "$events" skew >/dev/null
"$heap" skew.log >k.txt 2>k.err
[ $? = 0 ] && grep -q "frees        8 (1 of blocks never seen allocated)" k.txt &&
  grep -q "leaked       0 bytes in 0 blocks" k.txt && ok skew-order ||
  fail skew-order "$(grep -E 'frees|leaked' k.txt)"

{ TELLTALE_FILE=$PWD/killed.log LD_PRELOAD="$preload" bash -c 'echo x >/dev/null; kill -KILL $$'; } 2>/dev/null
"$heap" killed.log >kl.txt 2>kl.err
r=$?
[ $r = 0 ] && grep -q "killed.log: the stream did not end cleanly" kl.err &&
  grep -q "events were recovered from killed.log.live" kl.err &&
  [ "$(summary kl.txt allocations)" -gt 0 ] && ok unclean ||
  fail unclean "exit $r: $(head -2 kl.err)"
{ TELLTALE_MAP=off TELLTALE_FILE=$PWD/killed2.log LD_PRELOAD="$preload" bash -c 'echo x >/dev/null; kill -KILL $$'; } 2>/dev/null
"$heap" killed2.log >kl.txt 2>kl.err
r=$?
[ $r = 1 ] && grep -q "held in its buffers .* are lost: killed2.log.live, from which they are recovered, is not there" kl.err &&
  ! grep -q "no allocation events" kl.err && ok unclean-lost || fail unclean-lost "exit $r: $(head -2 kl.err)"
"$top/$cfg/eventcnv" --format telltale -o killed2.arc killed2.log 2>/dev/null
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[19] |= 2; open(sys.argv[2], "wb").write(b)' \
  killed2.arc flag.arc
"$heap" flag.arc >fl.txt 2>fl.err
r=$?
[ $r != 0 ] && grep -q "offset 19: header damaged: its flags byte is 0x02" fl.err && ! grep -q recovered fl.txt &&
  ! grep -q "were recovered" fl.err && ok archive-flag || fail archive-flag "exit $r: $(head -2 fl.err)"

TELLTALE_FILE=$PWD/true.log LD_PRELOAD="$preload" /bin/true
mkdir pool && (cd pool && "$top/build/examples/pool" >/dev/null 2>&1)
why=""
for log in true.log pool/telltale.log; do
  [ -e $log ] || { why="$why $log was not written;"; continue; }
  "$heap" $log >na.txt 2>na.err
  r=$?
  [ $r = 0 ] && grep -q "$log: the log holds no allocation events: it was not written by libtelltale-malloc.so" na.err &&
    ! grep -q "unknown site" na.txt || why="$why $log exit $r: $(head -1 na.err) $(grep stacks na.txt);"
done
[ -z "$why" ] && ok no-allocations || fail no-allocations "$why"

cp target changed
TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/changed.log LD_PRELOAD="$preload" ./changed 1
touch changed
"$heap" changed.log >ch.txt 2>ch.err
r=$?
[ $r = 0 ] && [ "$(grep -c "changed was changed after the log began, so its frames may be named wrongly" ch.err)" = 1 ] &&
  ! grep -q "changed after" a.err && ok changed-file || fail changed-file "exit $r: $(head -2 ch.err) $(head -1 a.err)"

cp a.log self.log
ln -s self.log self-link.log
sum=$(cksum <self.log)
"$heap" --pprof -o self.log self.log 2>self.err; u=$?
"$heap" --folded -o self-link.log self.log 2>>self.err; u="$u $?"
"$heap" --diff -o ./self.log a.log self.log 2>>self.err; u="$u $?"
[ "$u" = "2 2 2" ] && [ "$(cksum <self.log)" = "$sum" ] &&
  grep -q "^telltale-heap: -o self.log: it is a log to read: writing it would destroy the log" self.err && ok output-is-input ||
  fail output-is-input "exit statuses $u: $(head -1 self.err)"

cp a.log damaged.log
printf '\377\377\377\377\377\377\377\377' | dd of=damaged.log bs=1 seek=$(( $(stat -c %s a.log) - 500 )) conv=notrunc 2>/dev/null
"$heap" damaged.log >dm.txt 2>dm.err
r=$?
[ $r = 1 ] && grep -q "^telltale-heap: damaged.log: reading stopped at the damage at offset [0-9]" dm.err &&
  ! grep -q "died" dm.err && ok damaged || fail damaged "exit $r: $(cat dm.err)"

TELLTALE_FILE=$PWD/x.log LD_PRELOAD="$preload" bash -c ':; exec true'
"$heap" x.log.exec1 >x.txt 2>x.err
r=$?
[ $r = 0 ] && grep -q "x.log.exec1: the log ends where the program exec'd another" x.err &&
  ! grep -q "did not end cleanly" x.err && ok exec-end || fail exec-end "exit $r: $(head -2 x.err)"

size=$(stat -c %s a.log)
head -c $((size - 100)) a.log >cut.log
"$heap" cut.log >cut.txt 2>cut.err
r=$?
[ $r = 1 ] && grep -q "^telltale-heap: cut.log: offset [0-9]*: " cut.err && grep -q "^SUMMARY" cut.txt &&
  ok truncated || fail truncated "exit $r: $(head -2 cut.err)"

"$heap" --folded nonsense a.log >/dev/null 2>fn.err
r=$?
"$heap" --flame nonsense a.log >/dev/null 2>>fn.err
r="$r $?"
[ "$r" = "2 2" ] && grep -q "^telltale-heap: --folded: unknown value nonsense" fn.err &&
  grep -q "^telltale-heap: --flame: unknown value nonsense" fn.err && ok unknown-value ||
  fail unknown-value "exit $r: $(head -1 fn.err)"

cat >tie.c <<'EOF'
#include <stdlib.h>
void *keep[4];
static void twice(void)
{
  /* the two allocations tie: line 9 before line 10 */
  /* (a strcmp of "tie.c:10" and "tie.c:9" puts 10 first) */
  /* padding */
  /* padding */
  keep[0] = malloc(8);
  keep[1] = malloc(8);
}
int main(void) { twice(); free(keep[0]); free(keep[1]); return 0; }
EOF
cc -O0 -g -fno-omit-frame-pointer tie.c -o tie && TELLTALE_STACKS=8 TELLTALE_FILE=$PWD/tie.log LD_PRELOAD="$preload" ./tie
"$heap" tie.log >tie.txt 2>tie.err
got=$(section tie.txt "MOST ALLOCATIONS" | grep -o 'tie.c:[0-9]*' | tr '\n' ' ')
[ "$got" = "tie.c:9 tie.c:10 " ] && grep -q "allocations  2 calls" tie.txt && grep -q "leaked       0 bytes in 0 blocks" tie.txt &&
  ok ties || fail ties "'$got' $(grep -E 'calls|leaked' tie.txt)"
printf '#include <stdlib.h>\nint main(void) { return malloc(5) == 0; }\n' >one.c
cc -O0 -g one.c -o one && TELLTALE_FILE=$PWD/one.log LD_PRELOAD="$preload" ./one
"$heap" one.log >one.txt 2>one.err
grep -q "leaked       5 bytes in 1 block\$" one.txt && grep -q "5 bytes in 1 block from" one.txt &&
  ok plural || fail plural "$(grep -E 'calls|block' one.txt)"
cat >many.c <<'EOF'
#include <stdlib.h>
#define N 300000
static void *block[N];
int main(void)
{
  for (long i = 0; i < N; ++i)
    if ((block[i] = malloc(8 + i % 57)) == NULL)
      return 1;
  for (long i = 0; i < N; ++i) {
    long j = i * 7919 % N;
    if (j % 7 != 0)
      free(block[j]);
  }
  return 0;
}
EOF
cc -O0 -g many.c -o many && TELLTALE_FILE=$PWD/many.log LD_PRELOAD="$preload" ./many
"$heap" many.log >many.txt 2>many.err
r=$?
want=$(awk 'BEGIN { for (i = 0; i < 300000; ++i) { b = 8 + i % 57; all += b; if (i % 7 == 0) { leak += b; n++ } }
  printf "peak heap %d bytes; frees %d; leaked %d bytes in %d blocks", all, 300000 - n, leak, n }')
got="$(grep -o 'peak heap  *[0-9]* bytes' many.txt | tr -s ' '); $(grep -o 'frees  *[0-9]*' many.txt | tr -s ' '); $(grep -o 'leaked  *[0-9]* bytes in [0-9]* blocks' many.txt | tr -s ' ')"
[ $r = 0 ] && [ "$got" = "$want" ] && grep -q "(0 of blocks never seen allocated)" many.txt &&
  ok many-live || fail many-live "exit $r: '$got', not '$want' $(head -2 many.err)"

u=""
"$heap" --help >/dev/null; u="$u $?"
"$heap" --nonsense a.log 2>/dev/null; u="$u $?"
"$heap" --top x a.log 2>/dev/null; u="$u $?"
"$heap" --folded=nonsense a.log 2>/dev/null; u="$u $?"
"$heap" 2>/dev/null; u="$u $?"
echo "not a log" >junk.log
"$heap" junk.log >/dev/null 2>junk.err; u="$u $?"
"$heap" missing.log >/dev/null 2>/dev/null; u="$u $?"
[ "$u" = " 0 2 2 2 2 1 1" ] && grep -q "^telltale-heap: junk.log: " junk.err && ok usage ||
  fail usage "exit statuses$u: $(head -1 junk.err)"

# Two libraries of the same size and layout, so that B is most often
# mapped where A was; one call site in main and one in phase, so that
# their stacks differ only if the addresses do.
for lib in A B; do
  printf '#include <stdlib.h>\nvoid *siteOf%s(size_t n) { return malloc(n); }\n' $lib >lib$lib.c
  cc -O0 -g -fno-omit-frame-pointer -fPIC -shared lib$lib.c -o lib$lib.so
done
cat >dl.c <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
typedef void *(*Alloc)(size_t);
static void *keep[8];
__attribute__((noinline)) static void *use(Alloc f, size_t n) { return f(n); }
static void phase(const char *path, const char *name, int count, size_t size, int leak)
{
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  Alloc f = h != NULL ? (Alloc)dlsym(h, name) : NULL;
  if (f == NULL) { fprintf(stderr, "%s\n", dlerror()); exit(1); }
  dlclose(dlopen(path, RTLD_NOW | RTLD_NOLOAD));      /* a reference dropped, nothing unmapped */
  printf("%s %p\n", name, (void *)f);
  for (int i = 0; i < count; ++i)
    keep[i] = use(f, size);
  for (int i = leak; i < count; ++i)
    free(keep[i]);
  dlclose(h);
}
int main(int argc, char **argv)
{
  static const char *const names[] = {"siteOfA", "siteOfB"};
  static const int counts[] = {3, 5}, leaks[] = {1, 0};
  static const size_t sizes[] = {100, 200};
  for (int k = 0; k < 2 && k + 1 < argc; ++k)
    phase(argv[k + 1], names[k], counts[k], sizes[k], leaks[k]);
  return 0;
}
EOF
cc -O0 -g -fno-omit-frame-pointer dl.c -o dl -ldl &&
  TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/dl.log LD_PRELOAD="$preload" ./dl $PWD/libA.so $PWD/libB.so >dl.out
where=$(awk '{ print $2 }' dl.out | uniq | wc -l)
[ "$where" = 1 ] && where="B at A's address" || where="B elsewhere than A"
"$heap" dl.log >dl.txt 2>dl.err
got="$(sites dl.txt "MOST ALLOCATIONS" | grep siteOf | sort | tr '\n' ' ')"
leak=$(section dl.txt "LEAKS")
[ "$got" = "siteOfA 3 siteOfB 5 " ] && echo "$leak" | grep -q "^ *100 bytes in 1 block from  siteOfA  .*libA.c:2\$" &&
  [ "$(echo "$leak" | grep -c 'from  siteOf')" = 1 ] && ok "dlclose-reload ($where)" ||
  fail dlclose-reload "$where: '$got' $(echo "$leak" | grep -A1 siteOf) $(head -2 dl.err)"
if [ -x "$top/build/pprof/pprof" ]; then
  "$heap" --pprof -o dl.pb.gz dl.log
  got=$("$top/build/pprof/pprof" -top -sample_index=allocations dl.pb.gz 2>&1 | awk '$NF ~ /^siteOf/ { print $NF, $1 }' | sort | tr '\n' ' ')
  [ "$got" = "siteOfA 3 siteOfB 5 " ] && ok dlclose-pprof || fail dlclose-pprof "pprof -top: '$got'"
else
  echo "skip dlclose-pprof: build/pprof/pprof is not built (.ci/install builds it)"
fi
unmaps=$("$top/$cfg/eventcnv" dl.log 2>/dev/null | grep -c 'MapUnmap.*start=')
"$top/$cfg/replay" -q dl.log >dl-replay.txt 2>&1
r=$?
[ "$unmaps" = 2 ] && [ $r = 0 ] && ok dlclose-read || fail dlclose-read "MapUnmap printed $unmaps, replay exit $r: $(head -2 dl-replay.txt)"

# Threads allocating through libC all along while main loads and unloads
# A and B 40 times each (their destructors allocate inside dlclose), and
# dlcloses D from an atexit handler and E from a destructor after the
# session ended.
printf '__attribute__((destructor)) static void bye%s(void) { free(malloc(7)); }\n' A >>libA.c
printf '__attribute__((destructor)) static void bye%s(void) { free(malloc(7)); }\n' B >>libB.c
for lib in A B C D E; do
  printf '#include <stdlib.h>\nvoid *siteOf%s(size_t n) { return malloc(n); }\n' $lib >lib$lib.c.new
  [ -e lib$lib.c ] && tail -n +3 lib$lib.c >>lib$lib.c.new
  mv lib$lib.c.new lib$lib.c
  cc -O0 -g -fno-omit-frame-pointer -fPIC -shared lib$lib.c -o lib$lib.so
done
cat >dlt.c <<'EOF'
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
typedef void *(*Alloc)(size_t);
static Alloc workerAlloc;
static void *exitHandle, *lateHandle;
static _Atomic int done;
static long made[2];
static void *worker(void *arg)
{
  for (long *n = arg; !done; ++*n)
    free(workerAlloc(32));
  return NULL;
}
static Alloc load(const char *path, const char *name, void **h)
{
  Alloc f = (*h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL ? (Alloc)dlsym(*h, name) : NULL;
  if (f == NULL) { fprintf(stderr, "%s\n", dlerror()); exit(1); }
  return f;
}
static void phase(const char *path, const char *name, int count)
{
  void *keep[8], *h;
  Alloc f = load(path, name, &h);
  for (int i = 0; i < count; ++i)
    keep[i] = f(16);
  for (int i = 0; i < count; ++i)
    free(keep[i]);
  dlclose(h);
}
static void atExit(void) { dlclose(exitHandle); }
__attribute__((destructor)) static void late(void) { dlclose(lateHandle); }
int main(int argc, char **argv)
{
  pthread_t t[2];
  void *h;
  (void)argc;
  workerAlloc = load(argv[3], "siteOfC", &h);
  (void)load(argv[4], "siteOfD", &exitHandle);
  (void)load(argv[5], "siteOfE", &lateHandle);
  atexit(atExit);
  for (int k = 0; k < 2; ++k)
    pthread_create(&t[k], NULL, worker, &made[k]);
  for (int k = 0; k < 40; ++k) {
    phase(argv[1], "siteOfA", 3);
    phase(argv[2], "siteOfB", 5);
  }
  done = 1;
  for (int k = 0; k < 2; ++k)
    pthread_join(t[k], NULL);
  printf("siteOfC %ld\n", made[0] + made[1]);
  return 0;
}
EOF
cc -O0 -g -fno-omit-frame-pointer dlt.c -o dlt -pthread -ldl &&
  TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/dlt.log LD_PRELOAD="$preload" ./dlt $PWD/libA.so $PWD/libB.so \
    $PWD/libC.so $PWD/libD.so $PWD/libE.so >dlt.out
r=$?
"$heap" --top 40 dlt.log >dlt.txt 2>dlt.err
got="$(sites dlt.txt "MOST ALLOCATIONS" | grep -E 'siteOf|bye' | sort | tr '\n' ' ')"
expect="byeA 40 byeB 40 siteOfA 120 siteOfB 200 $(cat dlt.out) "
[ $r = 0 ] && [ "$got" = "$expect" ] && grep -q "(0 of blocks never seen allocated)" dlt.txt && [ ! -s dlt.err ] &&
  ok dlclose-threads || fail dlclose-threads "exit $r: '$got' against '$expect' $(grep frees dlt.txt) $(head -2 dlt.err)"

# Two threads each loading, using and unloading its own library 300
# times, so that A and B take each other's addresses while the other
# thread allocates, and stacks are defined in hundreds of epochs.
cat >dlr.c <<'EOF'
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
typedef void *(*Alloc)(size_t);
static const char *paths[2], *const names[2] = {"siteOfA", "siteOfB"};
static void *cycle(void *arg)
{
  int k = (int)(size_t)arg;
  for (int round = 0; round < 300; ++round) {
    void *h = dlopen(paths[k], RTLD_NOW | RTLD_LOCAL), *keep[4];
    Alloc f = h != NULL ? (Alloc)dlsym(h, names[k]) : NULL;
    if (f == NULL) { fprintf(stderr, "%s\n", dlerror()); exit(1); }
    for (int i = 0; i < 4; ++i)
      keep[i] = f(24);
    for (int i = 0; i < 4; ++i)
      free(keep[i]);
    dlclose(h);
  }
  return NULL;
}
int main(int argc, char **argv)
{
  pthread_t t[2];
  (void)argc;
  for (int k = 0; k < 2; ++k) {
    paths[k] = argv[k + 1];
    pthread_create(&t[k], NULL, cycle, (void *)(size_t)k);
  }
  for (int k = 0; k < 2; ++k)
    pthread_join(t[k], NULL);
  return 0;
}
EOF
cc -O0 -g -fno-omit-frame-pointer dlr.c -o dlr -pthread -ldl &&
  TELLTALE_STACKS=16 TELLTALE_FILE=$PWD/dlr.log LD_PRELOAD="$preload" ./dlr $PWD/libA.so $PWD/libB.so
r=$?
"$heap" --top 40 dlr.log >dlr.txt 2>dlr.err
got="$(sites dlr.txt "MOST ALLOCATIONS" | grep -E 'siteOf|bye|unknown' | sort | tr '\n' ' ')"
[ $r = 0 ] && [ "$got" = "byeA 300 byeB 300 siteOfA 1200 siteOfB 1200 " ] &&
  grep -q "(0 of blocks never seen allocated)" dlr.txt && [ ! -s dlr.err ] &&
  ok dlclose-race || fail dlclose-race "exit $r: '$got' $(grep frees dlr.txt) $(head -2 dlr.err)"

if command -v c++ >/dev/null && [ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ]; then
  cat >tree.cc <<'EOF'
struct Tree {
  Tree *left = nullptr;
  __attribute__((noinline)) void grow(int n) { for (int i = 0; i < n; ++i) { Tree *t = new Tree; t->left = left; left = t; } }
};
int main() { Tree root; root.grow(300); while (root.left) { Tree *t = root.left; root.left = t->left; delete t; } }
EOF
  c++ -O1 -g -fno-omit-frame-pointer tree.cc -o tree 2>tree.err &&
    TELLTALE_STACKS=16:dwarf TELLTALE_FILE=$PWD/tree.log LD_PRELOAD="$preload" ./tree
  "$heap" tree.log >tree.txt 2>>tree.err
  got=$(section tree.txt "MOST ALLOCATIONS" | awk '$1 == 300 { $1 = $2 = ""; print }')
  case $got in
    *"Tree::grow(int) "*tree.cc:3) ok cxx-site ;;
    *) bad cxx-site "the site of 300: '$got' $(head -1 tree.err)" ;;
  esac
  "$heap" --no-default-suppressions tree.log >tree-all.txt 2>/dev/null
  pool=$(summary tree-all.txt leaked)
  if [ "${pool:-0}" -gt 0 ] && section tree-all.txt LEAKS | grep -q "libstdc++.*" &&
     section tree-all.txt LEAKS | grep -q "call_init" && [ "$(summary tree.txt leaked)" = 0 ] &&
     grep -q "leaked       0 bytes in 0 blocks (and $pool bytes in 1 block suppressed)" tree.txt; then
    ok cxx-pool
  else
    fail cxx-pool "leaked $(summary tree.txt leaked), $pool with --no-default-suppressions: $(section tree-all.txt LEAKS | head -2)"
  fi
else
  echo "skip cxx-site, cxx-pool: no C++ compiler, or no libunwind.so.8 (Debian libunwind8)"
fi

if command -v sqlite3 >/dev/null && [ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ]; then
  TELLTALE_STACKS=32:dwarf TELLTALE_FILE=$PWD/sq.log LD_PRELOAD="$preload" sqlite3 :memory: \
    "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, hex(randomblob(100))); CREATE INDEX i ON t(b);" >/dev/null
  why=""
  for mode in --stacks --folded --flame --pprof --chart; do
    "$heap" $mode sq.log >sq.out 2>sq.err || why="$why $mode exit $?: $(head -1 sq.err);"
    [ -s sq.err ] && why="$why $mode said: $(head -1 sq.err);"
  done
  "$heap" sq.log >sq.txt 2>/dev/null
  grep -q "(0 of blocks never seen allocated)" sq.txt || why="$why $(grep frees sq.txt)"
  [ -z "$why" ] && ok system-program || fail system-program "$why"
else
  echo "skip system-program: no sqlite3, or no libunwind.so.8 (Debian libunwind8)"
fi

if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
  heaptrack -o ht ./target 1 >/dev/null 2>&1
  # "function count" of heaptrack's MOST CALLS list, in its order
  theirs=$(heaptrack_print -f ht.* 2>/dev/null | awk '
    /^MOST CALLS TO ALLOCATION FUNCTIONS/ { on = 1; next }
    /^MOST / { on = 0 }
    on && / calls to allocation functions / { n = $1; getline; if ($1 != "") print $1, n }' |
    grep -v '^0x' | head -5)
  mine=$(sites a.txt "MOST ALLOCATIONS" | head -5)
  [ -n "$theirs" ] && [ "$theirs" = "$mine" ] && ok heaptrack-agree ||
    fail heaptrack-agree "heaptrack: $(echo $theirs); heap: $(echo $mine)"
  # "function count" of its MOST TEMPORARY list, sorted (ties in any order)
  theirs=$(heaptrack_print -f ht.* 2>/dev/null | awk '
    /^MOST TEMPORARY ALLOCATIONS/ { on = 1; next }
    /^MOST / { on = 0 }
    on && / temporary allocations of .* from$/ { n = $1; getline; print $1, n }' |
    grep -v '^0x' | sort)
  mine=$(sites a.txt "MOST TEMPORARY ALLOCATIONS" | sort)
  [ -n "$theirs" ] && [ "$theirs" = "$mine" ] && ok heaptrack-temporary ||
    fail heaptrack-temporary "heaptrack: $(echo $theirs); heap: $(echo $mine)"
else
  echo "skip heaptrack-agree: heaptrack is not installed (Debian heaptrack)"
fi

# archive: a.log (stacks) made an archive with zstd blocks (eventcnv
# --format telltale --zstd, design/tools.txt .zstd) gives the same
# report, but for the file's name, and the same folded stacks
if "$top/$cfg/eventcnv" --format telltale --zstd -o z.tt a.log 2>z.err &&
   "$top/$cfg/eventcnv" --header z.tt 2>/dev/null | grep -q "^zstd  "; then
  "$heap" --stacks z.tt 2>z.err | sed 's/z\.tt/a.log/' >z.txt
  "$heap" --folded a.log >a.folded 2>/dev/null
  "$heap" --folded z.tt >z.folded 2>/dev/null
  if cmp -s a.txt z.txt && cmp -s a.folded z.folded && [ -s a.folded ]; then
    ok archive
  else
    fail archive "the reports differ: $(diff a.txt z.txt | head -3 | tr '\n' ' ')"
  fi
else
  fail archive "no archive with zstd blocks: $(head -2 z.err)"
fi

finish
