#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library and its tests built for arm64 with Debian's cross toolchain and
# run under qemu-user on an x86-64 machine (instructions emulated; the
# memory model is the host's, so this checks the arm64 code paths and their
# build, not arm64's weak ordering).  Installs what it needs when run as
# root: gcc/g++-aarch64-linux-gnu, qemu-user, qemu-user-binfmt; registers
# the binfmt handler (the scenario tests re-execute themselves) when
# binfmt_misc can be mounted.
#
# Left out: the tests that fork a multi-threaded process (qemu-user 7.2
# aborts in the child: "qemu_plugin_vcpu_init_hook: assertion failed"), the
# two that count the process's threads (qemu adds its own), the install,
# header and valgrind checks (host tools), and the C++ test built by the
# other host compiler.
#
#   usage: scripts/arm64-qemu.sh [BUILD_DIR]   (default build-arm64)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-arm64}
sysroot=/usr/aarch64-linux-gnu
tools="qemu-aarch64 aarch64-linux-gnu-gcc aarch64-linux-gnu-g++"
missing() { for t in $tools; do command -v "$t" >/dev/null || echo "$t"; done; }
if [ -n "$(missing)" ] && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu \
		g++-aarch64-linux-gnu qemu-user qemu-user-binfmt >/dev/null
fi
if [ -n "$(missing)" ]; then
	echo "arm64-qemu: not found: $(missing | tr '\n' ' ')" >&2
	exit 2
fi
bf=/proc/sys/fs/binfmt_misc
if [ ! -e "$bf/qemu-aarch64" ] && [ "$(id -u)" = 0 ]; then
	[ -e "$bf/register" ] || mount binfmt_misc -t binfmt_misc "$bf" 2>/dev/null || true
	if [ -e "$bf/register" ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
		cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$bf/register" || true
	fi
fi
[ -e "$bf/qemu-aarch64" ] ||
	echo "arm64-qemu: no binfmt handler for arm64: the scenario tests will fail to exec" >&2
cmake -S "$here" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$here/cmake/aarch64-linux-gnu.cmake" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTREERCU_WERROR=ON -DTREERCU_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" -- -k >"$build/build.log" 2>&1 || true
# The library and every test program this run needs must have built.
grep -E "error:" "$build/build.log" | grep -v "other_cxx\|wrong format\|linker command" &&
	{ echo "arm64-qemu: build errors (see $build/build.log)" >&2; exit 1; }
skip='other_cxx|install_consumers|static_target|header_matrix|valgrind|urcu_with_rcu_hpp'
skip+='|fork|test_dlclose_after_use|test_wq_shutdown_waits_for_worker_creation'
QEMU_LD_PREFIX=$sysroot ctest --test-dir "$build" -j "$(nproc)" --timeout 300 -E "$skip" \
	--output-on-failure
