#!/usr/bin/env bash
# Here (the development machine): copies what a GPU check needs from a CUDA build of this machine
# (build/, whose LibTorch is the same torch 2.11.0+cu130 wheel the GPU machine has) into
# .device/prebuilt: the shardscope CLI and the three `cuda`-labelled test binaries. A device call
# that carries .device then skips its ~90 s build when scripts/gpu_prebuilt.sh finds that they run
# there, and builds as before when they do not.
# Usage: scripts/pack_gpu_prebuilt.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
mkdir -p .device/prebuilt
for binary in app/cli/shardscope tests/engine/engine_tests_cuda tests/kernels/kernels_tests_cuda \
              tests/profiler/profiler_tests_cuda; do
  [[ -x "$BUILD_DIR/$binary" ]] || { echo "$BUILD_DIR/$binary is missing: build it first" >&2; exit 1; }
  cp "$BUILD_DIR/$binary" .device/prebuilt/
done
git rev-parse --short=12 HEAD > .device/prebuilt/GIT_HASH
[[ -z "$(git status --porcelain --untracked-files=no)" ]] || sed -i 's/$/-dirty/' .device/prebuilt/GIT_HASH
du -sh .device/prebuilt
