#!/usr/bin/env python3
# File: torch_ddp_step.py
# Times training steps of scripts/torch_gpt_trace.py's small GPT with PyTorch on the CPU, one
# thread per process, without the profiler: `single` in this process, `ddp` as
# DistributedDataParallel over gloo with --ranks processes on this machine (each with the same
# micro-batch, so the global batch is ranks x micro-batch). Prints one JSON line: the median step
# time over the steps after --warmup (for ddp, the slowest rank's median: a step ends for all
# ranks together at the gradient all-reduce).
#
# `allreduce` times gloo's all-reduce between --ranks processes over message sizes of 4 KiB to
# 16 MiB and fits time = latency + bytes / bandwidth as whale-profile --links fits MPI's (weights
# 1 / time^2), printing the link in the cluster file's units: the communicator DDP uses, measured
# as whale-profile measures MPI's and NCCL's.
#
# Usage: scripts/torch_ddp_step.py single|ddp|allreduce [--ranks N] [--layers L] [--hidden D]
#                                  [--heads H] [--sequence T] [--vocabulary V] [--micro-batch B]
#                                  [--steps S] [--warmup W]
# Writes nothing; ddp and allreduce listen on a free TCP port of 127.0.0.1.
import argparse
import json
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from torch_gpt_trace import GPT, add_shape_arguments, train_step  # noqa: E402


def step_times(args, model):
    """Seconds of each timed step (after args.warmup untimed ones) of model on fixed tokens."""
    torch.manual_seed(1 + (dist.get_rank() if dist.is_initialized() else 0))
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, args.vocabulary, (args.micro_batch, args.sequence))
    targets = torch.randint(0, args.vocabulary, (args.micro_batch, args.sequence))
    times = []
    for step in range(args.warmup + args.steps):
        if dist.is_initialized():
            dist.barrier()
        start = time.perf_counter()
        train_step(model, optimizer, idx, targets)
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    return times


def new_model(args):
    torch.manual_seed(0)  # every rank starts from the same parameters, as DDP requires
    torch.set_num_threads(1)
    return GPT(args.vocabulary, args.hidden, args.layers, args.sequence, args.heads)


def ddp_rank(rank, args, port, results):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.ranks)
    model = torch.nn.parallel.DistributedDataParallel(new_model(args))
    results[rank] = statistics.median(step_times(args, model))
    dist.destroy_process_group()


ALLREDUCE_SIZES_BYTES = [4096 * 4**i for i in range(7)]  # 4 KiB .. 16 MiB


def allreduce_rank(rank, args, port, results):
    """Median seconds of an in-place all-reduce of each size, into results (rank 0)."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.ranks)
    torch.set_num_threads(1)
    medians = []
    for size in ALLREDUCE_SIZES_BYTES:
        data = torch.ones(size // 4)
        times = []
        for _ in range(args.warmup + args.steps):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(data)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times[args.warmup:]))
    if rank == 0:
        results["medians"] = medians
    dist.destroy_process_group()


def fit_latency_bandwidth(sizes, times):
    """(latency_s, bytes_per_s) minimising sum w (a + b x - y)^2, w = 1 / y^2."""
    w = [1 / (t * t) for t in times]
    sw, swx, swy = sum(w), sum(wi * x for wi, x in zip(w, sizes)), sum(wi * y for wi, y in zip(w, times))
    swxx = sum(wi * x * x for wi, x in zip(w, sizes))
    swxy = sum(wi * x * y for wi, x, y in zip(w, sizes, times))
    slope = (sw * swxy - swx * swy) / (sw * swxx - swx * swx)
    if not slope > 0:
        sys.exit("torch_ddp_step: error: all-reduce times do not grow with the size; rerun on idle cores")
    return max(0.0, (swy - slope * swx) / sw), 1 / slope


def spawn(target, args):
    """Runs target(rank, args, port, results) on args.ranks processes; returns results."""
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(target, args=(args, free_port(), results), nprocs=args.ranks, join=True)
        return dict(results)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["single", "ddp", "allreduce"])
    parser.add_argument("--ranks", type=int, default=2)
    add_shape_arguments(parser, steps=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    if args.mode == "allreduce":
        medians = spawn(allreduce_rank, args)["medians"]
        latency_s, bytes_per_s = fit_latency_bandwidth(ALLREDUCE_SIZES_BYTES, medians)
        print(json.dumps({"mode": "allreduce", "ranks": args.ranks, "latency_us": latency_s * 1e6,
                          "bandwidth_gbps": bytes_per_s * 8 / 1e9,
                          "sizes_bytes": ALLREDUCE_SIZES_BYTES, "median_s": medians}))
        return
    if args.mode == "single":
        median = statistics.median(step_times(args, new_model(args)))
        ranks = 1
    else:
        median = max(spawn(ddp_rank, args).values())
        ranks = args.ranks
    print(json.dumps({"mode": args.mode, "ranks": ranks, "micro_batch": args.micro_batch,
                      "steps_timed": args.steps, "step_s": median}))


if __name__ == "__main__":
    main()
