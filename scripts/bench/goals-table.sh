#!/bin/sh
# Prints tools/bench/goals.tsv, the goals of `treercu quick` and
# `treercu scale --callbacks`, as a markdown table (docs/benchmarks.md shows
# it).  Usage: scripts/bench/goals-table.sh [GOALS.tsv]
set -eu
goals=${1:-$(dirname "$0")/../../tools/bench/goals.tsv}
[ -r "$goals" ] || { echo "goals-table.sh: cannot read $goals" >&2; exit 2; }
awk -F '\t' '
BEGIN {
	print "| goal | row | holds when | meaning |"
	print "|---|---|---|---|"
}
/^#/ || NF == 0 { next }
NF != 6 { printf "goals-table.sh: line %d: %d fields, expected 6\n", NR, NF > "/dev/stderr"; bad = 1; exit }
{
	unit = $5 == "-" ? "" : $5
	if ($3 ~ /^ratio/) {
		op = substr($3, 6)
		ref = "liburcu"
		if (index(op, ":")) {
			ref = substr(op, index(op, ":") + 1)
			gsub(/-/, " ", ref)
			op = substr(op, 1, index(op, ":") - 1)
		}
		cond = "treercu / " ref " " op " " $4 unit
	} else if ($3 == "==") {
		cond = "treercu = " $4 unit
	} else {
		cond = "treercu " $3 " " $4 unit
	}
	gsub(/\|/, "\\|", $6)
	printf "| `%s` | %s | %s | %s |\n", $1, $2, cond, $6
}
END { exit bad }
' "$goals"
