"""Shared by the Python checks of the tests: the environment of a program run
under cudafrag, and the reports it wrote (tests/lib.sh is the shell tests'
counterpart). A check in another folder imports it with
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))"""
import json
import os


def report_to(out, trace=False):
    """The variables that send a run's reports to OUT.txt and OUT.json (and, with
    trace, its trace to OUT.cftrace), with nothing of cudafrag's on stderr."""
    env = {"CUDAFRAG_OUTPUT": out, "CUDAFRAG_STDERR": "0"}
    if trace:
        env["CUDAFRAG_TRACE"] = "1"
    return env


def profiled(lib, out, trace=False, **extra):
    """report_to's variables with libcudafrag.so (lib) preloaded; extra ones win."""
    return dict({"LD_PRELOAD": lib}, **report_to(out, trace), **extra)


def read_report(out):
    """The JSON report a run wrote to OUT.json; None when it wrote none."""
    path = out + ".json"
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def by_device(entries):
    """A report's per-device list ("devices") as {device number: entry}."""
    return {e["device"]: e for e in entries}
