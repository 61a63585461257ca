#!/usr/bin/env bash
# tests/tools/tools.sh -- every tool answers --help and --version, names itself
# as installed, and has a man page that names each of its options
#
# .design: design/build.txt .pack.test
#
# Usage: tests/tools/tools.sh CONFIG      e.g. tests/tools/tools.sh build
# CONFIG's eventcnv, replay, heap and ctl must be built.  Each tool is
# run as in the tree (CONFIG/replay, gen, tools/replay/record) and
# must answer as its installed name (telltale-replay, telltale-gen,
# telltale-record).
#
# Covers, for each TOOL:
#   TOOL-help       --help exits 0, prints to stdout, nothing to stderr,
#                   and its usage line names TOOL
#   TOOL-version    --version exits 0 and prints "TOOL (telltale) V",
#                   V from packaging/version
#   TOOL-man        man/TOOL.1 exists, its NAME is TOOL, and it names
#                   every option (--word, -x) that --help prints
#   TOOL-usage      (the tools on tools/common/options.c: eventcnv, replay,
#                   telltale-heap, telltale-ctl) an unknown option exits
#                   2, says "TOOL: unknown option: ..." and then
#                   "Try 'TOOL --help' for more information." on stderr,
#                   and prints nothing on stdout
#   telltale-man    telltale(7)'s SEE ALSO names every tool's page; it
#                   names every function event.h declares TELLTALE_API
#                   (but those its macros call: EventReserveSlow,
#                   EventAssertFail) and every TELLTALE_ variable the
#                   runtime (src/event, src/plinth) reads
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/tools.sh CONFIG}
cfg=${cfg%/}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sh packaging/version)

# manText PAGE -- a man page's source as text: fonts gone, \- as -
manText() {
  sed -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\-/-/g' -e 's/\\&//g' "$1"
}

# check NAME COMMAND... -- the cases for one tool
check() {
  local name=$1 why page=man/$1.1
  shift
  # help
  why=""
  "$@" --help >"$tmp/help" 2>"$tmp/help.err"
  r=$?
  [ $r = 0 ] || why="$why exit $r;"
  [ -s "$tmp/help.err" ] && why="$why stderr: $(head -1 "$tmp/help.err");"
  grep -qiE "^usage: $name( |$)" "$tmp/help" || why="$why no \"usage: $name\" line (first: $(head -1 "$tmp/help"));"
  [ -z "$why" ] && ok "$name-help" || fail "$name-help" "$why"
  # version
  why=""
  out=$("$@" --version 2>&1)
  r=$?
  [ $r = 0 ] || why="$why exit $r;"
  [ "$(echo "$out" | head -1)" = "$name (telltale) $version" ] ||
    why="$why first line \"$(echo "$out" | head -1)\", not \"$name (telltale) $version\";"
  [ -z "$why" ] && ok "$name-version" || fail "$name-version" "$why"
  # man
  why=""
  if [ ! -f "$page" ]; then
    why=" no $page"
  else
    manText "$page" >"$tmp/man"
    sed -n '/^\.SH NAME/{n;p;}' "$tmp/man" | grep -q "^$name " || why="$why its NAME is not $name;"
    # every option: a word that starts with - or --, at a word's start
    for opt in $(grep -oE '(^|[ ,[(])--?[A-Za-z][A-Za-z0-9-]*' "$tmp/help" |
                 sed 's/^[ ,[(]//' | sort -u); do
      grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|\$)" "$tmp/man" || why="$why $opt;"
    done
    [ -z "$why" ] || why=" $page lacks:$why"
  fi
  [ -z "$why" ] && ok "$name-man" || fail "$name-man" "$why"
}

# usage NAME COMMAND... -- the shared usage error of one tool
usage() {
  local name=$1 why=""
  shift
  "$@" --no-such-option >"$tmp/usage" 2>"$tmp/usage.err"
  r=$?
  [ $r = 2 ] || why="$why exit $r;"
  [ -s "$tmp/usage" ] && why="$why stdout: $(head -1 "$tmp/usage");"
  [ "$(sed -n 1p "$tmp/usage.err")" = "$name: unknown option: --no-such-option" ] ||
    why="$why first line \"$(sed -n 1p "$tmp/usage.err")\";"
  [ "$(sed -n 2p "$tmp/usage.err")" = "Try '$name --help' for more information." ] ||
    why="$why second line \"$(sed -n 2p "$tmp/usage.err")\";"
  [ -z "$why" ] && ok "$name-usage" || bad "$name-usage" "$why"
}

check eventcnv "$cfg/eventcnv"
check telltale-gen python3 gen
check telltale-replay "$cfg/replay"
check telltale-record tools/replay/record
check telltale-heap "$cfg/heap"
check telltale-ctl "$cfg/ctl"
usage eventcnv "$cfg/eventcnv"
usage telltale-heap "$cfg/heap"
usage telltale-ctl "$cfg/ctl"
usage telltale-replay "$cfg/replay"

why=""
manText man/telltale.7 | sed -n '/^\.SH "*SEE ALSO/,/^\.SH/p' >"$tmp/see"
for t in eventcnv telltale-gen telltale-replay telltale-record telltale-heap telltale-ctl; do
  grep -q "$t" "$tmp/see" || why="$why $t;"
done
[ -z "$why" ] || why=" its SEE ALSO lacks:$why"
manText man/telltale.7 >"$tmp/man7"
header=$(find src include -name event.h 2>/dev/null | head -1)
[ -n "$header" ] || why="$why no event.h found;"
for f in $(grep -oE 'TELLTALE_API [^(;]*[ *]Event[A-Za-z]+\(' "$header" | grep -oE 'Event[A-Za-z]+\($' |
           tr -d '(' | sort -u); do
  case $f in EventReserveSlow|EventAssertFail) continue ;; esac
  grep -qw "$f" "$tmp/man7" || why="$why $f;"
done
for v in $(grep -rhoE '"TELLTALE_[A-Z_]+"' src/event src/plinth | tr -d '"' | sort -u); do
  grep -qw "$v" "$tmp/man7" || why="$why $v;"
done
[ -z "$why" ] && ok telltale-man || fail telltale-man "man/telltale.7 lacks:$why"

finish
