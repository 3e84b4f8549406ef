#!/usr/bin/env bash
# Issue 18 on the one-GPU machine (nvidia-h200), in one device call: the CUDA tests, one profiled
# ShardScope run per ZeRO stage on the benchmark shape (GPT-2 1.31B, micro-batch 8, bf16;
# wall_clock_breakdown timers and a CUPTI window, then `sessions show --profile`: phases, top
# kernels, GPU idle), and the one-GPU benchmark beside DeepSpeed 0.19.7 and eager PyTorch
# (scripts/bench_train_gpu.py, which also measures the two ceilings).
# Usage: bash scripts/gpu_perf_checks.sh [--stages 0,1,2,3] [--profile-steps 6:2] [--no-tests]
#        [--no-profile] [--no-bench] [--budget SECONDS] [-- bench_train_gpu.py arguments]
# --budget (default 570): the benchmark gets what is left of it, so the logs are packed before a
# device call's 10-minute limit stops everything.
# Back under $OUT: gpu-perf-logs.tgz (logs, bench JSON, the profiled session file profiled.db) and,
# when this call built DeepSpeed's FusedAdam, ds-site.tgz to carry as .device/ds-site.tgz next time.
STAGES=0,1,2,3 PROFILE_STEPS=6:2 TESTS=1 PROFILE=1 BENCH=1 BUDGET=570 STARTED=$(date +%s)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stages) STAGES=$2; shift 2 ;;
    --profile-steps) PROFILE_STEPS=$2; shift 2 ;;
    --no-tests) TESTS=0; shift ;;
    --no-profile) PROFILE=0; shift ;;
    --no-bench) BENCH=0; shift ;;
    --budget) BUDGET=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "gpu_perf_checks.sh: unknown argument '$1' (see the usage line at the top)" >&2; exit 2 ;;
  esac
done
SKIP_CUDA_TESTS=$((1 - TESTS)) source "$(dirname "$0")/gpu_check_common.sh" gpu-perf
source scripts/gpu_python_deps.sh
grep -E "tests? (passed|ran)|FAILED|PASSED|rc=" "$OUT_DIR/build-and-cuda-tests.log" | tail -n 12

DB="$OUT_DIR/profiled.db"
SHAPE=(--model gpt2 --layers 24 --hidden 2048 --heads 16 --seq-len 1024 --vocab 50304 --device cuda)
if [[ $PROFILE == 1 ]]; then
  steps=$(( ${PROFILE_STEPS%%:*} + ${PROFILE_STEPS##*:} + 2 ))
  for stage in ${STAGES//,/ }; do
    python3 -c "import json, sys; sys.path.insert(0, 'scripts/bench'); import bench_common as bc
c = bc.ds_config($stage, 8, 50_000_000); c['wall_clock_breakdown'] = True; print(json.dumps(c))" > /tmp/profile-z$stage.json
    timeout 150 $CLI train --config /tmp/profile-z$stage.json "${SHAPE[@]}" --steps $steps --session "$DB" \
      --name "profile-z$stage" --profile-steps "$PROFILE_STEPS" > "$OUT_DIR/profile-z$stage.log" 2>&1
    echo "profile stage $stage: rc=$?"
    $CLI sessions show "profile-z$stage" --db "$DB" --profile --warmup 3 > "$OUT_DIR/profile-z$stage-show.txt" 2>&1
    grep -E "tokens/s|peak|forward|backward|step  |idle|^ *[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% " \
      "$OUT_DIR/profile-z$stage-show.txt" | head -n 30
  done
fi
gpu_python_deps_wait
gpu_python_deps_pack "$ARCHIVE_DIR"
if [[ $BENCH == 1 ]]; then
  left=$(( BUDGET - ($(date +%s) - STARTED) - 10 ))
  PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/bench_train_gpu.py --cli "$CLI" --stages "$STAGES" \
    --json "$OUT_DIR/bench-train-gpu.json" "$@" > "$OUT_DIR/bench-train-gpu.log" 2>&1
  echo "bench rc=$?"; grep -E "^#|^[a-z]" "$OUT_DIR/bench-train-gpu.log" | grep -v "^repeat" | tail -n 30
fi
