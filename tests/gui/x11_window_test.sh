#!/usr/bin/env bash
# The real shardscope-gui under a real X server with a window manager, as a user meets it:
# Xvfb (a free display picked with -displayfd, so tests run in parallel) and openbox, driven with
# xdotool, measured with xwininfo. On a 1366x768 and a 1600x900 screen it checks:
#   - startup: the window is visible within 1 s (the figure is printed; docs/gui.md records it);
#   - the window and its minimum size fit the screen, and a saved geometry never outgrows it;
#   - Ctrl+Q while the Environment report is still loading exits with status 0 (it segfaulted)
#     and leaves no child process behind;
#   - Ctrl+Shift+S (Save As) opens the Save dialog under openbox, not only under GNOME or KDE;
#   - a failed launch whose message is one 3,000-character line does not widen the window.
# Usage: x11_window_test.sh SHARDSCOPE_GUI SHARDSCOPE_CLI SOURCE_DIR. Exit 77 (skip) without the tools.
set -uo pipefail
GUI=$1
CLI=$2
for tool in Xvfb openbox xdotool xwininfo xprop; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install_test_deps.sh installs it)"; exit 77; }
done
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }

# Fake CLIs: one that never answers `report` (so Ctrl+Q lands while it loads), one whose launch
# fails with a single 3,000-character line, as a missing file's path or a JSON error can.
cat >"$WORK/slow_cli" <<'EOF'
#!/bin/sh
exec sleep 60.125
EOF
LONG=$(head -c 3000 /dev/zero | tr '\0' 'x')
cat >"$WORK/failing_cli" <<EOF
#!/bin/sh
echo "shardscope launch: error: /no/such/token/file/$LONG.bin: cannot open the token file" >&2
exit 2
EOF
chmod +x "$WORK/slow_cli" "$WORK/failing_cli"

start_x() {  # SIZE: starts Xvfb and openbox, exports DISPLAY
  local fifo="$WORK/displayfd.$1"
  mkfifo "$fifo"
  Xvfb -displayfd 3 -screen 0 "${1}x24" -nolisten tcp 3>"$fifo" 2>"$WORK/xvfb.$1.log" &
  PIDS+=($!)
  local display
  read -r -t 20 display <"$fifo" || { echo "FAIL: Xvfb did not start"; cat "$WORK/xvfb.$1.log"; exit 1; }
  export DISPLAY=":$display"
  HOME="$WORK/home.$1" openbox >"$WORK/openbox.$1.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q window && return; sleep 0.1; done
  fail "openbox did not take the screen"
}

window_of() {  # PID: the id of the app's visible top-level window (waits up to 10 s)
  for _ in $(seq 200); do
    local id
    id=$(xdotool search --onlyvisible --pid "$1" --name '^ShardScope$' 2>/dev/null | head -1)
    [[ -n "$id" ]] && { echo "$id"; return; }
    sleep 0.05
  done
}

key_to() {  # WINDOW KEY: real key events (XTEST) to the activated window
  xdotool windowactivate --sync "$1" key --clearmodifiers "$2" 2>/dev/null || xdotool key --window "$1" "$2"
}

width_of() { xwininfo -id "$1" | awk '/Width:/ {print $2}'; }
height_of() { xwininfo -id "$1" | awk '/Height:/ {print $2}'; }
# The window with the window manager's frame (title bar, borders): where it ends on the screen.
frame_right() { xwininfo -frame -id "$1" | awk '/Absolute upper-left X:/ {x=$4} /Width:/ {w=$2} END {print x+w}'; }
frame_bottom() { xwininfo -frame -id "$1" | awk '/Absolute upper-left Y:/ {y=$4} /Height:/ {h=$2} END {print y+h}'; }

run_gui() {  # HOME CLI: starts the GUI (settings under HOME) as a child of this shell: GUI_PID
  HOME="$1" XDG_CONFIG_HOME="$1/.config" XDG_RUNTIME_DIR="$WORK" SHARDSCOPE_CLI="$2" QT_QPA_PLATFORM=xcb \
    "$GUI" >>"$WORK/gui.log" 2>&1 &
  GUI_PID=$!
}

wait_exit() {  # PID SECONDS: the exit status, or 124 after SECONDS
  for _ in $(seq $(($2 * 20))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
    sleep 0.05
  done
  kill -9 "$1" 2>/dev/null
  return 124
}

check_screen() {  # SIZE
  local size=$1 sw=${1%x*} sh=${1#*x} home="$WORK/home.$1"
  mkdir -p "$home"
  start_x "$size"
  echo "== screen $size"
  # Startup: from exec to a visible, mapped window.
  local best=""
  for attempt in 1 2 3; do
    local t0 pid id t1 ms
    t0=$(date +%s%N)
    run_gui "$home" "$CLI"
    pid=$GUI_PID
    id=$(window_of "$pid")
    t1=$(date +%s%N)
    [[ -z "$id" ]] && { fail "no window within 10 s"; kill "$pid"; continue; }
    ms=$(((t1 - t0) / 1000000))
    echo "startup $attempt: ${ms} ms to a visible window"
    [[ -z "$best" || $ms -lt $best ]] && best=$ms
    local w h right bottom
    w=$(width_of "$id")
    h=$(height_of "$id")
    right=$(frame_right "$id")
    bottom=$(frame_bottom "$id")
    echo "window ${w}x${h}, its frame ends at ${right},${bottom}"
    ((right <= sw && bottom <= sh)) || fail "the window ${w}x${h} (frame to ${right},${bottom}) does not fit the ${size} screen"
    key_to "$id" ctrl+q
    wait_exit "$pid" 10 || fail "quit after startup: exit status $?"
  done
  [[ -n "$best" ]] && { echo "startup best of 3: ${best} ms"; ((best < 1000)) || fail "startup took ${best} ms (limit 1000 ms)"; }

  # Ctrl+Q while the Environment report is still loading (its CLI never answers).
  local pid id status
  run_gui "$home" "$WORK/slow_cli"
  pid=$GUI_PID
  id=$(window_of "$pid")
  [[ -n "$id" ]] || fail "no window with the slow CLI"
  sleep 0.3
  key_to "$id" ctrl+q
  wait_exit "$pid" 10
  status=$?
  ((status == 0)) || fail "Ctrl+Q while the report loads: exit status $status (139 = segfault)"
  sleep 0.2
  pgrep -f "sleep 60.125" >/dev/null && fail "the report's child process outlived the window"

  # Save As is Ctrl+Shift+S under openbox too: Qt's QKeySequence::SaveAs is empty outside GNOME and
  # KDE, and the key did nothing. The file dialog appears, Escape closes it.
  run_gui "$home" "$WORK/slow_cli"
  pid=$GUI_PID
  id=$(window_of "$pid")
  key_to "$id" ctrl+3
  sleep 0.3
  key_to "$id" ctrl+shift+s
  local dialog=""
  for _ in $(seq 60); do
    dialog=$(xdotool search --onlyvisible --pid "$pid" --name '^Save DeepSpeed config$' 2>/dev/null | head -1)
    [[ -n "$dialog" ]] && break
    sleep 0.05
  done
  [[ -n "$dialog" ]] || fail "Ctrl+Shift+S on the Config Editor opened no Save dialog"
  [[ -n "$dialog" ]] && key_to "$dialog" Escape
  sleep 0.3
  key_to "$id" ctrl+q
  wait_exit "$pid" 10 || fail "quit after Save As: exit status $?"

  # A failed launch with a 3,000-character line: the window keeps its width.
  run_gui "$home" "$WORK/failing_cli"
  pid=$GUI_PID
  id=$(window_of "$pid")
  local before after
  before=$(width_of "$id")
  key_to "$id" ctrl+4
  sleep 0.3
  key_to "$id" ctrl+r
  sleep 1.5
  grep -q "cannot open the token file" "$WORK/gui.log" || true
  after=$(width_of "$id")
  echo "width before the failed launch ${before}, after ${after}"
  ((after <= before && after <= sw)) || fail "the failed launch widened the window from ${before} to ${after} px"
  key_to "$id" ctrl+q
  wait_exit "$pid" 10 || fail "quit after the failed launch: exit status $?"
  # The size saved at exit comes back, and fits.
  run_gui "$home" "$CLI"
  pid=$GUI_PID
  id=$(window_of "$pid")
  after=$(width_of "$id")
  ((after <= sw)) || fail "restarted at ${after} px on a ${sw} px screen"
  key_to "$id" ctrl+q
  wait_exit "$pid" 10 || fail "quit after the restart: exit status $?"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  PIDS=()
}

check_screen 1366x768
check_screen 1600x900
if ((FAILED)); then
  echo "--- gui log"
  tail -40 "$WORK/gui.log"
  exit 1
fi
echo "OK"
