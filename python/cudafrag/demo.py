"""A small workload for trying cudafrag without a framework or a GPU:

    cudafrag run --sim -- python -m cudafrag.demo [STEPS]

It allocates and frees device memory through the CUDA runtime (libcudart.so,
loaded with ctypes), the way a training loop does: a few long-lived buffers,
then per step a "forward" region that grows activations of mixed sizes and a
"backward" region that frees most of them, leaving holes."""
import ctypes
import ctypes.util
import sys

import cudafrag

MIB = 1 << 20


def _runtime():
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so", ctypes.util.find_library("cudart")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    sys.exit("cudafrag.demo: no CUDA runtime (libcudart.so) found: run it under `cudafrag run --sim`")


class Device:
    def __init__(self):
        self.rt = _runtime()
        self.rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.rt.cudaFree.argtypes = [ctypes.c_void_p]

    def alloc(self, n):
        p = ctypes.c_void_p()
        rc = self.rt.cudaMalloc(ctypes.byref(p), n)
        if rc != 0:
            sys.exit(f"cudafrag.demo: cudaMalloc({n}) failed: error {rc}")
        return p

    def free(self, p):
        self.rt.cudaFree(p)


def main(steps=3):
    dev = Device()
    weights = [dev.alloc(8 * MIB) for _ in range(4)]
    for step in range(steps):
        cudafrag.mark(f"step {step}")
        with cudafrag.region("forward"):
            acts = [dev.alloc((1 + i % 3) * MIB + 4096 * i) for i in range(12)]
        with cudafrag.region("backward"):
            for i, p in enumerate(acts):
                if i % 4:
                    dev.free(p)
            kept = acts[::4]
        for p in kept:
            dev.free(p)
    for p in weights:
        dev.free(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
