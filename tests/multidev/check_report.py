#!/usr/bin/env python3
"""Checks the JSON report multidev.c leaves: per-device numbers exact, the
rank in the file name, and each device's default pool listed.

Usage: check_report.py DIR PID RANK MODE DEVICE [arena]
MODE: mixed or cross (multidev.c), threads (threads.c); DEVICE: the second device the program used (the first is 0).
Below, "device 1" stands for that second device. With "arena" the run served
cudaMalloc and default-pool allocations from cudafrag's arena: the live numbers
stay exact, while footprints and the pools' own counters are the arena's business.
"""
import json
import os
import sys

MIB = 1024 * 1024

# What multidev.c does, per device: requested bytes of the allocations made, the
# live peak, and what is still live at exit.
# "pool" is the device's default pool; device 1 also has the application's pool.
APP_POOL = {"allocs": 1, "frees": 0, "peak_live_bytes": 2 * MIB}
EXPECT = {
    # Footprints as the simulated device rounds: cudaMalloc to 2 MiB multiples,
    # a default pool's first chunk 32 MiB for requests up to 1 MiB, else the
    # request rounded to 2 MiB. Every allocation raises its device's live bytes by
    # more than 1/16 while that device is current, so each one is sampled.
    "mixed": {
        0: {"peak": 14 * MIB, "live": 9 * MIB, "live_count": 3,
            "footprint": 12 * MIB + 32 * MIB, "granted": 14 * MIB,
            "pool": {"allocs": 2, "frees": 1, "peak_live_bytes": 2 * MIB}},
        1: {"peak": 15 * MIB, "live": 10 * MIB, "live_count": 3,
            "footprint": 12 * MIB + 4 * MIB + 2 * MIB, "granted": 17 * MIB,
            "pool": {"allocs": 1, "frees": 0, "peak_live_bytes": 3 * MIB}},
        "apis": {"cudaMalloc": (5, 22 * MIB), "cudaMallocAsync": (3, 5 * MIB),
                 "cudaMallocFromPoolAsync": (1, 2 * MIB),
                 "cudaFree": (2, 9 * MIB), "cudaFreeAsync": (1, 1 * MIB)},
    },
    "cross": {
        0: {"peak": 14 * MIB, "live": 9 * MIB, "live_count": 3,
            "pool": {"allocs": 2, "frees": 1, "peak_live_bytes": 2 * MIB}},
        1: {"peak": 22 * MIB, "live": 17 * MIB, "live_count": 4,
            "pool": {"allocs": 2, "frees": 0, "peak_live_bytes": 10 * MIB}},
        "apis": {"cudaMalloc": (5, 22 * MIB), "cudaMallocAsync": (4, 12 * MIB),
                 "cudaMallocFromPoolAsync": (1, 2 * MIB),
                 "cudaFree": (2, 9 * MIB), "cudaFreeAsync": (1, 1 * MIB)},
    },
    # 64 rounds per thread of cudaMalloc + cudaMallocAsync (device 0: 256 + 128
    # KiB, device 1: 192 + 64 KiB), then every other one of each freed.
    "threads": {
        0: {"peak": 24 * MIB, "live": 12 * MIB, "live_count": 64,
            "pool": {"allocs": 64, "frees": 32, "peak_live_bytes": 8 * MIB}},
        1: {"peak": 16 * MIB, "live": 8 * MIB, "live_count": 64,
            "pool": {"allocs": 64, "frees": 32, "peak_live_bytes": 4 * MIB}},
        "apis": {"cudaMalloc": (128, 28 * MIB), "cudaMallocAsync": (128, 12 * MIB),
                 "cudaFree": (64, 14 * MIB), "cudaFreeAsync": (64, 6 * MIB)},
        "app_pools": 0,
    },
}
ALLOC_APIS = ("cudaMalloc", "cudaMallocAsync", "cudaMallocFromPoolAsync")
FREE_APIS = ("cudaFree", "cudaFreeAsync")

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def load_report(directory, pid, rank):
    names = sorted(os.listdir(directory))
    want = [f"r-{rank}-{pid}.json", f"r-{rank}-{pid}.txt"]
    expect("report files", names, sorted(want))
    path = os.path.join(directory, want[0])
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_program(rep, pid, rank):
    expect("kind", rep.get("kind"), "final")
    prog = rep.get("program", {})
    expect("program.pid", prog.get("pid"), pid)
    expect("program.rank", prog.get("rank"), str(rank))


def check_devices(rep, want, second, arena):
    devices = {d.get("device"): d for d in rep.get("devices", [])}
    expect("devices listed", sorted(devices), [0, second])
    for dev in (0, 1):
        d = devices.get(0 if dev == 0 else second, {})
        expect(f"device {dev} peak_live_bytes", d.get("peak_live_bytes"), want[dev]["peak"])
        expect(f"device {dev} live_bytes", d.get("live_bytes"), want[dev]["live"])
        expect(f"device {dev} live_count", d.get("live_count"), want[dev]["live_count"])
        # cuMemGetInfo answers for the current device only: the cross allocations
        # cannot be sampled, so only the mixed run has exact footprints.
        if "footprint" in want[dev] and not arena:
            expect(f"device {dev} peak_footprint_bytes", d.get("peak_footprint_bytes"),
                   want[dev]["footprint"])
            expect(f"device {dev} baseline_used_bytes",
                   d.get("meminfo_cross_check", {}).get("baseline_used_bytes"), 0)
            expect(f"device {dev} max_deviation_bytes",
                   d.get("meminfo_cross_check", {}).get("max_deviation_bytes"), 0)
            expect(f"device {dev} peak_granted_bytes", d.get("peak_granted_bytes"),
                   want[dev]["granted"])


def check_summary(rep, want):
    s = rep.get("summary", {})
    allocs = sum(want["apis"].get(name, (0, 0))[0] for name in ALLOC_APIS)
    frees = sum(want["apis"].get(name, (0, 0))[0] for name in FREE_APIS)
    expect("summary.allocs", s.get("allocs"), allocs)
    expect("summary.frees", s.get("frees"), frees)
    expect("summary.unknown_frees", s.get("unknown_frees"), 0)
    expect("summary.peak_live_bytes", s.get("peak_live_bytes"), want[0]["peak"] + want[1]["peak"])
    expect("summary.live_at_report_bytes", s.get("live_at_report_bytes"),
           want[0]["live"] + want[1]["live"])
    expect("summary.live_at_report_count", s.get("live_at_report_count"),
           want[0]["live_count"] + want[1]["live_count"])
    apis = {a.get("name"): a for a in rep.get("apis", [])}
    for name, (calls, nbytes) in want["apis"].items():
        a = apis.get(name, {})
        expect(f"apis.{name}.calls", a.get("calls"), calls)
        expect(f"apis.{name}.bytes", a.get("bytes"), nbytes)
        expect(f"apis.{name}.failures", a.get("failures"), 0)


def check_pools(rep, want, second, arena):
    pools = rep.get("pools", [])
    defaults = [p for p in pools if p.get("default")]
    expect("default pools by device", sorted(p.get("device") for p in defaults), [0, second])
    handles = {p.get("handle") for p in defaults}
    expect("distinct default pool handles", len(handles), 2)
    for p in defaults:
        if p.get("device") not in (0, second):
            continue
        dev = 0 if p.get("device") == 0 else 1
        expect(f"pool of device {dev} created_by_app", p.get("created_by_app"), False)
        expect(f"pool of device {dev} destroyed", p.get("destroyed"), False)
        for key, value in ({} if arena else want[dev]["pool"]).items():
            expect(f"pool of device {dev} {key}", p.get(key), value)
    apps = [p for p in pools if p.get("created_by_app")]
    expect("application pools", len(apps), want.get("app_pools", 1))
    for p in apps:
        expect("application pool default", p.get("default"), False)
        expect("application pool device", p.get("device"), second)
        for key, value in APP_POOL.items():
            expect(f"application pool {key}", p.get(key), value)
    expect("pools listed", len(pools), 2 + want.get("app_pools", 1))


def main():
    if len(sys.argv) not in (6, 7) or sys.argv[4] not in EXPECT or sys.argv[6:] not in ([], ["arena"]):
        print(__doc__, file=sys.stderr)
        return 2
    arena = sys.argv[6:] == ["arena"]
    directory, pid, rank, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    second = int(sys.argv[5])
    want = EXPECT[mode]
    rep = load_report(directory, pid, rank)
    if rep is not None:
        check_program(rep, pid, rank)
        check_devices(rep, want, second, arena)
        check_summary(rep, want)
        check_pools(rep, want, second, arena)
    for f in failures:
        print(f"FAIL ({mode}): {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
