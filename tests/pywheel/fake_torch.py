"""A stand-in for PyTorch's caching allocator (copied as torch.py next to
cache_suite.py): device memory taken through ctypes on the simulated device and
kept, like a freed tensor's block, until torch.cuda.empty_cache()."""
import ctypes

rt = ctypes.CDLL("libcudart.so.13")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]


class _Cuda:
    def __init__(self):
        self.cached = []
        self.initialized = False
        self.emptied = 0

    def is_initialized(self):
        return self.initialized

    def synchronize(self):
        pass

    def cache(self, size):
        """A tensor of SIZE bytes made and dropped: its block stays cached."""
        p = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(p), size) == 0
        self.initialized = True
        self.cached.append(p)

    def empty_cache(self):
        for p in self.cached:
            rt.cudaFree(p)
        self.cached = []
        self.emptied += 1


cuda = _Cuda()
