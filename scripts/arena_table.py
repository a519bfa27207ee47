#!/usr/bin/env python3
"""The arena study's table from one scripts/gpu-arena.sh run: per workload and
configuration, the loop time, its ratio to the reference configuration (PyTorch's
caching allocator; the native run for CUDA C programs), peak held / peak live, and
whether the output is the reference's.

    scripts/arena_table.py ROWS LOGS REPORTS
"""
import argparse
import glob
import json
import os
import re

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("rows", help="rows.tsv: name, mode, exit status, seconds, profiled")
p.add_argument("logs", help="the folder of each run's NAME.MODE.out")
p.add_argument("reports", help="the folder of each profiled run's NAME.MODE-PID.json")
args = p.parse_args()
rows_path, logs, reports = args.rows, args.logs, args.reports
KEY = re.compile(r"^(checksum \S+|final loss \S+|result \S+)", re.M)


def text(tag):
    try:
        return open(os.path.join(logs, tag + ".out"), errors="replace").read()
    except OSError:
        return ""


def number(pattern, s):
    m = re.search(pattern, s)
    return float(m.group(1)) if m else None


def report(tag):
    files = sorted(glob.glob(os.path.join(reports, tag + "-*.json")))
    best = None
    for f in files:  # the process that allocated most (a launcher may be profiled too)
        try:
            r = json.load(open(f))
        except (OSError, ValueError):
            continue
        live = (r.get("summary") or {}).get("peak_live_bytes") or 0
        if best is None or live > best[0]:
            best = (live, r)
    return best[1] if best else None


def held_live(name, mode, out):
    if mode in ("caching", "again", "expandable", "async", "async-trace"):
        return number(r"max_memory_reserved (\d+)", out), number(r"max_memory_allocated (\d+)", out), ""
    if mode == "native":
        return None, None, ""
    r = report(name + "." + mode)
    if r is None:
        return None, None, "no report"
    s = r.get("summary") or {}
    live = s.get("peak_live_bytes")
    if mode == "raw":
        return s.get("peak_footprint_bytes"), live, ""
    a = (r.get("arena_vs_native") or {}).get("arena") or {}
    note = "" if a.get("active") else "arena inactive"
    if a.get("ooms"):
        note = "%d arena out-of-memory" % a["ooms"]
    note += " calls %d served %d" % (a.get("driver_calls", 0), a.get("allocs_served", 0))
    return a.get("peak_mapped_bytes"), a.get("peak_live_bytes") or live, note


rows = [line.rstrip("\n").split("\t") for line in open(rows_path)]
ref_time, ref_key = {}, {}
table = [("workload", "config", "exit", "loop s", "vs ref", "peak held", "peak live",
          "held/live", "output", "note")]
for name, mode, rc, wall, _ in rows:
    out = text(name + "." + mode)
    loop = number(r"elapsed ([0-9.]+) s", out)
    secs = loop if loop is not None else float(wall)
    m = KEY.search(out)
    key = m.group(1) if m else None
    if mode in ("caching", "native"):
        ref_time[name], ref_key[name] = secs, key
    held, live, note = held_live(name, mode, out)
    ratio = "%.3f" % (held / live) if held and live else "-"
    vs = "%.2fx" % (secs / ref_time[name]) if ref_time.get(name) else "-"
    same = "ref" if mode in ("caching", "native") else (
        "same" if key and key == ref_key.get(name) else ("DIFF" if key else "none"))
    mib = lambda v: "-" if not v else "%.0f MiB" % (v / 1048576)  # noqa: E731
    table.append((name, mode, rc, "%.2f" % secs + ("" if loop is not None else " (wall)"),
                  vs, mib(held), mib(live), ratio, same, note))
widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]))]
for r in table:
    print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
