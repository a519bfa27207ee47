#!/usr/bin/env python3
"""CNN training with multi-scale inputs, the way detectors are trained.

A torchvision ResNet-50 built from its config (no weights downloaded), batch
16, the input size drawn from 320-640 pixels and changed every three batches
(YOLO-style multi-scale training). Every activation, cuDNN workspace and
gradient buffer changes size with the image: a caching allocator keeps blocks
of every past size. Deterministic cuDNN and no TF32, so the final loss is
bit-identical across allocators.

Prints the final loss (repr), the loop time and PyTorch's allocator peaks.
"""
import argparse
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from run_figures import print_run  # noqa: E402

SIZES = (320, 352, 384, 416, 448, 480, 512, 544, 576, 608, 640)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=36)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model = torchvision.models.resnet50(weights=None, num_classes=80).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(args.seed)

    torch.cuda.synchronize()
    start = time.perf_counter()
    loss_value = float("nan")
    size = SIZES[0]
    for step in range(args.steps):
        if step % args.every == 0:
            size = SIZES[int(torch.randint(len(SIZES), (1,), generator=gen))]
        x = torch.randn(args.batch, 3, size, size, generator=gen).to(dev)
        y = torch.randint(80, (args.batch,), generator=gen).to(dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_value = loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    print_run(f"final loss {loss_value!r}", elapsed,
              f"torch {torch.__version__} torchvision {torchvision.__version__} steps {args.steps}")


if __name__ == "__main__":
    main()
