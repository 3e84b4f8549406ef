"""The peers of ShardScope's ZeRO stages on N GPUs of one host, one process per GPU (NCCL; Gloo
for the CPU dry run), each at the settings its own documentation recommends for this shape:
  ddp            DDP(gradient_as_bucket_view=True, static_graph=True), bf16 autocast over fp32
                 weights, AdamW(fused=True)                                (peer of stage 0)
  zero1          ZeroRedundancyOptimizer(AdamW fused) with the same DDP     (peer of stage 1)
  fsdp2          FSDP2 fully_shard per block and on the root, bf16 params and reduction,
                 reshard_after_forward=False, its default prefetching     (peer of stage 2)
  fsdp2-reshard  the same with reshard_after_forward=True                  (peer of stage 3)
  fsdp2-offload, fsdp2-reshard-offload
                 the same with CPUOffloadPolicy(pin_memory=True)            (peers of offload_optimizer)
  deepspeed-zS   DeepSpeed 0.19.7 at ZeRO stage S (deepspeed_peer.py)
Each trains the GPT-2 of gpt2_eager.py on random tokens and reports tokens/s per GPU (mean over the
ranks of each rank's median step after the warm-up) and the fullest rank's peak allocated bytes."""
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bench_common import Measurement
from deepspeed_peer import train_deepspeed
from gpt2_eager import build_gpt2, random_tokens, timed_steps

PYTORCH_MODES = ("ddp", "zero1", "fsdp2", "fsdp2-reshard", "fsdp2-offload", "fsdp2-reshard-offload")


def deepspeed_mode(stage):
    return f"deepspeed-z{stage}"


def _wrap_pytorch(mode, model, rank, cuda):
    """(model, optimizer, autocast) for a PyTorch peer."""
    kwargs = dict(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    if mode in ("ddp", "zero1"):
        # gradient_as_bucket_view: gradients are views into the buckets (no copy, no second
        # gradient buffer); static_graph: the same graph every step, so DDP can skip its unused-
        # parameter search and fix the bucket order after the first step.
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank] if cuda else None, bucket_cap_mb=25,
                                                          gradient_as_bucket_view=True, static_graph=True)
        if mode == "ddp":
            return model, torch.optim.AdamW(model.parameters(), **kwargs), True
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, **kwargs), True
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    reshard = mode.startswith("fsdp2-reshard")
    offload = CPUOffloadPolicy(pin_memory=True) if mode.endswith("-offload") else OffloadPolicy()
    for block in model.h:
        fully_shard(block, mp_policy=policy, reshard_after_forward=reshard, offload_policy=offload)
    fully_shard(model, mp_policy=policy, reshard_after_forward=reshard, offload_policy=offload)
    return model, torch.optim.AdamW(model.parameters(), **kwargs), False


def train_pytorch_peer(mode, shape, micro_batch, steps, warmup, device, rank):
    _, _, _, vocab, seq_len = shape
    cuda = device == "cuda"
    target = torch.device("cuda", rank) if cuda else torch.device("cpu")
    sync = (lambda: torch.cuda.synchronize(target)) if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats(target)
    setup_start = time.perf_counter()
    model, opt, autocast = _wrap_pytorch(mode, build_gpt2(shape, target), rank, cuda)
    next_tokens = random_tokens(vocab, micro_batch, seq_len, target, seed=1 + rank)
    sync()
    setup_s = time.perf_counter() - setup_start

    def step(_):
        tokens = next_tokens()
        with torch.autocast(target.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    tokens_per_s, loss = timed_steps(step, steps, warmup, micro_batch, seq_len, sync)
    return Measurement(tokens_per_s, torch.cuda.max_memory_allocated(target) if cuda else 0, loss, setup_s)


def _worker(rank, world, mode, shape, micro_batch, steps, warmup, bucket, device, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), NCCL_NVLS_ENABLE="0")
    cuda = device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        # CPU offload: the gradient norm of host-resident DTensors is all-reduced over Gloo.
        backend = "cpu:gloo,cuda:nccl" if mode.endswith("-offload") else "nccl"
        dist.init_process_group(backend, rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    if mode.startswith("deepspeed-z"):
        m = train_deepspeed(int(mode[-1]), shape, micro_batch, steps, warmup, bucket, device, rank)
    else:
        m = train_pytorch_peer(mode, shape, micro_batch, steps, warmup, device, rank)
    results[rank] = (m.tokens_per_s, m.peak_bytes, m.loss, m.setup_s)
    dist.barrier()
    dist.destroy_process_group()


def run_peer(mode, world, shape, micro_batch, steps, warmup, port, bucket=50_000_000, device="cuda"):
    """One run of peer `mode` on `world` processes; returns its Measurement (tokens/s per GPU)."""
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_worker, args=(world, mode, shape, micro_batch, steps, warmup, bucket, device, port, results),
                 nprocs=world)
        values = dict(results)
    return Measurement(sum(v[0] for v in values.values()) / len(values), max(v[1] for v in values.values()),
                       values[0][2], max(v[3] for v in values.values()))
