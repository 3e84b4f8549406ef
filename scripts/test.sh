#!/usr/bin/env bash
# Quick start 2 (and CI): installs what is missing, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" -j "${SHARDSCOPE_JOBS:-$(nproc)}" --output-on-failure --timeout 600
