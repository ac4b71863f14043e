#!/usr/bin/env bash
# treercu as a dependency, every supported way, from a fresh build of the
# source tree:
#   1. cmake -S SRC -B b && cmake --build b && cmake --install b --prefix P
#      installs the headers (with config.h), libtreercu.a, libtreercu.so.0,
#      the CMake package and treercu.pc;
#   2. a separate project builds and runs against P with find_package(treercu),
#      static and shared, and its own shared object links libtreercu.a;
#   3. the same program built with `pkg-config --cflags --libs treercu`,
#      shared and (--static) fully static;
#   3b. tests/api/urcu_api.c, a liburcu program, built per flavor with
#      `pkg-config --cflags --libs treercu-urcu liburcu-cds` and run;
#   4. a project using add_subdirectory(), and one using FetchContent, build
#      their default target (treercu's tests and tool are not built there,
#      and liburcu is not looked for);
#   5. without liburcu, the library configures and builds (the tool is
#      skipped), and TREERCU_BUILD_TOOLS=ON fails with a message naming it.
# The consumer program (tests/api/consumer/app.c) also defines a global and a
# function named like library internals.
# Usage: scripts/check-install.sh [WORKDIR]   (CC, CMAKE_GENERATOR honoured)
# Exits 0 when every step passes; otherwise names the step that failed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$src/build-install-check}
cc=${CC:-cc}
jobs=${JOBS:-2}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
P=$work/prefix
consumer=$src/tests/api/consumer

step() { echo "--- $*"; }
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }
needs_so() {    # needs_so BINARY yes|no: whether it is linked to libtreercu.so.0
  if readelf -d "$1" | grep -q 'NEEDED.*libtreercu\.so\.0'; then
    [ "$2" = yes ] || fail "$1 is linked to libtreercu.so.0, expected the static library"
  else
    [ "$2" = no ] || fail "$1 is not linked to libtreercu.so.0"
  fi
}
cmake_q() { cmake "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; return 1; }; }

step "fresh build and install into $P"
cmake_q -S "$src" -B "$work/b" -DCMAKE_C_COMPILER="$cc" -DTREERCU_BUILD_TESTS=OFF \
  || fail "configure"
cmake_q --build "$work/b" -j "$jobs" || fail "build"
cmake_q --install "$work/b" --prefix "$P" || fail "install"
libdir=$(dirname "$(find "$P" -name libtreercu.a | head -1)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "no libtreercu.a under $P"
for f in include/treercu/rcu.h include/treercu/workqueue.h include/treercu/treercu.h \
         include/treercu/config.h share/doc/treercu/CHANGELOG.md; do
  [ -f "$P/$f" ] || fail "not installed: $f"
done
for f in libtreercu.so libtreercu.so.0 cmake/treercu/treercuConfig.cmake \
         cmake/treercu/treercuConfigVersion.cmake pkgconfig/treercu.pc; do
  [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
soname=$(readelf -d "$libdir/libtreercu.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libtreercu.so.0 ] || fail "SONAME is '$soname', expected libtreercu.so.0"
echo "installed: $(cd "$P" && find . -type f -o -type l | sort | tr '\n' ' ')"

for shared in OFF ON; do
  step "find_package(treercu), BUILD_SHARED_LIBS=$shared"
  b=$work/package-$shared
  cmake_q -S "$consumer/package" -B "$b" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$P" -DBUILD_SHARED_LIBS=$shared || fail "find_package consumer: configure"
  cmake_q --build "$b" -j "$jobs" || fail "find_package consumer: build"
  "$b/app" || fail "find_package consumer ($shared): run"
  if [ $shared = ON ]; then needs_so "$b/app" yes; else needs_so "$b/app" no; fi
  "$b/plugin_main" || fail "a shared object linking libtreercu.a: run"
  needs_so "$b/libplugin.so" no
done

step "pkg-config --cflags --libs treercu (shared, then --static)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc=$(pkg-config --cflags --libs treercu) || fail "pkg-config treercu"
echo "pkg-config: $pc"
# shellcheck disable=SC2086
"$cc" -Wall -Wextra -Werror -o "$work/app-pc" "$consumer/app.c" $pc -Wl,-rpath,"$libdir" \
  || fail "pkg-config consumer: build"
"$work/app-pc" || fail "pkg-config consumer: run"
needs_so "$work/app-pc" yes
pcs=$(pkg-config --static --cflags --libs treercu)
echo "pkg-config --static: $pcs"
# shellcheck disable=SC2086
"$cc" -static -Wall -Wextra -Werror -o "$work/app-pc-static" "$consumer/app.c" $pcs \
  || fail "pkg-config --static consumer: build"
"$work/app-pc-static" || fail "pkg-config --static consumer: run"
needs_so "$work/app-pc-static" no

step "a liburcu program switched by its pkg-config module alone: treercu-urcu (each flavor)"
for f in include/treercu/urcu/urcu.h include/treercu/urcu/urcu/urcu-qsbr.h \
         include/treercu/urcu/urcu/flavor.h; do
  [ -f "$P/$f" ] || fail "not installed: $f"
done
[ -e "$libdir/pkgconfig/treercu-urcu.pc" ] || fail "not installed: treercu-urcu.pc"
if pkg-config --exists liburcu-cds; then
  pcu=$(pkg-config --cflags --libs treercu-urcu liburcu-cds) || fail "pkg-config treercu-urcu"
  echo "pkg-config treercu-urcu liburcu-cds: $pcu"
  for fl in MEMB QSBR BP; do
    # shellcheck disable=SC2086
    "$cc" -Wall -Wextra -Werror -DURCU_API_TEST_$fl -o "$work/urcu-$fl" "$src/tests/api/urcu_api.c" \
      $pcu -Wl,-rpath,"$libdir" || fail "treercu-urcu consumer ($fl): build"
    "$work/urcu-$fl" || fail "treercu-urcu consumer ($fl): run"
  done
else
  echo "liburcu-cds not installed: the liburcu program is not built"
fi

for via in subdir fetch; do
  step "a project that builds treercu itself ($via), default target"
  b=$work/consumer-$via
  if [ $via = subdir ]; then
    # With treercu's tests on too: they build inside a consumer's tree.
    args=(-DTREERCU_SOURCE_DIR="$src" -DTREERCU_BUILD_TESTS=ON)
  else
    args=(-DTREERCU_FETCH=ON -DFETCHCONTENT_SOURCE_DIR_TREERCU="$src")
  fi
  cmake_q -S "$consumer/subdir" -B "$b" -DCMAKE_C_COMPILER="$cc" "${args[@]}" \
    || fail "$via consumer: configure"
  ! grep -qE '^(URCU_|ZLIB_)' "$b/CMakeCache.txt" || fail "$via consumer: the tool's liburcu or zlib was looked for"
  cmake_q --build "$b" -j "$jobs" || fail "$via consumer: build of the default target"
  "$b/app" || fail "$via consumer: run"
  "$b/test_gp" >/dev/null || fail "$via consumer: its own test_gp"
done

step "without liburcu"
# Hide the directories where the first configure found liburcu (and their
# /lib <-> /usr/lib twins on a merged-/usr system).
ignore=()
for d in $(sed -n 's/^URCU_[A-Z]*:FILEPATH=\(\/.*\)\/[^/]*$/\1/p' "$work/b/CMakeCache.txt" | sort -u); do
  ignore+=("$d")
  case $d in
    /usr/lib*) ignore+=("${d#/usr}") ;;
    /lib*) ignore+=("/usr$d") ;;
  esac
done
ign=$(IFS=';'; echo "${ignore[*]:-}")
b=$work/no-urcu
cmake_q -S "$src" -B "$b" -DCMAKE_C_COMPILER="$cc" -DTREERCU_BUILD_TESTS=OFF \
  -DCMAKE_IGNORE_PATH="$ign" || fail "configure without liburcu"
grep -q '^URCU_MEMB:FILEPATH=URCU_MEMB-NOTFOUND' "$b/CMakeCache.txt" \
  || fail "liburcu was not hidden (CMAKE_IGNORE_PATH=$ign)"
echo "liburcu hidden: CMAKE_IGNORE_PATH=$ign"
grep -q 'liburcu.*not found' "$work/last.log" || fail "configure did not say the tool is skipped"
cmake_q --build "$b" -j "$jobs" || fail "build without liburcu"
[ ! -e "$b/treercu" ] || fail "the tool was built without liburcu"
if cmake -S "$src" -B "$work/no-urcu-tools" -DCMAKE_C_COMPILER="$cc" -DTREERCU_BUILD_TESTS=OFF \
     -DTREERCU_BUILD_TOOLS=ON -DCMAKE_IGNORE_PATH="$ign" >"$work/last.log" 2>&1; then
  fail "TREERCU_BUILD_TOOLS=ON configured without liburcu"
fi
grep -q 'liburcu.*not found' "$work/last.log" || fail "TREERCU_BUILD_TOOLS=ON: no message naming liburcu"
b=$work/no-tools
cmake_q -S "$src" -B "$b" -DCMAKE_C_COMPILER="$cc" -DTREERCU_BUILD_TESTS=OFF \
  -DTREERCU_BUILD_TOOLS=OFF || fail "configure with TREERCU_BUILD_TOOLS=OFF"
! grep -qE '^[A-Za-z_]*(URCU|ZLIB)[A-Za-z_]*:' "$b/CMakeCache.txt" || fail "TREERCU_BUILD_TOOLS=OFF: liburcu or zlib was looked for"

echo "check-install: all passed"
