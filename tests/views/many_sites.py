"""many_sites.py N [SEED]: N allocations on the simulated device, each from a
call site of its own (a Python function of its own, on a line of its own), for
the tests and the benchmark of the views on many call sites. Run it under
cudafrag with a trace (Python frames name the sites). Every site allocates one
small block (a size from SEED and the site's number) that is never freed: every
site is in the leak and the peak flame graphs. A second run with another SEED
changes most sizes: diff then has a change at most sites it matches.
Usage: many_sites.py N [SEED]"""
import ctypes
import sys

rt = ctypes.PyDLL("libcudart.so.13")  # keeps the GIL: the Python frames are read
n = int(sys.argv[1])
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0

# One function per site, one line each: distinct names and file:line in the stack.
source = "".join("def site_%d(p, size):\n    return malloc(ctypes.byref(p), size)\n" % i
                 for i in range(n))
space = {"ctypes": ctypes, "malloc": rt.cudaMalloc}
exec(compile(source, "many_sites_generated.py", "exec"), space)
for i in range(n):
    p = ctypes.c_void_p()
    size = 512 * (1 + (i * 7 + seed) % 8)
    rc = space["site_%d" % i](p, ctypes.c_size_t(size))
    if rc != 0:
        sys.exit("cudaMalloc of %d B failed: %d" % (size, rc))
