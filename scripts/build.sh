#!/usr/bin/env bash
# Configures and builds ShardScope into build/ (Release, Ninja, ccache). With --main, only what the
# main job runs (the `shardscope_main` target: the CLI, its engine module, the GUI, the man page);
# with --headless, only what the headless demo runs (`shardscope_headless`: the CLI and its engine
# module); without either, everything configured (the tests too, once GoogleTest is installed).
# Other arguments go to CMake's configure step, e.g. scripts/build.sh -DSHARDSCOPE_GUI=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${SHARDSCOPE_BUILD_DIR:-build}"
VENV="${SHARDSCOPE_VENV:-$HOME/.cache/shardscope/venv}"
JOBS="${SHARDSCOPE_JOBS:-$(nproc)}"
TARGET=()
case "${1:-}" in
  --main) TARGET=(--target shardscope_main); shift ;;
  --headless) TARGET=(--target shardscope_headless); shift ;;
esac
if [[ ! -f "$BUILD_DIR/build.ninja" || $# -gt 0 ]]; then
  mkdir -p "$BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DSHARDSCOPE_VENV="$VENV" "$@" >"$BUILD_DIR.configure.log" 2>&1 || {
    cat "$BUILD_DIR.configure.log" >&2; echo "[build] configure failed (log above)" >&2; exit 1; }
  grep -E "^-- (ShardScope|shardscope-gui)" "$BUILD_DIR.configure.log" || true
fi
cmake --build "$BUILD_DIR" -j "$JOBS" "${TARGET[@]}"
