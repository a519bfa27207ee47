#!/usr/bin/env python3
"""owners_test.py CASE CUDAFRAG LIBCUDAFRAG OWNERS_PROG

Who owns the memory (docs/report.md#owners), on stand-ins of NCCL, cuBLAS, cuDNN,
cuFFT and PyTorch's caching allocator built under the real libraries' file names:
figures  -- each owner's figures in the JSON and text reports, the owner of each
            call site, and the same from the trace (`cudafrag report TRACE`);
threshold -- the library-memory finding just over and just under its limits;
html     -- the owners' table and the sites' owner column of the HTML page.
Exit 0 pass, 1 fail."""
import json
import os
import re
import subprocess
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from cftest import profiled, read_report  # noqa: E402

CASE, CLI, LIB, PROG = sys.argv[1:5]
TMP = tempfile.mkdtemp(prefix="cf-owners-")
MIB = 1 << 20


def fail(msg):
    print("FAIL (%s): %s (files kept in %s)" % (CASE, msg, TMP), file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def run(tag, *owners, depth="32"):
    """The program under cudafrag with a trace, allocating OWNER=MIB each;
    returns the run's output prefix and its JSON report."""
    out = os.path.join(TMP, tag)
    env = dict(os.environ, **profiled(LIB, out, trace=True, CUDAFRAG_STACK_DEPTH=depth))
    p = subprocess.run([PROG, *owners], env=env, capture_output=True, text=True)
    expect(p.returncode == 0, "%s: exited %d: %s" % (" ".join(owners), p.returncode, p.stderr))
    report = read_report(out)
    expect(report is not None, "%s: no JSON report" % tag)
    return out, report


def cli(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    expect(p.returncode == 0, "cudafrag %s: status %d\n%s" % (" ".join(args), p.returncode,
                                                              p.stderr))
    return p.stdout


def owner_section(text):
    """The text report's owner rows as {label: [peak, share, live, allocations, sites]}."""
    m = re.search(r"\n-- memory by owner --\n  owner .*\n((?:  \S.*\n)+)", text)
    expect(m, "no 'memory by owner' section:\n" + text)
    rows = {}
    for line in m.group(1).splitlines():
        if line.startswith("  ("):
            continue
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def library_findings(report):
    return [f for f in report["findings"] if f["id"] == "library-memory"]


def case_figures():
    out, r = run("figures", "nccl=64", "nccl-driver=32", "cublas=48", "cudnn=16", "cufft=8",
                 "cache=256", "cache-nccl=24", "graph=4", "graph-freed=2", "user=100")
    expect(r["schema_version"] == 3, "schema_version %s, want 3" % r["schema_version"])
    o = r["owners"]
    want = {"nccl": (96, 2), "cublas": (48, 1), "cudnn": (16, 1), "cuda-libs": (8, 1),
            "framework-cache": (280, 2), "cuda-graphs": (6, 2), "user-code": (100, 1)}
    # What each owner still holds at the end: the program frees its own memory and
    # one graph frees its allocation inside the capture; the libraries and the cache
    # hold theirs.
    held = {"user-code": 0, "cuda-graphs": 4}
    expect(set(o) == set(want) | {"unknown"}, "owners %s" % sorted(o))
    peak = sum(d["peak_live_bytes"] for d in r["devices"])
    for key, (mib, sites) in want.items():
        v = o[key]
        expect(v["peak_live_bytes"] == mib * MIB and v["bytes"] == mib * MIB,
               "%s: peak %d, bytes %d, want %d MiB" % (key, v["peak_live_bytes"], v["bytes"], mib))
        expect(v["sites"] == sites and v["allocations"] == sites,
               "%s: %d sites, %d allocations, want %d" % (key, v["sites"], v["allocations"], sites))
        live = held.get(key, mib) * MIB
        expect(v["live_bytes"] == live, "%s: live %d, want %d" % (key, v["live_bytes"], live))
        share = min(v["peak_live_bytes"], peak) / peak
        expect(abs(v["share_of_peak"] - share) < 1e-5,  # printed to 6 digits
               "%s: share %s, want %s" % (key, v["share_of_peak"], share))
    expect(o["unknown"]["sites"] == 0 and o["unknown"]["peak_live_bytes"] == 0,
           "unknown owner: %s" % o["unknown"])
    # Every call site says its owner, matching the figures.
    sites = r["top_sites_by_peak"]
    by_owner = {}
    for s in sites:
        by_owner.setdefault(s["site"]["owner"], 0)
        by_owner[s["site"]["owner"]] += s["peak_live_bytes"]
    for key, (mib, _) in want.items():
        expect(by_owner.get(key) == mib * MIB, "sites of %s: %s" % (key, by_owner))
    # The text report, at exit and from the trace, says the same.
    text = open(out + ".txt").read()
    rows = owner_section(text)
    expect(list(rows)[:3] == ["framework cache", "user code", "nccl"],
           "rows not largest first: %s" % list(rows))
    expect(rows["nccl"][0] == "96.0 MiB" and rows["nccl"][1] == "%.1f%%" % (9600 / 548),
           "nccl row %s" % rows["nccl"])
    expect(rows["cuda graphs"][2] == "4.00 MiB", "graphs row %s" % rows["cuda graphs"])
    expect(re.search(r"owner nccl\n    at nccl_alloc \(libnccl\.so\.2\+", text),
           "a site's row does not say its owner:\n" + text)
    replayed = cli("report", out + ".cftrace")
    expect(owner_section(replayed) == rows, "the trace's owners differ:\n" + replayed)
    rj = json.loads(cli("report", "--json", out + ".cftrace"))
    expect(rj["owners"] == o, "the trace's JSON owners differ: %s" % rj["owners"])
    # Without stacks nothing says who allocated.
    _, r = run("nostacks", "nccl=8", "user=8", depth="0")
    expect(r["owners"]["unknown"]["peak_live_bytes"] == 16 * MIB,
           "stacks off: %s" % r["owners"])


def expect_finding(r, owner, severity, what):
    found = library_findings(r)
    if severity is None:
        expect(not found, "%s: a library-memory finding: %s" % (what, found))
        return
    expect(len(found) == 1, "%s: library-memory findings %s" % (what, found))
    f = found[0]
    expect(f["severity"] == severity, "%s: severity %s, want %s" % (what, f["severity"], severity))
    expect("(owner %s)" % owner in f["title"], "%s: title %r does not name %s" % (what, f["title"],
                                                                              owner))
    expect(all(e["site"]["owner"] == owner for e in f["sites"]),
           "%s: sites of other owners: %s" % (what, f["sites"]))
    share = f["numbers"]["share_of_peak"]
    expect(share >= 0.10, "%s: share %s" % (what, share))
    return f


def case_threshold():
    # 64 MiB and 10 % of the peak: reported; a MiB more of the program's, or one
    # less of NCCL's, and it is not.
    _, r = run("at", "nccl=64", "user=576")
    f = expect_finding(r, "nccl", "low", "64 MiB, 10.0 %")
    expect("NCCL_BUFFSIZE" in f["advice"], "nccl advice: %s" % f["advice"])
    _, r = run("share-under", "nccl=64", "user=577")
    expect_finding(r, "nccl", None, "64 MiB, 9.98 %")
    _, r = run("bytes-under", "nccl=63", "user=100")
    expect_finding(r, "nccl", None, "63 MiB, 38.7 %")
    # Medium from 25 %.
    _, r = run("medium", "cublas=100", "user=300")
    f = expect_finding(r, "cublas", "medium", "cuBLAS at 25 %")
    expect("CUBLAS_WORKSPACE_CONFIG" in f["advice"], "cublas advice: %s" % f["advice"])
    _, r = run("medium-under", "cublas=99", "user=300")
    expect_finding(r, "cublas", "low", "cuBLAS at 24.8 %")
    # Not a library: the framework's cache and the program never are.
    _, r = run("cache", "cache=512", "user=64")
    expect_finding(r, "framework cache", None, "the cache at 89 %")


def case_html():
    out, _ = run("html", "nccl=64", "cublas=48", "cache=256", "user=100")
    page = os.path.join(TMP, "page.html")
    cli("report", "--html", page, out + ".cftrace")
    html = open(page).read()
    m = re.search(r'<section id="owners">(.*?)</section>', html, re.S)
    expect(m, "no owners section")
    sec = m.group(1)
    for label in ("framework cache", "user code", "nccl", "cublas"):
        expect(re.search(r"<th scope=\"row\">%s</th>" % label, sec), "no row for %s" % label)
    expect("64.0 MiB" in sec and "256 MiB" in sec, "owner figures missing: " + sec)
    sites = re.search(r'<section id="sites">(.*?)</section>', html, re.S).group(1)
    expect(re.search(r'<th scope="col">owner</th>', sites), "no owner column in the sites")
    expect(re.search(r"<td>nccl</td>", sites), "no site owned by nccl in the sites table")


{"figures": case_figures, "threshold": case_threshold, "html": case_html}[CASE]()
shutil.rmtree(TMP, ignore_errors=True)
print("ok")
