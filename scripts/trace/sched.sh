#!/usr/bin/env bash
# Where the seeds-004 caller's latency goes, from the scheduler's view: run
# the seeds-004 miniature (scripts/trace/seeds004_ab.c, built as run.sh
# builds it) under a system-wide `perf record` of the scheduler's switch,
# wake-up and migration events with CLOCK_MONOTONIC times (the clock of the
# library's debug trace), then split each slow sample into the caller's
# running, sleeping and runnable time, the last by what ran on the CPU it
# was queued on (scripts/trace/schedwait.py), for the caller and for any
# other library thread it waited for (a GP driver, the offload thread).
# Needs perf (Debian: linux-perf) and the right to record sched tracepoints
# system-wide (root, or kernel.perf_event_paranoid <= -1).
# Usage: scripts/trace/sched.sh [K=1000000] [N=40] [MIN_US=100] [SHOWN=20]
set -euo pipefail
cd "$(dirname "$0")/../.."
k=${1:-1000000}; n=${2:-40}; min=${3:-100}; shown=${4:-20}
cmake -S . -B build-trace -DCMAKE_BUILD_TYPE=Release -DTREERCU_TRACE=ON -DTREERCU_WERROR=ON >/dev/null
cmake --build build-trace -j "$(nproc)" --target treercu_internal >/dev/null
cc -O2 -Wall -Iinclude -Ibuild-trace/include scripts/trace/seeds004_ab.c -o build-trace/seeds004_ab \
   -Wl,--whole-archive build-trace/libtreercu_internal.a -Wl,--no-whole-archive -lpthread
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
TREERCU_TRACE_FILE=build-trace/sched.trace perf record -q -k CLOCK_MONOTONIC -a \
   -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_migrate_task \
   -o build-trace/sched.data -- build-trace/seeds004_ab "$k" "$n"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
perf script -i build-trace/sched.data -F comm,pid,tid,cpu,time,event,trace 2>/dev/null \
   > build-trace/sched.txt
python3 scripts/trace/schedwait.py build-trace/sched.trace build-trace/sched.txt "$min" "$shown"
