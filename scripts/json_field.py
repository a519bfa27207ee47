#!/usr/bin/env python3
"""One field of a JSON file, for shell scripts: the path's keys and list indexes
separated by dots. A null on the way prints an empty line; a missing field prints
--default when given, else an empty line and a note on standard error (exit status
1), as does a file that cannot be read.

    scripts/json_field.py REPORT.json summary.allocs
    scripts/json_field.py --default '' ADVICE.json devices.0.recommended.conf
"""
import argparse
import json
import sys


def lookup(value, path):
    """The value at PATH, None where a step finds null; KeyError where it finds nothing."""
    for step in path.split(".") if path else []:
        if value is None:
            return None
        if isinstance(value, list):
            try:
                value = value[int(step)]
            except (ValueError, IndexError):
                raise KeyError(step)
        elif isinstance(value, dict):
            value = value[step]
        else:
            raise KeyError(step)
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the JSON file")
    p.add_argument("path", help="dot-separated keys and indexes, e.g. devices.0.advice")
    p.add_argument("--default", help="printed when the field is missing")
    a = p.parse_args()
    try:
        j = json.load(open(a.file))
    except (OSError, ValueError) as e:
        print()
        sys.exit("json_field.py: %s" % e)
    try:
        value = lookup(j, a.path)
    except KeyError as e:
        if a.default is not None:
            value = a.default
        else:
            print()
            sys.exit("json_field.py: %s: no %s (%s)" % (a.file, a.path, e))
    print("" if value is None else value)


if __name__ == "__main__":
    main()
