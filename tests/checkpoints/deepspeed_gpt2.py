#!/usr/bin/env python3
"""The DeepSpeed side of the checkpoint crossover tests: the built-in GPT-2 of ShardScope as
transformers' GPT2LMHeadModel (the same math and Hugging Face names, no dropout), trained by
DeepSpeed 0.19.7 on the CPU (DS_ACCELERATOR=cpu, gloo) on the data ShardScope feeds it.

  deepspeed_gpt2.py train  --config ds.json --tokens FILE --world 2 --steps 5 --save-at 3 --save DIR --losses OUT.json
  deepspeed_gpt2.py resume --config ds.json --tokens FILE --world 2 --steps 5 --load DIR [--tag T] --losses OUT.json

Ranks are processes this script starts with RANK/WORLD_SIZE/MASTER_PORT, as a launcher would.
The data order is ShardScope's (engine/data/sharded_sampler.cpp, ported below): the same token
windows reach the same ranks in the same steps, so the losses of the two programs compare.
`--losses` gets {"steps": [...], "losses": [[rank 0, rank 1, ...], ...]} for the steps run here.
"""
import argparse
import json
import os
import socket
import subprocess
import sys

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class ShardScopeSampler:
    """engine/data/sharded_sampler.cpp: a keyed Feistel shuffle of [0, n), split by rank."""

    def __init__(self, n, rank, world, seed):
        self.n, self.rank, self.world, self.seed = n, rank, world, seed
        self.half_bits = 1
        while (1 << (2 * self.half_bits)) < n:
            self.half_bits += 1

    def _feistel(self, value, key):
        mask = (1 << self.half_bits) - 1
        left, right = value >> self.half_bits, value & mask
        for r in range(6):
            f = mix64(right ^ mix64((key + r) & M64)) & mask
            left, right = right, left ^ f
        return (left << self.half_bits) | right

    def sample(self, epoch, position):
        g = (self.rank + position * self.world) % self.n
        key = mix64(self.seed ^ mix64(epoch))
        v = g
        while True:
            v = self._feistel(v, key)
            if v < self.n:
                return v


def gpt2(args):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=args.layers, n_embd=args.hidden, n_head=args.heads, vocab_size=args.vocab,
                        n_positions=args.positions, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=0, eos_token_id=0, tie_word_embeddings=True)
    return GPT2LMHeadModel(config)


def rank_main(args):
    import numpy as np
    import torch
    import deepspeed
    import deepspeed.ops

    # DeepSpeed's CPU accelerator JIT-builds a shared-memory allreduce op (minutes on 2 cores) into
    # one cache folder for every release, and 0.19.8 cannot load 0.19.7's build: the collectives
    # go through gloo instead, which is what these tests exercise.
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    with open(args.config) as f:
        ds_config = json.load(f)
    model = gpt2(args)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
    if args.mode == "resume":
        path, _ = engine.load_checkpoint(args.load, tag=args.tag)
        if path is None:
            raise SystemExit(f"DeepSpeed found no checkpoint in {args.load}")
    tokens = np.fromfile(args.tokens, dtype=np.uint16).astype(np.int64)
    seq = args.seq_len
    windows = (len(tokens) - seq - 1) // seq + 1
    sampler = ShardScopeSampler(windows, rank, world, args.seed)
    micro = engine.train_micro_batch_size_per_gpu()
    position = engine.global_samples // world  # this rank's samples so far, in epoch 0
    steps, losses = [], []
    while engine.global_steps < args.steps:
        step_loss = 0.0
        for _ in range(engine.gradient_accumulation_steps()):
            index = [sampler.sample(0, position + i) for i in range(micro)]
            position += micro
            batch = torch.tensor(np.stack([tokens[i * seq:i * seq + seq + 1] for i in index]))
            logits = engine(input_ids=batch[:, :-1]).logits
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            engine.backward(loss)
            engine.step()
            step_loss += loss.item() / engine.gradient_accumulation_steps()
        gathered = [0.0] * world
        torch.distributed.all_gather_object(gathered, step_loss)
        steps.append(engine.global_steps)
        losses.append(gathered)
        if args.mode == "train" and engine.global_steps == args.save_at:
            engine.save_checkpoint(args.save)
    if rank == 0 and args.losses:
        with open(args.losses, "w") as f:
            json.dump({"steps": steps, "losses": losses}, f)
    # Leave together: rank 0 holds the rendezvous store, and a rank still talking to it when it
    # goes can die in teardown ("terminate called without an active exception", seen with 0.19.8).
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args, argv):
    env = dict(os.environ, DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.world), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error")
    procs = []
    for r in range(args.world):
        procs.append(subprocess.Popen([sys.executable, __file__] + argv + ["--as-rank"],
                                      env=dict(env, RANK=str(r), LOCAL_RANK=str(r))))
    codes = [p.wait(timeout=600) for p in procs]
    if any(codes):
        raise SystemExit(f"DeepSpeed ranks exited with {codes}")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["train", "resume"])
    p.add_argument("--config", required=True)
    p.add_argument("--tokens", required=True)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--save-at", type=int, default=0)
    p.add_argument("--save")
    p.add_argument("--load")
    p.add_argument("--tag")
    p.add_argument("--losses")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--positions", type=int, default=1024)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--as-rank", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    if arguments.as_rank:
        rank_main(arguments)
    else:
        launch(arguments, sys.argv[1:])
