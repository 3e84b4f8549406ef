"""What the real DeepSpeed of this Python says of each config: its parse (DeepSpeedConfig) and, when
that accepts, deepspeed.initialize on a two-layer model with one training step on the CPU
(DS_ACCELERATOR=cpu, one gloo rank). Prints one JSON object on the line that starts "VERDICTS ":
{"version": ..., "verdicts": {path: {"ok": bool, "stage": "parse"|"engine", "error": "Type: text"}}}.
Run by deepspeed_agreement.py once per installed DeepSpeed: two DeepSpeeds cannot share a process.
Usage: deepspeed_verdicts.py CONFIG.json... | deepspeed_verdicts.py --constraints (the ZeRO
models' bounds, on the line that starts "CONSTRAINTS ")
"""
import copy
import json
import os
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")
for key, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29600 + os.getpid() % 300), "RANK": "0",
                   "WORLD_SIZE": "1", "LOCAL_RANK": "0"}.items():
    os.environ.setdefault(key, value)
try:
    import torch
    import deepspeed
    import deepspeed.ops
    import deepspeed.runtime.config as ds_config
except ImportError as e:
    print(f"SKIP: deepspeed is not importable here ({e})", file=sys.stderr)
    sys.exit(77)
# The CPU accelerator JIT-builds a shared-memory allreduce op at init_distributed (minutes on 2
# cores) into one cache folder for both releases, each rebuilding over the other's: the verdicts
# do not depend on it, and gloo does the one rank's collectives.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False

import logging
logging.getLogger("DeepSpeed").setLevel(logging.ERROR)


def error_text(e):
    return f"{type(e).__name__}: {str(e).strip()}"


def parse(config):
    try:
        ds_config.DeepSpeedConfig(copy.deepcopy(config))
        return None
    except Exception as e:  # DeepSpeedConfigError, AssertionError, TypeError, pydantic's ValidationError
        return error_text(e)


def engine(config):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    try:
        eng, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                            config=copy.deepcopy(config))
        dtype = next(eng.module.parameters()).dtype  # bf16 and fp16 configs cast the model
        loss = eng(torch.randn(eng.train_micro_batch_size_per_gpu(), 8, dtype=dtype)).float().pow(2).mean()
        eng.backward(loss)
        eng.step()
        return None
    except Exception as e:
        return error_text(e)


def constraints():
    """Every bound of the ZeRO pydantic models, read from the models themselves:
    {"zero_optimization.reduce_bucket_size": {"type": "int", "gt": 0}, ...}."""
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from deepspeed.runtime.zero.offload_config import (DeepSpeedZeroOffloadOptimizerConfig,
                                                       DeepSpeedZeroOffloadParamConfig)
    out = {}
    for prefix, model in (("zero_optimization", DeepSpeedZeroConfig),
                          ("zero_optimization.offload_param", DeepSpeedZeroOffloadParamConfig),
                          ("zero_optimization.offload_optimizer", DeepSpeedZeroOffloadOptimizerConfig)):
        for name, field in model.model_fields.items():
            bounds = {}
            for meta in field.metadata:
                for kind in ("gt", "ge", "lt", "le"):
                    if getattr(meta, kind, None) is not None:
                        bounds[kind] = getattr(meta, kind)
            if bounds and field.annotation in (int, float):
                out[f"{prefix}.{field.alias or name}"] = {"type": field.annotation.__name__, **bounds}
    return out


def main():
    if sys.argv[1:2] == ["--constraints"]:
        print("CONSTRAINTS " + json.dumps(constraints()), flush=True)
        return
    verdicts = {}
    for path in sys.argv[1:]:
        config = json.load(open(path))
        error = parse(config)
        stage = "parse"
        if error is None:
            error, stage = engine(config), "engine"
        verdicts[path] = {"ok": error is None, "stage": stage, "error": error}
    # DeepSpeed prints its own lines to stdout (op builds, ranks): the result is the marked line.
    print("VERDICTS " + json.dumps({"version": deepspeed.__version__, "verdicts": verdicts}), flush=True)


if __name__ == "__main__":
    main()
