"""The peers of ShardScope's ZeRO stages on N GPUs of one host, one process per GPU (NCCL):
  ddp            PyTorch DDP, bf16 autocast over fp32 weights           (peer of stage 0)
  zero1          ZeroRedundancyOptimizer(AdamW) with DDP, bf16 autocast  (peer of stage 1)
  fsdp2          FSDP2 fully_shard per block, bf16 params and reduction,
                 reshard_after_forward=False                             (peer of stage 2)
  fsdp2-reshard  the same with reshard_after_forward=True                (peer of stage 3)
  fsdp2-offload, fsdp2-reshard-offload
                 the same with CPUOffloadPolicy(pin_memory=True): sharded parameters, gradients
                 and AdamW state on the host, torch's fused CPU AdamW (peers of offload_optimizer)
Each trains the GPT-2 of gpt2_eager.py on random tokens and reports rank 0's tokens/s per GPU
(steps after the warmup) and every rank's peak allocated bytes."""
import math
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gpt2_eager import GPT2


def _worker(rank, world, mode, shape, micro_batch, steps, warmup, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    # CPU offload: the gradient norm of host-resident DTensors is all-reduced over Gloo.
    backend = "cpu:gloo,cuda:nccl" if mode.endswith("-offload") else "nccl"
    dist.init_process_group(backend, rank=rank, world_size=world, device_id=device)
    layers, hidden, heads, vocab, seq_len = shape
    torch.manual_seed(0)
    model = GPT2(layers, hidden, heads, vocab, seq_len).to(device)
    autocast = True
    kwargs = dict(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    if mode in ("ddp", "zero1"):
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank], bucket_cap_mb=25)
        if mode == "ddp":
            opt = torch.optim.AdamW(model.parameters(), fused=True, **kwargs)
        else:
            from torch.distributed.optim import ZeroRedundancyOptimizer
            opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, fused=True, **kwargs)
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
        reshard = mode.startswith("fsdp2-reshard")
        offload = CPUOffloadPolicy(pin_memory=True) if mode.endswith("-offload") else OffloadPolicy()
        for block in model.h:
            fully_shard(block, mp_policy=policy, reshard_after_forward=reshard, offload_policy=offload)
        fully_shard(model, mp_policy=policy, reshard_after_forward=reshard, offload_policy=offload)
        opt = torch.optim.AdamW(model.parameters(), fused=True, **kwargs)
        autocast = False
    gen = torch.Generator(device=device).manual_seed(1 + rank)
    torch.cuda.reset_peak_memory_stats(device)
    loss_value = math.nan
    start = None
    for step in range(steps):
        if step == warmup:
            torch.cuda.synchronize(device)
            dist.barrier()
            start = time.perf_counter()
        tokens = torch.randint(0, vocab, (micro_batch, seq_len + 1), device=device, generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_value = loss.item()
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    results[rank] = ((steps - warmup) * micro_batch * seq_len / seconds, torch.cuda.max_memory_allocated(device),
                     loss_value)
    dist.destroy_process_group()


def run_peer(mode, world, shape, micro_batch, steps, warmup, port):
    """Returns (tokens/s per GPU, max peak bytes over the ranks, rank 0's last loss)."""
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_worker, args=(world, mode, shape, micro_batch, steps, warmup, port, results), nprocs=world)
        values = dict(results)
    tps = sum(v[0] for v in values.values()) / len(values)
    return tps, max(v[1] for v in values.values()), values[0][2]
