#!/usr/bin/env bash
# One device call for ZeRO-Offload: builds on the GPU machine, runs the CUDA tests (among them
# offload_optimizer at stages 1-3 and offload_param at stage 3 over NCCL on 2 GPUs), a 2-GPU launch
# of the zero3_cpu_offload template, then the offload benchmark against FSDP2 with CPUOffloadPolicy.
# Usage on the nvidia-h200-x2 machine: bash scripts/gpu_offload_checks.sh [bench arguments...]
# The logs come back as one archive, $OUT/gpu-offload-logs.tgz (the device tool returns few files).
source "$(dirname "$0")/gpu_check_common.sh" gpu-offload
grep -E "tests passed|Failed|Test #.*(Offload|Passed|Failed)" "$OUT_DIR/build-and-cuda-tests.log" | tail -n 8

# The template a GUI user picks for the largest models: ZeRO-3 with optimizer and parameters on the host.
work=$(mktemp -d)
timeout 150 $CLI launch --num_gpus 2 --session "$work/s.db" -- --config configs/templates/zero3_cpu_offload.json \
  --model gpt2 --layers 8 --hidden 1024 --heads 16 --seq-len 512 --steps 12 --device cuda > "$OUT_DIR/launch-offload.log" 2>&1
echo "launch zero3_cpu_offload rc=$?"; grep -E "ZeRO-Offload|trained|peak|rank  |^[01] " "$OUT_DIR/launch-offload.log" | head -n 8

timeout 420 python3 scripts/bench_zero_gpu.py --cli "$CLI" --offload --stages 2,3 --engines shardscope,pytorch --json "$OUT_DIR/bench-offload.json" "$@" > "$OUT_DIR/bench-offload.log" 2>&1
echo "bench rc=$?"; grep -v '^ours:' "$OUT_DIR/bench-offload.log" | grep -v '^ *[{}"\[]' | grep -v "warning\|hint:\|shardscope launch:" | tail -n 12
