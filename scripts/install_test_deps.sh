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
# network namespaces, pdsh and mpirun as launchers, fio beside the I/O benchmark, xz for the
# compressed session stores of GPU runs in tests/sessions/data.
PACKAGES=(libgtest-dev libgmock-dev clang libclang-rt-14-dev
          openssh-server openssh-client pdsh openmpi-bin iproute2 fio xz-utils)
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

# ---- The tests' second DeepSpeed: 0.19.8 beside 0.19.7, in its own venv over the one torch (a
# .pth file puts the main venv's site-packages after its own, so its deepspeed shadows 0.19.7's and
# everything else, torch included, is shared). tests/configs/deepspeed_agreement.py runs both.
DS_NEXT_VERSION="0.19.8"
DS_NEXT_VENV="${SHARDSCOPE_VENV_DS0198:-$VENV-ds0198}"
if ! compgen -G "$DS_NEXT_VENV/lib/python3*/site-packages/deepspeed-$DS_NEXT_VERSION.dist-info" >/dev/null; then
  say "installing deepspeed==$DS_NEXT_VERSION into $DS_NEXT_VENV (over the torch of $VENV)"
  [[ -x "$DS_NEXT_VENV/bin/python" ]] || "$VENV/bin/python" -m venv --without-pip "$DS_NEXT_VENV" 2>/dev/null ||
    python3 -m venv "$DS_NEXT_VENV" || fail "could not create the venv $DS_NEXT_VENV"
  main_site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  next_site=$("$DS_NEXT_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  mkdir -p "$next_site" && echo "$main_site" >"$next_site/shardscope-main-venv.pth"
  # The main venv's pip (reached through the .pth) installs into this venv's own site-packages.
  DS_BUILD_OPS=0 "$DS_NEXT_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --no-deps "deepspeed==$DS_NEXT_VERSION" ||
    fail "pip install deepspeed==$DS_NEXT_VERSION into $DS_NEXT_VENV failed; check access to PyPI"
fi
