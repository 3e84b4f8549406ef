#!/usr/bin/env python3
"""Checkpoints that cross between DeepSpeed (0.19.7 or 0.19.8: this Python's) and ShardScope, at one ZeRO stage (ctest
label `deepspeed`; docs/checkpoints.md, "What crosses"). Both directions, 2 ranks on the CPU, fp32:

  DeepSpeed -> ShardScope  DeepSpeed trains 5 steps and saves at step 3. `shardscope ckpt info`
      describes the tag; `ckpt consolidate` gives exactly DeepSpeed's own
      get_fp32_state_dict_from_zero_checkpoint (tied lm_head left out, as save_pretrained does);
      `train --load` on 2 ranks and on 1 rank has the losses DeepSpeed had at steps 4 and 5.
  ShardScope -> DeepSpeed  ShardScope trains 5 steps and saves at steps 3 and 5. Every file opens
      with torch.load(weights_only=True); zero_to_fp32.py and get_fp32_state_dict_from_zero_checkpoint
      give exactly `ckpt consolidate`'s weights; DeepSpeed's engine.load_checkpoint of step 3
      continues with ShardScope's losses of steps 4 and 5.

Losses must agree to a relative 1e-6 (two implementations of the same fp32 math); weights
exactly. Exit 0 on success, 1 with the first difference, 77 (ctest's skip) without DeepSpeed.
"""
import argparse
import glob
import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = ["--model", "gpt2", "--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "512", "--seq-len", "32"]
TOLERANCE = 1e-6
LOSS_SCALER = "deepspeed.runtime.fp16.loss_scaler.LossScaler"


class Failure(Exception):
    pass



def free_port():
    """A port free now, so parallel ctest runs do not meet on the launcher's default 29500."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])

def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    if result.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def write_inputs(work, stage):
    import numpy as np
    config = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "steps_per_print": 1000,
              "gradient_clipping": 1.0, "zero_optimization": {"stage": stage},
              "optimizer": {"type": "AdamW", "params": {"lr": 0.002, "betas": [0.9, 0.999], "eps": 1e-8,
                                                         "weight_decay": 0.01, "torch_adam": True}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.002,
                                                           "warmup_num_steps": 10}}}
    with open(os.path.join(work, "ds_config.json"), "w") as f:
        json.dump(config, f)
    # Tokens with structure (each one mostly followed by a fixed successor), 64 windows of 33.
    rng = np.random.RandomState(7)
    successor = rng.permutation(512)
    tokens = [rng.randint(512)]
    for _ in range(64 * 32):
        tokens.append(successor[tokens[-1]] if rng.rand() < 0.8 else rng.randint(512))
    np.array(tokens, dtype=np.uint16).tofile(os.path.join(work, "tokens.bin"))


def shardscope_losses(binary, db):
    """{step: [loss of rank 0, rank 1, ...]} from a session file."""
    out = run([binary, "sessions", "export", "--all", "--db", db, "--json", "-"])
    document = json.loads(out)
    per_step = {}
    for session in document["sessions"]:
        for row in session["steps"]:
            per_step.setdefault(row["step"], {})[row["rank"]] = row["loss"]
    return {step: [ranks[r] for r in sorted(ranks)] for step, ranks in per_step.items()}


def expect_close(what, got, expected):
    if len(got) != len(expected):
        raise Failure(f"{what}: {len(got)} ranks' losses against {len(expected)}")
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, expected))
    if worst > TOLERANCE:
        raise Failure(f"{what}: {got} against {expected} (relative difference {worst:.2e} > {TOLERANCE})")
    print(f"ok: {what}: {got} (largest relative difference {worst:.1e})")


def expect_same_weights(what, ours, theirs):
    import torch
    if set(ours) != set(theirs):
        raise Failure(f"{what}: names differ: only ours {sorted(set(ours) - set(theirs))}, "
                      f"only theirs {sorted(set(theirs) - set(ours))}")
    for name in ours:
        if not torch.equal(ours[name], theirs[name].to(ours[name].dtype)):
            diff = (ours[name] - theirs[name]).abs().max().item()
            raise Failure(f"{what}: '{name}' differs (max abs {diff})")
    print(f"ok: {what}: {len(ours)} tensors equal")


def deepspeed_fp32(ckpt, tag, stage):
    """DeepSpeed's own reconstruction of the fp32 weights, tied copies dropped."""
    import torch
    if stage == 0:  # no ZeRO: the module's weights are the fp32 master
        states = torch.load(os.path.join(ckpt, tag, "mp_rank_00_model_states.pt"), weights_only=False)
        sd = dict(states["module"])
    else:
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
        sd = dict(get_fp32_state_dict_from_zero_checkpoint(ckpt, tag=tag))
    sd.pop("lm_head.weight", None)  # tied to transformer.wte.weight
    return sd


def consolidate(binary, ckpt, tag, out):
    from safetensors.torch import load_file
    run([binary, "ckpt", "consolidate", ckpt, out, "--tag", tag])
    return load_file(out)


def deepspeed_to_shardscope(a, work):
    ckpt, losses = os.path.join(work, "ds_ckpt"), os.path.join(work, "ds_losses.json")
    run([sys.executable, os.path.join(HERE, "deepspeed_gpt2.py"), "train", "--config", a.config, "--tokens", a.tokens,
         "--world", "2", "--steps", "5", "--save-at", "3", "--save", ckpt, "--losses", losses])
    with open(losses) as f:
        ds = json.load(f)
    ds_losses = dict(zip(ds["steps"], ds["losses"]))
    info = json.loads(run([a.shardscope, "ckpt", "info", ckpt, "--json"]))
    tag = info["tags"][0]
    if "error" in tag:
        raise Failure(f"ckpt info: {tag['error']}")
    # The DeepSpeed of this Python wrote it (0.19.7 or 0.19.8: the tests run with each, issue 34).
    release = importlib.metadata.version("deepspeed")
    for key, value in [("zero_stage", a.stage), ("world_size", 2), ("ds_version", release), ("global_steps", 3),
                       ("written_by", f"DeepSpeed {release}"), ("precision", "fp32")]:
        if tag[key] != value:
            raise Failure(f"ckpt info: {key} is {tag[key]!r}, expected {value!r}")
    print(f"ok: ckpt info of DeepSpeed's stage-{a.stage} checkpoint: {tag['parameters']} parameters, {tag['optimizer']}")
    expect_same_weights("ckpt consolidate of DeepSpeed's checkpoint",
                        consolidate(a.shardscope, ckpt, "global_step3", os.path.join(work, "ds.safetensors")),
                        deepspeed_fp32(ckpt, "global_step3", a.stage))
    common = ["--config", a.config, *MODEL, "--data", a.tokens, "--steps", "5", "--load", ckpt]
    db2, db1 = os.path.join(work, "resume2.db"), os.path.join(work, "resume1.db")
    run([a.shardscope, "launch", "--master_port", free_port(), "--num_procs", "2", "--session", db2, "--", *common])
    ours = shardscope_losses(a.shardscope, db2)
    for step in (4, 5):
        expect_close(f"train --load of DeepSpeed's checkpoint on 2 ranks, step {step}", ours[step], ds_losses[step])
    run([a.shardscope, "train", "--session", db1, *common])
    ours = shardscope_losses(a.shardscope, db1)
    for step in (4, 5):
        mean = sum(ds_losses[step]) / len(ds_losses[step])
        expect_close(f"train --load of DeepSpeed's checkpoint on 1 rank, step {step}", ours[step], [mean])


def weights_only_loads(ckpt, allowed):
    import torch
    files = sorted(glob.glob(os.path.join(ckpt, "*", "*.pt")))
    refused = []
    for path in files:
        try:
            torch.load(path, weights_only=True)
        except Exception as e:  # noqa: BLE001 - any refusal is the finding
            refused.append((path, str(e).splitlines()[0]))
    for path, reason in refused:
        if os.path.basename(path) not in allowed:
            raise Failure(f"torch.load(weights_only=True) refuses {path}: {reason}")
    return files, refused


def torch_load_first(pattern):
    import torch
    path = sorted(glob.glob(pattern))[0]
    return torch.load(path, weights_only=False)


def shardscope_to_deepspeed(a, work, save_format):
    ckpt, db = os.path.join(work, f"ss_ckpt_{save_format}"), os.path.join(work, f"ss_{save_format}.db")
    # Saved in the layout of the DeepSpeed that loads it (0.19.8 writes no sparse_tensor_module_names).
    release = importlib.metadata.version("deepspeed")
    run([a.shardscope, "launch", "--master_port", free_port(), "--num_procs", "2", "--session", db,
         "--deepspeed-version", release, "--", "--config", a.config, *MODEL,
         "--data", a.tokens, "--steps", "5", "--save", ckpt, "--save-every", "3", "--save-format", save_format])
    model_states = torch_load_first(os.path.join(ckpt, "global_step3", "*model_states.pt"))
    if model_states.get("ds_version") != release or \
            ("sparse_tensor_module_names" in model_states) != (release == "0.19.7"):
        raise Failure(f"ShardScope's --deepspeed-version {release} save is not in {release}'s layout: ds_version "
                      f"{model_states.get('ds_version')!r}, keys {sorted(model_states)}")
    print(f"ok: ShardScope saved DeepSpeed {release}'s layout (ds_version, sparse_tensor_module_names "
          f"{'kept' if release == '0.19.7' else 'left out'})")
    ours = shardscope_losses(a.shardscope, db)
    import torch
    if save_format == "safe":
        files, _ = weights_only_loads(ckpt, allowed=set())
        print(f"ok: torch.load(weights_only=True) opens all {len(files)} files ShardScope wrote")
    else:  # the stage-3 optimizer files hold DeepSpeed's LossScaler: refused without it, read with it
        optim = {os.path.basename(p) for p in glob.glob(os.path.join(ckpt, "*", "*optim_states.pt"))}
        files, refused = weights_only_loads(ckpt, allowed=optim)
        from deepspeed.runtime.fp16.loss_scaler import LossScaler
        with torch.serialization.safe_globals([LossScaler]):
            for path, _ in refused:
                torch.load(path, weights_only=True)
        print(f"ok: --save-format deepspeed: {len(refused)} optimizer files need {LOSS_SCALER} allow-listed, "
              f"the other {len(files) - len(refused)} open as they are")
    theirs = deepspeed_fp32(ckpt, "global_step3", a.stage)
    mine = consolidate(a.shardscope, ckpt, "global_step3", os.path.join(work, f"ss_{save_format}.safetensors"))
    expect_same_weights("DeepSpeed's get_fp32_state_dict_from_zero_checkpoint of ShardScope's checkpoint", mine, theirs)
    if a.stage > 0:
        out = os.path.join(work, f"zero_to_fp32_{save_format}")
        # pytorch_model.bin: with --safe_serialization the script refuses the tied lm_head (for
        # DeepSpeed's own checkpoints as well: safetensors cannot store shared tensors).
        run([sys.executable, "-m", "deepspeed.utils.zero_to_fp32", ckpt, out, "-t", "global_step3"])
        converted = {}
        for f in glob.glob(os.path.join(out, "*.bin")):
            converted.update(torch.load(f, weights_only=True))
        converted.pop("lm_head.weight", None)
        expect_same_weights("zero_to_fp32.py of ShardScope's checkpoint", mine, converted)
    if a.stage == 3 and save_format == "safe":
        return  # DeepSpeed's ZeRO-3 load_checkpoint needs the LossScaler object: --save-format deepspeed
    losses = os.path.join(work, f"ds_resumed_{save_format}.json")
    run([sys.executable, os.path.join(HERE, "deepspeed_gpt2.py"), "resume", "--config", a.config, "--tokens", a.tokens,
         "--world", "2", "--steps", "5", "--load", ckpt, "--tag", "global_step3", "--losses", losses])
    with open(losses) as f:
        ds = json.load(f)
    for step, value in zip(ds["steps"], ds["losses"]):
        expect_close(f"DeepSpeed's load_checkpoint of ShardScope's checkpoint ({save_format}), step {step}", value, ours[step])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shardscope", required=True)
    p.add_argument("--stage", type=int, required=True, choices=[0, 1, 2, 3])
    p.add_argument("--keep", help="work in this folder and keep it")
    a = p.parse_args()
    try:
        import deepspeed  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"skipped: DeepSpeed and transformers are not installed in {sys.executable} ({e}); "
              "scripts/install_deps.sh installs them", flush=True)
        return 77
    work = a.keep or tempfile.mkdtemp(prefix=f"ckpt_crossover_{a.stage}_")
    os.makedirs(work, exist_ok=True)
    a.config, a.tokens = os.path.join(work, "ds_config.json"), os.path.join(work, "tokens.bin")
    try:
        write_inputs(work, a.stage)
        deepspeed_to_shardscope(a, work)
        shardscope_to_deepspeed(a, work, "safe")
        if a.stage == 3:
            shardscope_to_deepspeed(a, work, "deepspeed")
    except Failure as e:
        print(f"FAILED: {e}", flush=True)
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"OK: stage-{a.stage} checkpoints cross between DeepSpeed {importlib.metadata.version('deepspeed')} and "
          "ShardScope", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
