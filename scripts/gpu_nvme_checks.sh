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
# fio: the GPU machine has none and cannot install packages, so a static fio built here from its
# source (fio-3.42, ./configure --build-static, libaio and io_uring engines) travels in
# .device/tools/fio and goes first on PATH when present.
# NVME_SHAPES="L,H,N,GAS ..." runs those shapes instead of the sizing (BENCH_ARGS: more options of
# bench_nvme_gpu.py, e.g. "--steps 2"); SKIP_BENCH_IO=1 skips step 3 and takes the disk's speed
# from NVME_BANDWIDTH_JSON instead (a bench-io.json an earlier call brought back, carried).
# Usage on the nvidia-h200 machine: bash scripts/gpu_nvme_checks.sh [NVME_DIR]   (default ./.nvme-bench)
export SKIP_CUDA_TESTS="${SKIP_CUDA_TESTS:-1}"
[[ -x .device/tools/fio ]] && export PATH="$PWD/.device/tools:$PATH"
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

bench_json="$OUT_DIR/bench-io.json"
if [[ ${SKIP_BENCH_IO:-0} != 1 ]]; then
  step "3/4 bench io + fio ($(fio --version 2>/dev/null || echo 'no fio')) on $NVME_DIR"
  timeout 150 $CLI bench io --path "$NVME_DIR" --size 512M --block-sizes 1M,8M --queue-depths 32,128 --threads 1,4 \
    --fio each --db "$OUT_DIR/bench-io.db" --json-out "$bench_json" > "$OUT_DIR/bench-io.txt" 2>&1
  echo "bench io rc=$?"; cat "$OUT_DIR/bench-io.txt"
else
  bench_json="${NVME_BANDWIDTH_JSON:?SKIP_BENCH_IO=1 needs NVME_BANDWIDTH_JSON}"
fi

step "4/4 GPT-2 with the optimizer on NVMe and in CPU memory"
run_bench() {  # $1: log name; the rest: bench_nvme_gpu.py options
  local log="$OUT_DIR/$1.log"; shift
  timeout "${BENCH_TIMEOUT:-210}" python3 scripts/bench_nvme_gpu.py --cli "$CLI" --nvme-dir "$NVME_DIR" \
    --bench-json "$bench_json" --json "$@" > "$log" 2>&1
  local rc=$?; echo "bench nvme $* rc=$rc"; [[ $rc == 0 ]] || tail -n 12 "$log"
  grep -E "^(#|run |nvme-offload|cpu-offload|no candidate)|failed" "$log" | tail -n 14
}
if [[ -n ${NVME_SHAPES:-} ]]; then
  for shape in $NVME_SHAPES; do run_bench "bench-nvme-${shape//,/-}" --shape "$shape" ${BENCH_ARGS:-}; done
else
  run_bench bench-nvme --budget-s 70 ${BENCH_ARGS:-}
fi
rm -rf "$NVME_DIR"
step "done"
