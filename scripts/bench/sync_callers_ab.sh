#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of many synchronize_rcu() callers (scripts/bench/sync_callers.c):
# built against two build directories' libtreercu.a (A = before, B =
# after), run alternately ROUNDS times each for SECONDS; prints every run,
# then per side the runs whose p50 was under 2 us and the medians of the
# runs' p50, p99 and calls.
#   usage: scripts/bench/sync_callers_ab.sh BUILD_A BUILD_B [ROUNDS] [SECONDS] [CALLERS]
set -eu
a=$1 b=$2 rounds=${3:-20} secs=${4:-0.2} callers=${5:-8}
. "$(dirname "$0")/ab_common.sh"
ab_build "$(dirname "$0")/sync_callers.c" sync_callers_bench "$a" "$b"
ab_machine "$callers callers, $secs s"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
ab_alternate "$rounds" "$tmp" "$a" "$b" sync_callers_bench "$secs" "$callers"
for side in A B; do
	grep "^$side " "$tmp" | awk -v s="$side" "$ab_median_awk"'
	{ k++; c[k] = $3; p50[k] = $5; p99[k] = $7; if ($5 < 2000) fast++ }
	END { printf "%s: %d runs, p50 under 2 us in %d; median p50 %.0f ns, p99 %.0f ns, calls %.0f\n",
	      s, k, fast, median(p50, k), median(p99, k), median(c, k) }'
done
