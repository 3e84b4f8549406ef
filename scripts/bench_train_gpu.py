#!/usr/bin/env python3
"""One-GPU training benchmark (issue 18): ShardScope's ZeRO stages 0-3 at world size 1
(`shardscope train`, DeepSpeed's bf16 mode: bf16 weights, fp32 master and AdamW state) beside
DeepSpeed 0.19.7 itself at the same stages (`deepspeed.initialize`, the same config, its defaults:
FusedAdam) and two eager PyTorch references of the same GPT-2 (scripts/bench/gpt2_eager.py):
fp32 weights with bf16 autocast, and everything bf16 (the ceiling without fp32 master).

Every engine runs --repeats times, the order of engines reversed on every other repeat; the
figure is the median, printed with the spread ((max - min) / median). Rows carry tokens/s,
TFLOP/s, MFU against a bf16 matrix product measured in the same call, peak allocated memory, the
setup seconds (never counted in tokens/s) and the last loss; then every ratio, and the bars:
  speed   each ShardScope stage >= --min-vs-bf16 x eager-bf16 and >= --min-vs-deepspeed x DeepSpeed
  memory  ShardScope stages 1-3 <= its stage 0, and its stage 0 <= DeepSpeed's stage 0
The footer says OK or FAILED (nccl-tests' habit); the exit code is 1 under a bar. --json FILE
writes every repeat with the provenance (commit, versions, hardware). --device cpu is a dry run of
the plumbing on a tiny shape (Gloo, DeepSpeed's CPU accelerator); its figures mean nothing.

Usage: scripts/bench_train_gpu.py --cli build-gpu/app/cli/shardscope [--layers 24 --hidden 2048
       --heads 16 --seq-len 1024 --micro-batch 8 --steps 16 --warmup 6 --repeats 3 --json FILE]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import bench_common as bc  # noqa: E402


def run_ours(args, stage, workdir, counter):
    config = bc.ds_config(stage, args.micro_batch, args.bucket)
    path = os.path.join(workdir, f"ds_stage{stage}.json")
    bc.write_json(path, config)
    db = os.path.join(workdir, "bench.db")
    counter[0] += 1
    name = f"z{stage}-{counter[0]}"
    cmd = [args.cli, "train", "--config", path, "--model", "gpt2", "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--heads", str(args.heads), "--seq-len", str(args.seq_len),
           "--vocab", str(args.vocab), "--steps", str(args.steps), "--device", args.device, "--session", db,
           "--name", name]
    start = time.perf_counter()
    run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {run.returncode}:\n{run.stderr[-4000:]}")
    return bc.session_measurement(args.cli, db, name, args.warmup, 1, time.perf_counter() - start)


def run_python_peer(args, engine, port):
    """One run of a Python peer in a process of its own (scripts/bench/run_peer.py)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench", "run_peer.py")
    cmd = [sys.executable, script, "--engine", engine, "--shape", ",".join(map(str, bc.shape_of(args))),
           "--micro-batch", str(args.micro_batch), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--bucket", str(args.bucket), "--device", args.device, "--port", str(port)]
    start = time.perf_counter()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {run.returncode}:\n{run.stderr[-4000:]}")
    fields = json.loads(run.stdout.strip().splitlines()[-1])
    loop_s = fields.pop("loop_s")
    m = bc.Measurement(**fields)
    m.setup_s = wall - loop_s  # as for ours: everything but the training loop, process start included
    return m


def engines_for(args, stages, workdir):
    counter, ports = [0], [29500]

    def peer(engine):
        ports[0] += 1
        return run_python_peer(args, engine, ports[0])

    engines = {}
    for stage in stages:
        if "shardscope" in args.engines:
            engines[f"shardscope-z{stage}"] = (stage, lambda s=stage: run_ours(args, s, workdir, counter))
        if "deepspeed" in args.engines:
            engines[f"deepspeed-z{stage}"] = (stage, lambda s=stage: peer(f"deepspeed-z{s}"))
    for mode in ("eager-autocast", "eager-bf16"):
        if "eager" in args.engines:
            engines[mode] = (-1, lambda m=mode: peer(m))
    return engines


def ratio_checks(args, results, stages):
    """(lines to print, failures) for every ratio and bar."""
    lines, failures = [], []
    bf16 = results.get("eager-bf16")
    autocast = results.get("eager-autocast")
    z0 = results.get("shardscope-z0")
    ds0 = results.get("deepspeed-z0")
    for stage in stages:
        ours = results.get(f"shardscope-z{stage}")
        if not ours:
            continue
        ds = results.get(f"deepspeed-z{stage}")
        parts = [f"stage {stage}:"]
        if bf16:
            r = bc.ratio(ours.median(), bf16.median())
            parts.append(f"vs eager-bf16 {r:.3f}")
            if r < args.min_vs_bf16:
                failures.append(f"stage {stage} speed {r:.3f} x eager-bf16 < {args.min_vs_bf16}")
        if autocast:
            parts.append(f"vs eager-autocast {bc.ratio(ours.median(), autocast.median()):.3f}")
        if ds:
            r = bc.ratio(ours.median(), ds.median())
            parts.append(f"vs deepspeed-z{stage} {r:.3f} (memory {bc.ratio(ours.peak_bytes(), ds.peak_bytes()):.3f})")
            if r < args.min_vs_deepspeed:
                failures.append(f"stage {stage} speed {r:.3f} x deepspeed-z{stage} < {args.min_vs_deepspeed}")
        if z0 and stage > 0:
            r = bc.ratio(ours.peak_bytes(), z0.peak_bytes())
            parts.append(f"memory vs shardscope-z0 {r:.3f}")
            if r > 1.0:
                failures.append(f"stage {stage} peak {ours.peak_bytes() / bc.GIB:.2f} GiB > stage 0's "
                                f"{z0.peak_bytes() / bc.GIB:.2f} GiB")
        if stage == 0 and ds0 and ours.peak_bytes() > ds0.peak_bytes():
            failures.append(f"stage 0 peak {ours.peak_bytes() / bc.GIB:.2f} GiB > deepspeed-z0's "
                            f"{ds0.peak_bytes() / bc.GIB:.2f} GiB")
        lines.append("  ".join(parts))
    return lines, failures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bc.add_gpt2_arguments(p, hidden=2048, micro_batch=8, steps=16, warmup=6)
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--engines", default="shardscope,deepspeed,eager",
                   help="comma-separated subset of shardscope, deepspeed, eager")
    p.add_argument("--min-vs-bf16", type=float, default=1.0, help="bar: ours / eager-bf16 tokens/s")
    p.add_argument("--min-vs-deepspeed", type=float, default=1.3, help="bar: ours / DeepSpeed's same stage")
    args = p.parse_args()
    args.engines = set(args.engines.split(","))
    if not args.engines <= {"shardscope", "deepspeed", "eager"}:
        p.error(f"--engines {','.join(sorted(args.engines))}: choose among shardscope, deepspeed, eager")
    stages = [int(s) for s in args.stages.split(",")]
    if any(s not in (0, 1, 2, 3) for s in stages):
        p.error(f"--stages {args.stages}: ZeRO stages are 0, 1, 2 and 3")
    if args.device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    peak = bc.matmul_peak_tflops(args.device)
    copy = bc.copy_bandwidth_gbps(args.device)
    params = bc.gpt2_params(args.layers, args.hidden, args.vocab, args.seq_len)
    fpt = bc.flops_per_token(params, args.layers, args.hidden, args.seq_len)
    with tempfile.TemporaryDirectory() as workdir:
        results = bc.run_repeats(engines_for(args, stages, workdir), args.repeats, lambda line: print(line, flush=True))
    env = bc.provenance(args.cli, 1, args.device)
    print(f"# GPT-2 shape: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocab {args.vocab}, "
          f"seq {args.seq_len}, micro-batch {args.micro_batch}, {params / 1e9:.3f}B params, bf16 (fp32 master), "
          f"AdamW, clipping 1.0; {args.steps} steps, median of steps {args.warmup + 1}-{args.steps}, "
          f"{args.repeats} repeats")
    print(f"# {env['gpu']} (driver {env['driver']}), torch {env['torch']}, CUDA {env['cuda']}, "
          f"DeepSpeed {env['deepspeed']}, commit {env['commit']}, {env['date']}")
    print(f"# measured ceilings: bf16 8192^3 matmul {peak:.0f} TFLOP/s, device copy {copy:.0f} GB/s (read + write)")
    ordered = list(results.values())
    bc.print_results_table(ordered, fpt, peak)
    lines, failures = ratio_checks(args, results, stages)
    for line in lines:
        print("# " + line)
    for note in bc.spread_notes(ordered):
        print("# spread: " + note)
    if args.json:
        bc.write_json(args.json, {"benchmark": "bench_train_gpu", "args": {k: v if not isinstance(v, set) else sorted(v)
                                                                          for k, v in vars(args).items()},
                                  "provenance": env, "matmul_peak_tflops": peak, "copy_gbps": copy, "params": params,
                                  "rows": [r.to_json(fpt, peak) for r in ordered],
                                  "ratios": lines, "failures": failures})
    return bc.footer(args.device, failures)


if __name__ == "__main__":
    sys.exit(main())
