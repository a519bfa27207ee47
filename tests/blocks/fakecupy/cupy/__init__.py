# A stand-in for CuPy in the tests of `cudafrag run --blocks`: like CuPy, importing
# it installs a memory pool as the current allocator (cupy/__init__.py does
# cuda.set_allocator(MemoryPool().malloc)); set_allocator(None) turns it off.
from cupy import cuda

_default_memory_pool = cuda.MemoryPool()
_default_pinned_memory_pool = cuda.PinnedMemoryPool()
cuda.set_allocator(_default_memory_pool.malloc)
cuda.set_pinned_memory_allocator(_default_pinned_memory_pool.malloc)


def get_default_memory_pool():
    return _default_memory_pool
