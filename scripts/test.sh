#!/usr/bin/env bash
# Quick start 2 (and CI): installs what the tests need and is missing (scripts/install_test_deps.sh,
# the main job's dependencies first), builds the rest (reusing what scripts/run.sh built), runs the
# whole test suite with ctest, then every fuzz target for 30 s (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_test_deps.sh
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
# A build that scripts/run.sh configured before GoogleTest was installed has no tests yet:
# configuring it again with the tests on adds them and keeps every object already built.
CONFIGURE=()
grep -qs '^SHARDSCOPE_TESTS_CONFIGURED:INTERNAL=ON$' "$BUILD_DIR/CMakeCache.txt" || CONFIGURE=(-DSHARDSCOPE_BUILD_TESTS=ON)
scripts/build.sh "${CONFIGURE[@]}"
# A test that fails is run once more, alone, and named: one that passes then is flaky, which is a
# bug to chase (docs/build.md lists the known one), not a pass to forget.
if ! ctest --test-dir "$BUILD_DIR" -j "${SHARDSCOPE_JOBS:-$(nproc)}" --output-on-failure --timeout 600; then
  echo "[test] FLAKY OR FAILING: $(tr '\n' ' ' < "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log")"
  echo "[test] running the failed tests once more, one at a time"
  ctest --test-dir "$BUILD_DIR" --rerun-failed --output-on-failure --timeout 600
fi
# The libFuzzer targets, 30 s each in their own clang build (build-fuzz/); any report fails CI.
# SHARDSCOPE_FUZZ_SECONDS=0 skips them.
if [[ "${SHARDSCOPE_FUZZ_SECONDS:-30}" != 0 ]]; then
  scripts/fuzz.sh all "${SHARDSCOPE_FUZZ_SECONDS:-30}"
fi
