"""What every GPU benchmark of ShardScope shares (scripts/bench_train_gpu.py, scripts/bench_zero_gpu.py):
the GPT-2 shape flags, the measured ceiling (a bf16 matrix product), FLOPs per token, repeats in
alternating order with their median and spread, the provenance of every row (commit, versions,
hardware), the tables in nccl-tests' style and the JSON document.

A measurement is one engine's run: tokens/s per GPU over the timed steps, peak allocated bytes per
GPU, the last loss and the seconds its setup took (model build and engine initialisation, never
counted in tokens/s)."""
import datetime
import json
import os
import platform
import statistics
import subprocess
from dataclasses import asdict, dataclass, field

import torch

MIB = 2**20
GIB = 2**30


@dataclass
class Measurement:
    tokens_per_s: float  # per GPU, median over the timed steps (or the whole timed window)
    peak_bytes: int      # per GPU, the caching allocator's peak allocated bytes (max over the ranks)
    loss: float
    setup_s: float = float("nan")


@dataclass
class EngineResult:
    """All repeats of one engine: the median of tokens/s is the figure, the spread its honesty."""
    name: str
    stage: int  # the ZeRO stage it stands for (-1: none, the eager references)
    repeats: list = field(default_factory=list)

    def tokens(self):
        return [m.tokens_per_s for m in self.repeats]

    def median(self):
        return statistics.median(self.tokens())

    def spread(self):
        """(max - min) / median of tokens/s over the repeats."""
        t = self.tokens()
        return (max(t) - min(t)) / statistics.median(t) if len(t) > 1 else 0.0

    def peak_bytes(self):
        return max(m.peak_bytes for m in self.repeats)

    def setup_s(self):
        return statistics.median(m.setup_s for m in self.repeats)

    def loss(self):
        return self.repeats[-1].loss

    def to_json(self, flops_per_token, peak_tflops):
        tflops = self.median() * flops_per_token / 1e12
        return {"engine": self.name, "stage": self.stage, "tokens_per_s_per_gpu": self.median(),
                "spread": self.spread(), "tflops_per_gpu": tflops,
                "mfu": tflops / peak_tflops if peak_tflops else None,
                "peak_bytes_per_gpu": self.peak_bytes(), "setup_s": self.setup_s(), "final_loss": self.loss(),
                "repeats": [asdict(m) for m in self.repeats]}


def add_gpt2_arguments(p, hidden, micro_batch, steps, warmup):
    """The GPT-2 shape, run length and output flags every GPU benchmark takes (defaults differ)."""
    p.add_argument("--cli", required=True, help="the shardscope binary")
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=hidden)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--micro-batch", type=int, default=micro_batch)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--repeats", type=int, default=3, help="runs per engine; the order of engines alternates")
    p.add_argument("--bucket", type=int, default=50_000_000, help="reduce/prefetch bucket, elements")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: a dry run of the plumbing (gloo, tiny shapes); no figure means anything")
    p.add_argument("--json", metavar="FILE", help="also write the whole result as JSON ('-': stdout)")


def shape_of(args):
    return (args.layers, args.hidden, args.heads, args.vocab, args.seq_len)


def gpt2_params(layers, hidden, vocab, seq_len):
    """Parameters of the tied GPT-2 of scripts/bench/gpt2_eager.py (and of `shardscope train --model gpt2`)."""
    return 12 * layers * hidden**2 + 13 * layers * hidden + (vocab + seq_len) * hidden + 2 * hidden


def flops_per_token(params, layers, hidden, seq_len):
    return 6 * params + 12 * layers * hidden * seq_len  # PaLM appendix B


def matmul_peak_tflops(device, n=8192, reps=10):
    """bf16 n^3 matrix product on random data, median of `reps` after 3 warm-ups (0 on the CPU)."""
    if device != "cuda":
        return 0.0
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
    del a, b
    torch.cuda.empty_cache()
    return 2 * n**3 / statistics.median(times) / 1e12


def copy_bandwidth_gbps(device, nbytes=2 * GIB, reps=10):
    """Device-to-device copy of `nbytes`, bytes read plus bytes written per second, median (0 on the CPU)."""
    if device != "cuda":
        return 0.0
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / 1000.0)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / statistics.median(times) / 1e9


def _command_output(cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(cli, gpus, device):
    """Commit, versions and hardware every row of a benchmark carries (llama-bench's habit)."""
    report = _command_output([cli, "report", "--json"])
    shardscope = {}
    if report:
        try:
            shardscope = json.loads(report).get("versions", {})
        except json.JSONDecodeError:
            shardscope = {}
    here = os.path.dirname(os.path.abspath(__file__))
    commit = os.environ.get("SHARDSCOPE_GIT_HASH") or _command_output(["git", "-C", here, "rev-parse", "--short=12", "HEAD"])
    try:
        import deepspeed
        ds_version = deepspeed.__version__
    except ImportError:
        ds_version = None
    cuda = device == "cuda" and torch.cuda.is_available()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit or "unknown",
        "shardscope": shardscope,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
        "deepspeed": ds_version, "python": platform.python_version(),
        "gpu": torch.cuda.get_device_name() if cuda else "none (CPU dry run)", "gpus": gpus,
        "driver": _command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]).split("\n")[0]
        if cuda else None,
        "host": platform.node(), "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
    }


def alternating_orders(names, repeats):
    """Repeat r runs the engines forwards when r is even, backwards when odd, so no engine always
    runs first (cold clocks) or last (a fragmented allocator, a warm GPU)."""
    return [list(names) if r % 2 == 0 else list(reversed(names)) for r in range(repeats)]


def run_repeats(engines, repeats, log):
    """engines: {name: (stage, callable() -> Measurement)}; returns {name: EngineResult}."""
    results = {name: EngineResult(name, stage) for name, (stage, _) in engines.items()}
    for r, order in enumerate(alternating_orders(list(engines), repeats)):
        for name in order:
            m = engines[name][1]()
            results[name].repeats.append(m)
            log(f"repeat {r + 1}/{repeats} {name:<24} {m.tokens_per_s:>10.0f} tok/s/GPU {m.peak_bytes / GIB:>7.2f} GiB "
                f"setup {m.setup_s:>5.1f} s")
    return results


def print_results_table(results, flops_per_token, peak_tflops, columns=()):
    """nccl-tests style: fixed columns with units. `columns` adds (header, width, fn(result) -> text)."""
    head = (f"{'engine':<26} {'stage':>5} {'tok/s/GPU':>10} {'spread':>7} {'TFLOP/s':>8} {'MFU':>6} "
            f"{'peak GiB':>9} {'setup s':>8} {'loss':>7}")
    for header, width, _ in columns:
        head += f" {header:>{width}}"
    print("# " + head)
    for r in results:
        tflops = r.median() * flops_per_token / 1e12
        mfu = f"{100 * tflops / peak_tflops:5.1f}%" if peak_tflops else "    -"
        stage = str(r.stage) if r.stage >= 0 else "-"
        line = (f"  {r.name:<26} {stage:>5} {r.median():>10.0f} {100 * r.spread():>6.1f}% {tflops:>8.1f} {mfu:>6} "
                f"{r.peak_bytes() / GIB:>9.2f} {r.setup_s():>8.1f} {r.loss():>7.3f}")
        for _, width, fn in columns:
            line += f" {fn(r):>{width}}"
        print(line)


def spread_notes(results, limit=0.10):
    """The engines whose repeats spread more than `limit`, with their figures: to be investigated."""
    notes = []
    for r in results:
        if r.spread() > limit:
            figures = ", ".join(f"{t:.0f}" for t in r.tokens())
            notes.append(f"{r.name}: repeats spread {100 * r.spread():.1f}% > {100 * limit:.0f}% ({figures} tok/s)")
    return notes


def footer(device, failures):
    """The nccl-tests style last line and the exit code: 1 under a bar on a GPU; a CPU dry run
    names what would fail there but exits 0 (its figures mean nothing)."""
    if device == "cpu":
        print("# OK: CPU dry run, every engine ran (bars apply to GPU figures only"
              + (f"; on these: {'; '.join(failures)})" if failures else ")"))
        return 0
    if failures:
        print("# FAILED: " + "; ".join(failures))
        return 1
    print("# OK: every bar holds")
    return 0


def ratio(a, b):
    """a / b, NaN when b is 0 (a CPU dry run measures no GPU memory)."""
    return a / b if b else float("nan")


def write_json(path, document):
    text = json.dumps(document, indent=2)
    if path == "-":
        print(text)
    else:
        with open(path + ".tmp", "w") as f:
            f.write(text + "\n")
        os.replace(path + ".tmp", path)


def ds_config(stage, micro_batch, bucket, offload=False):
    """The DeepSpeed config ShardScope and DeepSpeed both train under: bf16 (fp32 master and AdamW
    state), clipping 1.0, overlap_comm, the same buckets; with `offload`, offload_optimizer to the
    CPU (and offload_param at stage 3)."""
    zero = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": bucket,
            "stage3_prefetch_bucket_size": bucket, "stage3_max_reuse_distance": bucket}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": 1,
            "gradient_clipping": 1.0, "steps_per_print": 1000,
            "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
            "bf16": {"enabled": True, "check_grad_overflow": True}, "zero_optimization": zero}


def ensure_process_group(device, port=29500):
    """A process group of one rank for the in-process peers of the one-GPU benchmark (DeepSpeed
    needs one even alone): NCCL on a GPU, Gloo on the CPU."""
    import torch.distributed as dist
    if dist.is_initialized():
        return
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      NCCL_NVLS_ENABLE="0")
    if device == "cuda":
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    else:
        dist.init_process_group("gloo", rank=0, world_size=1)


def session_measurement(cli, db, name, warmup, ranks, process_seconds):
    """A ShardScope run read back from its session (`shardscope sessions show --json`, the first
    `warmup` steps left out): tokens/s per GPU (the session's median step over all ranks / ranks),
    the peak bytes of the fullest rank, the final loss; setup is the process's `process_seconds`
    less the training loop's wall time the session recorded (start, model build, engine, exit)."""
    show = subprocess.run([cli, "sessions", "show", name, "--db", db, "--json", "--warmup", str(warmup)],
                          check=True, capture_output=True, text=True)
    summary = json.loads(show.stdout)["summary"]
    peak = max((m.get("peak_bytes") or 0) for m in summary["memory"])
    loop_s = summary["session"].get("wall_time_s") or 0.0
    return Measurement(summary["tokens_per_s"] / ranks, peak, summary.get("final_loss") or float("nan"),
                       process_seconds - loop_s)
