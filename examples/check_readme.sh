#!/bin/sh
# The README's quick start is examples/quickstart.c: the first ```c block
# after the "## Quick start" heading must equal the file exactly.
# Usage: check_readme.sh README.md quickstart.c
set -eu
readme=$1 example=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk '
	/^## / { in_section = ($0 == "## Quick start") }
	in_section && !done && /^```c$/ { in_block = 1; next }
	in_block && /^```$/ { in_block = 0; done = 1; next }
	in_block { print }
' "$readme" >"$tmp"
if [ ! -s "$tmp" ]; then
	echo "check_readme: no \`\`\`c block under \"## Quick start\" in $readme"
	exit 1
fi
if ! diff -u "$example" "$tmp"; then
	echo "check_readme: the README's quick start differs from $example (diff above: - file, + README)"
	exit 1
fi
echo "check_readme: the README's quick start is $example ($(wc -l <"$tmp") lines)"
