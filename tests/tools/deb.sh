#!/usr/bin/env bash
# tests/tools/deb.sh -- the Debian packages of debian/, built and used
#
# .design: design/build.txt .pack.test
#
# Usage: tests/tools/deb.sh
# Builds the packages with dpkg-buildpackage from a copy of the tree
# outside it, then:
#   build      libtelltale0, libtelltale-dev and telltale-tools are built,
#              at the version of packaging/version and debian/changelog
#   contents   each package holds its part (the library alone in
#              libtelltale0), and -dev depends on the library's version
#   lintian    lintian finds no error or warning (info tags are listed)
#   make       unpacked with dpkg -x into a temporary root, the packages
#              build examples/pool with its Makefile and pkg-config; the
#              run's log decodes with the packaged eventcnv
#   cmake      the same with CMake's find_package(telltale)
# Prints "ok NAME", "FAIL NAME: why" or "skip NAME: why" per case, then
# "N passed, N failed"; exits 1 on a failure, else 77 when a case was
# skipped or dpkg-buildpackage or debhelper is missing.

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have() { command -v "$1" >/dev/null 2>&1; }

if ! have dpkg-buildpackage || ! have dh; then
  echo "skip deb: dpkg-buildpackage or debhelper is missing (.ci/install installs them)"
  exit 77
fi
version=$(sh packaging/version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# build
src=$tmp/src/telltale-$version
mkdir -p "$src"
git ls-files -co --exclude-standard -- . ':!tests/data/fuzz' | tar -cf - -T - | tar -xf - -C "$src"
if ! (cd "$src" && dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1; then
  fail build "dpkg-buildpackage: $(grep -m 3 -iE 'error|fail' "$tmp/build.log")"
  finish
fi
changelog=$(cd "$src" && dpkg-parsechangelog -S Version)
missing=""
for p in libtelltale0 libtelltale-dev telltale-tools; do
  [ -f "$tmp/src/${p}_${version}_$arch.deb" ] || missing="$missing ${p}_${version}_$arch.deb"
done
if [ "$changelog" != "$version" ]; then
  fail build "debian/changelog is at $changelog, packaging/version at $version"
elif [ -n "$missing" ]; then
  fail build "not built:$missing (built: $(cd "$tmp/src" && ls ./*.deb | tr '\n' ' '))"
  finish
else
  ok build
fi
deb() { echo "$tmp/src/${1}_${version}_$arch.deb"; }

# contents
why=""
dpkg-deb -c "$(deb libtelltale0)" | awk '{print $6}' | grep -v '^\./usr/share/doc/' | grep -v '/$' >"$tmp/lib"
[ "$(sort "$tmp/lib" | tr '\n' ' ')" = "./usr/lib/$multiarch/libtelltale.so.0 ./usr/lib/$multiarch/libtelltale.so.$version " ] ||
  why="$why libtelltale0 holds $(tr '\n' ' ' <"$tmp/lib");"
for f in ./usr/bin/telltale-gen ./usr/include/telltale/event.h ./usr/lib/$multiarch/libtelltale.so \
         ./usr/lib/$multiarch/libtelltale-off.a ./usr/lib/$multiarch/pkgconfig/telltale.pc \
         ./usr/lib/$multiarch/cmake/telltale/telltaleConfig.cmake ./usr/share/telltale/malloc/eventdef.h; do
  dpkg-deb -c "$(deb libtelltale-dev)" | awk '{print $6}' | grep -qxF "$f" || why="$why no $f in libtelltale-dev;"
done
for f in ./usr/bin/eventcnv ./usr/bin/telltale-replay ./usr/bin/telltale-record ./usr/bin/telltale-heap ./usr/bin/telltale-ctl \
         ./usr/lib/$multiarch/telltale/libtelltale-malloc.so ./usr/share/telltale/gdb/telltale.py \
         ./usr/share/telltale/gdb/eventgen.py; do
  dpkg-deb -c "$(deb telltale-tools)" | awk '{print $6}' | grep -qxF "$f" || why="$why no $f in telltale-tools;"
done
dpkg-deb -f "$(deb libtelltale-dev)" Depends | grep -qF "libtelltale0 (= $version)" ||
  why="$why libtelltale-dev depends on: $(dpkg-deb -f "$(deb libtelltale-dev)" Depends);"
dpkg-deb -f "$(deb libtelltale0)" Depends | grep -q libc6 ||
  why="$why libtelltale0 depends on: $(dpkg-deb -f "$(deb libtelltale0)" Depends);"
if [ -n "$why" ]; then fail contents "$why"; else ok contents; fi

# lintian
if ! have lintian; then
  skip lintian "no lintian"
else
  lintian -I --tag-display-limit 0 "$tmp/src/telltale_${version}_$arch.changes" 2>/dev/null >"$tmp/lintian"
  if grep -qE '^[EW]:' "$tmp/lintian"; then
    fail lintian "$(grep -E '^[EW]:' "$tmp/lintian" | head -n 5 | tr '\n' ' ')"
  else
    ok lintian
    sed 's/^/     /' "$tmp/lintian"
  fi
fi

# make, cmake: a client built against the unpacked packages
root=$tmp/root
for p in libtelltale0 libtelltale-dev telltale-tools; do
  dpkg -x "$(deb "$p")" "$root"
done
export PKG_CONFIG_PATH=$root/usr/lib/$multiarch/pkgconfig
export LD_LIBRARY_PATH=$root/usr/lib/$multiarch
# client NAME DIR PROGRAM -- run the example built in DIR, decode its log
client() {
  if ! (cd "$2" && TELLTALE_FILE="$2/pool.log" "$3") >"$tmp/run" 2>&1; then
    fail "$1" "the example failed: $(tail -n 2 "$tmp/run")"
  elif ! "$root/usr/bin/eventcnv" --count "$2/pool.log" >"$tmp/count" 2>&1; then
    fail "$1" "eventcnv: $(head -n 2 "$tmp/count")"
  elif ! grep -qE '^ *[1-9][0-9]* PoolAlloc$' "$tmp/count"; then
    fail "$1" "no PoolAlloc in the log"
  elif ! ldd "$2/$3" | grep -qF "$root/usr/lib/$multiarch/libtelltale.so.0"; then
    fail "$1" "not linked with the packaged library: $(ldd "$2/$3" | grep telltale)"
  else
    ok "$1"
  fi
}
cp -r examples/pool "$tmp/make"
# (unpacked, not installed: the .pc names /usr, so the prefix is given,
# as the README tells a user of such a tree)
if ! make -C "$tmp/make" PKG_CONFIG="pkg-config --define-variable=prefix=$root/usr" >"$tmp/out" 2>&1; then
  fail make "$(grep -m 2 -E 'rror|warning' "$tmp/out")"
else
  client make "$tmp/make" ./pool
fi
if ! have cmake; then
  skip cmake "no cmake"
else
  cp -r examples/pool "$tmp/cmake"
  if ! (cd "$tmp/cmake" && cmake -S . -B out -DCMAKE_PREFIX_PATH="$root/usr" && cmake --build out) >"$tmp/out" 2>&1; then
    fail cmake "$(grep -m 3 -E 'rror|warning|CMake' "$tmp/out")"
  else
    client cmake "$tmp/cmake" out/pool
  fi
fi
finish
