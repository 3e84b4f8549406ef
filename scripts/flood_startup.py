#!/usr/bin/env python3
"""Start-up under a flood (issue 31): a real 2-rank CPU `shardscope launch --session` while another
user holds idle and slow-loris connections on the run's collector port from the moment it appears
in /proc/net/tcp, reconnecting each one the collector closes. Prints one row per run (no flood, then
the flood) with the run's exit code, wall time, the steps recorded and the launcher's peak memory,
and exits 1 when the flooded run fails, records fewer steps, or its launcher's peak memory exceeds
the stated bound.

Loopback only, bounded: the flood stops when the launcher exits or after --max-seconds.

usage: flood_startup.py --shardscope build/app/cli/shardscope [--idle 2000] [--loris 2000]
"""
import argparse
import errno
import os
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

TRAIN = ["--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "64",
         "--seq-len", "16"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def listening_ports(pid):
    """Loopback TCP ports `pid` listens on (state 0A in /proc/net/tcp)."""
    inodes = socket_inodes(pid)
    ports = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            address, port = local.split(":")
            if state == "0A" and inode in inodes and address == "0100007F":
                ports.add(int(port, 16))
    return ports


def peak_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def flood(port, idle, loris, stop_at, stats_path, report_fd):
    """The other user's part (a forked child): hold idle + loris connections, reconnect when closed."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # nobody: another user than the run's
    sel = selectors.DefaultSelector()
    kinds = {}
    opened = reconnected = 0

    def open_one(kind):
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return
        kinds[s] = [kind, 0]
        sel.register(s, selectors.EVENT_READ)
        opened += 1

    for i in range(idle + loris):
        open_one("idle" if i < idle else "loris")
    header = (1000).to_bytes(4, "little") + b"\x00"  # a Hello's length and type, sent a byte a second
    next_trickle = time.monotonic() + 1
    while time.monotonic() < stop_at and os.path.exists(stats_path + ".run"):
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # closed by the collector: take its place again
                kind = kinds.pop(s)[0]
                sel.unregister(s)
                s.close()
                open_one(kind)
                reconnected += 1
        if time.monotonic() >= next_trickle:
            next_trickle += 1
            for s, state in list(kinds.items()):
                if state[0] == "loris" and state[1] < len(header):
                    try:
                        s.send(header[state[1]:state[1] + 1])
                        state[1] += 1
                    except OSError:
                        pass
    os.write(report_fd, f"{opened} {reconnected}\n".encode())
    os._exit(0)


def run(args, work, flooded):
    db = os.path.join(work, f"runs-{'flood' if flooded else 'quiet'}.db")
    cmd = [args.shardscope, "launch", "--num_procs", "2", "--master_port", str(free_port()), "--session", db,
           "--", "--config", os.path.join(work, "ds.json"), *TRAIN, "--steps", str(args.steps)]
    start = time.monotonic()
    launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stats_path = os.path.join(work, "flood-stats")
    child = None
    peak = 0
    while launcher.poll() is None:
        if flooded and child is None:
            ports = listening_ports(launcher.pid)
            if ports:
                open(stats_path + ".run", "w").close()
                report_read, report_write = os.pipe()
                child = os.fork()
                if child == 0:
                    os.close(report_read)
                    flood(min(ports), args.idle, args.loris, time.monotonic() + args.max_seconds, stats_path,
                          report_write)
                os.close(report_write)
        peak = max(peak, peak_kib(launcher.pid) or 0)
        if time.monotonic() - start > args.max_seconds:
            launcher.kill()
        time.sleep(0.01 if child is None else 0.1)
    out, err = launcher.communicate()
    wall = time.monotonic() - start
    opened = reconnected = 0
    if child:
        os.unlink(stats_path + ".run")
        os.waitpid(child, 0)
        report = os.read(report_read, 100).split()
        os.close(report_read)
        if len(report) == 2:
            opened, reconnected = map(int, report)
    steps = 0
    try:
        with sqlite3.connect(db) as c:
            steps = c.execute("SELECT count(*) FROM steps").fetchone()[0]
    except sqlite3.Error:
        pass
    return {"exit": launcher.returncode, "wall": wall, "steps": steps, "peak_mib": peak / 1024,
            "opened": opened, "reconnected": reconnected, "err": err}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shardscope", required=True)
    p.add_argument("--idle", type=int, default=2000)
    p.add_argument("--loris", type=int, default=2000)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--max-seconds", type=float, default=240)
    p.add_argument("--bound-mib", type=float, default=64, help="allowed growth of the launcher's peak memory")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        os.chmod(work, 0o755)
        with open(os.path.join(work, "ds.json"), "w") as f:
            f.write('{"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}')
        quiet = run(args, work, False)
        loud = run(args, work, True)
    print(f"{'run':>8} {'exit':>5} {'wall s':>8} {'steps':>6} {'peak MiB':>9} {'conns opened':>13} {'reopened':>9}")
    for name, r in (("quiet", quiet), ("flooded", loud)):
        print(f"{name:>8} {r['exit']:>5} {r['wall']:>8.1f} {r['steps']:>6} {r['peak_mib']:>9.1f} "
              f"{r['opened']:>13} {r['reconnected']:>9}")
    ok = (loud["exit"] == 0 and loud["steps"] == quiet["steps"] == 2 * args.steps and
          loud["peak_mib"] <= quiet["peak_mib"] + args.bound_mib)
    if not ok:
        sys.stderr.write(loud["err"][-3000:])
    print(f"{'OK' if ok else 'FAILED'}: {args.idle} idle + {args.loris} slow-loris connections from another user; "
          f"bound: peak within {args.bound_mib:.0f} MiB of the quiet run's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
