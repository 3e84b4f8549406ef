#!/usr/bin/env bash
# Issue 29 on the GPU, in one device call: our tuner (the model-based run of
# scripts/gpu_tune_compare.sh over its default space) and then DeepSpeed 0.19.7's own autotuner
# (scripts/gpu_ds_autotune.sh) on the same GPU, model and base config, so the two tuning times and
# chosen configs' throughputs come from one machine. DeepSpeed's FusedAdam is JIT-built in the
# background while our tuner runs: it takes CPU only, so it can slow our trials, never DeepSpeed's.
# Usage on the GPU machine: bash scripts/gpu_tune_vs_ds.sh [OURS_S [DS_TUNE_S [DS_MEASURE_S]]]
# (time limits: our tuner 100 s, DeepSpeed's autotuner 340 s, the standalone measurement of its
# choice 90 s; together inside one call's 600 s). Needs .device (the prebuilt CLI) and .whl carried.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
(source scripts/gpu_python_deps.sh && gpu_python_deps_wait) > /tmp/ds-deps-prebuild.log 2>&1 &
bash scripts/gpu_tune_compare.sh "${1:-100}" 0
wait
tail -n 3 /tmp/ds-deps-prebuild.log
bash scripts/gpu_ds_autotune.sh "${2:-340}" "${3:-90}"
