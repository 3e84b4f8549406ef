#!/usr/bin/env bash
# Builds and runs shardscope-load, the collector benchmark and load generator (app/load/).
# Usage: scripts/bench_collector.sh [BUILD_DIR] [-- shardscope-load flags, e.g. --ranks 1024 --steps 100 --json]
# Results go to docs/benchmarks.md ("shardscope-load") with the command, machine, date and load.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[[ $# -gt 0 ]] && shift
[[ "${1:-}" == "--" ]] && shift
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DSHARDSCOPE_GUI=OFF
fi
cmake --build "$build" --target shardscope-load -j "${JOBS:-2}"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -srm)  $(nproc) cores  load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$build/app/load/shardscope-load" "$@"
