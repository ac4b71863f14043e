#!/usr/bin/env bash
# The test command: builds the normal, ASan+UBSan and TSan configurations and
# runs every test (unit tests + torture smoke run) in each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
fail=0
for cfg in normal:"" asan:address tsan:thread; do
  name=${cfg%%:*}; san=${cfg#*:}
  dir=build-$name
  echo "=== $name build ==="
  cmake -S . -B "$dir" -DTREERCU_SANITIZE="$san" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # TSan: report and fail on the first race; ASan: leaks too.
  if ! TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
       ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
       ctest --test-dir "$dir" --output-on-failure -j "$jobs"; then
    fail=1
  fi
done
exit $fail
