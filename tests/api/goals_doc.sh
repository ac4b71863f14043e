#!/bin/sh
# docs/benchmarks.md shows the quick summary's goals exactly as
# tools/bench/goals.tsv says them: the table that
# scripts/bench/goals-table.sh renders from the file must appear in the
# page verbatim (it also refuses a malformed goals line).
# Usage: goals_doc.sh SOURCE_DIR
set -eu
src=$1
table=$(mktemp)
trap 'rm -f "$table"' EXIT
sh "$src/scripts/bench/goals-table.sh" "$src/tools/bench/goals.tsv" >"$table"
awk -v t="$table" '
BEGIN { while ((getline l < t) > 0) want[n++] = l }
{ page[m++] = $0 }
END {
	for (i = 0; i + n <= m; i++) {
		for (k = 0; k < n && page[i + k] == want[k]; k++)
			;
		if (k == n)
			exit 0
	}
	print "goals_doc: docs/benchmarks.md does not show tools/bench/goals.tsv as " \
	      "scripts/bench/goals-table.sh renders it; rerun it and paste its output " \
	      "under \"Goals\"" > "/dev/stderr"
	exit 1
}' "$src/docs/benchmarks.md"
echo "goals_doc: docs/benchmarks.md shows the goals of tools/bench/goals.tsv"
