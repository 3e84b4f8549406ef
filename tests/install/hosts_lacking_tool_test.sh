#!/usr/bin/env bash
# `launch --preflight` over a hostfile whose second host lacks shardscope: a stand-in ssh on PATH
# runs the agent here for "localhost" and answers for "bare" as bash does for a missing program
# (exit 127). The preflight must pass the first, fail the second by name with the fix (install
# the same build at the same path: the package, scripts/install_on_hosts.sh), and exit 1.
# Usage: hosts_lacking_tool_test.sh SHARDSCOPE_CLI
set -uo pipefail
CLI=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/ssh" <<'EOS'
#!/bin/bash
command=${@: -1}
host=${@: -2:1}
case $host in
  bare) echo "bash: line 1: exec: ${command#exec }: not found" >&2; exit 127 ;;
  *) exec bash -c "$command" ;;
esac
EOS
chmod +x "$WORK/ssh"
printf 'localhost slots=1\nbare slots=1\n' >"$WORK/hostfile"
PATH="$WORK:$PATH" timeout 120 "$CLI" launch --preflight --hostfile "$WORK/hostfile" --num_procs 1 >"$WORK/out" 2>&1
status=$?
cat "$WORK/out"
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
((status == 1)) || fail "preflight exited with $status, not 1"
grep -Eq "^localhost +yes .* ok$" "$WORK/out" || fail "the host with shardscope is not ok"
grep -q "bare: has no shardscope at the launcher's path" "$WORK/out" || fail "the bare host is not named as lacking shardscope"
grep -q "install the same build there, at the same path: the package (scripts/install_on_hosts.sh" "$WORK/out" ||
  fail "no fix for the bare host"
grep -q "preflight FAILED: bare$" "$WORK/out" || fail "the footer does not name the bare host alone"
((FAILED)) && exit 1
echo "OK"
