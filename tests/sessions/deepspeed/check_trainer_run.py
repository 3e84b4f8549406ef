"""Checks of the Hugging Face Trainer runs (run_trainer_watched.sh) against what the Trainer and
DeepSpeed themselves wrote (issue 34).

  check_trainer_run.py watch  SHARDSCOPE OUT_DIR   the watched session: the loss, grad norm and
                                                   learning rate of every logged step, the config
                                                   the Trainer filled, the versions; the run
                                                   without a launcher gets a finding saying why
  check_trainer_run.py import SHARDSCOPE OUT_DIR   `sessions import` of the run's output log, of its
                                                   trainer_state.json and of the Trainer's
                                                   TensorBoard folder give the same steps

Every expected value is read here from the Trainer's trainer_state.json, DeepSpeed's csv_monitor
files, tensorboard's EventAccumulator and the installed packages; nothing is stored. Prints
"N passed, M failed".
"""
import csv
import glob
import importlib.metadata
import json
import os
import subprocess
import sys

CHECKS = {"passed": 0, "failed": 0}
STEPS = 12


def check(ok, what):
    CHECKS["passed" if ok else "failed"] += 1
    print(("ok    " if ok else "FAIL  ") + what)


def run(cli, *args, ok_codes=(0,)):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    if done.returncode not in ok_codes:
        sys.exit(f"{cli} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def export(cli, db, session):
    return json.loads(run(cli, "sessions", "export", session, "--db", db, "--json", "-"))["sessions"][0]


def by_step(session, key):
    return {row["step"]: row[key] for row in session["steps"] if row["rank"] == 0 and row.get(key) is not None}


def trainer_history(out):
    state = json.load(open(os.path.join(out, "trainer-out", "trainer_state.json")))
    return [h for h in state["log_history"] if "loss" in h]


def check_steps(session, history, label, exact=True):
    loss, grad_norm, lr = by_step(session, "loss"), by_step(session, "grad_norm"), by_step(session, "lr")
    check(len(history) == STEPS, f"{label}: the Trainer logged {STEPS} steps (got {len(history)})")
    close = (lambda a, b: a == b) if exact else (lambda a, b: b is not None and abs(a - b) <= 5e-4 * max(abs(a), 1e-12))
    check(all(close(h["loss"], loss.get(h["step"])) for h in history),
          f"{label}: the loss of every logged step equals trainer_state.json's ({len(loss)} steps have one)")
    check(all(close(h["grad_norm"], grad_norm.get(h["step"])) for h in history),
          f"{label}: the grad norm of every logged step equals trainer_state.json's")
    # DeepSpeed steps its scheduler inside engine.step(), before the Trainer reads the rate: the
    # rate logged at step s is the one step s + 1 ran with, where ShardScope's engine records it.
    check(all(close(h["learning_rate"], lr.get(h["step"] + 1)) for h in history if h["step"] < STEPS),
          f"{label}: the learning rate logged at step s is recorded at step s + 1")
    check(max(session_step["step"] for session_step in session["steps"]) == STEPS,
          f"{label}: no step after the run's last ({STEPS})")


def check_watch(cli, out):
    db = os.path.join(out, "watch.db")
    s = export(cli, db, "trainer-watch")
    info = s["session"]
    check(info["status"] == "completed", f"the watched Trainer run completed (status {info['status']})")
    history = trainer_history(out)
    check_steps(s, history, "watch")
    csv_path = os.path.join(out, "watch", "csv_monitor", "shardscope", "Train_Samples_lr.csv")
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.reader(f)][1:]
    lr = by_step(s, "lr")
    batch = int(rows[0][0])
    check(all(lr.get(int(x) // batch + 1) == float(v) for x, v in rows if int(x) // batch < STEPS),
          "watch: DeepSpeed's csv_monitor lr, written after its scheduler stepped, is recorded at the next step")
    config = json.loads(info["config_json"])
    origin = json.loads(info["origin_json"])
    check(config["optimizer"]["params"]["lr"] == 1e-3,
          f"the recorded config is what the Trainer filled (optimizer lr {config['optimizer']['params']['lr']})")
    check(config["zero_optimization"]["reduce_bucket_size"] == 64 * 64,
          "the Trainer's fill of reduce_bucket_size (hidden_size^2 = 4096) is recorded")
    check(origin["config_as_written"]["optimizer"]["params"]["lr"] == "auto",
          "the file as written (\"lr\": \"auto\") is kept beside it")
    check("csv_monitor" not in config and "log_level" not in config,
          "the keys the watch copy added are not part of the recorded config")
    check(origin.get("trainer_state", "").endswith("trainer_state.json"), "the Trainer's trainer_state.json was read")
    versions = json.loads(info["environment_json"])["versions"]
    for package in ("deepspeed", "transformers", "accelerate"):
        installed = importlib.metadata.version(package)
        check(versions.get(package) == installed, f"the session records {package} {installed} (got {versions.get(package)})")
    plain = json.loads(run(cli, "sessions", "show", "no-launcher", "--db", db, "--json"))
    check(plain["detail"]["status"] == "failed", "the run without a launcher is marked failed")
    findings = [f for f in plain["findings"] if f["kind"] == "failed_start"]
    check(len(findings) == 1 and "mpi4py" in findings[0]["summary"] and "deepspeed --num_gpus" in findings[0]["suggested_fix"],
          f"the run without a launcher gets a finding naming MPI discovery and the launchers ({findings})")
    printed = open(os.path.join(out, "no-launcher.txt")).read()
    check("without a launcher" in printed, "watch printed the finding when the command ended")


def check_import(cli, out):
    db = os.path.join(out, "import.db")
    history = trainer_history(out)
    log = os.path.join(out, "watch", "output.log")
    run(cli, "sessions", "import", "--db", db, "--log", log, "--name", "from-log", "--json")
    check_steps(export(cli, db, "from-log"), history, "import of the output log", exact=False)
    run(cli, "sessions", "import", "--db", db, "--log", log, "--config", os.path.join(out, "ds.json"),
        "--trainer-state", os.path.join(out, "trainer-out", "trainer_state.json"), "--name", "from-state", "--json")
    s = export(cli, db, "from-state")
    check_steps(s, history, "import with trainer_state.json")
    origin = json.loads(s["session"]["origin_json"])
    check(origin["config_as_written"]["optimizer"]["params"]["lr"] == "auto" and
          json.loads(s["session"]["config_json"])["optimizer"]["params"]["lr"] == 1e-3,
          "import: the config DeepSpeed printed is recorded, the file as written beside it")
    runs = glob.glob(os.path.join(out, "trainer-out", "runs", "*"))
    check(len(runs) == 1, f"the Trainer wrote one TensorBoard run folder ({runs})")
    run(cli, "sessions", "import", "--db", db, "--tensorboard", runs[0], "--name", "from-tensorboard", "--json")
    s = export(cli, db, "from-tensorboard")
    loss = by_step(s, "loss")
    check(all(abs(loss.get(h["step"], 1e9) - h["loss"]) <= 1e-6 * abs(h["loss"]) for h in history),
          f"import of the Trainer's TensorBoard folder: every logged loss at its step ({len(loss)} steps)")


def main():
    mode, cli, out = sys.argv[1:4]
    if not os.path.exists(os.path.join(out, "watch.db")):
        print("SKIP: the Trainer run did not happen (run_trainer_watched.sh skipped)")
        return 77
    {"watch": check_watch, "import": check_import}[mode](cli, out)
    print(f"{CHECKS['passed']} passed, {CHECKS['failed']} failed")
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
