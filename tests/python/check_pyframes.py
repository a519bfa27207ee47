#!/usr/bin/env python3
"""check_pyframes.py MODE SCRIPT EXIT.txt EXIT.json REPLAY.txt REPLAY.json: the
reports of pyframes.py, written at exit and recomputed from its trace, name its
call sites by their Python frames at the exact lines marked in SCRIPT, and say
why the others have none. MODE "memory": frames read from memory, so the calls
that released the GIL are named too; "api" (CUDAFRAG_PYTHON_MEMORY=0): only the
calls holding the GIL are, the others say they had released it."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workloads"))
from compare_reports import differences  # noqa: E402

MIB = 1 << 20
failures = []


def expect(what, ok):
    if not ok:
        failures.append(what)


def marked_lines(script):
    """{'SITE_A': 27, ...}: the line of each marker comment."""
    lines = {}
    with open(script, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if "# " in text:
                mark = text.rsplit("# ", 1)[1].strip()
                if mark.startswith(("SITE_", "CALL_")):
                    lines[mark] = number
    return lines


def sites(report):
    return [row["site"] | {"calls": row["calls"], "bytes": row["bytes"]}
            for row in report["top_sites_by_peak"]]


def python_frames(site):
    return [(f["function"], os.path.basename(f["file"]), f["line"])
            for f in site["frames"] if f["python"]]


def merged_in_place(where, site):
    """Python frames replace the eval loop's native frames, group by group: none
    of those is left inside the outermost Python frame."""
    frames = site["frames"]
    last = max(i for i, f in enumerate(frames) if f["python"])
    left = [f for f in frames[:last] if f["function"] == "_PyEval_EvalFrameDefault"]
    expect(f"{where}: {site['label']}: eval-loop frames left among the Python ones: {left}",
           not left)


def check_python_site(where, site, function, line, callers):
    name = os.path.basename(SCRIPT)
    expect(f"{where}: label {site['label']!r}",
           site["label"] == f"{function} (python) {name}:{line}")
    expect(f"{where}: python_frames {site['python_frames']!r}",
           site["python_frames"] == "recorded")
    shown = site["frames"][site["shown_frame"]]
    expect(f"{where}: shown frame {shown}",
           shown["python"] and shown["function"] == function and shown["line"] == line
           and shown["file"].endswith(name) and not shown["folded"])
    # Everything inside (ctypes, libffi, the interpreter) is folded away.
    inner = site["frames"][:site["shown_frame"]]
    expect(f"{where}: unfolded frames inside the shown one: {inner}",
           all(f["folded"] for f in inner))
    got = python_frames(site)[:len(callers) + 1]
    want = [(function, name, line)] + [(fn, name, ln) for fn, ln in callers]
    expect(f"{where}: Python frames {got}, want {want}", got == want)
    if MODE == "memory":
        merged_in_place(where, site)


def check_released(where, report, marks):
    """The calls made with the GIL released: named at their lines (memory), or
    together under the marker that says the GIL was released (api)."""
    name = os.path.basename(SCRIPT)
    rel = [s for s in sites(report) if s["python_frames"] == "gil_released"]
    if MODE == "api":
        expect(f"{where}: GIL-released bytes {sum(s['bytes'] for s in rel)}, want 7.5 MiB",
               sum(s["bytes"] for s in rel) == 7 * MIB + MIB // 2)
        for s in rel:
            expect(f"{where}: GIL-released site has Python frames", not python_frames(s))
            # The callback's site is named by the native frame that called back.
            expect(f"{where}: GIL-released label {s['label']!r}",
                   s["label"] == "cudaMalloc from Python code that had released the GIL"
                   or s["label"].startswith("call_back (") and s["bytes"] == 192 << 10)
        return
    expect(f"{where}: GIL-released sites {len(rel)}, want none", not rel)
    for function, site, call in (("released", "SITE_RELEASED", "CALL_RELEASED"),
                                 ("released_other", "SITE_OTHER", "CALL_OTHER")):
        found = [s for s in sites(report)
                 if s["label"] == f"{function} (python) {name}:{marks[site]}"]
        expect(f"{where}: {function} sites {len(found)}, want 1", len(found) == 1)
        for s in found:
            expect(f"{where}: {function} bytes {s['bytes']}", s["bytes"] == 2 * MIB)
            check_python_site(where, s, function, marks[site],
                              [("main", marks[call]), ("<module>", marks["CALL_MAIN"])])
    found = [s for s in sites(report)
             if s["label"] == f"in_thread (python) {name}:{marks['SITE_THREAD']}"]
    expect(f"{where}: in_thread sites {len(found)}, want 1", len(found) == 1)
    for s in found:
        check_python_site(where, s, "in_thread", marks["SITE_THREAD"], [])
        callers = [(f["function"], os.path.basename(f["file"])) for f in s["frames"]
                   if f["python"]][1:]
        expect(f"{where}: in_thread's callers {callers}",
               callers and callers[0][0] in ("run", "Thread.run")
               and callers[0][1] == "threading.py" and s["bytes"] == 3 * MIB)
    check_callback(where, report, marks)
    found = [s for s in sites(report)
             if s["label"] == f"Holder.__init__ (python) {name}:{marks['SITE_INIT']}"
             or s["label"] == f"__init__ (python) {name}:{marks['SITE_INIT']}"]
    # Calls before and after the call site is specialised have different native stacks.
    expect(f"{where}: __init__ sites {len(found)}, bytes {sum(s['bytes'] for s in found)}",
           found and sum(s["bytes"] for s in found) == 320 << 10)
    for s in found:
        got = [(fn, ln) for fn, _, ln in python_frames(s)]
        expect(f"{where}: __init__'s Python frames {got}",
               got[1:] == [("main", marks["CALL_INIT"]), ("<module>", marks["CALL_MAIN"])])


def check_callback(where, report, marks):
    """Python -> native -> Python: each run of Python frames stands where its own
    eval loop was, on either side of the native call_back frame."""
    name = os.path.basename(SCRIPT)
    found = [s for s in sites(report)
             if s["label"] == f"from_callback (python) {name}:{marks['SITE_CALLBACK']}"]
    expect(f"{where}: from_callback sites {len(found)}, want 1", len(found) == 1)
    for s in found:
        got = [(fn.rsplit(".", 1)[-1], ln) for fn, _, ln in python_frames(s)]
        want = [("from_callback", marks["SITE_CALLBACK"]), ("<lambda>", marks["SITE_LAMBDA"]),
                ("main", marks["CALL_NATIVE"]), ("<module>", marks["CALL_MAIN"])]
        expect(f"{where}: callback Python frames {got}, want {want}", got == want)
        frames = s["frames"]
        at = {f["function"].rsplit(".", 1)[-1]: i for i, f in enumerate(frames) if f["python"]}
        native = [i for i, f in enumerate(frames) if f["function"] == "call_back"]
        expect(f"{where}: call_back frame at {native}, Python frames at {at}",
               len(native) == 1 and at.get("<lambda>", 99) < native[0] < at.get("main", -1))
        merged_in_place(where, s)


def check_json(where, report, marks):
    by_label = {}
    for s in sites(report):
        by_label.setdefault(s["label"], []).append(s)
    name = os.path.basename(SCRIPT)
    a = by_label.get(f"alloc_a (python) {name}:{marks['SITE_A']}", [])
    expect(f"{where}: alloc_a sites {len(a)}, want 2 (two callers)", len(a) == 2)
    for s in a:
        caller = marks["CALL_A_LOOP"] if s["calls"] == 3 else marks["CALL_A_ONCE"]
        check_python_site(where, s, "alloc_a", marks["SITE_A"],
                          [("main", caller), ("<module>", marks["CALL_MAIN"])])
    b = by_label.get(f"alloc_b (python) {name}:{marks['SITE_B']}", [])
    expect(f"{where}: alloc_b sites {len(b)}, want 1", len(b) == 1)
    for s in b:
        expect(f"{where}: alloc_b calls {s['calls']}", s["calls"] == 1 and s["bytes"] == 3 * MIB)
        check_python_site(where, s, "alloc_b", marks["SITE_B"],
                          [("main", marks["CALL_B"]), ("<module>", marks["CALL_MAIN"])])
    check_released(where, report, marks)
    nat = [s for s in sites(report) if s["python_frames"] == "none"]
    expect(f"{where}: native-thread sites {len(nat)}, want 1", len(nat) == 1)
    for s in nat:
        expect(f"{where}: native-thread label {s['label']!r}",
               s["label"].startswith("alloc_thread (") and s["bytes"] == 5 * MIB)
    check_leak_finding(where, report, name, marks)


def check_leak_finding(where, report, name, marks):
    """alloc_a's two stacks are one site of the leak finding, with their share."""
    leaks = [f for f in report["findings"] if f["id"] == "leak"]
    expect(f"{where}: {len(leaks)} leak findings, want 1", len(leaks) == 1)
    for f in leaks:
        top = f["sites"][0]["site"]["label"] if f["sites"] else ""
        expect(f"{where}: largest leak {top!r}", top.startswith("alloc_thread ("))
        entry = [e for e in f["sites"]
                 if e["site"]["label"] == f"alloc_a (python) {name}:{marks['SITE_A']}"]
        expect(f"{where}: alloc_a in the leak finding: {entry}",
               len(entry) == 1 and entry[0]["stacks"] == 2 and entry[0]["value"] == 4 * MIB
               and abs(entry[0]["share"] - 4 / 19.5) < 1e-6)


def check_text(where, text, marks):
    name = os.path.basename(SCRIPT)
    for want in (f"    at alloc_a (python) {name}:{marks['SITE_A']}\n"
                 f"       main (python) {name}:{marks['CALL_A_LOOP']}\n"
                 f"       <module> (python) {name}:{marks['CALL_MAIN']}\n",
                 f"    at alloc_b (python) {name}:{marks['SITE_B']}\n"
                 f"       main (python) {name}:{marks['CALL_B']}\n",
                 "(no Python frames: no Python code on this thread's stack (a native worker "
                 "thread, such as PyTorch's autograd engine running the backward pass; shown: "
                 "its first frame outside allocators))",
                 f"       21%  alloc_a (python) {name}:{marks['SITE_A']}  (4.00 MiB in 4 "
                 "allocations)\n"):
        expect(f"{where}: text lacks {want!r}", want in text)
    if MODE == "api":
        want = ("    at cudaMalloc from Python code that had released the GIL\n"
                "    (no Python frames: the thread had released the GIL")
        expect(f"{where}: text lacks {want!r}", want in text)
    else:
        want = (f"    at released (python) {name}:{marks['SITE_RELEASED']}\n"
                f"       main (python) {name}:{marks['CALL_RELEASED']}\n")
        expect(f"{where}: text lacks {want!r}", want in text)
        expect(f"{where}: text says the GIL was released", "released the GIL" not in text)


def main():
    global MODE, SCRIPT
    MODE, SCRIPT, exit_txt, exit_json, replay_txt, replay_json = sys.argv[1:7]
    marks = marked_lines(SCRIPT)
    with open(SCRIPT, encoding="utf-8") as f:
        marks["CALL_MAIN"] = [i for i, t in enumerate(f, 1) if t.strip() == "main()"][-1]
    reports = {}
    for where, txt, js in (("exit", exit_txt, exit_json), ("replay", replay_txt, replay_json)):
        with open(js, encoding="utf-8") as f:
            reports[where] = json.load(f)
        with open(txt, encoding="utf-8") as f:
            check_text(where, f.read(), marks)
        check_json(where, reports[where], marks)
    failures.extend("replay: " + d for d in differences(reports["exit"], reports["replay"]))
    for line in failures[:30]:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
