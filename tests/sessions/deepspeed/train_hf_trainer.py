"""A tiny Hugging Face Trainer + DeepSpeed script for ShardScope's interop tests (issue 34).

A 2-layer GPT-2 built from a config (nothing downloaded) trains on synthetic tokens on the CPU
(DS_ACCELERATOR=cpu) with an "auto" DeepSpeed config the Trainer fills, logging every step
(logging_steps=1) to the console and TensorBoard, and saving trainer_state.json at the end.
"""
import argparse

import torch
import deepspeed.ops
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

# DeepSpeed's CPU accelerator JIT-builds a shared-memory allreduce op (minutes on 2 cores); without
# it the collectives go through gloo.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        x = torch.randint(0, 256, (32,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "labels": x}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deepspeed", default=None)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--output_dir", default="out")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64,
                                       bos_token_id=0, eos_token_id=0))
    training = TrainingArguments(output_dir=args.output_dir, max_steps=args.steps, per_device_train_batch_size=4,
                                 logging_steps=1, learning_rate=1e-3, warmup_steps=4, save_strategy="no",
                                 report_to=["tensorboard"],
                                 deepspeed=args.deepspeed)
    trainer = Trainer(model=model, args=training, train_dataset=Tokens())
    trainer.train()
    trainer.save_state()


if __name__ == "__main__":
    main()
