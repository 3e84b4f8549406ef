"""`shardscope validate --deepspeed-version V` against the real DeepSpeed V, for 0.19.7 and 0.19.8.

Each DeepSpeed runs in its own Python (two venvs over the one torch, scripts/install_test_deps.sh), through
deepspeed_verdicts.py: its parse and, when that accepts, deepspeed.initialize and one step on the
CPU. Compared, per version, on:
- the fixture corpus tests/configs/data/versions/*.json and the configs of tests/configs/data: the
  verdict (ShardScope has an error exactly when DeepSpeed fails), and for a parse-time failure
  DeepSpeed's own words (its DeepSpeedConfigError or TypeError text, pydantic's "Input should be
  ..." line) inside one of ShardScope's errors;
- verdicts.json beside the corpus, which the C++ tests read: it must say what DeepSpeed says;
- every bound of the ZeRO pydantic models (read from the installed models): the value at the bound
  and just beyond it;
- the rules ShardScope says it applied (deepspeed_version in its JSON).
Usage: deepspeed_agreement.py SHARDSCOPE REPO PYTHON_0_19_7 PYTHON_0_19_8
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = {"passed": 0, "failed": 0}


def check(ok, what):
    CHECKS["passed" if ok else "failed"] += 1
    if not ok:
        print("FAIL  " + what)


def marked_line(text, marker):
    for line in text.splitlines():
        if line.startswith(marker + " "):
            return json.loads(line[len(marker) + 1:])
    return None


def run_deepspeed(python, args):
    # Each release JIT-builds its ops (fused_adam) into a cache folder of its own: in one folder the
    # two would rebuild over each other, minutes each on 2 cores.
    venv = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(python))))
    extensions = os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions", "shardscope-" + venv)
    env = dict(os.environ, DS_ACCELERATOR="cpu", TORCH_EXTENSIONS_DIR=extensions)
    done = subprocess.run([python, os.path.join(HERE, "deepspeed_verdicts.py"), *args], capture_output=True,
                          text=True, env=env, timeout=1200)
    if done.returncode == 77:
        print(f"SKIP: {python} has no DeepSpeed ({done.stderr.strip()}); scripts/install_test_deps.sh installs both")
        sys.exit(77)
    return done


def deepspeed_verdicts(python, paths):
    done = run_deepspeed(python, paths)
    result = marked_line(done.stdout, "VERDICTS")
    if result is None:
        sys.exit(f"deepspeed_verdicts.py under {python} printed no verdicts (exit {done.returncode}):\n"
                 f"{done.stderr[-3000:]}")
    return result


def shardscope(cli, path, version):
    done = subprocess.run([cli, "validate", path, "--deepspeed-version", version, "--world-size", "1", "--json"],
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"shardscope validate {path} exited {done.returncode}: {done.stderr}")
    doc = json.loads(done.stdout)
    check(doc.get("deepspeed_version") == version, f"{path}: ShardScope says it applied "
          f"{doc.get('deepspeed_version')!r} rules, asked for {version}")
    return doc["files"][0]


def deepspeed_words(error):
    """The part of DeepSpeed's failure ShardScope must quote, or None when only the verdict counts."""
    kind, _, text = error.partition(": ")
    if kind in ("DeepSpeedConfigError", "TypeError"):
        return error if kind == "TypeError" else text.strip()
    if kind == "ValidationError":
        for line in text.splitlines():
            if line.strip().startswith("Input should be"):
                return line.strip().split(" [type=")[0]
    return None


def compare(label, ours, theirs):
    errors = [d["message"] for d in ours["diagnostics"] if d["severity"] == "error"]
    check(ours["ok"] == theirs["ok"], f"{label}: DeepSpeed {'accepts' if theirs['ok'] else 'fails at ' + theirs['stage'] + ': ' + theirs['error'][:300]}, "
          f"ShardScope ok={ours['ok']} {errors}")
    if theirs["ok"] or theirs["stage"] != "parse" or ours["ok"]:
        return
    words = deepspeed_words(theirs["error"])
    if words:
        check(any(words in e for e in errors), f"{label}: DeepSpeed's words {words!r} are in none of ShardScope's "
              f"errors {errors}")


def corpus(repo):
    paths = sorted(p for p in glob.glob(os.path.join(repo, "tests/configs/data/versions/*.json"))
                   if not p.endswith("/verdicts.json"))
    for path in sorted(glob.glob(os.path.join(repo, "tests/configs/data/*.json"))):
        try:
            config = json.load(open(path))
        except ValueError:
            continue  # DeepSpeed reads configs with json/hjson; syntax errors are the parser's tests
        if isinstance(config, dict) and "cases" not in config:
            paths.append(path)
    return paths


def sweep_configs(bounds, tmp, version):
    """Configs with one bounded field at its bound and just beyond it."""
    made = []
    for path, bound in sorted(bounds.items()):
        step = 1 if bound["type"] == "int" else 0.5
        values = []
        if "ge" in bound:
            values += [bound["ge"], bound["ge"] - step]
        if "gt" in bound:
            values += [bound["gt"], bound["gt"] + step]
        if "le" in bound:
            values += [bound["le"], bound["le"] + step]
        for value in values:
            config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
                      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}, "zero_optimization": {"stage": 2}}
            node, keys = config, path.split(".")
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = value
            file = os.path.join(tmp, f"{version}-{path}={value}.json")
            json.dump(config, open(file, "w"))
            made.append(file)
    return made


def check_version(cli, repo, version, python, tmp):
    paths = corpus(repo)
    bounds = marked_line(run_deepspeed(python, ["--constraints"]).stdout, "CONSTRAINTS") or {}
    check(len(bounds) >= 10, f"{version}: read the ZeRO models' bounds ({len(bounds)})")
    sweep = sweep_configs(bounds, tmp, version)
    result = deepspeed_verdicts(python, paths + sweep)
    check(result["version"] == version, f"{python} has DeepSpeed {result['version']}, expected {version}")
    expected = json.load(open(os.path.join(repo, "tests/configs/data/versions/verdicts.json")))
    for path in paths + sweep:
        theirs = result["verdicts"][path]
        compare(f"{version} {os.path.relpath(path, repo) if path.startswith(repo) else os.path.basename(path)}",
                shardscope(cli, path, version), theirs)
        name = os.path.basename(path)
        if path in paths and "/versions/" in path:
            recorded = expected.get(name, {}).get(version)
            check(recorded == ("ok" if theirs["ok"] else "error"),
                  f"{version} {name}: verdicts.json says {recorded!r}, DeepSpeed {'accepts' if theirs['ok'] else 'fails'}")


def main():
    cli, repo, python_0197, python_0198 = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(check_version, cli, repo, v, p, tmp) for v, p in (("0.19.7", python_0197),
                                                                                ("0.19.8", python_0198))]
        for job in jobs:
            job.result()
    print(f"{CHECKS['passed']} passed, {CHECKS['failed']} failed")
    sys.exit(1 if CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
