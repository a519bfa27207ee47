/* Graph memory: captured cuMemAllocAsync/cuMemFreeAsync become memory
 * nodes, physical memory is taken from the graph pool at launch and kept
 * (reserved) until cuDeviceGraphMemTrim; synchronizing a capturing stream
 * is refused and invalidates the capture. */
#include "simtest.h"

static cuuint64_t gattr(CUgraphMem_attribute a)
{
    cuuint64_t v = 0;
    CHECK_CU(cuDeviceGetGraphMemAttribute(0, a, &v));
    return v;
}

int main(void)
{
    sim_setup(0);
    size_t free0 = sim_free_mem();
    CUstream s;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUstreamCaptureStatus status;
    CHECK_CU(cuStreamIsCapturing(s, &status));
    CHECK_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUdeviceptr p;
    unsigned char host[16];
    memset(host, 0, sizeof host);
    CHECK_CU(cuMemAllocAsync(&p, 3 * MiB, s));
    CHECK_CU(cuMemsetD8Async(p, 5, 3 * MiB, s));
    CHECK_CU(cuMemcpyDtoHAsync(host, p + 100, sizeof host, s));
    CHECK_CU(cuMemFreeAsync(p, s));
    CUgraph g;
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuStreamIsCapturing(s, &status));
    CHECK_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);

    /* Capturing recorded the work instead of running it. */
    CHECK_EQ(host[0], 0);
    CHECK_EQ(sim_free_mem(), free0);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);

    CUgraphExec exec;
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    CHECK_CU(cuGraphLaunch(exec, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_EQ(host[0], 5);
    CHECK_EQ(host[15], 5);
    /* As on an H200, one 32 MiB chunk backs the 3 MiB allocation; it stays
     * reserved after the free node ran. */
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 32 * MiB);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
    CHECK_EQ(sim_free_mem(), free0 - 32 * MiB);
    CHECK_EQ(sim_stats(0).graph_reserved, 32 * MiB);

    /* Relaunching reuses the backing; a trim gives it back. */
    CHECK_CU(cuGraphLaunch(exec, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 32 * MiB);
    CHECK_CU(cuDeviceGraphMemTrim(0));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_EQ(sim_free_mem(), free0);
    cuuint64_t zero = 0;
    CHECK_CU(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));

    /* Explicit alloc nodes without free nodes: small ones share a chunk, a
     * large one gets its own; the memory outlives the launch until the
     * program frees it, and stays reserved until a trim. */
    CUgraph g2;
    CHECK_CU(cuGraphCreate(&g2, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap[3];
    size_t sizes[3] = {1 * MiB, 20 * MiB, 40 * MiB};
    CUgraphNode node;
    for (int i = 0; i < 3; i++) {
        memset(&ap[i], 0, sizeof ap[i]);
        ap[i].poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        ap[i].poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        ap[i].poolProps.location.id = 0;
        ap[i].bytesize = sizes[i];
        CHECK_CU(cuGraphAddMemAllocNode(&node, g2, NULL, 0, &ap[i]));
        CHECK_NE(ap[i].dptr, 0);
    }
    CUgraphExec exec2;
    CHECK_CU(cuGraphInstantiate(&exec2, g2, 0));
    CHECK_CU(cuGraphLaunch(exec2, s));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 72 * MiB);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 72 * MiB);
    CHECK_EQ(cuGraphLaunch(exec2, s), CUDA_ERROR_INVALID_VALUE); /* still allocated */
    CHECK_CU(cuGraphExecDestroy(exec2));
    CHECK_CU(cuGraphDestroy(g2));
    CHECK_CU(cuMemsetD8(ap[0].dptr, 1, 1 * MiB));
    for (int i = 0; i < 3; i++)
        CHECK_CU(cuMemFree(ap[i].dptr));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 72 * MiB);
    CHECK_CU(cuDeviceGraphMemTrim(0));
    CHECK_EQ(gattr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_EQ(sim_free_mem(), free0);

    /* Synchronizing a capturing stream fails and invalidates the capture. */
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_CU(cuStreamIsCapturing(s, &status));
    CHECK_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL);
    CHECK_EQ(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_RELAXED),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
