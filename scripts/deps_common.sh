# Sourced by scripts/install_deps.sh and scripts/install_test_deps.sh: installing what is missing,
# quietly when everything is there. Not run on its own.
VENV="${SHARDSCOPE_VENV:-$HOME/.cache/shardscope/venv}"

say() { echo "[install] $*"; }
fail() { echo "[install] error: $*" >&2; exit 1; }

# install_debian_packages PKG...: apt-get installs those of PKG that dpkg does not list as installed.
install_debian_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || fail "need root (or sudo) to apt-get install: ${missing[*]}"
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >>/tmp/shardscope-apt.log 2>&1 ||
    fail "apt-get update failed (see /tmp/shardscope-apt.log); check the network and /etc/apt/sources.list"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/shardscope-apt.log 2>&1 ||
    fail "apt-get install failed for: ${missing[*]} (see /tmp/shardscope-apt.log)"
}

# A wheel's dist-info names its version: checking it costs nothing, importing the package costs seconds.
have_python_package() {  # NAME VERSION [VENV]
  compgen -G "${3:-$VENV}/lib/python3*/site-packages/$1-$2.dist-info" >/dev/null
}

# pip_install WHAT -- PIP-ARGUMENTS...: pip install into $VENV, failing with WHAT named.
pip_install() {
  local what=$1
  shift 2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" ||
    fail "pip install $what failed; check access to PyPI, or point SHARDSCOPE_VENV at a venv that has it"
}

# pip_install_fast WHAT -- PIP-ARGUMENTS...: pip_install through uv (put into $VENV first, a few
# seconds), which fetches and unpacks a package's dependencies in parallel: the torch wheel with its
# 3 GB of CUDA libraries took 40 s against pip's 116 s on this project's 2-core machine. Falls back to
# pip when uv cannot be had or fails.
UV_VERSION="${SHARDSCOPE_UV_VERSION:-0.13.10}"
pip_install_fast() {
  local what=$1
  if [[ -x "$VENV/bin/uv" ]] ||
     "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" >/dev/null 2>&1; then
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "${@:3}" && return 0
    say "uv could not install $what; trying pip"
  fi
  pip_install "$@"
}
