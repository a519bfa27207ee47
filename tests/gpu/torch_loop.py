#!/usr/bin/env python3
"""A small transformer training loop with variable sequence lengths.

Eight pre-norm encoder layers (d=1024, 16 heads, written out so every kernel is
deterministic), batch 8, sequence lengths drawn from 128-1024 with a fixed seed.
Changing shapes make PyTorch's caching allocator split and cache blocks of
many sizes, which is what the allocator settings and cudafrag's arena are
compared on. Deterministic mode makes the final loss bit-identical across
allocators, so it doubles as an output check.

Prints the final loss (repr, all digits), the elapsed time and the
allocator's peak allocated/reserved bytes.
"""
import argparse
import math
import os
import time

# cuBLAS needs a fixed workspace for deterministic results; set before torch loads it.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=55)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")

    model = nn.Sequential(*[Block(args.d, 16, 4 * args.d) for _ in range(args.layers)]).to(dev)
    head = nn.Linear(args.d, args.d).to(dev)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)

    gen = torch.Generator().manual_seed(args.seed)
    torch.cuda.synchronize()
    start = time.perf_counter()
    loss_value = float("nan")
    for _ in range(args.steps):
        t = int(torch.randint(128, 1025, (1,), generator=gen))
        x = torch.randn(args.batch, t, args.d, generator=gen).to(dev)
        target = torch.randn(args.batch, t, args.d, generator=gen).to(dev)
        loss = F.mse_loss(head(model(x)), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_value = loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    print(f"final loss {loss_value!r}")
    print(f"elapsed {elapsed:.3f} s")
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")
    print(f"max_memory_reserved {torch.cuda.max_memory_reserved()}")
    print(f"torch {torch.__version__} steps {args.steps} layers {args.layers} d {args.d} "
          f"batch {args.batch}")


if __name__ == "__main__":
    main()
