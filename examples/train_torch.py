#!/usr/bin/env python3
"""A PyTorch training loop that speaks yardstick's metric protocol (docs/metric-protocol.md).

Runs on CPU or CUDA, alone or under torchrun (DDP):

    python examples/train_torch.py --steps 40
    torchrun --standalone --nproc-per-node 2 examples/train_torch.py --steps 40
    yardstick bench exec --world-sizes 1,2 --model-params 3276800 --layers 4 --hidden 256 \
        --seq-len 128 --gpu A100 -- torchrun --standalone --nproc-per-node {worldSize} \
        examples/train_torch.py

Every rank appends one JSON line per step to $YARDSTICK_METRICS (nothing is written when it is
unset). When yardstick takes a profile (`profile: {mode: trace, tool: torch}` in a spec, or
`bench exec --profile torch`), the loop runs under torch.profiler through the repository's
`python/yardstick_profile` module, with `data`, `forward`, `backward` and `optimizer` ranges.
The timed region is forward + backward + optimizer step, with CUDA synchronised on both
sides so the time is the GPU's, not the launch queue's; under DDP it includes the gradient
all-reduce. The model is a small GPT (4 layers, hidden 256, vocabulary 512, bias-free linears,
untied head): 12·4·256² + 512·256 = 3,276,800 parameters in matrix multiplies.
"""

import argparse
import json
import os
import resource
import time

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# The profiler contract ships in the repository (python/yardstick_profile); it is inert unless
# yardstick asks for a profile. An installed copy (`pip install python/`) works too.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from yardstick_profile import Profiler  # noqa: E402


class Metrics:
    """The metric protocol: one JSON object per line, appended to $YARDSTICK_METRICS."""

    def __init__(self, rank, world_size):
        path = os.environ.get("YARDSTICK_METRICS")
        self.file = open(path, "a", buffering=1) if path else None
        self.base = {"rank": rank, "world_size": world_size}

    def step(self, **fields):
        if self.file:
            self.file.write(json.dumps({**self.base, **fields}) + "\n")

    def close(self):
        if self.file:
            self.file.close()


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden, bias=False)
        self.proj = nn.Linear(4 * hidden, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.out(y.transpose(1, 2).reshape(b, s, h))
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=512, hidden=256, layers=4, heads=8, seq_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq_len, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def synthetic_batch(gen, successor, batch, seq_len, vocab, device):
    """Tokens from a seeded Markov chain: each token is followed by its successor 90 % of the time."""
    seq = torch.empty(batch, seq_len + 1, dtype=torch.long)
    seq[:, 0] = torch.randint(vocab, (batch,), generator=gen)
    for t in range(seq_len):
        follow = torch.rand(batch, generator=gen) < 0.9
        seq[:, t + 1] = torch.where(
            follow, successor[seq[:, t]], torch.randint(vocab, (batch,), generator=gen)
        )
    return seq[:, :-1].to(device), seq[:, 1:].to(device)


def peak_memory_bytes(device):
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()

    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    distributed = world_size > 1
    if distributed:
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")

    torch.manual_seed(args.seed)  # same initial weights on every rank
    vocab = 512
    model = TinyGPT(vocab=vocab, seq_len=args.seq_len).to(device)
    if distributed:
        ids = [local_rank] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)

    gen = torch.Generator().manual_seed(args.seed)
    successor = torch.randperm(vocab, generator=gen)  # the chain, shared by all ranks
    gen.manual_seed(args.seed * 1000 + rank + 1)  # each rank sees different data
    metrics = Metrics(rank, world_size)
    prof = Profiler()
    tokens = args.batch * args.seq_len
    for step in range(args.steps):
        with prof.phase("data"):
            inputs, targets = synthetic_batch(
                gen, successor, args.batch, args.seq_len, vocab, device
            )
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        with prof.phase("forward"):
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        with prof.phase("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with prof.phase("optimizer"):
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        step_time = time.perf_counter() - t0
        prof.step()
        metrics.step(
            step=step,
            step_time_s=step_time,
            tokens=tokens,
            samples=args.batch,
            loss=loss.item(),
            mem_bytes=peak_memory_bytes(device),
            phase="train",
        )
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step} loss {loss.item():.4f} {step_time * 1e3:.1f} ms", flush=True)
    prof.close()
    metrics.close()
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
