#!/usr/bin/env bash
# The shared DeepSpeed run of the interop tests (ctest fixture "deepspeed_run"): a tiny ZeRO-2
# training on 2 CPU ranks (gloo) started by `shardscope watch` as a child command, so the watch
# test follows it live and the import test reads the files it leaves (csv_monitor, TensorBoard,
# the output, the config copy, the traces). Exit 77 (skipped) when the venv has no DeepSpeed.
# usage: run_watched.sh SHARDSCOPE VENV OUT_DIR
set -euo pipefail
cli=$1 venv=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$venv/bin/python" -c "import deepspeed, tensorboard" >/dev/null 2>&1; then
  echo "SKIP: $venv has no deepspeed/tensorboard (scripts/install_test_deps.sh installs them)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out/traces"
cd "$out"
cp "$here/ds_config.json" ds_config.json
before=$(sha256sum ds_config.json)
port=$("$venv/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
export DS_ACCELERATOR=cpu PATH="$venv/bin:$PATH" OMP_NUM_THREADS=1
start=$(date +%s)
"$cli" watch --db "$out/watch.db" --out "$out/watch" --name tiny-watch --poll-ms 200 -- \
  deepspeed --num_gpus 2 --master_port "$port" "$here/train_tiny.py" --deepspeed --deepspeed_config ds_config.json \
  --trace-dir "$out/traces" --steps 6
echo "[deepspeed_run] the watched DeepSpeed run took $(( $(date +%s) - start )) s"
[[ "$(sha256sum ds_config.json)" == "$before" ]] || { echo "FAIL: watch changed the user's config"; exit 1; }
