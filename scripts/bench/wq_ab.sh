#!/bin/sh
# SPDX-License-Identifier: MIT
# A/B of the workqueue: two builds of the tool (A = before, B = after) run
# `treercu wq --quick` alternately, ROUNDS times each, so that both see the
# machine's load alike.  Prints each run's deferred-wake items/s per scope,
# then per scope the median of each side, the ratio B/A of the medians and
# each side's spread (max - min) / median over its runs.
#   usage: scripts/bench/wq_ab.sh A/treercu B/treercu [ROUNDS]
set -eu
a=$1 b=$2 rounds=${3:-5}
. "$(dirname "$0")/ab_common.sh"
one_run() {
	# Table rows: | scope | under lock | spread | deferred | spread | gain |
	"$2" wq --quick 2>&1 |
		awk -F'|' -v s="$1" 'NF == 8 && $5 ~ /^ *[0-9]+ *$/ {
			gsub(/ /, "", $2); gsub(/ /, "", $5); print s, $2, $5 }' >>"$tmp"
	printf '%s:' "$1"
	awk -v s="$1" '$1 == s { v[$2] = $3 } END { for (k in v) printf " %s %s", k, v[k]; print "" }' "$tmp"
}
ab_machine
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
ab_each "$rounds" "$a" "$b" one_run
echo "scope        A median   A spread   B median   B spread   B/A"
for scope in cpu smt cache_shard cache numa system; do
	for side in A B; do
		awk -v s="$side" -v c="$scope" '$1 == s && $2 == c { print $3 }' "$tmp" | sort -n |
			awk '{ v[NR] = $1 } END {
				m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "%d %.0f\n", m, 100 * (v[NR] - v[1]) / m }'
	done | awk -v c="$scope" '{ m[NR] = $1; sp[NR] = $2 } END {
		printf "%-12s %9d %9d%% %10d %9d%%   %.3f\n", c, m[1], sp[1], m[2], sp[2], m[2] / m[1] }'
done
