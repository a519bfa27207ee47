#!/usr/bin/env python3
"""call_timing.py LIBCUDAFRAG CUDAFRAG STREAM_ASYNC DETECTOR_MIX: which calls are timed.

Stream-ordered allocations and frees are timed 1 in CUDAFRAG_TIME_ONE_IN (default 8),
at random, and their time in the report is estimated from those; every other call is
timed. Checked through the preloaded library on the simulated device:
- default: cudaMallocAsync and cudaFreeAsync of stream_async timed within 6 standard
  deviations of calls / 8 (a binomial count), the text report marks their time "~",
  and every call of detector_mix (cudaMalloc, cudaFree) is timed, unmarked;
- CUDAFRAG_TIME_ONE_IN=1: every call timed, nothing marked;
- CUDAFRAG_TIME_ONE_IN=3: about a third;
- the report `cudafrag report` makes from the trace has the same counts and times."""
import json
import math
import os
import subprocess
import sys
import tempfile

ASYNC = ("cudaMallocAsync", "cudaFreeAsync")


def run(lib, exe, out, **env):
    e = dict(os.environ, LD_PRELOAD=lib, CUDAFRAG_OUTPUT=out, CUDAFRAG_STDERR="0",
             CUDAFRAG_TRACE="1", **env)
    subprocess.run([exe], env=e, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(out + ".json")), open(out + ".txt").read()


def apis(report):
    return {a["name"]: a for a in report["apis"]}


def marked(text, name):
    row = [l for l in text.splitlines() if l.startswith(name + " ")]
    if len(row) != 1:
        raise SystemExit(f"no row for {name} in the text report")
    return "~" in row[0]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    return 0 if cond else 1


def sampled(a, one_in):
    n, k = a["calls"], a["timed_calls"]
    p = 1.0 / one_in
    sd = math.sqrt(n * p * (1 - p))
    return abs(k - n * p) <= 6 * sd and 0 < k < n, f"{k} of {n} timed (expected {n * p:.0f})"


def main():
    lib, cli, stream_async, detector = sys.argv[1:5]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "d")
        rep, text = run(lib, stream_async, out)
        by = apis(rep)
        for name in ASYNC:
            ok, what = sampled(by[name], 8)
            bad += check(ok, f"default, {name}: {what}")
            bad += check(marked(text, name), f"default, {name}: time marked as estimated")
            bad += check(by[name]["time_s"] > 0, f"default, {name}: time estimated")
        for name, a in by.items():
            if name not in ASYNC:
                bad += check(a["timed_calls"] == a["calls"], f"default, {name}: every call timed")
        offline = json.loads(subprocess.run([cli, "report", out + ".cftrace", "--json"],
                                            check=True, capture_output=True, text=True).stdout)
        for name, a in apis(offline).items():
            same = (a["timed_calls"], a["time_s"]) == (by[name]["timed_calls"], by[name]["time_s"])
            bad += check(same, f"trace report, {name}: same timed calls and time")

        rep, text = run(lib, detector, os.path.join(tmp, "m"))
        for name, a in apis(rep).items():
            bad += check(a["timed_calls"] == a["calls"] and not marked(text, name),
                         f"detector_mix, {name}: every call timed, time not marked")

        rep, text = run(lib, stream_async, os.path.join(tmp, "a"), CUDAFRAG_TIME_ONE_IN="1")
        for name, a in apis(rep).items():
            bad += check(a["timed_calls"] == a["calls"] and not marked(text, name),
                         f"CUDAFRAG_TIME_ONE_IN=1, {name}: every call timed")

        rep, _ = run(lib, stream_async, os.path.join(tmp, "t"), CUDAFRAG_TIME_ONE_IN="3")
        for name in ASYNC:
            ok, what = sampled(apis(rep)[name], 3)
            bad += check(ok, f"CUDAFRAG_TIME_ONE_IN=3, {name}: {what}")
    print(f"{bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
