#!/usr/bin/env bash
# The run doctor under `shardscope watch` (issue 28 item 5), a rank that skips a collective: the
# tiny DeepSpeed run on 2 CPU ranks (gloo) averages its loss with an all-reduce after each step, and
# rank 1 skips it after step 3, so rank 0 waits in it for good. With DEEPSPEED_TIMEOUT=1 DeepSpeed
# gives its process group a 60 s timeout (10 minutes by default). watch must report the stall
# (silence past --hang-after 10), decode gloo's timeout line as a hang naming rank 0 and the 60 s,
# and rank 1's lost connection as its victim's line, and store them as findings; the timeout makes
# the stall a hang, so no "stall ended" may follow.
# Exit 77 (skipped) when the venv has no DeepSpeed.
# usage: run_skipped_collective_watched.sh SHARDSCOPE VENV OUT_DIR
set -euo pipefail
cli=$1 venv=$2 out=$3
source "$(dirname "$0")/watched_run_setup.sh"
export DEEPSPEED_TIMEOUT=1
start=$(date +%s)
set +e
"$cli" watch --db "$out/watch.db" --out "$out/watch" --name skipped --poll-ms 200 --hang-after 10 -- \
  deepspeed --num_gpus 2 --master_port "$port" "$here/train_tiny.py" --deepspeed --deepspeed_config ds_config.json \
  --steps 6 --skip-rank 1 --skip-step 3 > "$out/stdout.txt" 2> "$out/stderr.txt"
code=$?
set -e
echo "[skipped collective] exit code $code after $(( $(date +%s) - start )) s"
fail() { echo "FAIL: $*"; echo "--- watch's stderr:"; grep -v "^\[" "$out/stderr.txt" | tail -n 40; exit 1; }
[[ $code -ne 0 ]] || fail "the run ended 0 although rank 0 timed out"
grep -q "shardscope watch: doctor: the command has been silent for [0-9]* s" "$out/stderr.txt" ||
  fail "the stall was not reported while the ranks waited"
grep -q "shardscope watch: doctor: rank 0 timed out in gloo waiting 60 s for a recv" "$out/stderr.txt" ||
  fail "gloo's timeout line was not decoded"
"$cli" sessions show skipped --db "$out/watch.db" --json > "$out/show.json"
"$venv/bin/python" - "$out/show.json" <<'PY'
import json, sys
findings = json.load(open(sys.argv[1]))["findings"]
print("findings:", ", ".join(f"{f['kind']} {f['ranks']} ({f['severity']})" for f in findings))
stalls = [f for f in findings if f["kind"] == "stall"]
assert stalls and stalls[0]["first_step"] == 3, findings  # silent after step 3, when rank 1 skipped
hangs = [f for f in findings if f["kind"] == "hang"]
assert len(hangs) == 1 and hangs[0]["ranks"] == [0] and "60 s" in hangs[0]["summary"], findings
assert "Timed out waiting 60000ms" in hangs[0]["evidence"], hangs[0]
assert any(f["kind"] == "peer_lost" and f["ranks"] == [1] for f in findings), findings
assert not any(f["kind"] == "stall_ended" for f in findings), "the silence was a hang, not a slow stretch"
PY
