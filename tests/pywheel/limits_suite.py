"""The suite plugin.sh runs with the pytest plugin: device memory through ctypes
on the simulated device (2 MiB pages: 3 MiB holds 4 MiB, 4 MiB holds 4 MiB)."""
import ctypes

import pytest

MIB = 1 << 20
rt = ctypes.CDLL("libcudart.so.13")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]


def hold(*sizes):
    ptrs = []
    for n in sizes:
        p = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(p), n) == 0
        ptrs.append(p)
    for p in ptrs:
        rt.cudaFree(p)


@pytest.mark.cudafrag(max_peak_live="64M")
def test_under_limit():
    hold(32 * MIB)


@pytest.mark.cudafrag(max_peak_live="64M")
def test_over_limit():
    hold(60 * MIB, 40 * MIB)


@pytest.mark.cudafrag(max_fragmentation="20%")
def test_compact():
    hold(4 * MIB)


@pytest.mark.cudafrag(max_fragmentation="20%", max_footprint="1G")
def test_fragmented():
    hold(3 * MIB)


def test_unmarked():
    hold(200 * MIB)
