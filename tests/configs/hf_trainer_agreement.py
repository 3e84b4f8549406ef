"""`shardscope validate --hf-trainer` against the real transformers and DeepSpeed, computed here.

For every config in the repository that holds "auto" (configs/templates, tests/*/data, resources),
at world sizes 1, 2 and 8, and for several TrainingArguments sets (one with every "auto" turned
into a value the Trainer must report as a mismatch), this runs transformers'
HfTrainerDeepSpeedConfig (trainer_config_process, then trainer_config_finalize) and DeepSpeed's
DeepSpeedConfig on the result, runs ShardScope on the same file, and compares: the filled values
(with their Python types), the error transformers raises (its exact text), and whether DeepSpeed
accepts the filled config with the same batch sizes. Usage: hf_trainer_agreement.py SHARDSCOPE REPO
"""
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

os.environ.setdefault("DS_ACCELERATOR", "cpu")
try:
    import deepspeed.runtime.config as ds_config
    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
except ImportError as e:
    print(f"SKIP: transformers/deepspeed/accelerate are not importable here ({e}); scripts/install_test_deps.sh installs them")
    sys.exit(77)

CHECKS = {"passed": 0, "failed": 0}
ARGUMENT_SETS = [
    {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "learning_rate": 3e-5, "weight_decay": 0.01,
     "adam_beta1": 0.9, "adam_beta2": 0.95, "adam_epsilon": 1e-6, "max_grad_norm": 0.5, "fp16": True, "bf16": False,
     "warmup_steps": 0.1, "max_steps": 120, "hidden_size": 768},
    {"max_steps": 50},  # transformers' defaults otherwise, and no hidden size
]
DEFAULTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "learning_rate": 5e-5,
            "weight_decay": 0.0, "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_epsilon": 1e-8, "max_grad_norm": 1.0,
            "fp16": False, "bf16": False, "warmup_steps": 0}


def check(ok, what):
    CHECKS["passed" if ok else "failed"] += 1
    if not ok:
        print("FAIL  " + what)


def has_auto(value):
    if isinstance(value, dict):
        return any(has_auto(v) for v in value.values())
    if isinstance(value, list):
        return any(has_auto(v) for v in value)
    return value == "auto"


def auto_configs(repo):
    patterns = ["configs/templates/*.json", "tests/*/data/*.json", "resources/**/*.json"]
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(repo, pattern), recursive=True)):
            try:
                config = json.load(open(path))
            except ValueError:
                continue  # transformers reads configs with json.load: hjson-only files never reach it
            if isinstance(config, dict) and has_auto(config):
                yield path, config


def leaves(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else k)
    else:
        yield prefix, value


def transformers_fill(config, args, world_size):
    """What the Trainer does to the config: (filled dict, the ValueError text or None)."""
    a = SimpleNamespace(**{**DEFAULTS, **{k: v for k, v in args.items() if k not in ("max_steps", "hidden_size")}},
                        world_size=world_size, fp16_full_eval=False, bf16_full_eval=False, save_on_each_node=False)
    a.get_warmup_steps = lambda n: TrainingArguments.get_warmup_steps(a, n)
    hf = HfTrainerDeepSpeedConfig(copy.deepcopy(config))
    hf.trainer_config_process(a)
    model_config = SimpleNamespace(hidden_size=args["hidden_size"]) if "hidden_size" in args else SimpleNamespace()
    try:
        hf.trainer_config_finalize(a, SimpleNamespace(config=model_config), args["max_steps"])
        return hf.config, None
    except ValueError as e:
        return hf.config, str(e)


def deepspeed_accepts(config, world_size):
    ds_config.dist.get_world_size = lambda *a, **k: world_size
    ds_config.dist.get_rank = lambda *a, **k: 0
    try:
        c = ds_config.DeepSpeedConfig(copy.deepcopy(config))
        return True, (c.train_batch_size, c.train_micro_batch_size_per_gpu, c.gradient_accumulation_steps)
    except Exception as e:  # DeepSpeed raises AssertionError, ValueError, pydantic's ValidationError
        return False, str(e)


def shardscope_fill(cli, path, args, world_size):
    spec = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items())
    done = subprocess.run([cli, "validate", path, "--world-size", str(world_size), "--hf-trainer", spec, "--json",
                           "--resolved"], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"shardscope validate exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)["files"][0]


def mismatching_variant(config, filled):
    """Every key the Trainer filled, written with a value it must report instead of "auto"."""
    variant = copy.deepcopy(config)
    for key, value in leaves(config):
        if value != "auto":
            continue
        parts, node, new = key.split("."), variant, None
        for k in parts[:-1]:
            node = node[k]
        got = filled
        for k in parts:
            got = got[k]
        if isinstance(got, bool):
            new = not got
        elif isinstance(got, int):
            new = got * 2 + 1
        elif isinstance(got, float):
            new = got * 10 + 1.5
        elif isinstance(got, list):
            new = [x * 0.5 for x in got]
        if new is not None:
            node[parts[-1]] = new
    return variant


def compare_one(cli, name, path, config, args, world_size):
    label = f"{name} world {world_size} args {sorted(args)}"
    expected, error = transformers_fill(config, args, world_size)
    ours = shardscope_fill(cli, path, args, world_size)
    report = ours.get("hf_trainer", {})
    check(report.get("error") == error, f"{label}: transformers raised {error!r}, ShardScope says {report.get('error')!r}")
    originals = dict(leaves(config))
    filled = {k: v for k, v in leaves(expected) if originals.get(k) == "auto" and v != "auto"}
    for key, value in filled.items():
        got = report.get("filled", {}).get(key)
        check(type(got) is type(value) and got == value, f"{label}: {key} filled {value!r}, ShardScope {got!r}")
    check(set(report.get("filled", {})) == set(filled), f"{label}: the same keys filled "
          f"({sorted(set(report.get('filled', {})) ^ set(filled))} differ)")
    if error is not None:
        check(not ours["ok"], f"{label}: transformers raises, so ShardScope must report an error")
        return expected
    accepted, detail = deepspeed_accepts(expected, world_size)
    check(ours["ok"] == accepted, f"{label}: DeepSpeedConfig {'accepts' if accepted else 'rejects: ' + detail}, "
          f"ShardScope ok={ours['ok']}: {[d['message'] for d in ours['diagnostics'] if d['severity'] == 'error']}")
    if accepted:
        resolved = {r["path"]: r["value"] for r in ours["resolved"]}
        batch = (resolved.get("train_batch_size"), resolved.get("train_micro_batch_size_per_gpu"),
                 resolved.get("gradient_accumulation_steps"))
        check(batch == detail, f"{label}: DeepSpeed's batch sizes {detail}, ShardScope {batch}")
    return expected


def main():
    cli, repo = sys.argv[1:3]
    files = list(auto_configs(repo))
    check(len(files) >= 2, f"found the repository's \"auto\" configs ({[os.path.relpath(p, repo) for p, _ in files]})")
    with tempfile.TemporaryDirectory() as tmp:
        for path, config in files:
            name = os.path.relpath(path, repo)
            for world_size in (1, 2, 8):
                for args in ARGUMENT_SETS:
                    filled = compare_one(cli, name, path, config, args, world_size)
                variant = mismatching_variant(config, filled)
                variant_path = os.path.join(tmp, os.path.basename(path))
                json.dump(variant, open(variant_path, "w"), indent=2)
                compare_one(cli, name + " (mismatching)", variant_path, variant, ARGUMENT_SETS[0], world_size)
    print(f"{CHECKS['passed']} passed, {CHECKS['failed']} failed")
    sys.exit(1 if CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
