#!/usr/bin/env python3
"""Stands in for `deepspeed train.py --deepspeed_config ds.json` in the GUI's watch tests.

Reads the config it is given (the copy `shardscope watch` made) and writes the loss and lr series
into its csv_monitor folder as DeepSpeed's csvMonitor does: output_path/job_name/
Train_Samples_<name>.csv, a `step,<name>` header, csv.writer rows whose x is the samples seen, one
step every --interval seconds (--steps 0: until killed). With --pid-file it starts a child that
would outlive it and writes "<own pid> <child pid>" there, so a test can check Stop ends the tree.
"""
import argparse
import csv
import json
import os
import subprocess
import time

parser = argparse.ArgumentParser()
parser.add_argument("--deepspeed_config", required=True)
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--interval", type=float, default=0.1)
parser.add_argument("--pid-file")
args = parser.parse_args()

with open(args.deepspeed_config) as f:
    config = json.load(f)
monitor = config["csv_monitor"]
log_dir = os.path.join(monitor["output_path"], monitor["job_name"])
os.makedirs(log_dir, exist_ok=True)
batch = config["train_batch_size"]
if args.pid_file:
    child = subprocess.Popen(["sleep", "600"])
    with open(args.pid_file + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    os.rename(args.pid_file + ".tmp", args.pid_file)

step = 0
while args.steps == 0 or step < args.steps:
    step += 1
    for name, value in (("train_loss", 6.0 / step), ("lr", 0.001 * step)):
        path = os.path.join(log_dir, f"Train_Samples_{name}.csv")
        new = not os.path.exists(path)
        with open(path, "a+", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["step", name])
            writer.writerow([step * batch, value])
    print(f"fake deepspeed: step {step} loss {6.0 / step}", flush=True)
    time.sleep(args.interval)
