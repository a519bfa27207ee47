#!/usr/bin/env python3
"""Soak: a bundled workload under random driver faults (SIMCUDA_FAULT), with and
without cudafrag. usage: soak_faults.py LIBCUDAFRAG WORKLOAD [SIMCUDA_MEM]

For each seed, four runs:
  native     the workload alone, faults on the entry points cudafrag never calls
             itself in a native run (allocations, frees, copies, fills, streams,
             events, contexts);
  profiled   the same under cudafrag: the same calls must fail (the fault logs are
             equal), the program must see the same results (exit status, stdout),
             cudafrag must not crash, and its counts must be exact: allocations and
             frees recorded = the successful ones the simulated device saw;
  chaos      under cudafrag, faults on every entry point, cudafrag's own queries
             included: no crash, no hang, counts exact;
  arena      the same with CUDAFRAG_ARENA=1 (the arena's own driver calls fail too):
             no crash, no hang, and the program either finishes with the checksum of a
             fault-free run or stops at a CUDA error it reports.
CF_SOAK_SEEDS (default 4, one per fault probability) seeds from CF_SOAK_SEED_BASE (default 1): raise it for a
longer soak. A failure prints the environment that reproduces it."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cftest import read_report, report_to  # noqa: E402

# Entry points cudafrag calls itself in a native run (sampling and the answers it
# keeps per thread) are left out, so that a run with and without it fails the same
# calls. cuGetProcAddress, cuInit and the device queries are left out too: they
# fail the program before it allocates anything, which teaches nothing.
IDENTITY_TARGETS = ["cuMemAlloc*", "cuMemFree*", "cuMemcpy*", "cuMemset*", "cuStreamCreate*",
                    "cuStreamSynchronize*", "cuStreamDestroy*", "cuEvent*", "cuMemHost*",
                    "cuCtxSynchronize*", "cuDevicePrimaryCtxRetain", "cuMemPoolSetAttribute"]
TIMEOUT_S = 120
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ThreadSanitizer")


class Failure(Exception):
    pass


def rules(targets, prob):
    return ",".join(f"random:{prob}:{t}" for t in targets)


def probability(seed):
    # From a fault within the first calls to none at all in most runs.
    return (0.02, 0.002, 0.0002, 0.00002)[seed % 4]


def run(prog, env, tmp, name):
    log = os.path.join(tmp, name + ".faults")
    stats = os.path.join(tmp, name + ".stats")
    out = os.path.join(tmp, name)
    e = dict(env, SIMCUDA_FAULT_LOG=log, SIMCUDA_STATS_OUT=stats, **report_to(out))
    try:
        p = subprocess.run([prog], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Failure(f"{name}: hung (killed after {TIMEOUT_S} s)")
    res = {"rc": p.returncode, "out": p.stdout.decode(errors="replace"),
           "err": p.stderr.decode(errors="replace"), "faults": "", "alloc_calls": 0,
           "free_calls": 0, "report": None}
    if os.path.exists(log):
        res["faults"] = open(log).read()
    if os.path.exists(stats):
        for line in open(stats):
            f = line.split()
            res["alloc_calls"] += int(f[f.index("alloc_calls") + 1])
            res["free_calls"] += int(f[f.index("free_calls") + 1])
    res["report"] = read_report(out)
    for p_ in (log, stats, out + ".json", out + ".txt"):
        if os.path.exists(p_):
            os.unlink(p_)
    return res


def no_crash(name, r):
    if r["rc"] < 0 or r["rc"] >= 128:
        raise Failure(f"{name}: ended by a signal (status {r['rc']})\n{r['err'][-3000:]}")
    for mark in SANITIZER_MARKS:
        if mark in r["err"]:
            raise Failure(f"{name}: sanitizer report\n{r['err'][-3000:]}")
    if "cudafrag: killed by" in r["err"]:
        raise Failure(f"{name}: crash summary\n{r['err'][-3000:]}")


def counts_exact(name, r):
    rep = r["report"]
    if rep is None:
        if r["alloc_calls"] == 0:
            return  # nothing was allocated: no report is written
        raise Failure(f"{name}: no report, though the device saw {r['alloc_calls']} allocations")
    s = rep["summary"]
    if (s["allocs"], s["frees"]) != (r["alloc_calls"], r["free_calls"]):
        raise Failure(f"{name}: cudafrag counted {s['allocs']} allocations and {s['frees']} frees,"
                      f" the device {r['alloc_calls']} and {r['free_calls']}")


def checksum(out):
    m = re.search(r"^checksum ([0-9a-f]+)$", out, re.M)
    return m.group(1) if m else None


def soak_seed(lib, prog, base_env, seed, golden, tmp):
    p = probability(seed)
    env = dict(base_env, SIMCUDA_FAULT_SEED=str(seed))
    env.pop("LD_PRELOAD", None)
    ident = dict(env, SIMCUDA_FAULT=rules(IDENTITY_TARGETS, p))
    native = run(prog, ident, tmp, "native")
    prof = run(prog, dict(ident, LD_PRELOAD=lib), tmp, "profiled")
    no_crash("profiled", prof)
    if native["faults"] != prof["faults"]:
        raise Failure("profiled: other calls failed than without cudafrag:\n"
                      f"without: {native['faults'][:500]!r}\nwith: {prof['faults'][:500]!r}")
    if (native["rc"], native["out"]) != (prof["rc"], prof["out"]):
        raise Failure(f"profiled: the program saw something else: status {native['rc']} -> "
                      f"{prof['rc']}\nwithout:\n{native['out'][-1000:]}\nwith:\n{prof['out'][-1000:]}")
    counts_exact("profiled", prof)

    chaos_env = dict(env, SIMCUDA_FAULT=f"random:{p}", LD_PRELOAD=lib)
    chaos = run(prog, chaos_env, tmp, "chaos")
    no_crash("chaos", chaos)
    counts_exact("chaos", chaos)

    arena = run(prog, dict(chaos_env, CUDAFRAG_ARENA="1", CUDAFRAG_ARENA_ASYNC="1"), tmp, "arena")
    no_crash("arena", arena)
    if arena["rc"] == 0 and checksum(arena["out"]) != golden:
        raise Failure(f"arena: finished with checksum {checksum(arena['out'])}, not {golden}")
    if arena["rc"] != 0 and "CUDA error" not in arena["out"]:
        raise Failure(f"arena: status {arena['rc']} without a CUDA error\n{arena['out'][-1000:]}")
    return {"native": native, "chaos": chaos, "arena": arena}


def main():
    lib, prog = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    if len(sys.argv) > 3:
        env["SIMCUDA_MEM"] = sys.argv[3]
    env.pop("SIMCUDA_FAULT", None)
    seeds = int(os.environ.get("CF_SOAK_SEEDS", "4"))
    base = int(os.environ.get("CF_SOAK_SEED_BASE", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        clean = run(prog, env, tmp, "clean")
        golden = checksum(clean["out"])
        if clean["rc"] != 0 or golden is None:
            print(f"the workload fails without faults: status {clean['rc']}\n{clean['err']}")
            return 1
        faults = {"native": 0, "chaos": 0, "arena": 0}
        for seed in range(base, base + seeds):
            try:
                got = soak_seed(lib, prog, env, seed, golden, tmp)
            except Failure as f:
                p = probability(seed)
                print(f"FAIL: seed {seed}, {f}")
                print(f"reproduce with SIMCUDA_FAULT_SEED={seed} SIMCUDA_MEM={env.get('SIMCUDA_MEM')}"
                      f" and SIMCUDA_FAULT='{rules(IDENTITY_TARGETS, p)}' (native, profiled) or "
                      f"'random:{p}' (chaos, arena)")
                return 1
            for k in faults:
                faults[k] += got[k]["faults"].count("\n")
        print(f"{os.path.basename(prog)}: {seeds} seeds, injected faults: native/profiled "
              f"{faults['native']}, chaos {faults['chaos']}, arena {faults['arena']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
