#!/usr/bin/env python3
"""views_test.py CASE CUDAFRAG LIBCUDAFRAG NAME=WORKLOAD...

Runs bundled workloads with a trace, then the cudafrag command's views of the
trace, and checks them against the report the process wrote at exit: the HTML
page in a real browser (headless Chromium), the exports parsed by the tools'
own formats, diff, merge and check. Exit 0 pass, 1 fail, 77 skip."""
import json
import os
import pickle
import pickletools
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cftest import profiled, read_report  # noqa: E402

CASE, CLI, LIB = sys.argv[1], sys.argv[2], sys.argv[3]
WORKLOADS = dict(a.split("=", 1) for a in sys.argv[4:])
TMP = tempfile.mkdtemp(prefix="cf-views-")
OOM_ENV = {"SIMCUDA_PHYS": "contiguous", "SIMCUDA_MEM": "256M"}
# The checks of the page's own scripts and styles in the browser (errors raised,
# the drawing on screen, the width on a phone) run none of cudafrag's compiled
# code: a sanitizer build leaves them to the plain pass, which renders the same page.
PAGE_SCRIPTS = os.environ.get("CF_TEST_SANITIZED") != "1"


def fail(msg):
    print("FAIL (%s): %s" % (CASE, msg), file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def workload(name, tag=None, args=(), env=None, status=0):
    """Runs a workload under the library with a trace; returns (trace, report)."""
    out = os.path.join(TMP, tag or name)
    e = dict(os.environ, **profiled(LIB, out, trace=True, **(env or {})))
    p = subprocess.run([WORKLOADS[name], *args], env=e, capture_output=True, text=True)
    expect(p.returncode == status, "%s exited %d: %s" % (name, p.returncode, p.stderr))
    report = read_report(out)
    expect(report is not None, "%s wrote no JSON report" % name)
    return out + ".cftrace", report


def cli(*args, status=0, text=True):
    """The command, with its own leak check under AddressSanitizer."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=1").lstrip(":")
    p = subprocess.run([CLI, *args], env=env, capture_output=True, text=text)
    if status is not None and p.returncode != status:
        fail("cudafrag %s: status %d, want %d\n%s" % (" ".join(args), p.returncode, status,
                                                      p.stderr))
    return p


def dev0(report):
    return report["devices"][0]


# ---- the HTML page in a browser ----

def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    print("SKIP: chromium is not installed (scripts/setup.sh installs it)")
    sys.exit(77)


def browse(path, *flags, size="1280,2000"):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--user-data-dir=" + os.path.join(TMP, "profile"),
           "--window-size=" + size, *flags, "file://" + path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, "chromium failed: %s" % p.stderr[-2000:])
    return p.stdout


def attrs(tag):
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def polylines(dom, plot_id):
    svg = re.search(r'<svg class="plot" id="%s".*?</svg>' % plot_id, dom, re.S)
    expect(svg, "no plot %s in the page" % plot_id)
    return {a["data-series"]: a for a in map(attrs, re.findall(r"<polyline[^>]*>", svg.group(0)))}


def plot_data(dom, plot_id):
    m = re.search(r'<script type="application/json" id="%s-data">(.*?)</script>' % plot_id,
                  dom, re.S)
    expect(m, "no data for %s" % plot_id)
    return {s["name"]: s["p"] for s in json.loads(m.group(1))["series"]}


def points(line):
    return [tuple(map(float, p.split(","))) for p in line["points"].split()]


NAMES = {"live": "live", "footprint": "footprint", "pool": "pool reserved",
         "arena": "arena mapped"}


def check_plot(dom, report):
    lines, data = polylines(dom, "plot-0"), plot_data(dom, "plot-0")
    expect("live" in lines and "footprint" in lines, "live or footprint line missing")
    for cls, line in lines.items():
        n = int(line["data-samples"])
        expect(n == len(data[NAMES[cls]]), "%s: %d samples drawn, %d in the data"
               % (cls, n, len(data[NAMES[cls]])))
        expect(0 < n <= 2000, "%s: %d samples (at most 2000)" % (cls, n))
        expect(len(points(line)) == 2 * n + 2, "%s: %d points for %d samples"
               % (cls, len(points(line)), n))
    # Downsampling keeps the extremes: the highest sample is the report's peak.
    expect(max(v for _, v in data["footprint"]) == dev0(report)["peak_footprint_bytes"],
           "footprint line misses the peak")
    expect(max(v for _, v in data["live"]) == dev0(report)["peak_live_bytes"],
           "live line misses the peak")
    mark = re.search(r'<g class="mark peak footprint"[^>]*>.*?<circle ([^>]*)>', dom, re.S)
    expect(mark, "no peak footprint marker")
    g = attrs(re.search(r'<g class="mark peak footprint"[^>]*>', dom).group(0))
    expect(int(g["data-value"]) == dev0(report)["peak_footprint_bytes"], "peak marker value")
    top = min(y for _, y in points(lines["footprint"]))
    expect(abs(float(attrs(mark.group(1))["cy"]) - top) < 0.11,
           "the peak marker is not at the top of the footprint line")
    return lines, data


def check_icicle(dom, report, leaf):
    svg = re.search(r'<svg class="icicle" id="peak-0"[^>]*>', dom)
    expect(svg, "no icicle of the peak")
    total = int(attrs(svg.group(0))["data-total"])
    expect(total == dev0(report)["live_at_peak_footprint_bytes"],
           "icicle total %d, live at the footprint peak %d"
           % (total, dev0(report)["live_at_peak_footprint_bytes"]))
    expect(int(attrs(svg.group(0))["data-boxes"]) > 2, "icicle drew no frames")
    expect(leaf in dom, "icicle lacks the call %s" % leaf)


def self_contained(html):
    expect("Content-Security-Policy" in html and "default-src 'none'" in html, "no CSP")
    refs = re.findall(r'\s(?:src|href)="([^"]*)"', html) + re.findall(r"url\(([^)]*)\)", html)
    expect(all(r.startswith("#") for r in refs), "external references: %s" % refs)
    expect("<link" not in html and "@import" not in html, "external style sheets")


def png_pixels(path):
    """RGB(A) 8-bit PNG (what Chromium writes) -> (width, height, rows of bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    expect(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    expect(depth == 8 and ctype in (2, 6), "PNG colour type %d" % ctype)
    bpp = 3 if ctype == 2 else 4
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    for y in range(h):
        ft, line = raw[y * (w * bpp + 1)], bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def count_colour(path, rgb):
    w, h, bpp, rows = png_pixels(path)
    return sum(1 for row in rows for x in range(w) if tuple(row[x * bpp:x * bpp + 3]) == rgb)


def js_errors(html):
    """The errors the page's scripts raise in the browser, counted by a probe
    that listens before any of them runs."""
    probe = os.path.join(TMP, "errors.html")
    listen = ("<head><script>var cfErrors=0;addEventListener('error',function(){cfErrors++});"
              "</script>")
    report = ("<script>addEventListener('load',function(){document.body.setAttribute("
              "'data-errors',String(cfErrors))})</script></body>")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(html.replace("<head>", listen, 1).replace("</body>", report, 1))
    m = re.search(r'data-errors="(\d+)"', browse(probe, "--dump-dom",
                                                  "--virtual-time-budget=2000"))
    expect(m, "the error probe did not run")
    return int(m.group(1))


def whatif_tables(dom):
    """The what-if section's tables: device -> {label: {cell: value}}, and the
    best row's label per device."""
    sec = re.search(r'<section id="whatif">.*?</section>', dom, re.S)
    expect(sec, "no what-if section")
    tables, best = {}, {}
    for dev, body in re.findall(r'<table class="whatif" data-device="(\d+)">(.*?)</table>',
                                sec.group(0), re.S):
        rows = {}
        for tr, cells in re.findall(r"(<tr data-label[^>]*>)(.*?)</tr>", body, re.S):
            label = html_unescape(attrs(tr)["data-label"])
            tds = re.findall(r"<td([^>]*)>(.*?)</td>", cells, re.S)
            rows[label] = [(attrs(a), html_unescape(re.sub(r"<[^>]+>", "", t))) for a, t in tds]
            if 'class="best"' in tr:
                best[int(dev)] = label
        tables[int(dev)] = rows
    return sec.group(0), tables, best


def html_unescape(s):
    import html
    return html.unescape(s)


def oom_words(model, device_memory):
    """The out-of-memory column as the text table writes it (src/replay/table.c)."""
    if device_memory is None:
        return None
    if model["oom"] is None:
        return "no"
    return "at op %d, +" % model["oom"]["op"]


def check_whatif(dom, trace, *options):
    """The section's figures are cudafrag replay --json's on the same trace."""
    want = json.loads(cli("replay", "--json", *options, trace).stdout)
    sec, tables, best = whatif_tables(dom)
    expect(sorted(tables) == [d["device"] for d in want["devices"]],
           "what-if devices %s, replay %s" % (sorted(tables), [d["device"] for d in want["devices"]]))
    for d in want["devices"]:
        rows = tables[d["device"]]
        expect(list(rows) == [m["label"] for m in d["models"]],
               "device %d rows %s, replay %s" % (d["device"], list(rows),
                                                 [m["label"] for m in d["models"]]))
        expect(best.get(d["device"]) == d["best"], "device %d best %s, replay %s"
               % (d["device"], best.get(d["device"]), d["best"]))
        for m in d["models"]:
            cells = rows[m["label"]]
            got = [int(cells[0][0]["data-bytes"]), float(cells[1][0]["data-value"]),
                   float(cells[2][0]["data-value"]), float(cells[3][0]["data-value"]),
                   int(cells[4][0]["data-value"])]
            exp = [m["peak_footprint_bytes"], m["peak_footprint_over_peak_live"],
                   m["internal_fragmentation_at_peak"], m["external_fragmentation_at_peak"],
                   m["driver_calls"]]
            expect(got == exp, "%s on device %d: page %s, replay %s"
                   % (m["label"], d["device"], got, exp))
            words = oom_words(m, d["device_memory_bytes"])
            expect(len(cells) == (5 if words is None else 6), "%s: out-of-memory column"
                   % m["label"])
            if words is not None:
                expect(cells[5][1].startswith(words), "%s: out of memory '%s', replay %s"
                       % (m["label"], cells[5][1], m["oom"]))
                if m["oom"]:
                    expect(int(cells[5][0]["data-oom-op"]) == m["oom"]["op"], "OOM op")
        lower = [m for m in d["models"] if m["model"] == "lower-bound"]
        if lower:
            expect(lower[0]["peak_footprint_bytes"] == d["peak_live_bytes"], "lower bound")
    expect(("whatif-not-block-level" in sec) == (want["framework_cache"] is not None),
           "the not-block-level note")
    return want


def case_html():
    trace, report = workload("video_pipeline")
    page = os.path.join(TMP, "report.html")
    cli("report", trace, "--html", page)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    self_contained(html)
    dom = browse(page, "--dump-dom")
    expect("</html>" in dom, "the browser returned no document")
    lines, data = check_plot(dom, report)
    # 24 000 changes: the lines are downsampled to at most 2000 points.
    expect(int(lines["live"]["data-samples"]) < report["summary"]["allocs"], "not downsampled")
    check_icicle(dom, report, "cudaMalloc (video_pipeline.c:61)")
    for section in ("summary", "device-0", "leaks", "sites", "fragmentation", "whatif",
                    "findings"):
        expect('id="%s"' % section, "section %s missing" % section)
    expect(dom.count('<span class="sev ') == len(report["findings"]), "findings listed")
    check_whatif(dom, trace)
    if not PAGE_SCRIPTS:
        return
    expect(js_errors(html) == 0, "the page's script raised errors")
    shot = os.path.join(TMP, "wide.png")
    browse(page, "--screenshot=" + shot, size="1280,1600")
    # The series' colours on screen: the plot was drawn, not only put in the DOM.
    expect(count_colour(shot, (0xd5, 0x5e, 0x00)) > 200, "no footprint line on the screenshot")
    expect(count_colour(shot, (0x00, 0x72, 0xb2)) > 200, "no live line on the screenshot")
    # On a phone the page itself never scrolls sideways (figures scroll in their box).
    probe = os.path.join(TMP, "probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", "<script>document.body.setAttribute('data-overflow',"
                             "String(document.documentElement.scrollWidth-innerWidth))"
                             "</script></body>"))
    phone = browse(probe, "--dump-dom", size="390,844")
    over = re.search(r'data-overflow="(-?\d+)"', phone)
    expect(over and int(over.group(1)) <= 0, "the page is wider than a phone: %s"
           % (over and over.group(1)))


def counter_changes(chrome, device, key):
    prev, n, mx = 0, 0, 0
    for e in chrome["traceEvents"]:
        if e["ph"] == "C" and e["name"] == "device %d memory" % device:
            if e["args"][key] != prev:
                n, prev = n + 1, e["args"][key]
            mx = max(mx, e["args"][key])
    return n, mx


def case_html_exact():
    """Short traces are drawn sample for sample: the counts match the counters."""
    for name, env, status in (("holes", {"SIMCUDA_MEM": "1G"}, 0), ("oom_fragment", OOM_ENV, 3),
                              ("stream_async", {}, 0)):
        trace, report = workload(name, env=env, status=status)
        page = os.path.join(TMP, name + ".html")
        cli("report", trace, "--html", page)
        chrome = json.loads(cli("export", trace, "--format", "chrome-trace").stdout)
        dom = browse(page, "--dump-dom")
        lines, data = check_plot(dom, report)
        for cls, line in lines.items():
            n, _ = counter_changes(chrome, 0, NAMES[cls])
            if n <= 2000:
                expect(int(line["data-samples"]) == n, "%s %s: %s samples, %d counter changes"
                       % (name, cls, line["data-samples"], n))
        expect(dom.count('<g class="mark oom"') == len(report["ooms"]), "%s: OOM markers" % name)
        if name == "stream_async":
            expect("pool" in lines, "pool reserved not drawn")
        if report["summary"]["live_at_report_bytes"]:
            svg = re.search(r'<svg class="icicle" id="leaked"[^>]*>', dom)
            expect(svg and int(attrs(svg.group(0))["data-total"])
                   == report["summary"]["live_at_report_bytes"], "leak icicle total")


# ---- exports ----

ACCEPTED = {"PROTO", "EMPTY_DICT", "EMPTY_LIST", "MARK", "SETITEMS", "APPENDS", "BINUNICODE",
            "BININT", "BININT1", "BININT2", "LONG1", "NEWTRUE", "NEWFALSE", "NONE",
            "LONG_BINPUT", "LONG_BINGET", "STOP"}


def case_torch():
    for name, env, status in (("video_pipeline", {}, 0), ("oom_fragment", OOM_ENV, 3)):
        trace, report = workload(name, env=env, status=status)
        out = os.path.join(TMP, name + ".pickle")
        cli("export", trace, "--format", "torch-snapshot", "-o", out)
        with open(out, "rb") as f:
            raw = f.read()
        ops = set()
        for op, arg, _ in pickletools.genops(raw):
            ops.add(op.name)
            if isinstance(arg, int) and op.name.startswith(("BININT", "LONG")):
                expect(0 <= arg < 2 ** 53, "integer %d outside [0, 2^53)" % arg)
        expect(ops <= ACCEPTED, "opcodes beyond the basic set: %s" % (ops - ACCEPTED))
        expect(raw[:2] == b"\x80\x02", "not protocol 2")
        snap = pickle.loads(raw)
        expect(set(snap) == {"segments", "device_traces", "allocator_settings"},
               "keys %s" % sorted(snap))
        trace0 = snap["device_traces"][0]
        allocs = [e for e in trace0 if e["action"] == "alloc"]
        frees = [e for e in trace0 if e["action"] == "free_completed"]
        expect(len(allocs) == report["summary"]["allocs"], "alloc entries %d" % len(allocs))
        expect(len(frees) == report["summary"]["frees"], "free entries %d" % len(frees))
        expect(sum(e["action"] == "segment_alloc" for e in trace0) == len(allocs), "segments")
        expect(sum(e["action"] == "oom" for e in trace0) == len(report["ooms"]), "oom entries")
        live = peak = 0
        for e in trace0:
            live += e["size"] if e["action"] == "alloc" else -e["size"] if \
                e["action"] == "free_completed" else 0
            peak = max(peak, live)
        expect(peak == dev0(report)["peak_live_bytes"], "replayed peak %d" % peak)
        leaked = sum(b["requested_size"] for s in snap["segments"] for b in s["blocks"])
        expect(leaked == report["summary"]["live_at_report_bytes"], "segments at the end")
        f0 = allocs[0]["frames"]
        expect(all(set(fr) == {"filename", "line", "name"} for fr in f0), "frame keys")
        expect(any(fr["name"] == "main" or fr["line"] > 0 for fr in f0), "frames not named")
        if name == "video_pipeline":
            # alloc_frame and run are inlined into main: each is a frame of its own.
            want = [("alloc_frame", line_of("SYM_ALLOC_FRAME")), ("run", line_of("SYM_RUN")),
                    ("main", line_of("SYM_MAIN"))]
            chains = {tuple((fr["name"], fr["line"]) for fr in a["frames"][1:4]) for a in allocs}
            expect(tuple(want) in chains, "no inlined callers %s in the frames: %s"
                   % (want, sorted(chains)[:3]))


def case_chrome():
    for name, env, status in (("detector_mix", {}, 0), ("oom_fragment", OOM_ENV, 3)):
        trace, report = workload(name, env=env, status=status)
        chrome = json.loads(cli("export", trace, "--format", "chrome-trace").stdout)
        ev = chrome["traceEvents"]
        _, live = counter_changes(chrome, 0, "live")
        _, fp = counter_changes(chrome, 0, "footprint")
        expect(live == dev0(report)["peak_live_bytes"], "counter peak live %d" % live)
        expect(fp == dev0(report)["peak_footprint_bytes"], "counter peak footprint %d" % fp)
        names = {e["name"] for e in ev if e["ph"] == "M"}
        expect({"process_name", "thread_name"} <= names, "metadata %s" % names)
        ooms = [e for e in ev if e["ph"] == "i" and e["name"].startswith("out of memory")]
        expect(len(ooms) == len(report["ooms"]), "OOM instants %d" % len(ooms))
        found = [e for e in ev if e["ph"] == "i" and e.get("s") == "g"]
        expect(len(found) == len(report["findings"]), "finding instants %d" % len(found))
        calls = [e for e in ev if e["ph"] == "X"]
        api_calls = sum(a["calls"] for a in report["apis"])
        expect(len(calls) == api_calls, "call slices %d, API calls %d" % (len(calls), api_calls))
        # On the wall clock (microseconds since the epoch), as Kineto's and
        # Nsight Systems' traces are, so that they line up.
        expect(all(abs(e["ts"] / 1e6 - time.time()) < 3600 for e in ev),
               "timestamps not on the wall clock: %s" % sorted(e["ts"] for e in ev)[:3])
        expect(chrome["otherData"].get("clock", "").startswith("CLOCK_REALTIME"), "clock")
        allocs = [e for e in calls if e["name"].startswith("cudaMalloc")]
        expect(allocs and all(re.fullmatch(r"0x[0-9a-f]+", e["args"].get("stream", ""))
                              for e in allocs), "allocation slices without a stream")
    # A trace written before the clock base was recorded keeps times since its start.
    old = os.path.join(os.path.dirname(__file__), "..", "replay", "traces", "holes.cftrace")
    ev = json.loads(cli("export", old, "--format", "chrome-trace").stdout)["traceEvents"]
    expect(ev and all(0 <= e["ts"] < 3600e6 for e in ev), "an old trace's times are not relative")


def folded_sum(trace, weight):
    total = 0
    for line in cli("export", trace, "--format", "folded", "--weight", weight).stdout.splitlines():
        stack, _, value = line.rpartition(" ")
        expect(stack and value.isdigit(), "bad folded line %r" % line)
        total += int(value)
    return total


def line_of(mark):
    """The line of video_pipeline.c marked /* MARK */."""
    src = os.path.join(os.path.dirname(__file__), "..", "workloads", "video_pipeline.c")
    with open(src, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if "/* %s */" % mark in text:
                return number
    fail("no line marked %s" % mark)


def icicle_names(html):
    """The frame names of the peak's icicle, as its boxes' tooltips give them."""
    svg = html[html.index('<svg class="icicle" id="peak-0"'):]
    svg = svg[:svg.index("</svg>")]
    return [t.split("\n")[0] for t in
            (html_unescape(m) for m in re.findall(r'<g data-v="\d+"><title>([^<]*)</title>', svg))]


def case_folded():
    for name, env, status in (("video_pipeline", {}, 0), ("oom_fragment", OOM_ENV, 3),
                              ("stream_async", {}, 0)):
        trace, report = workload(name, env=env, status=status)
        s = report["summary"]
        want = {"peak": s["peak_live_bytes"],
                "footprint-peak": sum(d["live_at_peak_footprint_bytes"] for d in report["devices"]),
                "leaked": s["live_at_report_bytes"], "allocated": s["alloc_bytes"],
                "calls": s["allocs"]}
        for weight, value in want.items():
            got = folded_sum(trace, weight)
            expect(got == value, "%s --weight %s: sum %d, report %d" % (name, weight, got, value))
        if name != "video_pipeline":
            continue
        # alloc_frame and run are inlined into main: the stacks name them, as
        # `cudafrag symbolize` does, and leave libc's start-up out as the report does.
        folded = cli("export", trace, "--format", "folded").stdout
        expect(re.search(r"^main;run;alloc_frame;cudaMalloc \(video_pipeline\.c:%d\) "
                         % line_of("SYM_ALLOC_FRAME"), folded, re.M),
               "no main;run;alloc_frame stack in the folded export:\n%s" % folded)
        page = os.path.join(TMP, name + ".html")
        cli("report", trace, "--html", page)
        with open(page, encoding="utf-8") as f:
            names = icicle_names(f.read())
        expect(names[1:4] == ["main", "run", "alloc_frame"],
               "the icicle's frames %s lack the inlined callers" % names[:6])


def case_rmm():
    for name, env, status in (("detector_mix", {}, 0), ("oom_fragment", OOM_ENV, 3)):
        trace, report = workload(name, env=env, status=status)
        rows = cli("export", trace, "--format", "rmm-csv").stdout.splitlines()
        expect(rows[0] == "Thread,Time,Action,Pointer,Size,Stream", "header %r" % rows[0])
        live, kinds = {}, {"allocate": 0, "free": 0, "allocate failure": 0}
        for r in rows[1:]:
            tid, time, action, ptr, size, stream = r.split(",")
            expect(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{6}", time), "time %r" % time)
            expect(ptr.startswith("0x") and stream.startswith("0x"), "pointer %r" % r)
            kinds[action] += 1
            if action == "allocate":
                live[ptr] = int(size)
            elif action == "free":
                expect(live.pop(ptr, None) == int(size), "free of %s without its allocation" % ptr)
        s = report["summary"]
        expect(kinds["allocate"] + kinds["free"] == s["allocs"] + s["frees"],
               "%d rows, %d allocations + %d frees" % (kinds["allocate"] + kinds["free"],
                                                       s["allocs"], s["frees"]))
        expect(kinds["allocate failure"] == len(report["ooms"]), "failure rows")
        expect(sum(live.values()) == s["live_at_report_bytes"], "live at the end")


# ---- diff, merge, check ----

def case_diff():
    a, ra = workload("video_pipeline", "a", ["-n", "300"])
    b, rb = workload("video_pipeline", "b", ["-n", "900"])
    d = json.loads(cli("diff", "--json", a, b).stdout)
    expect(d["summary"]["allocs"]["change"] == rb["summary"]["allocs"] - ra["summary"]["allocs"],
           "allocs change")
    statuses = {s["status"] for s in d["sites"]}
    expect(statuses <= {"changed", "same"}, "two runs of one program differ in sites: %s" % statuses)
    expect(len(d["sites"]) == 5, "%d sites" % len(d["sites"]))
    for s in d["sites"]:
        expect(not re.search(r"0x[0-9a-f]", s["key"]), "an address in key %s" % s["key"])
        expect(re.search(r"video_pipeline\.c:\d+", s["key"]), "no file:line in %s" % s["key"])
    grown = [s for s in d["sites"] if s["a"]["bytes"] < s["b"]["bytes"]]
    expect(len(grown) == 4, "the four per-frame sites allocate more")
    c, _ = workload("detector_mix", "c")
    d = json.loads(cli("diff", "--json", a, c).stdout)
    kinds = {s["status"] for s in d["sites"]}
    expect({"new", "gone"} <= kinds, "new and gone sites between two programs: %s" % kinds)
    expect(d["findings"]["new"] or d["findings"]["gone"], "findings compared")
    text = cli("diff", os.path.join(TMP, "a.json"), os.path.join(TMP, "b.json")).stdout
    expect("peak live" in text and "call sites" in text, "text diff:\n" + text)
    cli("diff", a, status=2)
    cli("diff", "--top", "0", a, b, status=2)
    # The same run against itself: nothing changed.
    same = json.loads(cli("diff", "--json", a, a).stdout)
    expect(all(s["status"] == "same" for s in same["sites"]), "a trace differs from itself")


def case_merge():
    runs = [("video_pipeline", []), ("detector_mix", []), ("holes", [])]
    srcs, reps = [], []
    for rank, (name, args) in reversed(list(enumerate(runs))):
        t, r = workload(name, "rank%d" % rank, args, env={"RANK": str(rank), "SIMCUDA_MEM": "1G"})
        srcs.append(t if rank % 2 else os.path.join(TMP, "rank%d.json" % rank))
        reps.insert(0, r)
    m = json.loads(cli("merge", "--json", *srcs).stdout)
    expect([r["rank"] for r in m["ranks"]] == ["0", "1", "2"], "ranks in order")
    for got, want in zip(m["ranks"], reps):
        expect(got["peak_footprint_bytes"] == want["summary"]["peak_footprint_bytes"], "rank peak")
    t = m["totals"]
    expect(t["peak_live_bytes"] == sum(r["summary"]["peak_live_bytes"] for r in reps), "total")
    expect(t["allocs"] == sum(r["summary"]["allocs"] for r in reps), "total allocs")
    top = max(range(3), key=lambda i: dev0(reps[i])["peak_footprint_bytes"])
    expect(m["peak_rank"]["rank"] == str(top), "peak rank %s, want %d" % (m["peak_rank"], top))
    text = cli("merge", *srcs).stdout
    expect("peak: rank %d" % top in text, "text merge:\n" + text)


def case_check():
    trace, report = workload("video_pipeline", args=["-n", "1200"])  # hot loops: findings
    js = os.path.join(TMP, "video_pipeline.json")
    peak = dev0(report)["peak_live_bytes"]
    for src in (js, trace):
        cli("check", src, "--max-peak-live", str(peak))
        p = cli("check", src, "--max-peak-live", str(peak - 1), status=1)
        expect("peak live" in p.stderr and "above the limit" in p.stderr, p.stderr)
        cli("check", src, "--max-footprint", "1G", "--max-leak", "0", "--max-fragmentation", "50%")
        p = cli("check", src, "--max-fragmentation", "0.01", status=1)
        expect("fragmentation" in p.stderr, p.stderr)
        # One reason per finding at or above the severity (the rates depend on
        # the machine's speed, so the findings' own severities are the measure).
        want = [f for f in report["findings"] if f["severity"] in ("high", "medium")]
        p = cli("check", src, "--fail-on", "medium", status=1 if want else 0)
        got = [l for l in p.stderr.splitlines() if re.search(r": \[(high|medium)\] ", l)]
        expect(len(got) == len(want), "%d reasons for %d findings:\n%s" % (len(got), len(want),
                                                                         p.stderr))
    cli("check", js, status=2)                                  # no limit
    cli("check", js, "--max-leak", "lots", status=2)            # bad size
    cli("check", js, "--max-fragmentation", "1.5", status=2)    # not a fraction
    bad = os.path.join(TMP, "bad.json")
    with open(bad, "w") as f:
        f.write('{"summary": {}, "devices": [], "summary": {}}')
    p = cli("check", bad, "--max-leak", "0", status=2)
    expect("duplicate key" in p.stderr, p.stderr)
    # run --check: the report the child wrote is checked; the program's status wins.
    env = dict(os.environ, CUDAFRAG_OUTPUT=os.path.join(TMP, "run-%e-%p"))
    def run(*args):
        return subprocess.run([CLI, "run", "--check", *args], env=env, capture_output=True,
                              text=True)
    prog = [WORKLOADS["video_pipeline"], "-n", "50"]
    expect(run("--max-peak-live", "1G", "--", *prog).returncode == 0, "run --check pass")
    p = run("--max-peak-live", "1M", "--", *prog)
    expect(p.returncode == 1 and "above the limit" in p.stderr, "run --check fail: %s" % p.stderr)
    expect(run("--max-peak-live", "1M", "--", "sh", "-c", "exit 3").returncode == 3, "status 3")
    expect(run("--max-leak", "0", "--", "sh", "-c", "kill -TERM $$").returncode == 143,
           "killed by SIGTERM")
    expect(subprocess.run([CLI, "run", "--check", "--", "true"], capture_output=True)
           .returncode == 2, "--check without a limit")


def case_html_whatif():
    """The what-if section on a committed H200 trace and on a bundled workload
    run out of memory on a small device, with the models chosen as cudafrag
    replay takes them; the page's script raises no error."""
    traces = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "replay", "traces")
    page = os.path.join(TMP, "holes.html")
    holes = os.path.join(traces, "holes.cftrace")
    cli("report", holes, "--html", page)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    want = check_whatif(html, holes)
    expect(len(want["devices"][0]["models"]) == 5, "not the default five models")
    expect(want["devices"][0]["device_memory_bytes"], "the H200 trace names its memory")
    if PAGE_SCRIPTS:
        expect(js_errors(html) == 0, "the page's script raised errors")
        # The probe itself sees an error (else the check above could not fail).
        expect(js_errors(html.replace("</main>", "</main><script>cfNoSuchThing()</script>"))
               == 1, "the error probe misses a failing script")
    trace, _ = workload("video_pipeline")
    options = ("--device-memory", "64M", "--model", "pytorch:max_split_size_mb=20",
               "--model", "driver", "--model", "arena")
    cli("report", "--html", page, *options, trace)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    want = check_whatif(browse(page, "--dump-dom"), trace, *options)
    d = want["devices"][0]
    expect([m["label"] for m in d["models"]] == ["pytorch:max_split_size_mb=20", "driver",
                                                 "arena"], "the models given")
    expect(any(m["oom"] for m in d["models"]), "no model runs out on 64 MiB")
    expect(d["device_memory_from"] == "option", "device memory not from the option")
    # The options are the page's: without --html they are refused.
    p = cli("report", "--model", "arena", trace, status=2)
    expect("go with --html" in p.stderr, "report --model without --html: %s" % p.stderr)
    p = cli("report", "--html", page, "--model", "nosuch", trace, status=2)
    expect("nosuch" in p.stderr, "an unknown model: %s" % p.stderr)


CASES = {"html": case_html, "html-exact": case_html_exact, "html-whatif": case_html_whatif, "torch-snapshot": case_torch,
         "chrome-trace": case_chrome, "folded": case_folded, "rmm-csv": case_rmm,
         "diff": case_diff, "merge": case_merge, "check": case_check}

try:
    CASES[CASE]()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
print("ok")
