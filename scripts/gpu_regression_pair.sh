#!/usr/bin/env bash
# Issue 30's GPU pair: profiled runs on one GPU (H200 or H100) that differ in one kernel-relevant setting, and the
# regression check naming the kernels that moved. GPT-2 350M shape, bf16, micro-batch 8, seq 1024,
# 40 steps with a CUPTI window at steps 20-24, interleaved so both sides see the same machine:
#   base-1, ckpt-1, base-2, ckpt-2, fp16-1, fp16-2
# (ckpt: --activation-checkpointing, each block's forward recomputed in backward; fp16: the fp16
# block with dynamic loss scaling instead of bf16). Then `sessions check` base vs ckpt, base vs fp16
# and base-1 vs base-2 (nothing changed), text and --json, and `sessions show --profile` of one run.
# Usage on the GPU machine: bash scripts/gpu_regression_pair.sh (docs/sessions.md has the results)
export SKIP_CUDA_TESTS=1
source "$(dirname "$0")/gpu_check_common.sh" gpu-regression-pair
tail -n 3 "$OUT_DIR/build-and-cuda-tests.log"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT_DIR/gpu.txt"
DB="$ARCHIVE_DIR/regression-pair.db"
rm -f "$DB"
work=$(mktemp -d)
write_config() {  # $1 = file, $2 = the precision block
  cat > "$1" <<JSON
{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 100,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
 $2,
 "zero_optimization": {"stage": 1}}
JSON
}
write_config "$work/bf16.json" '"bf16": {"enabled": true}'
write_config "$work/fp16.json" '"fp16": {"enabled": true, "initial_scale_power": 12}'
SHAPE=(--model gpt2 --layers 24 --hidden 1024 --heads 16 --seq-len 1024 --vocab 50304 --steps 40
       --device cuda --profile-steps 20:5)
run() {  # $1 = session name, $2 = config, then extra train flags
  local name=$1 config=$2; shift 2
  timeout 240 "$CLI" train --config "$config" "${SHAPE[@]}" "$@" --session "$DB" --name "$name" \
    > "$OUT_DIR/$name.log" 2>&1
  echo "$name: rc=$? $(grep -m1 -E 'profiled steps' "$OUT_DIR/$name.log")"
}
for i in 1 2; do
  run "base-$i" "$work/bf16.json"
  run "ckpt-$i" "$work/bf16.json" --activation-checkpointing
done
run fp16-1 "$work/fp16.json"
run fp16-2 "$work/fp16.json"
check() {  # $1 = label, then check's flags
  local label=$1; shift
  "$CLI" sessions check --db "$DB" --warmup 5 "$@" > "$ARCHIVE_DIR/check-$label.txt" 2>&1
  echo "check $label: exit $?" | tee -a "$ARCHIVE_DIR/check-$label.txt"
  "$CLI" sessions check --db "$DB" --warmup 5 "$@" --json > "$ARCHIVE_DIR/check-$label.json" 2>/dev/null
  cat "$ARCHIVE_DIR/check-$label.txt"
}
check ckpt --baseline base-1,base-2 --candidate ckpt-1,ckpt-2
check fp16 --baseline base-1,base-2 --candidate fp16-1,fp16-2
check same --baseline base-1 --candidate base-2
"$CLI" sessions show ckpt-1 --db "$DB" --profile --warmup 5 > "$ARCHIVE_DIR/show-ckpt-1-profile.txt" 2>&1
head -n 40 "$ARCHIVE_DIR/show-ckpt-1-profile.txt"
"$CLI" report > "$ARCHIVE_DIR/versions.txt" 2>&1
