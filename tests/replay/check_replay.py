#!/usr/bin/env python3
"""check_replay.py EXIT.json REPLAY.json SWEEP.json SMALL.json RAW_ONLY: what
`cudafrag replay` says of a workload's trace, held against the report the
process wrote at exit and against relations every allocator obeys."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cftest import by_device  # noqa: E402


def main():
    exit_report, replay, sweep, small = (json.load(open(p)) for p in sys.argv[1:5])
    raw_only = sys.argv[5] == "1"
    bad = []
    exit_devs = by_device(exit_report["devices"])
    replayed = sorted(dev["device"] for dev in replay["devices"])
    used = sorted(d for d, x in exit_devs.items() if x["peak_live_bytes"] > 0)
    if not replayed or replayed != used:
        bad.append(f"devices replayed {replayed}, devices the process used {used}")
    for dev in replay["devices"]:
        d = dev["device"]
        models = {m["label"]: m for m in dev["models"]}
        where = f"device {d}"
        if set(models) != {"lower-bound", "driver", "pytorch", "async-pool", "arena"}:
            bad.append(f"{where}: models {sorted(models)}")
            continue
        bound = models["lower-bound"]["peak_footprint_bytes"]
        if bound != dev["peak_live_bytes"]:
            bad.append(f"{where}: lower bound {bound} != peak live {dev['peak_live_bytes']}")
        for label, m in models.items():
            if "error" in m:
                bad.append(f"{where} {label}: {m['error']}")
                continue
            if m["check_violations"]:
                bad.append(f"{where} {label}: {m['check_violations']} invariant violations")
            if m["peak_footprint_bytes"] < bound:
                bad.append(f"{where} {label}: peak {m['peak_footprint_bytes']} below the bound {bound}")
            if m["granted_at_peak_bytes"] < m["live_at_peak_bytes"]:
                bad.append(f"{where} {label}: grants less than is live")
            for k in ("internal_fragmentation_at_peak", "external_fragmentation_at_peak"):
                if not 0 <= m[k] <= 1.0001 and k.startswith("ext"):
                    bad.append(f"{where} {label}: {k} = {m[k]}")
                if m[k] < 0:
                    bad.append(f"{where} {label}: {k} = {m[k]}")
        traced = dev.get("traced", {}).get("peak_footprint_bytes")
        if traced != exit_devs.get(d, {}).get("peak_footprint_bytes"):
            bad.append(f"{where}: traced peak {traced} != the exit report's")
        if raw_only:
            # The driver model replays the driver's own placement: the exit
            # report's footprint, exactly; the arena model is the report's own
            # estimate of --arena (the same shadow model, the same stream).
            want = exit_devs[d]["peak_footprint_bytes"]
            got = models["driver"]["peak_footprint_bytes"]
            if got != want:
                bad.append(f"{where}: driver model peak {got} != the report's footprint {want}")
            shadow = exit_report["arena_vs_native"]["shadow"]
            arena = models["arena"]
            if len(replay["devices"]) == 1 and (
                    arena["peak_footprint_bytes"] != shadow["peak_mapped_bytes"]
                    or arena["driver_calls"] != shadow["driver_calls"]):
                bad.append(f"{where}: arena model {arena['peak_footprint_bytes']} B / "
                           f"{arena['driver_calls']} calls != the report's shadow arena "
                           f"{shadow['peak_mapped_bytes']} B / {shadow['driver_calls']} calls")
    for dev in sweep["devices"]:
        rows = {m["label"]: m for m in dev["models"]}
        if len(dev["sweeps"]) != 2:
            bad.append(f"sweep: {len(dev['sweeps'])} sweeps, want 2")
        for s in dev["sweeps"]:
            tried = [rows[label] for label in s["labels"]]
            fits = [m for m in tried if m["oom"] is None] or tried
            best = min(fits, key=lambda m: (m["peak_footprint_bytes"], m["driver_calls"]))
            if rows[s["best"]]["peak_footprint_bytes"] != best["peak_footprint_bytes"]:
                bad.append(f"sweep {s['knob']}: best {s['best']}, want {best['label']}")
    for dev in small["devices"]:
        if dev["device_memory_bytes"] != 64 << 20 or dev["device_memory_from"] != "option":
            bad.append(f"--device-memory: {dev['device_memory_bytes']} from {dev['device_memory_from']}")
        models = {m["label"]: m for m in dev["models"]}
        # A model runs out where its own footprint first exceeds the device, never
        # before the live bytes alone do.
        for label, m in models.items():
            ran_out = m["oom"] is not None
            if m["peak_footprint_bytes"] > 64 << 20 and not ran_out:
                bad.append(f"64 MiB device: {label} peaks at {m['peak_footprint_bytes']} and fits")
            if models["lower-bound"]["oom"] and (not ran_out or
                                                 m["oom"]["op"] > models["lower-bound"]["oom"]["op"]):
                bad.append(f"64 MiB device: {label} fits where the live bytes alone do not")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
