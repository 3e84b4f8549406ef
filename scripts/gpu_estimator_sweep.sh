#!/usr/bin/env bash
# One device call for the estimator's held sweep (issue 27, docs/estimator.md "Measured on a
# held sweep"): builds on the GPU machine (or uses .device/prebuilt), then runs
# scripts/estimator_sweep_gpu.py over every case. The rows come back as $OUT/estimator-sweep.jsonl,
# the progress and build logs in $OUT/gpu-estimator-sweep-logs.tgz.
# Usage on the nvidia-h200 machine: bash scripts/gpu_estimator_sweep.sh [sweep arguments...]
export SKIP_CUDA_TESTS=1
source "$(dirname "$0")/gpu_check_common.sh" gpu-estimator-sweep
tail -n 3 "$OUT_DIR/build-and-cuda-tests.log"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT_DIR/gpu.txt"
SHARDSCOPE_GIT_HASH="${SHARDSCOPE_GIT_HASH:-$(git rev-parse --short HEAD 2>/dev/null)}" \
  python3 scripts/estimator_sweep_gpu.py --cli "$CLI" --out "$ARCHIVE_DIR/estimator-sweep.jsonl" \
  --nvme-dir "$PWD/.sweep-nvme" "$@" 2>&1 | tee "$OUT_DIR/sweep-progress.log"
