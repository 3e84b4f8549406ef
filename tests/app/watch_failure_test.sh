#!/usr/bin/env bash
# `shardscope watch` over a command that fails, and over one that cannot be started: its lines
# name the command ("the command (pid N) exited with code 3", "cannot start the command ..."),
# never a rank, exit with the command's code, and record the session as failed.
# usage: watch_failure_test.sh SHARDSCOPE
set -uo pipefail
cli=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
no_rank_words() { ! grep -qE "rank 0|shardscope launch" "$1" || fail "watch's lines speak of a rank or as launch: $(cat "$1")"; }
echo '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}' > "$dir/ds.json"
printf 'echo "failing now" >&2\nexit 3\n' > "$dir/fails.sh"
"$cli" watch --db "$dir/w.db" --out "$dir/out1" -- bash "$dir/fails.sh" --deepspeed_config "$dir/ds.json" \
  > "$dir/fails.out" 2> "$dir/fails.err"
rc=$?
[[ $rc -eq 3 ]] || fail "watch exited $rc, expected the command's 3: $(cat "$dir/fails.err")"
grep -qE "^shardscope watch: the command \(pid [0-9]+\) exited with code 3$" "$dir/fails.err" ||
  fail "the exit is not named as the command's: $(cat "$dir/fails.err")"
grep -qx "shardscope watch: the command ended with exit code 3; the session it recorded:" "$dir/fails.out" ||
  fail "no closing line of watch's on stdout: $(cat "$dir/fails.out")"
no_rank_words "$dir/fails.err"
# A folder passes the check for an executable and exec refuses it.
mkdir "$dir/not-a-program"
"$cli" watch --db "$dir/w.db" --out "$dir/out2" -- "$dir/not-a-program" --deepspeed_config "$dir/ds.json" \
  > "$dir/folder.out" 2> "$dir/folder.err"
rc=$?
[[ $rc -ne 0 ]] || fail "watch over a folder exited 0"
grep -qx "shardscope watch: error: cannot start the command $dir/not-a-program: Permission denied" "$dir/folder.err" ||
  fail "the start failure does not name the command: $(cat "$dir/folder.err")"
no_rank_words "$dir/folder.err"
statuses=$("$cli" sessions list --db "$dir/w.db" --json | grep -c '"status": "failed"')
[[ $statuses -eq 2 ]] || fail "expected 2 failed sessions, got $statuses"
echo "watch_failure: 1 passed, 0 failed"
