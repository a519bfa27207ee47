# A CuPy program: 100 arrays of 1 KiB to 512 KiB, half of them dropped as it goes.
import cupy

arrays = []
for i in range(100):
    arrays.append(cupy.cuda.alloc(1024 << (i % 10)))
    if i % 2 == 1:
        arrays[i - 1] = None
print("allocator", cupy.cuda.allocator_name(), flush=True)
del arrays
