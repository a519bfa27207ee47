#!/usr/bin/env python3
"""A small DDP training loop for two GPUs: run with

    torchrun --standalone --nproc_per_node=2 tests/gpu/ddp_loop.py [--steps N]

Each rank drives the GPU of its LOCAL_RANK; gradients are all-reduced by NCCL,
which allocates its own buffers through the driver (VMM, cuMemCreate, by
default), out of sight of PyTorch's allocator and its memory snapshot. Sequence
lengths change every step (the same on every rank, drawn from a fixed seed) so
that the caching allocator splits and caches blocks of many sizes; the data
differ per rank. Deterministic mode makes the losses bit-identical across
allocators and profilers, so they double as the output check.

Rank 0 prints "step N loss X" per step (the loss averaged over ranks), then
"final loss X" and "checksum H" (SHA-256 of every parameter after training,
which DDP keeps identical on all ranks). Every rank prints one line of its own
figures: "rank R device D elapsed S max_memory_allocated A max_memory_reserved B
device_used U snapshot_bytes N", where U is cudaMemGetInfo's used bytes at the
end (the context, NCCL's buffers and the allocator's reserve together) and N the
bytes of the segments torch.cuda.memory_snapshot() lists for the device.
"""
import argparse
import hashlib
import os
import time

# Set before torch (and NCCL) read them. Multicast objects stay off: the check
# must never create one.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch_loop import Block  # noqa: E402  (the same model as the one-GPU loop)


def checksum(params):
    """The parameters' bytes hashed; without numpy, their float64 sum (exact enough
    to tell runs apart, printed with every digit)."""
    params = [p.detach().float().cpu().contiguous() for p in params]
    try:
        h = hashlib.sha256()
        for p in params:
            h.update(p.numpy().tobytes())
        return h.hexdigest()[:16]
    except (ImportError, RuntimeError):
        return repr(sum(float(p.double().sum()) for p in params))


def nccl_version():
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:
        dist.init_process_group("nccl", device_id=dev)
    except TypeError:  # torch before 2.3 binds the device at the first collective
        dist.init_process_group("nccl")
    world = dist.get_world_size()

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False

    model = nn.Sequential(*[Block(args.d, 8, 4 * args.d) for _ in range(args.layers)],
                          nn.Linear(args.d, args.d)).to(dev)
    model = DDP(model, device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    shapes = torch.Generator().manual_seed(args.seed)
    data = torch.Generator().manual_seed(args.seed + 1 + rank)
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    avg = float("nan")
    for step in range(args.steps):
        t = int(torch.randint(64, 513, (1,), generator=shapes))
        x = torch.randn(args.batch, t, args.d, generator=data).to(dev)
        target = torch.randn(args.batch, t, args.d, generator=data).to(dev)
        loss = F.mse_loss(model(x), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        avg = reduced.item() / world
        if rank == 0:
            print(f"step {step} loss {avg!r}", flush=True)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    total = checksum(model.module.parameters())
    free, cap = torch.cuda.mem_get_info(dev)
    # What PyTorch's memory snapshot can see: its allocator's segments, never
    # NCCL's buffers.
    snap = sum(s["total_size"] for s in torch.cuda.memory_snapshot() if s["device"] == local)
    print(f"rank {rank} device {local} elapsed {elapsed:.3f} "
          f"max_memory_allocated {torch.cuda.max_memory_allocated(dev)} "
          f"max_memory_reserved {torch.cuda.max_memory_reserved(dev)} "
          f"device_used {cap - free} snapshot_bytes {snap}", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"final loss {avg!r}")
        print(f"checksum {total}")
        print(f"torch {torch.__version__} nccl {nccl_version()} world {world} "
              f"steps {args.steps} layers {args.layers} d {args.d} batch {args.batch}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
