#!/usr/bin/env bash
# Build treercu with its debug trace, run the seeds-004 miniature and print
# the slow samples' timelines, then the caller's wake-up after the release by
# CPU placement (wakecpu.py).  Usage: scripts/trace/run.sh [K=100000] [N=200] [MIN_US=100]
set -euo pipefail
cd "$(dirname "$0")/../.."
k=${1:-100000}; n=${2:-200}; min=${3:-100}
cmake -S . -B build-trace -DCMAKE_BUILD_TYPE=Release -DTREERCU_TRACE=ON -DTREERCU_WERROR=ON >/dev/null
cmake --build build-trace -j "$(nproc)" --target treercu_internal >/dev/null
# treercu_internal: the miniature marks its own events with the library's
# internal trace_record(), which the installed libraries do not export.
cc -O2 -Wall -Iinclude -Ibuild-trace/include scripts/trace/seeds004_ab.c -o build-trace/seeds004_ab \
   -Wl,--whole-archive build-trace/libtreercu_internal.a -Wl,--no-whole-archive -lpthread
TREERCU_TRACE_FILE=build-trace/seeds004.trace build-trace/seeds004_ab "$k" "$n"
python3 scripts/trace/timeline.py build-trace/seeds004.trace "$min" 5
python3 scripts/trace/wakecpu.py build-trace/seeds004.trace
