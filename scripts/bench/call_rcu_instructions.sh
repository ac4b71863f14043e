#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per call_rcu() in a flood, counted by callgrind (repeatable
# whatever the machine's load): builds call_rcu_flood.c against each build
# directory's libtreercu.a and prints the program's total and
# call_rcu_core()'s own instructions (1000000 calls), three runs each
# (the offload thread and the push-back's waits vary a little from run to
# run: the flood's callers wait on the offload thread).
#   usage: scripts/bench/call_rcu_instructions.sh BUILD_DIR [BUILD_DIR...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in "$@"; do
	cc -O2 -g -I"$here/../../include" -I"$d/include" "$here/call_rcu_flood.c" \
	   "$d/libtreercu.a" -lpthread -ldl -o "$tmp/flood"
	for run in 1 2 3; do
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tmp/flood" \
			 >/dev/null 2>&1
		total=$(callgrind_annotate "$tmp/cg.out" | awk '/PROGRAM TOTALS/{print $1}')
		core=$(callgrind_annotate "$tmp/cg.out" | awk '/:call_rcu_core /{print $1; exit}')
		echo "$d run $run: program $total Ir, call_rcu_core $core Ir (1000000 calls)"
	done
done
