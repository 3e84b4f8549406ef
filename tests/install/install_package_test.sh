#!/usr/bin/env bash
# The Debian package of a build, installed into a fresh root and run from there as a user would:
#   1. `cpack -G DEB` makes the package; its Depends are Debian package names apt knows;
#   2. `dpkg-deb -x` unpacks it into an empty folder: the prefix layout is checked;
#   3. every library each binary needs resolves inside the package (bundled), to a file of one of
#      the Depends packages, or, for the engine module alone, to LibTorch;
#   4. with a clean environment (env -i) and only the package's bin/ on PATH: --version, report,
#      estimate, a 2-step CPU train (LibTorch from $SHARDSCOPE_LIBTORCH_DIR; the loaded module is
#      the package's), the error naming the setting when LibTorch is missing, and the GUI under
#      Xvfb (a visible window) when the tools are there.
# Usage: install_package_test.sh BUILD_DIR LIBTORCH_DIR. Exit 77 (skip) without cpack/dpkg-deb.
set -uo pipefail
BUILD=$1
TORCH_LIB=$2
for tool in cpack dpkg-deb dpkg-query readelf ldd; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (a Debian tool this test drives)"; exit 77; }
done
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
ROOT="$WORK/root"

# ---- 1. the package and its Depends
if ! cpack --config "$BUILD/CPackConfig.cmake" -G DEB -B "$WORK/pkg" >"$WORK/cpack.log" 2>&1; then
  cat "$WORK/cpack.log"; echo "FAIL: cpack failed"; exit 1
fi
DEB=$(ls "$WORK"/pkg/*.deb)
echo "package: $(basename "$DEB"), $(du -h "$DEB" | cut -f1)"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $DEPENDS"
read -r -a DEPENDS_NAMES <<<"$(echo "$DEPENDS" | sed -E 's/\([^)]*\)//g; s/,/ /g')"
for name in "${DEPENDS_NAMES[@]}"; do
  apt-cache show --no-all-versions "$name" >/dev/null 2>&1 || dpkg-query -W "$name" >/dev/null 2>&1 ||
    fail "Depends names '$name', which is not a Debian package apt or dpkg knows"
done

# ---- 2. the prefix layout
dpkg-deb -x "$DEB" "$ROOT" || { echo "FAIL: dpkg-deb -x failed"; exit 1; }
for f in usr/bin/shardscope usr/lib/shardscope/shardscope-engine.so usr/share/man/man1/shardscope.1.gz \
         usr/share/shardscope/demo/ds_config.json usr/share/doc/shardscope/README.md; do
  [[ -s "$ROOT/$f" ]] || fail "the package has no $f"
done
compgen -G "$ROOT/usr/share/shardscope/templates/*.json" >/dev/null || fail "the package has no config templates"
compgen -G "$ROOT/usr/bin/*.so*" >/dev/null && fail "bin/ holds libraries: $(ls "$ROOT"/usr/bin/*.so*)"
zcat "$ROOT/usr/share/man/man1/shardscope.1.gz" | grep -q '^\.SS train' || fail "the man page has no section for train"
HAS_GUI=0
if [[ -x "$ROOT/usr/bin/shardscope-gui" ]]; then
  HAS_GUI=1
  for f in usr/share/applications/shardscope.desktop usr/share/icons/hicolor/scalable/apps/shardscope.svg \
           usr/share/man/man1/shardscope-gui.1.gz; do
    [[ -s "$ROOT/$f" ]] || fail "the package has the GUI but no $f"
  done
  if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate "$ROOT/usr/share/applications/shardscope.desktop" || fail "the desktop entry is not valid"
  fi
fi

# ---- 3. every library a binary needs: bundled, from a Depends package, or LibTorch's (module only)
owner_of() {  # PATH: the Debian package that owns the file, or nothing
  dpkg-query -S "$1" 2>/dev/null | head -1 | cut -d: -f1 && return
  dpkg-query -S "$(realpath "$1")" 2>/dev/null | head -1 | cut -d: -f1
}
check_libraries() {  # ELF
  local elf=$1 needed resolved owner
  while read -r needed; do
    # "libx.so => /path (0x...)", or for the dynamic loader "/lib64/ld-linux-x86-64.so.2 (0x...)".
    resolved=$(ldd "$elf" 2>/dev/null | awk -v n="$needed" '$1 == n && $2 == "=>" {print $3}
                                                           $1 ~ ("/" n "$") {print $1}' | head -1)
    if [[ "$resolved" == "$ROOT"/* ]]; then continue; fi  # bundled, found through the RUNPATH
    if [[ -z "$resolved" || "$resolved" == "not" ]]; then
      [[ "$elf" == *shardscope-engine.so && "$needed" =~ ^lib(torch|c10) ]] && continue
      fail "${elf#"$ROOT"/} needs $needed, which is neither in the package nor found"
      continue
    fi
    owner=$(owner_of "$resolved")
    if [[ -z "$owner" ]]; then
      fail "${elf#"$ROOT"/} needs $needed, found as $resolved, which no Debian package owns (bundle it)"
    elif [[ " ${DEPENDS_NAMES[*]} " != *" $owner "* ]]; then
      fail "${elf#"$ROOT"/} needs $needed from the Debian package $owner, which Depends does not name"
    fi
  done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
}
for elf in "$ROOT"/usr/bin/* "$ROOT"/usr/lib/shardscope/*.so*; do
  check_libraries "$elf"
done
echo "bundled: $(cd "$ROOT/usr/lib/shardscope" && ls | tr '\n' ' ')"

# ---- 4. run from the root with a clean environment
HOME_DIR="$WORK/home"
mkdir -p "$HOME_DIR"
in_root() { env -i HOME="$HOME_DIR" PATH="$ROOT/usr/bin:/usr/bin:/bin" LANG=C.UTF-8 "$@"; }
expect_ok() {  # WHAT COMMAND...: runs it in the clean environment; output in $WORK/out
  in_root "$@" >"$WORK/out" 2>&1 || { fail "$1 exited with $?"; tail -20 "$WORK/out"; return 1; }
}
expect_ok shardscope --version && grep -q "^shardscope " "$WORK/out" || fail "--version printed: $(head -2 "$WORK/out")"
expect_ok shardscope report && grep -qi "libtorch" "$WORK/out" || fail "report printed no LibTorch line"
expect_ok shardscope estimate --params 1e9 --gpus-per-node 2 && grep -qi "stage" "$WORK/out" ||
  fail "estimate printed no ZeRO stage"
DEMO="$ROOT/usr/share/shardscope/demo/ds_config.json"
TRAIN=(shardscope train --config "$DEMO" --model gpt2 --layers 1 --hidden 32 --heads 2 --seq-len 16 --vocab 64
       --steps 2 --device cpu --session "$WORK/s.db" --name installed)
if in_root SHARDSCOPE_LIBTORCH_DIR="$TORCH_LIB" LD_DEBUG=files LD_DEBUG_OUTPUT="$WORK/ld" OMP_NUM_THREADS=1 \
     "${TRAIN[@]}" >"$WORK/train.out" 2>&1; then
  grep -qh "file=$ROOT/usr/lib/shardscope/shardscope-engine.so " "$WORK"/ld.* ||
    fail "train did not load the package's engine module ($ROOT/usr/lib/shardscope/shardscope-engine.so)"
  grep -qh "file=$TORCH_LIB/libtorch.so " "$WORK"/ld.* || fail "train did not load libtorch.so from $TORCH_LIB"
  expect_ok shardscope sessions list --db "$WORK/s.db" && grep -q installed "$WORK/out" ||
    fail "the session of the installed train is not listed"
else
  fail "train from the package exited with $?"; tail -20 "$WORK/train.out"
fi
mkdir -p "$WORK/no-torch"
in_root SHARDSCOPE_LIBTORCH_DIR="$WORK/no-torch" "${TRAIN[@]}" >"$WORK/out" 2>&1
status=$?
((status == 1)) || fail "train without LibTorch exited with $status, not 1"
grep -q "SHARDSCOPE_LIBTORCH_DIR" "$WORK/out" && grep -q "pip install torch==" "$WORK/out" ||
  fail "train without LibTorch did not name the setting and the fix: $(cat "$WORK/out")"

# ---- the GUI under Xvfb: a visible window from the package's binary
if ((HAS_GUI)); then
  if command -v Xvfb >/dev/null && command -v xdotool >/dev/null; then
    mkfifo "$WORK/displayfd"
    Xvfb -displayfd 3 -screen 0 1366x768x24 -nolisten tcp 3>"$WORK/displayfd" 2>"$WORK/xvfb.log" &
    PIDS+=($!)
    read -r -t 20 display <"$WORK/displayfd" || fail "Xvfb did not start"
    in_root DISPLAY=":$display" XDG_RUNTIME_DIR="$WORK" QT_QPA_PLATFORM=xcb shardscope-gui >"$WORK/gui.log" 2>&1 &
    gui=$!
    PIDS+=("$gui")
    window=""
    for _ in $(seq 200); do
      window=$(DISPLAY=":$display" xdotool search --onlyvisible --pid "$gui" --name '^ShardScope$' 2>/dev/null | head -1)
      [[ -n "$window" ]] && break
      sleep 0.05
    done
    if [[ -z "$window" ]]; then
      fail "the package's shardscope-gui showed no window within 10 s"; cat "$WORK/gui.log"
    else
      echo "gui: window $window from $ROOT/usr/bin/shardscope-gui"
      # No window manager here to give it the keyboard, so SIGTERM rather than Ctrl+Q
      # (tests/gui/x11_window_test.sh drives the keys under openbox).
      kill -TERM "$gui"
      for _ in $(seq 100); do kill -0 "$gui" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$gui" 2>/dev/null && fail "shardscope-gui did not end on SIGTERM"
    fi
  else
    echo "gui: not checked (no Xvfb or xdotool; scripts/install_test_deps.sh installs them)"
  fi
fi
((FAILED)) && exit 1
echo "OK"
