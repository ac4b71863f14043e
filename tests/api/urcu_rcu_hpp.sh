#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# liburcu's API (treercu's compat headers) and the C++26 <rcu> interface
# (<treercu/rcu.hpp>) in one C++ file: tests/api/headers/urcu_rcu_hpp.cpp
# with each flavor header (<urcu.h>, with RCU_MB and RCU_SIGNAL,
# <urcu-qsbr.h>, <urcu-bp.h>, the five <urcu/urcu-*.h> together), with
# <treercu/rcu.hpp> first and last, by g++ and clang++ as C++17 and C++20
# with -Wall -Wextra -Werror -Wshadow -Wundef; with liburcu's
# <urcu/rculist.h> and <urcu/rculfhash.h> (and liburcu-cds linked) when
# liburcu's headers are installed; once more with -D_LGPL_SOURCE.  Each
# build is linked and run (compiled only in a sanitizer build: the
# sanitizer runtimes of gcc and clang do not mix).  Then in C, compiled by
# gcc and clang: <treercu/rcu.h> with its short names, then each flavor
# header, whose names must then be liburcu's.  A compiler that is not
# installed is skipped with a note.  Exits 0 when everything passed, 1
# otherwise, naming each failure.
#
# usage: urcu_rcu_hpp.sh SRC_DIR WORK_DIR CONFIG_INC URCU_LIB CORE_LIB [SANITIZE]
#   CONFIG_INC  the directory holding the build's generated treercu/config.h
#   URCU_LIB    the built libtreercu-urcu
#   CORE_LIB    the built libtreercu
#   SANITIZE    the build's TREERCU_SANITIZE (linking is skipped when set)
set -u

usage="usage: urcu_rcu_hpp.sh SRC_DIR WORK_DIR CONFIG_INC URCU_LIB CORE_LIB [SANITIZE]"
src=${1:?$usage}
work=${2:?$usage}
config_inc=${3:?$usage}
urcu_lib=${4:?$usage}
core_lib=${5:?$usage}
sanitize=${6:-}

mkdir -p "$work" || exit 1
file="$src/tests/api/headers/urcu_rcu_hpp.cpp"
inc=(-I"$src/compat/urcu/include" -I"$src/include" -I"$config_inc")
warn=(-Wall -Wextra -Werror -Wshadow -Wundef)
rpath="-Wl,-rpath,$(dirname "$urcu_lib"):$(dirname "$core_lib")"
fail=0
ran=0

have() { command -v "$1" >/dev/null 2>&1; }

# liburcu's data-structure headers and library, when installed.
cds=0
libs=()
if have g++ && printf '#include <urcu/rculfhash.h>\n' | g++ -x c++ -E - >/dev/null 2>&1; then
	cds=1
	libs=(-lurcu-cds -lurcu-common)
else
	echo "note: liburcu's headers not installed: built without <urcu/rculist.h> and <urcu/rculfhash.h>"
fi

# build_run LABEL COMPILER STD FIRST FLAVOR [extra flags...]
build_run() {
	local label=$1 cxx=$2 std=$3 first=$4 flavor=$5
	shift 5
	local exe="$work/urcu_rcu_hpp" log="$work/last.log"
	local where=last
	[ "$first" = 1 ] && where=first
	local what="$label: $cxx -std=$std, flavor $flavor, rcu.hpp $where"
	ran=$((ran + 1))
	rm -f "$exe"
	if [ -n "$sanitize" ]; then
		if ! "$cxx" -std="$std" "${warn[@]}" "${inc[@]}" "$@" -DURCU_RCU_HPP_FIRST="$first" \
			-DURCU_RCU_HPP_FLAVOR="$flavor" -DURCU_RCU_HPP_CDS="$cds" \
			-c "$file" -o "$exe.o" >"$log" 2>&1; then
			echo "FAIL: $what: does not compile"
			sed -n '1,12p' "$log"
			fail=1
		fi
		return
	fi
	if ! "$cxx" -std="$std" -O1 -g "${warn[@]}" "${inc[@]}" "$@" -DURCU_RCU_HPP_FIRST="$first" \
		-DURCU_RCU_HPP_FLAVOR="$flavor" -DURCU_RCU_HPP_CDS="$cds" \
		"$file" "$urcu_lib" "$core_lib" "${libs[@]}" "$rpath" -pthread -o "$exe" >"$log" 2>&1; then
		echo "FAIL: $what: does not build"
		sed -n '1,12p' "$log"
		fail=1
		return
	fi
	if ! out=$(timeout 120 "$exe" 2>&1); then
		echo "FAIL: $what: ran and failed:"
		echo "$out" | sed -n '1,12p'
		fail=1
	fi
}

for cxx in g++ clang++; do
	if ! have "$cxx"; then echo "skip: $cxx not installed"; continue; fi
	for std in c++17 c++20; do
		for first in 1 0; do
			for flavor in 1 2 3 4 5 6; do
				build_run "both headers" "$cxx" "$std" "$first" "$flavor"
			done
		done
	done
	# liburcu's inline (LGPL) spellings selected by the program.
	for first in 1 0; do
		build_run "_LGPL_SOURCE" "$cxx" c++17 "$first" 1 -D_LGPL_SOURCE
		build_run "_LGPL_SOURCE" "$cxx" c++17 "$first" 4 -D_LGPL_SOURCE
	done
done

# C: <treercu/rcu.h>'s short names first, then liburcu's flavor header.
for flavor in "urcu.h" "urcu-qsbr.h" "urcu-bp.h" "urcu.h -DRCU_MB" "urcu.h -DRCU_SIGNAL"; do
	# shellcheck disable=SC2086  # the header and its flags
	set -- $flavor
	f="$work/after_rcu_h.c"
	{
		printf '#include <treercu/rcu.h>\n#include <%s>\n' "$1"
		[ "$cds" = 1 ] && printf '#include <urcu/rculist.h>\n#include <urcu/rculfhash.h>\n'
		cat <<'EOF'
static int *after_p;
static void after_cb(struct rcu_head *h) { (void)h; }
int after_use(struct rcu_head *h);
int after_use(struct rcu_head *h)
{
	void (*barrier)(void) = rcu_barrier;      /* liburcu's, a function */
	struct urcu_gp_poll_state s = start_poll_synchronize_rcu(); /* liburcu's type */
	int v;

	rcu_register_thread();
	rcu_read_lock();
	v = rcu_dereference(after_p) != 0;
	rcu_read_unlock();
	call_rcu(h, after_cb);
	synchronize_rcu();
	barrier();
	v += poll_state_synchronize_rcu(s);
	rcu_quiescent_state();
	rcu_unregister_thread();
	return v;
}
EOF
	} >"$f"
	for cc in gcc clang; do
		have "$cc" || continue
		ran=$((ran + 1))
		if ! "$cc" -std=gnu11 "${warn[@]}" "${inc[@]}" "${@:2}" -c "$f" -o "$work/after_rcu_h.o" \
			>"$work/last.log" 2>&1; then
			echo "FAIL: C, <treercu/rcu.h> then <$1>${2:+ $2}: $cc: does not compile"
			sed -n '1,12p' "$work/last.log"
			fail=1
		fi
	done
done

if [ "$ran" -eq 0 ]; then
	echo "skip: no C++ compiler"
	exit 0
fi
if [ "$fail" -ne 0 ]; then
	echo "urcu + rcu.hpp: FAILED ($ran builds)"
	exit 1
fi
echo "urcu + rcu.hpp: ok ($ran builds, liburcu data structures: $([ "$cds" = 1 ] && echo yes || echo no))"
exit 0
