#!/usr/bin/env bash
# Install what treercu needs on a fresh Debian machine (run as root).
set -euo pipefail
need=()
# g++ and clang: the C++ header's tests and the public headers' compile
# matrix build with both (tests/CMakeLists.txt); binutils: its objdump.
for p in cmake gcc g++ clang binutils make liburcu-dev valgrind zlib1g-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
