#!/usr/bin/env bash
# Issue 19 on a machine of several GPUs (nvidia-h200-x2 or -x4), one device call per group of parts
# (a call runs 10 minutes at most; each part says how long it took on its last line):
#   tests     the CUDA tests (prebuilt binaries when they run there, else a build and `ctest -L cuda`)
#   bench-8   ZeRO stages 0-3 beside DDP, ZeroRedundancyOptimizer+DDP, FSDP2 (without and with
#             reshard_after_forward) and DeepSpeed 0.19.7 at micro-batch 8 per GPU, 3 repeats
#   bench-4   the same at micro-batch 4 per GPU (the micro-batch of the 2026-11-30 table)
#   scaling   ShardScope's stages 0-3 on NGPUS and on 1 GPU at micro-batches 8 and 4, 3 repeats
#   comms     one comms_logger run per stage beside an NCCL all-reduce / reduce-scatter /
#             all-gather bus-bandwidth sweep (1 MiB to 1 GiB)
# Usage (on the GPU machine, from the repository root):
#   bash scripts/gpu_multi_checks.sh NGPUS [PART...]        default parts: all of them, in that order
#   e.g. call 1: bash scripts/gpu_multi_checks.sh 2 tests bench-8   call 2: ... 2 bench-4 scaling comms
# Extra arguments for the benchmark after `--` (e.g. -- --steps 12 --warmup 4 --repeats 3).
# Back under $OUT: gpu-multi-logs.tgz (every log) and each part's raw JSON as the benchmark wrote it
# (bench-zero-mb8-NGPUSgpu.json, ...), plus ds-site.tgz when DeepSpeed's FusedAdam was built.
# CPU dry run of the plumbing (here, no GPU): SHARDSCOPE_DRY_RUN=1 bash scripts/gpu_multi_checks.sh 2 bench-8
#   runs the same commands with --device cpu on a tiny GPT-2 (Gloo, DeepSpeed's CPU accelerator).
NGPUS=${1:?usage: gpu_multi_checks.sh NGPUS [PART...] [-- bench arguments]}
shift
PARTS=()
while [[ $# -gt 0 && $1 != -- ]]; do PARTS+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(tests bench-8 bench-4 scaling comms)
for part in "${PARTS[@]}"; do
  case "$part" in tests | bench-8 | bench-4 | scaling | comms) ;; *)
    echo "gpu_multi_checks.sh: unknown part '$part' (tests, bench-8, bench-4, scaling, comms)" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [[ ${SHARDSCOPE_DRY_RUN:-0} == 1 ]]; then
  set -uo pipefail
  cd "$(dirname "$0")/.."
  ARCHIVE_DIR="${OUT:-/tmp/shardscope-dry-run}"; OUT_DIR="$ARCHIVE_DIR/logs"; mkdir -p "$OUT_DIR"
  CLI="${SHARDSCOPE_CLI:-build/app/cli/shardscope}"
  PYTHON="${SHARDSCOPE_PYTHON:-$HOME/.cache/shardscope/venv/bin/python}"
  BENCH=(--device cpu --layers 2 --hidden 64 --heads 4 --vocab 512 --seq-len 64 --steps 4 --warmup 1 --repeats 2
         --sweep-min-bytes 4096 --sweep-max-bytes 1048576 --comms-min-bytes 4096)
  MB8=2 MB4=1
else
  SKIP_CUDA_TESTS=1; [[ " ${PARTS[*]} " == *" tests "* ]] && SKIP_CUDA_TESTS=0
  SKIP_CUDA_TESTS=$SKIP_CUDA_TESTS source "$(dirname "$0")/gpu_check_common.sh" gpu-multi
  source scripts/gpu_python_deps.sh
  PYTHON=python3
  BENCH=()
  MB8=8 MB4=4
  gpu_python_deps_wait
  gpu_python_deps_pack "$ARCHIVE_DIR"
fi

bench() {  # bench NAME ARGS...: one run of scripts/bench_zero_gpu.py, its JSON next to the archive
  local name=$1; shift
  local start=$(date +%s)
  PYTHONUNBUFFERED=1 timeout 580 "$PYTHON" scripts/bench_zero_gpu.py --cli "$CLI" --gpus "$NGPUS" "${BENCH[@]}" \
    --json "$ARCHIVE_DIR/$name.json" "$@" > "$OUT_DIR/$name.log" 2>&1
  local rc=$?
  grep -E "^#" "$OUT_DIR/$name.log" | tail -n 40
  echo "$name: rc=$rc, $(( $(date +%s) - start )) s"
}

for part in "${PARTS[@]}"; do
  case "$part" in
    tests)
      if [[ ${SHARDSCOPE_DRY_RUN:-0} == 1 ]]; then echo "tests: not on a CPU dry run"; continue; fi
      grep -E "tests? (passed|ran)|FAILED|PASSED|rc=" "$OUT_DIR/build-and-cuda-tests.log" | tail -n 12 ;;
    bench-8) bench "bench-zero-mb8-${NGPUS}gpu" --micro-batches "$MB8" "$@" ;;
    bench-4) bench "bench-zero-mb4-${NGPUS}gpu" --micro-batches "$MB4" "$@" ;;
    scaling) bench "bench-zero-scaling-${NGPUS}gpu" --micro-batches "$MB8,$MB4" --engines shardscope --scaling "$@" ;;
    comms) bench "bench-zero-comms-${NGPUS}gpu" --micro-batches "$MB8" --engines none --comms "$@" ;;
  esac
done
