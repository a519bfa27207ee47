/* CUDA graphs: creation, memory nodes, instantiation, launch, and the
 * device's graph memory accounting. */
#include "runtime.h"
#include "per_thread.h"

#include <string.h>

RT_API cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    RT_ENTER();
    if (pGraph == NULL) return rt_fail(cudaErrorInvalidValue);
    CUgraph graph = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuGraphCreate, &graph, flags));
    *pGraph = e == cudaSuccess ? (cudaGraph_t)graph : NULL;
    return e;
}

RT_API cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuGraphDestroy, (CUgraph)graph));
}

/* cudaMemAllocNodeParams mirrors CUDA_MEM_ALLOC_NODE_PARAMS member by member. */
static void rt_alloc_node_params(const struct cudaMemAllocNodeParams *in,
                                 CUDA_MEM_ALLOC_NODE_PARAMS *out)
{
    memset(out, 0, sizeof(*out));
    const struct cudaMemPoolProps *pp = &in->poolProps;
    out->poolProps.allocType = (CUmemAllocationType)pp->allocType;
    out->poolProps.handleTypes = (CUmemAllocationHandleType)pp->handleTypes;
    out->poolProps.location.type = (CUmemLocationType)pp->location.type;
    out->poolProps.location.id = pp->location.id;
    out->poolProps.win32SecurityAttributes = pp->win32SecurityAttributes;
    out->poolProps.maxSize = pp->maxSize;
    out->poolProps.usage = pp->usage;
    /* cudaMemAccessDesc and CUmemAccessDesc share their layout. */
    out->accessDescs = (const CUmemAccessDesc *)in->accessDescs;
    out->accessDescCount = in->accessDescCount;
    out->bytesize = in->bytesize;
}

RT_API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t *pDependencies,
                                            size_t numDependencies,
                                            struct cudaMemAllocNodeParams *nodeParams)
{
    RT_ENTER();
    if (pGraphNode == NULL || nodeParams == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    rt_alloc_node_params(nodeParams, &params);
    CUgraphNode node = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuGraphAddMemAllocNode, &node, (CUgraph)graph,
                                  (const CUgraphNode *)pDependencies, numDependencies, &params));
    if (e == cudaSuccess) {
        *pGraphNode = (cudaGraphNode_t)node;
        nodeParams->dptr = (void *)params.dptr;
    }
    return e;
}

RT_API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t *pDependencies,
                                           size_t numDependencies, void *dptr)
{
    RT_ENTER();
    if (pGraphNode == NULL) return rt_fail(cudaErrorInvalidValue);
    CUgraphNode node = NULL;
    cudaError_t e =
        rt_cu(RT_CALL(cuGraphAddMemFreeNode, &node, (CUgraph)graph,
                      (const CUgraphNode *)pDependencies, numDependencies, (CUdeviceptr)dptr));
    if (e == cudaSuccess) *pGraphNode = (cudaGraphNode_t)node;
    return e;
}

/* cudaGraphInstantiateFlag* values equal CUDA_GRAPH_INSTANTIATE_FLAG_*. */
RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                 unsigned long long flags)
{
    RT_ENTER();
    if (pGraphExec == NULL) return rt_fail(cudaErrorInvalidValue);
    CUgraphExec exec = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuGraphInstantiateWithFlags, &exec, (CUgraph)graph, flags));
    *pGraphExec = e == cudaSuccess ? (cudaGraphExec_t)exec : NULL;
    return e;
}

RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                        unsigned long long flags)
{
    return cudaGraphInstantiateWithFlags(pGraphExec, graph, flags);
}

static cudaError_t rt_graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuGraphLaunch, (CUgraphExec)exec, rt_stream(stream, pt)));
}

RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return rt_graph_launch(graphExec, stream, false);
}

RT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return rt_graph_launch(graphExec, stream, true);
}

RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuGraphExecDestroy, (CUgraphExec)graphExec));
}

/* cudaGraphMemAttributeType values equal CUgraphMem_attribute values. */
RT_API cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                  void *value)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceGetGraphMemAttribute, dev, (CUgraphMem_attribute)attr, value));
}

RT_API cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                  void *value)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceSetGraphMemAttribute, dev, (CUgraphMem_attribute)attr, value));
}

RT_API cudaError_t cudaDeviceGraphMemTrim(int device)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceGraphMemTrim, dev));
}

static cudaError_t rt_graph_upload(cudaGraphExec_t exec, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuGraphUpload, (CUgraphExec)exec, rt_stream(stream, pt)));
}

RT_API cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return rt_graph_upload(graphExec, stream, false);
}

RT_API cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return rt_graph_upload(graphExec, stream, true);
}

/* cudaGraphInstantiateParams mirrors CUDA_GRAPH_INSTANTIATE_PARAMS. */
static cudaError_t rt_instantiate_params(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                         cudaGraphInstantiateParams *params, bool pt)
{
    RT_ENTER();
    if (pGraphExec == NULL || params == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_GRAPH_INSTANTIATE_PARAMS cu_params = {
        .flags = params->flags,
        .hUploadStream = rt_stream(params->uploadStream, pt),
    };
    CUgraphExec exec = NULL;
    cudaError_t e =
        rt_cu(RT_CALL_PT(pt, cuGraphInstantiateWithParams, &exec, (CUgraph)graph, &cu_params));
    *pGraphExec = e == cudaSuccess ? (cudaGraphExec_t)exec : NULL;
    params->errNode_out = (cudaGraphNode_t)cu_params.hErrNode_out;
    params->result_out = (cudaGraphInstantiateResult)cu_params.result_out;
    return e;
}

RT_API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                  cudaGraphInstantiateParams *instantiateParams)
{
    return rt_instantiate_params(pGraphExec, graph, instantiateParams, false);
}

RT_API cudaError_t cudaGraphInstantiateWithParams_ptsz(
    cudaGraphExec_t *pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *instantiateParams)
{
    return rt_instantiate_params(pGraphExec, graph, instantiateParams, true);
}

RT_API cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                         const cudaGraphNode_t *pDependencies,
                                         size_t numDependencies)
{
    RT_ENTER();
    if (pGraphNode == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL(cuGraphAddEmptyNode, (CUgraphNode *)pGraphNode, (CUgraph)graph,
                         (const CUgraphNode *)pDependencies, numDependencies));
}

RT_API cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t *pDependencies,
                                        size_t numDependencies,
                                        const struct cudaHostNodeParams *pNodeParams)
{
    RT_ENTER();
    if (pGraphNode == NULL || pNodeParams == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_HOST_NODE_PARAMS params = {.fn = pNodeParams->fn, .userData = pNodeParams->userData};
    return rt_cu(RT_CALL(cuGraphAddHostNode, (CUgraphNode *)pGraphNode, (CUgraph)graph,
                         (const CUgraphNode *)pDependencies, numDependencies, &params));
}

/* A memset node runs in the context current at creation, as in NVIDIA's runtime. */
RT_API cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                          const cudaGraphNode_t *pDependencies,
                                          size_t numDependencies,
                                          const struct cudaMemsetParams *pMemsetParams)
{
    RT_ENTER();
    if (pGraphNode == NULL || pMemsetParams == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_MEMSET_NODE_PARAMS params = {
        .dst = (CUdeviceptr)pMemsetParams->dst,
        .pitch = pMemsetParams->pitch,
        .value = pMemsetParams->value,
        .elementSize = pMemsetParams->elementSize,
        .width = pMemsetParams->width,
        .height = pMemsetParams->height,
    };
    CUcontext ctx = NULL;
    CUresult r = rt_drv.cuCtxGetCurrent(&ctx);
    if (r == CUDA_SUCCESS)
        r = RT_CALL(cuGraphAddMemsetNode, (CUgraphNode *)pGraphNode, (CUgraph)graph,
                    (const CUgraphNode *)pDependencies, numDependencies, &params, ctx);
    return rt_cu(r);
}

/* cudaGraphNodeType values equal CUgraphNodeType values. */
RT_API cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
    RT_ENTER();
    if (pType == NULL) return rt_fail(cudaErrorInvalidValue);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    cudaError_t e = rt_cu(RT_CALL(cuGraphNodeGetType, (CUgraphNode)node, &type));
    if (e == cudaSuccess) *pType = (enum cudaGraphNodeType)type;
    return e;
}

RT_API cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                                  struct cudaMemAllocNodeParams *params_out)
{
    RT_ENTER();
    if (params_out == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    memset(&params, 0, sizeof(params));
    cudaError_t e = rt_cu(RT_CALL(cuGraphMemAllocNodeGetParams, (CUgraphNode)node, &params));
    if (e != cudaSuccess) return e;
    memset(params_out, 0, sizeof(*params_out));
    const CUmemPoolProps *pp = &params.poolProps;
    params_out->poolProps.allocType = (enum cudaMemAllocationType)pp->allocType;
    params_out->poolProps.handleTypes = (enum cudaMemAllocationHandleType)pp->handleTypes;
    params_out->poolProps.location.type = (enum cudaMemLocationType)pp->location.type;
    params_out->poolProps.location.id = pp->location.id;
    params_out->poolProps.win32SecurityAttributes = pp->win32SecurityAttributes;
    params_out->poolProps.maxSize = pp->maxSize;
    params_out->poolProps.usage = pp->usage;
    params_out->accessDescs = (const struct cudaMemAccessDesc *)params.accessDescs;
    params_out->accessDescCount = params.accessDescCount;
    params_out->bytesize = params.bytesize;
    params_out->dptr = (void *)params.dptr;
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
    RT_ENTER();
    if (dptr_out == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdeviceptr dptr = 0;
    cudaError_t e = rt_cu(RT_CALL(cuGraphMemFreeNodeGetParams, (CUgraphNode)node, &dptr));
    if (e == cudaSuccess) *(void **)dptr_out = (void *)dptr;
    return e;
}
