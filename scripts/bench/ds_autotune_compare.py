"""DeepSpeed 0.19.7's own autotuner (`deepspeed --autotuning tune|run`) over ds_autotune_train.py,
then the config it chose measured standalone (ds_autotune_train.py --measure-steps), for issue 29.
scripts/gpu_ds_autotune.sh calls it on the GPU machine; read that script's header for the space.

What it does:
 1. writes the autotuner's config: the base ds.json with "train_micro_batch_size_per_gpu" a list
    (DeepSpeed then tries exactly those micro-batches; max x gradient_accumulation_steps is the fixed
    batch per GPU, so smaller ones run with more accumulation steps), "zero_optimization.stage" a
    list (the stages it tunes), and an "autotuning" block (fast mode, metric, profile window,
    results_dir/exps_dir in --work);
 2. puts two stand-ins first on PATH (both in --work/bin): `pdsh`, which the scheduler's clean_up
    calls as `pdsh -f 1024 -w HOSTS pkill -f EXP_NAME` after every experiment and which the GPU
    machine lacks: it runs the command here when every host is this machine, and returns 0 as pdsh
    does without -S; and `deepspeed` (deepspeed.launcher.runner.main on --python), which the
    scheduler starts each experiment with, so every experiment runs on the same Python;
 3. runs the autotuner in a session of its own with a time limit: at the limit the whole process
    group (autotuner, launcher, experiment) gets SIGTERM, then SIGKILL 15 s later; what finished
    stays on disk and is reported;
 4. reads results_dir: each experiment's exp.json, ds_config.json, metrics.json (DeepSpeed's
    engine writes it after end_profile_step: "throughput" is train_batch_size / latency in
    samples/s, "latency" the trimmed mean (10 %) of the forward + backward + step timers of the
    profiled steps times gradient_accumulation_steps, in microseconds), stderr.log (DeepSpeed calls
    an experiment failed when a line has "error" in it: utils.search_error), summary.txt and
    ds_config_optimal.json; when the autotuner did not finish, the best experiment with metrics is
    taken and marked as such;
 5. measures the chosen config with ds_autotune_train.py --measure-steps (its autotuning block
    dropped), writes --archive/ds-autotune.txt and ds-autotune.json and copies the logs that matter
    into --logs/ds-autotune/.
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "ds_autotune_train.py")

# The base config of scripts/gpu_tune_compare.sh (what `shardscope tune` gets there).
BASE_CONFIG = {"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 100,
               "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
               "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}

# The autotuner's log lines that say what it tuned, skipped and chose.
DECISIONS = (r"parameters\.|Memory per GPU|activation memory|User-defined zero stages|might be runable|"
             r"not runable|No need to tune|calculated_max_micro_batch_size|tuning_micro_batch_sizes =|"
             r"is the optimal setup|No optimal setup|Tuning completed|Fast mode")

PDSH_SHIM = r"""#!/usr/bin/env bash
# pdsh stand-in for DeepSpeed's autotuner on one machine (written by scripts/bench/ds_autotune_compare.py).
# The autotuner's scheduler (deepspeed/autotuning/scheduler.py, clean_up) runs
#   pdsh -f 1024 -w HOST[,HOST...] pkill -f EXP_NAME
# after every experiment. This runs the command once, here, when every host is this machine, and
# refuses otherwise. Exit status as pdsh's without -S: 0 once the command ran, the command's with -S.
# The command runs from `bash -c` with the words in the environment, not on its command line, so
# that `pkill -f EXP_NAME` does not match (and kill) this process.
hosts="" want_status=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -w) hosts=$2; shift 2 ;;
    -f|-R|-l|-u|-t) shift 2 ;;
    -S) want_status=1; shift ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "pdsh (shim): no command" >&2; exit 1; }
for host in ${hosts//,/ }; do
  case "$host" in
    localhost|127.0.0.1|"$(hostname)"|"$(hostname -s)") ;;
    *) echo "pdsh (shim): $host is not this machine; the shim runs commands here only" >&2; exit 1 ;;
  esac
done
echo "pdsh (shim) on ${hosts:-localhost}: $*" >&2
PDSH_SHIM_CMD=$(printf '%q ' "$@") PDSH_SHIM_S=$want_status
export PDSH_SHIM_CMD PDSH_SHIM_S
exec bash -c 'eval "$PDSH_SHIM_CMD"; rc=$?; [[ $PDSH_SHIM_S == 1 ]] && exit $rc; exit 0'
"""

DEEPSPEED_SHIM = """#!{python}
# `deepspeed` for DeepSpeed's autotuner's experiments (written by scripts/bench/ds_autotune_compare.py):
# the launcher of the installed DeepSpeed on this Python, whatever `deepspeed` the PATH has.
import sys
from deepspeed.launcher.runner import main
sys.argv[0] = "deepspeed"
sys.exit(main())
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def kill_group(proc, grace=15):
    """SIGTERM to the process group of `proc` (its own session), SIGKILL after `grace` seconds."""
    for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass
        # the leader may be gone while the group lives on: probe the group itself
        deadline = time.time() + wait_s
        while time.time() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.5)


def run_limited(cmd, limit, log_path, env, cwd):
    """Runs cmd in a new session with its output in log_path; returns (rc or None on timeout, seconds)."""
    start = time.time()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=max(1, limit))
        except subprocess.TimeoutExpired:
            rc = None
        seconds = time.time() - start
        kill_group(proc, grace=15 if rc is None else 2)  # strays of a finished run too
    return rc, seconds


def read_json(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    # metrics.json / model_info.json are print_json_dist output: one JSON object per line, appended
    for line in reversed([line for line in text.splitlines() if line.strip()]):
        try:
            return json.loads(line)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except ValueError:
        return None


def search_error(path):
    """deepspeed.autotuning.utils.search_error: the rest of the first line with Error/error/ERROR."""
    if not os.path.exists(path):
        return "stderr.log does not exist"
    with open(path, errors="replace") as f:
        for line in f:
            for s in ("Error", "error", "ERROR"):
                idx = line.find(s)
                if idx != -1:
                    return line[idx + len(s):].lstrip(": ").strip()
    return None


def tail(path, lines):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def experiments(results_dir):
    rows = []
    if not os.path.isdir(results_dir):
        return rows
    for name in sorted(os.listdir(results_dir)):
        d = os.path.join(results_dir, name)
        exp = read_json(os.path.join(d, "exp.json"))
        if not os.path.isdir(d) or exp is None:
            continue
        cfg = exp.get("ds_config", {})
        zero = cfg.get("zero_optimization", {}) or {}
        metrics = read_json(os.path.join(d, "metrics.json"))
        stderr = os.path.join(d, "stderr.log")
        ended = [os.path.getmtime(p) for p in (stderr, os.path.join(d, "stdout.log"), os.path.join(d, "metrics.json"),
                                               os.path.join(d, "model_info.json")) if os.path.exists(p)]
        started = os.path.getmtime(os.path.join(d, "exp.json"))
        rows.append({"name": exp.get("name", name), "exp_id": exp.get("exp_id"), "dir": d,
                     "stage": zero.get("stage"), "micro_batch": cfg.get("train_micro_batch_size_per_gpu"),
                     "gas": cfg.get("gradient_accumulation_steps"), "train_batch": cfg.get("train_batch_size"),
                     "metrics": metrics, "ds_error": search_error(stderr),
                     "seconds_approx": (max(ended) - started) if ended else None,
                     "model_info": read_json(os.path.join(d, "model_info.json"))})
    rows.sort(key=lambda r: (r["exp_id"] is None, r["exp_id"] or 0))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="a fresh folder: config, results_dir, exps_dir, the shims")
    p.add_argument("--archive", required=True, help="where ds-autotune.txt and ds-autotune.json go")
    p.add_argument("--logs", required=True, help="the logs go to LOGS/ds-autotune/")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--limit", type=float, default=300, help="seconds for the autotuner (then its group is killed)")
    p.add_argument("--measure-limit", type=float, default=150, help="seconds for the standalone measurement")
    p.add_argument("--measure-steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--base-config", help="the base ds.json (default: gpu_tune_compare.sh's)")
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--micro-batches", default="8,16")
    p.add_argument("--profile-steps", default="3:8", help="START:END, the autotuning block's start/end_profile_step")
    p.add_argument("--mode", choices=("tune", "run"), default="tune",
                   help="--autotuning MODE; run also relaunches the winner's command after tuning (with its "
                        "autotuning block, so it profiles again and exits): one experiment more")
    p.add_argument("--num-gpus", type=int, default=1)
    p.add_argument("train_args", nargs=argparse.REMAINDER, help="-- then the shape flags of ds_autotune_train.py")
    a = p.parse_args()
    train_args = a.train_args[1:] if a.train_args[:1] == ["--"] else a.train_args

    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    logs = os.path.join(os.path.abspath(a.logs), "ds-autotune")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(a.archive, exist_ok=True)
    results_dir, exps_dir = os.path.join(work, "results"), os.path.join(work, "exps")
    start_step, end_step = (int(x) for x in a.profile_steps.split(":"))
    stages = [int(s) for s in a.stages.split(",")]
    micro_batches = [int(m) for m in a.micro_batches.split(",")]

    base = BASE_CONFIG
    if a.base_config:
        with open(a.base_config) as f:
            base = json.load(f)
    config = json.loads(json.dumps(base))
    config["train_micro_batch_size_per_gpu"] = micro_batches
    config.pop("train_batch_size", None)
    config["zero_optimization"] = dict(config.get("zero_optimization") or {}, stage=stages)
    config["autotuning"] = {"enabled": True, "fast": True, "metric": "throughput",
                            "start_profile_step": start_step, "end_profile_step": end_step,
                            "results_dir": results_dir, "exps_dir": exps_dir, "overwrite": True}
    config_path = os.path.join(work, "ds_autotune.json")
    write(config_path, json.dumps(config, indent=1) + "\n")

    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    write(os.path.join(bin_dir, "pdsh"), PDSH_SHIM, 0o755)
    write(os.path.join(bin_dir, "deepspeed"), DEEPSPEED_SHIM.format(python=a.python), 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), PYTHONUNBUFFERED="1")

    cmd = [os.path.join(bin_dir, "deepspeed"), "--autotuning", a.mode, "--num_gpus", str(a.num_gpus),
           "--master_port", str(free_port()), TRAIN, *train_args, "--deepspeed_config", config_path]
    print("autotuner:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    at_log = os.path.join(logs, "autotuner.log")
    rc, tune_s = run_limited(cmd, a.limit, at_log, env, work)
    timed_out = rc is None
    print(f"autotuner: {'killed at the time limit' if timed_out else f'rc={rc}'} after {tune_s:.1f} s", flush=True)

    rows = experiments(results_dir)
    summary_txt = tail(os.path.join(results_dir, "summary.txt"), 100)
    ds_tuning = re.search(r"Tuning completed in ([0-9:.]+)\. Total number of experiments: (\d+)", summary_txt)
    optimal = read_json(os.path.join(results_dir, "ds_config_optimal.json"))
    tuned = [r for r in rows if r["name"] != "profile_model_info"]
    with_metrics = [r for r in tuned if r["metrics"] and "throughput" in r["metrics"]]
    chosen, chosen_by = None, None
    if optimal is not None:
        chosen_by = "the autotuner (results_dir/ds_config_optimal.json)"
        for r in with_metrics:  # ds_config_optimal.json is that experiment's ds_config less autotuning
            cfg = read_json(os.path.join(r["dir"], "ds_config.json")) or {}
            cfg.pop("autotuning", None)
            if cfg == optimal:
                chosen = r
    elif with_metrics:
        chosen = max(with_metrics, key=lambda r: r["metrics"]["throughput"])
        chosen_by = ("the best throughput among the experiments that finished (the autotuner "
                     + ("was killed at the time limit" if timed_out else f"exited {rc} without ds_config_optimal.json")
                     + ")")
        optimal = read_json(os.path.join(chosen["dir"], "ds_config.json")) or {}
        optimal.pop("autotuning", None)

    seq_len = 1024
    if "--seq-len" in train_args:
        seq_len = int(train_args[train_args.index("--seq-len") + 1])
    measure, measure_note = None, "no config chosen: nothing measured"
    if optimal is not None:
        chosen_path = os.path.join(work, "ds_config_chosen.json")
        write(chosen_path, json.dumps(optimal, indent=1) + "\n")
        measure_json = os.path.join(work, "measure.json")
        mcmd = [a.python, TRAIN, *train_args, "--deepspeed_config", chosen_path, "--measure-steps",
                str(a.measure_steps), "--warmup", str(a.warmup), "--json", measure_json]
        menv = dict(env, MASTER_PORT=str(free_port()))
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            menv.pop(k, None)
        print("measure:", " ".join(shlex.quote(c) for c in mcmd), flush=True)
        mrc, measure_s = run_limited(mcmd, a.measure_limit, os.path.join(logs, "measure.log"), menv, work)
        measure = (read_json(measure_json) or {}).get("ds_autotune_measure")
        measure_note = (f"rc={mrc}" if mrc is not None else "killed at the time limit") + f" after {measure_s:.1f} s"
        print(f"measure: {measure_note}", flush=True)

    # the logs that matter
    for name in ("summary.txt", "ds_config_optimal.json", "cmd_optimal.txt"):
        src = os.path.join(results_dir, name)
        if os.path.exists(src):
            write(os.path.join(logs, name), tail(src, 10**6))
    write(os.path.join(logs, "ds_autotune.json"), tail(config_path, 10**6))
    for r in rows:
        dst = os.path.join(logs, r["name"])
        os.makedirs(dst, exist_ok=True)
        for name in ("ds_config.json", "metrics.json", "model_info.json", "cmd.txt"):
            src = os.path.join(r["dir"], name)
            if os.path.exists(src):
                write(os.path.join(dst, name), tail(src, 10**6))
        for name in ("stdout.log", "stderr.log"):
            write(os.path.join(dst, name), tail(os.path.join(r["dir"], name), 150))

    def tokens(r):
        m = r["metrics"] or {}
        return m["throughput"] * seq_len if "throughput" in m else None

    lines = []
    lines.append("DeepSpeed's autotuner beside `shardscope tune` (issue 29): deepspeed --autotuning "
                 f"{a.mode} --num_gpus {a.num_gpus}, fast mode, metric throughput, profile steps "
                 f"{start_step}:{end_step}")
    lines.append(f"space given: zero_optimization.stage {stages} x train_micro_batch_size_per_gpu "
                 f"{micro_batches} (fixed batch per GPU {max(micro_batches)}: smaller micro-batches "
                 "run with more accumulation steps); not expressible: activation checkpointing, offload")
    lines.append(f"train args: {' '.join(train_args)}")
    status = (f"killed at the {a.limit:.0f} s limit" if timed_out else f"exited {rc}")
    lines.append(f"autotuner: {status}; total wall time {tune_s:.1f} s (start of `deepspeed --autotuning` "
                 "to its exit, model-info run included)"
                 + (f"; its own summary: tuning completed in {ds_tuning.group(1)}, {ds_tuning.group(2)} "
                    "experiments" if ds_tuning else "; no summary.txt"))
    n_failed = sum(1 for r in tuned if not (r["metrics"] and "throughput" in r["metrics"]))
    lines.append(f"experiments: {len(rows)} launched ({'1 model-info run + ' if len(rows) > len(tuned) else ''}"
                 f"{len(tuned)} tuning), {len(with_metrics)} with metrics, {n_failed} without")
    if chosen is not None or optimal is not None:
        zero = (optimal or {}).get("zero_optimization", {})
        lines.append(f"chosen by {chosen_by}: {chosen['name'] if chosen else '?'}: "
                     f"zero stage {zero.get('stage')}, micro-batch {optimal.get('train_micro_batch_size_per_gpu')}, "
                     f"gradient_accumulation_steps {optimal.get('gradient_accumulation_steps')}, "
                     f"train_batch_size {optimal.get('train_batch_size')}")
        lines.append("chosen config: " + json.dumps(optimal, sort_keys=True))
        if chosen is not None:
            m = chosen["metrics"]
            lines.append(f"its autotuner metric: throughput {m['throughput']:.2f} samples/s = "
                         f"{tokens(chosen):.0f} tokens/s (latency {m.get('latency', 0) / 1000:.1f} ms per step)")
    else:
        lines.append("chosen: none (no experiment wrote metrics)")
    if measure:
        lines.append(f"measured standalone: {measure['tokens_per_s']:.0f} tokens/s, median of "
                     f"{measure['measure_steps']} optimizer steps after {measure['warmup']} warm-up "
                     f"(micro-batch {measure['micro_batch']} x {measure['gradient_accumulation_steps']}, "
                     f"peak {measure['peak_bytes'] / 2**30:.1f} GiB, {measure['device']}; {measure_note})")
    else:
        lines.append(f"measured standalone: none ({measure_note})")
    lines.append("")
    lines.append(f"{'experiment':<24} {'stage':>5} {'mb':>4} {'gas':>4} {'samples/s':>10} {'tokens/s':>10} "
                 f"{'latency ms':>10} {'~s':>6}  DeepSpeed's error line")
    for r in rows:
        m = r["metrics"] or {}
        tps = tokens(r)
        cells = ["%.2f" % m["throughput"] if "throughput" in m else "-",
                 "%.0f" % tps if tps else "-",
                 "%.1f" % (m["latency"] / 1000) if "latency" in m else "-",
                 "%.0f" % r["seconds_approx"] if r["seconds_approx"] is not None else "-"]
        lines.append(f"{r['name']:<24} {str(r['stage']):>5} {str(r['micro_batch']):>4} {str(r['gas']):>4} "
                     f"{cells[0]:>10} {cells[1]:>10} {cells[2]:>10} {cells[3]:>6}  {(r['ds_error'] or '')[:100]}")
    decisions = [line.split("] ", 3)[-1].strip() for line in tail(at_log, 10**6).splitlines()
                 if "[autotuner.py:" in line and re.search(DECISIONS, line)]
    if decisions:
        lines.append("")
        lines.append("the autotuner's decisions (its log):")
        lines.extend("  " + d[:240] for d in decisions)
    queued = sorted(f[:-5] for f in os.listdir(exps_dir) if f.endswith(".json")) if os.path.isdir(exps_dir) else []
    not_run = [q for q in queued if q not in {r["name"] for r in rows}]
    if not_run:
        lines.append(f"written to exps_dir but never started: {', '.join(not_run)}")
    text = "\n".join(lines) + "\n"
    write(os.path.join(a.archive, "ds-autotune.txt"), text)
    doc = {"mode": a.mode, "stages": stages, "micro_batches": micro_batches, "profile_steps": [start_step, end_step],
           "train_args": train_args, "autotuner_rc": rc, "timed_out": timed_out, "tuning_wall_s": tune_s,
           "ds_summary": ds_tuning.groups() if ds_tuning else None, "chosen_by": chosen_by,
           "chosen": chosen["name"] if chosen else None, "chosen_config": optimal, "measure": measure,
           "experiments": [{k: v for k, v in r.items() if k != "dir"} for r in rows], "not_run": not_run}
    write(os.path.join(a.archive, "ds-autotune.json"), json.dumps(doc, indent=1) + "\n")
    print(text, end="")
    return 0 if measure else 1


if __name__ == "__main__":
    sys.exit(main())
