#!/usr/bin/env bash
# The run doctor under `shardscope watch` (issue 28 item 5): the tiny DeepSpeed run on 2 CPU ranks
# (gloo) with rank 1 stuck for 30 s before step 3's backward, so rank 0 waits in the gradient
# all-reduce and the run falls silent. watch must report the stall (silence past --hang-after 10
# after the first steps, while the command runs), then say it ended when the run speaks again, and
# store both as findings. (c10d's and gloo's timeout lines, NCCL errors and OOM messages are
# decoded by the same doctor: tests/diagnosis/output_doctor_test.cpp, with PyTorch 2.11's texts.)
# Exit 77 (skipped) when the venv has no DeepSpeed.
# usage: run_stalled_watched.sh SHARDSCOPE VENV OUT_DIR
set -euo pipefail
cli=$1 venv=$2 out=$3
source "$(dirname "$0")/watched_run_setup.sh"
start=$(date +%s)
set +e
"$cli" watch --db "$out/watch.db" --out "$out/watch" --name stalled --poll-ms 200 --hang-after 10 -- \
  deepspeed --num_gpus 2 --master_port "$port" "$here/train_tiny.py" --deepspeed --deepspeed_config ds_config.json \
  --steps 5 --stall-rank 1 --stall-step 3 --stall-seconds 30 > "$out/stdout.txt" 2> "$out/stderr.txt"
code=$?
set -e
echo "[stalled run] exit code $code after $(( $(date +%s) - start )) s"
fail() { echo "FAIL: $*"; echo "--- watch's stderr:"; grep -v "^\[" "$out/stderr.txt" | tail -n 40; exit 1; }
[[ $code -eq 0 ]] || fail "the run (slow, not broken) exited $code"
grep -q "shardscope watch: doctor: the command has been silent for [0-9]* s (no output line, no new step after step 2)" \
  "$out/stderr.txt" || fail "no stall after step 2 was reported"
grep -q "shardscope watch: doctor: the command spoke again after" "$out/stderr.txt" || fail "the stall's end was not said"
"$cli" sessions show stalled --db "$out/watch.db" --json > "$out/show.json"
"$venv/bin/python" - "$out/show.json" <<'PY'
import json, sys
show = json.load(open(sys.argv[1]))
findings = show["findings"]
# Exactly one stall while rank 1 was stuck after step 2, and its end. (A loaded machine can be
# silent past the 10 s bound once more in the teardown after the last step; that one is not judged.)
stalls = [f for f in findings if f["kind"] == "stall" and f["first_step"] == 2]
assert len(stalls) == 1 and stalls[0]["severity"] == "error", findings
assert any(f["kind"] == "stall_ended" for f in findings), findings
print("findings:", ", ".join(f"{f['kind']} ({f['severity']})" for f in findings))
PY
