#!/usr/bin/env python3
"""Language-model training with a sequence length that changes every step.

Token embedding, pre-norm nn.TransformerEncoderLayer blocks (causal, fused
scaled-dot-product attention under bf16 autocast), an output layer over a
50k-token vocabulary and cross-entropy, AdamW. The logits alone are 0.1-1.6 GB
and change size with the sequence length, drawn per step from a wide set: the
shape mix that makes a caching allocator hold far more than it uses.

Prints the final loss (repr), the loop time and PyTorch's allocator peaks.
"""
import argparse
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from run_figures import print_run  # noqa: E402

SEQ_LENS = (96, 128, 200, 256, 320, 384, 512, 640, 768, 1024, 1280, 1536, 2048)


class LM(nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=tokens.device)
        h = self.body(self.emb(tokens), mask=mask, is_causal=True)
        return self.out(self.norm(h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = LM(args.vocab, args.d, args.layers, 16).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(args.seed)

    torch.cuda.synchronize()
    start = time.perf_counter()
    loss_value = float("nan")
    for _ in range(args.steps):
        t = SEQ_LENS[int(torch.randint(len(SEQ_LENS), (1,), generator=gen))]
        tokens = torch.randint(args.vocab, (args.batch, t + 1), generator=gen).to(dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, args.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_value = loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    print_run(f"final loss {loss_value!r}", elapsed,
              f"torch {torch.__version__} steps {args.steps} vocab {args.vocab} d {args.d}")


if __name__ == "__main__":
    main()
