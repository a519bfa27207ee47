"""pytest plugin (entry point pytest11 "cudafrag"), in the manner of pytest-memray.

    pytest --cudafrag [--cudafrag-sim]
    @pytest.mark.cudafrag(max_peak_live="2G", max_footprint="3G", max_fragmentation="20%")

--cudafrag runs the session with libcudafrag.so preloaded: pytest starts again
under `cudafrag run` (preloading happens when a process starts), unless it is
already profiled (`cudafrag run -- python -m pytest` needs no option). Each test
then runs inside a region named by its node id: its peak live bytes and
footprint are in the report's "regions" section and the session's summary, and a
test over the limits of its cudafrag marker fails. Without the profiler the
markers are not checked (the summary says so).

PyTorch and CuPy keep freed device memory in their caches, and cudafrag sees the
cache's blocks as live: a test would be charged with what earlier tests left
cached. Before each test the plugin empties the caches of the frameworks the
session has imported (torch.cuda.empty_cache(), CuPy's default pools), unless
--cudafrag-keep-cache."""
import os
import sys

import pytest

from . import _api
from ._sizes import format_size, parse_fraction, parse_size

_LIMITS = {
    "max_peak_live": parse_size,
    "max_footprint": parse_size,
    "max_fragmentation": parse_fraction,
}
_AGAIN = "CUDAFRAG_PYTEST_PRELOADED"  # set by the re-run: preloading did not work if absent


def pytest_addoption(parser):
    group = parser.getgroup("cudafrag", "CUDA memory profiling with cudafrag")
    group.addoption("--cudafrag", action="store_true", default=False,
                    help="run the session under cudafrag and hold tests marked "
                         "cudafrag(...) to their limits")
    group.addoption("--cudafrag-sim", action="store_true", default=False,
                    help="with --cudafrag: on cudafrag's simulated CUDA device (no GPU)")
    group.addoption("--cudafrag-keep-cache", action="store_true", default=False,
                    help="do not empty PyTorch's and CuPy's device memory caches before each "
                         "test (their cached blocks then count as the next test's live bytes)")
    group.addoption("--cudafrag-device", type=int, default=0, metavar="N",
                    help="the device whose memory the limits hold (default 0)")
    group.addoption("--cudafrag-top", type=int, default=5, metavar="N",
                    help="tests listed in the summary, by peak live bytes (default 5)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cudafrag(max_peak_live=None, max_footprint=None, max_fragmentation=None): fail the "
        "test when, under cudafrag, its peak live bytes, peak footprint or fragmentation "
        "(1 - peak live / peak footprint) is above the limit: sizes as 2G or 512MiB, "
        "fractions as 0.2 or '20%'",
    )
    if _api.available():
        config.pluginmanager.register(_Profiler(config), "cudafrag-profiler")
        return
    if not config.getoption("cudafrag"):
        config.pluginmanager.register(_Unchecked(), "cudafrag-unchecked")
        return
    if os.environ.get(_AGAIN):
        raise pytest.UsageError(
            "cudafrag: pytest was started again under cudafrag, but libcudafrag.so is not "
            "loaded into it (is LD_PRELOAD cleared on the way?)")
    _start_again_under_cudafrag(config)


def _start_again_under_cudafrag(config):
    from . import command

    try:
        exe = command()
    except FileNotFoundError as e:
        raise pytest.UsageError(f"--cudafrag: {e}") from None
    argv = [exe, "run"] + (["--sim"] if config.getoption("cudafrag_sim") else [])
    argv += ["--", sys.executable, "-m", "pytest", *config.invocation_params.args]
    # The output capture has the terminal's descriptors: they go back to the
    # terminal before this process becomes the profiled one.
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[_AGAIN] = "1"
    os.chdir(config.invocation_params.dir)
    os.execv(exe, argv)


def _limits(marker):
    unknown = set(marker.kwargs) - set(_LIMITS)
    if unknown or marker.args:
        raise ValueError(f"cudafrag marker: unknown arguments {sorted(unknown) or marker.args}; "
                         f"it takes {', '.join(_LIMITS)}")
    return {k: _LIMITS[k](v) for k, v in marker.kwargs.items() if v is not None}


def _over(limits, live, footprint):
    """Lines saying which limits the test's peaks are over."""
    lines = []
    if "max_peak_live" in limits and live > limits["max_peak_live"]:
        lines.append(f"peak live {format_size(live)} is above the limit "
                     f"{format_size(limits['max_peak_live'])}")
    if "max_footprint" in limits and footprint > limits["max_footprint"]:
        lines.append(f"peak footprint {format_size(footprint)} is above the limit "
                     f"{format_size(limits['max_footprint'])}")
    if "max_fragmentation" in limits and footprint > 0:
        frag = 1 - live / footprint
        if frag > limits["max_fragmentation"]:
            lines.append(f"fragmentation (1 - peak live / peak footprint) {100 * frag:.1f}% is "
                         f"above the limit {100 * limits['max_fragmentation']:.1f}%")
    return lines


def _empty_framework_caches():
    """Give the frameworks' cached device memory back, so that a test's region
    starts from what is really in use. Only frameworks the session imported,
    and only once they have touched the device: nothing is imported or
    initialised here."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        cuda.synchronize()
        cuda.empty_cache()
    cupy = sys.modules.get("cupy")
    if cupy is not None and hasattr(cupy, "get_default_memory_pool"):
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


class _Profiler:
    """The session runs under cudafrag: a region per test, its limits checked."""

    def __init__(self, config):
        self.keep_cache = config.getoption("cudafrag_keep_cache")
        self.device = config.getoption("cudafrag_device")
        self.top = config.getoption("cudafrag_top")
        self.peaks = {}  # node id -> (peak live, peak footprint)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self.keep_cache:
            _empty_framework_caches()
        r = _api.region(item.nodeid, self.device)
        with r:
            yield
        if r.peak_live is not None:
            self.peaks[item.nodeid] = (r.peak_live, r.peak_footprint)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        marker = item.get_closest_marker("cudafrag")
        if call.when != "call" or marker is None or not report.passed:
            return
        try:
            lines = _over(_limits(marker), *self.peaks.get(item.nodeid, (0, 0)))
        except ValueError as e:
            lines = [str(e)]
        if lines:
            report.outcome = "failed"
            report.longrepr = "cudafrag: " + "\ncudafrag: ".join(lines)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.peaks or self.top <= 0:
            return
        tr = terminalreporter
        tr.section(f"cudafrag: peak device memory (device {self.device})")
        ranked = sorted(self.peaks.items(), key=lambda kv: kv[1][0], reverse=True)
        for nodeid, (live, footprint) in ranked[: self.top]:
            tr.write_line(f"{format_size(live):>11} live  {format_size(footprint):>11} footprint  "
                          f"{nodeid}")


class _Unchecked:
    """Not profiled: the markers' limits cannot be checked; the summary says so."""

    def __init__(self):
        self.unchecked = 0

    def pytest_collection_modifyitems(self, items):
        self.unchecked = sum(1 for i in items if i.get_closest_marker("cudafrag"))

    def pytest_terminal_summary(self, terminalreporter):
        if self.unchecked:
            terminalreporter.write_line(
                f"cudafrag: the limits of {self.unchecked} test(s) were not checked: "
                "run pytest with --cudafrag")
