// CUDA graph memory: allocations that belong to a graph rather than to the
// program. One graph is built by hand with cudaGraphAddMemAllocNode/FreeNode
// around a kernel node; a second is captured from a stream doing
// cudaMallocAsync/kernel/cudaFreeAsync. Both are launched K times. Graph
// memory is reserved by the driver's graph pool, so a profiler that only watches
// cudaMalloc misses it; the device's graph memory high-water marks are printed.
//
// usage: graph_mem [K]   (default 20)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "graph_mem: %s failed: %s\n", #call, cudaGetErrorName(e_));       \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static const size_t kAllocBytes = 64u << 20;
static const size_t kCaptureBytes = 24u << 20;

__global__ void fill(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)i ^ seed;
}

// Sums the buffer's first words into *out so the graph's memory is really used.
__global__ void sum_head(const uint32_t *p, unsigned long long *out)
{
    atomicAdd(out, (unsigned long long)p[threadIdx.x]);
}

// alloc node -> fill kernel -> sum kernel -> free node.
static cudaGraphExec_t build_explicit_graph(unsigned long long *sum_dev)
{
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    int dev;
    CUDA_OK(cudaGetDevice(&dev));

    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = dev;
    ap.bytesize = kAllocBytes;
    cudaGraphNode_t alloc_node, fill_node, sum_node, free_node;
    CUDA_OK(cudaGraphAddMemAllocNode(&alloc_node, g, nullptr, 0, &ap));
    uint32_t *buf = static_cast<uint32_t *>(ap.dptr);

    size_t n = kAllocBytes / sizeof(uint32_t);
    uint32_t seed = 0x5eed;
    void *fill_args[] = {&buf, &n, &seed};
    cudaKernelNodeParams kp = {};
    kp.func = reinterpret_cast<void *>(fill);
    kp.gridDim = dim3(128);
    kp.blockDim = dim3(256);
    kp.kernelParams = fill_args;
    CUDA_OK(cudaGraphAddKernelNode(&fill_node, g, &alloc_node, 1, &kp));

    void *sum_args[] = {&buf, &sum_dev};
    kp.func = reinterpret_cast<void *>(sum_head);
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(128);
    kp.kernelParams = sum_args;
    CUDA_OK(cudaGraphAddKernelNode(&sum_node, g, &fill_node, 1, &kp));
    CUDA_OK(cudaGraphAddMemFreeNode(&free_node, g, &sum_node, 1, buf));

    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_OK(cudaGraphDestroy(g));
    return exec;
}

// The same shape, captured: cudaMallocAsync inside a capture becomes an alloc node.
static cudaGraphExec_t capture_graph(cudaStream_t s, unsigned long long *sum_dev)
{
    cudaGraph_t g;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *buf;
    CUDA_OK(cudaMallocAsync(&buf, kCaptureBytes, s));
    fill<<<128, 256, 0, s>>>(buf, kCaptureBytes / sizeof(uint32_t), 0xc0ffee);
    sum_head<<<1, 128, 0, s>>>(buf, sum_dev);
    CUDA_OK(cudaFreeAsync(buf, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_OK(cudaGraphDestroy(g));
    return exec;
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? std::atoi(argv[1]) : 20;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned long long *sums;
    CUDA_OK(cudaMalloc(&sums, 2 * sizeof(unsigned long long)));
    CUDA_OK(cudaMemset(sums, 0, 2 * sizeof(unsigned long long)));

    cudaGraphExec_t explicit_exec = build_explicit_graph(&sums[0]);
    cudaGraphExec_t captured_exec = capture_graph(s, &sums[1]);
    for (int i = 0; i < k; i++) {
        CUDA_OK(cudaGraphLaunch(explicit_exec, s));
        CUDA_OK(cudaGraphLaunch(captured_exec, s));
    }
    CUDA_OK(cudaStreamSynchronize(s));

    unsigned long long host_sums[2];
    CUDA_OK(cudaMemcpy(host_sums, sums, sizeof host_sums, cudaMemcpyDeviceToHost));
    int dev;
    CUDA_OK(cudaGetDevice(&dev));
    uint64_t used_high = 0, reserved_high = 0, reserved_now = 0;
    CUDA_OK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrUsedMemHigh, &used_high));
    CUDA_OK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemHigh, &reserved_high));
    CUDA_OK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemCurrent, &reserved_now));

    CUDA_OK(cudaGraphExecDestroy(explicit_exec));
    CUDA_OK(cudaGraphExecDestroy(captured_exec));
    CUDA_OK(cudaFree(sums));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaDeviceGraphMemTrim(dev));

    std::printf("checksum %016llx%016llx\n", host_sums[0], host_sums[1]);
    std::printf("graph_mem: launches=%d x 2 graphs, graph alloc nodes=2, graph used high=%llu, "
                "reserved high=%llu, reserved at end=%llu\n",
                k, (unsigned long long)used_high, (unsigned long long)reserved_high,
                (unsigned long long)reserved_now);
    return 0;
}
