# Sourced by the scripts/gpu_*_checks.sh device calls: NCCL's settings, $OUT_DIR for the logs (packed
# into $OUT/NAME-logs.tgz on exit, since the device tool returns few files), $CLI, and the CUDA
# tests, whose log is $OUT_DIR/build-and-cuda-tests.log: with the binaries of .device/prebuilt when
# they run here (scripts/gpu_prebuilt.sh), else after building (scripts/build_on_gpu.sh).
# SKIP_CUDA_TESTS=1 builds (or finds) the binaries and runs no test.
# Usage: source "$(dirname "$0")/gpu_check_common.sh" NAME
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NCCL_NVLS_ENABLE=0
ARCHIVE_DIR="${OUT:-/tmp/shardscope-out}"
OUT_DIR="$ARCHIVE_DIR/logs"
mkdir -p "$OUT_DIR"
trap "tar -czf '$ARCHIVE_DIR/$1-logs.tgz' -C '$ARCHIVE_DIR' logs && rm -rf '$OUT_DIR'" EXIT
if source scripts/gpu_prebuilt.sh; then
  echo "using the prebuilt binaries of .device/prebuilt ($(cat .device/prebuilt/GIT_HASH 2>/dev/null))"
  [[ -f .device/prebuilt/GIT_HASH ]] && export SHARDSCOPE_GIT_HASH=$(cat .device/prebuilt/GIT_HASH)
  if [[ ${SKIP_CUDA_TESTS:-0} != 1 ]]; then
    for test in "${CUDA_TEST_BINARIES[@]}"; do
      timeout 300 "$test" --gtest_brief=1; echo "$(basename "$test"): rc=$?"
    done > "$OUT_DIR/build-and-cuda-tests.log" 2>&1
  fi
else
  CLI=build-gpu/app/cli/shardscope
  tests=(-L cuda)
  [[ ${SKIP_CUDA_TESTS:-0} == 1 ]] && tests=(-L no-such-label)
  OUT="$OUT_DIR" timeout 300 bash scripts/build_on_gpu.sh "${tests[@]}" > "$OUT_DIR/build-and-cuda-tests.log" 2>&1
  echo "build+cuda tests rc=$?"
fi
