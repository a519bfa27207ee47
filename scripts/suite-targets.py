#!/usr/bin/env python3
"""suite-targets.py BUILD_DIR SUITE...: the build outputs the tests of these
suites need (their programs and every target they name as an argument,
environment value or dependency), one per line, relative to BUILD_DIR -- so that
a build folder that runs only some suites builds only what they use."""
import argparse
import json
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("build", help="the build folder (its meson-info/)")
    p.add_argument("suites", nargs="*", help="suite names")
    a = p.parse_args()
    build, suites = a.build, set(a.suites)
    info = os.path.join(build, "meson-info")
    with open(os.path.join(info, "intro-tests.json")) as f:
        tests = json.load(f)
    with open(os.path.join(info, "intro-targets.json")) as f:
        targets = {t["id"]: t for t in json.load(f)}
    wanted = set()
    for test in tests:
        if not any(s.split(":")[-1] in suites for s in test["suite"]):
            continue
        for dep in test["depends"]:
            for path in targets[dep]["filename"] if dep in targets else []:
                wanted.add(os.path.relpath(path, os.path.abspath(build)))
    if not wanted:
        sys.exit("no test in suites " + ", ".join(sorted(suites)))
    print("\n".join(sorted(wanted)))


if __name__ == "__main__":
    main()
