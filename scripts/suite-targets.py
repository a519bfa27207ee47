#!/usr/bin/env python3
"""suite-targets.py BUILD_DIR [SUITE...] [--no-suite SUITE...]: the build outputs
the tests of these suites need (their programs and every target they name as an
argument, environment value or dependency), one per line, relative to BUILD_DIR
-- so that a build folder that runs only some suites builds only what they use.
With no SUITE, every test not in a --no-suite suite: the selection meson test
makes with the same arguments."""
import argparse
import json
import os
import sys


def selected(test, wanted, unwanted):
    suites = {s.split(":")[-1] for s in test["suite"]}
    return (not wanted or suites & wanted) and not suites & unwanted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("suites", nargs="*")
    ap.add_argument("--no-suite", action="append", default=[])
    args = ap.parse_args()
    wanted, unwanted = set(args.suites), set(args.no_suite)
    info = os.path.join(args.build, "meson-info")
    with open(os.path.join(info, "intro-tests.json")) as f:
        tests = json.load(f)
    with open(os.path.join(info, "intro-targets.json")) as f:
        targets = {t["id"]: t for t in json.load(f)}
    paths = set()
    for test in tests:
        if not selected(test, wanted, unwanted):
            continue
        for dep in test["depends"]:
            for path in targets[dep]["filename"] if dep in targets else []:
                paths.add(os.path.relpath(path, os.path.abspath(args.build)))
    if not paths:
        sys.exit("no test selected")
    print("\n".join(sorted(paths)))


if __name__ == "__main__":
    main()
