#!/usr/bin/env python3
"""The replay's predicted peaks against the real runs of one scripts/gpu-blocks.sh
run: each model of `cudafrag replay --json` on the --blocks trace
(torch-blocks-replay.json), beside PyTorch's max_memory_reserved (the caching and
expandable-segments runs) and the stream-ordered pool's reserved high (the
cudaMallocAsync run's report).

    scripts/replay_vs_real.py OUT
"""
import argparse
import json
import os


def field(out, tag, key):
    for line in open(os.path.join(out, tag + ".out")):
        if line.startswith(key + " "):
            return int(line.split()[1])


def pool_high(out, tag):
    try:
        j = json.load(open(os.path.join(out, tag + ".json")))
    except OSError:
        return None
    return max((p["reserved_high_bytes"] for p in j["pools"]), default=None)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="the run's folder (torch-*.out, torch-async.json, "
                   "torch-blocks-replay.json)")
    out = p.parse_args().out
    real = {"pytorch": field(out, "torch-caching", "max_memory_reserved"),
            "pytorch:expandable_segments=True": field(out, "torch-expandable", "max_memory_reserved"),
            "async-pool": pool_high(out, "torch-async"),
            "async-pool:release_threshold=0": pool_high(out, "torch-async")}
    replay = json.load(open(os.path.join(out, "torch-blocks-replay.json")))
    for m in replay["devices"][0]["models"]:
        r = real.get(m["label"])
        pred = m["peak_footprint_bytes"]
        err = "" if not r else f"{(pred - r) / r * 100:+.1f} %"
        print(f"replay {m['label']:34s} predicts {pred:>14} B; real run {r} B {err}")


if __name__ == "__main__":
    main()
