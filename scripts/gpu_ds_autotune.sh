#!/usr/bin/env bash
# Issue 29 on the GPU: DeepSpeed 0.19.7's own autotuner (`deepspeed --autotuning tune`) over the
# shape and space of scripts/gpu_tune_compare.sh, one GPU: GPT-2 1.3B (24 layers, hidden 2048,
# heads 16, seq 1024, vocab 50304; build_gpt2 of scripts/bench/gpt2_eager.py in the DeepSpeed script
# scripts/bench/ds_autotune_train.py), the same base ds.json (bf16, AdamW lr 3e-4 betas .9/.95 wd .1,
# clipping 1.0), profile steps 3:8 as our --profile-steps. Then the config it chose is measured
# standalone (ds_autotune_train.py --measure-steps: median tokens/s of 10 steps after 3 warm-up, as
# our trials' median after warm-up), and $OUT/ds-autotune.txt gets the chosen config, the
# autotuner's metric for it, the measured tokens/s, the experiments and the total tuning wall time
# (the logs of every experiment are in $OUT/ds-autotune-logs.tgz).
#
# The space DeepSpeed's autotuner is given: zero_optimization.stage [0,1,2,3] and
# train_micro_batch_size_per_gpu [8,16] (a list: exactly those micro-batches), fast mode (DeepSpeed's
# default: micro-batch per stage only, no bucket sizes); 8 experiments after its model-info run.
# What it cannot express of our space (gpu_tune_compare.sh's), said plainly:
#  - activation checkpointing: no autotuner dimension; DeepSpeed's "activation_checkpointing" block
#    only configures deepspeed.checkpointing for models that call it. Not tuned: every experiment
#    runs without recomputation.
#  - optimizer offload (none/cpu): fast mode sets each experiment's zero_optimization to {"stage": N}
#    alone (autotuner.py, run_tuning_micro_batch_sizes), dropping any offload block; the slow mode
#    only tunes the bucket and overlap keys of its templates, and only for a stage whose micro-batch
#    search beat the previous stage's. Not tuned: every experiment runs without offload.
#  - gradient accumulation: with a micro-batch list DeepSpeed keeps the batch per GPU at the largest
#    micro-batch (16), so micro-batch 8 runs with gradient_accumulation_steps 2 (ours: 1).
#  - its metric is its own: "throughput" = train_batch_size / (trimmed mean of the forward, backward
#    and step timers of the profiled steps x accumulation steps), samples/s; tokens/s = x 1024. Hence
#    the standalone measurement of the winner, timed as ours are (whole steps, host clock, synchronised).
# Experiments run one after another (one GPU); each is a new `deepspeed` launch, so the model build,
# DeepSpeed's setup and the FusedAdam load are in the tuning time, as our trials' launches are in ours.
#
# pdsh: after every experiment the scheduler runs `pdsh -f 1024 -w localhost pkill -f EXP_NAME`
# (scheduler.py, clean_up); the GPU machine has no pdsh and no network to install it, so a stand-in
# (written by scripts/bench/ds_autotune_compare.py into the work folder's bin/, first on PATH for
# the run) runs that command here when every host is this machine. The same bin/ has `deepspeed`:
# DeepSpeed's launcher on this Python, which the scheduler starts each experiment with.
#
# Usage on the GPU machine: bash scripts/gpu_ds_autotune.sh [TUNE_SECONDS [MEASURE_SECONDS]]
# TUNE_SECONDS (default 300): the autotuner's limit; then its whole process group is killed
# (SIGTERM, SIGKILL 15 s later) and the experiments that finished are reported, the best of them
# measured. MEASURE_SECONDS (default 120): the standalone measurement's limit. With DeepSpeed's
# setup (about a minute when FusedAdam is built, i.e. without .device/ds-site.tgz) both stay inside
# a device call's 600 s. Model-info run + 8 experiments, each a fresh launch plus the scheduler's
# 5 s polling, may not all fit in 300 s (not yet measured on the GPU): what finished is reported.
# Needs DeepSpeed (scripts/gpu_python_deps.sh: .device/ds-site.tgz or .whl/, so carry one of
# them) and tabulate, which the autotuner asserts: the image has it (0.10.0, seen 2026-12-07);
# where `import tabulate` fails, .device/ds-autotune/tabulate-*.whl is installed into
# /tmp/ds-autotune-site.
# Dry run on this machine's CPU: DS_AUTOTUNE_WHERE=cpu (DS_ACCELERATOR=cpu, gloo; no
# gpu_python_deps.sh), DS_AUTOTUNE_SHAPE (ds_autotune_train.py's shape flags),
# DS_AUTOTUNE_PYTHON (the Python with torch and DeepSpeed; default python3), DS_AUTOTUNE_SPACE
# ("--stages 0,1 --micro-batches 2,4" and the like), DS_AUTOTUNE_MODE (tune or run),
# DS_AUTOTUNE_MEASURE ("--measure-steps 10 --warmup 3").
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NCCL_NVLS_ENABLE=0
ARCHIVE_DIR="${OUT:-/tmp/shardscope-out}"
OUT_DIR="$ARCHIVE_DIR/logs"
mkdir -p "$OUT_DIR"
trap "tar -czf '$ARCHIVE_DIR/ds-autotune-logs.tgz' -C '$ARCHIVE_DIR' logs && rm -rf '$OUT_DIR'" EXIT
PY=${DS_AUTOTUNE_PYTHON:-python3}
if [[ ${DS_AUTOTUNE_WHERE:-gpu} == cpu ]]; then
  export DS_ACCELERATOR=cpu
  SHAPE_DEFAULT="--layers 2 --hidden 64 --heads 2 --vocab 128 --seq-len 32"
else
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee "$OUT_DIR/gpu.txt"
  source scripts/gpu_python_deps.sh
  gpu_python_deps_wait  # FusedAdam built (or found) before the first experiment loads it
  gpu_python_deps_pack "$ARCHIVE_DIR"
  SHAPE_DEFAULT="--layers 24 --hidden 2048 --heads 16 --seq-len 1024 --vocab 50304"
fi
if ! "$PY" -c 'import tabulate' 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/ds-autotune-site \
    .device/ds-autotune/tabulate-*.whl
  export PYTHONPATH="/tmp/ds-autotune-site${PYTHONPATH:+:$PYTHONPATH}"
fi
"$PY" -c 'import deepspeed, tabulate, torch; print("deepspeed", deepspeed.__version__, "torch", torch.__version__)' \
  2>&1 | tail -n 1 | tee "$OUT_DIR/ds-versions.txt"
read -r -a SHAPE <<< "${DS_AUTOTUNE_SHAPE:-$SHAPE_DEFAULT}"
read -r -a SPACE <<< "${DS_AUTOTUNE_SPACE:-}"
read -r -a MEASURE <<< "${DS_AUTOTUNE_MEASURE:-}"
work=$(mktemp -d /tmp/ds-autotune.XXXXXX)
start=$SECONDS
"$PY" scripts/bench/ds_autotune_compare.py --work "$work" --archive "$ARCHIVE_DIR" --logs "$OUT_DIR" \
  --python "$(command -v "$PY")" --limit "${1:-300}" --measure-limit "${2:-120}" --mode "${DS_AUTOTUNE_MODE:-tune}" \
  "${SPACE[@]}" "${MEASURE[@]}" -- "${SHAPE[@]}" 2>&1 | tee "$OUT_DIR/ds-autotune-compare.log"
echo "ds autotune: rc=${PIPESTATUS[0]} in $((SECONDS - start)) s (work folder $work)"
