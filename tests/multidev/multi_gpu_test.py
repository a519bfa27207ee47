#!/usr/bin/env python3
"""The two-GPU program (tests/gpu/multi_gpu.cu) on two simulated devices, natively
and with libcudafrag.so preloaded, its reports held against the simulated
device's own per-device statistics (SIMCUDA_STATS_OUT).

Usage: multi_gpu_test.py CASE LIBCUDAFRAG CUDAFRAG PROGRAM
  all          one process, both devices: per-device counts, live peaks and
               footprints exact; the NCCL-like buffers a call site of their own;
               the trace's replay agrees; output identical to native
  all-arena    the same under CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1: each
               device served from its own arena, live figures exact, output
               identical to native
  ranks        two processes as ranks 0 and 1 of a job (RANK, LOCAL_RANK), one
               device each, reports named by rank (%r): each holds only its own
               device; `cudafrag merge` gives the job's peak and the rank that
               peaked
  ranks-arena  the ranks under the arena: outputs identical, merge still right
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import cftest  # noqa: E402

MIB = 1024 * 1024
KIB = 1024

# What multi_gpu.cu allocates on device d (requested bytes): raw cudaMalloc,
# default-pool cudaMallocAsync, the NCCL-like cuMemCreate (2 MiB granularity).
def device_plan(d):
    raw = [(3 + 2 * d) * MIB, (256 * KIB) << d]
    pooled = [(3 + 2 * d) * MIB, (64 * KIB) << d]
    vmm = [(2 + 2 * d) * MIB]
    return {"raw": raw, "pooled": pooled, "vmm": vmm,
            "live_peak": sum(raw) + sum(pooled) + sum(vmm), "allocs": 5}


failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def run(cmd, env, out_path):
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)
    with open(out_path, "w") as f:
        f.write(p.stdout)
    if p.returncode != 0:
        failures.append(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def read_sim(path):
    """SIMCUDA_STATS_OUT: {device: {pages_peak, pages_used, page_bytes, ...}}."""
    out = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            out[int(w[1])] = {w[i]: int(w[i + 1]) for i in range(2, len(w) - 1, 2)}
    return out


def output_key(text):
    """What must be identical between runs: the checksum and the device lines."""
    return [l for l in text.splitlines() if l.startswith(("checksum ", "device "))]


def meminfo_lines(text):
    return {int(m.group(1)): int(m.group(2))
            for m in re.finditer(r"^device (\d+) meminfo above start (\d+)$", text, re.M)}


def sites_by_function(rep):
    """Call sites of the report by the function they are shown at."""
    out = {}
    for s in rep.get("top_sites_by_peak", []):
        site = s.get("site") or {}
        frames = site.get("frames") or []
        shown = site.get("shown_frame")
        fn = frames[shown].get("function") if shown is not None and shown < len(frames) else None
        # nvcc compiles the program as C++: its names come mangled.
        if fn and "nccl_like_alloc" in fn:
            fn = "nccl_like_alloc"
        out.setdefault(fn, []).append(s)
    return out


def check_device(rep, sim, dev, arena, what):
    """One device of one report against the plan and the simulated device."""
    plan = device_plan(dev)
    d = cftest.by_device(rep.get("devices", [])).get(dev, {})
    s = sim.get(dev, {})
    expect(f"{what}: device {dev} peak_live_bytes", d.get("peak_live_bytes"), plan["live_peak"])
    expect(f"{what}: device {dev} live_bytes at exit", d.get("live_bytes"), 0)
    expect(f"{what}: device {dev} live_count at exit", d.get("live_count"), 0)
    expect(f"{what}: device {dev} allocs", d.get("allocs"), plan["allocs"])
    expect(f"{what}: device {dev} frees", d.get("frees"), plan["allocs"])
    page = s.get("page_bytes", 0)
    # What the device physically held at its peak, the arena's mappings included.
    expect(f"{what}: device {dev} peak_footprint_bytes = simulated peak",
           d.get("peak_footprint_bytes"), s.get("pages_peak", -1) * page)
    cc = d.get("meminfo_cross_check", {})
    expect(f"{what}: device {dev} cross-check deviation", cc.get("max_deviation_bytes"), 0)
    if arena:
        # Every block is back; what the device still holds is this device's
        # own arena mapping, and nothing else.
        now = d.get("footprint_now", {})
        expect(f"{what}: device {dev} arena mapping at exit = simulated pages in use",
               now.get("arena_mapped_bytes"), s.get("pages_used", -1) * page)
        expect(f"{what}: device {dev} has an arena mapping", (now.get("arena_mapped_bytes") or 0)
               > 0, True)
        expect(f"{what}: device {dev} footprint at exit is the arena's", now.get("total_bytes"),
               now.get("arena_mapped_bytes"))
        return
    # Natively every device allocation is the program's: the simulated device's
    # own counts are the truth.
    expect(f"{what}: device {dev} allocs = simulated device's", d.get("allocs"),
           s.get("alloc_calls"))
    expect(f"{what}: device {dev} frees = simulated device's", d.get("frees"),
           s.get("free_calls"))
    # Each allocation is made with its device current: cuMemGetInfo is sampled at
    # the device's new peaks and agreed at every sample (above).
    expect(f"{what}: device {dev} cross-check sampled", (cc.get("samples") or 0) >= 3, True)
    expect(f"{what}: device {dev} cross-check measured peak", cc.get("measured_peak_bytes"),
           d.get("peak_footprint_bytes"))


def check_vmm_site(rep, devices, what):
    """The NCCL-like buffers: call sites of their own, shown at nccl_like_alloc,
    holding exactly their bytes; no other site holds VMM memory. (One site, or
    one per device where the compiler unrolled the loop over the devices: each
    call then has its own return address.)"""
    by_fn = sites_by_function(rep)
    sites = by_fn.get("nccl_like_alloc", [])
    expect(f"{what}: call sites shown at nccl_like_alloc", 1 <= len(sites) <= len(devices), True)
    want = sum(device_plan(d)["vmm"][0] for d in devices)
    for s in sites:
        expect(f"{what}: nccl_like_alloc site api", (s.get("site") or {}).get("api"), "cuMemCreate")
    total = lambda k: sum(s.get(k) or 0 for s in sites)
    expect(f"{what}: nccl_like_alloc calls", total("calls"), len(devices))
    expect(f"{what}: nccl_like_alloc bytes", total("bytes"), want)
    expect(f"{what}: nccl_like_alloc peak_live_bytes", total("peak_live_bytes"), want)
    others = [fn for fn, ss in by_fn.items() if fn != "nccl_like_alloc"
              for s in ss if (s.get("site") or {}).get("api") == "cuMemCreate"]
    expect(f"{what}: other cuMemCreate sites", others, [])
    apis = {a.get("name"): a for a in rep.get("apis", [])}
    for name in ("cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease",
                 "cuMemAddressReserve", "cuMemAddressFree"):
        expect(f"{what}: apis.{name}.calls", apis.get(name, {}).get("calls"), len(devices))


def check_arena(rep, devices, what):
    """Each device's cudaMalloc and default-pool blocks came from the arena (the
    program checked each block's device); the arena's numbers cover both."""
    a = rep.get("arena_vs_native", {}).get("arena", {})
    expect(f"{what}: arena active", a.get("active"), True)
    served = sum(len(device_plan(d)["raw"]) + len(device_plan(d)["pooled"]) for d in devices)
    expect(f"{what}: arena allocs_served", a.get("allocs_served"), served)
    expect(f"{what}: arena frees_served", a.get("frees_served"), served)
    devs = cftest.by_device(rep.get("devices", []))
    per_device = sum((devs.get(dev, {}).get("footprint_now", {}).get("arena_mapped_bytes") or 0)
                     for dev in devices)
    expect(f"{what}: arena mapping = the devices' arena mappings", a.get("mapped_bytes"),
           per_device)


def check_replay(cli, trace, rep, what):
    p = subprocess.run([cli, "report", "--json", trace], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        failures.append(f"{what}: cudafrag report {trace}: {p.stderr.strip()}")
        return
    again = json.loads(p.stdout)
    keys = ("device", "allocs", "frees", "peak_live_bytes", "peak_footprint_bytes", "live_bytes")
    pick = lambda r: [{k: d.get(k) for k in keys} for d in r.get("devices", [])]
    expect(f"{what}: devices replayed from the trace", pick(again), pick(rep))


def case_all(tmp, lib, cli, prog, arena):
    base = {"SIMCUDA_DEVICES": "2", "SIMCUDA_MEM": "1G"}
    native = run([prog, "all"], dict(base, SIMCUDA_STATS_OUT=f"{tmp}/native.sim"),
                 f"{tmp}/native.out")
    env = dict(base, **cftest.profiled(lib, f"{tmp}/r-%r", trace=True,
                                       SIMCUDA_STATS_OUT=f"{tmp}/cf.sim", CUDAFRAG_TOP="50",
                                       CUDAFRAG_SAMPLE_MS="0"))
    if arena:
        env.update(CUDAFRAG_ARENA="1", CUDAFRAG_ARENA_ASYNC="1")
    out = run([prog, "all"], env, f"{tmp}/cf.out")
    if failures:
        return
    what = "arena" if arena else "cudafrag"
    # The checksum always; under the arena the device lines differ (cudaMemGetInfo
    # sees the arena's mappings, not the driver's rounding).
    expect(f"{what}: output", output_key(out) if not arena else output_key(out)[-1:],
           output_key(native) if not arena else output_key(native)[-1:])
    sim = read_sim(f"{tmp}/cf.sim")
    native_sim = read_sim(f"{tmp}/native.sim")
    # The program's own cudaMemGetInfo figures are the simulated device's peak.
    got = meminfo_lines(native)
    expect("native: devices with a meminfo line", sorted(got), [0, 1])
    for dev, used in got.items():
        expect(f"native: device {dev} meminfo above start = simulated peak", used,
               native_sim[dev]["pages_peak"] * native_sim[dev]["page_bytes"])
    rep = cftest.read_report(f"{tmp}/r-0") or {}
    expect(f"{what}: devices listed", sorted(d.get("device") for d in rep.get("devices", [])),
           [0, 1])
    for dev in (0, 1):
        check_device(rep, sim, dev, arena, what)
    check_vmm_site(rep, (0, 1), what)
    pools = [p for p in rep.get("pools", []) if p.get("default")]
    expect(f"{what}: default pools by device", sorted(p.get("device") for p in pools), [0, 1])
    if not arena:
        for p in pools:
            expect(f"{what}: default pool of device {p.get('device')} allocs", p.get("allocs"), 2)
    else:
        check_arena(rep, (0, 1), what)
    check_replay(cli, f"{tmp}/r-0.cftrace", rep, what)


def case_ranks(tmp, lib, cli, prog, arena):
    what = "ranks-arena" if arena else "ranks"
    reps, sims, natives = {}, {}, {}
    for rank in (0, 1):
        base = {"SIMCUDA_DEVICES": "2", "SIMCUDA_MEM": "1G", "RANK": str(rank),
                "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
        natives[rank] = run([prog, "rank"], base, f"{tmp}/native{rank}.out")
        env = dict(base, **cftest.profiled(lib, f"{tmp}/job-rank%r",
                                           SIMCUDA_STATS_OUT=f"{tmp}/rank{rank}.sim",
                                           CUDAFRAG_TOP="50", CUDAFRAG_SAMPLE_MS="0"))
        if arena:
            env.update(CUDAFRAG_ARENA="1", CUDAFRAG_ARENA_ASYNC="1")
        out = run([prog, "rank"], env, f"{tmp}/cf{rank}.out")
        if failures:
            return
        expect(f"{what}: rank {rank} output", output_key(out)[-1:], output_key(natives[rank])[-1:])
        sims[rank] = read_sim(f"{tmp}/rank{rank}.sim")
        reps[rank] = cftest.read_report(f"{tmp}/job-rank{rank}") or {}
    expect(f"{what}: report files", sorted(os.listdir(tmp)).count("job-rank0.json")
           + sorted(os.listdir(tmp)).count("job-rank1.json"), 2)
    for rank, rep in reps.items():
        expect(f"{what}: rank {rank} program.rank", rep.get("program", {}).get("rank"), str(rank))
        # Only its own device, though both are visible to it.
        expect(f"{what}: rank {rank} devices listed",
               [d.get("device") for d in rep.get("devices", [])], [rank])
        check_device(rep, sims[rank], rank, arena, f"{what}: rank {rank}")
        check_vmm_site(rep, (rank,), f"{what}: rank {rank}")
        if arena:
            check_arena(rep, (rank,), f"{what}: rank {rank}")
        # The other device was never touched by this rank.
        other = sims[rank].get(1 - rank, {})
        expect(f"{what}: rank {rank} other device untouched", other.get("pages_peak"), 0)
    check_merge(tmp, cli, reps, sims, arena, what)


def check_merge(tmp, cli, reps, sims, arena, what):
    files = [f"{tmp}/job-rank1.json", f"{tmp}/job-rank0.json"]
    p = subprocess.run([cli, "merge", "--json"] + files, capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        failures.append(f"{what}: merge --json: {p.stderr.strip()}")
        return
    m = json.loads(p.stdout)
    expect(f"{what}: merged ranks in order", [r.get("rank") for r in m.get("ranks", [])],
           ["0", "1"])
    fp = {r: (reps[r].get("devices") or [{}])[0].get("peak_footprint_bytes") or 0 for r in reps}
    for r in reps:
        expect(f"{what}: rank {r} peak footprint = simulated peak", fp[r],
               sims[r][r]["pages_peak"] * sims[r][r]["page_bytes"])
    for got in m.get("ranks", []):
        r = int(got["rank"])
        expect(f"{what}: merge rank {r} devices", [d.get("device") for d in got.get("devices", [])],
               [r])
        dev = (got.get("devices") or [{}])[0]
        expect(f"{what}: merge rank {r} device allocs", dev.get("allocs"),
               device_plan(r)["allocs"])
        expect(f"{what}: merge rank {r} device frees", dev.get("frees"), device_plan(r)["allocs"])
        expect(f"{what}: merge rank {r} peak_live_bytes", got.get("peak_live_bytes"),
               device_plan(r)["live_peak"])
        expect(f"{what}: merge rank {r} peak_footprint_bytes", got.get("peak_footprint_bytes"),
               fp[r])
    top = max(fp, key=lambda r: fp[r])
    expect(f"{what}: rank 1 allocates more", top, 1)
    pr = m.get("peak_rank", {})
    expect(f"{what}: peak rank", pr.get("rank"), str(top))
    expect(f"{what}: peak device", pr.get("device"), top)
    expect(f"{what}: peak footprint", pr.get("peak_footprint_bytes"), fp[top])
    t = m.get("totals", {})
    expect(f"{what}: job peak live (sum of ranks)", t.get("peak_live_bytes"),
           device_plan(0)["live_peak"] + device_plan(1)["live_peak"])
    expect(f"{what}: job peak footprint (sum of ranks)", t.get("peak_footprint_bytes"),
           fp[0] + fp[1])
    expect(f"{what}: job allocs", t.get("allocs"), 10)
    vmm = [s for s in m.get("sites", []) if "nccl_like_alloc" in (s.get("label") or "")]
    expect(f"{what}: merged NCCL-like site", len(vmm), 1)
    for s in vmm:
        expect(f"{what}: merged NCCL-like site ranks", s.get("ranks"), 2)
        expect(f"{what}: merged NCCL-like site most on", s.get("max_rank"), "1")
        expect(f"{what}: merged NCCL-like peak live", s.get("peak_live_bytes"), 6 * MIB)
    text = subprocess.run([cli, "merge"] + files, capture_output=True, text=True, timeout=60)
    expect(f"{what}: merge text status", text.returncode, 0)
    if f"peak: rank {top}, device {top}," not in text.stdout:
        failures.append(f"{what}: text merge names no peak rank:\n{text.stdout}")
    # The per-device table: one row per rank and device.
    rows = re.findall(r"^(\d+)\s+(\d+)\s+\S+ \S+\s", text.stdout.split("-- devices --")[-1], re.M)
    expect(f"{what}: text per-device rows", rows[:2], [("0", "0"), ("1", "1")])


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("all", "all-arena", "ranks", "ranks-arena"):
        print(__doc__, file=sys.stderr)
        return 2
    case, lib, cli, prog = sys.argv[1:]
    arena = case.endswith("-arena")
    with tempfile.TemporaryDirectory() as tmp:
        (case_all if case.startswith("all") else case_ranks)(tmp, lib, cli, prog, arena)
    for f in failures:
        print(f"FAIL ({case}): {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
