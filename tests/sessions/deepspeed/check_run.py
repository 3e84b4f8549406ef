"""Checks of the shared DeepSpeed run (run_watched.sh) against what DeepSpeed itself wrote.

  check_run.py watch  SHARDSCOPE OUT_DIR   the watched session equals DeepSpeed's csv_monitor files
  check_run.py import SHARDSCOPE OUT_DIR   `sessions import` of the run's files equals them too:
                                           csv_monitor exactly, TensorBoard as tensorboard reads it,
                                           the traces' annotations, CPU operators (shapes, links)
                                           and ProfilerStep step times, the log's flops and comms tables

Every expected value is read here from DeepSpeed's files with Python's csv module, tensorboard's
own EventAccumulator and json; nothing is stored. Prints "N passed, M failed".
"""
import csv
import glob
import importlib.metadata
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
    # DeepSpeed writes the rate after its scheduler stepped: the one the next step ran with, which
    # is where ShardScope records it; the rate written after the last step is no step's.
    last = max(lr_csv) // samples_per_step if lr_csv else 0
    check(all(lr.get((x // samples_per_step + 1, 0)) == v for x, v in lr_csv.items() if x // samples_per_step < last),
          f"{label}: lr per step equals Train_Samples_lr.csv exactly, one step on")
    check((last + 1, 0) not in lr, f"{label}: no step after the run's last ({last})")
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
    installed = importlib.metadata.version("deepspeed")
    versions = json.loads(info["environment_json"])["versions"]
    check(versions.get("deepspeed") == installed,
          f"the session records the DeepSpeed that ran, {installed} (got {versions.get('deepspeed')})")
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
    check(all(lr.get((x // 8 + 1, 0)) == v for x, v in scalars["Train/Samples/lr"].items() if x // 8 < 6),
          "TensorBoard import: lr equals what tensorboard's EventAccumulator reads, one step on")
    timers = timer_rows(s)
    forward = scalars.get("Train/Samples/elapsed_time_ms_forward", {})
    check(forward and all(timers.get((x // 8, "forward")) == v for x, v in forward.items()),
          "TensorBoard import: the forward timer equals EventAccumulator's values")


def compact_dims(dims):
    """Input Dims as the importer keeps them: compact JSON."""
    return json.dumps(dims, separators=(",", ":"))


def fwdbwd_links(events):
    """{backward op's External id: forward op's External id}, as Kineto's fwdbwd flows bind: "s" to the
    innermost op of its thread starting at its ts, "f" to the innermost op enclosing its ts."""
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]

    def bind(flow):
        inside = [o for o in ops if o["tid"] == flow["tid"] and o["ts"] <= flow["ts"] <= o["ts"] + o["dur"]]
        return max(inside, key=lambda o: (o["ts"], -o["dur"]), default=None)
    ends = {}
    for f in (e for e in events if e.get("cat") == "fwdbwd" and e.get("ph") in ("s", "f")):
        op = bind(f)
        if op is not None:
            ends.setdefault(f["id"], {"s": None, "f": []})
            if f["ph"] == "s":
                ends[f["id"]]["s"] = op
            else:
                ends[f["id"]]["f"].append(op)
    return {b["args"]["External id"]: e["s"]["args"]["External id"]
            for e in ends.values() if e["s"] is not None and "External id" in e["s"].get("args", {}) for b in e["f"]}


def check_trace_operators(rank, trace, ranges):
    events = trace["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    stored = [r for r in ranges if r["domain"] == "cpu_op"]
    check(len(stored) == len(ops) > 0, f"rank {rank}: every cpu_op of the trace is a CPU operator range "
                                       f"({len(stored)} of {len(ops)})")
    by_id = {r["external_id"]: r for r in stored if r["external_id"] is not None}
    shaped = [o for o in ops if o.get("args", {}).get("Input Dims") is not None]
    check(shaped and all(by_id[o["args"]["External id"]]["shapes"] == compact_dims(o["args"]["Input Dims"])
                         and by_id[o["args"]["External id"]]["name"] == o["name"] for o in shaped),
          f"rank {rank}: each operator's name and Input Dims are kept ({len(shaped)} with shapes, record_shapes=True)")
    check(all(by_id[o["args"]["External id"]]["sequence_number"] == o["args"].get("Sequence number")
              for o in ops if "External id" in o.get("args", {})),
          f"rank {rank}: each operator's autograd sequence number is kept")
    links = fwdbwd_links(events)
    stored_links = {r["external_id"]: r["forward_op_id"] for r in stored if r["forward_op_id"] is not None}
    flows = len([e for e in events if e.get("cat") == "fwdbwd" and e.get("ph") == "f"])
    check(stored_links == links and len(links) > 0,
          f"rank {rank}: the backward operators name their forward ones as the fwdbwd flows link them "
          f"({len(stored_links)} links of {flows} flows)")


def profiler_step_times(trace):
    """{step: ms} of the CPU ProfilerStep#N windows (step N + 1), as the importer rounds ts and dur to ns."""
    return {int(e["name"].split("#")[1]) + 1: round(e["dur"] * 1000) / 1e6 for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")}


def check_trace_step_times(cli, out, db):
    """A trace alone: its ProfilerStep#N windows are the steps' times."""
    for rank in (0, 1):
        path = os.path.join(out, "traces", f"rank{rank}.json")
        result = json.loads(run(cli, "sessions", "import", "--db", db, "--trace", path, "--name", f"trace-{rank}",
                                "--json"))
        s = export(cli, db, result["session_uid"])
        expected = profiler_step_times(json.load(open(path)))
        got = {row["step"]: row["step_time_ms"] for row in s["steps"] if row["rank"] == rank}
        check(len(expected) == 2 and got.keys() == expected.keys()
              and all(abs(got[k] - v) < 1e-9 for k, v in expected.items()),
              f"rank {rank}: a trace alone gives each ProfilerStep#N window's time as step N+1's ({got} vs {expected})")


def check_traces(s, out):
    for rank in (0, 1):
        trace = json.load(open(os.path.join(out, "traces", f"rank{rank}.json")))
        annotations = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
        all_ranges = [r for r in s["nvtx_ranges"] if r["rank"] == rank]
        ranges = [r for r in all_ranges if r["domain"] != "cpu_op"]
        check(len(ranges) == len(annotations) > 0,
              f"rank {rank}: every user annotation of the trace is a range ({len(ranges)} of {len(annotations)})")
        check_trace_operators(rank, trace, all_ranges)
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
    steps = profiler_step_times(json.load(open(os.path.join(out, "traces", "rank1.json"))))
    got = {row["step"]: row["step_time_ms"] for row in s["steps"] if row["rank"] == 1}
    check(steps and all(abs(got.get(k, -1) - v) < 1e-9 for k, v in steps.items()),
          f"rank 1 (no monitor or log timers): its step times are its ProfilerStep windows' ({got})")
    show = json.loads(run(cli, "sessions", "show", result["session_uid"], "--db", db, "--profile", "--json"))
    profile = show["profile"]
    check(profile["has_profiled_window"] is False and len(profile["phases"]["ranks"]) == 2,
          "show --profile analyses the imported session (a CPU run: no GPU window; phases of rank 0 from the "
          "timers, rank 1's step times from its trace)")
    operators = {r["rank"]: r for r in profile["top_operators"]}
    check(profile["has_cpu_operators"] and sorted(operators) == [0, 1]
          and all(r["operator_calls"] == len([r2 for r2 in s["nvtx_ranges"] if r2["rank"] == k and r2["domain"] == "cpu_op"])
                  and r["operators"] and r["forward_backward_links"] > 0 for k, r in operators.items()),
          "show --profile lists each rank's top CPU operators, with their forward/backward links")
    # Each rank's main thread (the most operators) holds the ProfilerStep#N ranges and is measured
    # in them; a side thread (autograd's, a comm thread) is measured over its own operators' span,
    # and has 8 to 16 operators depending on timing.
    busiest = {}
    for h in profile["host_idle"]:
        if h["operators"] > busiest.get(h["rank"], {"operators": -1})["operators"]:
            busiest[h["rank"]] = h
    check(sorted(busiest) == [0, 1] and all(h["step_windows"] for h in busiest.values())
          and all(0 <= h["idle_fraction"] < 1 for h in profile["host_idle"]),
          "show --profile gives the host time outside operators in the ProfilerStep windows")
    text = run(cli, "sessions", "show", result["session_uid"], "--db", db, "--profile")
    check("== Top CPU operators by self time ==" in text and "this session has no profiled window" not in text,
          "the text shows the CPU operators of a CPU run, not a missing window")
    check(show["summary"]["comm_ops"] != [], "the summary's collectives come from the comms table")
    check_tensorboard_import(cli, out, db)
    check_trace_step_times(cli, out, db)


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
