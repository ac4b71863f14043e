#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of rcu_free() (scripts/bench/rcu_free.c): built against two build
# directories' libtreercu.a (A = before, B = after), run alternately ROUNDS
# times each; prints every run, then the median objects/s and CPU ns per
# object of each side and B/A.
#   usage: scripts/bench/rcu_free_ab.sh BUILD_A BUILD_B [ROUNDS] [NOBJ] [UPDATERS]
set -eu
a=$1 b=$2 rounds=${3:-7} nobj=${4:-1000000} upd=${5:-1}
. "$(dirname "$0")/ab_common.sh"
ab_build "$(dirname "$0")/rcu_free.c" rcu_free_bench "$a" "$b"
ab_machine "$nobj objects, $upd updater(s)"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
ab_alternate "$rounds" "$tmp" "$a" "$b" rcu_free_bench "$nobj" "$upd"
awk "$ab_median_awk"'
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
