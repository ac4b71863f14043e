#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of synchronize_rcu(): two builds of the tool (A = before, B = after)
# run `treercu scale` alternately, ROUNDS times each, on one configuration
# (READERS busy readers, CALLERS callers, the library's default path); each
# run measures liburcu memb in the same process, so the ratio columns
# compare the builds across the machine's load.  Prints one line per run:
# build, the treercu row, the liburcu memb row (its last columns are
# treercu's p50, p99 and calls/s ratios to it) and the load average.
# REPEATS unset: a --quick run; set: --repeats REPEATS --duration 0.3.
#   usage: scripts/bench/scale_ab.sh A/treercu B/treercu [ROUNDS] [CALLERS] [READERS] [REPEATS]
set -eu
a=$1 b=$2 rounds=${3:-3} callers=${4:-1} readers=${5:-0} repeats=${6:-}
if [ -n "$repeats" ]; then len="--repeats $repeats --duration 0.3"; else len=--quick; fi
. "$(dirname "$0")/ab_common.sh"
one_run() {
	# shellcheck disable=SC2086
	out=$("$2" scale $len --readers "$readers" --callers "$callers" \
	      --peers treercu,memb --no-callbacks 2>&1)
	row=$(printf '%s\n' "$out" | grep '^| treercu ' | tr -s ' ')
	peer=$(printf '%s\n' "$out" | grep '^| liburcu memb ' | tr -s ' ')
	load=$(printf '%s\n' "$out" | grep -o 'load average [0-9. ]*' || true)
	echo "$1: $row $peer $load"
}
ab_machine
ab_each "$rounds" "$a" "$b" one_run
