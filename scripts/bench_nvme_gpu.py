#!/usr/bin/env python3
"""ZeRO-Infinity on one GPU (issue 16, item 7): the same GPT-2 shape trained with the optimizer on
NVMe and with the optimizer in CPU memory, tokens/s, peak GPU memory, peak host memory (RSS) and
the estimator's prediction beside each; the bars: NVMe tokens/s at least --min-ratio (0.5) of the
CPU-offload run's, and the I/O benchmark at 0.9x fio or better. Prints like nccl-tests (fixed
columns, an OK/FAILED footer, --json), exit 1 under a bar.

The shape: the largest candidate whose swapped state (12 B/param: the fp32 master and AdamW's two
moments) fits in --disk-share of the free space at --nvme-dir and whose NVMe run fits --budget-s at
the disk speed `shardscope bench io` measured (--bench-json). Gradient accumulation is chosen so a
step's compute is about as long as its I/O (24 B/param read and written per step at the measured
GB/s), the regime where NVMe offload is worth it. The smallest candidate the estimator says does
not fit one GPU without offload is printed beside it, with the arithmetic of why it was not run.

Usage: scripts/bench_nvme_gpu.py --cli build-gpu/app/cli/shardscope --nvme-dir /nvme --bench-json io.json"""
import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import bench_common as bc  # noqa: E402

# GPT-2 shapes (layers, hidden, heads), smallest first; vocab 50304, seq 1024 (--seq-len sets it).
CANDIDATES = [(24, 1024, 16), (24, 1536, 16), (24, 2048, 16), (36, 2048, 16), (32, 2560, 20), (40, 3072, 24),
              (36, 4096, 32), (40, 5120, 40), (48, 6144, 48)]
VOCAB, SEQ = 50304, 1024


def gpt2_params(layers, hidden):
    return bc.gpt2_params(layers, hidden, VOCAB, SEQ)


def estimate(cli, shape, config_path):
    # --flash-attention: the engine's attention is SDPA, which keeps no s x s score matrices.
    layers, hidden, heads = shape
    out = subprocess.run([cli, "estimate", "--layout", "gpt2", "--layers", str(layers), "--hidden", str(hidden),
                          "--heads", str(heads), "--vocab", str(VOCAB), "--seq-len", str(SEQ), "--gpus-per-node", "1",
                          "--gpu", "H200", "--config", config_path, "--flash-attention", "--json"], capture_output=True, text=True)
    return json.loads(out.stdout)


def plan_of(report, stage, optimizer, param):
    for p in report["plans"]:
        if (p.get("stage"), p.get("offload_optimizer"), p.get("offload_param")) == (stage, optimizer, param):
            return {"gpu_gib": p["gpu_total_bytes"] / 2**30, "cpu_gib": p["cpu_total_bytes_per_node"] / 2**30,
                    "nvme_gib": p.get("nvme_bytes_per_node", 0) / 2**30, "fits": p["fits"]}
    return None


def write_config(path, micro_batch, gas, offload):
    zero = {"stage": 3, "overlap_comm": True, "sub_group_size": 100000000, "stage3_prefetch_bucket_size": 50000000,
            "offload_optimizer": offload}
    config = {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": gas,
              "gradient_clipping": 1.0, "steps_per_print": 1, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
              "zero_optimization": zero}
    with open(path, "w") as f:
        json.dump(config, f)


def run_training(args, workdir, name, config_path, shape):
    layers, hidden, heads = shape
    db = os.path.join(workdir, "nvme_bench.db")
    cmd = [args.cli, "train", "--config", config_path, "--model", "gpt2", "--layers", str(layers), "--hidden",
           str(hidden), "--heads", str(heads), "--vocab", str(VOCAB), "--seq-len", str(SEQ), "--steps",
           str(args.steps), "--device", args.device, "--session", db, "--name", name]
    print("run:", " ".join(cmd), flush=True)
    # A wrapper process whose only child is the run: its RUSAGE_CHILDREN peak RSS is the run's.
    wrapper = ("import resource, subprocess, sys\n"
               "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(code)\n")
    started = time.time()
    done = subprocess.run([sys.executable, "-c", wrapper] + cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    rss_gib = int(done.stdout.strip().splitlines()[-1]) * 1024 / 2**30
    wall_s = time.time() - started
    m = bc.session_measurement(args.cli, db, name, args.warmup, 1, wall_s)
    print(f"{name}: {m.tokens_per_s:.0f} tokens/s, {wall_s:.0f} s", flush=True)
    return {"name": name, "tokens_per_s": m.tokens_per_s, "peak_gpu_gib": m.peak_bytes / 2**30,
            "peak_host_rss_gib": rss_gib, "final_loss": m.loss, "setup_s": m.setup_s, "wall_s": wall_s}


def choose(args, bandwidth_gbps, free_bytes):
    """The largest candidate within the disk and time budgets, and the GAS that balances I/O and compute."""
    budget_bytes = free_bytes * args.disk_share
    chosen = None
    for shape in CANDIDATES:
        p = gpt2_params(shape[0], shape[1])
        io_step_s = 24 * p / (bandwidth_gbps * 1e9)
        tokens_per_micro = args.micro_batch * SEQ
        compute_micro_s = 6 * p * tokens_per_micro / (args.achieved_tflops * 1e12)
        gas = max(1, math.ceil(io_step_s / compute_micro_s))
        nvme_run_s = 12 * p / (bandwidth_gbps * 1e9) + args.steps * (io_step_s + gas * compute_micro_s)
        if 12 * p <= budget_bytes and nvme_run_s <= args.budget_s:
            chosen = {"shape": shape, "params": p, "gas": gas, "io_step_s": io_step_s,
                      "compute_step_s": gas * compute_micro_s, "predicted_nvme_run_s": nvme_run_s}
    return chosen


def main():
    global SEQ
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True)
    p.add_argument("--nvme-dir", required=True)
    p.add_argument("--bench-json", required=True, help="`shardscope bench io --json` of --nvme-dir")
    p.add_argument("--budget-s", type=float, default=110, help="seconds the NVMe run may take (the CPU run is shorter)")
    p.add_argument("--disk-share", type=float, default=0.8, help="share of the free space the swap may use")
    p.add_argument("--achieved-tflops", type=float, default=250.0, help="bf16 TFLOP/s a step reaches, for sizing")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=SEQ, help="tokens per sequence (the model's n_positions too)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--min-ratio", type=float, default=0.5)
    p.add_argument("--min-io-ratio", type=float, default=0.9)
    p.add_argument("--json", action="store_true")
    p.add_argument("--device", default="cuda", help="cpu for a dry run of the script on a machine without a GPU")
    p.add_argument("--shape", help="LAYERS,HIDDEN,HEADS[,GAS]: run this shape instead of the sizing")
    args = p.parse_args()
    SEQ = args.seq_len
    with open(args.bench_json) as f:
        bench = json.load(f)
    best = bench["best"]
    bandwidth = min(best["read_gbps"], best["write_gbps"])
    free = shutil.disk_usage(args.nvme_dir).free
    chosen = choose(args, bandwidth, free)
    if args.shape:
        fields = [int(x) for x in args.shape.split(",")]
        shape = tuple(fields[:3])
        chosen = {"shape": shape, "params": gpt2_params(shape[0], shape[1]), "gas": fields[3] if len(fields) > 3 else 1,
                  "io_step_s": None, "compute_step_s": None, "predicted_nvme_run_s": None}
    if chosen is None:
        raise SystemExit(f"no candidate shape fits {free / 2**30:.1f} GiB free at {bandwidth:.2f} GB/s in {args.budget_s} s")
    shape = chosen["shape"]
    how = "given by --shape" if args.shape else f"budget {args.budget_s:.0f} s"
    print(f"# chosen: GPT-2 {shape[0]} layers, hidden {shape[1]}, {chosen['params'] / 1e9:.2f}B params, GAS "
          f"{chosen['gas']} ({free / 2**30:.0f} GiB free, {bandwidth:.2f} GB/s, {how})", flush=True)
    with tempfile.TemporaryDirectory(dir=args.nvme_dir) as workdir:
        nvme_cfg, cpu_cfg, none_cfg = (os.path.join(workdir, n) for n in ("nvme.json", "cpu.json", "none.json"))
        write_config(nvme_cfg, args.micro_batch, chosen["gas"],
                     {"device": "nvme", "nvme_path": os.path.join(workdir, "swap"), "pin_memory": True,
                      "pipeline_read": True, "pipeline_write": True, "buffer_count": 9})
        write_config(cpu_cfg, args.micro_batch, chosen["gas"], {"device": "cpu", "pin_memory": True})
        write_config(none_cfg, args.micro_batch, chosen["gas"], {"device": "none"})
        # The smallest shape that does not fit one GPU without offload, by the estimator.
        too_big = next((s for s in CANDIDATES if not estimate(args.cli, s, none_cfg)["verdict"]["requested_fits"]), None)
        predictions = {"nvme": plan_of(estimate(args.cli, shape, nvme_cfg), 3, "nvme", "none"),
                       "cpu": plan_of(estimate(args.cli, shape, cpu_cfg), 3, "cpu", "none"),
                       "none": plan_of(estimate(args.cli, shape, none_cfg), 3, "none", "none")}
        bench_io = bench["aio"]
        rows = [run_training(args, workdir, "nvme-offload", nvme_cfg, shape),
                run_training(args, workdir, "cpu-offload", cpu_cfg, shape)]
    ratio = rows[0]["tokens_per_s"] / rows[1]["tokens_per_s"]
    io_ratio = min(best.get("read_ratio", 0), best.get("write_ratio", 0))
    result = {"shape": {"layers": shape[0], "hidden": shape[1], "heads": shape[2], "params": chosen["params"],
                        "gas": chosen["gas"], "micro_batch": args.micro_batch, "seq_len": SEQ},
              "sizing": {"bandwidth_gbps": bandwidth, "free_gib": free / 2**30, **chosen},
              "rows": rows, "predictions": predictions, "ratio": ratio, "io_ratio": io_ratio, "aio": bench_io,
              "too_big_shape": too_big, "host": platform.node(),
              "provenance": bc.provenance(args.cli, 1, args.device)}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    L, H, N = shape
    print(f"# GPT-2 {L} layers, hidden {H}, {N} heads, {chosen['params'] / 1e9:.2f}B params, micro-batch "
          f"{args.micro_batch} x seq {SEQ} x GAS {chosen['gas']}; disk {bandwidth:.2f} GB/s (min of read, write), "
          f"{free / 2**30:.1f} GiB free")
    if too_big:
        tp = gpt2_params(too_big[0], too_big[1])
        state_gib, step_s = 12 * tp / 2**30, 24 * tp / (bandwidth * 1e9)
        reasons = []
        if 12 * tp > args.disk_share * free:
            reasons.append(f"its NVMe state ({state_gib:.0f} GiB) is over {args.disk_share:.0%} of the "
                           f"{free / 2**30:.0f} GiB free")
        if 12 * tp / (bandwidth * 1e9) + args.steps * step_s > args.budget_s:
            reasons.append(f"writing it once and {args.steps} steps of {24 * tp / 1e9:.0f} GB of swapping "
                           f"({step_s:.0f} s each at {bandwidth:.2f} GB/s) exceed the {args.budget_s:.0f} s budget")
        if args.shape:
            verdict = ("that is the shape run here" if tuple(too_big) == tuple(shape)
                       else "the shape run here was given by --shape")
        elif reasons:
            verdict = "; ".join(reasons) + ", so the largest shape within both ran instead"
        else:
            verdict = "it is within the disk and time budgets"
        print(f"# the estimator's smallest shape that does not fit one H200 without offload: {too_big[0]} layers, "
              f"hidden {too_big[1]} ({tp / 1e9:.2f}B params); {verdict}")
    print(f"{'run':<14} {'tokens/s':>10} {'GPU GiB':>8} {'host GiB':>9} {'pred GPU':>9} {'pred CPU':>9} {'pred NVMe':>10} {'wall s':>7}")
    for r, key in zip(rows, ("nvme", "cpu")):
        pr = predictions[key] or {"gpu_gib": float("nan"), "cpu_gib": float("nan"), "nvme_gib": float("nan")}
        print(f"{r['name']:<14} {r['tokens_per_s']:>10.0f} {r['peak_gpu_gib']:>8.2f} {r['peak_host_rss_gib']:>9.2f} "
              f"{pr['gpu_gib']:>9.2f} {pr['cpu_gib']:>9.2f} {pr['nvme_gib']:>10.2f} {r['wall_s']:>7.0f}")
    none = predictions["none"]
    if none:
        print(f"# without offload the estimator predicts {none['gpu_gib']:.2f} GiB per GPU (fits: {none['fits']})")
    ok = ratio >= args.min_ratio and io_ratio >= args.min_io_ratio
    print(f"# NVMe / CPU-offload tokens/s: {ratio:.3f} (bar {args.min_ratio}); bench io vs fio: {io_ratio:.3f} "
          f"(bar {args.min_io_ratio})")
    print("# OK" if ok else "# FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
