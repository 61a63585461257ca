#!/usr/bin/env bash
# tests/tools/layout.sh -- the rooms of the code hold what they say, checked with nm
#
# .design: design/build.txt .build.layers design/plinth.txt .plinth
#
# The folders are the layers: src/event the runtime, src/decode the
# event layer, src/read the stream layer (libtelltale-read.a, for the
# tools).  Each folder's include path (ninja/decode.ninja, read.ninja)
# names only the layers below it, so the compiler refuses a header from
# above; these cases check the objects the build makes.
#
# Usage: tests/tools/layout.sh CONFIG      e.g. tests/tools/layout.sh build
#   runtime-no-stream   the runtime archives define none of what the
#                       stream layer (eventstream.o, eventheader.o,
#                       eventindex.o, eventexpand.o, eventholes.o,
#                       eventmerge.o: the tools') defines
#   event-layer-libc    the event layer (eventdecode.o, eventformat.o,
#                       eventdouble.o, eventclock.o, eventcheck.o,
#                       eventpack.o) calls
#                       nothing but memcpy-like
#                       string.h functions: no malloc, no stdio
#   tools-no-sigaction  replay and eventcnv, which want the clock and
#                       the streams, do not define sigaction or signal
#                       (plinthsig.c), which would wrap their handlers
# Prints "ok NAME" or "FAIL NAME: why" per case, then "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
cfg=${1:?usage: tests/tools/layout.sh CONFIG}
cfg=${cfg%/}

why=""
reader=""
for o in eventstream eventheader eventindex eventexpand eventholes eventmerge; do
  defined=$(nm "$cfg/obj/$o.o" 2>/dev/null | awk '$2 == "T" {print $3}')
  [ -n "$defined" ] || why="$why $cfg/obj/$o.o defines nothing"
  reader="$reader$defined"$'\n'
done
for lib in "$cfg"/libtelltale-checking.a "$cfg"/libtelltale-optimised.a "$cfg"/libtelltale-off.a; do
  [ -f "$lib" ] || { why="$why $lib is not built"; continue; }
  found=$(nm "$lib" 2>/dev/null | awk '$2 == "T" {print $3}' | grep -xF "$reader" | sort -u | tr '\n' ' ')
  [ -z "$found" ] || why="$why $lib defines $found"
done
if [ -z "$why" ]; then ok runtime-no-stream; else fail runtime-no-stream "$why"; fi

why=""
for o in eventdecode eventformat eventdouble eventclock eventcheck eventpack; do
  f=$cfg/obj/$o.o
  [ -f "$f" ] || { why="$why $f is not built"; continue; }
  calls=$(nm -u "$f" | awk '{print $NF}' | grep -vE '^(memcpy|memset|memmove|memcmp|memchr|strlen|strcmp|__stack_chk_fail|__cpu_model|__cpu_indicator_init|_GLOBAL_OFFSET_TABLE_|Event[A-Za-z]*)$' | tr '\n' ' ')
  [ -z "$calls" ] || why="$why $o.o calls $calls"
done
if [ -z "$why" ]; then ok event-layer-libc; else fail event-layer-libc "$why"; fi

why=""
for tool in "$cfg/replay" "$cfg/eventcnv"; do
  [ -x "$tool" ] || { why="$why $tool is not built"; continue; }
  found=$(nm "$tool" | awk '$2 == "T" && ($3 == "sigaction" || $3 == "signal") {print $3}' | tr '\n' ' ')
  [ -z "$found" ] || why="$why $(basename "$tool") defines $found"
done
if [ -z "$why" ]; then ok tools-no-sigaction; else fail tools-no-sigaction "$why"; fi

finish
