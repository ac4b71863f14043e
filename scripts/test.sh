#!/usr/bin/env bash
# The test command: builds the normal (gcc), ASan+UBSan and TSan
# configurations, a normal clang build and the RCU core without the
# workqueue, with warnings as errors, and runs
# every test (unit tests, torture smoke run, export list, install and
# consumer check) in each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
fail=0
# name:compiler:sanitizer:workqueue.  The "nowq" build is the RCU core
# alone (TREERCU_WORKQUEUE=OFF, so no tool): every test that does not use
# the workqueue runs there, which keeps the core free of it.
for cfg in normal:gcc::ON asan:gcc:address:ON tsan:gcc:thread:ON clang:clang::ON nowq:gcc::OFF; do
  IFS=: read -r name cc san wq <<<"$cfg"
  dir=build-$name
  tools=ON
  [ "$wq" = ON ] || tools=OFF
  echo "=== $name build ==="
  cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DTREERCU_SANITIZE="$san" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTREERCU_WERROR=ON -DTREERCU_BUILD_TOOLS=$tools \
        -DTREERCU_WORKQUEUE="$wq" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # TSan: report and fail on the first race; ASan: leaks too.
  if ! TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
       ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
       ctest --test-dir "$dir" --output-on-failure -j "$jobs"; then
    fail=1
  fi
done
exit $fail
