"""cudafrag: CUDA memory allocation and fragmentation profiler.

The profiling itself is the preload library libcudafrag.so, started with the
command (`cudafrag run -- python train.py`, also `python -m cudafrag run ...`).
This package is its Python face: regions, markers and reports on demand from a
profiled program, a pytest plugin (`pytest --cudafrag`,
`@pytest.mark.cudafrag(max_peak_live="2G")`) and an IPython magic
(`%load_ext cudafrag.ipython`, then `%%cudafrag`). Without the profiler every
call is a no-op with one warning, except those that return a measurement, which
raise NotLoadedError. See docs/python.md."""
import os
from pathlib import Path

from ._api import (
    NotLoadedError,
    api_calls,
    available,
    live_bytes,
    mark,
    region,
    region_peak,
    report_now,
    version,
)
from ._sizes import format_size, parse_fraction, parse_size

__version__ = "0.1.0"

__all__ = [
    "NotLoadedError", "api_calls", "available", "command", "format_size", "live_bytes", "mark",
    "parse_fraction", "parse_size", "region", "region_peak", "report_now", "version",
]


def _is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def command():
    """The path of the cudafrag command: the one this package ships, else the
    first executable (not a Python wrapper of it) on PATH."""
    own = Path(__file__).resolve().parent / "bin" / "cudafrag"
    if _is_elf(own):
        return str(own)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d, "cudafrag")
        if d and os.access(cand, os.X_OK) and _is_elf(cand):
            return cand
    raise FileNotFoundError("the cudafrag command is neither in this package nor on PATH")
