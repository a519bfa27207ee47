#!/usr/bin/env python3
"""NCCL's call sites in each rank's report of one scripts/gpu-check-multi.sh run:
what PyTorch's snapshot does not list. One line per site with a frame in NCCL.

    scripts/nccl_sites.py REPORTS TAG
"""
import argparse
import glob
import json
import os


def in_nccl(frames):
    """libnccl.so.2, or NCCL linked into another library: its functions (mangled or
    not) still name it."""
    return any("nccl" in (f.get("module") or "").lower() or
               "nccl" in (f.get("function") or "").lower() for f in frames)


def print_sites(path):
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        print("%s: %s" % (os.path.basename(path), e))
        return
    rank = r.get("program", {}).get("rank", "?")
    for s in r.get("top_sites_by_peak", []):
        site = s.get("site") or {}
        if in_nccl(site.get("frames") or []):
            print("  rank %s NCCL site: %-14s calls %-5d peak live %8.1f MiB  %s" % (
                rank, site.get("api"), s.get("calls") or 0,
                (s.get("peak_live_bytes") or 0) / 1048576.0, site.get("label")))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", help="the folder of the reports, TAG-rankR-PID.json")
    p.add_argument("tag", help="the run, NAME.MODE (e.g. ddp.caching+cf)")
    a = p.parse_args()
    for f in sorted(glob.glob(os.path.join(a.reports, a.tag + "-rank*.json"))):
        print_sites(f)


if __name__ == "__main__":
    main()
