/* A graph with a memory node, instantiated and launched, under the preload: the
 * report must carry the graph pool's high water, sampled at the launch (at exit
 * the runtime may already have torn the context down). Checked by graph_pool.sh. */
#include "check.h"

#include <cuda_runtime_api.h>

int main(void)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaGraphNode_t alloc_node, free_node;
    struct cudaMemAllocNodeParams params = {0};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = 24u << 20;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaGraphCreate(&graph, 0));
    CHECK_CU(cudaGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &params));
    CHECK_CU(cudaGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, params.dptr));
    CHECK_CU(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CU(cudaGraphLaunch(exec, 0));
    CHECK_CU(cudaStreamSynchronize(0));
    CHECK_CU(cudaGraphExecDestroy(exec));
    CHECK_CU(cudaGraphDestroy(graph));
    /* Tear the context down before exit, as runtimes do at teardown. */
    CHECK_CU(cudaDeviceReset());
    return 0;
}
