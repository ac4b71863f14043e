#!/bin/sh
# SPDX-License-Identifier: MIT
# Count what one idle synchronize_rcu() executes on the calling thread (one
# idle registered thread, after 1000 warm-up calls): user instructions per
# function, and every locked instruction (lock prefix, xchg, mfence) with
# the function it is in.  Needs gdb and a built build-release/.
#   usage: scripts/trace/idle_gp_steps.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/../.."
b=${1:-build-release}
out=$(mktemp -d)
cc -O2 -g -Iinclude -I"$b/include" scripts/trace/idle_gp_steps.c "$b/libtreercu.a" \
	-lpthread -o "$out/idle_gp_steps"
gdb -q -batch -ex "set logging file $out/steps.txt" -x scripts/trace/idle_gp_steps.py \
	"$out/idle_gp_steps" >/dev/null 2>&1
echo "user instructions: $(wc -l < "$out/steps.txt")"
echo "per function:"
awk '{print $1}' "$out/steps.txt" | sort | uniq -c | sort -rn | head -20
echo "locked instructions:"
grep -E '	(lock |xchg|mfence)' "$out/steps.txt" | awk '{f=$1; sub(/.*>:[ \t]*/, ""); print f ": " $0}'
rm -rf "$out"
