#!/usr/bin/env python3
"""many_sites_test.py CUDAFRAG LIBCUDAFRAG: check, diff, merge and report --html
on traces of 100 000 call sites (many_sites.py, two ranks) each finish within a
limit of CPU time and give the right figures.

Why a CPU-time limit (RLIMIT_CPU, per process) and not wall time: the machines
that run the suite are shared and loaded, and wall time there varies tenfold;
the CPU time a process uses varies little. Matching sites by walking every row
took 40 to 60 s of CPU per view of 10^5 sites (quadratic); the hash tables
take 1 to 4 s. The limit sits between, with room for a sanitizer build.
The two traces are made, and the views run, two at a time: each is a process
of its own with its own limit, and the suite's longest test should not keep a
core idle.
Exit 0 pass, 1 fail, 77 skip (no Python frames on this interpreter)."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cftest import profiled  # noqa: E402

CLI, LIB = sys.argv[1], sys.argv[2]
N = 100000
CPU_LIMIT_S = 40
TMP = tempfile.mkdtemp(prefix="cf-many-sites-")
GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "many_sites.py")


def fail(msg):
    print("FAIL: %s" % msg, file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def generate(tag, rank, seed):
    out = os.path.join(TMP, tag)
    env = dict(os.environ, RANK=str(rank), **profiled(LIB, out, trace=True))
    p = subprocess.run([sys.executable, GEN, str(N), str(seed)], env=env, capture_output=True,
                       text=True)
    expect(p.returncode == 0, "many_sites.py: %s" % p.stderr[-2000:])
    return out + ".cftrace"


def limited():
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 5))


def cli(*args, status=0):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, preexec_fn=limited)
    expect(p.returncode != -signal.SIGXCPU and p.returncode != -signal.SIGKILL,
           "cudafrag %s: more than %d s of CPU (is matching sites no longer linear?)"
           % (" ".join(args), CPU_LIMIT_S))
    expect(p.returncode == status, "cudafrag %s: status %d, want %d: %s"
           % (" ".join(args), p.returncode, status, p.stderr[-2000:]))
    return p


def check_leak(a, leaked):
    # every byte leaked, so one byte less is over the limit.
    cli("check", a, "--max-leak", str(leaked))
    p = cli("check", a, "--max-leak", str(leaked - 1), status=1)
    expect("above the limit" in p.stderr, p.stderr)


def check_diff(a, b):
    # every site matched; a site's size changes unless 7i + 1 = 7i mod 8 (never).
    d = json.loads(cli("diff", "--json", a, b).stdout)
    status = {}
    for s in d["sites"]:
        status[s["status"]] = status.get(s["status"], 0) + 1
    expect(status == {"changed": N}, "diff: %s, want %d changed" % (status, N))


def check_merge(a, b):
    # each site on both ranks.
    m = json.loads(cli("merge", "--json", a, b).stdout)
    expect(len(m["sites"]) == N and all(s["ranks"] == 2 for s in m["sites"]),
           "merge: %d sites, want %d on 2 ranks each" % (len(m["sites"]), N))


def check_html(a, leaked):
    # the leak flame graph holds every byte leaked.
    page = os.path.join(TMP, "a.html")
    cli("report", "--html", page, a)
    with open(page) as f:
        html = f.read()
    expect('id="leaked"' in html and 'data-total="%d"' % leaked in html,
           "the leak flame graph's total is not %d" % leaked)


def main():
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda args: generate(*args), [("a", 0, 0), ("b", 1, 1)])
    report = json.loads(cli("report", "--json", a).stdout)
    if report.get("site_count", 0) < N:
        print("SKIP: %d call sites in the trace, want %d (no Python frames here?)"
              % (report.get("site_count", 0), N))
        sys.exit(77)
    leaked = report["summary"]["live_at_report_bytes"]
    with ThreadPoolExecutor(2) as pool:
        views = [pool.submit(check_leak, a, leaked), pool.submit(check_diff, a, b),
                 pool.submit(check_merge, a, b), pool.submit(check_html, a, leaked)]
    for v in views:
        v.result()  # a view's failure (SystemExit from fail()) is raised here


try:
    main()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
print("ok")
