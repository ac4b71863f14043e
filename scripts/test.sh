#!/usr/bin/env bash
# The test command: builds the normal (gcc), ASan+UBSan and TSan
# configurations and a normal clang build, with warnings as errors, and runs
# every test (unit tests, torture smoke run, export list, install and
# consumer check) in each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
fail=0
for cfg in normal:gcc: asan:gcc:address tsan:gcc:thread clang:clang:; do
  IFS=: read -r name cc san <<<"$cfg"
  dir=build-$name
  echo "=== $name build ==="
  cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DTREERCU_SANITIZE="$san" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTREERCU_WERROR=ON -DTREERCU_BUILD_TOOLS=ON >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # TSan: report and fail on the first race; ASan: leaks too.
  if ! TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
       ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
       ctest --test-dir "$dir" --output-on-failure -j "$jobs"; then
    fail=1
  fi
done
exit $fail
