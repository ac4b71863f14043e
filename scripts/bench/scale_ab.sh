#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of synchronize_rcu(): two builds of the tool (A = before, B = after)
# run `treercu scale` alternately, ROUNDS times each, on one configuration
# (no reader, CALLERS callers, the library's default path); each run
# measures liburcu memb in the same process, so the ratio columns compare
# the builds across the machine's load.  Prints one line per run: build,
# then the treercu row's p50, calls/s and their ratios to liburcu.
#   usage: scripts/bench/scale_ab.sh A/treercu B/treercu [ROUNDS] [CALLERS]
set -eu
a=$1 b=$2 rounds=${3:-3} callers=${4:-1}
echo "machine: $(nproc) CPUs, $(uname -m), $(date -u '+%Y-%m-%d %H:%M UTC')"
i=0
while [ "$i" -lt "$rounds" ]; do
	for side in A B; do
		if [ "$side" = A ]; then bin=$a; else bin=$b; fi
		out=$("$bin" scale --quick --readers 0 --callers "$callers" --no-callbacks 2>&1)
		row=$(printf '%s\n' "$out" | grep '^| treercu ' | tr -s ' ')
		load=$(printf '%s\n' "$out" | grep -o 'load average [0-9. ]*' || true)
		echo "$side: $row $load"
	done
	i=$((i + 1))
done
