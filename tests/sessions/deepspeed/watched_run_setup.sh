# Sourced by the DeepSpeed doctor tests (run_stalled_watched.sh, run_skipped_collective_watched.sh)
# after they set cli, venv and out: skips (exit 77) when the venv has no DeepSpeed, makes a fresh
# $out with the tiny config and cds into it, picks a free port, and sets the CPU/gloo environment.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! "$venv/bin/python" -c "import deepspeed" >/dev/null 2>&1; then
  echo "SKIP: $venv has no deepspeed (scripts/install_test_deps.sh installs it)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
cd "$out"
cp "$here/ds_config.json" ds_config.json
port=$("$venv/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
export DS_ACCELERATOR=cpu PATH="$venv/bin:$PATH" OMP_NUM_THREADS=1
