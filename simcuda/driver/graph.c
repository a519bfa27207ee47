/* Graphs and their nodes (memory alloc and free, memset, host, empty),
 * executables, and their launch. Nodes keep the order they were added in and
 * run in that order; an executable is a copy of its graph's nodes, work nodes
 * replayed as queued operations at each launch. */
#include "graph.h"

#include <stdlib.h>

#define SIM_GRAPH_MAGIC 0x47524150U
#define SIM_EXEC_MAGIC  0x47455845U
#define SIM_NODE_MAGIC  0x474e4f44U

struct gexec {
    uint32_t magic;
    struct sim_device *dev;
    struct gnode *head, *tail;
};

struct gnode *sim_gnode_add(struct sim_graph *g, enum gnode_kind kind)
{
    struct gnode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->magic = SIM_NODE_MAGIC;
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
        g->magic = SIM_GRAPH_MAGIC;
        g->dev = d;
    }
    return g;
}

void sim_gnodes_free(struct gnode *n)
{
    while (n) {
        struct gnode *next = n->next;
        if (n->kind == GN_ALLOC) sim_galloc_put(n->ga);
        n->magic = 0;
        free(n);
        n = next;
    }
}

static CUresult graph_get(CUgraph h, struct sim_graph **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_graph *g = (struct sim_graph *)h;
    if (!g || g->magic != SIM_GRAPH_MAGIC) return CUDA_ERROR_INVALID_VALUE;
    *out = g;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
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
    struct sim_graph *g;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
    if (rc == CUDA_SUCCESS) {
        sim_gnodes_free(g->head);
        g->magic = 0;
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
    struct sim_graph *g;
    struct gnode *n = NULL;
    if (!phGraphNode || !nodeParams) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
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
    struct sim_graph *g;
    struct gnode *n = NULL;
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
    if (rc == CUDA_SUCCESS) rc = sim_graph_add_free(g, dptr, &n);
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

static CUresult node_get(CUgraphNode h, enum gnode_kind kind, struct gnode **out)
{
    struct gnode *n = (struct gnode *)h;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!n || n->magic != SIM_NODE_MAGIC || n->kind != kind) return CUDA_ERROR_INVALID_VALUE;
    *out = n;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    struct gnode *n;
    if (!params_out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = node_get(hNode, GN_ALLOC, &n);
    if (rc == CUDA_SUCCESS) *params_out = n->alloc_params;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    struct gnode *n;
    if (!dptr_out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = node_get(hNode, GN_FREE, &n);
    if (rc == CUDA_SUCCESS) *dptr_out = n->fptr;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    struct sim_graph *g;
    if (!phGraphNode || !p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return CUDA_ERROR_INVALID_VALUE;
    size_t height = p->height ? p->height : 1;
    size_t span = (height - 1) * p->pitch + p->width * p->elementSize;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
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
    struct sim_graph *g;
    if (!phGraphNode || !nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
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
    struct sim_graph *g;
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
    struct gnode *n = NULL;
    if (rc == CUDA_SUCCESS && !(n = sim_gnode_add(g, GN_EMPTY))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    struct gnode *n = (struct gnode *)hNode;
    if (!type || !n || n->magic != SIM_NODE_MAGIC) return CUDA_ERROR_INVALID_VALUE;
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
    struct sim_graph *g;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = graph_get(hGraph, &g);
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
        e->magic = SIM_EXEC_MAGIC;
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
    return instantiate(phGraphExec, hGraph);
}

SIM_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return instantiate(phGraphExec, hGraph);
}

SIM_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
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
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

SIM_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

static CUresult exec_get(CUgraphExec h, struct gexec **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct gexec *e = (struct gexec *)h;
    if (!e || e->magic != SIM_EXEC_MAGIC) return CUDA_ERROR_INVALID_VALUE;
    *out = e;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    struct gexec *e;
    sim_lock();
    CUresult rc = exec_get(hGraphExec, &e);
    if (rc == CUDA_SUCCESS) {
        sim_gnodes_free(e->head);
        e->magic = 0;
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
    struct gexec *e;
    struct sim_stream *s;
    sim_lock();
    CUresult rc = exec_get(h, &e);
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
    return graph_launch(hGraphExec, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(hGraphExec, hStream, SIM_DS_PER_THREAD);
}

static CUresult graph_upload(CUgraphExec h, CUstream hs, enum sim_default_stream ds)
{
    struct gexec *e;
    struct sim_stream *s;
    sim_lock();
    CUresult rc = exec_get(h, &e);
    if (rc == CUDA_SUCCESS) rc = sim_stream_resolve(hs, ds, &s);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, SIM_DS_PER_THREAD);
}
