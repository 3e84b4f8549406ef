#!/usr/bin/env python3
"""ZeRO benchmark on N GPUs of one host (issue 7): ShardScope's stages 0-3 (`shardscope launch
--num_gpus N -- train`, bf16 weights with fp32 master) beside their PyTorch peers run in the same
call (scripts/bench/zero_peers.py: DDP, ZeroRedundancyOptimizer+DDP, FSDP2 without and with
resharding after forward), for a GPT-2 shape (default: the 1.3B GPT-2 XL-like shape, 24 layers,
hidden 2048). Prints tokens/s per GPU, MFU against a measured bf16 matmul peak, and peak memory per
GPU, then each stage's ratio to its peer; --json for machine output; exit 1 when a stage is
slower than --min-ratio of its peer or uses more memory than it. With --offload, stages 2 and 3 run
with offload_optimizer to the CPU (fp32 master and AdamW state in pinned host memory, stepped by
ShardScope's CPU Adam; stage 3 also offload_param) beside FSDP2 with CPUOffloadPolicy (sharded
parameters, gradients and AdamW state on the host, torch's fused CPU AdamW).

Usage: scripts/bench_zero_gpu.py --cli build-gpu/app/cli/shardscope [--gpus 2 --layers 24
       --hidden 2048 --heads 16 --seq-len 1024 --micro-batch 4 --steps 20 --warmup 8]"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "bench"))
from bench_train_gpu import add_gpt2_arguments, flops_per_token, matmul_peak_tflops, session_result  # noqa: E402
from zero_peers import run_peer  # noqa: E402

PEERS = {0: "ddp", 1: "zero1", 2: "fsdp2", 3: "fsdp2-reshard"}
OFFLOAD_PEERS = {2: "fsdp2-offload", 3: "fsdp2-reshard-offload"}


def run_ours(args, stage, workdir, port):
    config = {
        "train_micro_batch_size_per_gpu": args.micro_batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": stage, "overlap_comm": True, "contiguous_gradients": True,
                              "reduce_bucket_size": args.bucket, "stage3_prefetch_bucket_size": args.bucket,
                              "stage3_max_reuse_distance": args.bucket},
    }
    if args.offload:
        config["zero_optimization"]["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:  # FSDP2's CPUOffloadPolicy keeps the sharded parameters on the host too
            config["zero_optimization"]["offload_param"] = {"device": "cpu", "pin_memory": True}
    path = os.path.join(workdir, f"ds_stage{stage}.json")
    with open(path, "w") as f:
        json.dump(config, f)
    db = os.path.join(workdir, "bench.db")
    name = f"zero{stage}" + ("-offload" if args.offload else "")
    cmd = [args.cli, "launch", "--num_gpus", str(args.gpus), "--master_port", str(port), "--session", db,
           "--name", name, "--", "--config", path, "--model", "gpt2", "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--heads", str(args.heads), "--seq-len", str(args.seq_len),
           "--vocab", str(args.vocab), "--steps", str(args.steps), "--device", "cuda"]
    print("ours:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    tokens_per_s, peak, loss = session_result(args.cli, db, name, args.warmup)
    return tokens_per_s / args.gpus, peak, loss


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gpt2_arguments(p, hidden=2048, micro_batch=4, steps=20, warmup=8)
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--bucket", type=int, default=50_000_000, help="reduce/prefetch bucket, elements")
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--min-ratio", type=float, default=1.0)
    p.add_argument("--offload", action="store_true", help="offload_optimizer to the CPU (stages 2, 3) vs FSDP2 CPU offload")
    args = p.parse_args()
    peers = OFFLOAD_PEERS if args.offload else PEERS
    stages = [int(s) for s in args.stages.split(",")]
    if any(stage not in peers for stage in stages):
        p.error(f"--stages {args.stages}: stages with a peer{' under --offload' if args.offload else ''} are "
                f"{','.join(map(str, peers))}")
    peak = matmul_peak_tflops()
    shape = (args.layers, args.hidden, args.heads, args.vocab, args.seq_len)
    rows, port = [], 29600
    with tempfile.TemporaryDirectory() as workdir:
        for stage in stages:
            port += 1
            ours = run_ours(args, stage, workdir, port)
            torch.cuda.empty_cache()
            port += 1
            peer = run_peer(peers[stage], args.gpus, shape, args.micro_batch, args.steps, args.warmup, port)
            rows.append((stage, ours, peer))
            print(f"stage {stage}: ours {ours[0]:.0f} tok/s/GPU {ours[1]/2**30:.2f} GiB; {peers[stage]} "
                  f"{peer[0]:.0f} tok/s/GPU {peer[1]/2**30:.2f} GiB", flush=True)
    params = 12 * args.layers * args.hidden**2 + 13 * args.layers * args.hidden + (args.vocab + args.seq_len) * args.hidden + 2 * args.hidden
    fpt = flops_per_token(params, args.layers, args.hidden, args.seq_len)
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "gpu": torch.cuda.get_device_name(), "gpus": args.gpus, "host": platform.node(), "params": params,
                "matmul_peak_tflops": peak}
    out = []
    ok = True
    print(f"# GPT-2 shape: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, seq {args.seq_len}, "
          f"micro-batch {args.micro_batch}/GPU, {params/1e9:.2f}B params, {args.gpus}x {versions['gpu']}, "
          f"torch {versions['torch']}, NCCL {versions['nccl']}; bf16 matmul peak {peak:.0f} TFLOP/s")
    print(f"{'stage':<6} {'engine':<22} {'tok/s/GPU':>10} {'MFU':>7} {'peak GiB/GPU':>13} {'loss':>7}   "
          f"{'speed ratio':>11} {'memory ratio':>12}")
    for stage, ours, peer in rows:
        speed, memory = ours[0] / peer[0], ours[1] / peer[1]
        stage_ok = speed >= args.min_ratio and memory <= 1.0
        ok = ok and stage_ok
        ours_name = f"shardscope-z{stage}" + ("-offload" if args.offload else "")
        for name, (tps, mem, loss) in ((ours_name, ours), (peers[stage], peer)):
            mfu = tps * fpt / 1e12 / peak
            print(f"{stage:<6} {name:<22} {tps:>10.0f} {mfu*100:>6.1f}% {mem/2**30:>13.2f} {loss or float('nan'):>7.3f}", end="")
            print(f"   {speed:>11.3f} {memory:>12.3f}{'' if stage_ok else '  FAILED'}" if name.startswith("shard") else "")
        out.append({"stage": stage, "offload": args.offload, "peer": peers[stage], "ours_tokens_per_s_per_gpu": ours[0], "ours_peak_bytes": ours[1],
                    "peer_tokens_per_s_per_gpu": peer[0], "peer_peak_bytes": peer[1], "speed_ratio": speed,
                    "memory_ratio": memory})
    if args.json:
        print(json.dumps({"rows": out, "versions": versions}, indent=2))
    print("# OK" if ok else "# FAILED: a stage is slower than its peer or uses more memory")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
