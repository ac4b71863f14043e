#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of QSBR grace periods behind busy QSBR readers: two builds of the tool
# (A = before, B = after) run `treercu scale --peers treercu-qsbr,qsbr`
# alternately, ROUNDS times each, with READERS busy readers and one caller;
# each run measures liburcu qsbr in the same process, interleaved, so the
# ratio of the two rows of one run compares the libraries across the
# machine's load.  Prints per run: build, load average, then the treercu
# qsbr and liburcu qsbr rows (p50, p99, max, calls/s, reader sections/s).
#   usage: scripts/bench/qsbr_scale_ab.sh A/treercu B/treercu [ROUNDS] [READERS] [REPEATS]
set -eu
a=$1 b=$2 rounds=${3:-2} readers=${4:-2} repeats=${5:-9}
. "$(dirname "$0")/ab_common.sh"
one_run() {
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	out=$("$2" scale --readers "$readers" --callers 1 --peers treercu-qsbr,qsbr \
		--repeats "$repeats" 2>&1)
	printf '%s (load %s)\n' "$1" "$load"
	printf '%s\n' "$out" | grep -E '^\| (treercu qsbr|liburcu qsbr) ' | tr -s ' ' |
		cut -d'|' -f2,6-10
}
ab_machine
ab_each "$rounds" "$a" "$b" one_run
