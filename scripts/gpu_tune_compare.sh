#!/usr/bin/env bash
# Issue 29 on the GPU: `shardscope tune` against an exhaustive grid over the same space, one GPU,
# GPT-2 1.3B shape (24 layers, hidden 2048, seq 1024), bf16, AdamW. The space: ZeRO stage 0-3 x
# micro-batch 8, 16 x activation checkpointing off/on x optimizer offload none/CPU (stage 0 with
# offload is left out as DeepSpeed refuses it). First the model-based tuner with its default early
# stopping (and its default of skipping configs slower by construction), then every point
# (gridsearch, no early stopping, --try-dominated); each writes its table and report.
# The grid's best throughput and total trial time beside the tuner's are in $OUT/tune-compare.txt.
# Usage on the GPU machine: bash scripts/gpu_tune_compare.sh [TUNER_SECONDS GRID_SECONDS]
# (the time limits of the two tune runs; 150 and 340 by default; 0 skips that run)
# TUNE_RESUME_DIR: a folder with tune-grid.db / tune-model_based.db of an earlier call whose run hit
# its limit: that run continues with --resume (no finished trial repeats).
# (TUNE_PROFILE_STEPS sets --profile-steps, 3:8 by default; TUNE_WHERE and TUNE_SHAPE override the GPU and the shape for a dry run on CPU ranks, TUNE_SPACE
# the space: --space flags.)
export SKIP_CUDA_TESTS=1
source "$(dirname "$0")/gpu_check_common.sh" gpu-tune-compare
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$OUT_DIR/gpu.txt"
work=$(mktemp -d)
cat > "$work/ds.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 100,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
 "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}}
JSON
read -r -a WHERE <<< "${TUNE_WHERE:---num_gpus 1}"
read -r -a SHAPE <<< "${TUNE_SHAPE:---model gpt2 --layers 24 --hidden 2048 --heads 16 --seq-len 1024 --vocab 50304 --device cuda}"
SPACE=(--space zero_optimization.stage=0,1,2,3 --space train_micro_batch_size_per_gpu=8,16
       --space activation_checkpointing=false,true --space zero_optimization.offload_optimizer.device=none,cpu
       --space zero_optimization.offload_param.device=none)
[[ -n ${TUNE_SPACE:-} ]] && read -r -a SPACE <<< "$TUNE_SPACE"
tune() {  # $1 = label, $2 = time limit (s; 0 skips the run), then tune's flags
  local label=$1 limit=$2; shift 2
  [[ $limit == 0 ]] && return 0
  # A run cut off by its limit in an earlier call continues from its store (--resume).
  if [[ -n ${TUNE_RESUME_DIR:-} && -f $TUNE_RESUME_DIR/tune-$label.db ]]; then
    cp "$TUNE_RESUME_DIR/tune-$label.db" "$ARCHIVE_DIR/tune-$label.db"
    set -- "$@" --resume
  fi
  local start=$SECONDS
  timeout "$limit" "$CLI" tune --config "$work/ds.json" "${WHERE[@]}" "${SPACE[@]}" --profile-steps "${TUNE_PROFILE_STEPS:-3:8}" \
    --trial-timeout 90 --db "$ARCHIVE_DIR/tune-$label.db" --out "$work/$label" "$@" -- "${SHAPE[@]}" \
    > "$OUT_DIR/tune-$label.log" 2>&1
  echo "tune $label: rc=$? in $((SECONDS - start)) s" | tee -a "$ARCHIVE_DIR/tune-compare.txt"
  cp "$work/$label/tune_report.md" "$ARCHIVE_DIR/tune-$label-report.md" 2>/dev/null
  cp "$work/$label/ds_config.json" "$ARCHIVE_DIR/tune-$label-ds_config.json" 2>/dev/null
  tail -n 40 "$OUT_DIR/tune-$label.log"
}
tune model_based "${1:-150}" --tuner model_based
tune grid "${2:-340}" --tuner gridsearch --early-stopping 0 --trials 100 --try-dominated
"$CLI" report > "$OUT_DIR/versions.txt" 2>&1
