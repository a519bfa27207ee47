"""The public C API of libcudafrag.so (include/cudafrag/cudafrag.h) through
ctypes. The library is never loaded from here: it measures only when the dynamic
linker preloaded it into this process (`cudafrag run -- python ...`), and its
symbols are then in the process's global scope, where CDLL(None) finds them."""
import ctypes
import threading
import warnings
from contextlib import ContextDecorator


class NotLoadedError(RuntimeError):
    """A measurement was asked for in a process cudafrag does not profile."""


_NOT_LOADED = (
    "libcudafrag.so is not preloaded into this process: run it under the profiler, "
    "e.g. `cudafrag run -- python script.py` (or `cudafrag run --sim -- ...` without a GPU)"
)

_lock = threading.Lock()
_state = {"lib": None, "looked": False, "warned": False}


def _bind(lib):
    sigs = {
        "cudafrag_version": ([], ctypes.c_char_p),
        "cudafrag_report_now": ([], ctypes.c_int),
        "cudafrag_mark": ([ctypes.c_char_p], ctypes.c_int),
        "cudafrag_api_calls": ([ctypes.c_char_p], ctypes.c_longlong),
        "cudafrag_live_bytes": ([ctypes.c_int], ctypes.c_longlong),
        "cudafrag_region_push": ([ctypes.c_char_p], ctypes.c_int),
        "cudafrag_region_pop": ([], ctypes.c_int),
        "cudafrag_region_peak": (
            [ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_ulonglong)],
            ctypes.c_int,
        ),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name, None)
        if fn is not None:  # an older library lacks the regions
            fn.argtypes, fn.restype = args, res


def _lib():
    """The preloaded library's symbols, or None."""
    with _lock:
        if not _state["looked"]:
            _state["looked"] = True
            try:
                scope = ctypes.CDLL(None)
                scope.cudafrag_version  # noqa: B018 -- raises AttributeError when absent
            except (OSError, AttributeError):
                scope = None
            if scope is not None:
                _bind(scope)
            _state["lib"] = scope
        return _state["lib"]


def _function(name):
    lib = _lib()
    return None if lib is None else getattr(lib, name, None)


def _warn_once():
    with _lock:
        if _state["warned"]:
            return
        _state["warned"] = True
    warnings.warn(f"cudafrag: nothing is measured: {_NOT_LOADED}", RuntimeWarning, stacklevel=3)


def _required(name):
    fn = _function(name)
    if fn is None:
        if _lib() is None:
            raise NotLoadedError(_NOT_LOADED)
        raise NotLoadedError(f"the preloaded libcudafrag.so is older than this package: it has no {name}")
    return fn


def available():
    """True when libcudafrag.so profiles this process."""
    return _lib() is not None


def version():
    """The preloaded library's version ("0.1.0"), or None when it is not preloaded."""
    fn = _function("cudafrag_version")
    return fn().decode() if fn else None


def mark(label):
    """Puts a marker with label into the trace (`cudafrag run --trace`): "epoch 3".
    Without the profiler it does nothing (one warning per process)."""
    fn = _function("cudafrag_mark")
    if fn is None:
        _warn_once()
        return
    fn(str(label).encode("utf-8", "replace"))


def report_now():
    """Writes an interim report now, to the configured outputs (as SIGUSR1 does).
    Raises NotLoadedError without the profiler and OSError when no output could be
    written."""
    if _required("cudafrag_report_now")() != 0:
        raise OSError("cudafrag: no report output could be written")


def live_bytes(device=0):
    """Bytes of live allocations on device that cudafrag records."""
    n = _required("cudafrag_live_bytes")(int(device))
    if n < 0:
        raise ValueError(f"no such device: {device}")
    return n


def api_calls(api):
    """Calls of one API counted so far ("cudaMalloc", "cuMemCreate", ...)."""
    n = _required("cudafrag_api_calls")(str(api).encode())
    if n < 0:
        raise ValueError(f"cudafrag does not count {api!r}")
    return n


def region_peak(device=0):
    """(peak live bytes, peak footprint bytes) on device since the innermost open
    region began. Raises NotLoadedError without the profiler, LookupError when no
    region is open."""
    fn = _required("cudafrag_region_peak")
    live, footprint = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    if fn(int(device), ctypes.byref(live), ctypes.byref(footprint)) != 0:
        raise LookupError(f"no cudafrag region is open (or no device {device})")
    return live.value, footprint.value


class region(ContextDecorator):
    """A named region: `with cudafrag.region("forward"):` or `@cudafrag.region("step")`.
    The report's "regions" section gives each region's highest live bytes and
    footprint per device, over all the times it ran. After the block, peak_live
    and peak_footprint hold this run's figures on `device` (None without the
    profiler, which makes the region a no-op with one warning per process)."""

    def __init__(self, name, device=0):
        self.name = str(name)
        self.device = device
        self.peak_live = self.peak_footprint = None
        self._open = False

    def __enter__(self):
        push = _function("cudafrag_region_push")
        if push is None:
            _warn_once()
            return self
        if push(self.name.encode("utf-8", "replace")) != 0:
            raise RuntimeError("cudafrag: too many nested regions (at most 16 open at once)")
        self._open = True
        return self

    def __exit__(self, *exc):
        if self._open:
            self._open = False
            try:
                self.peak_live, self.peak_footprint = region_peak(self.device)
            except (LookupError, NotLoadedError):
                pass
            finally:
                _function("cudafrag_region_pop")()
        return False
