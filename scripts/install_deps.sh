#!/usr/bin/env bash
# Installs what the main job needs (scripts/run.sh: build and run the CLI, its engine module and
# the GUI) and is missing: Debian packages, and the torch==2.11.0 wheel (LibTorch) in a venv
# outside the checkout, reused when already there. What only the tests need is
# scripts/install_test_deps.sh's. Idempotent and quiet when everything is present.
# Usage: scripts/install_deps.sh [--no-gui]
set -euo pipefail
source "$(dirname "$0")/deps_common.sh"

TORCH_VERSION="2.11.0"
# To build: the compilers, CMake/Ninja (ccache for rebuilds), the libraries the CLI links (SQLite,
# nlohmann-json, the gloo headers the torch wheel leaves out, libaio/liburing for NVMe offload),
# and python3-venv for the torch wheel. openssh-client is what `launch --hostfile` reaches hosts with.
PACKAGES=(build-essential cmake ninja-build ccache git pkg-config python3 python3-venv
          nlohmann-json3-dev libsqlite3-dev libgloo-dev libaio-dev liburing-dev openssh-client)
GUI_PACKAGES=(qt6-base-dev libqcustomplot-dev)
[[ "${1:-}" == "--no-gui" ]] || PACKAGES+=("${GUI_PACKAGES[@]}")
install_debian_packages "${PACKAGES[@]}"

have_torch() {
  have_python_package torch "$TORCH_VERSION*" &&
    compgen -G "$VENV/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake" >/dev/null
}
if ! have_torch; then
  say "installing torch==$TORCH_VERSION (LibTorch) into $VENV; the first time downloads about 3 GB"
  mkdir -p "$(dirname "$VENV")"
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV" ||
    fail "could not create the venv $VENV (is python3-venv installed?)"
  pip_install_fast "torch==$TORCH_VERSION" -- "torch==$TORCH_VERSION"
  have_torch || fail "torch in $VENV is not $TORCH_VERSION after pip install"
fi
