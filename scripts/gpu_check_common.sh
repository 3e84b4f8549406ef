# Sourced by the scripts/gpu_*_checks.sh device calls: NCCL's settings, $OUT_DIR for the logs (packed
# into $OUT/NAME-logs.tgz on exit, since the device tool returns few files), $CLI, and the build
# with the CUDA tests, whose log is $OUT_DIR/build-and-cuda-tests.log.
# Usage: source "$(dirname "$0")/gpu_check_common.sh" NAME
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NCCL_NVLS_ENABLE=0
ARCHIVE_DIR="${OUT:-/tmp/shardscope-out}"
OUT_DIR="$ARCHIVE_DIR/logs"
mkdir -p "$OUT_DIR"
trap "tar -czf '$ARCHIVE_DIR/$1-logs.tgz' -C '$ARCHIVE_DIR' logs && rm -rf '$OUT_DIR'" EXIT
CLI=build-gpu/app/cli/shardscope
OUT="$OUT_DIR" timeout 300 bash scripts/build_on_gpu.sh -L cuda > "$OUT_DIR/build-and-cuda-tests.log" 2>&1
echo "build+cuda tests rc=$?"
