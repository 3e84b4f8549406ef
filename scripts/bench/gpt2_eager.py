"""The GPT-2 every Python peer of `shardscope train --model gpt2` trains (eager PyTorch, DDP,
ZeroRedundancyOptimizer, FSDP2, DeepSpeed): same shape, same parameter layout (learned positions,
LayerNorm with bias, fused qkv, GELU-tanh MLP, tied head), causal scaled_dot_product_attention,
PyTorch's F.cross_entropy on fp32 logits as a PyTorch training script writes it.

Also the one-GPU eager references:
  eager-autocast  fp32 weights, torch.autocast(bfloat16), AdamW(fused=True) on fp32 state
  eager-bf16      everything bf16 (weights, gradients, AdamW state; no fp32 master), AdamW(fused=True):
                  the all-bf16 ceiling DeepSpeed's bf16 mode (fp32 master and state) must not fall far below
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from bench_common import Measurement


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, seq_len: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq_len, hidden)
        self.h = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied lm_head
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build_gpt2(shape, device, seed=0):
    """The model, initialised on `device` itself (no host copy of 1.3B parameters to move)."""
    torch.manual_seed(seed)
    with torch.device(device):
        return GPT2(*shape)


def timed_steps(step_fn, steps, warmup, micro_batch, seq_len, sync):
    """Runs step_fn(step) -> loss tensor `steps` times; each step ends with loss.item() (what a loop
    that logs its loss does, and a full synchronisation), so the host clock times the GPU's work.
    Returns (median tokens/s over the steps after warmup, last loss)."""
    times, loss_value = [], math.nan
    for step in range(steps):
        start = time.perf_counter()
        loss_value = step_fn(step).item()
        sync()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    times.sort()
    return micro_batch * seq_len / times[len(times) // 2], loss_value


def random_tokens(vocab, micro_batch, seq_len, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return lambda: torch.randint(0, vocab, (micro_batch, seq_len + 1), device=device, generator=gen)


def train_eager(mode, shape, micro_batch, steps, warmup, device="cuda", clip=1.0):
    """One-GPU eager run in `mode` ("eager-autocast" or "eager-bf16"); returns a Measurement."""
    assert mode in ("eager-autocast", "eager-bf16"), mode
    _, _, _, vocab, seq_len = shape
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    setup_start = time.perf_counter()
    model = build_gpt2(shape, device)
    if mode == "eager-bf16":
        model = model.to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    next_tokens = random_tokens(vocab, micro_batch, seq_len, device, seed=0)
    sync()
    setup_s = time.perf_counter() - setup_start
    autocast = mode == "eager-autocast"

    def step(_):
        tokens = next_tokens()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    tokens_per_s, loss = timed_steps(step, steps, warmup, micro_batch, seq_len, sync)
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    del model, opt
    return Measurement(tokens_per_s, peak, loss, setup_s)

