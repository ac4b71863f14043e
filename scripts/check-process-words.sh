#!/bin/sh
# The repository speaks of the product only: no development history (who
# found what, when, in which round of work) and no paths outside the tree.
# This check greps the tracked sources and documents for such words and
# prints file:line for each hit; it exits 1 if there is any.
#
# What it looks for (case-insensitive):
#   session / sessions, review / reviewer / reviewed / reviewing,
#   issue N / issue #N, run N / run #N, ../shared, /work/, "this VM",
#   ISO dates (2026-11-24), commit hashes in prose ("commit 1a2b3c4",
#   "at 1a2b3c4"), lab-notebook words (today, yesterday, we measured),
#   bug stories told in the past tense ("used to hang", "hung before",
#   "before the fix", "the first version", "the old code", "found by",
#   "TSan caught", "the previous run", "we tried").
# Where a decision rests on a measurement, the measurement goes to
# docs/decisions.md with the command that reproduces it.
#
# Allow-list: a line that must contain one of these words for a product
# reason (say, a literal string the code parses) carries the marker
# "process-words: allow" on the same line.  Keep such lines rare.
#
# Usage: scripts/check-process-words.sh [SOURCE_DIR]   (default: the
# directory above this script).  Needs grep with -P (GNU grep).
set -eu

top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top"

paths="README.md CHANGELOG.md docs src include tests tools examples scripts compat CMakeLists.txt cmake"
self=scripts/check-process-words.sh

pattern='\bsessions?\b'
pattern="$pattern"'|\breview(s|er|ers|ed|ing)?\b'
pattern="$pattern"'|\bissues?\s*#?\s*[0-9]+'
pattern="$pattern"'|\bruns?\s+#?[0-9]+\b(?!\s*(x|times|iterations|ops|threads|rounds|%|ms|us|ns|s\b))'
pattern="$pattern"'|\.\./shared|/work/'
pattern="$pattern"'|\bthis\s+VM\b'
pattern="$pattern"'|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b'
pattern="$pattern"'|\b(commits?|and|at|on|since|before|after|from|in|reverts?|reverted|fixed|see)\s+(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b'
pattern="$pattern"'|\btoday\b|\byesterday\b|\bwe\s+measured\b'
pattern="$pattern"'|\bused\s+to\s+(be|stay|land|look|hang|return|run|wait|leak|skip|miss|crash|lose|count|spin)\b'
pattern="$pattern"'|\bfound\s+by\b|\b(tsan|asan|ubsan|torture|valgrind|helgrind|we)\s+(found|caught|showed)\b'
pattern="$pattern"'|\bhung\s+before\b|\b(before|after)\s+(the|this)\s+fix\b|\bfirst\s+version\b|\bthe\s+old\s+code\b'
pattern="$pattern"'|\bprevious\s+(run|session|round)\b|\bwe\s+(fixed|changed|found|saw|tried)\b'

# The files to check: tracked ones when this is a git checkout (build
# directories and logs stay out), every regular file otherwise.
list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		# shellcheck disable=SC2086
		git ls-files -co --exclude-standard -- $paths
	else
		for p in $paths; do
			[ -e "$p" ] && find "$p" -type f
		done
	fi
}

hits=$(list_files | grep -vx -e "$self" | while IFS= read -r f; do
	[ -f "$f" ] || continue
	grep -IinHP -- "$pattern" "$f" || true
done | grep -v 'process-words: allow' || true)

if [ -n "$hits" ]; then
	printf '%s\n' "$hits"
	n=$(printf '%s\n' "$hits" | wc -l)
	echo "check-process-words: $n line(s) speak of development history or outside paths;" >&2
	echo "keep the invariant in the code and move history to docs/decisions.md." >&2
	exit 1
fi
echo "check-process-words: clean"
