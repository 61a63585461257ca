#!/bin/sh
# packaging/install.sh -- install or uninstall telltale; run by
# `ninja install` and `ninja uninstall` (ninja/install.ninja).
#
# .design: design/build.txt .pack.install
#
# Usage: packaging/install.sh install|uninstall [BUILD]
# BUILD is the build directory (default build).  From the environment:
#   PREFIX   where to install (default /usr/local)
#   DESTDIR  a staging root prepended to every path (default none)
#   LIBDIR   the library directory under PREFIX (default lib; Debian's
#            packages use lib/x86_64-linux-gnu)
# uninstall removes exactly what install installs (the same PREFIX,
# DESTDIR and LIBDIR), then the directories of telltale's own that are
# left empty.
set -eu
cd "$(dirname "$0")/.."
mode=${1:?usage: packaging/install.sh install|uninstall [BUILD]}
build=${2:-build}
case $mode in install|uninstall) ;; *) echo "install.sh: unknown mode $mode" >&2; exit 2 ;; esac
prefix=${PREFIX:-/usr/local}
prefix=${prefix%/}
libdir=${LIBDIR:-lib}
libdir=${libdir#/}
libdir=${libdir%/}
case $prefix in /*) ;; *) echo "install.sh: PREFIX must be absolute: $prefix" >&2; exit 2 ;; esac
root=${DESTDIR:-}
root=${root%/}
version=$(sh packaging/version)
major=$(sh packaging/version major)
# up: from PREFIX/LIBDIR/pkgconfig (or cmake/telltale) back to PREFIX
up=$(echo "$libdir/x" | sed 's|[^/][^/]*|..|g')
removed=0

# made DIR -- make DIR (under the root) and its missing parents, noting
# each one made in $made, so that uninstall removes what install made
# and no directory that was there before (.pack.install)
made() {
  d=$1 new=""
  while [ "$d" != / ] && [ ! -d "$root$d" ]; do
    new="$d
$new"
    d=$(dirname "$d")
  done
  [ -z "$new" ] && return 0
  mkdir -p "$root$1"
  printf '%s' "$new" >>"$made"
}

# put SRC DEST MODE -- a file; DEST is under PREFIX
put() {
  dest=$root$prefix/$2
  if [ "$mode" = install ]; then
    made "$(dirname "$prefix/$2")"
    install -m "$3" "$1" "$dest"
  elif [ -e "$dest" ] || [ -L "$dest" ]; then
    rm -f "$dest"
    removed=$((removed + 1))
  fi
}

# link TARGET DEST -- a symbolic link
link() {
  dest=$root$prefix/$2
  if [ "$mode" = install ]; then
    made "$(dirname "$prefix/$2")"
    ln -sfn "$1" "$dest"
  elif [ -L "$dest" ]; then
    rm -f "$dest"
    removed=$((removed + 1))
  fi
}

# fill TEMPLATE -- the template with its @NAMES@ filled in
fill() {
  sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@LIBDIR@|$libdir|g" \
      -e "s|@UP@|$up|g" -e "s|@PREFIX@|$prefix|g" -e "s|@VARIETY@|${2:-}|g" \
      -e "s|@NUMBER@|${3:-}|g" "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The directories install made, kept (under the root, outside the
# prefix's own files) until uninstall has removed them.
record=share/telltale/.installed-dirs
made=$tmp/made
if [ -f "$root$prefix/$record" ]; then cp "$root$prefix/$record" "$made"; else : >"$made"; fi

if [ "$mode" = install ]; then
  for f in libtelltale.so libtelltale-checking.a libtelltale-optimised.a libtelltale-off.a \
           eventcnv ctl replay heap libtelltale-malloc.so; do
    [ -e "$build/$f" ] || { echo "install.sh: $build/$f is not built: run ninja $build/.install" >&2; exit 1; }
  done
  [ -e build/gen/core/eventgen.py ] ||
    { echo "install.sh: build/gen/core/eventgen.py is not generated: run ninja $build/.install" >&2; exit 1; }
fi

# Programs.  gen finds the registries in PREFIX/share/telltale (.pack.gen);
# record finds the recorder in PREFIX/LIBDIR/telltale.
sed "s|^VERSION = None\$|VERSION = \"$version\"|" gen >"$tmp/gen"
put "$tmp/gen" bin/telltale-gen 755
put "$build/eventcnv" bin/eventcnv 755
put "$build/replay" bin/telltale-replay 755
put "$build/heap" bin/telltale-heap 755
put "$build/ctl" bin/telltale-ctl 755
sed -e 's|^top=.*|top=$(cd "$(dirname "$0")/.." \&\& pwd)|' \
    -e "s|\$top/build/libtelltale-malloc.so|\$top/$libdir/telltale/libtelltale-malloc.so|" \
    -e 's|build/replay|telltale-replay|g' -e "s|^version=.*|version=$version|" tools/replay/record >"$tmp/record"
put "$tmp/record" bin/telltale-record 755

# Libraries: the shared library with its soname and links, the static
# archives of the three varieties, the allocation recorder (a preload,
# not for linking: in a directory of its own).
put "$build/libtelltale.so" "$libdir/libtelltale.so.$version" 644
link "libtelltale.so.$version" "$libdir/libtelltale.so.$major"
link "libtelltale.so.$major" "$libdir/libtelltale.so"
for v in checking optimised off; do
  put "$build/libtelltale-$v.a" "$libdir/libtelltale-$v.a" 644
done
put "$build/libtelltale-malloc.so" "$libdir/telltale/libtelltale-malloc.so" 644

# Headers, under include/telltale, as build.ninja lists them (its
# headers target): a client writes <telltale/event.h>.  .pack.headers
for h in "$build"/include/telltale/*.h; do
  put "$h" "include/telltale/$(basename "$h")" 644
done

# What a client's build reads: pkg-config, CMake.
fill packaging/telltale.pc.in >"$tmp/telltale.pc"
put "$tmp/telltale.pc" "$libdir/pkgconfig/telltale.pc" 644
for v in off:0 optimised:1 checking:2; do
  fill packaging/telltale-variety.pc.in "${v%:*}" "${v#*:}" >"$tmp/telltale-${v%:*}.pc"
  put "$tmp/telltale-${v%:*}.pc" "$libdir/pkgconfig/telltale-${v%:*}.pc" 644
done
up=$up/..
fill packaging/telltaleConfig.cmake.in >"$tmp/telltaleConfig.cmake"
fill packaging/telltaleConfigVersion.cmake.in >"$tmp/telltaleConfigVersion.cmake"
put "$tmp/telltaleConfig.cmake" "$libdir/cmake/telltale/telltaleConfig.cmake" 644
put "$tmp/telltaleConfigVersion.cmake" "$libdir/cmake/telltale/telltaleConfigVersion.cmake" 644

# telltale's registries, which telltale-gen merges.
put eventdef.h share/telltale/eventdef.h 644
put src/malloc/eventdef.h share/telltale/malloc/eventdef.h 644

# The gdb extension, and gdb's auto-load file for libtelltale.so, which
# sources it (.pack.gdb).
put tools/gdb/telltale.py share/telltale/gdb/telltale.py 644
put build/gen/core/eventgen.py share/telltale/gdb/eventgen.py 644   # its wire format (.gen.wire)
cat >"$tmp/auto.py" <<PY
# gdb auto-loads this file for libtelltale.so.$version: it loads
# telltale's gdb commands ("help telltale").
import gdb
gdb.execute("source $prefix/share/telltale/gdb/telltale.py")
PY
put "$tmp/auto.py" "share/gdb/auto-load$prefix/$libdir/libtelltale.so.$version-gdb.py" 644

# Manual pages.
for m in man/*.[0-9]; do
  put "$m" "share/man/man${m##*.}/$(basename "$m")" 644
done

# The example client, with its build files for Make, CMake and Meson.
for f in examples/pool/*; do
  put "$f" "share/doc/telltale/examples/pool/$(basename "$f")" 644
done

if [ "$mode" = uninstall ]; then
  if [ "$removed" = 0 ]; then
    echo "uninstall: telltale $version is not installed in $root$prefix: nothing removed"
    exit 0
  fi
  rm -f "$root$prefix/$record"
  # the directories install made, deepest first, where empty (none that
  # was there before; a tree installed before they were recorded keeps
  # its directories)
  sort -u -r "$made" | while IFS= read -r d; do
    rmdir "$root$d" 2>/dev/null || :
  done
  echo "uninstalled telltale $version from $root$prefix ($removed files)"
else
  sort -u "$made" >"$tmp/made.sorted"
  install -m 644 "$tmp/made.sorted" "$root$prefix/$record"
  echo "installed telltale $version in $root$prefix"
fi
