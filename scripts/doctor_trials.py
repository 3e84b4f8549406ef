#!/usr/bin/env python3
"""Seeded fault trials of the run doctor (issue 28; docs/doctor.md, "Trials").

Each trial starts `shardscope launch` with 4 CPU (Gloo) ranks of a tiny GPT-2 and one fault drawn
from the seed: a rank, a step, a ZeRO stage and the collective it hangs before (or skips). The
trial passes when the launcher names that rank, with its op and the sequence number the faulted
rank printed, within --bound seconds of the fault, stores the finding, ends every rank under
`--on-hang stop` and exits 124. With --hosts the ranks run 2 x 2 on two network namespaces with
their own sshd (scripts/ci_netns.sh, root only) and the culprit is named as host:rank.

    scripts/doctor_trials.py --trials 20 --seed 1                 # local, 4 ranks
    sudo scripts/doctor_trials.py --trials 20 --seed 2 --hosts    # 2 hosts x 2 ranks

Prints one line per trial and a summary; exits 1 when a trial fails. The versions and the
machine are printed first so a recorded result says what it ran with.
"""
import argparse
import json
import os
import platform
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (stage, op): the collectives each ZeRO stage issues in a step of the engine. Stage 0 all-reduces
# gradients in backward; stages 1-2 reduce-scatter them in backward and all-gather the updated
# weights after the optimizer; stage 3 gathers each layer in forward (and again in backward).
CASES = [(0, "all_reduce"), (1, "reduce_scatter"), (1, "all_gather"), (2, "reduce_scatter"), (2, "all_gather"),
         (3, "all_gather"), (3, "reduce_scatter")]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=os.path.join(ROOT, "build/app/cli/shardscope"))
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hang-after", type=float, default=4, help="the launcher's --hang-after (seconds)")
    p.add_argument("--bound", type=float, default=60, help="the fault must be named within this many seconds")
    p.add_argument("--hosts", action="store_true", help="2 hosts x 2 ranks in network namespaces (root)")
    return p.parse_args()


def draw(rng, ranks):
    stage, op = rng.choice(CASES)
    return {"stage": stage, "op": op, "kind": "hang-before-collective", "rank": rng.randrange(ranks),
            "step": rng.randint(2, 5)}


def write_config(folder, stage):
    path = os.path.join(folder, "ds.json")
    with open(path, "w") as f:
        json.dump({"train_micro_batch_size_per_gpu": 1, "steps_per_print": 1,
                   "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
                   "zero_optimization": {"stage": stage}}, f)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Netns:
    """Two hosts made by scripts/ci_netns.sh; `wrap` runs a command on host 1."""

    def __init__(self):
        self.name = "ssdt%d" % os.getpid()
        script = os.path.join(ROOT, "scripts/ci_netns.sh")
        check = subprocess.run(["bash", script, "check"], capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit("--hosts: " + (check.stdout + check.stderr).strip())
        state = subprocess.run(["bash", script, "up", self.name, "2"], capture_output=True, text=True, check=True)
        self.dir = state.stdout.strip().splitlines()[-1]
        pairs = (line.split("=", 1) for line in open(os.path.join(self.dir, "env")).read().splitlines() if "=" in line)
        self.env = {key: value.strip('"') for key, value in pairs}
        self.script = script

    def hosts(self):
        return self.env["SS_NETNS_HOSTS"].split()

    def launch_flags(self):
        return ["--hostfile", self.env["SS_NETNS_HOSTFILE"], "--num_procs", "2",
                "--launcher_args", "-F " + self.env["SS_NETNS_SSH_CONFIG"]]

    def wrap(self, argv):
        return ["ip", "netns", "exec", self.name + "-h1"] + argv

    def close(self):
        subprocess.run(["bash", self.script, "down", self.name], capture_output=True)


def run_launch(argv, env):
    """Runs the launcher, timing each stderr line; returns (exit code, [(seconds, line)], stdout)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    lines = [(time.monotonic() - start, line.rstrip("\n")) for line in proc.stderr]
    code = proc.wait()
    reader.join()
    return code, lines, "".join(out)


def first(lines, pattern):
    for at, line in lines:
        m = re.search(pattern, line)
        if m:
            return at, m
    return None, None


def rank_pids(lines):
    return [int(m.group(1)) for _, line in lines for m in [re.search(r"rank \d+ pid (\d+)", line)] if m]


def stored_finding(cli, db, wrap):
    show = subprocess.run(wrap([cli, "sessions", "show", "--db", db, "--json", "1"]), capture_output=True, text=True)
    if show.returncode != 0:
        return None, "sessions show failed: " + show.stderr.strip()
    doc = json.loads(show.stdout)
    hangs = [f for f in doc.get("findings", []) if f.get("kind") == "hang"]
    status = doc["detail"].get("status")
    return (hangs[0] if hangs else None), status


def judge(trial, code, lines, hosts, cli, db, wrap, bound):
    """The reasons the trial failed (empty when it passed), and the seconds from fault to finding."""
    problems = []
    said_at, said = first(lines, r"rank %d at step \d+, before collective #(\d+) \((\w+)\)" % trial["rank"])
    named_at, named = first(lines, r"doctor: ERROR hang: (.*)")
    if code != 124:
        problems.append("exit code %d, not 124" % code)
    if said is None:
        problems.append("the faulted rank did not say where")
    if named is None:
        return problems + ["no hang finding printed"], None
    culprit = "%s:%d" % (hosts[trial["rank"] // (4 // len(hosts))], trial["rank"])
    summary = named.group(1)
    if said is not None:
        if "%s #%s" % (trial["op"], said.group(1)) not in summary:
            problems.append("the summary does not name %s #%s: %s" % (trial["op"], said.group(1), summary))
        if culprit not in summary:
            problems.append("the summary does not name %s: %s" % (culprit, summary))
    latency = named_at - said_at if said_at is not None else None
    if latency is not None and latency > bound:
        problems.append("named %.1f s after the fault (bound %.0f s)" % (latency, bound))
    finding, status = stored_finding(cli, db, wrap)
    if finding is None or finding.get("ranks") != [trial["rank"]]:
        problems.append("stored finding %s, expected ranks [%d]" % (finding and finding.get("ranks"), trial["rank"]))
    if status != "hung":
        problems.append("session status %s, not hung" % status)
    return problems, latency


def processes_left(pids, wrap):
    time.sleep(1)
    left = []
    for pid in pids:
        probe = subprocess.run(wrap(["kill", "-0", str(pid)]), capture_output=True)
        if probe.returncode == 0:
            left.append(pid)
    return left


def trial_argv(args, trial, folder, netns):
    db = os.path.join(folder, "trial.db")
    where = netns.launch_flags() if netns else ["--num_procs", "4"]
    argv = [args.cli, "launch"] + where + ["--master_port", str(free_port()), "--session", db,
                                           "--hang-after", str(args.hang_after), "--on-hang", "stop", "--",
                                           "--config", write_config(folder, trial["stage"]), "--model", "gpt2",
                                           "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "64",
                                           "--seq-len", "16", "--steps", "1000"]
    return (netns.wrap(argv) if netns else argv), db


def run_trial(args, index, trial, netns):
    wrap = netns.wrap if netns else (lambda argv: argv)
    hosts = netns.hosts() if netns else [socket.gethostname()]
    with tempfile.TemporaryDirectory(prefix="ss-doctor-trial-") as folder:
        argv, db = trial_argv(args, trial, folder, netns)
        fault = "%d:%d:%s:%s" % (trial["rank"], trial["step"], trial["kind"], trial["op"])
        started = time.monotonic()
        code, lines, _ = run_launch(argv, dict(os.environ, SHARDSCOPE_FAULT=fault))
        problems, latency = judge(trial, code, lines, hosts, args.cli, db, wrap, args.bound)
        left = processes_left(rank_pids(lines), wrap)
        if left:
            problems.append("rank processes left running: %s" % left)
    verdict = "ok" if not problems else "FAILED: " + "; ".join(problems)
    print("trial %2d  stage %d  %-22s %-14s rank %d step %d  named after %s  (%.0f s)  %s" % (
        index, trial["stage"], trial["kind"], trial["op"], trial["rank"], trial["step"],
        "%.1f s" % latency if latency is not None else "-", time.monotonic() - started, verdict), flush=True)
    if problems:
        print("\n".join("    " + line for _, line in lines[-25:]), flush=True)
    return not problems, latency


def main():
    args = parse_args()
    version = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout.strip()
    print("# %s  %s  %s, %d cores  seed %d  %s" % (time.strftime("%Y-%m-%d %H:%M:%S"), version, platform.platform(),
                                                  os.cpu_count(), args.seed, "2 hosts x 2 ranks" if args.hosts else "4 local ranks"),
          flush=True)
    netns = Netns() if args.hosts else None
    rng = random.Random(args.seed)
    passed, latencies = 0, []
    try:
        for i in range(1, args.trials + 1):
            ok, latency = run_trial(args, i, draw(rng, 4), netns)
            passed += ok
            if latency is not None:
                latencies.append(latency)
    finally:
        if netns:
            netns.close()
    latencies.sort()
    print("%d of %d trials named the faulted rank; fault to finding %.1f-%.1f s (median %.1f s), --hang-after %g s" % (
        passed, args.trials, latencies[0] if latencies else 0, latencies[-1] if latencies else 0,
        latencies[len(latencies) // 2] if latencies else 0, args.hang_after))
    return 0 if passed == args.trials else 1


if __name__ == "__main__":
    sys.exit(main())
