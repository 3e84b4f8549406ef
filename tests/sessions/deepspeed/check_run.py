"""Checks of the shared DeepSpeed run (run_watched.sh) against what DeepSpeed itself wrote.

  check_run.py watch  SHARDSCOPE OUT_DIR   the watched session equals DeepSpeed's csv_monitor files
  check_run.py import SHARDSCOPE OUT_DIR   `sessions import` of the run's files equals them too:
                                           csv_monitor exactly, TensorBoard as tensorboard reads it,
                                           the traces' annotations, the log's flops and comms tables

Every expected value is read here from DeepSpeed's files with Python's csv module, tensorboard's
own EventAccumulator and json; nothing is stored. Prints "N passed, M failed".
"""
import csv
import glob
import json
import os
import subprocess
import sys

CHECKS = {"passed": 0, "failed": 0}


def check(ok, what):
    CHECKS["passed" if ok else "failed"] += 1
    print(("ok    " if ok else "FAIL  ") + what)


def run(cli, *args):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{cli} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def export(cli, db, session):
    return json.loads(run(cli, "sessions", "export", session, "--db", db, "--json", "-"))["sessions"][0]


def csv_series(folder):
    """{series name: {samples: value}} as csv_monitor wrote them (Python's csv module)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        name = os.path.basename(path)[:-4]
        out[name] = {int(r[0]): float(r[1]) for r in rows[1:] if r and r[0] != "step"}
    return out


def by_step(session, table, key):
    return {(row["step"], row["rank"]): row[key] for row in session[table] if row.get(key) is not None}


def timer_rows(session):
    return {(row["step"], row["name"]): row["ms"] for row in session["timers"] if row["rank"] == 0}


def compare_with_csv(session, series, samples_per_step, label):
    lr = by_step(session, "steps", "lr")
    timers = timer_rows(session)
    lr_csv = series.get("Train_Samples_lr", {})
    check(len(lr_csv) == 6, f"{label}: DeepSpeed wrote 6 lr values (got {len(lr_csv)})")
    check(all(lr.get((x // samples_per_step, 0)) == v for x, v in lr_csv.items()),
          f"{label}: lr per step equals Train_Samples_lr.csv exactly")
    loss = by_step(session, "steps", "loss")
    loss_csv = series.get("Train_Samples_train_loss", {})
    check(len(loss_csv) == 6 and all(loss.get((x // samples_per_step, 0)) == v for x, v in loss_csv.items()),
          f"{label}: loss per step equals Train_Samples_train_loss.csv exactly ({len(loss_csv)} values)")
    step_time = by_step(session, "steps", "step_time_ms")
    parts = [series.get(f"Train_Samples_elapsed_time_ms_{t}", {}) for t in ("forward", "backward", "step")]
    check(parts[0] and all(step_time.get((x // samples_per_step, 0)) == parts[0][x] + parts[1][x] + parts[2][x]
                           for x in parts[0]),
          f"{label}: step time = forward + backward + step of the csv timers (DeepSpeed's iter latency)")
    for timer in ("forward", "backward", "backward_inner", "backward_allreduce", "step"):
        values = series.get(f"Train_Samples_elapsed_time_ms_{timer}", {})
        check(values and all(timers.get((x // samples_per_step, timer)) == v for x, v in values.items()),
              f"{label}: timer {timer} per step equals Train_Samples_elapsed_time_ms_{timer}.csv exactly")


def check_watch(cli, out):
    db = os.path.join(out, "watch.db")
    sessions = json.loads(run(cli, "sessions", "list", "--db", db, "--json"))
    check(len(sessions) == 1, "watch recorded one session")
    s = export(cli, db, sessions[0]["uid"])
    info = s["session"]
    check(info["status"] == "completed", f"the watched run completed (status {info['status']})")
    check(info["origin"] == "deepspeed-watch", "the session is marked as a watched DeepSpeed run")
    check(info["world_size"] == 2, f"world size 2 from the launcher's lines (got {info['world_size']})")
    check(json.loads(info["origin_json"]).get("exit_code") == 0, "the command's exit code 0 is recorded")
    check(json.loads(info["config_json"]).get("train_batch_size") == 8,
          "the recorded config is resolved for the world size the launcher named (4 x 2 ranks)")
    copy = json.load(open(os.path.join(out, "watch", "ds_config.json")))
    check(copy["csv_monitor"]["enabled"] is True, "the config copy turns csv_monitor on")
    series = csv_series(os.path.join(out, "watch", "csv_monitor", "shardscope"))
    compare_with_csv(s, series, 8, "watch")
    logs = [l for l in s["logs"] if "time (ms) | fwd:" in l["text"]]
    check(len(logs) == 6, f"the command's output is in the session's log ({len(logs)} global timer lines)")
    return s


def tensorboard_scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    out = {}
    for path in glob.glob(os.path.join(folder, "**", "events.out.tfevents.*"), recursive=True):
        acc = EventAccumulator(path)
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            out.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return out


def check_tensorboard_import(cli, out, db):
    tb_dir = os.path.join(out, "tensorboard")
    result = json.loads(run(cli, "sessions", "import", "--db", db, "--tensorboard", tb_dir, "--name", "tb-only",
                            "--samples-per-step", "8", "--json"))
    s = export(cli, db, result["session_uid"])
    lr = by_step(s, "steps", "lr")
    scalars = tensorboard_scalars(tb_dir)
    check(len(scalars.get("Train/Samples/lr", {})) == 6, "DeepSpeed's TensorBoard monitor wrote 6 lr scalars")
    check(all(lr.get((x // 8, 0)) == v for x, v in scalars["Train/Samples/lr"].items()),
          "TensorBoard import: lr equals what tensorboard's EventAccumulator reads")
    timers = timer_rows(s)
    forward = scalars.get("Train/Samples/elapsed_time_ms_forward", {})
    check(forward and all(timers.get((x // 8, "forward")) == v for x, v in forward.items()),
          "TensorBoard import: the forward timer equals EventAccumulator's values")


def check_traces(s, out):
    for rank in (0, 1):
        trace = json.load(open(os.path.join(out, "traces", f"rank{rank}.json")))
        annotations = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
        ranges = [r for r in s["nvtx_ranges"] if r["rank"] == rank]
        check(len(ranges) == len(annotations) > 0,
              f"rank {rank}: every user annotation of the trace is a range ({len(ranges)} of {len(annotations)})")
        base = trace["baseTimeNanoseconds"]
        first = min(annotations, key=lambda e: e["ts"])
        check(any(r["start_ns"] == base + round(first["ts"] * 1000) for r in ranges),
              f"rank {rank}: ranges sit on the Unix-epoch timeline (baseTimeNanoseconds + ts)")
        steps = sorted({r["step"] for r in ranges if r["name"].startswith("ProfilerStep#")})
        check(steps == [int(e["name"].split("#")[1]) + 1 for e in sorted(annotations, key=lambda e: e["ts"])
                        if e["name"].startswith("ProfilerStep#")], f"rank {rank}: ProfilerStep#N is step N+1")


def check_import(cli, out):
    db = os.path.join(out, "import.db")
    if os.path.exists(db):
        os.remove(db)
    watch = os.path.join(out, "watch")
    result = json.loads(run(cli, "sessions", "import", "--db", db, "--name", "tiny-import", "--json",
                            "--csv", os.path.join(watch, "csv_monitor", "shardscope"),
                            "--tensorboard", os.path.join(out, "tensorboard"),
                            "--log", os.path.join(watch, "output.log"), "--config", os.path.join(watch, "ds_config.json"),
                            "--trace", os.path.join(out, "traces", "rank0.json"),
                            "--trace", os.path.join(out, "traces", "rank1.json")))
    check(result["samples_per_step"] == 8, "steps = samples / train_batch_size 8 (from the config)")
    s = export(cli, db, result["session_uid"])
    check(s["session"]["origin"] == "deepspeed-import", "the session is marked as imported")
    check(s["session"]["status"] == "completed", "both ranks' exit lines make it completed")
    compare_with_csv(s, csv_series(os.path.join(watch, "csv_monitor", "shardscope")), 8, "import")
    params = 16 * 32 + 32 + 32 + 1
    figures = {row["name"]: row for row in s["series"]}
    got = figures.get("flops_profiler/params_per_gpu", {})
    check(got.get("value") == params and got.get("step") == 3,
          f"the flops profiler's summary at step 3 counts the model's {params} parameters ({got})")
    ops = {row["op"] for row in s["comm_summaries"]}
    check({"all_reduce", "all_gather_into_tensor"} <= ops, f"comms log_summary rows imported ({sorted(ops)})")
    check_traces(s, out)
    show = json.loads(run(cli, "sessions", "show", result["session_uid"], "--db", db, "--profile", "--json"))
    check(show["profile"]["has_profiled_window"] is False and len(show["profile"]["phases"]["ranks"]) == 1,
          "show --profile analyses the imported session (a CPU run: no GPU window, phases from the timers)")
    check(show["summary"]["comm_ops"] != [], "the summary's collectives come from the comms table")
    check_tensorboard_import(cli, out, db)


def main():
    mode, cli, out = sys.argv[1:4]
    if not os.path.exists(os.path.join(out, "watch.db")):
        print(f"SKIP: {out} has no DeepSpeed run (the deepspeed_watch_run fixture was skipped)")
        sys.exit(77)
    (check_watch if mode == "watch" else check_import)(cli, out)
    print(f"{CHECKS['passed']} passed, {CHECKS['failed']} failed")
    sys.exit(1 if CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
