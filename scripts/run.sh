#!/usr/bin/env bash
# Quick start 1: installs what is missing, builds, and starts the main job: the GUI when a display
# is available; without one, the headless main job (the environment report until the engine's
# demo run lands).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x "$BUILD_DIR/app/gui/shardscope-gui" ]]; then
  exec "$BUILD_DIR/app/gui/shardscope-gui"
fi
echo "[run] no display: running the headless main job"
exec "$BUILD_DIR/app/cli/shardscope" report
