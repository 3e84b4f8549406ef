#!/usr/bin/env bash
# One device call for the run doctor's GPU-machine checks (issue 28): the out-of-memory finding
# and its suggested change (scripts/gpu_oom_advice_check.sh), then the collective flight record's
# cost on the machine's quiet CPUs (4 Gloo ranks of a GPT-2 at ZeRO stage 3, record on against
# off; scripts/bench_flight_record.py). Logs in $OUT/gpu-doctor-logs.tgz and on stdout.
# Usage on the GPU machine: bash scripts/gpu_doctor_checks.sh [PAIRS]
pairs=${1:-4}
bash "$(dirname "$0")/gpu_oom_advice_check.sh" 2>&1 | tail -n 12
export SKIP_CUDA_TESTS=1
source "$(dirname "$0")/gpu_check_common.sh" gpu-doctor
python3 scripts/bench_flight_record.py --cli "$CLI" --num-procs 4 --pairs "$pairs" --steps 30 --layers 8 \
  --hidden 384 --heads 6 --seq-len 128 --micro-batch 4 2>&1 | tee "$OUT_DIR/flight-record-cpu.log"
