#!/usr/bin/env python3
"""compare_reports.py EXIT.json REPLAY.json: the report `cudafrag report TRACE --json`
recomputed from a trace equals the one the process wrote at exit, field by field:
every number, count and flag. Only call-site names may differ (the command reads
DWARF, the exiting process only its symbol tables). Exit status 0 when equal."""
import json
import sys

NAMES = {"frames", "label", "title", "advice", "where", "function", "file"}


def differences(a, b):
    bad = []

    def walk(x, y, path):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if k in NAMES or path + "." + k == ".program.from_trace":
                    continue
                if k not in x or k not in y:
                    bad.append(f"{path}.{k}: only in the {'exit' if k in x else 'replayed'} report")
                else:
                    walk(x[k], y[k], path + "." + k)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                bad.append(f"{path}: {len(x)} vs {len(y)} entries")
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{path}[{i}]")
        elif x != y:
            bad.append(f"{path}: exit {x!r}, replayed {y!r}")

    walk(a, b, "")
    if b.get("program", {}).get("from_trace") is not True:
        bad.append("the replayed report does not say it comes from a trace")
    if a.get("summary", {}).get("allocs", 0) == 0:
        bad.append("no allocation in the exit report: nothing was compared")
    return bad


def main():
    a = json.load(open(sys.argv[1]))
    b = json.load(open(sys.argv[2]))
    bad = differences(a, b)
    for line in bad[:20]:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
