#!/usr/bin/env python3
"""ZeRO benchmark on N GPUs of one host (issues 7 and 19): ShardScope's stages 0-3 (`shardscope launch
--num_gpus N -- train`, bf16 weights with fp32 master) beside their PyTorch peers (DDP for stage 0,
ZeroRedundancyOptimizer+DDP for 1, FSDP2 without and with resharding after forward for 2 and 3;
scripts/bench/zero_peers.py) and DeepSpeed 0.19.7 itself at the same stage (deepspeed_peer.py),
for a GPT-2 shape (default: 24 layers, hidden 2048, 1.31B parameters), at each --micro-batches.

Every engine runs --repeats times, the order reversed on every other repeat; the figure is the
median with its spread. Rows: tokens/s per GPU, MFU against a bf16 matrix product measured in the
same call, peak allocated memory per GPU, setup seconds, last loss. Then every ratio and the bars:
  speed    each stage >= --min-vs-peer x its PyTorch peer and >= --min-vs-deepspeed x DeepSpeed's
  memory   each stage's peak per GPU no higher than its peer's or DeepSpeed's
  scaling  (--scaling) per-GPU tokens/s on N GPUs as a fraction of ShardScope's own 1-GPU run of
           the same stage and micro-batch, >= --min-scaling (0.95 for stages 0-2, 0.90 for 3)
  comms    (--comms) one short run per stage with the comms_logger on: each logged collective of
           >= 64 MiB has a bus bandwidth within --comms-tolerance of an NCCL all-reduce /
           reduce-scatter / all-gather sweep of the same size run in the same call
The footer says OK or FAILED; exit 1 under a bar. --json FILE writes every repeat, the sweep and
the provenance (commit, versions, hardware). --device cpu is a dry run of the plumbing (Gloo, a
tiny shape, DeepSpeed's CPU accelerator): its figures mean nothing and no bar applies. With
--offload, stages 2 and 3 run offload_optimizer to the CPU (and offload_param at 3) beside FSDP2's
CPUOffloadPolicy.

Usage: scripts/bench_zero_gpu.py --cli build-gpu/app/cli/shardscope [--gpus 2] [--micro-batches 8,4]
       [--stages 0,1,2,3] [--engines shardscope,pytorch,deepspeed] [--scaling] [--comms] [--json FILE]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench"))
import bench_common as bc  # noqa: E402

PEERS = {0: "ddp", 1: "zero1", 2: "fsdp2", 3: "fsdp2-reshard"}
OFFLOAD_PEERS = {2: "fsdp2-offload", 3: "fsdp2-reshard-offload"}
MIB = bc.MIB


class Ports:
    """A fresh rendezvous port for every run (a port in TIME_WAIT must not stop the next one)."""
    def __init__(self, first=29600):
        self.port = first

    def next(self):
        self.port += 1
        return self.port


def launch_ours(args, stage, micro_batch, gpus, workdir, port, name, extra_config=None, steps=None):
    """One `shardscope launch` run; returns (Measurement per GPU, session db, name)."""
    config = bc.ds_config(stage, micro_batch, args.bucket, args.offload)
    config.update(extra_config or {})
    path = os.path.join(workdir, f"{name}.json")
    bc.write_json(path, config)
    db = os.path.join(workdir, "bench.db")
    ranks = ["--num_gpus", str(gpus)] if args.device == "cuda" else ["--num_procs", str(gpus)]
    cmd = [args.cli, "launch", *ranks, "--master_port", str(port), "--session", db, "--name", name, "--",
           "--config", path, "--model", "gpt2", "--layers", str(args.layers), "--hidden", str(args.hidden),
           "--heads", str(args.heads), "--seq-len", str(args.seq_len), "--vocab", str(args.vocab),
           "--steps", str(steps or args.steps), "--device", args.device]
    start = time.perf_counter()
    run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {run.returncode}:\n{run.stderr[-4000:]}")
    return bc.session_measurement(args.cli, db, name, args.warmup, gpus, time.perf_counter() - start), db


def engines_for(args, micro_batch, workdir, ports):
    from zero_peers import deepspeed_mode, run_peer
    shape = bc.shape_of(args)
    peers = OFFLOAD_PEERS if args.offload else PEERS
    counter = [0]

    def ours(stage, gpus):
        counter[0] += 1
        name = f"z{stage}-mb{micro_batch}-g{gpus}-{counter[0]}"
        return launch_ours(args, stage, micro_batch, gpus, workdir, ports.next(), name)[0]

    def peer(mode):
        return run_peer(mode, args.gpus, shape, micro_batch, args.steps, args.warmup, ports.next(), args.bucket,
                        args.device)

    engines = {}
    for stage in args.stage_list:
        suffix = "-offload" if args.offload else ""
        if "shardscope" in args.engines:
            engines[f"shardscope-z{stage}{suffix}"] = (stage, lambda s=stage: ours(s, args.gpus))
            if args.scaling:
                engines[f"shardscope-z{stage}-1gpu"] = (stage, lambda s=stage: ours(s, 1))
        if "pytorch" in args.engines:
            engines[peers[stage]] = (stage, lambda s=stage: peer(peers[s]))
        if "deepspeed" in args.engines and not args.offload:
            engines[deepspeed_mode(stage)] = (stage, lambda s=stage: peer(deepspeed_mode(s)))
    return engines


def ratio_checks(args, results, micro_batch):
    """(lines, failures) for the speed, memory and scaling bars of one micro-batch."""
    from zero_peers import deepspeed_mode
    peers = OFFLOAD_PEERS if args.offload else PEERS
    lines, failures = [], []
    for stage in args.stage_list:
        ours = results.get(f"shardscope-z{stage}" + ("-offload" if args.offload else ""))
        if not ours:
            continue
        parts = [f"mb {micro_batch} stage {stage}:"]
        for other, bar in ((results.get(peers[stage]), args.min_vs_peer),
                           (results.get(deepspeed_mode(stage)), args.min_vs_deepspeed)):
            if not other:
                continue
            speed, memory = bc.ratio(ours.median(), other.median()), bc.ratio(ours.peak_bytes(), other.peak_bytes())
            parts.append(f"vs {other.name} speed {speed:.3f} memory {memory:.3f}")
            if speed < bar:
                failures.append(f"mb {micro_batch} stage {stage}: {speed:.3f} x {other.name} < {bar}")
            if memory > 1.0:
                failures.append(f"mb {micro_batch} stage {stage}: peak {ours.peak_bytes() / bc.GIB:.2f} GiB/GPU > "
                                f"{other.name}'s {other.peak_bytes() / bc.GIB:.2f}")
        one = results.get(f"shardscope-z{stage}-1gpu")
        if one:
            fraction = bc.ratio(ours.median(), one.median())
            bar = args.min_scaling[stage]
            parts.append(f"scaling {args.gpus} GPUs / 1 GPU per GPU {fraction:.3f} (bar {bar})")
            if fraction < bar:
                failures.append(f"mb {micro_batch} stage {stage}: scaling {fraction:.3f} < {bar}")
        lines.append("  ".join(parts))
    return lines, failures


def comms_check(args, workdir, ports):
    """One comms_logger run per stage beside an NCCL sweep: (document, lines, failures)."""
    from nccl_sweep import busbw_at, print_sweep, sweep
    rows = sweep(args.gpus, args.sweep_min_bytes, args.sweep_max_bytes, args.device, ports.next())
    print_sweep(rows)
    doc, lines, failures = {"sweep": rows, "stages": {}}, [], []
    logger = {"comms_logger": {"enabled": True, "verbose": False, "prof_all": True}}
    for stage in args.stage_list:
        name = f"comms-z{stage}"
        _, db = launch_ours(args, stage, args.micro_batch_list[0], args.gpus, workdir, ports.next(), name, logger,
                            steps=min(args.steps, 8))
        export = subprocess.run([args.cli, "sessions", "export", name, "--db", db, "--json", "-"], check=True,
                                capture_output=True, text=True)
        records = json.loads(export.stdout)["sessions"][0]["comms"]
        by_size = {}
        for r in records:
            by_size.setdefault((r["op"], r["bytes"]), []).append(r["busbw_gbps"])
        compared = []
        for (op, nbytes), values in sorted(by_size.items()):
            ours = sorted(values)[len(values) // 2]
            sweep_op = {"all_reduce": "all_reduce", "reduce_scatter": "reduce_scatter", "all_gather": "all_gather"}.get(op)
            ref = busbw_at(rows, sweep_op, nbytes) if sweep_op else None
            entry = {"op": op, "bytes": nbytes, "count": len(values), "busbw_gbps": ours, "sweep_busbw_gbps": ref}
            compared.append(entry)
            if ref and nbytes >= args.comms_min_bytes:
                off = abs(ours / ref - 1)
                lines.append(f"stage {stage} {op} {nbytes / MIB:.1f} MiB x{len(values)}: busbw {ours:.1f} GB/s, "
                             f"sweep {ref:.1f} GB/s ({100 * off:.1f}% apart)")
                if off > args.comms_tolerance:
                    failures.append(f"stage {stage} {op} {nbytes / MIB:.1f} MiB: {ours:.1f} vs sweep {ref:.1f} GB/s")
        if not any(e["bytes"] >= args.comms_min_bytes for e in compared):
            lines.append(f"stage {stage}: no logged collective of {args.comms_min_bytes} bytes or more to compare")
        doc["stages"][str(stage)] = compared
    return doc, lines, failures


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bc.add_gpt2_arguments(p, hidden=2048, micro_batch=8, steps=14, warmup=6)
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--micro-batches", default=None, help="comma-separated micro-batches per GPU (default: --micro-batch)")
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--engines", default="shardscope,pytorch,deepspeed",
                   help="comma-separated subset of shardscope, pytorch, deepspeed; none (with --comms: only that)")
    p.add_argument("--scaling", action="store_true", help="also run ShardScope on 1 GPU: per-GPU scaling")
    p.add_argument("--comms", action="store_true", help="comms_logger runs beside an NCCL bus-bandwidth sweep")
    p.add_argument("--min-vs-peer", type=float, default=1.1)
    p.add_argument("--min-vs-deepspeed", type=float, default=1.3)
    p.add_argument("--min-scaling", default="0.95,0.95,0.95,0.90", help="scaling bar of stages 0,1,2,3")
    p.add_argument("--comms-tolerance", type=float, default=0.10)
    p.add_argument("--comms-min-bytes", type=int, default=64 * MIB, help="collectives compared: this size and up")
    p.add_argument("--sweep-min-bytes", type=int, default=MIB)
    p.add_argument("--sweep-max-bytes", type=int, default=1 << 30)
    p.add_argument("--offload", action="store_true", help="offload_optimizer (stages 2, 3) vs FSDP2 CPU offload")
    args = p.parse_args()
    args.engines = set(args.engines.split(",")) - {"none"}
    if not args.engines <= {"shardscope", "pytorch", "deepspeed"}:
        p.error(f"--engines {','.join(sorted(args.engines))}: choose among shardscope, pytorch, deepspeed (or none)")
    args.stage_list = [int(s) for s in args.stages.split(",")]
    peers = OFFLOAD_PEERS if args.offload else PEERS
    if any(stage not in peers for stage in args.stage_list):
        p.error(f"--stages {args.stages}: stages with a peer{' under --offload' if args.offload else ''} are "
                f"{','.join(map(str, peers))}")
    args.micro_batch_list = [int(m) for m in (args.micro_batches or str(args.micro_batch)).split(",")]
    args.min_scaling = [float(x) for x in args.min_scaling.split(",")]
    if len(args.min_scaling) != 4:
        p.error("--min-scaling takes four numbers, the bars of stages 0, 1, 2 and 3")
    return args


def main():
    args = parse_args()
    if args.device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    os.environ.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    peak = bc.matmul_peak_tflops(args.device)
    params = bc.gpt2_params(args.layers, args.hidden, args.vocab, args.seq_len)
    fpt = bc.flops_per_token(params, args.layers, args.hidden, args.seq_len)
    env = bc.provenance(args.cli, args.gpus, args.device)
    document = {"benchmark": "bench_zero_gpu", "provenance": env, "matmul_peak_tflops": peak, "params": params,
                "args": {k: sorted(v) if isinstance(v, set) else v for k, v in vars(args).items()},
                "micro_batches": {}}
    all_failures, ports = [], Ports()
    with tempfile.TemporaryDirectory() as workdir:
        for mb in args.micro_batch_list if args.engines else []:
            results = bc.run_repeats(engines_for(args, mb, workdir, ports), args.repeats,
                                     lambda line, mb=mb: print(f"mb {mb} {line}", flush=True))
            print(f"# GPT-2 shape: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, seq {args.seq_len}, "
                  f"micro-batch {mb}/GPU, {params / 1e9:.3f}B params, {args.gpus}x {env['gpu']}, torch {env['torch']}, "
                  f"NCCL {env['nccl']}, DeepSpeed {env['deepspeed']}, commit {env['commit']}, {env['date']}; "
                  f"bf16 matmul peak {peak:.0f} TFLOP/s; median of {args.repeats} repeats of steps "
                  f"{args.warmup + 1}-{args.steps}")
            ordered = list(results.values())
            bc.print_results_table(ordered, fpt, peak)
            lines, failures = ratio_checks(args, results, mb)
            for line in lines + ["spread: " + n for n in bc.spread_notes(ordered)]:
                print("# " + line)
            all_failures += failures
            document["micro_batches"][str(mb)] = {"rows": [r.to_json(fpt, peak) for r in ordered], "ratios": lines,
                                                  "failures": failures}
        if args.comms:
            comms, lines, failures = comms_check(args, workdir, ports)
            for line in lines:
                print("# comms: " + line)
            all_failures += failures
            document["comms"] = dict(comms, lines=lines, failures=failures)
    document["failures"] = all_failures
    if args.json:
        bc.write_json(args.json, document)
    return bc.footer(args.device, all_failures)


if __name__ == "__main__":
    sys.exit(main())
