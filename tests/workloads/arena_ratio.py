#!/usr/bin/env python3
"""arena_ratio.py LIBCUDAFRAG NAME=EXE...: each bundled workload run under the arena
(CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1, through the preloaded library and its hooks,
on the simulated device) keeps peak mapped / peak live within the arena's goal: 1.05,
and 1.30 for holes, whose floor for any allocator that cannot move live blocks is 1.28
(docs/arena.md). The replay of H200 traces checks the model; this checks the arena the
program really ran on, synchronizations and stream-ordered frees included."""
import json
import os
import subprocess
import sys
import tempfile

BOUND = {"holes": 1.30}
MEMORY = {"holes": "1G"}


def ratio(lib, name, exe, tmp):
    out = os.path.join(tmp, name)
    env = dict(os.environ, LD_PRELOAD=lib, CUDAFRAG_ARENA="1", CUDAFRAG_ARENA_ASYNC="1",
               CUDAFRAG_OUTPUT=out, CUDAFRAG_STDERR="0", SIMCUDA_MEM=MEMORY.get(name, "256M"))
    subprocess.run([exe], env=env, check=True, stdout=subprocess.DEVNULL)
    arena = json.load(open(out + ".json"))["arena_vs_native"]["arena"]
    if not arena.get("active") or not arena.get("peak_live_bytes"):
        raise SystemExit(f"{name}: the arena served nothing")
    return arena["peak_mapped_bytes"] / arena["peak_live_bytes"], arena["driver_calls"]


def main():
    lib, bad = sys.argv[1], 0
    with tempfile.TemporaryDirectory() as tmp:
        for arg in sys.argv[2:]:
            name, exe = arg.split("=", 1)
            r, calls = ratio(lib, name, exe, tmp)
            bound = BOUND.get(name, 1.05)
            ok = r <= bound
            bad += not ok
            print(f"{name}: peak mapped / peak live {r:.4f} (bound {bound}), "
                  f"{calls} arena driver calls{'' if ok else '  <-- over'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
