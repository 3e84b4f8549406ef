#!/usr/bin/env bash
# Builds and runs the session collector benchmark (sessions/bench/collector_bench.cpp).
# Usage: scripts/bench_collector.sh [BUILD_DIR] [-- bench flags, e.g. --ranks 64 --kernels 100000 --json]
# Results go to docs/benchmarks.md ("Session collector") with the command, machine and date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[[ $# -gt 0 ]] && shift
[[ "${1:-}" == "--" ]] && shift
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DSHARDSCOPE_GUI=OFF
fi
cmake --build "$build" --target shardscope_collector_bench -j "${JOBS:-2}"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -srm)  $(nproc) cores"
exec "$build/sessions/shardscope_collector_bench" "$@"
