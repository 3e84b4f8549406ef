#!/usr/bin/env bash
# One device call for the multi-GPU work (issue 7): builds on the GPU machine, runs the CUDA tests
# (including ZeRO stages 0-3 over NCCL on 2 GPUs), a 2-GPU `shardscope launch` run with a checkpoint
# resumed on 1 GPU, then the ZeRO benchmark against DDP / ZeroRedundancyOptimizer / FSDP2.
# Usage on the nvidia-h200-x2 machine: bash scripts/gpu_zero_checks.sh [bench arguments...]
# The logs come back as one archive, $OUT/gpu-zero-logs.tgz (the device tool returns few files).
source "$(dirname "$0")/gpu_check_common.sh" gpu-zero
tail -n 25 "$OUT_DIR/build-and-cuda-tests.log"

work=$(mktemp -d)
cat > "$work/ds.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 5,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}, "bf16": {"enabled": true},
 "zero_optimization": {"stage": 3, "overlap_comm": true}}
JSON
timeout 120 $CLI launch --num_gpus 2 --session "$work/s.db" -- --config "$work/ds.json" --layers 4 --hidden 512 \
  --heads 8 --seq-len 256 --steps 10 --save "$work/ck" > "$OUT_DIR/launch-2gpu.log" 2>&1
echo "launch 2 GPUs rc=$?"; tail -n 6 "$OUT_DIR/launch-2gpu.log"
timeout 60 $CLI train --config "$work/ds.json" --set zero_optimization.stage=1 --layers 4 --hidden 512 --heads 8 \
  --seq-len 256 --steps 12 --load "$work/ck" > "$OUT_DIR/resume-1gpu.log" 2>&1
echo "resume on 1 GPU rc=$?"; tail -n 3 "$OUT_DIR/resume-1gpu.log"
$CLI sessions show --db "$work/s.db" "$($CLI sessions list --db "$work/s.db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uid"])' 2>/dev/null)" > "$OUT_DIR/launch-session.txt" 2>&1

# Where stage 2's memory goes on the benchmark shape (DeepSpeed's memory_breakdown lines, rank 0).
cat > "$work/z2.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
 "bf16": {"enabled": true}, "memory_breakdown": true,
 "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 50000000}}
JSON
timeout 90 $CLI launch --num_gpus 2 -- --config "$work/z2.json" --layers 24 --hidden 2048 --heads 16 --seq-len 1024 \
  --vocab 50304 --steps 2 --device cuda 2>&1 | grep -E "^\[rank 0\] (Engine|MA )" > "$OUT_DIR/memory-breakdown-z2.txt"
head -n 24 "$OUT_DIR/memory-breakdown-z2.txt"

timeout 400 python3 scripts/bench_zero_gpu.py --cli "$CLI" --json "$OUT_DIR/bench-zero.json" "$@" > "$OUT_DIR/bench-zero.log" 2>&1
echo "bench rc=$?"; grep -v '^ours:' "$OUT_DIR/bench-zero.log" | grep -v '^ *[{}"\[]' | tail -n 20
