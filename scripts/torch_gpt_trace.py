#!/usr/bin/env python3
# File: torch_gpt_trace.py
# Trains a small GPT on the CPU for a few steps under torch.profiler and writes the Chrome trace,
# its layers named by whale's convention (docs/layer-times.md): record_function ranges
# "layer.<i>.forward", and "layer.<i>.backward" ranges opened and closed by identity autograd
# functions on each layer's output and input: PyTorch builds without Kineto (Debian's
# python3-torch 1.13) write traces without the autograd sequence numbers that link a backward op
# to its forward op, so the backward needs ranges of its own.
#
# Usage: scripts/torch_gpt_trace.py OUT.json [--layers L] [--hidden D] [--sequence T]
#                                   [--micro-batch B] [--steps N]
# Writes only OUT.json. Then:
#   whale-calibrate --layer-times OUT.json --layer-times-device MODEL --layer-times-micro-batch B ...
import argparse

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function

_open_ranges = {}


class _BackwardRangeEdge(torch.autograd.Function):
    """Identity whose backward opens (on a layer's output: it runs before anything of the layer's
    backward) or closes (on a layer's input: it runs once every path through the layer is done)
    the range `name`."""

    @staticmethod
    def forward(ctx, x, name, opens):
        ctx.name, ctx.opens = name, opens
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        if ctx.opens:
            _open_ranges[ctx.name] = torch.ops.profiler._record_function_enter(ctx.name, None)
        else:
            torch.ops.profiler._record_function_exit(_open_ranges.pop(ctx.name))
        return grad, None, None


def _opens(x, name):
    return _BackwardRangeEdge.apply(x, name, True)


def _closes(x, name):
    return _BackwardRangeEdge.apply(x, name, False)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Layer i as whale counts them: 0 the embedding, 1..L the blocks, L+1 the head and loss."""

    def __init__(self, vocab, d, layers, sequence, heads):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(sequence, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        last = len(self.blocks) + 1
        with record_function("layer.0.forward"):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            x = _opens(x, "layer.0.backward")
        for i, block in enumerate(self.blocks, start=1):
            with record_function(f"layer.{i}.forward"):
                x = _closes(x, f"layer.{i}.backward")
                x = _opens(block(x), f"layer.{i}.backward")
        with record_function(f"layer.{last}.forward"):
            x = _closes(x, f"layer.{last}.backward")
            loss = nn.functional.cross_entropy(self.head(self.ln(x)).flatten(0, 1), targets.flatten())
            return _opens(loss, f"layer.{last}.backward")


def train_step(model, optimizer, idx, targets):
    """One training step: forward, backward, optimizer step. model may be wrapped in
    DistributedDataParallel."""
    loss = model(idx, targets)
    optimizer.zero_grad()
    loss.backward()
    for name in list(_open_ranges):  # the embedding's range ends with the backward
        torch.ops.profiler._record_function_exit(_open_ranges.pop(name))
    optimizer.step()


def add_shape_arguments(parser, steps):
    """The model's shape, the micro-batch and the step count, as every script here takes them."""
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--sequence", type=int, default=32)
    parser.add_argument("--vocabulary", type=int, default=256)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    add_shape_arguments(parser, steps=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT(args.vocabulary, args.hidden, args.layers, args.sequence, args.heads)
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, args.vocabulary, (args.micro_batch, args.sequence))
    targets = torch.randint(0, args.vocabulary, (args.micro_batch, args.sequence))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            train_step(model, optimizer, idx, targets)
    prof.export_chrome_trace(args.out)


if __name__ == "__main__":
    main()
