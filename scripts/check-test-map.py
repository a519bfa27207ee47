#!/usr/bin/env python3
"""The "Features and their tests" map of docs/architecture.md against the tests
the build registered (BUILD/meson-info/intro-tests.json). Fails when a test is in
no row, a row names a test that is not registered, a `family-*` pattern matches
no test, or a test's name is not kebab-case (lowercase words and digits joined by
hyphens; a dot inside a version, as in `pyframes-3.10`). A name ending in `?` is
registered only in some builds (a sanitizer, a tool found): missing, it is fine.

    scripts/check-test-map.py ROOT BUILD
"""
import argparse
import fnmatch
import json
import os
import re
import sys

SECTION = "## Features and their tests"
STYLE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+(\.[0-9]+)*)*$")


def map_rows(doc):
    """(feature, [names]) per row of the section's table: the names are the
    backquoted words of the row's last cell."""
    text = open(doc).read()
    start = text.find("\n" + SECTION + "\n")
    if start < 0:
        sys.exit("check-test-map: %s has no section %r" % (doc, SECTION))
    body = text[start + len(SECTION) + 2:]
    end = body.find("\n## ")
    rows = []
    for line in (body if end < 0 else body[:end]).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        rows.append((cells[0], re.findall(r"`([^`]+)`", cells[-1])))
    return rows[1:]  # the header


def problems(rows, tests):
    found, bad = set(), []
    for feature, names in rows:
        if not names:
            bad.append("row %r names no test" % feature)
        for n in names:
            optional = n.endswith("?")
            n = n.rstrip("?")
            hits = fnmatch.filter(tests, n) if "*" in n else [n] if n in tests else []
            if not hits and not optional:
                bad.append("row %r names %s, which no test matches" % (feature, n))
            found.update(hits)
    for t in sorted(tests):
        if t not in found:
            bad.append("test %s is in no row of the map" % t)
        if not STYLE.match(t):
            bad.append("test %s: not kebab-case (e.g. record-fork-load)" % t)
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="the source tree (docs/architecture.md)")
    p.add_argument("build", help="a configured build folder (meson-info/intro-tests.json)")
    a = p.parse_args()
    with open(os.path.join(a.build, "meson-info", "intro-tests.json")) as f:
        tests = {t["name"] for t in json.load(f)}
    rows = map_rows(os.path.join(a.root, "docs", "architecture.md"))
    bad = problems(rows, tests)
    for b in bad:
        print("FAIL:", b)
    if bad:
        print("docs/architecture.md, %r: one row per feature naming its tests" % SECTION)
        sys.exit(1)
    print("ok: %d tests in %d rows" % (len(tests), len(rows)))


if __name__ == "__main__":
    main()
