// Allocation paths of a plain CUDA program: cudaMalloc/cudaFree of varying sizes and
// stream-ordered cudaMallocAsync/cudaFreeAsync, with a kernel writing every
// buffer. Built twice -- against the static runtime (nvcc's default) and with
// -cudart shared -- because a statically linked runtime exports no cuda* symbols
// to interpose and reaches the driver only through cuGetProcAddress.
// Prints the calls it made, so a profiler's counts can be checked against them,
// and a checksum of the data read back.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "alloc_static: %s failed: %s\n", #call, cudaGetErrorName(e_));    \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

__global__ void fill(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

struct counts {
    int malloc_calls = 0, free_calls = 0, async_calls = 0, free_async_calls = 0, kernels = 0;
};

// Fill the buffer on the device and fold its first words into the checksum.
static uint64_t touch(uint32_t *dev, size_t bytes, uint32_t seed, cudaStream_t s, uint64_t h,
                      counts &c)
{
    size_t n = bytes / sizeof(uint32_t);
    fill<<<64, 256, 0, s>>>(dev, n, seed);
    CUDA_OK(cudaGetLastError());
    c.kernels++;
    uint32_t head[256];
    size_t words = n < 256 ? n : 256;
    CUDA_OK(cudaMemcpyAsync(head, dev, words * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    return fnv1a(h, head, words * sizeof(uint32_t));
}

int main()
{
    counts c;
    uint64_t h = 0xcbf29ce484222325ULL;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // 100 synchronous allocations from 256 B to ~64 MiB, freed in batches of ten.
    std::vector<uint32_t *> live;
    for (int i = 0; i < 100; i++) {
        size_t bytes = (size_t)256 << (i % 19);
        bytes += (size_t)(i * 4096);
        uint32_t *p;
        CUDA_OK(cudaMalloc(&p, bytes));
        c.malloc_calls++;
        h = touch(p, bytes, (uint32_t)i, s, h, c);
        live.push_back(p);
        if (live.size() == 10) {
            for (uint32_t *q : live) {
                CUDA_OK(cudaFree(q));
                c.free_calls++;
            }
            live.clear();
        }
    }

    // 50 stream-ordered allocations on the default pool.
    for (int i = 0; i < 50; i++) {
        size_t bytes = ((size_t)1 << (12 + i % 13)) + (size_t)i * 512;
        uint32_t *p;
        CUDA_OK(cudaMallocAsync(&p, bytes, s));
        c.async_calls++;
        h = touch(p, bytes, 1000u + (uint32_t)i, s, h, c);
        CUDA_OK(cudaFreeAsync(p, s));
        c.free_async_calls++;
    }
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaStreamDestroy(s));

    std::printf("checksum %016llx\n", (unsigned long long)h);
    std::printf("alloc_static: cudaMalloc=%d cudaFree=%d cudaMallocAsync=%d cudaFreeAsync=%d "
                "kernels=%d\n",
                c.malloc_calls, c.free_calls, c.async_calls, c.free_async_calls, c.kernels);
    return 0;
}
