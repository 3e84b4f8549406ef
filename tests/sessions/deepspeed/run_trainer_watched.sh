#!/usr/bin/env bash
# The Hugging Face Trainer runs of the interop tests (ctest fixture "trainer_run", issue 34): the
# tiny Trainer + DeepSpeed script with an "auto" config under `shardscope watch -- deepspeed ...`,
# then the same script started with plain `python` (no launcher), which DeepSpeed refuses before
# the first step. check_trainer_run.py reads both sessions and imports the first run's files.
# Exit 77 (skipped) when the venv has no transformers/deepspeed.
# usage: run_trainer_watched.sh SHARDSCOPE VENV OUT_DIR
set -euo pipefail
cli=$1 venv=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$venv/bin/python" -c "import deepspeed, transformers, accelerate, tensorboard" >/dev/null 2>&1; then
  echo "SKIP: $venv has no deepspeed/transformers/accelerate/tensorboard (scripts/install_test_deps.sh installs them)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
cd "$out"
cp "$here/ds_trainer_auto.json" ds.json
port=$("$venv/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
export DS_ACCELERATOR=cpu PATH="$venv/bin:$PATH" OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
start=$(date +%s)
"$cli" watch --db "$out/watch.db" --out "$out/watch" --name trainer-watch --poll-ms 200 -- \
  deepspeed --num_gpus 1 --master_port "$port" "$here/train_hf_trainer.py" --deepspeed ds.json \
  --output_dir "$out/trainer-out" --steps 12
echo "[trainer_run] the watched Trainer run took $(( $(date +%s) - start )) s"
set +e
"$cli" watch --db "$out/watch.db" --out "$out/watch-plain" --name no-launcher -- \
  python "$here/train_hf_trainer.py" --deepspeed ds.json --output_dir "$out/plain-out" --steps 2 \
  > "$out/no-launcher.txt" 2>&1
echo "[trainer_run] the run without a launcher exited $?"
exit 0
