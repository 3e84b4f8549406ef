#!/usr/bin/env bash
# scripts/install_on_hosts.sh HOSTFILE [PACKAGE.deb]: the same ShardScope build on every host of a
# hostfile, at the path `shardscope launch` starts its node agents from (its own path: the same on
# every host). For each host of the MPI-style hostfile ("name slots=N", # comments) it runs
# `ssh HOST <that path> --version --json` and compares the version and git hash with this one's.
# With PACKAGE.deb (`cpack -G DEB` in build/), a host that lacks the tool or has another build gets
# it: scp to /tmp there, then `sudo apt-get install -y` of it, then the check again. The CLI checked
# against is $SHARDSCOPE_CLI, else `shardscope` on PATH, else build/app/cli/shardscope.
# Exit 0 when every host has this build, 1 when one does not (named, with the fix), 2 for usage.
set -uo pipefail
HOSTFILE=${1:-}
DEB=${2:-}
SSH=(${SHARDSCOPE_SSH:-ssh -o BatchMode=yes -o ConnectTimeout=10})
SCP=(${SHARDSCOPE_SCP:-scp -q -o BatchMode=yes -o ConnectTimeout=10})
usage() { echo "usage: scripts/install_on_hosts.sh HOSTFILE [PACKAGE.deb]" >&2; exit 2; }
[[ -n "$HOSTFILE" ]] || usage
[[ -r "$HOSTFILE" ]] || { echo "install_on_hosts: cannot read the hostfile $HOSTFILE" >&2; exit 2; }
[[ -z "$DEB" || -r "$DEB" ]] || { echo "install_on_hosts: cannot read the package $DEB" >&2; exit 2; }

CLI=${SHARDSCOPE_CLI:-$(command -v shardscope || echo "$(dirname "$0")/../build/app/cli/shardscope")}
[[ -x "$CLI" ]] || { echo "install_on_hosts: no shardscope here ($CLI): build it or set SHARDSCOPE_CLI" >&2; exit 2; }
CLI=$(readlink -f "$CLI")  # the launcher starts agents at its /proc/self/exe, symlinks resolved
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p"; }  # FIELD: one value of a flat JSON line
MINE=$("$CLI" --version --json)
WANT="$(echo "$MINE" | field shardscope_version) (git $(echo "$MINE" | field git_hash))"
echo "this build: $WANT at $CLI"

check() {  # HOST: 0 when it has this build at $CLI; prints what it found
  local out
  out=$("${SSH[@]}" "$1" "$(printf '%q' "$CLI") --version --json" 2>&1)
  local status=$?
  if ((status == 127)) || [[ "$out" == *"not found"* || "$out" == *"No such file"* ]]; then
    echo "$1: no shardscope at $CLI"; return 1
  elif ((status != 0)); then
    echo "$1: not reachable or failing (ssh exit $status: $(echo "$out" | tail -1))"; return 2
  fi
  local have="$(echo "$out" | field shardscope_version) (git $(echo "$out" | field git_hash))"
  [[ "$have" == "$WANT" ]] || { echo "$1: another build: $have"; return 1; }
  local torch=$(echo "$out" | field libtorch_found)
  echo "$1: ok, $have$([[ "$torch" == true ]] || echo "; but no LibTorch at $(echo "$out" | field libtorch_dir): set SHARDSCOPE_LIBTORCH_DIR there")"
}

install_package() {  # HOST
  local name
  name=$(basename "$DEB")
  "${SCP[@]}" "$DEB" "$1:/tmp/$name" &&
    "${SSH[@]}" "$1" "sudo -n apt-get install -y -q /tmp/$name >/dev/null && rm -f /tmp/$name"
}

FAILED=()
while read -r host _; do
  [[ -z "$host" || "$host" == \#* ]] && continue
  check "$host"
  status=$?
  if ((status == 1)) && [[ -n "$DEB" ]]; then
    echo "$host: installing $(basename "$DEB")"
    install_package "$host" && check "$host" && continue
    echo "$host: the install failed (needs ssh without a password and sudo -n there)"
  fi
  ((status == 0)) || FAILED+=("$host")
done < <(sed 's/#.*//' "$HOSTFILE")
if ((${#FAILED[@]})); then
  echo "FAILED: ${FAILED[*]} lack this build; fix: scripts/install_on_hosts.sh $HOSTFILE build/shardscope_<version>_amd64.deb" \
       "(cpack -G DEB in build/ makes it), or copy build/app/cli/ to the same path there"
  exit 1
fi
echo "OK: every host has $WANT"
