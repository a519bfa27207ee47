#!/usr/bin/env python3
"""snapshots.py DIR: writes PyTorch-style memory snapshots (no torch needed)
for `cudafrag import`: valid ones in every pickle protocol from 2 to 5, named
good-*.pickle, and hostile ones, named bad-*.pickle, each with a .expect file
holding a piece of the message `cudafrag import` must print.

snapshots.py --check TRACE_REPORT.json REPLAY.json: holds what cudafrag made
of good-*.pickle against the figures the scenario below was built to give.
snapshots.py --same-events A.cftrace B.cftrace: the two traces hold the same
events (their headers name different snapshots).

snapshots.py --check-views REPORT.txt FOLDED.txt PAGE.html: the text report,
the folded export and the HTML page of the imported trace name the
snapshot's call sites (file:line function), say where the run came from
without a pid or rank it does not have, and name the pools."""
import json
import os
import pickle
import struct
import sys

MiB = 1 << 20
S1, S2, S3 = 0x7F0000000000, 0x7F0002000000, 0x7F0004000000  # segments of device 0


def frame(name, line, filename="train.py"):
    return {"filename": filename, "line": line, "name": name}


# What stacks="all" adds: PyTorch's own Python frames (folded away in the
# report) and C++ frames (left out by the import), innermost first.
CPP = {"filename": "/pytorch/c10/cuda/CUDACachingAllocator.cpp", "line": 1234,
       "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"}
TORCH = frame("forward", 125, "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py")
# Each call site: (what the report shows, its frames).
SITES = {
    "forward": ("forward (python) train.py:10", [CPP, TORCH, frame("forward", 10),
                                                 frame("main", 99)]),
    "mask": ("make_mask (python) model.py:42", [frame("make_mask", 42, "model.py"),
                                                frame("main", 99)]),
    "oom": ("step (python) train.py:57", [CPP, frame("step", 57), frame("main", 99)]),
    "load": ("load (python) data.py:7", [frame("load", 7, "data.py")]),
    "warmup": ("cache_warmup (python) data.py:21", [frame("cache_warmup", 21, "data.py")]),
}


def snapshot():
    """Device 0 follows PyTorch's caching allocator step by step, so the
    pytorch model must reproduce its reserved bytes: a 3 MiB and a 12 MiB
    tensor share a 20 MiB segment, 1000 B takes a 2 MiB small segment, and
    once the 3 MiB tensor is freed a second 12 MiB one cannot fit in the 5 MiB
    left: a 12 MiB segment. Reserved peak 34 MiB, live peak 24 MiB + 1000 B.
    Device 1 saw its history start late: a 4 MiB tensor freed in the window
    was allocated before it, and the segments show a 1 MiB tensor still
    allocated that the window never mentions; 20 MiB reserved throughout."""
    shared = [frame("forward", 10), frame("main", 99)]  # one object, memoized
    t = iter(range(1_700_000_000_000_000, 1_700_000_000_001_000))

    def ev(action, addr, size, **kw):
        e = {"action": action, "addr": addr, "size": size, "stream": 0,
             "time_us": next(t), "frames": shared}
        e.update(kw)
        return e

    dev0 = [
        ev("segment_alloc", S1, 20 * MiB),
        ev("alloc", S1, 3 * MiB, frames=SITES["forward"][1]),
        ev("alloc", S1 + 3 * MiB, 12 * MiB),
        ev("segment_alloc", S2, 2 * MiB),
        ev("alloc", S2, 1000, frames=SITES["mask"][1]),
        ev("free_requested", S1, 3 * MiB),
        ev("free_completed", S1, 3 * MiB),
        ev("segment_alloc", S3, 12 * MiB),
        ev("alloc", S3, 12 * MiB),
        ev("user_defined", 0, 0),  # an action of a newer PyTorch: skipped
        {"action": "oom", "device_free": 123, "size": 1 << 30, "stream": 0,
         "time_us": next(t), "frames": SITES["oom"][1]},
    ]
    # A free's frames are those of the tensor's allocation (stacks="python").
    dev1 = [ev("free_completed", 0x7E0000000000, 4 * MiB, frames=SITES["load"][1])]
    segments = [
        {"device": 0, "address": S1, "total_size": 20 * MiB, "allocated_size": 12 * MiB,
         "active_size": 12 * MiB, "requested_size": 12 * MiB, "stream": 0,
         "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
         "frames": shared,
         "blocks": [{"address": S1, "size": 3 * MiB, "requested_size": 3 * MiB,
                     "state": "inactive", "frames": []},
                    {"address": S1 + 3 * MiB, "size": 12 * MiB, "requested_size": 12 * MiB,
                     "state": "active_allocated", "frames": shared}]},
        {"device": 0, "address": S2, "total_size": 2 * MiB, "stream": 0,
         "blocks": [{"address": S2, "size": 1024, "requested_size": 1000,
                     "state": "active_allocated"}]},
        {"device": 0, "address": S3, "total_size": 12 * MiB, "stream": 0,
         "segment_pool_id": (1, 7),  # a private pool (a CUDA graph's)
         "blocks": [{"address": S3, "size": 12 * MiB, "requested_size": 12 * MiB,
                     "state": "active_allocated"}]},
        {"device": 1, "address": 0x7E0001000000, "total_size": 20 * MiB, "stream": 7,
         "blocks": [{"address": 0x7E0001000000, "size": MiB, "requested_size": MiB,
                     "state": "active_allocated", "frames": SITES["warmup"][1]},
                    {"address": 0x7E0001100000, "size": 19 * MiB, "requested_size": 0,
                     "state": "inactive"}]},
    ]
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": False,
                "roundup_power2_divisions": {"1": 0, "2": 0}}
    return {"segments": segments, "device_traces": [dev0, dev1], "allocator_settings": settings}


def op(code, *operands):
    return bytes([code]) + b"".join(operands)


def proto(body, version=2):
    return op(0x80, bytes([version])) + body + b"."


def uni(s):
    b = s.encode()
    return op(0x8C, bytes([len(b)]), b)


def hostile():
    """(name, bytes, a piece of the expected message)"""
    good = pickle.dumps(snapshot(), protocol=4)
    cycle = bytearray(op(0x80, b"\x02") + op(0x7D) + uni("device_traces") + op(0x5D) +
                      op(0x94))  # a list, memo 0
    cycle += op(0x68, b"\x00") + op(0x61)  # append the list to itself
    cycle += op(0x73) + b"."  # {"device_traces": the list}
    deep = op(0x80, b"\x02") + op(0x5D) * 1000 + op(0x61) * 999 + b"."
    wide = op(0x80, b"\x02") + op(0x5D) * 70000
    marks = op(0x80, b"\x02") + op(0x28) * 300
    return [
        ("empty", b"", "not a pickle"),
        ("garbage", b"\x00\x01\x02 not a pickle at all", "not a pickle"),
        ("protocol0", pickle.dumps(snapshot(), protocol=0), "not a pickle"),
        ("protocol9", proto(op(0x4E), 9), "pickle protocol 9"),
        ("truncated", good[: len(good) // 2], "truncated"),
        ("no-stop", good[:-1], "no STOP"),
        ("global", pickle.dumps({"device_traces": [[os.stat_result((0,) * 10)]]}, protocol=2),
         "is not read"),
        ("reduce", proto(uni("builtins") + uni("eval") + op(0x93)), "is not read"),
        ("deep", deep, "nested more than"),
        ("stack", wide, "values on the stack"),
        ("marks", marks, "open marks"),
        ("memo-get", proto(op(0x68, b"\x05")), "never stored"),
        ("huge-string", proto(op(0x8D, struct.pack("<Q", 1 << 62)) + b"abc"), "truncated"),
        ("long9", proto(op(0x8A, b"\x09", b"\x01" * 9)), "at most 8"),
        ("appends-no-mark", proto(op(0x5D) + op(0x4E) + op(0x65)), "no mark"),
        ("setitems-odd", proto(op(0x7D) + op(0x28) + op(0x4E) + op(0x75)), "odd number"),
        ("underflow", proto(op(0x61)), "underflow"),
        ("two-left", proto(op(0x4E) + op(0x4E)), "STOP with 2 values"),
        ("append-to-int", proto(op(0x4B, b"\x01") + op(0x4E) + op(0x61)), "not a list"),
        ("cycle", bytes(cycle), "is not a dict"),
        ("not-a-dict", pickle.dumps([1, 2, 3], protocol=2), "not a dict"),
        ("no-traces", pickle.dumps({"segments": []}, protocol=2), "device_traces"),
        ("too-many-devices", pickle.dumps({"device_traces": [[]] * 65}, protocol=2),
         "at most 64"),
        ("size-string", pickle.dumps({"device_traces": [[{"action": "alloc", "addr": 1,
                                                          "size": "big", "stream": 0,
                                                          "time_us": 1}]]}, protocol=4),
         "\"size\" is of another type"),
        ("size-negative", pickle.dumps({"device_traces": [[{"action": "alloc", "addr": 1,
                                                            "size": -5, "stream": 0,
                                                            "time_us": 1}]]}, protocol=4),
         "is not a size"),
        ("no-time", pickle.dumps({"device_traces": [[{"action": "alloc", "addr": 1,
                                                      "size": 5, "stream": 0}]]}, protocol=4),
         "\"time_us\" is missing"),
        ("entry-not-dict", pickle.dumps({"device_traces": [[7]]}, protocol=4), "is not a dict"),
    ]


def write(directory):
    os.makedirs(directory, exist_ok=True)
    for p in (2, 3, 4, 5):
        with open(os.path.join(directory, f"good-protocol{p}.pickle"), "wb") as f:
            pickle.dump(snapshot(), f, protocol=p)
    for name, data, expect in hostile():
        with open(os.path.join(directory, f"bad-{name}.pickle"), "wb") as f:
            f.write(data)
        with open(os.path.join(directory, f"bad-{name}.expect"), "w") as f:
            f.write(expect)


def check(report_path, replay_path):
    report, replay = json.load(open(report_path)), json.load(open(replay_path))
    bad = []
    devs = {d["device"]: d for d in report["devices"]}
    want = {0: (34 * MiB, 24 * MiB + 1000), 1: (20 * MiB, 5 * MiB)}
    for d, (footprint, live) in want.items():
        got = devs.get(d, {})
        if got.get("peak_footprint_bytes") != footprint or got.get("peak_live_bytes") != live:
            bad.append(f"report device {d}: footprint {got.get('peak_footprint_bytes')}, "
                       f"live {got.get('peak_live_bytes')}; want {footprint}, {live}")
    if len(report.get("ooms", [])) != 1:
        bad.append(f"report: {len(report.get('ooms', []))} out-of-memory events, want 1")
    rdevs = {d["device"]: d for d in replay["devices"]}
    for d, (footprint, live) in want.items():
        models = {m["label"]: m for m in rdevs.get(d, {}).get("models", [])}
        if rdevs.get(d, {}).get("peak_live_bytes") != live:
            bad.append(f"replay device {d}: peak live {rdevs.get(d, {}).get('peak_live_bytes')}")
        if d == 0 and models.get("pytorch", {}).get("peak_footprint_bytes") != footprint:
            bad.append(f"replay device 0: the pytorch model peaks at "
                       f"{models.get('pytorch', {}).get('peak_footprint_bytes')}, PyTorch "
                       f"reserved {footprint}")
    for b in bad:
        print(b)
    return 1 if bad else 0


def check_views(text_path, folded_path, html_path):
    text, folded, html = (open(p, encoding="utf-8").read()
                          for p in (text_path, folded_path, html_path))
    bad = []

    def want(where, doc, piece):
        if piece not in doc:
            bad.append(f"{where}: no {piece!r}")

    def refuse(where, doc, piece):
        if piece in doc:
            bad.append(f"{where}: {piece!r}")

    for shown, _ in SITES.values():
        want("report", text, "at " + shown)
    want("report", text, "[high] oom: cudaMallocAsync of 1.00 GiB failed with out-of-memory on "
         "device 0 at step (python) train.py:57 (free 123 B of an unknown total)")
    for name in ("CUDACachingAllocator", "linear.py", "(no call site)"):
        refuse("report", text, name)
    # D16: where the run came from; no pid or rank it does not have; no device
    # size of 0 B; the pools named, not their handles.
    want("report", text, "program   imported from ")
    want("report", text, "good-protocol4.pickle (PyTorch memory snapshot)\n")
    for piece in ("pid", "rank", "of 0 B", "0x7079746f72636800"):
        refuse("report", text, piece)
    want("report", text, "  PyTorch caching allocator (with private pools (1, 7)), device 0: ")
    want("report", text, "  PyTorch caching allocator, device 1: ")
    want("folded", folded, "main (train.py:99);forward (train.py:10);cudaMallocAsync (train.py:10) ")
    want("folded", folded, "load (data.py:7);cudaMallocAsync (data.py:7) 4194304\n")
    want("folded", folded, "cache_warmup (data.py:21);cudaMallocAsync (data.py:21) 1048576\n")
    want("page", html, "make_mask (python) model.py:42")  # the table of call sites
    want("page", html, ">forward (train.py:10)<")  # a flame graph's frame
    want("page", html, "imported from a PyTorch memory snapshot")
    for doc, where in ((folded, "folded"), (html, "page")):
        refuse(where, doc, "0xffffff")
    refuse("page", html, "pid 0")
    for b in bad:
        print(b)
    return 1 if bad else 0


def events(path):
    """A trace's bytes after its header (which names the snapshot) and, from
    version 2 on, the header's check word."""
    data = open(path, "rb").read()
    version, length = struct.unpack_from("<II", data, 8)
    return data[16 + length + (4 if version >= 2 else 0):]


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    if sys.argv[1] == "--check-views":
        sys.exit(check_views(sys.argv[2], sys.argv[3], sys.argv[4]))
    if sys.argv[1] == "--same-events":
        sys.exit(0 if events(sys.argv[2]) == events(sys.argv[3]) else 1)
    write(sys.argv[1])
