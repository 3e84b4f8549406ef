#!/usr/bin/env python3
"""Real PyTorch flight recorder dumps of a hung gloo run, for the flight-record import's tests.

Three CPU ranks (gloo) with the flight recorder on (TORCH_FR_BUFFER_SIZE) run a few collectives:
four all-reduces of 1,000 float32 on the world group, one all-reduce of 10 bfloat16 on a group of
ranks 0 and 1 described as "pair", a broadcast; then rank 2 skips the last all-reduce. Ranks 0 and
1 wait in it; while they wait (1.5 s after entering it), each dumps its record, as
TORCH_NCCL_DUMP_ON_TIMEOUT makes NCCL's watchdog do at its timeout; rank 2 dumps once theirs are
written. Each rank writes OUT/nccl_trace_rank_<rank>, torch's default name, with the bytes of
torch._C._distributed_c10d._dump_fr_trace() (the pickle TORCH_NCCL_DUMP_ON_TIMEOUT writes for
NCCL; gloo in torch 2.11 records but does not dump on a timeout, so the ranks ask for it: after
gloo's own timeout the collective is already retired as completed) and, with
--json, nccl_trace_json_rank_<rank> from _dump_fr_trace_json().

usage: ~/.cache/shardscope/venv/bin/python make_flight_record_dumps.py OUT [--json]
(tests/diagnosis/data/flight_record/ holds one run's dumps, made with --json.)
"""
import datetime
import os
import socket
import subprocess
import sys
import time

WORLD = 3
SKIPPING_RANK = 2
WAIT_BEFORE_DUMP_S = 1.5


def rank_main(out, with_json):
    import torch
    import torch.distributed as dist
    import torch._C._distributed_c10d as c10d

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    pair = dist.new_group([0, 1], group_desc="pair")
    grads = torch.ones(1000)
    for _ in range(3):
        dist.all_reduce(grads)
    if rank in (0, 1):
        dist.all_reduce(torch.ones(10, dtype=torch.bfloat16), group=pair)
    dist.broadcast(grads, 0)
    dist.all_reduce(grads)
    if rank == SKIPPING_RANK:  # skips the next all-reduce, then waits for the others' dumps
        deadline = time.time() + 120
        while time.time() < deadline and not all(
                os.path.exists(os.path.join(out, f"nccl_trace_rank_{r}")) for r in range(WORLD) if r != rank):
            time.sleep(0.1)
    else:
        work = dist.all_reduce(grads, async_op=True)
        time.sleep(WAIT_BEFORE_DUMP_S)
        if work.is_completed():
            sys.exit(f"rank {rank}: the all-reduce rank {SKIPPING_RANK} skipped completed")
    write(os.path.join(out, f"nccl_trace_rank_{rank}"), c10d._dump_fr_trace())
    if with_json:
        write(os.path.join(out, f"nccl_trace_json_rank_{rank}"), c10d._dump_fr_trace_json())
    os._exit(0)  # the skipped all-reduce leaves gloo's pairs in a state its teardown waits on


def write(path, data):
    with open(path + ".part", "wb") as f:
        f.write(data)
    os.rename(path + ".part", path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    out = os.path.abspath(sys.argv[1])
    with_json = "--json" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.startswith("nccl_trace_"):
            os.remove(os.path.join(out, name))
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(WORLD),
               TORCH_FR_BUFFER_SIZE="2000", TORCH_NCCL_DUMP_ON_TIMEOUT="1")
    ranks = [subprocess.Popen([sys.executable, __file__, "--rank", out] + (["--json"] if with_json else []),
                              env=dict(env, RANK=str(r))) for r in range(WORLD)]
    codes = [p.wait(timeout=180) for p in ranks]
    if any(codes):
        sys.exit(f"a rank failed: exit codes {codes}")
    print(f"wrote {WORLD} flight recorder dumps to {out}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        rank_main(os.path.abspath(sys.argv[2]), "--json" in sys.argv[3:])
    else:
        main()
