#!/usr/bin/env bash
# Installs what the tests need on top of the main job's dependencies (scripts/install_deps.sh,
# run first): GoogleTest, the programs the tests drive for real, the fuzzing compiler, and the
# real DeepSpeed and transformers in the venv. scripts/test.sh runs it. Idempotent and quiet when
# everything is present. Usage: scripts/install_test_deps.sh [--no-gui]
set -euo pipefail
"$(dirname "$0")/install_deps.sh" "$@"
source "$(dirname "$0")/deps_common.sh"

# ---- Debian packages of the tests
# GoogleTest; clang with its runtime for the libFuzzer build (scripts/fuzz.sh); OpenSSH servers in
# network namespaces, pdsh and mpirun as launchers, fio beside the I/O benchmark.
PACKAGES=(libgtest-dev libgmock-dev clang libclang-rt-14-dev
          openssh-server openssh-client pdsh openmpi-bin iproute2 fio)
# A real X server with a window manager for the GUI tests and screenshots.
GUI_PACKAGES=(xvfb xauth openbox xdotool x11-utils)
[[ "${1:-}" == "--no-gui" ]] || PACKAGES+=("${GUI_PACKAGES[@]}")
install_debian_packages "${PACKAGES[@]}"

# ---- The real DeepSpeed 0.19.7 in the torch venv, which the interop tests run on the CPU
# (DS_ACCELERATOR=cpu), with transformers; transformers' HfTrainerDeepSpeedConfig needs accelerate;
# DeepSpeed's TensorBoard monitor (and the import test's reference reader) needs tensorboard.
DEEPSPEED_VERSION="0.19.7"
TRANSFORMERS_VERSION="5.24.0"
ACCELERATE_VERSION="1.15.0"
TENSORBOARD_VERSION="2.21.0"
# deepspeed is a source package: built against the venv's torch (no build isolation), with no
# compiled ops (they are JIT-built where a GPU needs them), so it needs wheel and setuptools first.
if ! have_python_package deepspeed "$DEEPSPEED_VERSION" || ! have_python_package transformers "$TRANSFORMERS_VERSION"; then
  say "installing deepspeed==$DEEPSPEED_VERSION and transformers==$TRANSFORMERS_VERSION into $VENV"
  pip_install "wheel setuptools" -- wheel setuptools
  DS_BUILD_OPS=0 pip_install "deepspeed==$DEEPSPEED_VERSION transformers==$TRANSFORMERS_VERSION" -- \
    --no-build-isolation "deepspeed==$DEEPSPEED_VERSION" "transformers==$TRANSFORMERS_VERSION"
fi
if ! have_python_package accelerate "$ACCELERATE_VERSION" || ! have_python_package tensorboard "$TENSORBOARD_VERSION"; then
  say "installing accelerate==$ACCELERATE_VERSION and tensorboard==$TENSORBOARD_VERSION into $VENV"
  pip_install "accelerate==$ACCELERATE_VERSION tensorboard==$TENSORBOARD_VERSION" -- \
    "accelerate==$ACCELERATE_VERSION" "tensorboard==$TENSORBOARD_VERSION"
fi
