#!/usr/bin/env bash
# One device call for ZeRO-Infinity on one H200 (issue 16, item 7), under 6 minutes with the
# prebuilt binaries (scripts/pack_gpu_prebuilt.sh here, .device carried; without them it builds
# first, ~90 s more). In order, each step printed with the time:
#   1. the aio backends: `shardscope report`'s async_io / async_io_uring lines, probed there;
#   2. the disk under the NVMe path: df, findmnt, at least 8 GiB free or it stops;
#   3. `shardscope bench io` on that disk with fio beside every point (2 block sizes x 2 depths x
#      2 thread counts, 512 MiB each): GB/s, our ratio to fio's, the best aio block;
#   4. scripts/bench_nvme_gpu.py: the largest GPT-2 shape the disk and the time budget allow,
#      trained a few steps with the optimizer on NVMe and with it in CPU memory: tokens/s, peak GPU
#      and host memory, the estimator's prediction beside both, and why the smallest shape that
#      does not fit one H200 without offload was not the one run (the arithmetic).
# Writes $OUT/gpu-nvme-logs.tgz (logs/): gpu-report.txt, nvme-df.txt, bench-io.txt, bench-io.json,
# bench-io.db (the session), bench-nvme.log (with the JSON document), and the CUDA-test log when
# SKIP_CUDA_TESTS=0 (default 1 here: those tests belong to the other gpu_*_checks.sh).
# Usage on the nvidia-h200 machine: bash scripts/gpu_nvme_checks.sh [NVME_DIR]   (default ./.nvme-bench)
export SKIP_CUDA_TESTS="${SKIP_CUDA_TESTS:-1}"
source "$(dirname "$0")/gpu_check_common.sh" gpu-nvme
started=$SECONDS
step() { echo "[nvme $(date -u +%T) +$((SECONDS - started))s] $*"; }
[[ $SKIP_CUDA_TESTS == 1 ]] || grep -E "tests passed|Failed|rc=" "$OUT_DIR/build-and-cuda-tests.log" | tail -n 4
if [[ ! -x $CLI ]]; then
  echo "no shardscope binary at $CLI: neither .device/prebuilt nor the build gave one"
  tail -n 20 "$OUT_DIR/build-and-cuda-tests.log" 2>/dev/null; exit 1
fi

step "1/4 aio backends ($CLI report)"
$CLI report > "$OUT_DIR/gpu-report.txt" 2>&1
grep -E "^async_io" "$OUT_DIR/gpu-report.txt" || { echo "no async_io line in the report"; tail -n 5 "$OUT_DIR/gpu-report.txt"; }

NVME_DIR="${1:-$PWD/.nvme-bench}"
mkdir -p "$NVME_DIR"
step "2/4 the disk under $NVME_DIR"
{ df -h "$NVME_DIR"; findmnt -T "$NVME_DIR" -o TARGET,SOURCE,FSTYPE,OPTIONS; } 2>&1 | tee "$OUT_DIR/nvme-df.txt"
free_gib=$(df -B1G --output=avail "$NVME_DIR" | tail -n 1 | tr -d ' ')
echo "free GiB at $NVME_DIR: $free_gib"
if [[ "$free_gib" -lt 8 ]]; then echo "under 8 GiB free at $NVME_DIR: not running the NVMe checks"; exit 1; fi

step "3/4 bench io + fio on $NVME_DIR"
timeout 120 $CLI bench io --path "$NVME_DIR" --size 512M --block-sizes 1M,8M --queue-depths 32,128 --threads 1,4 \
  --fio each --db "$OUT_DIR/bench-io.db" --json-out "$OUT_DIR/bench-io.json" > "$OUT_DIR/bench-io.txt" 2>&1
echo "bench io rc=$?"; cat "$OUT_DIR/bench-io.txt"

step "4/4 GPT-2 with the optimizer on NVMe and in CPU memory"
timeout 210 python3 scripts/bench_nvme_gpu.py --cli "$CLI" --nvme-dir "$NVME_DIR" --bench-json "$OUT_DIR/bench-io.json" \
  --budget-s 70 --json > "$OUT_DIR/bench-nvme.log" 2>&1
rc=$?; echo "bench nvme rc=$rc"; [[ $rc == 0 ]] || tail -n 12 "$OUT_DIR/bench-nvme.log"; grep -E "^(#|run |nvme-offload|cpu-offload|no candidate)|failed" "$OUT_DIR/bench-nvme.log" | tail -n 14
rm -rf "$NVME_DIR"
step "done"
