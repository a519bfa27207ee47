// A kernel on one GPU reading and writing the other GPU's cudaMalloc memory
// directly, after cudaDeviceEnablePeerAccess -- what tensor-parallel code and
// framework copy kernels do. Real GPUs only (the simulated device runs no
// kernels). Natively the driver maps every cudaMalloc block for enabled peers;
// memory that cudafrag's arena serves is VMM memory, which peer access does not
// cover (only cuMemSetAccess does), so this program tells whether the arena keeps
// such programs working.
//
// Each direction: the owner device fills a block, the peer device's kernel reads
// it and writes the result into a second block on the owner device; the owner
// copies it back and it is checked. Prints "peer kernel ok" and "checksum X", or
// "peer kernel failed: ..." and exits 1.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1u << 20) // ints per block: 4 MiB

#define RT_OK(call) rt_check((call), #call, __LINE__)

static void rt_check(cudaError_t e, const char *what, int line)
{
    if (e == cudaSuccess) return;
    printf("peer kernel failed: %s: %s\n", what, cudaGetErrorName(e));
    fprintf(stderr, "peer_kernel:%d: %s failed: %s\n", line, what, cudaGetErrorString(e));
    exit(1);
}

__global__ void scale_peer(const unsigned *src, unsigned *dst, unsigned n, unsigned k)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * k + 1u;
}

static uint64_t one_direction(int owner, int peer, unsigned *host)
{
    unsigned *src = NULL, *dst = NULL;
    RT_OK(cudaSetDevice(owner));
    RT_OK(cudaMalloc(&src, N * sizeof *src));
    RT_OK(cudaMalloc(&dst, N * sizeof *dst));
    for (unsigned i = 0; i < N; i++)
        host[i] = i * 2654435761u + (unsigned)owner;
    RT_OK(cudaMemcpy(src, host, N * sizeof *src, cudaMemcpyHostToDevice));
    RT_OK(cudaSetDevice(peer));
    unsigned k = 3u + (unsigned)peer;
    scale_peer<<<(N + 255) / 256, 256>>>(src, dst, N, k);
    RT_OK(cudaGetLastError());
    RT_OK(cudaDeviceSynchronize());
    RT_OK(cudaSetDevice(owner));
    RT_OK(cudaMemcpy(host, dst, N * sizeof *dst, cudaMemcpyDeviceToHost));
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < N; i++) {
        unsigned want = (i * 2654435761u + (unsigned)owner) * k + 1u;
        if (host[i] != want) {
            printf("peer kernel failed: device %d wrote %u at %u of device %d, want %u\n", peer,
                   host[i], i, owner, want);
            exit(1);
        }
        h = (h ^ host[i]) * 0x100000001b3ull;
    }
    RT_OK(cudaFree(src));
    RT_OK(cudaFree(dst));
    return h;
}

int main(void)
{
    int count = 0, can01 = 0, can10 = 0;
    RT_OK(cudaGetDeviceCount(&count));
    if (count < 2) {
        printf("peer kernel failed: %d device(s)\n", count);
        return 1;
    }
    RT_OK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    RT_OK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    if (!can01 || !can10) {
        printf("peer kernel failed: no peer access between devices 0 and 1\n");
        return 1;
    }
    RT_OK(cudaSetDevice(0));
    RT_OK(cudaDeviceEnablePeerAccess(1, 0));
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaDeviceEnablePeerAccess(0, 0));
    unsigned *host = (unsigned *)malloc(N * sizeof *host);
    if (host == NULL) return 1;
    uint64_t h = one_direction(0, 1, host) ^ (one_direction(1, 0, host) << 1);
    free(host);
    printf("peer kernel ok\nchecksum %016llx\n", (unsigned long long)h);
    return 0;
}
