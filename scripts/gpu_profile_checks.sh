#!/usr/bin/env bash
# Issue 8 on the GPU machine: 2-GPU ZeRO stage 2 and stage 3 runs of a GPT-2 350M shape, each once
# with profiling off and once with every part on (wall_clock_breakdown timers, comms_logger,
# flops_profiler, CUPTI window of 3 steps, memory_breakdown off), into one session file that comes
# back under $OUT, with `sessions show --profile` of each profiled run and the overhead table.
# Usage (after scripts/build_on_gpu.sh): bash scripts/gpu_profile_checks.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT_DIR="${OUT:-/tmp/shardscope-out}"
CLI=build-gpu/app/cli/shardscope
DB="$OUT_DIR/profile-sessions.db"
work=$(mktemp -d)
SHAPE=(--layers 24 --hidden 1024 --heads 16 --seq-len 1024 --vocab 50304 --steps 30 --device cuda)
for stage in 2 3; do
  for mode in off on; do
    extra=""
    [[ $mode == on ]] && extra='"wall_clock_breakdown": true, "comms_logger": {"enabled": true},
      "flops_profiler": {"enabled": true, "profile_step": 12, "module_depth": 2, "top_modules": 3, "detailed": false},'
    cat > "$work/z${stage}_${mode}.json" <<JSON
{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 10, $extra
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
 "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage, "overlap_comm": true, "reduce_bucket_size": 50000000,
                       "stage3_prefetch_bucket_size": 50000000}}
JSON
    args=()
    [[ $mode == on ]] && args=(--profile-steps 10:3)
    timeout 150 $CLI launch --num_gpus 2 --session "$DB" --name "z${stage}-profiling-${mode}" -- \
      --config "$work/z${stage}_${mode}.json" "${SHAPE[@]}" "${args[@]}" > "$OUT_DIR/profile-z${stage}-${mode}.log" 2>&1
    echo "stage $stage profiling $mode: rc=$?"
    grep -E "profiled steps|Profile Summary|fwd flops per GPU|fwd latency|Comm. Op" "$OUT_DIR/profile-z${stage}-${mode}.log" | head -n 6
  done
  $CLI sessions show "z${stage}-profiling-on" --db "$DB" --profile --warmup 5 > "$OUT_DIR/profile-z${stage}-show.txt" 2>&1
  $CLI sessions compare "z${stage}-profiling-off" "z${stage}-profiling-on" --db "$DB" \
    > "$OUT_DIR/profile-z${stage}-overhead.txt" 2>&1
  head -n 60 "$OUT_DIR/profile-z${stage}-show.txt"
  grep -iE "tokens|step time" "$OUT_DIR/profile-z${stage}-overhead.txt" | head -n 4
done
