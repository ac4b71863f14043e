#!/usr/bin/env bash
# call_rcu() under address-space limits: builds call_rcu_many_threads.c
# against BUILD_DIR's libtreercu.a and runs it 3 times at each limit.
# Usage: scripts/adversarial/ulimit_call_rcu.sh BUILD_DIR
# Prints one line per run (limit, exit status, last line) and a count of
# runs that did not exit 0 (an abort, a lost callback or a hang past 60 s).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$here/../../include" -I"$b/include" "$here/call_rcu_many_threads.c" \
   "$b/libtreercu.a" -lpthread -ldl -o "$tmp/app" || exit 2
bad=0
for kb in 10000 15000 20000 30000 40000 60000 100000; do
  for run in 1 2 3; do
    out=$( (ulimit -v "$kb"; timeout 60 "$tmp/app" 64) 2>&1 ); rc=$?
    echo "ulimit -v $kb run $run: exit $rc: $(tail -1 <<<"$out")"
    [ "$rc" = 0 ] || bad=$((bad + 1))
  done
done
echo "ulimit_call_rcu: $bad runs failed"
[ "$bad" = 0 ]
