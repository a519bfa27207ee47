#!/usr/bin/env python3
"""The table of one scripts/gpu-check.sh run: one row per run.

The output key (checksum, final loss, result) of each run is compared with the
first run of the same program, and with the checksums recorded on the simulated
device; counts and peaks come from the JSON reports (several reports of one run --
child processes -- are summed).

    scripts/gpu_check_table.py ROWS LOGS REPORTS WORKLOADS_MESON
"""
import argparse
import glob
import json
import os
import re

KEY = re.compile(r"^(checksum \S+|final loss \S+|result \S+|OOM with enough free memory)", re.M)
# Allocation and free APIs shown in the counts column, most telling first (names as
# in the report's apis[]); the rest appear only when none of these was called.
SHOWN = ["cudaMalloc", "cudaFree", "cudaMallocPitch", "cudaMallocAsync", "cudaFreeAsync",
         "cudaMallocFromPoolAsync", "cuMemAlloc", "cuMemFree", "cuMemAllocAsync",
         "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuMemCreate", "cuMemRelease",
         "cuMemMap", "cudaGraphAddMemAllocNode", "cuGraphAddMemAllocNode", "cudaMallocHost",
         "cudaHostAlloc", "cuMemAllocHost", "cuMemHostAlloc"]


def sim_golden(workloads_meson):
    """The checksums recorded on the simulated device: a real GPU must print the same."""
    try:
        return dict(re.findall(r"'(\w+)': '([0-9a-f]{16})'", open(workloads_meson).read()))
    except OSError:
        return {}


def output_key(logs, tag):
    try:
        text = open(os.path.join(logs, tag + ".out"), errors="replace").read()
    except OSError:
        return None
    m = KEY.search(text)
    return m.group(1) if m else None


def api_calls(report):
    out = {}
    for a in report.get("apis", []):
        if isinstance(a, dict) and a.get("calls"):
            out[a.get("name", "?")] = out.get(a.get("name", "?"), 0) + int(a["calls"])
    return out


def mib(v):
    return "-" if v is None else "%.1fM" % (v / 1048576.0)


def report_columns(reports, tag):
    """Counts, peak live and peak footprint from the run's JSON reports (several when
    the program started profiled children: their counts and peaks are added)."""
    files = sorted(glob.glob(os.path.join(reports, tag + "-*.json")))
    if not files:
        return "no report", "-", "-"
    calls, live, foot, extra = {}, 0, 0, []
    for f in files:
        try:
            r = json.load(open(f))
        except (OSError, ValueError) as e:
            return "bad report %s: %s" % (os.path.basename(f), e), "-", "-"
        for k, v in api_calls(r).items():
            calls[k] = calls.get(k, 0) + v
        summary = r.get("summary", {})
        live += summary.get("peak_live_bytes") or 0
        foot += summary.get("peak_footprint_bytes") or 0
        arena = r.get("arena_vs_native", {}).get("arena", {})
        if arena.get("active"):
            extra.append("arena mapped %s served %d" % (mib(arena.get("peak_mapped_bytes")),
                                                         arena.get("allocs_served", 0)))
        if r.get("ooms"):
            extra.append("ooms %d" % len(r["ooms"]))
    shown = [k for k in SHOWN if k in calls] or sorted(calls, key=lambda k: -calls[k])[:4]
    parts = ["%s=%d" % (k, calls[k]) for k in shown[:6]] + extra
    if len(files) > 1:
        parts.append("(%d reports)" % len(files))
    return " ".join(parts) or "no calls", mib(live or None), mib(foot or None)


def cross_check(logs, reports, tag):
    """The computed footprint against cuMemGetInfo: samples taken at new footprint
    peaks, the largest difference seen (summed over devices and reports)."""
    samples, dev = 0, 0
    for f in sorted(glob.glob(os.path.join(reports, tag + "-*.json"))):
        try:
            r = json.load(open(f))
        except (OSError, ValueError):
            continue
        for d in r.get("devices", []):
            c = d.get("meminfo_cross_check", {})
            samples += c.get("samples") or 0
            dev = max(dev, c.get("max_deviation_bytes") or 0)
    m = own_peak(logs, tag)
    text = "%d samples, max diff %s" % (samples, mib(dev)) if samples else "no samples"
    return text + ("" if m == "-" else "; " + m)


def own_peak(logs, tag):
    """A program that prints its own cudaMemGetInfo peak (the holes workload)."""
    try:
        m = re.search(r"peak used above start (\d+)", open(os.path.join(logs, tag + ".out")).read())
    except OSError:
        return "-"
    return "program's own peak %s" % mib(int(m.group(1))) if m else "-"


def torch_peaks(logs, tag):
    try:
        text = open(os.path.join(logs, tag + ".out")).read()
    except OSError:
        return "-"
    a = re.search(r"max_memory_allocated (\d+)", text)
    r = re.search(r"max_memory_reserved (\d+)", text)
    if not a or not r:
        return "-"
    return "torch alloc %s reserved %s" % (mib(int(a.group(1))), mib(int(r.group(1))))


def base_mode(mode):
    """The unprofiled configuration a run belongs to: "no-cache+arena" -> "no-cache";
    the plain workload modes "cudafrag" and "arena" -> "native"."""
    mode = mode.split("+")[0]
    return "native" if mode in ("cudafrag", "arena", "cli") else mode


def table_rows(rows, logs, reports, golden):
    """A run's output is compared with the program's first run; when it differs, also
    with the unprofiled run of its own configuration, so a framework whose result
    depends on its allocator setting (autotuning, workspace sizes) is not blamed on
    cudafrag."""
    first, native = {}, {}
    table = [("workload", "mode", "exit", "output same?", "key counts", "peak live",
              "peak footprint", "vs cuMemGetInfo", "time")]
    order = {}
    for r in rows:
        order.setdefault(r[0], len(order))
    # Runs of one program together, in the order they ran.
    for name, mode, rc, secs, profiled in sorted(rows, key=lambda r: order[r[0]]):
        tag = name + "." + mode
        key = output_key(logs, tag)
        if profiled == "0":
            native.setdefault((name, mode), key)
        if name not in first:
            first[name] = key
            same = "ref" if key else "no output"
            if key and name in golden:
                same += " (= sim)" if key == "checksum " + golden[name] else " (sim DIFF)"
        elif not key:
            same = "no output"
        elif key == first[name]:
            same = "same"
        elif key == native.get((name, base_mode(mode))) and profiled != "0":
            same = "same as " + base_mode(mode)
        else:
            same = "DIFF"
        if profiled != "0":
            counts, live, foot = report_columns(reports, tag)
            check = cross_check(logs, reports, tag)
        else:
            counts, live, foot = (torch_peaks(logs, tag) if name == "torch" else "-"), "-", "-"
            check = own_peak(logs, tag)
        status = {"124": "124 timeout", "137": "137 killed"}.get(rc, rc)
        table.append((name, mode, status, same, counts, live, foot, check, "%.1fs" % float(secs)))
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", help="rows.tsv: name, mode, exit status, seconds, profiled")
    p.add_argument("logs", help="the folder of each run's NAME.MODE.out")
    p.add_argument("reports", help="the folder of each profiled run's NAME.MODE-PID.json")
    p.add_argument("workloads_meson", help="tests/workloads/meson.build (the simulated checksums)")
    a = p.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(a.rows)]
    table = table_rows(rows, a.logs, a.reports, sim_golden(a.workloads_meson))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


if __name__ == "__main__":
    main()
