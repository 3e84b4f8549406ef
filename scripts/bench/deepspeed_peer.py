"""DeepSpeed 0.19.7 itself as the peer of ShardScope's ZeRO stages: the GPT-2 of gpt2_eager.py
through `deepspeed.initialize` with the same config ShardScope trains under (bench_common.ds_config:
bf16 with fp32 master and AdamW state, clipping 1.0, overlap_comm, the same buckets) and DeepSpeed's
defaults for everything else, so "AdamW" is its FusedAdam (DeepSpeedCPUAdam with offload), stage 0
in bf16 its FP16_Optimizer with bf16, stages 1-3 its ZeRO optimizers. The caller has initialised
the process group (DeepSpeed then takes it as its own)."""
import gc
import time

import torch

from bench_common import Measurement, ds_config
from gpt2_eager import build_gpt2, random_tokens, timed_steps


def train_deepspeed(stage, shape, micro_batch, steps, warmup, bucket, device="cuda", rank=0, offload=False):
    """One rank of a DeepSpeed run at ZeRO `stage`; returns this rank's Measurement."""
    import deepspeed

    _, _, _, vocab, seq_len = shape
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    target = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    setup_start = time.perf_counter()
    model = build_gpt2(shape, target)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=ds_config(stage, micro_batch, bucket, offload))
    next_tokens = random_tokens(vocab, micro_batch, seq_len, target, seed=1 + rank)
    sync()
    setup_s = time.perf_counter() - setup_start

    def step(_):
        tokens = next_tokens()
        loss = engine(tokens[:, :-1], tokens[:, 1:])
        engine.backward(loss)
        engine.step()
        return loss

    tokens_per_s, loss = timed_steps(step, steps, warmup, micro_batch, seq_len, sync)
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    engine.destroy()
    del engine, model
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return Measurement(tokens_per_s, peak, loss, setup_s)
