#!/usr/bin/env python3
"""Inference with a growing KV cache: prefill, then token-by-token decode.

A 12-layer bf16 decoder (d=2048) serves a queue of requests of different
batch sizes, prompt lengths and generation lengths. Each layer's key/value
cache grows by one token per step through torch.cat, the way simple serving
code does it: every step frees the old cache and allocates one slightly larger,
for every layer, while the prompt-sized prefill buffers come and go between
requests. Greedy decoding is deterministic, so the checksum of the generated
tokens is identical across allocators.

Prints a checksum of the generated tokens, the loop time and PyTorch's
allocator peaks.
"""
import argparse
import os
import time

# cuBLAS needs a fixed workspace for deterministic results; set before torch loads it.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from run_figures import print_run  # noqa: E402

# (batch, prompt length, tokens generated)
REQUESTS = ((4, 512, 160), (1, 3072, 96), (8, 128, 200), (2, 1536, 128), (16, 256, 96),
            (1, 64, 256), (6, 768, 120), (3, 2048, 80))


class Decoder(torch.nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        self.heads = heads
        self.emb = torch.nn.Embedding(vocab, d)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(d, 3 * d, bias=False) for _ in range(layers))
        self.proj = torch.nn.ModuleList(torch.nn.Linear(d, d, bias=False) for _ in range(layers))
        self.ff1 = torch.nn.ModuleList(torch.nn.Linear(d, 4 * d, bias=False) for _ in range(layers))
        self.ff2 = torch.nn.ModuleList(torch.nn.Linear(4 * d, d, bias=False) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(d)
        self.out = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, cache):
        x = self.emb(tokens)
        b, t, d = x.shape
        for i in range(len(self.qkv)):
            q, k, v = self.qkv[i](F.layer_norm(x, (d,))).view(b, t, 3, self.heads, -1).unbind(2)
            q, k, v = (z.transpose(1, 2) for z in (q, k, v))
            if cache[i] is not None:
                k = torch.cat([cache[i][0], k], dim=2)
                v = torch.cat([cache[i][1], v], dim=2)
            cache[i] = (k, v)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=cache[i][0].shape[2] == t)
            x = x + self.proj[i](a.transpose(1, 2).reshape(b, t, d))
            x = x + self.ff2[i](F.gelu(self.ff1[i](F.layer_norm(x, (d,)))))
        return self.out(self.norm(x[:, -1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--gen-scale", type=float, default=1.0, help="scale the tokens generated")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    model = Decoder(args.vocab, args.d, args.layers, 16).to(dev, torch.bfloat16).eval()
    gen = torch.Generator().manual_seed(args.seed)

    torch.cuda.synchronize()
    start = time.perf_counter()
    checksum = 0
    with torch.inference_mode():
        for _ in range(args.rounds):
            for batch, prompt, new in REQUESTS:
                new = max(2, int(new * args.gen_scale))
                tokens = torch.randint(args.vocab, (batch, prompt), generator=gen).to(dev)
                cache = [None] * args.layers
                nxt = model(tokens, cache).argmax(-1, keepdim=True)
                out = [nxt]
                for _ in range(new - 1):
                    nxt = model(nxt, cache).argmax(-1, keepdim=True)
                    out.append(nxt)
                generated = torch.cat(out, dim=1).cpu()
                checksum = (checksum * 1000003 + int((generated * torch.arange(
                    1, generated.numel() + 1).view_as(generated)).sum())) % (1 << 61)
                del cache, out, nxt, tokens
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    print_run(f"checksum {checksum:016x}", elapsed,
              f"torch {torch.__version__} requests {len(REQUESTS)} rounds {args.rounds}")


if __name__ == "__main__":
    main()
