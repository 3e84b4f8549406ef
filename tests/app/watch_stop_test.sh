#!/usr/bin/env bash
# `shardscope watch` stopped by SIGTERM ends the whole process tree, the part that left the
# command's process group (setsid, as torchrun's workers do) included, exits 128+15, records the
# session as interrupted and prints its summary after a line of its own. Its lines speak of the
# command, never of a rank. The command is a shell
# script standing in for a launcher (no DeepSpeed needed), given a DeepSpeed config the way
# `deepspeed` takes one.
# usage: watch_stop_test.sh SHARDSCOPE
set -uo pipefail
cli=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
echo '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}' > "$dir/ds.json"
cat > "$dir/launcher.sh" <<SCRIPT
setsid sleep 600 & echo \$! > "$dir/escaped.pid"
sleep 600 & echo \$! > "$dir/child.pid"
echo "launcher started"
wait
SCRIPT
"$cli" watch --db "$dir/w.db" --out "$dir/out" --grace 2 -- bash "$dir/launcher.sh" --deepspeed_config "$dir/ds.json" \
  > "$dir/watch.out" 2> "$dir/watch.err" &
watch=$!
for _ in $(seq 200); do [[ -s "$dir/escaped.pid" && -s "$dir/child.pid" ]] && break; sleep 0.1; done
[[ -s "$dir/escaped.pid" ]] || fail "the command never started: $(cat "$dir/watch.err")"
escaped=$(cat "$dir/escaped.pid") child=$(cat "$dir/child.pid")
sleep 0.5
kill -TERM "$watch"
wait "$watch"; rc=$?
[[ $rc -eq 143 ]] || fail "watch exited $rc, expected 143 (128 + SIGTERM): $(cat "$dir/watch.err")"
gone() { ! kill -0 "$1" 2>/dev/null || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
gone "$child" || fail "the command's child $child is still running"
gone "$escaped" || { kill -9 "$escaped"; fail "the process that left the group ($escaped) is still running"; }
grep -q "ended 1 process(es) the command left behind" "$dir/watch.err" ||
  fail "the escaped process was not ended by the watcher: $(cat "$dir/watch.err")"
# The supervisor speaks as watch, of the command: the user's command is no rank of ShardScope's.
grep -qxF "shardscope watch: received SIGTERM: forwarding it to the command; it gets SIGKILL if still running in 2 s (send it again to kill it now)" "$dir/watch.err" ||
  fail "the SIGTERM line does not speak of the command: $(cat "$dir/watch.err")"
! grep -qE "rank 0|shardscope launch" "$dir/watch.err" || fail "watch's lines speak of a rank or as launch: $(cat "$dir/watch.err")"
grep -q "launcher started" "$dir/out/output.log" || fail "the command's output is not in output.log"
# On stdout: the command's output, then watch's own line, then the session's summary.
awk '/^launcher started$/ { out = NR } /^shardscope watch: the command ended with exit code 143; the session it recorded:$/ { header = NR }
     /^session 1 / { summary = NR } END { exit !(out && out < header && header + 1 == summary) }' "$dir/watch.out" ||
  fail "stdout is not the command's output, watch's closing line, then the summary: $(cat "$dir/watch.out")"
"$cli" sessions list --db "$dir/w.db" --json | grep -q '"status": "interrupted"' || fail "the session is not interrupted"
cmp -s "$dir/ds.json" <(echo '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}') ||
  fail "the user's config was changed"
grep -q '"enabled": true' "$dir/out/ds_config.json" || fail "the copy does not turn csv_monitor on"
echo "watch_stop: 1 passed, 0 failed"
