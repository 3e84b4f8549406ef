#!/usr/bin/env python3
"""The estimator's held sweep (issue 27): single-GPU `shardscope train` runs over ZeRO stages 0-3,
offload (none, optimizer to CPU, parameters to CPU, NVMe), bf16/fp16/fp32, activation checkpointing
on and off, GPT-2 and Llama shapes of three sizes, two sequence lengths and micro-batches near the
edge. Each run is its own process; it logs the estimator's prediction for itself at its start
(`[memory prediction] ...`) and its measured peaks at its end (`[memory measured] allocated_peak_bytes
reserved_peak_bytes device_peak_bytes host_peak_rss_bytes`): the allocator's peak, its reserved
peak, the device-level peak (cudaMemGetInfo: the CUDA context and everything outside the allocator
too) and the host's peak resident set.

Every row of --out (JSON lines) holds the run's inputs (the model flags and the ds_config), both
records, the swap files' bytes on NVMe runs, the wall time and the versions, so that
tests/estimator/gpu_sweep_test.cpp can recompute the estimator's prediction for each row and check
the bar on the measured peaks. Progress goes to stderr, one line a run.

Usage (GPU machine): scripts/estimator_sweep_gpu.py --cli build-gpu/app/cli/shardscope --out sweep.jsonl
       [--only NAME_SUBSTRING] [--nvme-dir DIR] [--steps 3] [--list]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# The shapes: (name, model, layers, hidden, heads, kv_heads, ffn, vocab). Llama's ffn and kv heads
# are given explicitly so the sweep does not depend on train's defaults.
MODELS = {
    "gpt2-125m": ("gpt2", 12, 768, 12, 12, 3072, 50304),
    "gpt2-350m": ("gpt2", 24, 1024, 16, 16, 4096, 50304),
    "gpt2-1.3b": ("gpt2", 24, 2048, 16, 16, 8192, 50304),
    "llama-160m": ("llama", 12, 768, 12, 4, 2048, 32000),
    "llama-450m": ("llama", 24, 1024, 16, 8, 2816, 32000),
    "llama-1.2b": ("llama", 16, 2048, 32, 8, 8192, 32000),
    # docs/benchmarks.md's NVMe shape (scripts/bench_nvme_gpu.py): its host RSS and swap files are
    # points of issue 27's host-memory check.
    "gpt2-4.7b": ("gpt2", 40, 3072, 24, 24, 12288, 50304),
}


def plan(stage, opt="none", par="none"):
    return {"stage": stage, "offload_optimizer": opt, "offload_param": par}


def cases():
    """The held sweep: 59 configurations, every axis of issue 27 covered, each model at several."""
    rows = []

    def add(model, seq, mb, precision, p, ckpt):
        name = f"{model}-s{seq}-b{mb}-{precision}-z{p['stage']}"
        if p["offload_optimizer"] != "none":
            name += f"-opt{p['offload_optimizer']}"
        if p["offload_param"] != "none":
            name += f"-par{p['offload_param']}"
        name += "-ckpt" if ckpt else ""
        rows.append({"name": name, "model": model, "seq_len": seq, "micro_batch": mb, "precision": precision,
                     "plan": p, "checkpointing": ckpt})

    # Every stage for each model at bf16, no offload, both sequence lengths; checkpointing alternates.
    for i, model in enumerate(MODELS):
        big = model.endswith(("1.3b", "1.2b"))
        for stage in range(4):
            ckpt = (stage + i) % 2 == 1
            seq = 1024 if stage % 2 == 0 else 2048
            mb = (4 if big else 8) * (1 if seq == 2048 else 2) * (4 if ckpt else 1)
            add(model, seq, mb, "bf16", plan(stage), ckpt)
    # Precision: fp16 (loss scaling) and fp32 at stages 0-3 on the mid-size models.
    for precision, model in (("fp16", "gpt2-350m"), ("fp16", "llama-450m"), ("fp32", "gpt2-350m"), ("fp32", "llama-450m")):
        for stage in (0, 2):
            add(model, 1024, 8, precision, plan(stage), stage == 2)
    for precision in ("fp16", "fp32"):
        add("gpt2-125m", 2048, 8, precision, plan(3), False)
        add("llama-160m", 1024, 16, precision, plan(1), True)
    # Offload: the optimizer to CPU at stages 1-3, parameters too at stage 3, NVMe at stage 3.
    for model in ("gpt2-1.3b", "llama-1.2b", "gpt2-350m"):
        add(model, 1024, 8, "bf16", plan(2, "cpu"), False)
        add(model, 1024, 16, "bf16", plan(3, "cpu"), True)
        add(model, 2048, 4, "bf16", plan(3, "cpu", "cpu"), False)
    add("gpt2-350m", 1024, 8, "bf16", plan(1, "cpu"), False)
    add("llama-450m", 1024, 8, "fp16", plan(3, "cpu", "cpu"), True)
    add("gpt2-350m", 1024, 8, "bf16", plan(3, "nvme"), False)
    add("llama-450m", 1024, 8, "bf16", plan(3, "nvme", "nvme"), False)
    add("gpt2-1.3b", 1024, 4, "bf16", plan(3, "nvme", "cpu"), True)
    # The NVMe benchmark's 4.69B run (stage 3, optimizer on NVMe in 1e8-element sub-groups), 2 steps:
    # each optimizer step swaps 56 GB.
    add("gpt2-4.7b", 2048, 1, "bf16", plan(3, "nvme"), True)
    rows[-1].update({"zero_extra": {"sub_group_size": 100000000, "overlap_comm": True}, "steps": 2, "timeout": 500})
    # Near the edge of the 141 GB card: the largest micro-batches.
    add("gpt2-1.3b", 1024, 48, "bf16", plan(0), False)
    add("llama-1.2b", 2048, 24, "bf16", plan(3), False)
    add("gpt2-1.3b", 2048, 128, "bf16", plan(2), True)
    add("llama-1.2b", 1024, 256, "bf16", plan(1), True)
    return rows


def ds_config(case, nvme_dir):
    p = case["plan"]
    zero = {"stage": p["stage"], **case.get("zero_extra", {})}
    for key in ("offload_optimizer", "offload_param"):
        device = p[key]
        if device != "none":
            block = {"device": device, "pin_memory": True}
            if device == "nvme":
                block["nvme_path"] = nvme_dir
            zero[key] = block
    config = {
        "train_micro_batch_size_per_gpu": case["micro_batch"],
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}},
        "zero_optimization": zero,
        "steps_per_print": 1000,
    }
    if case["precision"] == "bf16":
        config["bf16"] = {"enabled": True}
    elif case["precision"] == "fp16":
        config["fp16"] = {"enabled": True, "initial_scale_power": 12}
    if "nvme" in (p["offload_optimizer"], p["offload_param"]):
        config["aio"] = {"block_size": 1048576, "queue_depth": 16, "intra_op_parallelism": 2}
    if case["checkpointing"]:
        config["activation_checkpointing"] = {"partition_activations": False}
    return config


def model_flags(case):
    kind, layers, hidden, heads, kv, ffn, vocab = MODELS[case["model"]]
    flags = ["--model", kind, "--layers", str(layers), "--hidden", str(hidden), "--heads", str(heads),
             "--ffn", str(ffn), "--vocab", str(vocab), "--seq-len", str(case["seq_len"])]
    if kind == "llama":
        flags += ["--kv-heads", str(kv)]
    return flags


def parse_record(text, tag):
    for line in text.splitlines():
        at = line.find(tag)
        if at < 0:
            continue
        fields = {}
        for token in line[at + len(tag):].split():
            key, _, value = token.partition("=")
            if value.lstrip("-").isdigit():
                fields[key] = int(value)
        return fields
    return None


def folder_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run_case(args, case, work):
    nvme_dir = os.path.join(args.nvme_dir, case["name"])
    config = ds_config(case, nvme_dir)
    config_path = os.path.join(work, case["name"] + ".json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=1)
    uses_nvme = "nvme" in (case["plan"]["offload_optimizer"], case["plan"]["offload_param"])
    if uses_nvme:
        os.makedirs(nvme_dir, exist_ok=True)
    cmd = [args.cli, "train", "--config", config_path, *model_flags(case), "--steps", str(case.get("steps", args.steps)),
           "--device", "cuda"]
    if case["checkpointing"]:
        cmd.append("--activation-checkpointing")
    start = time.perf_counter()
    env = dict(os.environ)
    if args.trace_dir:
        env["SHARDSCOPE_TRACE_ZERO_MEMORY"] = "1"
    # The engine removes its swap files when it ends: their size is sampled while it runs.
    swap_peak = [0]
    running = threading.Event()
    running.set()

    def sample_swap():
        while running.is_set():
            swap_peak[0] = max(swap_peak[0], folder_bytes(nvme_dir))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample_swap, daemon=True) if uses_nvme else None
    if sampler:
        sampler.start()
    try:
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=case.get("timeout", args.timeout),
                             env=env)
        output, rc = run.stdout, run.returncode
    except subprocess.TimeoutExpired as e:
        output, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
    running.clear()
    if sampler:
        sampler.join()
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
        with open(os.path.join(args.trace_dir, case["name"] + ".log"), "w") as f:
            f.write(output)
    swap_bytes = max(swap_peak[0], folder_bytes(nvme_dir)) if uses_nvme else 0
    if uses_nvme:
        shutil.rmtree(nvme_dir, ignore_errors=True)
    row = dict(case)
    row.update({"flags": model_flags(case), "ds_config": config, "steps": args.steps, "rc": rc,
                "seconds": round(time.perf_counter() - start, 2),
                "predicted": parse_record(output, "[memory prediction]"),
                "measured": parse_record(output, "[memory measured]"), "nvme_swap_bytes": swap_bytes})
    if rc != 0 or row["measured"] is None:
        row["error_tail"] = output[-3000:]
    return row


def versions(cli):
    try:
        report = json.loads(subprocess.run([cli, "report", "--json"], stdout=subprocess.PIPE, text=True, timeout=60).stdout)
    except (subprocess.SubprocessError, json.JSONDecodeError, OSError):
        return {}
    return {k: report.get(k) for k in ("versions", "gpus", "host") if k in report}


def held_seconds():
    """Each case's longest run time in the held sweeps (tests/estimator/data), for --deadline."""
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "estimator", "data")
    seconds = {}
    for name in ("gpu_sweep_h200.jsonl", "gpu_sweep_h100.jsonl"):
        try:
            with open(os.path.join(data, name)) as f:
                for line in f:
                    row = json.loads(line)
                    if "name" in row and row.get("seconds"):
                        seconds[row["name"]] = max(seconds.get(row["name"], 0), row["seconds"])
        except OSError:
            pass
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default="build-gpu/app/cli/shardscope")
    p.add_argument("--out", default="estimator-sweep.jsonl")
    p.add_argument("--steps", type=int, default=3, help="optimizer steps per run (the peak comes in the first two)")
    p.add_argument("--only", default="", help="run the cases whose name contains this text")
    p.add_argument("--nvme-dir", default=os.path.join(tempfile.gettempdir(), "shardscope-sweep-nvme"))
    p.add_argument("--timeout", type=int, default=240)
    p.add_argument("--names", default="", help="comma-separated case names to run, or @FILE with a name a line "
                   "(scripts/estimator_sweep_h100_cases.txt: the cases that fit an 80 GB H100)")
    p.add_argument("--cases", default="", help="FIRST:LAST, 1-based and inclusive (the device's 10-minute calls split the sweep)")
    p.add_argument("--deadline", type=float, default=0, help="start no case that would end after this many seconds, "
                   "by its time in the held sweeps (0: no limit)")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("--trace-dir", default="", help="keep each run's output here, with the stage-3 memory trace "
                   "(SHARDSCOPE_TRACE_ZERO_MEMORY=1: the allocator's bytes at every gather, release and reduction)")
    args = p.parse_args()
    todo = [c for c in cases() if args.only in c["name"]]
    if args.names:
        if args.names.startswith("@"):
            with open(args.names[1:]) as f:
                wanted = {line.strip() for line in f if line.strip()}
        else:
            wanted = set(args.names.split(","))
        unknown = wanted - {c["name"] for c in todo}
        if unknown:
            sys.exit("--names: no such case(s): " + ", ".join(sorted(unknown)) + " (see --list)")
        todo = [c for c in todo if c["name"] in wanted]
    if args.cases:
        first, _, last = args.cases.partition(":")
        todo = todo[int(first) - 1:int(last or len(todo))]
    if args.list:
        for c in todo:
            print(c["name"])
        print(f"{len(todo)} cases")
        return 0
    work = tempfile.mkdtemp(prefix="shardscope-sweep-")
    failed, left = 0, []
    with open(args.out, "w") as out:
        out.write(json.dumps({"sweep": "estimator", "date": time.strftime("%Y-%m-%d"), "cases": len(todo),
                              "commit": os.environ.get("SHARDSCOPE_GIT_HASH", ""), **versions(args.cli)}) + "\n")
        began = time.perf_counter()
        expected = held_seconds()
        for i, case in enumerate(todo, 1):
            # A case the device's call limit would kill is left for the next call; a shorter one may still fit.
            if args.deadline and time.perf_counter() - began + expected.get(case["name"], 0) > args.deadline:
                print(f"[sweep] deadline: {case['name']} not run (about {expected.get(case['name'], 0):.0f} s)",
                      file=sys.stderr)
                left.append(case["name"])
                continue
            row = run_case(args, case, work)
            out.write(json.dumps(row) + "\n")
            out.flush()
            m, pr = row["measured"] or {}, row["predicted"] or {}
            peak, total = m.get("allocated_peak_bytes", 0), pr.get("total_bytes", 0)
            err = f"{100.0 * (total - peak) / peak:+6.1f} %" if peak and total else "   n/a"
            failed += row["rc"] != 0
            print(f"[sweep {i:2d}/{len(todo)}] {case['name']:<42} rc={row['rc']} {row['seconds']:6.1f} s  "
                  f"peak {peak / 2**30:7.2f} GiB  predicted {total / 2**30:7.2f} GiB  {err}", file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(todo) - failed - len(left)} passed, {failed} failed", file=sys.stderr)
    if left:
        print(f"{len(left)} left for another call: --names {','.join(left)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
