#!/usr/bin/env python3
"""Writes PyTorch profiler (Kineto) Chrome traces of a chosen size, one per rank, for import tests
and benchmarks at scale (issue 35 item 5).

The events have the shape torch 2.x writes (as the fixtures in tests/sessions/import/ copy them):
per step a CPU ProfilerStep#N window, a forward of `--layers` layers (aten::linear > aten::t,
aten::addmm with Input Dims, External id, Sequence number), each op's cudaLaunchKernel with its
ac2g flow, the GEMM kernels with grid/block/registers, a backward with autograd's evaluate_function
and *Backward0 ops linked to their forward op by fwdbwd flows, an NCCL all-reduce kernel, a
host-to-device copy and a memset, the GPU's ProfilerStep#N window, plus python_function events the
importer skips; distributedInfo first and baseTimeNanoseconds after the events, as Kineto does.
Steps are added until the file reaches --mb megabytes.

  scripts/make_kineto_traces.py --out /tmp/traces --ranks 64 --mb 200
  shardscope sessions import --db runs.db $(for r in $(seq 0 63); do echo --trace /tmp/traces/rank$r.json; done)

Prints one line per file: its path, size, steps and events.
"""
import argparse
import os
import random

BASE_NS = 1790000000000000000


def step_events(step, t0, layers, rng, ids):
    """The events of one step starting at t0 (us), and the time its CPU window ends."""
    ev = []
    cpu, gpu = 1000 + 0, 7
    t = t0
    g = t0 + 15.0  # the GPU runs behind the CPU
    ev.append(f'{{"ph": "X", "cat": "python_function", "name": "train.py(42): train_step", "pid": {cpu}, "tid": {cpu}, '
              f'"ts": {t:.3f}, "dur": 1.0}}')
    forward_ops = []
    for layer in range(layers):
        ext = ids["ext"]; ids["ext"] += 3
        seq = ids["seq"]; ids["seq"] += 1
        corr = ids["corr"]; ids["corr"] += 1
        rows = 8 * (1 + layer % 4)
        ev.append(f'{{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": {cpu}, "tid": {cpu}, "ts": {t:.3f}, '
                  f'"dur": 9.0, "args": {{"External id": {ext}, "Sequence number": {seq}, "Fwd thread id": 0, '
                  f'"Input Dims": [[{rows}, 1024], [1024, 1024], [1024]], "Input type": ["float", "float", "float"], '
                  f'"Concrete Inputs": ["", "", ""]}}}}')
        ev.append(f'{{"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": {cpu}, "tid": {cpu}, "ts": {t:.3f}, '
                  f'"dur": 1.5, "args": {{"External id": {ext + 1}, "Sequence number": {seq}, "Fwd thread id": 0, '
                  f'"Input Dims": [[1024, 1024]]}}}}')
        ev.append(f'{{"ph": "s", "id": {ext + 1}, "pid": {cpu}, "tid": {cpu}, "ts": {t:.3f}, "cat": "fwdbwd", '
                  f'"name": "fwdbwd"}}')
        forward_ops.append(ext + 1)
        ev.append(f'{{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": {cpu}, "tid": {cpu}, "ts": {t + 2:.3f}, '
                  f'"dur": 6.5, "args": {{"External id": {ext + 2}, "Input Dims": [[1024], [{rows}, 1024], '
                  f'[1024, 1024], [], []]}}}}')
        ev.append(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {cpu}, "tid": {cpu}, '
                  f'"ts": {t + 3:.3f}, "dur": 4.0, "args": {{"External id": {ext + 2}, "correlation": {corr}}}}}')
        ev.append(f'{{"ph": "s", "id": {corr}, "pid": {cpu}, "tid": {cpu}, "ts": {t + 3:.3f}, "cat": "ac2g", '
                  f'"name": "ac2g"}}')
        dur = 20.0 + rng.random() * 5
        ev.append(f'{{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": {gpu}, '
                  f'"ts": {g:.3f}, "dur": {dur:.3f}, "args": {{"External id": {ext + 2}, "queued": 0, "device": 0, '
                  f'"context": 1, "stream": {gpu}, "correlation": {corr}, "registers per thread": 128, '
                  f'"shared memory": 49152, "blocks per SM": 1.2, "warps per SM": 4.8, "grid": [8, {rows}, 1], '
                  f'"block": [128, 1, 1], "est. achieved occupancy %": 12}}}}')
        ev.append(f'{{"ph": "f", "id": {corr}, "pid": 0, "tid": {gpu}, "ts": {g:.3f}, "cat": "ac2g", "name": "ac2g", '
                  f'"bp": "e"}}')
        t += 10.0
        g += dur + 1.0
    for layer in reversed(range(layers)):
        ext = ids["ext"]; ids["ext"] += 2
        corr = ids["corr"]; ids["corr"] += 1
        ev.append(f'{{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", '
                  f'"pid": {cpu}, "tid": {cpu}, "ts": {t:.3f}, "dur": 12.0, "args": {{"External id": {ext}, '
                  f'"Sequence number": {ids["seq"] - layers + layer}, "Fwd thread id": 1}}}}')
        ev.append(f'{{"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": {cpu}, "tid": {cpu}, '
                  f'"ts": {t + 0.5:.3f}, "dur": 10.0, "args": {{"External id": {ext + 1}, "Sequence number": '
                  f'{ids["seq"] - layers + layer}, "Fwd thread id": 1, "Input Dims": [[8, 1024]]}}}}')
        ev.append(f'{{"ph": "f", "id": {forward_ops[layer]}, "pid": {cpu}, "tid": {cpu}, "ts": {t + 0.5:.3f}, '
                  f'"cat": "fwdbwd", "name": "fwdbwd", "bp": "e"}}')
        ev.append(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {cpu}, "tid": {cpu}, '
                  f'"ts": {t + 2:.3f}, "dur": 4.0, "args": {{"External id": {ext + 1}, "correlation": {corr}}}}}')
        dur = 40.0 + rng.random() * 10
        ev.append(f'{{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_64x64_nn", "pid": 0, "tid": {gpu}, '
                  f'"ts": {g:.3f}, "dur": {dur:.3f}, "args": {{"External id": {ext + 1}, "device": 0, "stream": {gpu}, '
                  f'"correlation": {corr}, "registers per thread": 96, "grid": [16, 8, 1], "block": [256, 1, 1]}}}}')
        t += 13.0
        g += dur + 1.0
    nccl = 300.0 + rng.random() * 50
    ev.append(f'{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage'
              f'<4096ul>)", "pid": 0, "tid": 20, "ts": {g:.3f}, "dur": {nccl:.3f}, "args": {{"device": 0, '
              f'"stream": 20, "correlation": {ids["corr"]}}}}}')
    ev.append(f'{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": {gpu}, '
              f'"ts": {t0 + 5:.3f}, "dur": 2.0, "args": {{"device": 0, "stream": {gpu}, "correlation": '
              f'{ids["corr"] + 1}, "bytes": 65536, "memory bandwidth (GB/s)": 32.768}}}}')
    ev.append(f'{{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": {gpu}, '
              f'"ts": {g + nccl:.3f}, "dur": 1.0, "args": {{"device": 0, "stream": {gpu}, "bytes": 4096}}}}')
    ids["corr"] += 2
    g_end = g + nccl + 2.0
    cpu_end = max(t + 5.0, g_end + 1.0)
    ev.insert(0, f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": {cpu}, "tid": {cpu}, '
                 f'"ts": {t0:.3f}, "dur": {cpu_end - t0:.3f}}}')
    ev.append(f'{{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#{step}", "pid": 0, "tid": {gpu}, '
              f'"ts": {t0 + 15:.3f}, "dur": {g_end - t0 - 15:.3f}, "args": {{"device": 0, "stream": {gpu}}}}}')
    return ev, cpu_end


def write_trace(path, rank, world_size, target_bytes, layers, seed):
    rng = random.Random(seed + rank)
    ids = {"ext": 1, "seq": 1, "corr": 1}
    steps = events = 0
    t = 1000.0
    with open(path, "w", buffering=1 << 20) as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", '
                  '"totalGlobalMem": 85028896768, "computeMajor": 9, "computeMinor": 0}],\n'
                  f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {world_size}}},\n'
                  '  "record_shapes": 1,\n  "traceEvents": [\n')
        written = out.tell()
        first = True
        while written < target_bytes:
            evs, t_end = step_events(steps, t, layers, rng, ids)
            text = ("" if first else ",\n") + ",\n".join("  " + e for e in evs)
            out.write(text)
            written += len(text)
            first = False
            events += len(evs)
            steps += 1
            t = t_end + 20.0
        out.write('\n  ],\n  "traceName": "' + os.path.basename(path) + '",\n  "displayTimeUnit": "ms",\n'
                  f'  "baseTimeNanoseconds": {BASE_NS}\n}}\n')
    return steps, events


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for rank<R>.json")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--mb", type=float, default=100, help="size of each file in MB (10^6 bytes)")
    parser.add_argument("--layers", type=int, default=24, help="layers per step (events per step ~ 13 x layers)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for rank in range(args.ranks):
        path = os.path.join(args.out, f"rank{rank}.json")
        steps, events = write_trace(path, rank, args.ranks, int(args.mb * 1e6), args.layers, args.seed)
        print(f"{path}  {os.path.getsize(path) / 1e6:.1f} MB  {steps} steps  {events} events", flush=True)


if __name__ == "__main__":
    main()
