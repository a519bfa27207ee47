#!/usr/bin/env python3
"""The table of one scripts/gpu-check-multi.sh run: one row per run.

Outputs (checksums, the losses of every step) are compared with the program's first
run; the counts, peaks and footprints per rank come from the JSON reports; the NCCL
figure sums the call sites with a frame in NCCL (libnccl, or a function naming it),
which PyTorch's snapshot cannot see.

    scripts/gpu_check_multi_table.py ROWS LOGS REPORTS
"""
import argparse
import glob
import json
import os
import re

from nccl_sites import in_nccl

MIB = 1048576.0
KEY = re.compile(r"^(checksum \S+|final loss \S+|step \d+ loss \S+)$", re.M)


def mib(v):
    return "-" if v is None else "%.1fM" % (v / MIB)


def outputs(logs, tag):
    text = ""
    for f in sorted(glob.glob(os.path.join(logs, tag + ".*out")) +
                    glob.glob(os.path.join(logs, tag + ".out"))):
        text += open(f, errors="replace").read()
    return "\n".join(KEY.findall(text)) or None


def plan(d):
    """multi_gpu.cu's allocations on device d: live peak, allocations."""
    return (3 + 2 * d) * 1048576 + (262144 << d) + (3 + 2 * d) * 1048576 + (65536 << d) + \
        (2 + 2 * d) * 1048576, 5


def nccl_bytes(rep):
    total, calls = 0, 0
    for s in rep.get("top_sites_by_peak", []):
        if in_nccl((s.get("site") or {}).get("frames") or []):
            total += s.get("peak_live_bytes") or 0
            calls += s.get("calls") or 0
    return total, calls


def meminfo(logs, tag):
    got = {}
    for f in glob.glob(os.path.join(logs, tag + "*.out")):
        for m in re.finditer(r"^device (\d+) meminfo above start (\d+)$", open(f).read(), re.M):
            got[int(m.group(1))] = int(m.group(2))
    return got


def torch_lines(logs, tag):
    got = {}
    try:
        text = open(os.path.join(logs, tag + ".out")).read()
    except OSError:
        return got
    for m in re.finditer(r"^rank (\d+) device (\d+) elapsed (\S+) max_memory_allocated (\d+) "
                         r"max_memory_reserved (\d+) device_used (\d+) snapshot_bytes (\d+)",
                         text, re.M):
        got[m.group(1)] = m.groups()
    return got


def device_cell(name, tag, d, mi):
    dev = d.get("device")
    p = "dev%s live %s fp %s allocs %s" % (dev, mib(d.get("peak_live_bytes")),
                                           mib(d.get("peak_footprint_bytes")), d.get("allocs"))
    if name.startswith("multi_gpu"):
        want_live, want_allocs = plan(dev)
        exact = d.get("peak_live_bytes") == want_live and d.get("allocs") == want_allocs
        p += " plan " + ("exact" if exact else "DIFF")
        if dev in mi and "arena" not in tag:
            p += " vs meminfo %+.1fM" % ((mi[dev] - (d.get("peak_footprint_bytes") or 0)) / MIB)
    cc = d.get("meminfo_cross_check", {})
    if cc.get("samples"):
        p += " xcheck max %s" % mib(cc.get("max_deviation_bytes"))
    return p


def report_cell(name, tag, r, mi, tl):
    rank = r.get("program", {}).get("rank", "?")
    parts = [device_cell(name, tag, d, mi) for d in r.get("devices", [])]
    nb, nc = nccl_bytes(r)
    if name == "ddp":
        parts.append("NCCL %s in %d calls" % (mib(nb), nc))
        if rank in tl:
            parts.append("torch reserved %s snapshot %s %ss" % (
                mib(int(tl[rank][4])), mib(int(tl[rank][6])), tl[rank][2]))
    a = r.get("arena_vs_native", {}).get("arena", {})
    if a.get("active"):
        parts.append("arena served %s" % a.get("allocs_served"))
    return "r%s: %s" % (rank, ", ".join(parts))


def rank_cells(logs, reports, name, tag, profiled):
    """Per rank: devices, peak live, footprint, exactness against the plan, NCCL."""
    files = sorted(glob.glob(os.path.join(reports, tag + "-rank*.json")))
    if profiled == "0":
        tl = torch_lines(logs, tag)
        return ["; ".join("r%s torch reserved %s snapshot %s device used %s %ss" % (
            r, mib(int(v[4])), mib(int(v[6])), mib(int(v[5])), v[2]) for r, v in sorted(tl.items()))
                or "-"]
    if not files:
        return ["no report"]
    cells, mi, tl = [], meminfo(logs, tag), torch_lines(logs, tag)
    for f in files:
        try:
            r = json.load(open(f))
        except (OSError, ValueError) as e:
            cells.append("bad report %s: %s" % (os.path.basename(f), e))
            continue
        cells.append(report_cell(name, tag, r, mi, tl))
    try:
        m = json.load(open(os.path.join(reports, tag + ".merge.json")))
        pr = m.get("peak_rank", {})
        cells.append("merge: peak rank %s dev %s fp %s" % (pr.get("rank"), pr.get("device"),
                                                          mib(pr.get("peak_footprint_bytes"))))
    except (OSError, ValueError):
        pass
    return cells


def table_rows(rows, logs, reports):
    first = {}
    table = [("program", "mode", "exit", "output same?", "time", "per rank")]
    order = {}
    for r in rows:
        order.setdefault(r[0], len(order))
    for name, mode, rc, secs, profiled, nranks in sorted(rows, key=lambda r: order[r[0]]):
        tag = name + "." + mode
        key = outputs(logs, tag)
        if name not in first:
            first[name] = key
            same = "ref" if key else "no output"
        else:
            same = "no output" if not key else "same" if key == first[name] else "DIFF"
        status = {"124": "124 timeout", "137": "137 killed"}.get(rc, rc)
        cells = rank_cells(logs, reports, name, tag, profiled)
        table.append((name, mode, status, same, "%.1fs" % float(secs), cells[0]))
        for c in cells[1:]:
            table.append(("", "", "", "", "", c))
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", help="rows.tsv: name, mode, exit status, seconds, profiled, ranks")
    p.add_argument("logs", help="the folder of each run's NAME.MODE[.rankR].out")
    p.add_argument("reports", help="the folder of the reports and merges")
    a = p.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(a.rows)]
    table = table_rows(rows, a.logs, a.reports)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


if __name__ == "__main__":
    main()
