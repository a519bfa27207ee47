# The allocator API of cupy.cuda, on the CUDA runtime through ctypes: raw
# allocations (cudaMalloc per array) or a pool that carves arrays out of one
# 64 MiB segment and keeps freed memory cached.
import ctypes

_rt = ctypes.CDLL("libcudart.so.13")
# Set CUDA up at import, before the first allocation, as a framework does.
_count = ctypes.c_int()
if _rt.cudaGetDeviceCount(ctypes.byref(_count)) != 0:
    raise RuntimeError("no CUDA device")
_SEGMENT = 64 << 20


def _cuda_malloc(size):
    ptr = ctypes.c_void_p()
    rc = _rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size))
    if rc != 0:
        raise MemoryError("cudaMalloc failed: %d" % rc)
    return ptr.value


class Memory:
    def __init__(self, size):
        self.ptr, self.size = _cuda_malloc(size), size

    def __del__(self):
        _rt.cudaFree(ctypes.c_void_p(self.ptr))


class _Piece:
    def __init__(self, ptr, size):
        self.ptr, self.size = ptr, size


class MemoryPool:
    def __init__(self):
        self._segment, self._used = None, 0

    def malloc(self, size):
        if self._segment is None:
            self._segment = Memory(_SEGMENT)
        size = (size + 511) & ~511
        if self._used + size > _SEGMENT:
            raise MemoryError("the fake pool is full")
        piece = _Piece(self._segment.ptr + self._used, size)
        self._used += size
        return piece


class PinnedMemoryPool:
    def malloc(self, size):
        return bytearray(size)


def _malloc(size):
    return Memory(size)


def _malloc_pinned(size):
    return bytearray(size)


_current_allocator = _malloc
_current_pinned_allocator = _malloc_pinned


def set_allocator(allocator=None):
    """None: the raw allocator, the memory pool off (as CuPy documents it)."""
    global _current_allocator
    _current_allocator = _malloc if allocator is None else allocator


def set_pinned_memory_allocator(allocator=None):
    global _current_pinned_allocator
    _current_pinned_allocator = _malloc_pinned if allocator is None else allocator


def alloc(size):
    return _current_allocator(size)


def allocator_name():
    return "raw" if _current_allocator is _malloc else "pool"
