#!/usr/bin/env python3
"""torch_owners.py: who owns the memory (docs/report.md#owners) on a real GPU.

Run the workload under cudafrag; it writes PyTorch's own figures to STATS:
    cudafrag run --output own -- python3 tests/gpu/torch_owners.py --stats own.stats.json
It multiplies matrices (cuBLAS and cuBLASLt), runs an all_reduce through NCCL on a
one-rank process group when torch.distributed has NCCL, and captures and replays a
CUDA graph (torch.cuda.graph empties PyTorch's cache before it captures).

Then check the report against them:
    python3 tests/gpu/torch_owners.py --check own.json --stats own.stats.json
prints the owners' table and fails unless the framework-cache owner holds at the end
what PyTorch's memory_reserved() says and its peak (its call sites' peaks summed) lies
between max_memory_reserved() and all PyTorch ever reserved (within 1 % or 2 MiB; the
graph capture empties the cache, so segments come and go), NCCL (when it ran) owns
memory of its own, and no site allocating inside cuBLAS is charged to another owner. The last line is "result: ok" or "result: FAILED"."""
import argparse
import json
import os
import socket
import sys

MIB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def matmuls(torch, dev):
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    for _ in range(4):
        c = a @ b
    h = (a.half() @ b.half()).float()  # cuBLASLt
    lin = torch.nn.Linear(4096, 1024, device=dev)
    return float((c.sum() + h.sum() + lin(a).sum()).item())


def all_reduce(torch):
    """NCCL on a one-rank process group; False where torch.distributed has no NCCL."""
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_nccl_available()):
        return False
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dist.init_process_group("nccl", rank=0, world_size=1)
    t = torch.ones(1 << 22, device="cuda:0")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    ok = float(t[0].item()) == 1.0
    dist.destroy_process_group()
    return ok


def graph_capture(torch, dev):
    static_in = torch.randn(2048, 2048, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as PyTorch asks
        for _ in range(3):
            static_out = torch.relu(static_in @ static_in)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = torch.relu(static_in @ static_in)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    return float(static_out.sum().item())


def workload(stats_path):
    import torch
    dev = torch.device("cuda:0")
    matmuls(torch, dev)
    nccl = all_reduce(torch)
    graph_capture(torch, dev)
    torch.cuda.synchronize()
    stats = {"torch": torch.__version__,
             "nccl": nccl,
             "nccl_version": ".".join(map(str, torch.cuda.nccl.version())) if nccl else None,
             "max_memory_reserved": torch.cuda.max_memory_reserved(dev),
             "memory_reserved": torch.cuda.memory_reserved(dev),
             "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
             "memory_stats": torch.cuda.memory_stats(dev)}
    with open(stats_path, "w") as f:
        json.dump(stats, f, indent=1)
    print("workload done: max_memory_reserved %.1f MiB, nccl %s"
          % (stats["max_memory_reserved"] / MIB, nccl))


def table(owners):
    print("%-16s %12s %8s %12s %12s %6s" % ("owner", "peak live", "share", "live at end",
                                            "allocations", "sites"))
    for key, v in sorted(owners.items(), key=lambda kv: -kv[1]["peak_live_bytes"]):
        print("%-16s %9.1f MiB %7.1f%% %8.1f MiB %12d %6d"
              % (key, v["peak_live_bytes"] / MIB, 100 * v["share_of_peak"],
                 v["live_bytes"] / MIB, v["allocations"], v["sites"]))


def check(report_path, stats_path):
    with open(report_path) as f:
        report = json.load(f)
    with open(stats_path) as f:
        stats = json.load(f)
    owners = report.get("owners")
    if not owners:
        print("the report has no owners (schema_version %s)" % report.get("schema_version"))
        print("result: FAILED")
        return 1
    table(owners)
    problems = []
    fc = owners["framework-cache"]
    cache, end = fc["peak_live_bytes"], fc["live_bytes"]
    want, ever = stats["max_memory_reserved"], stats["memory_stats"]["reserved_bytes.all.allocated"]
    slack = lambda v: max(2 * MIB, 0.01 * v)
    print("framework cache: peak %.1f MiB (max_memory_reserved %.1f, reserved ever %.1f), "
          "at end %.1f MiB (memory_reserved %.1f)" % (cache / MIB, want / MIB, ever / MIB,
                                                      end / MIB, stats["memory_reserved"] / MIB))
    # At the end, the owner's live bytes are the cache's segments, exactly.
    if abs(end - stats["memory_reserved"]) > slack(stats["memory_reserved"]):
        problems.append("framework-cache live at end %.1f MiB, memory_reserved %.1f MiB"
                        % (end / MIB, stats["memory_reserved"] / MIB))
    # The owner's peak sums its sites' peaks. torch.cuda.graph() empties the cache
    # before capturing, so segments come and go: the sum lies between the cache's
    # peak and all it ever reserved (on an H100: 468.0 MiB against 402 and 468).
    if not want - slack(want) <= cache <= ever + slack(ever):
        problems.append("framework-cache owner %.1f MiB, outside max_memory_reserved %.1f MiB "
                        ".. reserved ever %.1f MiB" % (cache / MIB, want / MIB, ever / MIB))
    # PyTorch hands cuBLAS and cuBLASLt their workspaces from its own cache (charged to
    # framework-cache, rightly), so cuBLAS may allocate nothing itself: said, not failed.
    # What would be wrong is memory under libcublas charged to anyone else.
    if owners["cublas"]["allocations"] == 0:
        print("note: cuBLAS allocated nothing itself (its workspaces came from PyTorch's cache)")
    for row in report.get("top_sites_by_peak", []):
        site = row["site"]
        mods = [f.get("module") or "" for f in site.get("frames", [])]
        first = next((m for m in mods if m and not m.startswith(("libcudart", "libcuda."))), "")
        if first.startswith("libcublas") and site.get("owner") != "cublas":
            problems.append("a site allocating in %s is charged to %s" % (first, site.get("owner")))
    if stats["nccl"] and owners["nccl"]["allocations"] == 0:
        problems.append("NCCL ran (%s) but owns nothing" % stats["nccl_version"])
    if not stats["nccl"]:
        print("NCCL not available to torch.distributed: not checked")
    for p in problems:
        print("problem: " + p)
    print("result: " + ("FAILED" if problems else "ok"))
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stats", required=True, help="PyTorch's figures (written, or read by --check)")
    ap.add_argument("--check", metavar="REPORT.json", help="check this report against --stats")
    args = ap.parse_args()
    if args.check:
        return check(args.check, args.stats)
    workload(args.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
