#!/usr/bin/env bash
# Install what treercu's scripts need on a fresh Debian machine (run as root).
# The library itself needs only a C11 compiler, CMake and pthreads; the rest
# is for the tool (liburcu-dev; libck-dev for its ck_epoch peer, which the
# tool leaves out with a note when it is missing), the tests (valgrind, clang for the clang
# build, pkg-config for the install check) and binutils (objcopy builds the
# static library, nm checks the exports).
set -euo pipefail
need=()
# g++ and clang: the C++ header's tests and the public headers' compile
# matrix build with both (tests/api/CMakeLists.txt), and scripts/test.sh has a
# clang build; binutils: objdump, objcopy, nm; gcc-aarch64-linux-gnu and
# python3: the arm64 check of the task read side's code
# (scripts/check-task-readside.sh, skipped without them).
for p in cmake gcc g++ clang binutils make liburcu-dev libck-dev valgrind zlib1g-dev \
         gcc-aarch64-linux-gnu python3; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# pkg-config: the package of that name, or pkgconf, which provides it.
command -v pkg-config >/dev/null || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
