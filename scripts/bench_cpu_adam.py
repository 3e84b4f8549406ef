#!/usr/bin/env python3
"""CPU Adam benchmark: ShardScope's cpu_adam (shardscope_bench_cpu_adam) beside torch's CPU AdamW
(foreach=True and fused=True) on the same number of fp32 elements, in the same run.

Prints one row per implementation (ms/step, GB/s of memory traffic at 28 bytes per element) and
the speed-up of our best SIMD level over each torch variant, then records the versions, commit
and CPU. Exits 1 when our speed-up over torch's fused AdamW is below --min-speedup, 2 on bad
usage. Needs only torch (the venv at ~/.cache/shardscope/venv has it); no numpy.

    ~/.cache/shardscope/venv/bin/python scripts/bench_cpu_adam.py \
        --bench build/kernels/shardscope_bench_cpu_adam --elements 100000000 --steps 10
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BYTES_PER_ELEMENT = 28.0  # params, exp_avg, exp_avg_sq read+written, grads read
REPO = Path(__file__).resolve().parent.parent


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", type=Path, help="path of shardscope_bench_cpu_adam (default: searched under build*/)")
    p.add_argument("--elements", type=int, default=100_000_000)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--min-speedup", type=float, default=0.0,
                   help="fail (exit 1) when ours / torch fused AdamW speed-up is below this")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args()
    if args.elements < 1 or args.steps < 1 or args.warmup < 0:
        p.error("--elements and --steps must be >= 1, --warmup >= 0")
    return args


def find_bench(explicit):
    if explicit:
        if not explicit.is_file():
            sys.exit(f"bench_cpu_adam.py: {explicit} does not exist; build it with "
                     "`ninja -C <build> shardscope_bench_cpu_adam`")
        return explicit
    found = sorted(REPO.glob("build*/**/kernels/shardscope_bench_cpu_adam"), key=lambda f: f.stat().st_mtime)
    if not found:
        sys.exit("bench_cpu_adam.py: no shardscope_bench_cpu_adam under build*/; build it with "
                 "`ninja -C <build> shardscope_bench_cpu_adam` or pass --bench PATH")
    return found[-1]


def run_ours(bench, args):
    cmd = [str(bench), "--elements", str(args.elements), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return [{"name": f"shardscope cpu_adam ({r['simd']})", "ms": r["ms_per_step"]} for r in result["rows"]], result


def run_torch(args, variant):
    import torch

    p = torch.nn.Parameter(torch.full((args.elements,), 0.5, dtype=torch.float32))
    p.grad = torch.full_like(p, 0.01)
    kwargs = {"foreach": True} if variant == "foreach" else {"fused": True}
    opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.01, **kwargs)
    with torch.no_grad():
        for _ in range(args.warmup):
            opt.step()
        start = time.perf_counter()
        for _ in range(args.steps):
            opt.step()
        ms = (time.perf_counter() - start) * 1e3 / args.steps
    del opt, p
    return {"name": f"torch AdamW {variant}=True", "ms": ms}


def environment(torch_threads):
    import torch

    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"commit": commit, "torch": torch.__version__, "python": platform.python_version(), "cpu": cpu,
            "cores": os.cpu_count(), "torch_threads": torch_threads,
            "date": time.strftime("%Y-%m-%d")}


def main():
    args = parse_args()
    import torch

    bench = find_bench(args.bench)
    ours, raw = run_ours(bench, args)
    rows = ours + [run_torch(args, "foreach"), run_torch(args, "fused")]
    for r in rows:
        r["gbps"] = BYTES_PER_ELEMENT * args.elements / (r["ms"] * 1e-3) / 1e9
    best = min(ours, key=lambda r: r["ms"])
    speedups = {r["name"]: r["ms"] / best["ms"] for r in rows if r not in ours}
    env = environment(torch.get_num_threads())
    env["omp_threads_ours"] = raw["threads"]
    fused_speedup = speedups["torch AdamW fused=True"]
    ok = fused_speedup >= args.min_speedup
    if args.json:
        print(json.dumps({"elements": args.elements, "steps": args.steps, "rows": rows, "speedup_of_best": speedups,
                          "env": env, "ok": ok}))
        return 0 if ok else 1
    print(f"# CPU Adam: {args.elements} fp32 elements, {args.steps} timed steps after {args.warmup} warm-up")
    print(f"# {'implementation':<34} {'time(ms/step)':>14} {'mem(GB/s)':>10}")
    for r in rows:
        print(f"  {r['name']:<34} {r['ms']:>14.2f} {r['gbps']:>10.2f}")
    for name, s in speedups.items():
        print(f"# speed-up of {best['name']} over {name}: {s:.2f}x")
    print("# " + ", ".join(f"{k}={v}" for k, v in env.items()))
    verdict = "OK" if ok else f"FAILED: speed-up over fused {fused_speedup:.2f}x < --min-speedup {args.min_speedup}"
    print(f"# {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
