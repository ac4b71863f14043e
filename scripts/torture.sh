#!/usr/bin/env bash
# Torture every synchronize_rcu() path in the normal, ASan+UBSan and TSan
# builds at once: 9 processes (3 builds x paths 0, 1, 2), each
# `treercu torture --duration SECS --sync-path P`, all in parallel (on a
# small machine they oversubscribe it, which is part of the test).
# Usage: scripts/torture.sh [SECS=600] [OUTDIR=torture-logs]
# Exit 0 only if every run exits 0.  One line per run: build, path, exit
# status and the run's summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
out=${2:-torture-logs}
mkdir -p "$out"
scripts/deps.sh
# The same three configurations as scripts/test.sh.
for cfg in normal:"" asan:address tsan:thread; do
  b=${cfg%%:*}; san=${cfg#*:}
  cmake -S . -B "build-$b" -DTREERCU_SANITIZE="$san" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTREERCU_WERROR=ON -DTREERCU_BUILD_TOOLS=ON >/dev/null &&
    cmake --build "build-$b" -j "$(nproc)" >/dev/null || { echo "build-$b: build failed" >&2; exit 1; }
done
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="detect_leaks=1" \
  UBSAN_OPTIONS="print_stacktrace=1"
pids=()
for b in normal asan tsan; do
  for p in 0 1 2; do
    "build-$b/treercu" torture --duration "$secs" --sync-path "$p" >"$out/$b-path$p.log" 2>&1 &
    pids+=("$!:$b:$p")
  done
done
rc=0
for e in "${pids[@]}"; do
  IFS=: read -r pid b p <<<"$e"
  wait "$pid"; st=$?
  [ "$st" -eq 0 ] || rc=1
  printf '%-6s path %s: exit %d  %s\n' "$b" "$p" "$st" "$(tail -n1 "$out/$b-path$p.log")"
done
exit $rc
