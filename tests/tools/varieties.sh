#!/usr/bin/env bash
# tests/tools/varieties.sh -- what each variety compiles to, and what it logs
#
# .design: design/runtime.txt .sol.variety design/registry.txt .gen.check .reg.always
#
# Usage: tests/tools/varieties.sh CONFIG [CC]     e.g. tests/tools/varieties.sh build gcc
# CONFIG is a build directory (build, build/clang, ...) whose examples and
# eventcnv are built; CC is its compiler (default: gcc for build, clang
# otherwise).  The generated test registry (build/gen/test) must be built.
#
# Covers:
#   off-paw-is-ret         EVENT_PAW(TestPAW, ...) at -DEVENT_VARIETY=0 -O2
#                          compiles to a bare ret (an endbr64 allowed)
#   off-args-not-evaluated an argument with a side effect leaves no code
#   off-wrong-type-fails   a struct where an address belongs still fails to
#                          compile in variety 0: arguments are type-checked
#   wrong-format-fails     EVENT_W(TestPAW, ...) fails, naming TestPAW
#   retired-fails          EVENT_W(TestRetired, ...), a retired event of
#                          format W, fails in every variety, saying that
#                          TestRetired is retired
#   optimised-drops-checking  an always=FALSE event is a bare ret at
#                          variety 1, and an always=TRUE one is not
#   checking-keeps-checking   the always=FALSE event emits at variety 2
#   example-checking       the checking example logs PoolVerify and PoolAlloc
#   example-optimised      the optimised one logs PoolAlloc but no PoolVerify
#   example-off            the off one writes no log file at all
#   off-no-runtime         nm: the off example defines no name of the
#                          runtime but the public functions' stubs
#                          (event.h's, plinth.h's) and its registry, and
#                          no sigaction or signal (the wrappers)
#   off-no-handler-no-file strace: the off example installs no
#                          fatal-signal handler, opens no file but the
#                          shared libraries, and leaves none
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh

cfg=${1:?usage: tests/tools/varieties.sh CONFIG [CC]}
cfg=${cfg%/}
cc=${2:-}
if [ -z "$cc" ]; then
  case "$cfg" in
    build) cc=gcc ;;
    *) cc=clang ;;
  esac
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f build/gen/test/eventgen.h ]; then
  fail setup "build/gen/test/eventgen.h is missing (run ninja first)"
  finish
fi
cflags=(-std=c11 -O2 -Wall -Wextra -Werror -ffunction-sections
        -Ibuild/include -Isrc/event -Isrc/plinth -Ibuild/gen/test)

# compileFn VARIETY NAME BODY -- compile "void NAME(void *p, EventA a,
# EventW w, int *n) { BODY }" to $tmp/NAME.o; the compiler's messages go
# to $tmp/NAME.err.  Returns the compiler's status.
compileFn() {
  local variety=$1 name=$2 body=$3
  cat >"$tmp/$name.c" <<EOF
#include <telltale/event.h>
struct NotAnAddress { int x; };
void $name(void *p, EventA a, EventW w, int *n);
void $name(void *p, EventA a, EventW w, int *n)
{
  (void)p; (void)a; (void)w; (void)n;
  $body
}
EOF
  "$cc" "${cflags[@]}" -DEVENT_VARIETY="$variety" -c "$tmp/$name.c" -o "$tmp/$name.o" \
    >"$tmp/$name.err" 2>&1
}

# instructions NAME -- the mnemonics of function NAME in $tmp/NAME.o,
# one a line, without the padding after the end
instructions() {
  objdump -d --no-show-raw-insn "$tmp/$1.o" |
    awk -v fn="<$1>:" '
      $2 == fn { inside = 1; next }
      inside && /^$/ { inside = 0 }
      inside && /^ *[0-9a-f]+:/ { sub(/^ *[0-9a-f]+:[ \t]*/, ""); print $1 }' |
    grep -Ev '^(nop|nopw|nopl|xchg|data16|cs)$'
}

# onlyRet NAME -- the function is a bare ret, perhaps after endbr64
onlyRet() {
  local insns
  insns=$(instructions "$1" | grep -v '^endbr64$' | tr '\n' ' ')
  [ "$insns" = "ret " ] || [ "$insns" = "retq " ]
}

# --- object code ---------------------------------------------------------

if ! compileFn 0 off_paw 'EVENT_PAW(TestPAW, p, a, w);'; then
  fail off-paw-is-ret "does not compile: $(head -3 "$tmp/off_paw.err")"
elif onlyRet off_paw; then
  ok off-paw-is-ret
else
  fail off-paw-is-ret "body is: $(instructions off_paw | tr '\n' ' ')"
fi

if ! compileFn 0 off_side 'EVENT_PAW(TestPAW, p, a, (EventW)++*n);'; then
  fail off-args-not-evaluated "does not compile: $(head -3 "$tmp/off_side.err")"
elif onlyRet off_side; then
  ok off-args-not-evaluated
else
  fail off-args-not-evaluated "body is: $(instructions off_side | tr '\n' ' ')"
fi

if compileFn 0 off_wrong 'struct NotAnAddress s = {1}; EVENT_PAW(TestPAW, p, s, w);'; then
  fail off-wrong-type-fails "a struct passed as an address compiled in variety 0"
elif ! grep -qi 'incompatible' "$tmp/off_wrong.err"; then
  fail off-wrong-type-fails "failed, but not on the type: $(head -3 "$tmp/off_wrong.err")"
else
  ok off-wrong-type-fails
fi

if compileFn 2 wrong_format 'EVENT_W(TestPAW, w);'; then
  fail wrong-format-fails "EVENT_W(TestPAW, ...) compiled"
elif ! grep -q TestPAW "$tmp/wrong_format.err"; then
  fail wrong-format-fails "the message does not name TestPAW: $(head -3 "$tmp/wrong_format.err")"
else
  ok wrong-format-fails
fi

why=""
for v in 0 1 2; do
  if compileFn $v retired_$v 'EVENT_W(TestRetired, w);'; then
    why="$why variety $v compiled it;"
  elif ! grep -q "TestRetired is retired" "$tmp/retired_$v.err"; then
    why="$why variety $v: $(grep -m1 error "$tmp/retired_$v.err");"
  fi
done
[ -z "$why" ] && ok retired-fails || fail retired-fails "$why"

if ! compileFn 1 opt_checking 'EVENT_W(TestChecking, w);' ||
   ! compileFn 1 opt_always 'EVENT_W(TestW, w);'; then
  fail optimised-drops-checking "does not compile: $(cat "$tmp"/opt_*.err | head -3)"
elif ! onlyRet opt_checking; then
  fail optimised-drops-checking "TestChecking at variety 1: $(instructions opt_checking | tr '\n' ' ')"
elif onlyRet opt_always; then
  fail optimised-drops-checking "TestW (always) compiled to nothing at variety 1"
else
  ok optimised-drops-checking
fi

if ! compileFn 2 chk_checking 'EVENT_W(TestChecking, w);'; then
  fail checking-keeps-checking "does not compile: $(head -3 "$tmp/chk_checking.err")"
elif onlyRet chk_checking; then
  fail checking-keeps-checking "TestChecking compiled to nothing at variety 2"
else
  ok checking-keeps-checking
fi

# --- the example in three varieties --------------------------------------

# count LOG NAME -- how many NAME events eventcnv counts in LOG (0 if none)
count() {
  "$cfg/eventcnv" --count "$1" 2>>"$tmp/eventcnv.err" |
    awk -v name="$2" '$2 == name { n = $1 } END { print n + 0 }'
}

# runExample NAME PROGRAM -- run PROGRAM with its log at $tmp/NAME/x.log
runExample() {
  mkdir -p "$tmp/$1"
  (cd "$tmp/$1" && TELLTALE_FILE="$tmp/$1/x.log" "$OLDPWD/$2" >/dev/null 2>"$tmp/$1.stderr")
}

if ! runExample checking "$cfg/examples/pool"; then
  fail example-checking "the example failed: $(head -3 "$tmp/checking.stderr")"
elif [ ! -s "$tmp/checking/x.log" ]; then
  fail example-checking "no log"
elif [ "$(count "$tmp/checking/x.log" PoolVerify)" -eq 0 ]; then
  fail example-checking "no PoolVerify events"
elif [ "$(count "$tmp/checking/x.log" PoolAlloc)" -eq 0 ]; then
  fail example-checking "no PoolAlloc events"
else
  ok example-checking
fi

if ! runExample optimised "$cfg/examples/pool-optimised"; then
  fail example-optimised "the example failed: $(head -3 "$tmp/optimised.stderr")"
elif [ ! -s "$tmp/optimised/x.log" ]; then
  fail example-optimised "no log"
elif [ "$(count "$tmp/optimised/x.log" PoolVerify)" -ne 0 ]; then
  fail example-optimised "PoolVerify (always FALSE) is in the log"
elif [ "$(count "$tmp/optimised/x.log" PoolAlloc)" -eq 0 ]; then
  fail example-optimised "no PoolAlloc events"
else
  ok example-optimised
fi

if ! runExample off "$cfg/examples/pool-off"; then
  fail example-off "the example failed: $(head -3 "$tmp/off.stderr")"
elif [ -n "$(ls -A "$tmp/off")" ]; then
  fail example-off "files were written: $(ls -A "$tmp/off" | tr '\n' ' ')"
else
  ok example-off
fi

# The off variety: nothing of telltale's runtime is left in the program
# (design/runtime.txt .sol.variety.off).  The names it may define: the
# public functions, each a stub; not even the registry's tables (its
# eventgen.c has no source and no tables), nor their docs.
header=$(find src include -name event.h 2>/dev/null | head -1)
plinth=$(find src include -name plinth.h 2>/dev/null | head -1)
allowed=$(grep -ohE 'TELLTALE_API [^(;]*[ *](Event|Plinth)[A-Za-z]+\(' "$header" "$plinth" |
          grep -oE '[A-Za-z]+\($' | tr -d '(' | sort -u)
extra=$(nm --defined-only "$cfg/examples/pool-off" | awk '{print $3}' |
        grep -E '^((Event|Plinth|event|plinth)[A-Z]|sigaction$|signal$)' | sort -u |
        while read -r n; do case " $(echo $allowed) " in *" $n "* | *" ${n%%_*} "*) ;; *) echo "$n" ;; esac; done)
if [ -z "$header" ] || [ -z "$plinth" ]; then
  fail off-no-runtime "event.h or plinth.h not found"
elif [ -n "$extra" ]; then
  fail off-no-runtime "$(echo "$extra" | wc -l) names of the runtime: $(echo $extra | cut -c1-200)"
elif ! strip -o "$tmp/off.stripped" "$cfg/examples/pool-off"; then
  fail off-no-runtime "strip failed"
elif strings "$tmp/off.stripped" | grep -q 'ArenaCreate\|over a region of memory'; then
  # (stripped: the debug info names the header's types, which is not the program)
  fail off-no-runtime "the registry's names or docs are in the program: $(strings "$tmp/off.stripped" | grep -m 2 'ArenaCreate\|over a region of memory' | tr '\n' ' ')"
else
  ok off-no-runtime
fi

if ! command -v strace >/dev/null 2>&1; then
  fail off-no-handler-no-file "strace is needed (.ci/install --quick installs it)"
else
  mkdir -p "$tmp/offstrace"
  (cd "$tmp/offstrace" && strace -f -qq -o "$tmp/off.strace" -e trace=rt_sigaction,open,openat,creat \
     "$OLDPWD/$cfg/examples/pool-off" >/dev/null 2>"$tmp/offstrace.err")
  r=$?
  handlers=$(grep -E 'rt_sigaction\(SIG(SEGV|BUS|ILL|FPE|ABRT|USR1|USR2|CHLD),' "$tmp/off.strace" | grep -v ', NULL, ' | head -3)
  files=$(grep -E 'open(at)?\(|creat\(' "$tmp/off.strace" | grep -vE '"[^"]*/(ld\.so\.cache|lib[^"/]*\.so[^"/]*)"' | head -3)
  if [ $r != 0 ]; then
    fail off-no-handler-no-file "strace or the example failed ($r): $(head -2 "$tmp/offstrace.err")"
  elif ! grep -q 'rt_sigaction\|open' "$tmp/off.strace"; then
    fail off-no-handler-no-file "strace saw no system call: $(head -2 "$tmp/off.strace")"
  elif [ -n "$handlers" ]; then
    fail off-no-handler-no-file "handlers: $handlers"
  elif [ -n "$files" ]; then
    fail off-no-handler-no-file "files opened: $files"
  elif [ -n "$(ls -A "$tmp/offstrace")" ]; then
    fail off-no-handler-no-file "files left: $(ls -A "$tmp/offstrace" | tr '\n' ' ')"
  else
    ok off-no-handler-no-file
  fi
fi

if [ -s "$tmp/eventcnv.err" ]; then
  fail eventcnv-quiet "eventcnv complained: $(head -3 "$tmp/eventcnv.err")"
else
  ok eventcnv-quiet
fi

finish
