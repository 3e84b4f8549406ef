#!/usr/bin/env bash
# One device call for ZeRO-Infinity on one H200 (issue 16, item 7): builds on the GPU machine and
# runs the CUDA tests (gpu_check_common.sh), checks the free space of the disk the NVMe path is
# on, runs `shardscope bench io` there with fio beside it (the aio block to use, our GB/s as a
# ratio of fio's), then trains the largest GPT-2 shape the disk and the time budget allow with the
# optimizer on NVMe and with it in CPU memory (scripts/bench_nvme_gpu.py: tokens/s, peak GPU and
# host memory, the estimator's prediction beside both). Must finish in under 6 minutes.
# Usage on the nvidia-h200 machine: bash scripts/gpu_nvme_checks.sh [NVME_DIR]   (default ./nvme-bench)
# The logs come back as one archive, $OUT/gpu-nvme-logs.tgz.
source "$(dirname "$0")/gpu_check_common.sh" gpu-nvme
grep -E "tests passed|Failed|Test #.*(Passed|Failed)" "$OUT_DIR/build-and-cuda-tests.log" | tail -n 4
grep -E "async I/O" "$OUT_DIR/gpu-configure.log" "$OUT_DIR/build-and-cuda-tests.log" 2>/dev/null | head -n 1
grep -E "^async_io" "$OUT_DIR/gpu-report.txt" 2>/dev/null

NVME_DIR="${1:-$PWD/nvme-bench}"
mkdir -p "$NVME_DIR"
# The swap must live on the machine's own disk: say which and how much is free before writing to it.
df -h "$NVME_DIR" | tee "$OUT_DIR/nvme-df.txt"
findmnt -T "$NVME_DIR" -o TARGET,SOURCE,FSTYPE,OPTIONS 2>/dev/null | tee -a "$OUT_DIR/nvme-df.txt"
free_gib=$(df -B1G --output=avail "$NVME_DIR" | tail -n 1 | tr -d ' ')
echo "free GiB at $NVME_DIR: $free_gib"
[[ "$free_gib" -ge 8 ]] || { echo "under 8 GiB free at $NVME_DIR: not running the NVMe checks"; exit 1; }

# 2 block sizes x 2 depths x 2 thread counts, 512 MiB per transfer, fio on every point (~30 s).
timeout 90 $CLI bench io --path "$NVME_DIR" --size 512M --block-sizes 1M,8M --queue-depths 32,128 --threads 1,4 \
  --fio each --db "$OUT_DIR/bench-io.db" --json-out "$OUT_DIR/bench-io.json" > "$OUT_DIR/bench-io.txt" 2>&1
echo "bench io rc=$?"; cat "$OUT_DIR/bench-io.txt"

timeout 190 python3 scripts/bench_nvme_gpu.py --cli "$CLI" --nvme-dir "$NVME_DIR" --bench-json "$OUT_DIR/bench-io.json" \
  --budget-s 80 --json > "$OUT_DIR/bench-nvme.log" 2>&1
echo "bench nvme rc=$?"; grep -v '^ *[{}"\[]' "$OUT_DIR/bench-nvme.log" | grep -v '^run:' | tail -n 12
rm -rf "$NVME_DIR"
