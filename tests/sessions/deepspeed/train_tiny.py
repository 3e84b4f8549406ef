"""A tiny DeepSpeed training script for ShardScope's interop tests (tests/sessions/CMakeLists.txt).

Runs on the CPU (DS_ACCELERATOR=cpu, gloo) under `deepspeed --num_gpus 2`, with every output the
importers read: the monitors of the config, wall_clock_breakdown and steps_per_print lines, the
flops profiler, comms_logger's log_summary, and a PyTorch profiler Chrome trace per rank.
"""
import argparse
import os
import time

import torch
import deepspeed
import deepspeed.comm as dist
import deepspeed.ops

# DeepSpeed's CPU accelerator JIT-builds a shared-memory allreduce op (minutes on 2 cores); without
# it the collectives go through gloo, which is what this test means to exercise.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--trace-dir", default="")
    parser.add_argument("--stall-rank", type=int, default=-1, help="this rank stops before --stall-step's backward")
    parser.add_argument("--stall-step", type=int, default=3)
    parser.add_argument("--stall-seconds", type=float, default=3600)
    parser.add_argument("--skip-rank", type=int, default=-1,
                        help="average the loss over the ranks after each step, and let this rank skip that "
                             "all-reduce after --skip-step: its peers wait in it until gloo's timeout")
    parser.add_argument("--skip-step", type=int, default=3)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    generator = torch.Generator().manual_seed(1 + engine.global_rank)
    micro_batch = engine.train_micro_batch_size_per_gpu()
    profiler = None
    if args.trace_dir:
        trace = os.path.join(args.trace_dir, f"rank{engine.global_rank}.json")
        profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(trace))
        profiler.start()
    for _ in range(args.steps * engine.gradient_accumulation_steps()):
        x = torch.randn(micro_batch, 16, generator=generator)
        loss = torch.nn.functional.mse_loss(engine(x), x.sum(dim=1, keepdim=True))
        if engine.global_rank == args.stall_rank and engine.global_steps + 1 == args.stall_step:
            time.sleep(args.stall_seconds)  # a stuck rank (a slow data loader): its peers wait in the all-reduce
        engine.backward(loss)
        engine.step()
        if args.skip_rank >= 0 and not (engine.global_rank == args.skip_rank and engine.global_steps == args.skip_step):
            dist.all_reduce(loss.detach().clone())  # the mean loss for the log, as many scripts do
        if engine.is_gradient_accumulation_boundary():
            # DeepSpeed's engine writes no loss to its monitors (its pipeline engine does, under
            # this name); a training script logs its own through the monitor API, as here.
            engine.monitor.write_events([("Train/Samples/train_loss", loss.item(), engine.global_samples)])
            if profiler:
                profiler.step()
    if profiler:
        profiler.stop()
    dist.log_summary()


if __name__ == "__main__":
    main()
