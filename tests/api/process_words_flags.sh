#!/bin/sh
# scripts/check-process-words.sh flags each kind of development-history
# phrase it promises to catch, and passes the product's own vocabulary.
# Each phrase is planted alone in a scratch tree (not a git checkout, so the
# check reads every file) and the check's exit status is compared.
# Usage: process_words_flags.sh CHECK_SCRIPT
set -u
check=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs"
bad=0

expect() { # expect STATUS PHRASE
	printf '%s\n' "$2" >"$tmp/docs/page.md"
	sh "$check" "$tmp" >/dev/null 2>&1
	st=$?
	if [ "$st" -ne "$1" ]; then
		echo "FAIL: \"$2\": check exited $st, expected $1"
		bad=1
	fi
}

# History: each must be flagged (exit 1).  The phrases are written with a
# '|' inside that the loop removes, so that this file itself does not
# read as history to a plain grep of the tree.
for p in "found in the second ses|sion" "the re|viewer asked for it" \
	 "see is|sue 15" "fixed in ru|n 3" "measured on this V|M" \
	 "measured 2026-|01-02" "reverted in com|mit 1a2b3c4d" \
	 "it used to ha|ng" "it hu|ng before the change" \
	 "the p99 before the fi|x" "the first ver|sion of the rule" \
	 "the old co|de read it" "fou|nd by torture" "TSan cau|ght a race" \
	 "as in the previous ru|n" "we tri|ed a spin"; do
	expect 1 "$(printf '%s' "$p" | tr -d '|')"
done
# The product's own words: each must pass (exit 0).
for p in "a million callbacks, first queued to last run" \
	 "the helper threads' CPU" "Round 1: 8 waiters" \
	 "a grace period no longer waits for it" "runs 10 times" \
	 "the waiter list's cleanup pass"; do
	expect 0 "$p"
done
[ "$bad" -eq 0 ] && echo "process_words_flags: every phrase judged as expected"
exit "$bad"
