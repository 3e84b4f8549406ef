"""The GPT-2 of gpt2_eager.py (build_gpt2: the model `shardscope train --model gpt2` and the other
Python peers train) as a plain DeepSpeed 0.19.7 training script, in the form DeepSpeed's autotuner
(`deepspeed --autotuning tune|run`) drives: `deepspeed.add_config_arguments` (--deepspeed,
--deepspeed_config), the config read from --deepspeed_config as a file or as the base64 text the
autotuner's scheduler puts in its place, the launcher's --local_rank, and a loop of
engine(tokens) -> engine.backward -> engine.step on random tokens.

Two modes:
  autotuning experiment (the config has "autotuning": {"enabled": true}): the engine itself ends the
    process, after writing model_info.json (the model-info run: the first forward) or metrics.json
    (after end_profile_step); the loop runs end_profile_step + 3 optimizer steps in case it does not.
  --measure-steps N: any config (its autotuning block is dropped), W warm-up optimizer steps then N
    timed ones; each timed step is all its gradient-accumulation micro-steps, ended by loss.item()
    and torch.cuda.synchronize(); prints one JSON line {"ds_autotune_measure": ...} with the median
    tokens/s (micro-batch x accumulation x sequence x world / step time), like `shardscope tune`'s
    trials (median after warm-up).

Without the launcher (no RANK in the environment) it makes a one-rank process group itself.
DS_ACCELERATOR=cpu runs it on the CPU (gloo): a dry run of the plumbing, no figure means anything.
"""
import argparse
import base64
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_eager import build_gpt2, random_tokens  # noqa: E402


def parse_args(argv=None):
    import deepspeed
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--steps", type=int, default=0,
                   help="optimizer steps without --measure-steps (default: the config's autotuning "
                        "end_profile_step + 3, 10 without an autotuning block)")
    p.add_argument("--measure-steps", type=int, default=0, metavar="N",
                   help="time N optimizer steps after --warmup ones and print the JSON line")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", metavar="FILE", help="with --measure-steps: also write the JSON there")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    deepspeed.add_config_arguments(p)
    return p.parse_args(argv)


def load_config(text):
    """--deepspeed_config: a JSON file, or the url-safe base64 JSON the autotuner's scheduler passes."""
    if text is None:
        raise SystemExit("ds_autotune_train.py: --deepspeed_config is required")
    if os.path.isfile(text):
        with open(text) as f:
            return json.load(f)
    return json.loads(base64.urlsafe_b64decode(text).decode("utf-8"))


def init_process_group():
    import deepspeed
    from deepspeed.accelerator import get_accelerator
    if "RANK" not in os.environ:  # standalone: one rank
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
    accel = get_accelerator()
    if accel.device_name() == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    deepspeed.init_distributed(dist_backend=accel.communication_backend_name())
    return accel


def main(argv=None):
    args = parse_args(argv)
    import deepspeed
    import torch.distributed as dist

    config = load_config(args.deepspeed_config)
    measuring = args.measure_steps > 0
    autotuning = config.get("autotuning", {}) or {}
    if measuring:
        config.pop("autotuning", None)
        autotuning = {}
    accel = init_process_group()
    cuda = accel.device_name() == "cuda"
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rank, world = dist.get_rank(), dist.get_world_size()

    shape = (args.layers, args.hidden, args.heads, args.vocab, args.seq_len)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    setup_start = time.perf_counter()
    model = build_gpt2(shape, device, seed=args.seed)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    micro_batch = engine.train_micro_batch_size_per_gpu()
    gas = engine.gradient_accumulation_steps()
    next_tokens = random_tokens(args.vocab, micro_batch, args.seq_len, device, seed=1 + rank)
    sync()
    setup_s = time.perf_counter() - setup_start

    def optimizer_step():
        loss = None
        for _ in range(gas):
            tokens = next_tokens()
            loss = engine(tokens[:, :-1], tokens[:, 1:])
            engine.backward(loss)
            engine.step()
        return loss.item()

    if not measuring:
        steps = args.steps
        if steps <= 0:
            steps = int(autotuning.get("end_profile_step", 5)) + 3 if autotuning.get("enabled") else 10
        for _ in range(steps):
            loss = optimizer_step()
        # An autotuning experiment never gets here: the engine exits after end_profile_step.
        print(f"ds_autotune_train: {steps} steps, micro-batch {micro_batch} x {gas}, loss {loss:.4f}", flush=True)
        return 0

    times, loss = [], float("nan")
    for step in range(args.warmup + args.measure_steps):
        start = time.perf_counter()
        loss = optimizer_step()
        sync()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    ordered = sorted(times)
    median_s = ordered[len(ordered) // 2]
    tokens_per_step = micro_batch * gas * args.seq_len * world
    zero = config.get("zero_optimization", {}) or {}
    result = {"ds_autotune_measure": {
        "tokens_per_s": tokens_per_step / median_s,
        "tokens_per_s_per_gpu": tokens_per_step / median_s / world,
        "step_s_median": median_s, "step_s": times,
        "micro_batch": micro_batch, "gradient_accumulation_steps": gas, "world": world,
        "zero_stage": zero.get("stage", 0),
        "offload_optimizer": (zero.get("offload_optimizer") or {}).get("device", "none"),
        "warmup": args.warmup, "measure_steps": args.measure_steps, "setup_s": setup_s, "final_loss": loss,
        "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "shape": dict(zip(("layers", "hidden", "heads", "vocab", "seq_len"), shape)),
        "deepspeed": deepspeed.__version__, "torch": torch.__version__}}
    if rank == 0:
        line = json.dumps(result)
        print(line, flush=True)
        if args.json:
            with open(args.json, "w") as f:
                f.write(line + "\n")
    engine.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
