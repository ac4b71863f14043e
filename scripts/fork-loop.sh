#!/usr/bin/env bash
# Loop fork() tests under load and count the children that hang.
# Usage: scripts/fork-loop.sh BUILD_DIR ROUNDS [TEST...]
#   (default tests: test_fork_child_all_apis test_fork_child_workqueue)
# Beside the loop, one busy loop per CPU keeps every core loaded.  Each
# round runs every test once; a run whose child hit its hard timeout (20 s,
# common/fork_child.h) counts as a hang.  The failing runs' output goes to
# BUILD_DIR/fork-loop-hangs/.
# FORK_LOOP_BT=1: also print `thread apply all bt` (gdb) of every child
# still alive 8 s after the fork into that folder.  Only for finding where
# a child hangs, not for counting: gdb's attach stops every thread, and a
# thread being created at that moment can stay stopped after the detach
# (the child then hangs joining it).
# On a loaded machine a child can also miss its timeout by being slow, so
# every child still alive 12 s after the fork is looked at, without
# stopping it: a thread waiting on a futex inside the ASan allocator's
# region table (0x64000000xxxx on x86-64: one lock per size class) marks a
# child blocked on an allocator lock ("alloc-lock").
# Prints one line per failing run and a closing line "fork-loop: ROUNDS
# rounds, N runs, H hangs (A on an ASan allocator lock), F other failures".
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR ROUNDS [TEST...]" >&2; exit 2; }
bdir=$1; rounds=$2; shift 2
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(test_fork_child_all_apis test_fork_child_workqueue)
out=$bdir/fork-loop-hangs
mkdir -p "$out"
busy=()
for _ in $(seq "$(nproc)"); do
	( while :; do :; done ) &
	busy+=("$!")
done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT

# Watch the test's children; back-trace any older than 8 s once.
watch_children() {
	local tpid=$1 tag=$2 c
	declare -A seen=()
	while kill -0 "$tpid" 2>/dev/null; do
		for c in $(pgrep -P "$tpid"); do
			[ -z "${seen[$c]:-}" ] || continue
			if [ "$(ps -o etimes= -p "$c" 2>/dev/null | tr -d ' ')" -ge 8 ] 2>/dev/null; then
				seen[$c]=1
				gdb -p "$c" -batch -ex "thread apply all bt" >"$out/$tag-child$c.txt" 2>&1
			fi
		done
		sleep 1
	done
}

# Every child of the test older than 12 s: does one of its threads wait on
# an ASan allocator lock?  Marks it in $out/alloc-lock-PID.
watch_locks() {
	local tpid=$1 c t
	while kill -0 "$tpid" 2>/dev/null; do
		for c in $(pgrep -P "$tpid"); do
			[ "$(ps -o etimes= -p "$c" 2>/dev/null | tr -d ' ')" -ge 12 ] 2>/dev/null || continue
			for t in /proc/"$c"/task/*; do
				if grep -q '^202 0x64000000' "$t/syscall" 2>/dev/null; then
					echo "$c" >"$out/alloc-lock-$tpid"
				fi
			done
		done
		sleep 1
	done
}

runs=0; hangs=0; locks=0; other=0
for r in $(seq "$rounds"); do
	for t in "${tests[@]}"; do
		log="$out/last-$t.log"
		"$bdir/tests/process/$t" >"$log" 2>&1 &
		tpid=$!
		watch_locks "$tpid" &
		lpid=$!
		wpid=
		if [ "${FORK_LOOP_BT:-0}" = 1 ]; then
			watch_children "$tpid" "$t-round$r" &
			wpid=$!
		fi
		wait "$tpid"; st=$?
		[ -z "$wpid" ] || wait "$wpid"
		wait "$lpid"
		lock=
		if [ -e "$out/alloc-lock-$tpid" ]; then
			lock=" (alloc-lock)"
			rm -f "$out/alloc-lock-$tpid"
		fi
		runs=$((runs + 1))
		if [ "$st" -ne 0 ]; then
			if grep -q "it hung\|still running" "$log"; then
				hangs=$((hangs + 1))
				[ -z "$lock" ] || locks=$((locks + 1))
			else
				other=$((other + 1))
			fi
			cp "$log" "$out/$t-round$r.log"
			echo "round $r $t: exit $st$lock: $(grep -m1 'child' "$log")"
		fi
	done
done
echo "fork-loop: $rounds rounds, $runs runs, $hangs hangs ($locks on an ASan allocator lock)," \
	"$other other failures"
