#!/usr/bin/env bash
# Quick start 1: installs what the main job needs and is missing, builds only what it runs, and
# starts it: with a display, the GUI (the CLI, its engine module and the GUI are built); without
# one, the headless main job (only the CLI and its engine module are built): a short demo run of
# the engine on the CPU that fills a session (build/demo-sessions.db) and prints its summary. The
# tests and their dependencies are scripts/test.sh's, which reuses this build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  scripts/build.sh --main
  if [[ -x "$BUILD_DIR/app/gui/shardscope-gui" ]]; then
    exec "$BUILD_DIR/app/gui/shardscope-gui"
  fi
  echo "[run] the GUI was not built (Qt 6 or QCustomPlot missing: $BUILD_DIR.configure.log says which)"
else
  scripts/build.sh --headless
  echo "[run] no display"
fi
echo "[run] a 60-step demo run of a small GPT-2 on the CPU, recorded as a session"
exec "$BUILD_DIR/app/cli/shardscope" train --config resources/demo/ds_config.json --model gpt2 \
  --layers 2 --hidden 128 --heads 4 --seq-len 64 --vocab 512 --steps 60 \
  --session "$BUILD_DIR/demo-sessions.db" --name demo
