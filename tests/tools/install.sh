#!/usr/bin/env bash
# tests/tools/install.sh -- telltale installed, as an adopter meets it
#
# .design: design/build.txt .pack.test
#
# Usage: tests/tools/install.sh          (from tests/run, after ninja)
# Installs with `ninja install` into a temporary prefix, then, from
# copies outside the tree:
#   install          ninja install puts every file in place
#   soname           libtelltale.so.MAJOR.MINOR.PATCH, soname .so.MAJOR, links
#   symbols          the shared library exports exactly the names of
#                    debian/libtelltale0.symbols (.pack.export)
#   version          eventcnv --version, pkg-config and eventapi.h agree
#                    with packaging/version, and every installed tool's
#                    --version names it and that version
#   headers-c        each public header compiles alone as C11, gcc and clang,
#                    -Wall -Wextra -Wpedantic -Werror
#   headers-c++      ... and as C++17, g++ and clang++ (.pack.cxx)
#   c++-client       tests/clients/install/client.cpp, built with g++ against
#                    libtelltale.so and with clang++ against
#                    libtelltale-checking.a, logs its events, which the
#                    installed eventcnv decodes
#   make             examples/pool with its Makefile and pkg-config: the
#                    run's log decodes, PoolAlloc and PoolVerify in it
#   link-hint        linked without gen/eventgen.o, the linker's error
#                    names eventgen.c (.reg.many.link)
#   make-static-off  the same at VARIETY=off, which links libtelltale-off.a:
#                    no log at all
#   cmake            examples/pool with CMake's find_package(telltale)
#   cmake-off        the same with -DTELLTALE_VARIETY=off: telltale::off,
#                    not libtelltale.so, and no log
#   meson            examples/pool with Meson and pkg-config
#   record           telltale-record records sort's allocations, and
#                    telltale-replay replays them
#   man              every page renders with man -l, without warnings
#   gdb-source       the installed extension loads with one source line
#   gdb-auto-load    gdb loads it by itself with libtelltale.so, and it
#                    dumps the C++ client's events and lists its kinds
#   destdir          DESTDIR and LIBDIR stage a tree that is used where
#                    it lies with pkg-config --define-variable=prefix; as
#                    installed in /usr, --cflags is empty; the varieties'
#                    .pc files; uninstall leaves nothing (.pack.pc)
#   uninstall        ninja uninstall leaves no file, and no directory it
#                    made, the prefix included (.pack.install)
#   uninstall-keeps  ... and keeps a directory and a file that were there
#                    before; a second uninstall says nothing is installed
# Prints "ok NAME" or "FAIL NAME: why" per case, "skip NAME: why" when a
# tool is missing, then "N passed, N failed"; exits 1 on a failure, else
# 77 when a case was skipped.

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
top=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have() { command -v "$1" >/dev/null 2>&1; }

P=$tmp/prefix
version=$(sh packaging/version)
major=$(sh packaging/version major)
export PKG_CONFIG_PATH=$P/lib/pkgconfig
export LD_LIBRARY_PATH=$P/lib

# decodes NAME LOG EVENT... -- the installed eventcnv reads LOG cleanly
# and finds each EVENT in it
decodes() {
  local name=$1 log=$2 e
  shift 2
  if ! "$P/bin/eventcnv" --count "$log" >"$tmp/count" 2>"$tmp/cnv"; then
    fail "$name" "eventcnv: $(head -n 2 "$tmp/cnv")"
    return 1
  fi
  for e in "$@"; do
    if ! grep -qE "^ *[1-9][0-9]* $e\$" "$tmp/count"; then
      fail "$name" "no $e in the log: $(tr -s ' \n' ' ' <"$tmp/count")"
      return 1
    fi
  done
}

# install
if ! PREFIX=$P ninja install >"$tmp/out" 2>&1; then
  fail install "ninja install: $(tail -n 3 "$tmp/out")"
  finish
fi
missing=""
for f in bin/telltale-gen bin/eventcnv bin/telltale-replay bin/telltale-record bin/telltale-heap bin/telltale-ctl \
         lib/libtelltale-checking.a lib/libtelltale-optimised.a lib/libtelltale-off.a \
         lib/telltale/libtelltale-malloc.so lib/pkgconfig/telltale.pc \
         lib/cmake/telltale/telltaleConfig.cmake lib/cmake/telltale/telltaleConfigVersion.cmake \
         include/telltale/event.h include/telltale/eventcom.h include/telltale/eventapi.h \
         include/telltale/plinth.h include/telltale/plinthclock.h include/telltale/replaypool.h \
         share/telltale/eventdef.h share/telltale/malloc/eventdef.h share/telltale/gdb/telltale.py share/telltale/gdb/eventgen.py \
         "share/gdb/auto-load$P/lib/libtelltale.so.$version-gdb.py" \
         share/man/man7/telltale.7 share/man/man1/eventcnv.1 share/man/man1/telltale-gen.1 \
         share/man/man1/telltale-replay.1 share/man/man1/telltale-record.1 share/man/man1/telltale-heap.1 \
         share/man/man1/telltale-ctl.1; do
  [ -f "$P/$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then fail install "not installed:$missing"; else ok install; fi

# soname
so=$P/lib/libtelltale.so.$version
soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libtelltale.so.$major" ]; then
  fail soname "soname is '$soname', not libtelltale.so.$major"
elif [ "$(readlink "$P/lib/libtelltale.so.$major")" != "libtelltale.so.$version" ] ||
     [ "$(readlink "$P/lib/libtelltale.so")" != "libtelltale.so.$major" ]; then
  fail soname "links: $(ls -l "$P"/lib/libtelltale.so* | tr -s ' \n' ' ')"
else
  ok soname
fi

# symbols
sed -n 's/^ \([A-Za-z_][A-Za-z0-9_]*\)@Base .*/\1/p' debian/libtelltale0.symbols | sort >"$tmp/want"
nm -D --defined-only "$so" | awk '{print $NF}' | sort >"$tmp/got"
if ! head -n 1 debian/libtelltale0.symbols | grep -q "^libtelltale.so.$major libtelltale$major "; then
  fail symbols "debian/libtelltale0.symbols is not for libtelltale.so.$major"
elif ! diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then
  fail symbols "exported names differ from debian/libtelltale0.symbols (- listed, + exported): $(grep '^[-+][A-Za-z_]' "$tmp/diff" | tr '\n' ' ')"
else
  ok symbols
fi

# version
cnv=$("$P/bin/eventcnv" --version | head -n 1)
pc=$(pkg-config --modversion telltale 2>&1)
hdr=$(printf '#include <telltale/eventapi.h>\nTELLTALE_VERSION_STRING\n' | gcc -E -P -I"$P/include" - | tail -n 1)
# the installed tools, gen and record (scripts) too, by their own names
tools=""
for t in telltale-gen telltale-replay telltale-record telltale-heap telltale-ctl; do
  v=$("$P/bin/$t" --version 2>&1 | head -n 1)
  [ "$v" = "$t (telltale) $version" ] || tools="$tools $t '$v'"
done
if [ "$cnv" != "eventcnv (telltale) $version" ] || [ "$pc" != "$version" ] || [ "$hdr" != "\"$version\"" ] ||
   [ -n "$tools" ]; then
  fail version "packaging/version $version; eventcnv '$cnv', pkg-config '$pc', header $hdr;$tools"
else
  ok version
fi

# The headers, each alone, with a client's generated eventgen.h.
mkdir -p "$tmp/cxx"
cp tests/clients/install/eventdef.h tests/clients/install/client.cpp "$tmp/cxx/"
if ! (cd "$tmp/cxx" && "$P/bin/telltale-gen" --out gen eventdef.h) >"$tmp/out" 2>&1; then
  fail headers-c "telltale-gen: $(head -n 3 "$tmp/out")"
else
  for lang in c c++; do
    why=""
    for h in eventapi.h event.h eventcom.h plinth.h plinthclock.h replaypool.h; do
      printf '#include <telltale/%s>\ntypedef int notEmpty;  /* ISO C: a declaration */\n' "$h" >"$tmp/cxx/one.$lang"
      if [ $lang = c ]; then set -- gcc clang; std=-std=c11; else set -- g++ clang++; std=-std=c++17; fi
      for cc in "$@"; do
        have "$cc" || { why="$why $cc missing;"; continue; }
        "$cc" $std -x "$lang" -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$P/include" \
          -I"$tmp/cxx/gen" "$tmp/cxx/one.$lang" >"$tmp/out" 2>&1 ||
          why="$why $h under $cc: $(grep -m 1 -E 'error|warning' "$tmp/out");"
      done
    done
    if [ -n "$why" ]; then fail "headers-$lang" "$why"; else ok "headers-$lang"; fi
  done
fi

# no-paths: the generated files name no machine path, so they can be
# kept, shipped or compared; include/ holds telltale/ alone, so no
# generic header name is on the global include path.  .pack.headers
if grep -n -e "$P" -e "$tmp" "$tmp/cxx/gen/eventgen.h" "$tmp/cxx/gen/eventgen.c" >"$tmp/out"; then
  fail no-paths "a generated file names a path: $(head -n 1 "$tmp/out")"
elif [ "$(ls -A "$P/include")" != telltale ]; then
  fail no-paths "include/ holds more than telltale/: $(ls -A "$P/include" | tr '\n' ' ')"
else
  ok no-paths
fi

# c++-client
(
  cd "$tmp/cxx" &&
  gcc -std=c11 -Wall -Wextra -Werror -I"$P/include" -Igen -c gen/eventgen.c -o eventgen.o &&
  g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$P/include" -Igen client.cpp eventgen.o \
    $(pkg-config --libs telltale) -lpthread -o client-shared &&
  if have clang++; then
    clang++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$P/include" -Igen client.cpp eventgen.o \
      "$P/lib/libtelltale-checking.a" -lpthread -o client-static
  fi
) >"$tmp/out" 2>&1
if [ $? != 0 ]; then
  fail c++-client "build: $(grep -m 2 -E 'error|warning' "$tmp/out")"
else
  why=""
  for c in client-shared client-static; do
    [ -x "$tmp/cxx/$c" ] || continue
    if ! out=$(TELLTALE_FILE="$tmp/cxx/$c.log" "$tmp/cxx/$c" 2>&1) || [ "$out" != "telltale $version" ]; then
      why="$why $c said '$out';"
      continue
    fi
    "$P/bin/eventcnv" --kind Shape "$tmp/cxx/$c.log" >"$tmp/cxx/$c.txt" 2>&1
    for want in 'ShapeMade +shape=0x[0-9a-f]+ sides=3 area=0.4330127018922193 name="triangle"' \
                'ShapeMade +shape=0x[0-9a-f]+ sides=6 area=2.598076211353316 name="hexagon"' \
                'ShapeCount +count=6' 'ShapeCount +count=2'; do
      grep -qE "$want" "$tmp/cxx/$c.txt" || why="$why $c: no '$want' in its log;"
    done
    [ "$(grep -c Shape "$tmp/cxx/$c.txt")" = 5 ] || why="$why $c: $(grep -c Shape "$tmp/cxx/$c.txt") Shape events, not 5;"
  done
  [ -x "$tmp/cxx/client-static" ] || why="$why (clang++ missing: static client not built)"
  if [ -n "$why" ]; then fail c++-client "$why"; else ok c++-client; fi
fi

# pool NAME DIR PROGRAM -- run a build of the example and decode its log
pool() {
  local name=$1 dir=$2 program=$3
  rm -f "$dir/pool.log"
  if ! (cd "$dir" && TELLTALE_FILE="$dir/pool.log" "$program") >"$tmp/run" 2>&1; then
    fail "$name" "the example failed: $(tail -n 2 "$tmp/run")"
    return
  fi
  decodes "$name" "$dir/pool.log" PoolCreate PoolAlloc PoolVerify PoolFree ArenaCreate && ok "$name"
}

# make
cp -r examples/pool "$tmp/make"
if ! make -C "$tmp/make" >"$tmp/out" 2>&1; then
  fail make "$(grep -m 2 -E 'rror|warning' "$tmp/out")"
elif grep -q 'warning' "$tmp/out"; then
  fail make "warnings: $(grep -m 2 warning "$tmp/out")"
else
  pool make "$tmp/make" ./pool
fi

# link-hint: a program linked without its eventgen.c is told which file
# it lacks (.reg.many.link)
if [ -f "$tmp/make/main.o" ] &&
   out=$(cd "$tmp/make" && cc -o nogen main.o pool.o $(pkg-config --libs telltale) 2>&1); then
  fail link-hint "linked without eventgen.o"
elif ! echo "$out" | grep -q "undefined reference to .EventSource[A-Za-z]*_pool_example_in_eventgen_c"; then
  fail link-hint "the linker said: $(echo "$out" | grep -m 1 undefined)"
else
  ok link-hint
fi

# make-static-off
if ! { make -C "$tmp/make" clean && make -C "$tmp/make" VARIETY=off; } >"$tmp/out" 2>&1; then
  fail make-static-off "$(grep -m 2 -E 'rror|warning' "$tmp/out")"
elif readelf -d "$tmp/make/pool" | grep -q libtelltale; then
  fail make-static-off "linked with libtelltale.so"
elif ! (cd "$tmp/make" && rm -f off.log && TELLTALE_FILE="$tmp/make/off.log" ./pool >/dev/null 2>&1); then
  fail make-static-off "the example failed"
elif [ -e "$tmp/make/off.log" ]; then
  fail make-static-off "the off variety wrote a log"
else
  ok make-static-off
fi

# cmake
if ! have cmake; then
  skip cmake "no cmake"
else
  cp -r examples/pool "$tmp/cmake"
  if ! (cd "$tmp/cmake" && cmake -S . -B out -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" &&
        cmake --build out) >"$tmp/out" 2>&1; then
    fail cmake "$(grep -m 3 -E 'rror|warning|CMake' "$tmp/out")"
  else
    pool cmake "$tmp/cmake" out/pool
  fi
  # -DTELLTALE_VARIETY=off links telltale::off, not libtelltale.so (a
  # CMake if() would take "off" for false): no runtime, no log
  rm -rf "$tmp/cmake/off"
  if ! (cd "$tmp/cmake" && cmake -S . -B off -DCMAKE_PREFIX_PATH="$P" -DTELLTALE_VARIETY=off &&
        cmake --build off) >"$tmp/out" 2>&1; then
    fail cmake-off "$(grep -m 3 -E 'rror|warning|CMake' "$tmp/out")"
  elif ldd "$tmp/cmake/off/pool" | grep -q libtelltale; then
    fail cmake-off "linked with libtelltale.so"
  elif ! (cd "$tmp/cmake/off" && ./pool >/dev/null 2>&1) || [ -e "$tmp/cmake/off/telltale.log" ]; then
    fail cmake-off "the off example failed or wrote telltale.log"
  else
    ok cmake-off
  fi
fi

# meson
if ! have meson; then
  skip meson "no meson"
else
  cp -r examples/pool "$tmp/meson"
  if ! (cd "$tmp/meson" && meson setup out -Dwerror=true && meson compile -C out) >"$tmp/out" 2>&1; then
    fail meson "$(grep -m 3 -E 'rror|warning|ERROR' "$tmp/out")"
  else
    pool meson "$tmp/meson" out/pool
  fi
fi

# record
if ! "$P/bin/telltale-record" "$tmp/sort.log" -- sort packaging/version >/dev/null 2>"$tmp/out"; then
  fail record "telltale-record: $(head -n 2 "$tmp/out")"
elif decodes record "$tmp/sort.log" Malloc Free; then
  if "$P/bin/telltale-replay" -q --no-progress "$tmp/sort.log" >"$tmp/out" 2>&1; then
    ok record
  else
    fail record "telltale-replay: $(tail -n 2 "$tmp/out")"
  fi
fi

# man
why=""
for m in "$P"/share/man/man*/*; do
  out=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
  [ -n "$out" ] && why="$why $(basename "$m"): $out;"
  MANWIDTH=80 man -l "$m" 2>/dev/null | grep -q NAME || why="$why $(basename "$m") renders no NAME;"
done
if [ -n "$why" ]; then fail man "$why"; else ok man; fi

# gdb-source, gdb-auto-load
if ! have gdb; then
  skip gdb-source "no gdb"
else
  out=$(gdb -batch -nx -ex "source $P/share/telltale/gdb/telltale.py" -ex 'help telltale' 2>&1)
  if echo "$out" | grep -q 'telltale dump'; then ok gdb-source; else fail gdb-source "$(echo "$out" | head -n 3)"; fi
  prog=$tmp/cxx/client-shared
  out=$(TELLTALE_FILE=none gdb -batch -nx -iex "set auto-load scripts-directory $P/share/gdb/auto-load" \
        -iex 'set auto-load safe-path /' -ex 'break EventFinish' -ex run -ex 'telltale dump 4' \
        -ex 'telltale kinds' "$prog" 2>&1)
  if echo "$out" | grep -qE 'ShapeCount +count=2' && echo "$out" | grep -qE '^ +9 +Shape +on +on'; then
    ok gdb-auto-load
  else
    fail gdb-auto-load "$(echo "$out" | grep -iv '^\[' | tail -n 3)"
  fi
fi

# destdir: a Debian-style staging, used where it lies, then emptied
S=$tmp/stage
arch=lib/$(gcc -dumpmachine)
if ! DESTDIR=$S PREFIX=/usr LIBDIR=$arch ninja install >"$tmp/out" 2>&1; then
  fail destdir "ninja install: $(tail -n 2 "$tmp/out")"
else
  # used where it lies: the prefix given on the command line, as for any
  # .pc; as installed, /usr/include is the compiler's own and pkg-config
  # drops it (a -I/usr/include would demote the system's headers)
  staged="env PKG_CONFIG_PATH=$S/usr/$arch/pkgconfig pkg-config --define-variable=prefix=$S/usr"
  gen=$($staged --variable=gen telltale)
  cflags=$($staged --cflags telltale)
  sys=$(PKG_CONFIG_PATH=$S/usr/$arch/pkgconfig pkg-config --cflags telltale)
  if [ ! -f "$S/usr/$arch/libtelltale.so.$version" ]; then
    fail destdir "no $S/usr/$arch/libtelltale.so.$version"
  elif [ -n "$sys" ]; then
    fail destdir "pkg-config --cflags telltale, installed in /usr, gives '$sys', not nothing"
  elif [ "$(echo $($staged --cflags --libs telltale-optimised))" != "-I$S/usr/include -DEVENT_VARIETY=1 $S/usr/$arch/libtelltale-optimised.a -lpthread" ]; then
    fail destdir "telltale-optimised.pc gives '$($staged --cflags --libs telltale-optimised)'"
  elif [ "$(cd "$(dirname "$gen")" 2>/dev/null && pwd -P)" != "$(cd "$S/usr/bin" && pwd -P)" ]; then
    fail destdir "pkg-config's gen is $gen"
  elif ! "$gen" --with malloc --out "$tmp/stagegen" examples/pool/eventdef.h ||
       ! gcc -std=c11 -Wall -Wextra -Werror $cflags -I"$tmp/stagegen" -c examples/pool/pool.c -o "$tmp/stagepool.o"; then
    fail destdir "the staged telltale-gen or headers do not build the example"
  elif ! DESTDIR=$S PREFIX=/usr LIBDIR=$arch ninja uninstall >"$tmp/out" 2>&1; then
    fail destdir "ninja uninstall: $(tail -n 2 "$tmp/out")"
  elif [ -n "$(find "$S" -mindepth 1)" ]; then
    fail destdir "left after uninstall: $(find "$S" -mindepth 1 | head -n 5 | tr '\n' ' ')"
  else
    ok destdir
  fi
fi

# uninstall
if ! PREFIX=$P ninja uninstall >"$tmp/out" 2>&1; then
  fail uninstall "ninja uninstall: $(tail -n 2 "$tmp/out")"
elif [ -n "$(find "$P" ! -type d 2>/dev/null)" ]; then
  fail uninstall "left: $(find "$P" ! -type d | head -n 5 | tr '\n' ' ')"
elif [ -e "$P" ]; then
  fail uninstall "directories left: $(find "$P" -type d | head -n 5 | tr '\n' ' ')"
else
  ok uninstall
fi

# uninstall-keeps: a prefix that held a directory and a file before the
# install keeps both after uninstall; a second uninstall says it found
# nothing (.pack.install)
K=$tmp/kept
mkdir -p "$K/share/telltale" "$K/bin" && echo mine >"$K/bin/mine"
if ! PREFIX=$K ninja install >"$tmp/out" 2>&1 || ! PREFIX=$K ninja uninstall >"$tmp/out" 2>&1; then
  fail uninstall-keeps "$(tail -n 2 "$tmp/out")"
elif [ "$(cat "$K/bin/mine" 2>/dev/null)" != mine ] ||
     [ "$(cd "$K" && find . -mindepth 1 | sort | tr '\n' ' ')" != "./bin ./bin/mine ./share ./share/telltale " ]; then
  fail uninstall-keeps "left, of what was there before and what install put: $(cd "$K" && find . -mindepth 1 | sort | tr '\n' ' ')"
elif ! PREFIX=$K ninja uninstall 2>&1 | grep -q "is not installed in $K: nothing removed"; then
  fail uninstall-keeps "a second uninstall did not say that nothing was there"
else
  ok uninstall-keeps
fi

finish
