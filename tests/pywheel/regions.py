"""Drives the Python face on the simulated device through ctypes, for api.sh.
profiled: regions' peaks are exact and reset per region; nested regions give the
outer one the inner's peak; marks and report_now work. Then api.sh reads the
report's regions section. Usage: regions.py profiled|bare"""
import ctypes
import sys
import warnings

import cudafrag

MIB = 1 << 20
rt = ctypes.CDLL("libcudart.so.13")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]


def alloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), n) == 0, "cudaMalloc failed"
    return p


def profiled():
    assert cudafrag.available() and cudafrag.version() == "0.1.0", cudafrag.version()
    kept = alloc(8 * MIB)
    with cudafrag.region("grow") as grow:
        a, b = alloc(4 * MIB), alloc(6 * MIB)
        assert cudafrag.region_peak()[0] == 18 * MIB, cudafrag.region_peak()
        rt.cudaFree(a)
        rt.cudaFree(b)
    assert grow.peak_live == 18 * MIB, grow.peak_live
    assert grow.peak_footprint >= grow.peak_live, (grow.peak_footprint, grow.peak_live)
    # A later region starts from what is live at its start, not the run's peak.
    with cudafrag.region("small") as small:
        rt.cudaFree(alloc(1 * MIB))
    assert small.peak_live == 9 * MIB, small.peak_live
    # The outer region sees what its inner one reached; the inner only its own.
    with cudafrag.region("outer") as outer:
        c = alloc(2 * MIB)
        rt.cudaFree(c)
        with cudafrag.region("inner") as inner:
            rt.cudaFree(alloc(5 * MIB))
        rt.cudaFree(alloc(1 * MIB))
    assert inner.peak_live == 13 * MIB, inner.peak_live
    assert outer.peak_live == 13 * MIB, outer.peak_live
    # The same name again adds a run; the report keeps the highest.
    with cudafrag.region("small"):
        rt.cudaFree(alloc(3 * MIB))

    @cudafrag.region("decorated")
    def step():
        rt.cudaFree(alloc(2 * MIB))

    step()
    try:
        cudafrag.region_peak()
    except LookupError:
        pass
    else:
        raise AssertionError("region_peak with no region open did not raise")
    cudafrag.mark("after the regions")
    cudafrag.report_now()
    assert cudafrag.live_bytes(0) == 8 * MIB, cudafrag.live_bytes(0)
    assert cudafrag.api_calls("cudaMalloc") == 9, cudafrag.api_calls("cudaMalloc")
    rt.cudaFree(kept)


def bare():
    assert not cudafrag.available() and cudafrag.version() is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cudafrag.mark("x")
        with cudafrag.region("r") as r:
            rt.cudaFree(alloc(MIB))
        cudafrag.mark("y")
    assert r.peak_live is None and r.peak_footprint is None
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "not preloaded" in said[0], said
    for measurement in (cudafrag.report_now, cudafrag.live_bytes, cudafrag.region_peak):
        try:
            measurement()
        except cudafrag.NotLoadedError as e:
            assert "cudafrag run" in str(e), e
        else:
            raise AssertionError(f"{measurement.__name__} did not raise without the profiler")


if __name__ == "__main__":
    {"profiled": profiled, "bare": bare}[sys.argv[1]]()
    print("ok:", sys.argv[1])
