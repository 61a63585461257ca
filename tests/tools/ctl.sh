#!/usr/bin/env bash
# tests/tools/ctl.sh -- telltale-ctl steers a program that is idle and one that emits
#
# .design: design/tests.txt .test.ctl design/tools.txt .ctl
#
# Usage: tests/tools/ctl.sh CONFIG      e.g. tests/tools/ctl.sh build/san
#
# Steers CONFIG/tests/ctl_client (tests/clients/ctl/client.c) with CONFIG/ctl,
# each case in a fresh directory with its own control directory, and
# checks the logs with tests/clients/ctl/check.py.  The cases with a second uid
# need root and setpriv; elsewhere they are said as skipped, not passed.
# Prints "ok NAME", "FAIL NAME: why" or "skip NAME: why" per case, then
# "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/ctl.sh CONFIG}
cfg=${cfg%/}
top=$PWD
client=$top/$cfg/tests/ctl_client
ctl=$top/$cfg/ctl
eventcnv=$top/$cfg/eventcnv
check="python3 $top/tests/clients/ctl/check.py $eventcnv"
for f in "$client" "$ctl" "$eventcnv"; do
  [ -x "$f" ] || { fail setup "$f is not built"; finish; }
done
tmp=$(mktemp -d)
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=detect_leaks=0
export TSAN_OPTIONS="${TSAN_OPTIONS:-}:report_thread_leaks=0"
export TELLTALE_CTL=on          # a ThreadSanitizer build's default is off (.ctl.optout)

# fresh -- a case's directory, with a control directory in it; sets dir
fresh() {
  dir=$(mktemp -d "$tmp/case.XXXXXX")
  mkdir -m 700 "$dir/ctl"
}

# start ARGS... -- the client, in $dir with env $env, in the background;
# sets pid once it has said it is ready, or "" after 20 s
start() {
  (cd "$dir" && exec env TELLTALE_CTL_DIR="$dir/ctl" ${env[@]+"${env[@]}"} "$client" "$@" \
     >"$dir/pid" 2>"$dir/err") &
  pid=""
  for _ in $(seq 200); do
    [ -s "$dir/pid" ] && { pid=$(head -1 "$dir/pid"); pids+=("$pid"); return; }
    sleep 0.1
  done
}

# stop -- SIGUSR1: the client ends cleanly; its exit status (137: it
# did not end within 30 s, and was killed)
stop() {
  kill -USR1 "$pid"
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

c() { "$ctl" --dir "$dir/ctl" "$@"; }

requests() {  # Requests in a log, whatever its end says
  "$eventcnv" --format jsonl "$1" 2>/dev/null | grep -c '"event":"Request"'
}

# An idle program: each worker serves 200 requests, then waits.
idle() {
  local name=$1 out n
  shift
  env=("$@")
  fresh
  start idle 200 counts
  [ -n "$pid" ] || { fail "$name" "the client did not start: $(head -3 "$dir/err")"; return; }
  out=$(cd "$dir" && "$ctl" list 2>&1)   # TELLTALE_CTL_DIR is not set here: the default
  out=$(c list 2>&1)
  if ! grep -q "^pid $pid program ctl_client log $dir/telltale.log" <<<"$out" \
     || ! grep -q "Work=RO Note=RO" <<<"$out"; then
    fail "$name: list" "$out"
  else ok "$name: list"; fi
  out=$(c "$pid" status 2>&1)
  grep -q "^kind Work record on output on" <<<"$out" && ok "$name: status" || fail "$name: status" "$out"
  n=$(requests "$dir/telltale.log")
  out=$(c "$pid" flush 2>&1)
  if [ "$out" != flushed ] || [ "$(requests "$dir/telltale.log")" != 800 ]; then
    fail "$name: flush" "$out; $n before, $(requests "$dir/telltale.log") after, not 800"
  else ok "$name: flush" "$n Requests in the log before, 800 after"; fi
  out=$(cd "$dir" && c "$pid" snapshot snap.log 2>&1)
  if (cd "$dir" && c "$pid" snapshot "$dir/snap.log" >/dev/null 2>&1); then
    fail "$name: snapshot" "an existing file was written over"
  elif ! res=$($check "$dir/snap.log" "$dir/counts" all 2>&1); then
    fail "$name: snapshot" "$out: $res"
  elif ! "$eventcnv" --header "$dir/snap.log" | grep -q "^end .*a snapshot"; then
    fail "$name: snapshot" "its end is not said to be a snapshot"
  else ok "$name: snapshot" "$res"; fi
  out=$(c "$pid" recent 10 2>&1)
  n=$(grep -c ' Work  *Request \| Note  *Remark ' <<<"$out")
  [ "$n" = 10 ] && ok "$name: recent" || fail "$name: recent" "$n event lines, not 10: $out"
  out=$(c "$pid" recent 10 2>&1 >/dev/full)
  [ $? = 1 ] && grep -q "writing to standard output" <<<"$out" && ok "$name: a failed write is said" \
    || fail "$name: recent >/dev/full" "$out"
  out=$(c "$pid" output off Note 2>&1; c "$pid" status 2>&1)
  grep -q "^kind Note record on output off" <<<"$out" && ok "$name: output off" \
    || fail "$name: output off" "$out"
  c "$pid" output on Note >/dev/null 2>&1
  out=$(c "$pid" event off Remark 2>&1; c "$pid" status 2>&1)
  grep -q "^events off Remark" <<<"$out" && ok "$name: event off" || fail "$name: event off" "$out"
  c "$pid" event on Remark >/dev/null 2>&1
  # Commands at once: each gets its own answer.
  for i in $(seq 12); do c "$pid" output on "Bad$i" >"$dir/par.$i" 2>&1 & done
  wait_all=$(jobs -p | grep -v "^$pid\$")
  for j in $wait_all; do wait "$j" 2>/dev/null; done
  n=0
  for i in $(seq 12); do grep -q "unknown kind 'Bad$i'" "$dir/par.$i" && n=$((n + 1)); done
  [ $n = 12 ] && ok "$name: 12 commands at once, each its own answer" \
    || fail "$name: commands at once" "$n of 12 right: $(cat "$dir"/par.* | head -3)"
  # A stopped program: the request is taken back, never done later.
  kill -STOP "$pid"
  out=$(c --timeout 0.5 "$pid" output off Work 2>&1)
  r=$?
  kill -CONT "$pid"
  sleep 0.2
  if [ $r != 1 ] || ! grep -q "taken back: nothing was changed" <<<"$out" \
     || ! c "$pid" status 2>&1 | grep -q "^kind Work record on output on"; then
    fail "$name: stopped" "exit $r: $out; $(c "$pid" status 2>&1 | grep 'kind Work')"
  else ok "$name: a stopped program's request is taken back"; fi
  out=$(c "$pid" output on Nowhere 2>&1)
  [ $? = 1 ] && grep -q "unknown kind 'Nowhere'" <<<"$out" && ok "$name: a bad kind is refused" \
    || fail "$name: a bad kind" "$out"
  stop
  [ $? = 0 ] || fail "$name: end" "exit $?: $(head -3 "$dir/err")"
  res=$($check "$dir/telltale.log" "$dir/counts" all 2>&1) && ok "$name: log" "$res" || fail "$name: log" "$res"
  [ -e "$dir/ctl/$pid.ctl" ] && fail "$name: end" "the control file is left" || ok "$name: the control file is removed"

  fresh
  start idle 200 counts
  [ -n "$pid" ] || { fail "$name: filter" "the client did not start"; return; }
  out=$(c "$pid" filter add 'Request size>=4096' 2>&1; c "$pid" filter add 'Remark tag==big' 2>&1;
        c "$pid" status 2>&1)
  if ! grep -q "^filters Request size>=4096; Remark tag==big" <<<"$out"; then
    fail "$name: filter" "$out"
  else
    stop
    res=$($check "$dir/telltale.log" "$dir/counts" filtered 2>&1) && ok "$name: filter" "$res" \
      || fail "$name: filter" "$res"
  fi
}

# A busy program: every command while it emits.
busy() {
  local name=$1 out n res
  shift
  env=("$@")
  fresh
  start busy counts
  [ -n "$pid" ] || { fail "$name" "the client did not start: $(head -3 "$dir/err")"; return; }
  sleep 0.3
  out=$(c list 2>&1) && grep -q "^pid $pid " <<<"$out" || { fail "$name: list" "$out"; }
  out=$(c "$pid" flush 2>&1) && [ "$(requests "$dir/telltale.log")" -gt 0 ] \
    || fail "$name: flush" "$out"
  out=$(cd "$dir" && c "$pid" snapshot snap.log 2>&1)
  n=$(requests "$dir/snap.log")
  if ! "$eventcnv" "$dir/snap.log" >/dev/null 2>"$dir/snap.err" || [ "$n" -le 0 ]; then
    fail "$name: snapshot" "$out; $n Requests; $(head -3 "$dir/snap.err")"
  fi
  out=$(c "$pid" recent 20 2>&1)
  [ "$(grep -c ' Work  *Request \| Note  *Remark ' <<<"$out")" = 20 ] || fail "$name: recent" "$out"
  stop
  res=$($check "$dir/telltale.log" "$dir/counts" all 2>&1) \
    && ok "$name: list, flush, snapshot, recent while it emits" "$res; snapshot $n Requests" \
    || fail "$name: log" "$res"
  # A filter from the start: exactly the events that pass.  (One set
  # while a program emits keeps what passes of the blocks written after
  # it, which no client can tell from outside.)
  fresh
  env=("$@" "TELLTALE_FILTER=Request size>=4096;Remark tag==big")
  start busy counts
  [ -n "$pid" ] || { fail "$name: filter" "the client did not start: $(head -3 "$dir/err")"; return; }
  sleep 0.5
  stop
  res=$($check "$dir/telltale.log" "$dir/counts" filtered 2>&1) && ok "$name: filter" "$res" \
    || fail "$name: filter" "$res"
  # Killed: the live file's recovery takes a filtered block for what it covers.
  if [[ " $* " == *" TELLTALE_MAP=on "* ]]; then
    fresh
    start busy counts
    sleep 0.5
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    res=$($check "$dir/telltale.log" "$dir/counts" filtered killed 2>&1) \
      && ok "$name: filter, killed" "$res" || fail "$name: filter, killed" "$res"
  fi
}

for writer in sync async; do
  for compact in 0 1; do
    idle "idle,$writer,compact=$compact" TELLTALE_WRITER=$writer TELLTALE_COMPACT=$compact TELLTALE_MAP=off
  done
  for map in on off; do
    busy "busy,$writer,map=$map" TELLTALE_WRITER=$writer TELLTALE_MAP=$map TELLTALE_COMPACT=$((RANDOM % 2))
  done
done

# Stale control files: a killed program's, and a forged one for a live
# process that is not telltale's, are removed, by telltale-ctl and by a
# program's start.
fresh
env=()
start idle 10 counts
cp "$dir/ctl/$pid.ctl" "$dir/forged"
kill -9 "$pid"; wait "$pid" 2>/dev/null
dead=$pid
out=$(c list 2>&1)
if grep -q "^pid $dead " <<<"$out" || [ -e "$dir/ctl/$dead.ctl" ] \
   || ! grep -q "no telltale process $dead: its control file was stale (removed)" <<<"$out"; then
  fail "stale: list" "$out"
else ok "stale: list removes a killed program's file"; fi
sleep 30 &
other=$!
pids+=("$other")
install -m 600 "$dir/forged" "$dir/ctl/$other.ctl"
out=$(c "$other" status 2>&1)
[ $? = 1 ] && [ ! -e "$dir/ctl/$other.ctl" ] && ok "stale: a forged file of a live pid" \
  || fail "stale: forged" "$out"
install -m 600 "$dir/forged" "$dir/ctl/$other.ctl"
start idle 10 counts
[ -n "$pid" ] && [ ! -e "$dir/ctl/$other.ctl" ] && [ -e "$dir/ctl/$pid.ctl" ] \
  && ok "stale: a program's start removes it" || fail "stale: start" "$(ls "$dir/ctl")"
stop
kill "$other" 2>/dev/null

# Opting out: no file, and telltale-ctl says there is no such process.
fresh
env=(TELLTALE_CTL=off)     # after the exported on
start idle 10 counts
out=$(c "$pid" status 2>&1)
[ $? = 1 ] && [ -z "$(ls "$dir/ctl")" ] && ok "TELLTALE_CTL=off" || fail "TELLTALE_CTL=off" "$out"
stop

# A main thread's pthread_exit: the control thread does not keep the
# process alive once the workers end.  (Not under ThreadSanitizer, whose
# own thread keeps such a process alive, telltale or not.)
if [[ $cfg == *tsan* ]]; then
  echo "skip pthread_exit from main: ThreadSanitizer's own thread outlives main (not counted)"
else
  fresh
  env=()
  (cd "$dir" && TELLTALE_CTL_DIR="$dir/ctl" timeout -s KILL 30 "$client" pexit 3000 counts \
     >/dev/null 2>"$dir/err")
  r=$?
  res=$($check "$dir/telltale.log" "$dir/counts" all 2>&1)
  [ $r = 0 ] && [ $? = 0 ] && ok "pthread_exit from main ends the process" "$res" \
    || fail "pthread_exit" "exit $r (137: it hung); $res"
fi

# Another user is refused, both ways.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  fresh
  env=()
  chmod 711 "$tmp"              # nobody may pass through to the case
  chmod 755 "$dir"
  start idle 10 counts
  out=$(as_nobody "$ctl" --dir "$dir/ctl" "$pid" status 2>&1)
  [ $? = 1 ] && grep -q "is not a directory of this user's" <<<"$out" \
    && ok "another user: refused a root program" || fail "another user" "$out"
  out=$(as_nobody "$ctl" --dir "$dir/ctl" list 2>&1)
  [ $? = 1 ] || fail "another user: list" "exit 0: $out"
  grep -q "^pid $pid" <<<"$out" && fail "another user: list shows it" "$out" \
    || ok "another user: list does not show it"
  stop
  mkdir -m 700 "$dir/nobody" && chown 65534:65534 "$dir/nobody"
  (cd "$dir/nobody" && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
     env TELLTALE_CTL_DIR="$dir/nobody" "$client" idle 10 counts >pid 2>err) &
  for _ in $(seq 100); do [ -s "$dir/nobody/pid" ] && break; sleep 0.1; done
  pid=$(head -1 "$dir/nobody/pid")
  pids+=("$pid")
  out=$("$ctl" --dir "$dir/nobody" "$pid" status 2>&1)
  [ $? = 1 ] && grep -q "is not a directory of this user's" <<<"$out" \
    && ok "another user: root refused a nobody's program" || fail "another user: root" "$out"
  stop
else
  echo "skip another user: needs root and setpriv (not counted)"
fi

finish
