"""nccl-tests' all_reduce_perf / reduce_scatter_perf / all_gather_perf through torch.distributed, one
process per GPU, so a benchmark can set its collectives' bus bandwidth beside the link's in the same
call. Sizes follow nccl-tests: the whole buffer in bytes (the all-reduce buffer, the reduce-scatter
input, the all-gather output); algbw = size / time, busbw = algbw x 2(n-1)/n (all-reduce) or
x (n-1)/n (the other two). bf16 elements, as the engines' gradient and weight collectives move.
The median of `iters` timed runs after `warmup`, each run timed on the host around a device sync."""
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPS = ("all_reduce", "reduce_scatter", "all_gather")


def bus_factor(op, world):
    return 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world


def _run_op(op, buf, shard):
    if op == "all_reduce":
        dist.all_reduce(buf)
    elif op == "reduce_scatter":
        dist.reduce_scatter_tensor(shard, buf)
    else:
        dist.all_gather_into_tensor(buf, shard)


def _worker(rank, world, sizes, device, port, warmup, iters, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    cuda = device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    target = torch.device("cuda", rank) if cuda else torch.device("cpu")
    sync = (lambda: torch.cuda.synchronize(target)) if cuda else (lambda: None)
    rows = []
    for size in sizes:
        elements = size // 2 // world * world
        buf = torch.randn(elements, device=target).to(torch.bfloat16)
        shard = torch.empty(elements // world, dtype=torch.bfloat16, device=target)
        for op in OPS:
            for _ in range(warmup):
                _run_op(op, buf, shard)
            times = []
            for _ in range(iters):
                sync()
                start = time.perf_counter()
                _run_op(op, buf, shard)
                sync()
                times.append(time.perf_counter() - start)
            t = statistics.median(times)
            nbytes = elements * 2
            algbw = nbytes / t / 1e9
            rows.append({"op": op, "bytes": nbytes, "time_us": t * 1e6, "algbw_gbps": algbw,
                         "busbw_gbps": algbw * bus_factor(op, world)})
        del buf, shard
    if rank == 0:
        results["rows"] = rows
    dist.barrier()
    dist.destroy_process_group()


def sweep(world, min_bytes, max_bytes, device="cuda", port=29650, warmup=5, iters=20):
    """Rows {op, bytes, time_us, algbw_gbps, busbw_gbps} for sizes min_bytes * 2^k up to max_bytes."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_worker, args=(world, sizes, device, port, warmup, iters, results), nprocs=world)
        return list(results["rows"])


def print_sweep(rows):
    print(f"# {'size(B)':>12} {'op':>15} {'time(us)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}")
    for r in rows:
        print(f"  {r['bytes']:>12} {r['op']:>15} {r['time_us']:>10.1f} {r['algbw_gbps']:>12.2f} {r['busbw_gbps']:>12.2f}")


def busbw_at(rows, op, nbytes):
    """The sweep's bus bandwidth for `op` at `nbytes`, interpolated linearly in log(size) between the
    two nearest sizes (the nearest end beyond the sweep's range); None without rows for `op`."""
    import math
    points = sorted((r["bytes"], r["busbw_gbps"]) for r in rows if r["op"] == op)
    if not points:
        return None
    if nbytes <= points[0][0]:
        return points[0][1]
    for (s0, b0), (s1, b1) in zip(points, points[1:]):
        if nbytes <= s1:
            w = (math.log(nbytes) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return b0 + w * (b1 - b0)
    return points[-1][1]
