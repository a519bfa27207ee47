#!/usr/bin/env python3
"""check_torch_pyframes.py REPORT.json [--strict]: the Python lines of
torch_loop.py that a profiled run's call sites reach, from its JSON report
(CUDAFRAG_TOP large enough to list every site). Prints, per innermost
torch_loop.py line, the calls and bytes of the sites under it, and the calls of
the sites without Python frames by reason. With --strict (the run without the
caching allocator), fails unless the forward's attention lines, the loss line and
the optimizer step are each the innermost torch_loop.py line of some site, and
no site says the GIL was released (frames are read without the GIL)."""
import collections
import json
import os
import sys

WANT = {40: "qkv projection", 41: "attention scores", 42: "softmax @ v",
        78: "forward + loss", 81: "optimizer step"}


def main():
    path, strict = sys.argv[1], "--strict" in sys.argv[2:]
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    by_line = collections.Counter()
    bytes_by_line = collections.Counter()
    reasons = collections.Counter()
    for row in report["top_sites_by_peak"]:
        site = row["site"]
        ours = [f["line"] for f in site["frames"]
                if f["python"] and os.path.basename(f["file"] or "") == "torch_loop.py"]
        if ours:
            by_line[ours[0]] += row["calls"]
            bytes_by_line[ours[0]] += row["bytes"]
        else:
            reasons[site["python_frames"] or "no python frames at all"] += row["calls"]
    print(f"{len(report['top_sites_by_peak'])} sites")
    for line, calls in sorted(by_line.items()):
        print(f"  torch_loop.py:{line:<4} {calls:8} calls {bytes_by_line[line] / 2**20:12.1f} MiB"
              f"  {WANT.get(line, '')}")
    for why, calls in reasons.most_common():
        print(f"  no torch_loop.py frame ({why}): {calls} calls")
    failures = []
    if strict:
        failures += [f"no site at torch_loop.py:{ln} ({what})" for ln, what in WANT.items()
                     if ln not in by_line]
        if reasons.get("gil_released"):
            failures.append(f"{reasons['gil_released']} calls say the GIL was released")
    elif not by_line:
        failures.append("no site reaches torch_loop.py")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
