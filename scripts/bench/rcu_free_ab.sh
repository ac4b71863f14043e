#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of rcu_free() (scripts/bench/rcu_free.c): built against two build
# directories' libtreercu.a (A = before, B = after), run alternately ROUNDS
# times each; prints every run, then the median objects/s and CPU ns per
# object of each side and B/A.
#   usage: scripts/bench/rcu_free_ab.sh BUILD_A BUILD_B [ROUNDS] [NOBJ] [UPDATERS]
set -eu
a=$1 b=$2 rounds=${3:-7} nobj=${4:-1000000} upd=${5:-1}
src=$(dirname "$0")/rcu_free.c
top=$(dirname "$0")/../..
for d in "$a" "$b"; do
	cc -O2 -I"$top/include" -I"$d/include" "$src" "$d/libtreercu.a" -lpthread \
	   -o "$d/rcu_free_bench"
done
echo "machine: $(nproc) CPUs, $(uname -m), $(date -u '+%Y-%m-%d %H:%M UTC'); $nobj objects, $upd updater(s)"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
	for side in A B; do
		if [ "$side" = A ]; then d=$a; else d=$b; fi
		out=$("$d/rcu_free_bench" "$nobj" "$upd")
		echo "$side: $out | $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "$side $out" >>"$tmp"
	done
	i=$((i + 1))
done
awk '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
	return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
{
	s = $1; k = ++n[s]
	if (s == "A") { ra[k] = $3; ca[k] = $5; ua[k] = $7 } else { rb[k] = $3; cb[k] = $5; ub[k] = $7 }
}
END {
	ma = median(ra, n["A"]); mb = median(rb, n["B"]); xa = median(ca, n["A"]); xb = median(cb, n["B"])
	va = median(ua, n["A"]); vb = median(ub, n["B"])
	printf "median A: %.0f objects/s, %.1f CPU ns/object, %.0f calls/s\n", ma, xa, va
	printf "median B: %.0f objects/s, %.1f CPU ns/object, %.0f calls/s\n", mb, xb, vb
	printf "B/A: objects/s %.3f, CPU/object %.3f, calls/s %.3f\n", mb / ma, xb / xa, vb / va
}' "$tmp"
