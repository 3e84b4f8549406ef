#!/usr/bin/env bash
# Builds the non-GUI targets on the GPU machine (Ubuntu 24.04, H200, no network) and runs the
# tests there. That machine has torch 2.11 (cu130), CUDA 13, nlohmann_json, ninja and cmake, but no
# sqlite3.h and no GoogleTest: scripts/fetch_gpu_debs.sh downloads those Debian packages here into
# .device/debs (git-ignored), the device call carries that folder, and this script unpacks them.
# Usage (on the GPU machine, from the repository root):
#   scripts/build_on_gpu.sh [ctest arguments...]     e.g. scripts/build_on_gpu.sh -L cuda
# Logs go to $OUT (when set) so they come back with the call.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT_DIR="${OUT:-/tmp/shardscope-out}"
mkdir -p "$OUT_DIR"
SYSROOT="$PWD/.device/sysroot"
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build-gpu}"

rm -rf "$SYSROOT" && mkdir -p "$SYSROOT"
for deb in .device/debs/*.deb; do dpkg-deb -x "$deb" "$SYSROOT"; done

PYTHON="${SHARDSCOPE_PYTHON:-python3}"
TORCH_PREFIX=$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
SQLITE_LIB=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 2>/dev/null || true)
[[ -n "$SQLITE_LIB" ]] || { echo "libsqlite3.so.0 not found on this machine" >&2; exit 1; }

{
  echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  cmake --version | head -1; nvcc --version | tail -1; g++ --version | head -1; nproc
} 2>&1 | tee "$OUT_DIR/gpu-machine.txt"

start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DSHARDSCOPE_GUI=OFF -DSHARDSCOPE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$SYSROOT/usr" \
  -DSQLite3_INCLUDE_DIR="$SYSROOT/usr/include" -DSQLite3_LIBRARY="$SQLITE_LIB" \
  -DGTest_DIR="$SYSROOT/usr/lib/x86_64-linux-gnu/cmake/GTest" \
  2>&1 | tee "$OUT_DIR/gpu-configure.log" | grep -E "^-- (ShardScope|shardscope-gui)|Error" || true
cmake --build "$BUILD_DIR" -j "$(nproc)" -- -k 0 > "$OUT_DIR/gpu-build-full.log" 2>&1
# Every failed command with its first error lines, then the tail.
{ grep -A 12 "^FAILED:" "$OUT_DIR/gpu-build-full.log" | grep -v "^frame" | head -n 120 || true
  tail -n 5 "$OUT_DIR/gpu-build-full.log"; } > "$OUT_DIR/gpu-build.log"
echo "build seconds: $(( $(date +%s) - start ))" | tee -a "$OUT_DIR/gpu-machine.txt"

"$BUILD_DIR/app/cli/shardscope" report | tee "$OUT_DIR/gpu-report.txt"
"$BUILD_DIR/app/cli/shardscope" report --json > "$OUT_DIR/gpu-report.json"
ctest --test-dir "$BUILD_DIR" -j 8 --output-on-failure --timeout 600 "$@" 2>&1 | tee "$OUT_DIR/gpu-ctest.log" | tail -n 40
