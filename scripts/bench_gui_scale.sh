#!/usr/bin/env bash
# The window at 1,024 ranks (issue 35 item 4): makes a many-rank session with shardscope-load (the
# real collector; kept and reused when it exists), then runs the QBENCHMARK cases of
# tests/gui/sessions/many_ranks_bench.cpp on it: open to drawn curves with bands (budget 3 s), the
# heat map's read and draw, and pan/zoom frames of a band chart and the heat map (budget 100 ms).
# Usage: scripts/bench_gui_scale.sh [BUILD_DIR] [RANKS] [STEPS] [SESSION_FILE]
# Results go to docs/benchmarks.md ("The window at 1,024 ranks") with the command, machine and date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
ranks="${2:-1024}"
steps="${3:-500}"
db="${4:-/tmp/shardscope_gui_scale_${ranks}x${steps}.db}"
cmake --build "$build" --target shardscope-load gui_many_ranks_bench -j "${JOBS:-2}"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -srm)  $(nproc) cores  load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# commit $(git -C "$root" rev-parse --short HEAD)  session $db ($ranks ranks x $steps steps)"
if [[ ! -f "$db" ]]; then
  "$build/app/load/shardscope-load" --ranks "$ranks" --steps "$steps" --db "$db" --min-rate 0
fi
SHARDSCOPE_BENCH_SESSION="$db" QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" \
  exec "$build/tests/gui/gui_many_ranks_bench"
