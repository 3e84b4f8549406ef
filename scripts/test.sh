#!/usr/bin/env bash
# Quick start 2 (and CI): installs what is missing, builds, runs the whole test suite with ctest,
# then every fuzz target for 30 s (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" -j "${SHARDSCOPE_JOBS:-$(nproc)}" --output-on-failure --timeout 600
# The libFuzzer targets, 30 s each in their own clang build (build-fuzz/); any report fails CI.
# SHARDSCOPE_FUZZ_SECONDS=0 skips them.
if [[ "${SHARDSCOPE_FUZZ_SECONDS:-30}" != 0 ]]; then
  scripts/fuzz.sh all "${SHARDSCOPE_FUZZ_SECONDS:-30}"
fi
