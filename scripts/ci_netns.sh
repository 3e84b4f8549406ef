#!/usr/bin/env bash
# Real hosts for the multi-host tests: network namespaces joined by veth pairs on a bridge, each
# with its own host name (UTS namespace) and its own OpenSSH server, keys made for the run.
#
#   scripts/ci_netns.sh check                  exit 0 when this machine lets us make namespaces, else
#                                              print why and exit 77 (tests then skip)
#   scripts/ci_netns.sh up NAME [HOSTS]        make HOSTS (default 2) hosts; prints the state folder, whose
#                                              `env` file names them (SS_NETNS_*), with `hostfile`, `ssh_config`
#   scripts/ci_netns.sh down NAME              stop the sshd servers, delete the namespaces and the state
#   scripts/ci_netns.sh run NAME HOSTS -- CMD  up, run CMD with the env file's variables, then down (always)
#   scripts/ci_netns.sh sweep                  down every set the multi-host tests made (named ss<PID>)
#                                              whose test process is gone: what a killed test left
#
# Host k (1-based) is namespace NAME-hk with address 10.A.B.k/24 (A.B derived from NAME), host name
# NAME-hk, and sshd on port 22 for root with a fresh key; the bridge lives in namespace NAME-sw, so
# nothing of this touches the machine's own network. Run as root (CI does). Tear down happens even
# when the caller fails: `run` traps EXIT, and `up` removes what it made when it fails half way.
set -euo pipefail

say() { echo "[netns] $*" >&2; }

state_dir() { echo "${TMPDIR:-/tmp}/shardscope-netns-$1"; }

check() {
  [[ $(id -u) -eq 0 ]] || { echo "network namespaces need root (running as uid $(id -u))"; return 77; }
  command -v ip >/dev/null || { echo "iproute2 (ip) is not installed"; return 77; }
  [[ -x /usr/sbin/sshd ]] || { echo "openssh-server (/usr/sbin/sshd) is not installed"; return 77; }
  command -v ssh-keygen >/dev/null || { echo "openssh-client (ssh-keygen) is not installed"; return 77; }
  local probe="ssprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "this machine forbids creating network namespaces (ip netns add failed)"
    return 77
  fi
  ip netns del "$probe"
  unshare --uts true 2>/dev/null || { echo "this machine forbids UTS namespaces (unshare --uts failed)"; return 77; }
}

# Two octets from the name, so namespaces of concurrent test processes never share a subnet.
subnet_of() {
  local sum
  sum=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo "10.$((100 + sum % 100)).$(( (sum / 100) % 250 ))"
}

down() {
  local name=$1 dir
  dir=$(state_dir "$name")
  for pidfile in "$dir"/sshd_*.pid; do
    [[ -f $pidfile ]] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${name}-(h[0-9]+|sw)$" || true); do
    # Whatever still runs inside (an agent, a rank) goes with its namespace.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$dir"
}

sshd_config() {
  local dir=$1 address=$2 k=$3
  cat <<EOF
ListenAddress $address
Port 22
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd_$k.pid
ClientAliveInterval 2
ClientAliveCountMax 3
Subsystem sftp internal-sftp
EOF
}

up() {
  local name=$1 hosts=${2:-2} dir subnet
  dir=$(state_dir "$name")
  subnet=$(subnet_of "$name")
  ip netns list | grep -qE "^${name}-" && { say "namespaces $name-* exist already; run: $0 down $name"; return 1; }
  trap 'down "$name"' ERR
  mkdir -p "$dir" /run/sshd
  chmod 700 "$dir"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  : >"$dir/known_hosts"
  : >"$dir/hostfile"
  ip netns add "$name-sw"
  ip -n "$name-sw" link add br0 type bridge
  ip -n "$name-sw" link set br0 up
  local addresses=()
  for ((k = 1; k <= hosts; k++)); do
    local ns="$name-h$k" address="$subnet.$k"
    ip netns add "$ns"
    ip link add "${name:0:9}v$k" type veth peer name eth0 netns "$ns"
    ip link set "${name:0:9}v$k" netns "$name-sw"
    ip -n "$name-sw" link set "${name:0:9}v$k" master br0 up
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    sshd_config "$dir" "$address" "$k" >"$dir/sshd_$k.conf"
    ip netns exec "$ns" unshare --uts sh -c "hostname $ns && exec /usr/sbin/sshd -f $dir/sshd_$k.conf -E $dir/sshd_$k.log"
    echo "$address $(cut -d' ' -f1,2 "$dir/host_key.pub")" >>"$dir/known_hosts"
    echo "$address slots=2" >>"$dir/hostfile"
    addresses+=("$address")
  done
  cat >"$dir/ssh_config" <<EOF
Host $subnet.*
  User root
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF
  # Every sshd must answer before the hosts count as up.
  for address in "${addresses[@]}"; do
    local tries=0
    until ip netns exec "$name-h1" ssh -F "$dir/ssh_config" "$address" true 2>/dev/null; do
      ((++tries > 50)) && { say "sshd on $address does not answer (see $dir/sshd_*.log)"; return 1; }
      sleep 0.1
    done
  done
  cat >"$dir/env" <<EOF
SS_NETNS_NAME=$name
SS_NETNS_DIR=$dir
SS_NETNS_HOSTS="${addresses[*]}"
SS_NETNS_SSH_CONFIG=$dir/ssh_config
SS_NETNS_HOSTFILE=$dir/hostfile
SS_NETNS_SWITCH=$name-sw
EOF
  trap - ERR
  echo "$dir"
}

# Sets named ss<PID> belong to the test process PID (tests/multihost/host_namespaces.cpp).
sweep() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -nE 's/^(ss[0-9]+)-(h[0-9]+|sw)$/\1/p' | sort -u); do
    pid=${name#ss}
    if [[ ! -d /proc/$pid ]]; then
      say "removing $name, left by test process $pid"
      down "$name"
    fi
  done
}

case "${1:-}" in
  check) check ;;
  sweep) sweep ;;
  up) up "${2:?usage: $0 up NAME [HOSTS]}" "${3:-2}" ;;
  down) down "${2:?usage: $0 down NAME}" ;;
  run)
    name=${2:?usage: $0 run NAME HOSTS -- CMD...}
    hosts=${3:?usage: $0 run NAME HOSTS -- CMD...}
    shift 3
    [[ "${1:-}" == "--" ]] && shift
    trap 'down "$name"' EXIT
    dir=$(up "$name" "$hosts")
    set -a
    # shellcheck disable=SC1091
    source "$dir/env"
    set +a
    "$@"
    ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
