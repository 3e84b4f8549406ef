#!/usr/bin/env bash
# Issue 28 item 4 on the GPU: a run whose micro-batch cannot fit goes out of memory, the rank's
# doctor finding names the smallest change the estimator says fits (as `shardscope train` flags),
# and the same run with those flags then trains without running out of memory.
# GPT-2 1.3B shape, bf16, ZeRO stage 1, sequence 1024, micro-batch 160 on one GPU.
# Usage on the GPU machine: bash scripts/gpu_oom_advice_check.sh
export SKIP_CUDA_TESTS=1
source "$(dirname "$0")/gpu_check_common.sh" gpu-oom-advice
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT_DIR/gpu.txt"
work=$(mktemp -d)
cat > "$work/ds.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 160, "gradient_clipping": 1.0, "steps_per_print": 1,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}}
JSON
SHAPE=(--model gpt2 --layers 24 --hidden 2048 --heads 16 --seq-len 1024 --vocab 50304 --steps 3 --device cuda)
timeout 300 $CLI launch --num_gpus 1 --session "$work/oom.db" -- --config "$work/ds.json" "${SHAPE[@]}" \
  > "$OUT_DIR/oom-run.log" 2>&1
echo "too large a micro-batch: rc=$?"
grep -h "doctor:" -A1 "$OUT_DIR/oom-run.log" | tee "$OUT_DIR/finding.txt"
$CLI sessions show --db "$work/oom.db" --json 1 > "$OUT_DIR/oom-session.json" 2>&1
python3 - "$OUT_DIR/oom-session.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc.get("findings", []):
    print("stored finding:", f["kind"], f["severity"], f["ranks"], "|", f["summary"], "|", f["suggested_fix"])
PY
flags=$(sed -n 's/.*rerun with //p' "$OUT_DIR/finding.txt" | head -n 1)
[[ -n $flags ]] || { echo "no suggested change found"; exit 1; }
echo "suggested: $flags"
# shellcheck disable=SC2086  # the flags are words
timeout 300 $CLI train --config "$work/ds.json" "${SHAPE[@]}" $flags > "$OUT_DIR/fixed-run.log" 2>&1
echo "with the suggested change: rc=$?"
grep -E "memory measured|trained|out of memory" "$OUT_DIR/fixed-run.log" | tail -n 4
