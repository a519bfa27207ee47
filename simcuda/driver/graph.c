/* Graphs and their nodes (memory alloc and free, memset, host, empty),
 * executables, and their launch. Nodes keep the order they were added in and
 * run in that order; an executable is a copy of its graph's nodes, work nodes
 * replayed as queued operations at each launch. */
#include "graph.h"

#include <stdlib.h>

struct gexec {
    struct sim_handle handle;
    struct sim_device *dev;
    struct gnode *head, *tail;
};

struct gnode *sim_gnode_add(struct sim_graph *g, enum gnode_kind kind)
{
    struct gnode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    sim_handle_init(&n->handle, SIM_H_GRAPH_NODE);
    n->kind = kind;
    if (g->tail)
        g->tail->next = n;
    else
        g->head = n;
    g->tail = n;
    return n;
}

struct sim_graph *sim_graph_new(struct sim_device *d)
{
    struct sim_graph *g = calloc(1, sizeof *g);
    if (g) {
        sim_handle_init(&g->handle, SIM_H_GRAPH);
        g->dev = d;
    }
    return g;
}

void sim_gnodes_free(struct gnode *n)
{
    while (n) {
        struct gnode *next = n->next;
        if (n->kind == GN_ALLOC) sim_galloc_put(n->ga);
        sim_handle_retire(&n->handle);
        free(n);
        n = next;
    }
}

SIM_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!phGraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    struct sim_graph *g = NULL;
    if (rc == CUDA_SUCCESS && !(g = sim_graph_new(d))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) *phGraph = (CUgraph)g;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphDestroy(CUgraph hGraph)
{
    SIM_ENTRY();
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    if (rc == CUDA_SUCCESS) {
        sim_gnodes_free(g->head);
        sim_handle_retire(&g->handle);
        free(g);
    }
    sim_unlock();
    return rc;
}

CUresult sim_graph_add_alloc(struct sim_graph *g, CUDA_MEM_ALLOC_NODE_PARAMS *p, struct gnode **out)
{
    struct sim_device *d;
    CUresult rc = sim_device_get(p->poolProps.location.id, &d);
    if (rc != CUDA_SUCCESS || p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct galloc *ga = sim_galloc_new(d, p->bytesize);
    struct gnode *n = ga ? sim_gnode_add(g, GN_ALLOC) : NULL;
    if (!n) {
        if (ga) {
            ga->refs = 1;
            sim_galloc_put(ga);
        }
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ga->refs = 1;
    n->ga = ga;
    p->dptr = ga->region->base;
    n->alloc_params = *p;
    *out = n;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    SIM_ENTRY();
    struct gnode *n = NULL;
    if (!phGraphNode || !nodeParams) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    if (rc == CUDA_SUCCESS) rc = sim_graph_add_alloc(g, nodeParams, &n);
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

CUresult sim_graph_add_free(struct sim_graph *g, CUdeviceptr dptr, struct gnode **out)
{
    struct sim_region *r = sim_region_find(dptr);
    if (!r || r->kind != SIM_R_GRAPH || r->base != dptr) return CUDA_ERROR_INVALID_VALUE;
    struct gnode *n = sim_gnode_add(g, GN_FREE);
    if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
    n->fptr = dptr;
    *out = n;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUdeviceptr dptr)
{
    SIM_ENTRY();
    struct gnode *n = NULL;
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    if (rc == CUDA_SUCCESS) rc = sim_graph_add_free(g, dptr, &n);
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

/* The node behind h if it has this kind: a node of another kind is an invalid value. */
static struct gnode *node_get(CUgraphNode h, enum gnode_kind kind, CUresult *rc)
{
    struct gnode *n = sim_handle_get(h, SIM_H_GRAPH_NODE, rc);
    if (n && n->kind != kind) {
        *rc = CUDA_ERROR_INVALID_VALUE;
        n = NULL;
    }
    return n;
}

SIM_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    SIM_ENTRY();
    CUresult rc;
    if (!params_out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct gnode *n = node_get(hNode, GN_ALLOC, &rc);
    if (n) *params_out = n->alloc_params;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    SIM_ENTRY();
    CUresult rc;
    if (!dptr_out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct gnode *n = node_get(hNode, GN_FREE, &rc);
    if (n) *dptr_out = n->fptr;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    SIM_ENTRY();
    if (!phGraphNode || !p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return CUDA_ERROR_INVALID_VALUE;
    size_t height = p->height ? p->height : 1;
    size_t span = (height - 1) * p->pitch + p->width * p->elementSize;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    if (rc == CUDA_SUCCESS) rc = sim_check_device_range(p->dst, span);
    struct gnode *n = NULL;
    if (rc == CUDA_SUCCESS && !(n = sim_gnode_add(g, GN_OP))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        n->op.kind = SIM_OP_MEMSET;
        n->op.u.set.dst = p->dst;
        n->op.u.set.pitch = height > 1 ? p->pitch : p->width * p->elementSize;
        n->op.u.set.width = p->width;
        n->op.u.set.height = height;
        n->op.u.set.elem = p->elementSize;
        n->op.u.set.value = p->value;
        n->op.wr_lo = p->dst;
        n->op.wr_hi = p->dst + span;
        *phGraphNode = (CUgraphNode)n;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                    const CUgraphNode *dependencies, size_t numDependencies,
                                    const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    SIM_ENTRY();
    if (!phGraphNode || !nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    struct gnode *n = NULL;
    if (rc == CUDA_SUCCESS && !(n = sim_gnode_add(g, GN_OP))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        n->op.kind = SIM_OP_HOSTFN;
        n->op.u.host.fn = nodeParams->fn;
        n->op.u.host.arg = nodeParams->userData;
        *phGraphNode = (CUgraphNode)n;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies)
{
    SIM_ENTRY();
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    struct gnode *n = NULL;
    if (rc == CUDA_SUCCESS && !(n = sim_gnode_add(g, GN_EMPTY))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    SIM_ENTRY();
    struct gnode *n = (struct gnode *)hNode;
    if (!type || !sim_handle_valid(n, SIM_H_GRAPH_NODE)) return CUDA_ERROR_INVALID_VALUE;
    switch (n->kind) {
    case GN_ALLOC:
        *type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
        break;
    case GN_FREE:
        *type = CU_GRAPH_NODE_TYPE_MEM_FREE;
        break;
    case GN_EMPTY:
        *type = CU_GRAPH_NODE_TYPE_EMPTY;
        break;
    case GN_OP:
        *type = n->op.kind == SIM_OP_MEMSET   ? CU_GRAPH_NODE_TYPE_MEMSET
                : n->op.kind == SIM_OP_COPY   ? CU_GRAPH_NODE_TYPE_MEMCPY
                : n->op.kind == SIM_OP_HOSTFN ? CU_GRAPH_NODE_TYPE_HOST
                                              : CU_GRAPH_NODE_TYPE_EMPTY;
        break;
    }
    return CUDA_SUCCESS;
}

/* ---- executables ---- */

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc;
    struct sim_graph *g = sim_handle_get(hGraph, SIM_H_GRAPH, &rc);
    struct gexec *e = NULL;
    if (rc == CUDA_SUCCESS && !(e = calloc(1, sizeof *e))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    for (struct gnode *n = rc == CUDA_SUCCESS ? g->head : NULL; n; n = n->next) {
        struct gnode *c = malloc(sizeof *c);
        if (!c) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        *c = *n;
        c->next = NULL;
        if (c->kind == GN_ALLOC) c->ga->refs++;
        if (e->tail)
            e->tail->next = c;
        else
            e->head = c;
        e->tail = c;
    }
    if (rc == CUDA_SUCCESS) {
        sim_handle_init(&e->handle, SIM_H_GRAPH_EXEC);
        e->dev = g->dev;
        *out = (CUgraphExec)e;
    } else if (e) {
        sim_gnodes_free(e->head);
        free(e);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    SIM_ENTRY();
    return instantiate(phGraphExec, hGraph);
}

SIM_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    SIM_ENTRY();
    return instantiate(phGraphExec, hGraph);
}

SIM_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    SIM_ENTRY();
    return instantiate(phGraphExec, hGraph);
}

static CUresult instantiate_params(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUresult rc = instantiate(e, g);
    if (p) {
        p->hErrNode_out = NULL;
        p->result_out =
            rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    }
    return rc;
}

SIM_API CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    SIM_ENTRY();
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

SIM_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    SIM_ENTRY();
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

SIM_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    SIM_ENTRY();
    sim_lock();
    CUresult rc;
    struct gexec *e = sim_handle_get(hGraphExec, SIM_H_GRAPH_EXEC, &rc);
    if (rc == CUDA_SUCCESS) {
        sim_gnodes_free(e->head);
        sim_handle_retire(&e->handle);
        free(e);
    }
    sim_unlock();
    return rc;
}

static CUresult launch_node(struct gnode *n, struct sim_stream *s)
{
    struct sim_region *r;
    struct sim_op *op;
    switch (n->kind) {
    case GN_ALLOC:
        return sim_galloc_launch(n->ga);
    case GN_FREE:
        r = sim_region_find(n->fptr);
        if (r && r->kind == SIM_R_GRAPH && ((struct galloc *)r->owner)->live)
            sim_galloc_free(r->owner);
        return CUDA_SUCCESS;
    case GN_OP:
        op = malloc(sizeof *op);
        if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
        *op = n->op;
        op->next = NULL;
        sim_enqueue(s, op);
        return CUDA_SUCCESS;
    case GN_EMPTY:
        return CUDA_SUCCESS;
    }
    return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec h, CUstream hs, enum sim_default_stream ds)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc;
    struct gexec *e = sim_handle_get(h, SIM_H_GRAPH_EXEC, &rc);
    if (rc == CUDA_SUCCESS) rc = sim_stream_resolve(hs, ds, &s);
    if (rc == CUDA_SUCCESS && sim_capturing(s)) rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    /* Nothing is launched when an allocation of the graph is still live. */
    for (struct gnode *n = rc == CUDA_SUCCESS ? e->head : NULL; n; n = n->next)
        if (n->kind == GN_ALLOC && n->ga->live) rc = CUDA_ERROR_INVALID_VALUE;
    for (struct gnode *n = rc == CUDA_SUCCESS ? e->head : NULL; n && rc == CUDA_SUCCESS;
         n = n->next)
        rc = launch_node(n, s);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    SIM_ENTRY();
    return graph_launch(hGraphExec, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    SIM_ENTRY();
    return graph_launch(hGraphExec, hStream, SIM_DS_PER_THREAD);
}

static CUresult graph_upload(CUgraphExec h, CUstream hs, enum sim_default_stream ds)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc;
    if (sim_handle_get(h, SIM_H_GRAPH_EXEC, &rc)) rc = sim_stream_resolve(hs, ds, &s);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    SIM_ENTRY();
    return graph_upload(hGraphExec, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    SIM_ENTRY();
    return graph_upload(hGraphExec, hStream, SIM_DS_PER_THREAD);
}
