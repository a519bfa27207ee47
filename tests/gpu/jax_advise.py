#!/usr/bin/env python3
"""`cudafrag advise` for JAX against XLA's own allocator, on a GPU.

  jax_advise.py CUDAFRAG OUTDIR [--steps N]

For each loop shape of jax_loop.py the loop runs under `cudafrag run --blocks
--trace` (each buffer its own cuMemAlloc), `cudafrag advise --json` reads the
trace, and the loop then runs natively with XLA's BFC allocator:
  - growing (XLA_PYTHON_CLIENT_PREALLOCATE=false): its real peak_pool_bytes
    against the xla-bfc model's prediction for that setting;
  - the advised XLA_PYTHON_CLIENT_MEM_FRACTION: it must run, and its pool is
    the limit the advice predicted;
  - preallocating 80 % of the smallest pool the model says fits: whether the
    run needs what the model says (an out-of-memory failure here is agreement).
Prints one table row per run and exits 1 when the advised fraction fails or
the growing prediction is more than 3 % off."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "jax_loop.py")
XLA_VARS = ("XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_PREALLOCATE",
            "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION")


def run(cmd, out, env_extra=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in XLA_VARS}
    env.update(env_extra or {})
    with open(out + ".out", "w") as o, open(out + ".err", "w") as e:
        try:
            rc = subprocess.run(cmd, stdout=o, stderr=e, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    stats = {}
    for line in open(out + ".out"):
        k, _, v = line.strip().partition(" ")
        if k in ("peak_pool_bytes", "bytes_limit", "peak_bytes_in_use") and v.isdigit():
            stats[k] = int(v)
    return rc, stats


class Rows(list):
    """The table, each row printed as it comes: a run cut short still shows its rows."""

    def append(self, r):
        super().append(r)
        print(f"{r[0]:<7} {r[1]:<44} {str(r[2]):>14} {str(r[3]):>24} {r[4]:>7}", flush=True)


def setting(adv, pred):
    for s in adv["devices"][0]["settings"]:
        if pred(s["conf"]):
            return s
    return None


def shape(cf, outdir, name, steps, rows):
    base = os.path.join(outdir, "jax-" + name)
    loop = [sys.executable, LOOP, "--shape", name, "--steps", str(steps)]
    rc, _ = run([cf, "run", "--blocks", "--trace", "--output", base, "--"] + loop, base + "-blocks")
    if rc != 0:
        rows.append((name, "--blocks run", "-", f"failed ({rc})", "-"))
        return False
    with open(base + ".advice.json", "w") as o:
        subprocess.run([cf, "advise", "--json", base + ".cftrace"], stdout=o, check=False)
    with open(base + ".advice.txt", "w") as o:
        subprocess.run([cf, "advise", base + ".cftrace"], stdout=o, check=False)
    adv = json.load(open(base + ".advice.json"))
    dev = adv["devices"][0]
    ok = True

    grow = setting(adv, lambda c: c == "XLA_PYTHON_CLIENT_PREALLOCATE=false")
    rc, st = run(loop, base + "-grow", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    real = st.get("peak_pool_bytes")
    err = (grow["peak_reserved_bytes"] / real - 1) if real and grow else None
    rows.append((name, "PREALLOCATE=false", grow and grow["peak_reserved_bytes"],
                 real if rc == 0 else f"failed ({rc})", "-" if err is None else f"{err:+.1%}"))
    ok &= rc == 0 and err is not None and abs(err) <= 0.03

    rec = dev["recommended"]
    if rec and "MEM_FRACTION" in rec["conf"]:
        var, _, frac = rec["conf"].partition("=")
        rc, st = run(loop, base + "-advised", {var: frac})
        real = st.get("peak_pool_bytes")
        rows.append((name, rec["conf"], rec["peak_reserved_bytes"],
                     real if rc == 0 else f"failed ({rc})",
                     f"{rec['peak_reserved_bytes'] / real - 1:+.1%}" if real else "-"))
        ok &= rc == 0
    else:
        rows.append((name, "advised: " + (rec["conf"] if rec else "none"), "-", "-", "-"))

    need = dev.get("jax_need_bytes")
    total = dev.get("device_memory_bytes")
    if need and total:
        frac = f"{0.8 * need / total:.4f}"
        rc, st = run(loop, base + "-below", {"XLA_PYTHON_CLIENT_MEM_FRACTION": frac})
        rows.append((name, f"MEM_FRACTION={frac} (80 % of need)", "oom expected",
                     "out of memory" if rc != 0 else f"ran, {st.get('peak_bytes_in_use')} in use",
                     "-"))
    return ok


def main():
    cf, outdir = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--steps" else 16
    os.makedirs(outdir, exist_ok=True)
    rows = Rows()
    rows.append(("loop", "setting", "predicted", "real peak_pool", "error"))
    ok = all([shape(cf, outdir, s, steps, rows) for s in sys.argv[5:] or ("mlp", "varlen")])
    print("jax advise:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
