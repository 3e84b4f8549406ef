#!/usr/bin/env bash
# scripts/install_on_hosts.sh against three hosts through a stand-in ssh that runs the command here
# (host "good"), answers as a shell does for a missing program (host "bare": exit 127), or runs a
# CLI of another build (host "old"): the script must name the two that lack this build, with the
# fix, and exit 1; with only "good" it must exit 0.
# Usage: install_on_hosts_test.sh SOURCE_DIR SHARDSCOPE_CLI
set -uo pipefail
SRC=$1
CLI=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
cat >"$WORK/old_cli" <<'EOS'
#!/bin/sh
echo '{"shardscope_version":"0.0.9","git_hash":"0123456789","libtorch_found":true}'
EOS
cat >"$WORK/ssh" <<EOS
#!/bin/bash
host=\$1; shift
case \$host in
  good) exec bash -c "\$*" ;;
  old) exec "$WORK/old_cli" ;;
  bare) echo "bash: line 1: \${1%% *}: No such file or directory" >&2; exit 127 ;;
  *) echo "ssh: Could not resolve hostname \$host" >&2; exit 255 ;;
esac
EOS
chmod +x "$WORK/ssh" "$WORK/old_cli"
printf 'good slots=2\n# a comment\nbare slots=2  # a bare host\nold slots=1\n' >"$WORK/hostfile"
SHARDSCOPE_SSH="$WORK/ssh" SHARDSCOPE_CLI="$CLI" bash "$SRC/scripts/install_on_hosts.sh" "$WORK/hostfile" >"$WORK/out" 2>&1
status=$?
cat "$WORK/out"
((status == 1)) || fail "exit $status with two hosts lacking the build, not 1"
grep -q "^good: ok" "$WORK/out" || fail "the good host is not ok"
grep -q "^bare: no shardscope at " "$WORK/out" || fail "the bare host is not named as lacking shardscope"
grep -q "^old: another build: 0.0.9 (git 0123456789)" "$WORK/out" || fail "the old host's build is not named"
grep -q "^FAILED: bare old lack this build; fix: scripts/install_on_hosts.sh" "$WORK/out" || fail "no FAILED line with the fix"
printf 'good slots=2\n' >"$WORK/hostfile"
SHARDSCOPE_SSH="$WORK/ssh" SHARDSCOPE_CLI="$CLI" bash "$SRC/scripts/install_on_hosts.sh" "$WORK/hostfile" >"$WORK/out" 2>&1
status=$?
((status == 0)) || { fail "exit $status with every host up to date, not 0"; cat "$WORK/out"; }
bash "$SRC/scripts/install_on_hosts.sh" >/dev/null 2>&1
(($? == 2)) || fail "no hostfile is not a usage error (exit 2)"
((FAILED)) && exit 1
echo "OK"
