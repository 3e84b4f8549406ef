#!/usr/bin/env python3
"""One-GPU training benchmark (issue 6): ShardScope's engine (`shardscope train`, bf16 weights with
fp32 master, DeepSpeed's bf16 mode) against plain PyTorch eager training of the same GPT-2 shape
(AdamW fused, bf16 autocast), in the same run. Prints tokens/s, TFLOP/s, MFU against a bf16
matrix-product peak measured here, and peak memory, then the ratios, like nccl-tests: fixed
columns, an OK/FAILED footer, JSON with --json, exit 1 when ours is slower than --min-ratio.

Usage: scripts/bench_train_gpu.py --cli build-gpu/app/cli/shardscope [--layers 24 --hidden 1024
       --heads 16 --seq-len 1024 --micro-batch 8 --steps 30 --warmup 10]"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "bench"))
from gpt2_eager import train_tokens_per_second  # noqa: E402


def matmul_peak_tflops(n=8192, reps=10):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / 1000.0)
    times.sort()
    return 2 * n**3 / times[len(times) // 2] / 1e12


def flops_per_token(params, layers, hidden, seq_len):
    return 6 * params + 12 * layers * hidden * seq_len  # PaLM appendix B


def session_result(cli, db, name, warmup):
    """(tokens/s over all ranks, max peak bytes over the ranks, final loss) of session `name`,
    from `shardscope sessions show --json` with the first `warmup` steps left out."""
    show = subprocess.run([cli, "sessions", "show", name, "--db", db, "--json", "--warmup", str(warmup)],
                          check=True, capture_output=True, text=True)
    summary = json.loads(show.stdout)["summary"]
    peak = max((m.get("peak_bytes") or 0) for m in summary["memory"])
    return summary["tokens_per_s"], peak, summary.get("final_loss")


def add_gpt2_arguments(p, hidden, micro_batch, steps, warmup):
    """The GPT-2 shape and run length every GPU benchmark takes (defaults differ per benchmark)."""
    p.add_argument("--cli", required=True)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=hidden)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--micro-batch", type=int, default=micro_batch)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--json", action="store_true")


def run_ours(args, workdir):
    config = {
        "train_micro_batch_size_per_gpu": args.micro_batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
        "bf16": {"enabled": True, "check_grad_overflow": True},
    }
    config_path = os.path.join(workdir, "ds_config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    db = os.path.join(workdir, "bench.db")
    cmd = [args.cli, "train", "--config", config_path, "--model", "gpt2", "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--heads", str(args.heads), "--seq-len", str(args.seq_len),
           "--vocab", str(args.vocab), "--steps", str(args.steps), "--device", "cuda", "--session", db,
           "--name", "bench-gpt2"]
    print("ours:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return session_result(args.cli, db, "bench-gpt2", args.warmup)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gpt2_arguments(p, hidden=1024, micro_batch=8, steps=30, warmup=10)
    p.add_argument("--min-ratio", type=float, default=0.0, help="exit 1 when ours/peer tokens/s is below this")
    args = p.parse_args()
    peak = matmul_peak_tflops()
    with tempfile.TemporaryDirectory() as workdir:
        ours_tps, ours_mem, ours_loss = run_ours(args, workdir)
    torch.cuda.empty_cache()
    peer_tps, peer_mem, params, peer_loss = train_tokens_per_second(
        args.layers, args.hidden, args.heads, args.vocab, args.seq_len, args.micro_batch, args.steps, args.warmup)
    fpt = flops_per_token(params, args.layers, args.hidden, args.seq_len)
    rows = []
    for name, tps, mem, loss in (("shardscope", ours_tps, ours_mem, ours_loss), ("pytorch-eager", peer_tps, peer_mem, peer_loss)):
        tflops = tps * fpt / 1e12
        rows.append({"name": name, "tokens_per_s": tps, "tflops": tflops, "mfu": tflops / peak,
                     "peak_mem_gib": mem / 2**30, "final_loss": loss})
    ratio = ours_tps / peer_tps
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
                "host": platform.node(), "params": params, "matmul_peak_tflops": peak}
    if args.json:
        print(json.dumps({"rows": rows, "ratio": ratio, "versions": versions}, indent=2))
    print(f"# GPT-2 shape: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, seq {args.seq_len}, "
          f"micro-batch {args.micro_batch}, {params/1e6:.1f}M params; {versions['gpu']}, torch {versions['torch']}")
    print(f"# measured bf16 matmul peak: {peak:.1f} TFLOP/s")
    print(f"{'engine':<14} {'tokens/s':>10} {'TFLOP/s':>9} {'MFU':>7} {'peak GiB':>9} {'loss':>8}")
    for r in rows:
        print(f"{r['name']:<14} {r['tokens_per_s']:>10.0f} {r['tflops']:>9.1f} {r['mfu']*100:>6.1f}% "
              f"{r['peak_mem_gib']:>9.2f} {r['final_loss'] or float('nan'):>8.3f}")
    ok = ratio >= args.min_ratio
    print(f"# ratio shardscope/pytorch-eager tokens/s: {ratio:.3f}  memory: {rows[0]['peak_mem_gib']/rows[1]['peak_mem_gib']:.3f}")
    print("# OK" if ok else f"# FAILED: ratio {ratio:.3f} < {args.min_ratio}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
