#!/usr/bin/env python3
"""The collective flight record's cost (issue 28 item 1; docs/benchmarks.md, "The collective flight record").

Runs the same `shardscope launch` job with the flight record on (the default) and off
(SHARDSCOPE_FLIGHT_RECORD=0), in pairs of alternating order, every run its own processes and
session, and prints each run's median step time (rank 0, after --warmup steps), the median of the
per-pair ratios on/off and its range. The CPU default is Gloo ranks of a GPT-2 at ZeRO stage 3,
whose per-layer gathers give the most collectives per step; --device cuda --num-gpus 1 with the
1.3B shape is the GPU benchmark's.

    scripts/bench_flight_record.py --pairs 5                                   # CPU, 2 Gloo ranks
    scripts/bench_flight_record.py --device cuda --num-gpus 1 --layers 24 --hidden 2048 --heads 16 \\
        --seq-len 1024 --micro-batch 8 --stage 0 --steps 30 --pairs 3 --bf16

The first line says what it ran with (version, machine, date).
"""
import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=os.path.join(ROOT, "build/app/cli/shardscope"))
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--num-procs", type=int, default=2, help="CPU ranks")
    p.add_argument("--num-gpus", type=int, default=1)
    p.add_argument("--stage", type=int, default=3)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--pairs", type=int, default=5)
    return p.parse_args()


def write_config(args, folder):
    config = {"train_micro_batch_size_per_gpu": args.micro_batch, "gradient_clipping": 1.0, "steps_per_print": 1000,
              "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
              "zero_optimization": {"stage": args.stage, "overlap_comm": True}}
    if args.bf16:
        config["bf16"] = {"enabled": True}
    path = os.path.join(folder, "ds.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def launch(args, config, db, name, record_on):
    where = ["--num_gpus", str(args.num_gpus)] if args.device == "cuda" else ["--num_procs", str(args.num_procs)]
    argv = [args.cli, "launch"] + where + ["--session", db, "--name", name, "--", "--config", config, "--model", "gpt2",
                                           "--layers", str(args.layers), "--hidden", str(args.hidden), "--heads",
                                           str(args.heads), "--seq-len", str(args.seq_len), "--vocab", str(args.vocab),
                                           "--steps", str(args.steps), "--device", args.device]
    env = dict(os.environ, SHARDSCOPE_FLIGHT_RECORD="1" if record_on else "0")
    run = subprocess.run(argv, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit("%s failed (exit %d):\n%s" % (name, run.returncode, run.stderr[-3000:]))


def median_step_ms(db, name, warmup):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT st.step_time_ms FROM steps st JOIN sessions s ON s.id = st.session_id "
                       "WHERE s.name = ? AND st.rank = 0 AND st.step > ? AND st.step_time_ms IS NOT NULL",
                       (name, warmup)).fetchall()
    con.close()
    if not rows:
        sys.exit("%s recorded no step times after step %d" % (name, warmup))
    return statistics.median(r[0] for r in rows)


def main():
    args = parse_args()
    version = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout.strip()
    print("# %s  %s  %s, %d cores  %s, ZeRO %d, %d pairs of %d steps" % (
        time.strftime("%Y-%m-%d %H:%M:%S"), version, platform.platform(), os.cpu_count(), args.device, args.stage,
        args.pairs, args.steps), flush=True)
    ratios = []
    with tempfile.TemporaryDirectory(prefix="ss-flight-bench-") as folder:
        config, db = write_config(args, folder), os.path.join(folder, "runs.db")
        for pair in range(args.pairs):
            order = [True, False] if pair % 2 == 0 else [False, True]
            ms = {}
            for on in order:
                name = "pair%d-%s" % (pair, "on" if on else "off")
                launch(args, config, db, name, on)
                ms[on] = median_step_ms(db, name, args.warmup)
            ratios.append(ms[True] / ms[False])
            print("pair %d  record on %.2f ms  off %.2f ms  on/off %.4f" % (pair + 1, ms[True], ms[False], ratios[-1]),
                  flush=True)
    print("flight record on/off step time: median %.4f (%+.2f %%), range %.4f-%.4f over %d pairs" % (
        statistics.median(ratios), 100 * (statistics.median(ratios) - 1), min(ratios), max(ratios), len(ratios)))


if __name__ == "__main__":
    main()
