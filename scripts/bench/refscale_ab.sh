#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of the read side: two builds of the tool (A = before, B = after) run
# `treercu refscale` alternately, ROUNDS times each; each run measures its
# own liburcu memb in the same process, so the ratio column compares builds
# across the machine's load.  Prints one line per run: build, then the
# tool's ratio line, the treercu qsbr row for 1 reader and, where the build
# has it, the task pair's ratio to the thread pair.
#   usage: scripts/bench/refscale_ab.sh A/treercu B/treercu [ROUNDS] [REPEATS] [MS]
set -eu
a=$1 b=$2 rounds=${3:-3} repeats=${4:-5} ms=${5:-200}
. "$(dirname "$0")/ab_common.sh"
one_run() {
	out=$("$2" refscale --repeats "$repeats" --ms "$ms" 2>&1)
	ratio=$(printf '%s\n' "$out" | grep '^ratio treercu/liburcu memb')
	qsbr=$(printf '%s\n' "$out" | grep '^| 1 .*treercu qsbr' | tr -s ' ')
	task=$(printf '%s\n' "$out" | grep '^ratio treercu task' || true)
	load=$(printf '%s\n' "$out" | grep -o 'load average [0-9. ]*' || true)
	echo "$1: $ratio | qsbr $qsbr | $load${task:+ | $task}"
}
ab_machine
ab_each "$rounds" "$a" "$b" one_run
