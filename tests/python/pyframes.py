"""Allocations on the simulated device through ctypes, for pyframes.sh: two
functions that hold the GIL during the call (ctypes.PyDLL), two that release it
(ctypes.CDLL, as PyTorch, CuPy and JAX do around their operations), one that
releases it on a Python thread, and one on a native thread that never ran
Python, one from a Python callback called by native code called by Python, and
one from a class's __init__ (3.13 runs it under a frame of its own, not shown).
The lines marked SITE_* and CALL_* are where the report must place them.
Usage: pyframes.py HELPER_LIBRARY"""
import ctypes
import sys
import threading

rt = ctypes.PyDLL("libcudart.so.13")  # keeps the GIL during the call
rt_released = ctypes.CDLL("libcudart.so.13")  # releases it
helper = ctypes.CDLL(sys.argv[1])
helper.alloc_on_native_thread.restype = ctypes.c_void_p
helper.alloc_on_native_thread.argtypes = [ctypes.c_size_t]
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int)
helper.call_back.argtypes = [CALLBACK]

MIB = 1 << 20


def check(rc):
    if rc != 0:
        sys.exit(f"cudaMalloc failed: {rc}")


def alloc_a(n):
    p = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)))  # SITE_A
    return p


def alloc_b(n):
    p = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)))  # SITE_B
    return p


def released(n):
    p = ctypes.c_void_p()
    check(rt_released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)))  # SITE_RELEASED
    return p


def released_other(n):
    p = ctypes.c_void_p()
    check(rt_released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)))  # SITE_OTHER
    return p


def in_thread(n, keep):
    p = ctypes.c_void_p()
    check(rt_released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)))  # SITE_THREAD
    keep.append(p)


def from_callback(keep):
    p = ctypes.c_void_p()
    check(rt_released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(192 << 10)))  # SITE_CALLBACK
    keep.append(p)
    return 0


class Holder:
    def __init__(self, keep):
        p = ctypes.c_void_p()
        check(rt_released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(16 << 10)))  # SITE_INIT
        keep.append(p)


def main():
    keep = []
    for _ in range(3):
        keep.append(alloc_a(MIB))  # CALL_A_LOOP
    keep.append(alloc_a(MIB))  # CALL_A_ONCE
    keep.append(alloc_b(3 * MIB))  # CALL_B
    keep.append(released(2 * MIB))  # CALL_RELEASED
    keep.append(released_other(2 * MIB))  # CALL_OTHER
    t = threading.Thread(target=in_thread, args=(3 * MIB, keep))
    t.start()
    t.join()
    callback = CALLBACK(lambda: from_callback(keep))  # SITE_LAMBDA
    helper.call_back(callback)  # CALL_NATIVE
    for _ in range(20):  # specialised after a few calls: 3.13 then pushes the shim
        Holder(keep)  # CALL_INIT
    if not helper.alloc_on_native_thread(5 * MIB):
        sys.exit("the native thread's cudaMalloc failed")
    return keep


main()
