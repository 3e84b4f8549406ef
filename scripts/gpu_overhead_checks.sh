#!/usr/bin/env bash
# Profiling overhead on 2 GPUs (issue 8): the same 40-step GPT-2 350M ZeRO run (stages 2 and 3)
# with profiling off, with only the CUPTI window (steps 15-17), with wall_clock_breakdown timers,
# and with the comms logger; prints the median step time outside the window (steps 5-14 and
# 20-40) and inside it, read from the session file.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT_DIR="${OUT:-/tmp/shardscope-out}"
mkdir -p "$OUT_DIR"
[[ -x build-gpu/app/cli/shardscope ]] || timeout 300 bash scripts/build_on_gpu.sh -L no-tests > "$OUT_DIR/build.log" 2>&1
CLI=build-gpu/app/cli/shardscope
DB="$OUT_DIR/overhead.db"
work=$(mktemp -d)
for stage in 2 3; do
  for mode in off window timers comms; do
    extra=""
    [[ $mode == timers ]] && extra='"wall_clock_breakdown": true,'
    [[ $mode == comms ]] && extra='"comms_logger": {"enabled": true},'
    cat > "$work/c.json" <<JSON
{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 100, $extra
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}, "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage, "overlap_comm": true, "reduce_bucket_size": 50000000}}
JSON
    args=()
    [[ $mode == window ]] && args=(--profile-steps 15:3)
    timeout 100 $CLI launch --num_gpus 2 --session "$DB" --name "z$stage-$mode" -- --config "$work/c.json" \
      --layers 24 --hidden 1024 --heads 16 --seq-len 1024 --vocab 50304 --steps 40 --device cuda "${args[@]}" \
      > "$OUT_DIR/z$stage-$mode.log" 2>&1 || echo "z$stage-$mode failed"
  done
done
python3 - "$DB" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT s.name, st.step, st.step_time_ms FROM steps st JOIN sessions s ON s.id = st.session_id WHERE st.rank = 0").fetchall()
by = {}
for name, step, ms in rows:
    by.setdefault(name, []).append((step, ms))
print(f"{'run':<12} {'outside ms':>11} {'window ms':>10} {'outside vs off':>15}")
base = {}
for name in sorted(by, key=lambda n: (n[:2], ["off", "window", "timers", "comms"].index(n.split("-")[1]))):
    steps = dict(by[name])
    outside = statistics.median([steps[s] for s in steps if 5 <= s <= 14 or 20 <= s <= 40])
    inside = statistics.median([steps[s] for s in steps if 15 <= s <= 17])
    stage = name[:2]
    base.setdefault(stage, outside)
    print(f"{name:<12} {outside:>11.2f} {inside:>10.2f} {outside / base[stage] - 1:>+14.1%}")
PY
grep -h "profiled steps" "$OUT_DIR"/z*-window.log | head -n 2
