#!/usr/bin/env python3
"""Regenerates tests/checkpoints/data/deepspeed/: checkpoints DeepSpeed 0.19.7 wrote (2 CPU
ranks, a GPT-2 of 1 layer, hidden 5 (495 parameters: ZeRO pads), vocabulary 16; 2 steps; stages 0-3) and expected.json,
DeepSpeed's own reconstruction of their fp32 weights (get_fp32_state_dict_from_zero_checkpoint;
the module's weights at stage 0). The C++ tests read them without Python; the fuzz target uses
them as seeds. Run with the venv's python: ~/.cache/shardscope/venv/bin/python make_fixtures.py
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "deepspeed")
SHAPE = ["--layers", "1", "--hidden", "5", "--heads", "1", "--vocab", "16", "--positions", "8", "--seq-len", "8"]


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    tokens = os.path.join(OUT, "tokens.bin")
    np.random.RandomState(3).randint(16, size=8 * 16 + 1).astype(np.uint16).tofile(tokens)
    expected = {}
    for stage in range(4):
        config = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "steps_per_print": 1000,
                  "zero_optimization": {"stage": stage},
                  "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01, "torch_adam": True}}}
        config_path = os.path.join(OUT, f"ds_config_stage{stage}.json")
        with open(config_path, "w") as f:
            json.dump(config, f)
        ckpt = os.path.join(OUT, f"stage{stage}")
        subprocess.run([sys.executable, os.path.join(HERE, "deepspeed_gpt2.py"), "train", "--config", config_path,
                        "--tokens", tokens, "--world", "2", "--steps", "2", "--save-at", "2", "--save", ckpt, *SHAPE],
                       check=True)
        for script in ("zero_to_fp32.py", "zero_to_torch.py"):  # DeepSpeed's copies of its scripts
            if os.path.exists(os.path.join(ckpt, script)):
                os.remove(os.path.join(ckpt, script))
        if stage == 0:
            sd = torch.load(os.path.join(ckpt, "global_step2", "mp_rank_00_model_states.pt"), weights_only=False)["module"]
        else:
            from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
            sd = get_fp32_state_dict_from_zero_checkpoint(ckpt)
        expected[f"stage{stage}"] = {name: t.flatten().tolist() for name, t in sd.items() if name != "lm_head.weight"}
    os.remove(tokens)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
