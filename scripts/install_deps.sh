#!/usr/bin/env bash
# Installs what ShardScope needs and is missing: Debian packages, and the torch==2.11.0 wheel
# (LibTorch) in a venv outside the checkout, reused when already there. Idempotent and quiet when
# everything is present. Usage: scripts/install_deps.sh [--no-gui]
set -euo pipefail

VENV="${SHARDSCOPE_VENV:-$HOME/.cache/shardscope/venv}"
TORCH_VERSION="2.11.0"
# The real DeepSpeed and transformers, which the interop tests run on the CPU (DS_ACCELERATOR=cpu).
DEEPSPEED_VERSION="0.19.7"
TRANSFORMERS_VERSION="5.24.0"
# transformers' HfTrainerDeepSpeedConfig needs accelerate; DeepSpeed's TensorBoard monitor (and the
# import test's reference reader) needs tensorboard.
ACCELERATE_VERSION="1.15.0"
TENSORBOARD_VERSION="2.21.0"
PACKAGES=(build-essential cmake ninja-build ccache git pkg-config python3 python3-venv
          nlohmann-json3-dev libsqlite3-dev libgtest-dev libgmock-dev libgloo-dev libaio-dev liburing-dev
          clang libclang-rt-14-dev)
# What the tests drive for real: OpenSSH servers in network namespaces, pdsh and mpirun as launchers,
# fio beside the I/O benchmark.
PACKAGES+=(openssh-server openssh-client pdsh openmpi-bin iproute2 fio)
# A real X server with a window manager for the GUI tests and screenshots.
GUI_PACKAGES=(qt6-base-dev libqcustomplot-dev xvfb xauth openbox xdotool x11-utils)
[[ "${1:-}" == "--no-gui" ]] || PACKAGES+=("${GUI_PACKAGES[@]}")

say() { echo "[install] $*"; }
fail() { echo "[install] error: $*" >&2; exit 1; }

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || fail "need root (or sudo) to apt-get install: ${missing[*]}"
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/tmp/shardscope-apt.log 2>&1 ||
    fail "apt-get update failed (see /tmp/shardscope-apt.log); check the network and /etc/apt/sources.list"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/shardscope-apt.log 2>&1 ||
    fail "apt-get install failed for: ${missing[*]} (see /tmp/shardscope-apt.log)"
fi

# The wheel's dist-info names its version: checking it costs nothing, importing torch costs seconds.
have_torch() {
  compgen -G "$VENV/lib/python3*/site-packages/torch-$TORCH_VERSION*.dist-info" >/dev/null &&
    compgen -G "$VENV/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake" >/dev/null
}
if ! have_torch; then
  say "installing torch==$TORCH_VERSION (LibTorch) into $VENV; the first time downloads about 3 GB"
  mkdir -p "$(dirname "$VENV")"
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV" ||
    fail "could not create the venv $VENV (is python3-venv installed?)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" ||
    fail "pip install torch==$TORCH_VERSION failed; check access to PyPI, or point SHARDSCOPE_VENV at a venv that has it"
  have_torch || fail "torch in $VENV is not $TORCH_VERSION after pip install"
fi

# deepspeed is a source package: built against the venv's torch (no build isolation), with no
# compiled ops (they are JIT-built where a GPU needs them), so it needs wheel and setuptools first.
have_python_package() {
  compgen -G "$VENV/lib/python3*/site-packages/$1-$2.dist-info" >/dev/null
}
if ! have_python_package deepspeed "$DEEPSPEED_VERSION" || ! have_python_package transformers "$TRANSFORMERS_VERSION"; then
  say "installing deepspeed==$DEEPSPEED_VERSION and transformers==$TRANSFORMERS_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check wheel setuptools ||
    fail "pip install wheel setuptools failed; check access to PyPI"
  DS_BUILD_OPS=0 "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    "deepspeed==$DEEPSPEED_VERSION" "transformers==$TRANSFORMERS_VERSION" ||
    fail "pip install deepspeed==$DEEPSPEED_VERSION transformers==$TRANSFORMERS_VERSION failed; check access to PyPI"
fi
if ! have_python_package accelerate "$ACCELERATE_VERSION" || ! have_python_package tensorboard "$TENSORBOARD_VERSION"; then
  say "installing accelerate==$ACCELERATE_VERSION and tensorboard==$TENSORBOARD_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "accelerate==$ACCELERATE_VERSION" "tensorboard==$TENSORBOARD_VERSION" ||
    fail "pip install accelerate==$ACCELERATE_VERSION tensorboard==$TENSORBOARD_VERSION failed; check access to PyPI"
fi

# The tests' second DeepSpeed: 0.19.8 beside 0.19.7, in its own venv over the one torch (a .pth
# file puts the main venv's site-packages after its own, so its deepspeed shadows 0.19.7's and
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
