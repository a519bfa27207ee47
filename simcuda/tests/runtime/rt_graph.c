/* Graph memory through the runtime: explicit allocation/free nodes, the
 * device's graph memory attributes, stream capture of stream-ordered
 * allocations, and host functions. */
#include "rt_test.h"

#include <stdint.h>

static uint64_t graph_attr(enum cudaGraphMemAttributeType attr)
{
    uint64_t value = 0;
    CHECK_RT(cudaDeviceGetGraphMemAttribute(0, attr, &value));
    return value;
}

static void check_mem_nodes(void)
{
    cudaGraph_t graph = NULL;
    CHECK_RT(cudaGraphCreate(&graph, 0));
    struct cudaMemAllocNodeParams params;
    memset(&params, 0, sizeof(params));
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = 8 * MIB;
    cudaGraphNode_t alloc = NULL, release = NULL;
    CHECK_RT(cudaGraphAddMemAllocNode(&alloc, graph, NULL, 0, &params));
    CHECK(alloc != NULL);
    CHECK(params.dptr != NULL);
    CHECK_RT(cudaGraphAddMemFreeNode(&release, graph, &alloc, 1, params.dptr));
    CHECK(release != NULL);

    enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CHECK_RT(cudaGraphNodeGetType(alloc, &type));
    CHECK_EQ(type, cudaGraphNodeTypeMemAlloc);
    CHECK_RT(cudaGraphNodeGetType(release, &type));
    CHECK_EQ(type, cudaGraphNodeTypeMemFree);
    struct cudaMemAllocNodeParams got;
    CHECK_RT(cudaGraphMemAllocNodeGetParams(alloc, &got));
    CHECK_EQ(got.bytesize, 8 * MIB);
    CHECK(got.dptr == params.dptr);
    CHECK_EQ(got.poolProps.location.type, cudaMemLocationTypeDevice);
    void *freed = NULL;
    CHECK_RT(cudaGraphMemFreeNodeGetParams(release, &freed));
    CHECK(freed == params.dptr);

    cudaGraphExec_t exec = NULL;
    cudaGraphInstantiateParams ip = {.flags = 0, .result_out = cudaGraphInstantiateError};
    CHECK_RT(cudaGraphInstantiateWithParams(&exec, graph, &ip));
    CHECK_EQ(ip.result_out, cudaGraphInstantiateSuccess);
    CHECK_RT(cudaGraphExecDestroy(exec));
    CHECK_RT(cudaGraphInstantiate(&exec, graph, 0));
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaGraphLaunch(exec, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_GE(graph_attr(cudaGraphMemAttrUsedMemHigh), 8 * MIB);
    CHECK_GE(graph_attr(cudaGraphMemAttrReservedMemHigh), 8 * MIB);
    CHECK_EQ(graph_attr(cudaGraphMemAttrUsedMemCurrent), 0);

    uint64_t zero = 0;
    CHECK_RT(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
    CHECK_EQ(graph_attr(cudaGraphMemAttrUsedMemHigh), 0);

    CHECK_RT(cudaGraphExecDestroy(exec));
    CHECK_RT(cudaGraphDestroy(graph));
    CHECK_RT(cudaDeviceGraphMemTrim(0));
    CHECK_EQ(graph_attr(cudaGraphMemAttrReservedMemCurrent), 0);
    CHECK_RT(cudaStreamDestroy(s));
}

static void host_fn(void *arg)
{
    ++*(int *)arg;
}

static cudaStream_t callback_stream;
static cudaError_t callback_status = cudaErrorUnknown;

static void stream_callback(cudaStream_t stream, cudaError_t status, void *arg)
{
    callback_stream = stream;
    callback_status = status;
    ++*(int *)arg;
}

/* Graph-allocated memory is usable by the graph's own nodes. */
static void check_node_kinds(void)
{
    cudaGraph_t graph = NULL;
    CHECK_RT(cudaGraphCreate(&graph, 0));
    struct cudaMemAllocNodeParams params;
    memset(&params, 0, sizeof(params));
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.bytesize = 1 * MIB;
    cudaGraphNode_t alloc = NULL, fill = NULL, join = NULL, host = NULL, release = NULL;
    CHECK_RT(cudaGraphAddMemAllocNode(&alloc, graph, NULL, 0, &params));
    struct cudaMemsetParams ms = {
        .dst = params.dptr, .value = 0x3C, .elementSize = 1, .width = 1 * MIB, .height = 1};
    CHECK_RT(cudaGraphAddMemsetNode(&fill, graph, &alloc, 1, &ms));
    CHECK_RT(cudaGraphAddEmptyNode(&join, graph, &fill, 1));
    int calls = 0;
    struct cudaHostNodeParams hp = {.fn = host_fn, .userData = &calls};
    CHECK_RT(cudaGraphAddHostNode(&host, graph, &join, 1, &hp));
    CHECK_RT(cudaGraphAddMemFreeNode(&release, graph, &host, 1, params.dptr));
    enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CHECK_RT(cudaGraphNodeGetType(fill, &type));
    CHECK_EQ(type, cudaGraphNodeTypeMemset);
    CHECK_RT(cudaGraphNodeGetType(host, &type));
    CHECK_EQ(type, cudaGraphNodeTypeHost);
    CHECK_RT(cudaGraphNodeGetType(join, &type));
    CHECK_EQ(type, cudaGraphNodeTypeEmpty);

    cudaGraphExec_t exec = NULL;
    CHECK_RT(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_RT(cudaGraphLaunch(exec, NULL));
    CHECK_RT(cudaGraphLaunch(exec, NULL));
    CHECK_RT(cudaDeviceSynchronize());
    CHECK_EQ(calls, 2);
    CHECK_RT(cudaGraphExecDestroy(exec));
    CHECK_RT(cudaGraphDestroy(graph));
    CHECK_RT(cudaDeviceGraphMemTrim(0));
}

static void check_capture(void)
{
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CHECK_RT(cudaStreamIsCapturing(s, &status));
    CHECK_EQ(status, cudaStreamCaptureStatusActive);
    unsigned long long id = 0;
    cudaGraph_t capturing = NULL;
    CHECK_RT(cudaStreamGetCaptureInfo(s, &status, &id, &capturing, NULL, NULL, NULL));
    CHECK_EQ(status, cudaStreamCaptureStatusActive);
    CHECK_NE(id, 0);
    CHECK(capturing != NULL);
    size_t base = rt_used_bytes();
    void *p = NULL;
    CHECK_RT(cudaMallocAsync(&p, 4 * MIB, s));
    CHECK(p != NULL);
    CHECK_RT(cudaFreeAsync(p, s));
    cudaGraph_t graph = NULL;
    CHECK_RT(cudaStreamEndCapture(s, &graph));
    CHECK(graph != NULL);
    CHECK_RT(cudaStreamIsCapturing(s, &status));
    CHECK_EQ(status, cudaStreamCaptureStatusNone);
    CHECK_EQ(rt_used_bytes(), base);

    cudaGraphExec_t exec = NULL;
    CHECK_RT(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    CHECK(graph == capturing);
    CHECK_RT(cudaGraphUpload(exec, s));
    CHECK_RT(cudaGraphLaunch(exec, s));
    int calls = 0;
    CHECK_RT(cudaLaunchHostFunc(s, host_fn, &calls));
    CHECK_RT(cudaStreamAddCallback(s, stream_callback, &calls, 0));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_EQ(calls, 2);
    CHECK(callback_stream == s);
    CHECK_EQ(callback_status, cudaSuccess);
    CHECK_GE(graph_attr(cudaGraphMemAttrUsedMemHigh), 4 * MIB);
    CHECK_RT(cudaGraphExecDestroy(exec));
    CHECK_RT(cudaGraphDestroy(graph));
    CHECK_RT(cudaDeviceGraphMemTrim(0));
    CHECK_RT(cudaStreamDestroy(s));
}

int main(void)
{
    check_mem_nodes();
    check_node_kinds();
    check_capture();
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
