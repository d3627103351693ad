#!/usr/bin/env python3
# File: gpu_torch_bench.py
# The PyTorch baseline of scripts/gpu-check.sh: a GPT written here (GPT-2's layout: learned
# positions, LayerNorm, tanh GELU, tied head), trained eagerly on random tokens (nothing is
# downloaded) with fused AdamW. `bench` times whale model YAMLs with SDPA attention under bf16
# autocast and prints one JSON line each (tokens/s, step time, peak memory); `grid` writes a CSV of
# peak memory and step time over micro-batches x attention (eager, SDPA) x precision (fp32, bf16)
# for whale-sim's memory model. Both stop cleanly before --deadline-s, keeping what they have.
# Usage: gpu_torch_bench.py bench MODEL_YAML:MICRO_BATCH:STEPS... [--deadline-s T] [--device cpu]
#        gpu_torch_bench.py grid OUT_CSV MODEL_YAML... [--micro-batches 1,2,4] [--steps S]
#                                [--deadline-s T] [--device cpu]
#        gpu_torch_bench.py check MODEL_YAML...   (no GPU, no torch: reads the models, prints them)
import argparse
import gc
import json
import math
import re
import statistics
import sys
import time

START = time.monotonic()


def load_model(path):
    """The GPT shape of a whale model YAML (configs/models/*.yaml): flat `key: value` lines."""
    shape = {}
    for line in open(path):
        m = re.match(r"^(name|family|layers|hidden|heads|sequence|vocabulary):\s*([^#\s]+)", line)
        if m:
            shape[m.group(1)] = m.group(2) if m.group(1) in ("name", "family") else int(m.group(2))
    missing = {"name", "layers", "hidden", "heads", "sequence", "vocabulary"} - shape.keys()
    if missing:
        sys.exit(f"gpu_torch_bench: error: {path}: no {', '.join(sorted(missing))}")
    if shape.get("family", "gpt") != "gpt":
        sys.exit(f"gpu_torch_bench: error: {path}: family {shape['family']}: only gpt is written here")
    return shape


def build(torch, shape, attention, device):
    nn, F = torch.nn, torch.nn.functional
    C, H, T, V = shape["hidden"], shape["heads"], shape["sequence"], shape["vocabulary"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fc_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def attend(self, x):  # x: (B, T, C)
            B = x.shape[0]
            q, k, v = self.qkv(x).view(B, T, 3, H, C // H).permute(2, 0, 3, 1, 4)  # (B, H, T, C/H)
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                s = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)  # (B, H, T, T)
                mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
                y = s.masked_fill(mask, float("-inf")).softmax(-1) @ v
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

        def forward(self, x):
            x = x + self.attend(self.ln1(x))
            return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(shape["layers"]))
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for block in self.blocks:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # tied head: (B, T, V)
            return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))

    return GPT().to(device)


def train(torch, device, shape, micro_batch, attention, precision, steps, deadline_s):
    """Step times (s) of `steps` steps after one warm-up, and the peak memory allocated (bytes;
    0 on the CPU). Stops early once deadline_s (from the script's start) would pass."""
    cuda = device == "cuda"
    if cuda:
        gc.collect()  # the last configuration's model and optimizer, also after out of memory
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(7)
    model = build(torch, shape, attention, device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=True)
    B, T, V = micro_batch, shape["sequence"], shape["vocabulary"]
    idx = torch.randint(0, V, (B, T), device=device)
    targets = torch.randint(0, V, (B, T), device=device)
    times = []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        if step > 0:
            times.append(time.perf_counter() - t0)
        if time.monotonic() - START + (times[-1] if times else 0) > deadline_s:
            break
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    del model, opt, idx, targets, loss
    return times, peak


def cmd_bench(torch, args):
    specs = [spec.split(":") for spec in args.specs]
    for i, (path, micro_batch, steps) in enumerate(specs):
        shape, micro_batch, steps = load_model(path), int(micro_batch), int(steps)
        # Each model gets an equal share of the time left before the deadline.
        share = (args.deadline_s - (time.monotonic() - START)) / (len(specs) - i)
        times, peak = train(torch, args.device, shape, micro_batch, "sdpa", "bf16", steps,
                            time.monotonic() - START + share)
        row = {"model": shape["name"], "micro_batch": micro_batch, "sequence": shape["sequence"],
               "steps_timed": len(times), "attention": "sdpa", "precision": "bf16 autocast",
               "torch": torch.__version__,
               "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
               "peak_memory_gib": peak / 2**30}
        if times:
            # The median of the timed steps after the first quarter (allocator, cuBLAS warm-up).
            step = statistics.median(times[len(times) // 4:])
            row.update(step_s=step, tokens_per_s=micro_batch * shape["sequence"] / step)
        print(json.dumps(row), flush=True)


def cmd_grid(torch, args):
    shapes = [load_model(p) for p in args.models]
    with open(args.out, "w") as out:
        out.write("model,sequence,micro_batch,attention,precision,peak_memory_gib,step_s,status\n")
        out.flush()
        for shape in shapes:
            for mb in [int(m) for m in args.micro_batches.split(",")]:
                for attention in ("eager", "sdpa"):
                    for precision in ("fp32", "bf16"):
                        if time.monotonic() - START > args.deadline_s:
                            return
                        try:
                            times, peak = train(torch, args.device, shape, mb, attention, precision,
                                                args.steps, args.deadline_s)
                            step = f"{statistics.median(times):.6f}" if times else ""
                            row = f"{peak / 2**30:.4f},{step},ok"
                        except torch.cuda.OutOfMemoryError:
                            row = ",,out of memory"
                        out.write(f"{shape['name']},{shape['sequence']},{mb},{attention},"
                                  f"{precision},{row}\n")
                        out.flush()


def main():
    parser = argparse.ArgumentParser(description="PyTorch GPT baseline of scripts/gpu-check.sh")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench")
    bench.add_argument("specs", nargs="+", metavar="MODEL_YAML:MICRO_BATCH:STEPS")
    bench.add_argument("--deadline-s", type=float, default=1e9)
    grid = sub.add_parser("grid")
    grid.add_argument("out")
    grid.add_argument("models", nargs="+")
    grid.add_argument("--micro-batches", default="1,2,4")
    grid.add_argument("--steps", type=int, default=2)
    grid.add_argument("--deadline-s", type=float, default=1e9)
    for p in (bench, grid):
        p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                       help="cpu: a smoke run of the script itself on a machine without a GPU")
    check = sub.add_parser("check")
    check.add_argument("models", nargs="+")
    args = parser.parse_args()
    if args.command == "check":
        for path in args.models:
            print(json.dumps(load_model(path)))
        return
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_torch_bench: error: torch sees no CUDA device")
    (cmd_bench if args.command == "bench" else cmd_grid)(torch, args)


if __name__ == "__main__":
    main()
