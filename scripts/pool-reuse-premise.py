#!/usr/bin/env python3
"""The premise of the pool read cudafrag skips (src/record/sample.c), checked on the
rows of tests/gpu/async_pool_probe.cu (scripts/gpu-blocks.sh writes them on a GPU).

An allocation is covered when the probe's previous allocation or free was a free of
a block on the same stream, of at least the requested size and at most twice it,
with no synchronization, trim, threshold change or new pool in between (the probe is
single-threaded, like the rule). It grew when the pool's reserved bytes after it
exceed those of the row before. Prints both counts per scenario family; exit status
1 when a covered allocation grew.

    scripts/pool-reuse-premise.py async_pool_probe.csv
"""
import argparse
import csv
import sys
from collections import Counter

RESETS = {"sync-stream", "sync-device", "sync-event", "trim", "threshold", "pool"}


def main(path):
    rows = csv.DictReader(line for line in open(path) if not line.startswith("#"))
    covered, grew = Counter(), Counter()
    scenario, sizes, freed, reserved = None, {}, None, 0
    for r in rows:
        if r["scenario"] != scenario:
            scenario, sizes, freed, reserved = r["scenario"], {}, None, 0
        family = scenario.split("-")[0]
        now = int(r["reserved_current"] or 0)
        if r["op"] == "alloc":
            size = int(r["bytes"])
            sizes[r["arg"]] = size
            if (r["result"] == "0" and freed and freed[0] == r["stream"]
                    and freed[1] // 2 <= size <= freed[1]):
                covered[family] += 1
                grew[family] += now > reserved
            freed = None
        elif r["op"] == "free":
            freed = (r["stream"], sizes.get(r["arg"], 0)) if r["result"] == "0" else None
        elif r["op"] in RESETS:
            freed = None
        reserved = now
    for family in sorted(covered):
        print(f"{family:<12} covered {covered[family]:5d}  grew {grew[family]}")
    print(f"{'all':<12} covered {sum(covered.values()):5d}  grew {sum(grew.values())}")
    return 1 if sum(grew.values()) else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="the probe's rows (async_pool_probe.csv)")
    sys.exit(main(p.parse_args().csv))
