#!/usr/bin/env bash
# `sessions check` on a real GPU pair (issue 30): tests/sessions/data/gpu_regression_pair.db.xz is
# the store scripts/gpu_regression_pair.sh wrote on an H100 (docs/sessions.md): GPT-2 350M shape,
# bf16, 40 steps with a CUPTI window, interleaved base-1, ckpt-1, base-2, ckpt-2, fp16-1, fp16-2.
# Repeats of the same run pass; activation checkpointing and fp16 fail, with the kernel families
# that moved named (the recomputed GEMMs, attention and LayerNorm forward; fp16's loss-scale work).
# usage: gpu_regression_pair_test.sh SHARDSCOPE DATA_XZ WORK_DIR
set -euo pipefail
cli=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
xz -dc "$data" > "$work/pair.db"
check() {  # $1 = expected exit code, $2 = baseline, $3 = candidate, $4 = json out
  set +e
  "$cli" sessions check --db "$work/pair.db" --baseline "$2" --candidate "$3" --json > "$4"
  local code=$?
  set -e
  [[ $code -eq $1 ]] || { echo "FAIL: check $2 vs $3 exited $code, not $1"; cat "$4"; exit 1; }
}
check 0 base-1 base-2 "$work/same.json"
check 1 base-1,base-2 ckpt-1,ckpt-2 "$work/ckpt.json"
check 1 base-1,base-2 fp16-1,fp16-2 "$work/fp16.json"
python3 - "$work" <<'PY'
import json, sys
load = lambda name: json.load(open(f"{sys.argv[1]}/{name}.json"))
verdict = lambda d, m: next(x["verdict"] for x in d["metrics"] if x["metric"] == m)
same, ckpt, fp16 = load("same"), load("ckpt"), load("fp16")
assert not same["failed"] and verdict(same, "step_time") != "regression", same["metrics"]
assert ckpt["profiled"] and fp16["profiled"]
# Checkpointing: step time up by a fifth, memory down; the recomputed forward is what moved.
assert verdict(ckpt, "step_time") == "regression" and verdict(ckpt, "peak_memory") == "improvement"
moved = {c["name"]: c for c in ckpt["contributors"] if c["kind"] == "kernel"}
top = max(moved.values(), key=lambda c: c["delta_ms"])
assert top["name"] == "gemm" and top["delta_ms"] > 4, top
for family in ("cudnn sdpa forward", "shardscope::kernels::layer_norm_forward_kernel"):
    assert moved[family]["candidate_ms"] > 1.6 * moved[family]["baseline_ms"], moved[family]
# fp16 instead of bf16: the config rows say so, and the loss scaler's elementwise work comes first.
assert verdict(fp16, "step_time") == "regression", fp16["metrics"]
paths = {c["path"] for c in fp16["changes"] if c["kind"] == "config"}
assert {"bf16.enabled", "fp16.enabled"} <= paths, paths
assert fp16["contributors"][0]["name"] == "at::native::unrolled_elementwise_kernel", fp16["contributors"][0]
assert all(not c["name"].startswith("nvjet_") for c in fp16["contributors"]), "GEMM tiles not grouped"
print("ckpt: gemm +%.2f ms/step; fp16: %s +%.2f ms/step" % (top["delta_ms"], fp16["contributors"][0]["name"],
                                                           fp16["contributors"][0]["delta_ms"]))
PY
