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
src=$(dirname "$0")/sync_callers.c
top=$(dirname "$0")/../..
for d in "$a" "$b"; do
	cc -O2 -I"$top/include" -I"$d/include" "$src" "$d/libtreercu.a" -lpthread \
	   -o "$d/sync_callers_bench"
done
echo "machine: $(nproc) CPUs, $(uname -m), $(date -u '+%Y-%m-%d %H:%M UTC'); $callers callers, $secs s"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
	for side in A B; do
		if [ "$side" = A ]; then d=$a; else d=$b; fi
		out=$("$d/sync_callers_bench" "$secs" "$callers")
		echo "$side: $out | $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "$side $out" >>"$tmp"
	done
	i=$((i + 1))
done
for side in A B; do
	grep "^$side " "$tmp" | awk -v s="$side" '
	function median(arr, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
		return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
	}
	{ k++; c[k] = $3; p50[k] = $5; p99[k] = $7; if ($5 < 2000) fast++ }
	END { printf "%s: %d runs, p50 under 2 us in %d; median p50 %.0f ns, p99 %.0f ns, calls %.0f\n",
	      s, k, fast, median(p50, k), median(p99, k), median(c, k) }'
done
