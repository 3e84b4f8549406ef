#!/usr/bin/env bash
# flight_record_real_dumps_test.sh SHARDSCOPE PYTHON: makes fresh flight recorder dumps with the
# venv's torch (make_flight_record_dumps.py: 3 gloo ranks, rank 2 skips the last all-reduce) and
# checks that `shardscope sessions import --flight-record` names rank 2 as the one that never
# entered all_reduce #6 of the default group while ranks 0 and 1 wait in it. The committed
# dumps (data/flight_record/) are one such run; this catches a torch whose format drifted.
# Exit 77 (skipped) only when the venv's python with torch is missing.
set -euo pipefail
SHARDSCOPE="$1" PYTHON="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -x "$PYTHON" ]] || ! "$PYTHON" -c 'import torch.distributed' 2>/dev/null; then
  echo "SKIP: no python with torch at $PYTHON (scripts/install_deps.sh makes the venv)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" "$HERE/make_flight_record_dumps.py" "$WORK/dumps"
"$SHARDSCOPE" sessions import --db "$WORK/runs.db" --flight-record "$WORK/dumps" --json >"$WORK/import.json"
"$PYTHON" - "$WORK/import.json" <<'PY'
import json, sys
fr = json.load(open(sys.argv[1]))["flight_record"]
f = fr["finding"]
assert [d["rank"] for d in fr["dumps"]] == [0, 1, 2], fr["dumps"]
assert f["kind"] == "hang" and f["ranks"] == [2], f
assert "hang in all_reduce #6 (make_flight_record_dumps.py:" in f["summary"], f["summary"]
assert "group default_pg (pg 0): ?:0, ?:1 wait(s)" in f["summary"] and "never entered by ?:2" in f["summary"], f["summary"]
print("OK:", f["summary"])
PY
