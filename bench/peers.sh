#!/usr/bin/env bash
# pkg-config's flags are words, split as the shell splits them:
# shellcheck disable=SC2207
# bench/peers.sh -- the benchmark with its peers: builds OUT/bench/bench-peers
# from bench.c with the cases of each peer whose package is installed,
# and prints its path.
#
# .design: design/tests.txt .bench.lttng, .bench.spdlog
#
#   bench/peers.sh [OUT]    OUT is build (gcc, the default) or build/clang
#
# The peers are optional: nothing in the build or the tests needs them,
# and build.ninja cannot build a target only where a library is
# installed, so this script links bench-peers beside ninja's bench, from
# the objects ninja built, with build.ninja's own flags:
#   LTTng-UST (liblttng-ust-dev): -DBENCH_LTTNG and the provider,
#     lttng_tp.c; bench/lttng.sh sets up the session that records it
#   spdlog (libspdlog-dev): -DBENCH_SPDLOG and spdlog.cc, linked by c++
# With neither it prints ninja's build/bench/bench; a peer left out has
# a row in the bench's table that says why.
set -eu
cd "$(dirname "$0")/.."
out=${1:-build}
case $out in
  build) cc=gcc cxx=g++ ;;
  build/clang) cc=clang cxx=clang++ ;;
  *) echo "bench/peers.sh: OUT is build or build/clang" >&2; exit 2 ;;
esac
ninja "$out/bench/bench" "$out/obj/bench/bench_off.o" "$out/obj/test/eventgen.o" \
  "$out/libtelltale-checking.a" >/dev/null
defs=() srcs=() libs=() link=$cc
if pkg-config --exists lttng-ust; then
  defs+=(-DBENCH_LTTNG $(pkg-config --cflags lttng-ust))
  srcs+=(bench/lttng_tp.c)
  libs+=($(pkg-config --libs lttng-ust))
fi
if pkg-config --exists spdlog && command -v "$cxx" >/dev/null; then
  defs+=(-DBENCH_SPDLOG)
  mkdir -p "$out/obj/bench"
  # shellcheck disable=SC2046   # the flags are words
  $cxx -std=c++17 -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags spdlog) \
    -c bench/spdlog.cc -o "$out/obj/bench/spdlog.o"
  srcs+=("$out/obj/bench/spdlog.o")
  libs+=($(pkg-config --libs spdlog))
  link=$cxx
fi
if [ ${#defs[@]} -eq 0 ]; then
  echo "$out/bench/bench"
  exit 0
fi
warnings=$(sed -n 's/^warnings = //p' build.ninja)
flags=$(sed -n 's/^base_cflags = //p' build.ninja)
flags="${flags/\$warnings/$warnings} -O2"
# bench.c is compiled as C, whichever driver links
# shellcheck disable=SC2086   # the flags are words
$cc $flags "${defs[@]}" -Ibench -Ibuild/include -Isrc/event -Isrc/plinth -Ibuild/gen/test \
  -c bench/bench.c -o "$out/obj/bench/bench-peers.o"
objs=("$out/obj/bench/bench-peers.o")
for s in "${srcs[@]}"; do
  case $s in
    *.c) # shellcheck disable=SC2086
         $cc $flags "${defs[@]}" -Ibench -c "$s" -o "$out/obj/bench/$(basename "${s%.c}")-peers.o"
         objs+=("$out/obj/bench/$(basename "${s%.c}")-peers.o") ;;
    *) objs+=("$s") ;;
  esac
done
$link -o "$out/bench/bench-peers" "${objs[@]}" "$out/obj/bench/bench_off.o" \
  "$out/obj/test/eventgen.o" "$out/libtelltale-checking.a" "${libs[@]}" -lpthread
echo "$out/bench/bench-peers"
