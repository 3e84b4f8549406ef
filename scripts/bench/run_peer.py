"""One run of a one-GPU Python peer in a process of its own, as bench_train_gpu.py starts one per run:
each run measures from a clean allocator with nothing left over from the run before. (In one process,
each DeepSpeed ZeRO-3 run left about 20 GB allocated after engine.destroy(), 2026-12-01 on an H200,
which every later run's peak then counted.) Prints one JSON line: the Measurement, and loop_s, the
seconds of the training loop, so the caller can count everything else as setup."""
import argparse
import json
import os
import sys
import time
from dataclasses import asdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--engine", required=True, help="eager-autocast, eager-bf16 or deepspeed-z0..3")
    p.add_argument("--shape", required=True, help="layers,hidden,heads,vocab,seq_len")
    p.add_argument("--micro-batch", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--bucket", type=int, default=50_000_000)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--port", type=int, default=29500)
    args = p.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    run = (args.micro_batch, args.steps, args.warmup)
    start = time.perf_counter()
    if args.engine.startswith("deepspeed-z"):
        if args.device == "cpu":
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        bc.ensure_process_group(args.device, args.port)
        from deepspeed_peer import train_deepspeed
        m = train_deepspeed(int(args.engine[-1]), shape, *run, args.bucket, args.device)
    elif args.engine in ("eager-autocast", "eager-bf16"):
        from gpt2_eager import train_eager
        m = train_eager(args.engine, shape, *run, device=args.device)
    else:
        p.error(f"--engine {args.engine}: one of eager-autocast, eager-bf16, deepspeed-z0 ... deepspeed-z3")
    loop_s = time.perf_counter() - start - m.setup_s
    print(json.dumps(dict(asdict(m), loop_s=loop_s)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
