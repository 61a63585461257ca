#!/usr/bin/env bash
# tests/tools/idioms.sh -- the idioms of real servers and runtimes lose nothing
#
# .design: design/tests.txt .test.trust design/plinth.txt .sol.death.limits
#          .sol.signal.level .sol.session .sol.fork .sol.exec
#
# Usage: tests/tools/idioms.sh CONFIG [REPEAT [CASE...]]   e.g. tests/tools/idioms.sh build 3
#
# Runs CONFIG/tests/idioms_client (tests/clients/idioms/client.c: a registry of
# its own, four kinds with string fields, every event numbered in its
# thread's sequence and counted in a page mapped shared) in a fresh
# directory per run, with 4 KiB buffers so that buffers switch often,
# and checks every log against the page with tests/clients/idioms/check.py:
# the counts exact, nothing dropped, eventcnv's exit 0 on each log.
# The cases (each an idiom):
#   term            SIGTERM from outside while emitting; the handler
#                   calls exit(3)                            exit 3
#   term-threads    the same, four workers emitting too      exit 3
#   segv-jmp        SIGSEGV on a sigaltstack, handled and left by
#                   siglongjmp 50 times, then more events    exit 0
#   alarm-jmp       SIGALRM timeouts (setitimer) left by siglongjmp
#                   while main emits, 200 a run              exit 0
#   cancel-deferred workers cancelled (deferred) and joined  exit 0
#   cancel-async    workers cancelled asynchronously         exit 0
#                   (a block a cancel cut in its write may be lost, if
#                   eventcnv names it: check.py --cut, .sol.cancel)
#   pthread-exit    main calls pthread_exit while workers
#                   emit, TELLTALE_WRITER=sync               exit 0
#   pthread-exit-async  the same, TELLTALE_WRITER=async      exit 0
#   plugin          a host that does not link telltale dlopens and
#                   dlcloses a plugin linked with libtelltale.so 3
#                   times, a thread that emitted through it exiting
#                   after each dlclose, then aborts          SIGABRT (134)
#                   (build/ only: libtelltale.so is built there)
#   spawn           posix_spawn, vfork+exec and fork children of an
#                   emitting parent, the default TELLTALE_FILE: every
#                   process's log found, never moved, replaced or
#                   truncated while it ran; another name said  exit 0
#   spawn-t, spawn-p  the same with TELLTALE_FILE=app.%t.log, app.%p.log
#   badlog          an empty file among three sound logs given to
#                   eventcnv: every sound event printed, the bad one
#                   named, exit nonzero
#   overflow        a thread with its own sigaltstack recurses until
#                   its stack runs out while three others emit, with
#                   two CPU-bound processes keeping the machine busy:
#                   the traceback shows nothing stamped after the
#                   failure it states, which is within 0.1 s of the
#                   deepest frame; the log every event       SIGSEGV (139)
# Every run is bounded: one not ended after 20 s (30 s under the
# sanitizers) is killed and reported as a hang, and a case stops after
# IDIOMS_MAX_HANGS hung runs (default 2; 0: never).  The racy cases
# run REPEAT times each (default 20), the others a few times.  CASE...
# runs those only ("threads": the cases with threads that ThreadSanitizer
# can follow; not pthread-exit, as under TSan a program whose main thread
# calls pthread_exit never ends, telltale or not: TSan's background
# thread lives on, with every signal blocked; nor cancel-async, as
# TSan's own runtime is not safe to cancel asynchronously: a thread
# cancelled inside an instrumented atomic store leaves TSan's lock held,
# and the others wait on it for ever, in TSan).  IDIOMS_KEEP=DIR keeps each failed run's directory there.
# Prints "ok NAME" or "FAIL NAME: why" per case, then
# "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/idioms.sh CONFIG [REPEAT [CASE...]]}
cfg=${cfg%/}
repeat=${2:-20}
shift $(( $# < 2 ? $# : 2 ))
few=$(( repeat < 3 ? repeat : 3 ))
case $cfg in */san|*/tsan) limit=30 ;; *) limit=20 ;; esac
maxhangs=${IDIOMS_MAX_HANGS:-2}
top=$PWD
client=$top/$cfg/tests/idioms_client
host=$top/$cfg/tests/idioms_host
plugin=$top/$cfg/tests/idioms_plugin.so
eventcnv=$top/$cfg/eventcnv
checker=$top/tests/clients/idioms/check.py
for f in "$client" "$eventcnv"; do
  [ -x "$f" ] || { fail setup "$f is not built"; finish; }
done
cases=("$@")
[ "${cases[*]:-}" = threads ] &&
  cases=(term-threads cancel-deferred)
tmp=$(mktemp -d)
burners=()
cleanup() {
  for b in "${burners[@]}"; do kill "$b" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -c 0
# The sanitizers' own handlers would take the faults before telltale.
export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:detect_stack_use_after_return=0
export TELLTALE_BUFFER=4096
unset TELLTALE_FILE TELLTALE_WRITER TELLTALE_MAP TELLTALE_DUMP

wanted() {   # wanted CASE -- is it to run?
  [ ${#cases[@]} = 0 ] && return 0
  local c
  for c in "${cases[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

# launch DIR ENV... -- ARGV...: start a program in DIR, its output in
# DIR/out and DIR/err; its pid in $pid
launch() {
  local d=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  (cd "$d" && exec env "${envs[@]}" IDIOMS_PAGE=page "$@" >out 2>err) &
  pid=$!
}

# waitfor SECONDS: wait for $pid; its exit status in $status, "hang" if it
# had not ended after SECONDS (then it is killed)
waitfor() {
  local i=0 limit=$(( $1 * 20 ))
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -ge $limit ]; then
      kill -9 "$pid" 2>/dev/null
      { wait "$pid"; } 2>/dev/null
      status="hang (killed after $1 s)"
      return
    fi
    sleep 0.05
  done
  { wait "$pid"; } 2>/dev/null
  status=$?
}

# verdict DIR STATUS WANT CHECK-ARGS...: echo why the run failed, or nothing
verdict() {
  local d=$1 got=$2 want=$3
  shift 3
  echo "$got" >"$d/status"
  if [ "$got" != "$want" ]; then
    echo "exit $got, not $want: $(grep -v '^ ' "$d/err" | head -2 | tr '\n' ' ')"
    # the logs are still checked: say what they lack too
  fi
  if ! python3 "$checker" "$eventcnv" "$d" "$@" >"$d/check" 2>&1; then
    echo "$(grep '^FAIL' "$d/check" | head -4 | cut -c1-400 | tr '\n' ' ')"
  fi
}

# plain DIR STATUS MODE [CHECK-ARGS...] -- run the client to its end
# (ENV from $runenv)
plain() {
  local d=$1 want=$2 mode=$3
  shift 3
  launch "$d" "${runenv[@]}" -- "$client" "$mode"
  waitfor $limit
  verdict "$d" "$status" "$want" "$@"
}

# term DIR MODE: kill -TERM from outside while it emits
term() {
  local d=$1 mode=$2 i
  launch "$d" "${runenv[@]}" -- "$client" "$mode"
  for i in $(seq 400); do grep -q ready "$d/out" 2>/dev/null && break; sleep 0.025; done
  sleep "0.0$((RANDOM % 5))$((RANDOM % 10))"
  kill -TERM "$pid" 2>/dev/null
  waitfor $limit
  verdict "$d" "$status" 3
}

# spawn DIR PATTERN: children of an emitting parent, TELLTALE_FILE PATTERN
# (empty: the default, telltale.log)
spawnrun() {
  local d=$1 pattern=$2
  if [ -n "$pattern" ]; then
    launch "$d" "${runenv[@]}" TELLTALE_FILE="$pattern" -- "$client" spawn
  else
    launch "$d" "${runenv[@]}" -- "$client" spawn
  fi
  waitfor $limit
  verdict "$d" "$status" 0 --procs "${pattern:-telltale.log}" "$d/err"
}

pluginrun() {
  local d=$1
  launch "$d" "${runenv[@]}" TELLTALE_FILE=t.log -- "$host" "$plugin" 3
  waitfor $limit
  verdict "$d" "$status" 134
}

overflowrun() {
  local d=$1
  launch "$d" "${runenv[@]}" TELLTALE_FILE=t.log TELLTALE_DUMP=4096 -- "$client" overflow
  waitfor $limit
  verdict "$d" "$status" 139 --traceback "$d/err"
}

# badlog DIR: three sound logs and an empty one, given to eventcnv at once
badlog() {
  local d=$1 n why
  for n in a b c; do
    mkdir "$d/$n"
    launch "$d/$n" TELLTALE_FILE=$n.log -- "$client" simple
    waitfor $limit
    why=$(verdict "$d/$n" "$status" 0)
    [ -n "$why" ] && { echo "the sound log $n.log: $why"; return; }
    cp "$d/$n/$n.log" "$d/$n.log"
  done
  : >"$d/bad.log"
  if ! python3 "$checker" "$eventcnv" --multi "$d/bad.log" "$d/a.log" "$d/b.log" "$d/c.log" \
       >"$d/check" 2>&1; then
    echo "$(grep '^FAIL' "$d/check" | head -4 | tr '\n' ' ')"
  fi
}

# many NAME TIMES FUNCTION ARGS...: ok if every run is; the first
# failure is reported with the number of the run, and the runs go on to
# count how many fail
many() {
  local name=$1 times=$2 why first="" nbad=0 hangs=0 ran=0 i d
  shift 2
  wanted "$name" || return 0
  for i in $(seq "$times"); do
    d=$(mktemp -d "$tmp/run.XXXXXX")
    why=$("$@" "$d")
    ran=$i
    if [ -n "$why" ]; then
      nbad=$((nbad + 1))
      [ -z "$first" ] && first="run $i: $why"
      [ -n "${IDIOMS_KEEP:-}" ] && { mkdir -p "$IDIOMS_KEEP"; cp -r "$d" "$IDIOMS_KEEP/$name.$i"; }
      case $why in *"exit hang"*) hangs=$((hangs + 1)) ;; esac
    fi
    rm -rf "$d"
    [ "$maxhangs" != 0 ] && [ $hangs -ge "$maxhangs" ] && break
  done
  if [ $nbad = 0 ]; then
    ok "$name"
  else
    fail "$name" "$nbad of $ran runs failed$([ "$ran" != "$times" ] && echo " (stopped after $hangs hangs)"); $first"
  fi
}

# The functions many calls take the directory last.
runenv=(TELLTALE_FILE=t.log)
c_term() { term "$1" term; }
c_term_threads() { term "$1" term-threads; }
c_plain() { local m=$1 s=$2; shift 2; plain "${@: -1}" "$s" "$m" "${@:1:$#-1}"; }
c_spawn() { spawnrun "$2" "$1"; }

many term $repeat c_term
many term-threads $repeat c_term_threads
many segv-jmp $few c_plain segv-jmp 0
many alarm-jmp $repeat c_plain alarm-jmp 0
many cancel-deferred $repeat c_plain cancel-deferred 0
many cancel-async $repeat c_plain cancel-async 0 --cut 4
many pthread-exit $repeat c_plain pthread-exit 0
runenv=(TELLTALE_FILE=t.log TELLTALE_WRITER=async)
many pthread-exit-async $repeat c_plain pthread-exit 0
runenv=()
if [ -x "$host" ] && [ -f "$plugin" ]; then
  many plugin $few pluginrun
elif wanted plugin && [ "$cfg" = build ]; then
  fail plugin "$host or $plugin is not built"
fi
many spawn $repeat c_spawn ""
many spawn-t $repeat c_spawn "app.%t.log"
many spawn-p $repeat c_spawn "app.%p.log"
many badlog 1 badlog
if wanted overflow; then
  for _ in 1 2; do
    ( while :; do :; done ) &
    burners+=($!)
  done
  many overflow $repeat overflowrun
  for b in "${burners[@]}"; do kill "$b" 2>/dev/null; { wait "$b"; } 2>/dev/null; done
  burners=()
fi

finish
