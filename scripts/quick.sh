#!/usr/bin/env bash
# The main job, quick mode: seed reproductions and the comparison with
# liburcu, one summary table (about two minutes on 2 cores).  Arguments go
# to `treercu quick`: `--out DIR` keeps every part's JSON and the plots.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTREERCU_WERROR=ON -DTREERCU_BUILD_TOOLS=ON >/dev/null
cmake --build build-release -j "$(nproc)" >/dev/null
exec build-release/treercu quick "$@"
