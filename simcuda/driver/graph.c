/* Graphs with memory nodes, and stream capture. An allocation node owns a
 * VA range from the start (its address is fixed when the node is created).
 * At launch it is backed from the graph memory pool, which holds physical
 * memory in chunks of at least 32 MiB (an H200 reports 32 MiB used and
 * reserved for a single 3 MiB graph allocation) shared by the allocations
 * it backs. "Used" is the size of the chunks that back a live allocation;
 * the backing stays with a freed allocation, reserved, until
 * cuDeviceGraphMemTrim. Other captured work is kept as queued operations
 * and replayed in node order at each launch. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define SIM_GRAPH_MAGIC 0x47524150U
#define SIM_EXEC_MAGIC  0x47455845U
#define SIM_NODE_MAGIC  0x474e4f44U

enum gnode_kind { GN_OP, GN_ALLOC, GN_FREE, GN_EMPTY };

#define GRAPH_CHUNK ((size_t)32 << 20)

/* Physical memory of the graph pool. */
struct gchunk {
    struct sim_device *dev;
    struct sim_phys phys;
    size_t size, taken;
    unsigned users;      /* backed allocations */
    unsigned live_users; /* of which allocated now */
    struct gchunk *next;
};

struct galloc {
    int refs; /* nodes (in graphs and executables) naming it */
    struct sim_region *region;
    size_t request;
    struct gchunk *chunk; /* backing, or NULL */
    size_t bytes;         /* taken from the chunk */
    int live;             /* allocated by a launch and not yet freed */
    struct galloc *next;
};

struct gnode {
    uint32_t magic;
    enum gnode_kind kind;
    struct sim_op op;
    struct galloc *ga;
    CUdeviceptr fptr;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc_params;
    struct gnode *next;
};

struct sim_graph {
    uint32_t magic;
    struct sim_device *dev;
    struct gnode *head, *tail;
};

struct gexec {
    uint32_t magic;
    struct sim_device *dev;
    struct gnode *head, *tail;
};

static struct galloc *gallocs;
static struct gchunk *gchunks;
static unsigned long long next_capture_id = 1;

/* ---- graph allocations and the graph memory pool ---- */

static struct galloc *galloc_new(struct sim_device *d, size_t size)
{
    struct galloc *ga = calloc(1, sizeof *ga);
    struct sim_region *r =
        ga ? sim_region_new(d, SIM_R_GRAPH, SIM_ROUND_UP(size, SIM_PAGE), 0, 0) : NULL;
    if (!r) {
        free(ga);
        return NULL;
    }
    r->owner = ga;
    r->request = size;
    ga->region = r;
    ga->request = size;
    ga->next = gallocs;
    gallocs = ga;
    return ga;
}

static void galloc_unback(struct galloc *ga)
{
    struct gchunk *c = ga->chunk;
    c->taken -= ga->bytes;
    c->users--;
    ga->chunk = NULL;
    sim_discard(ga->region->base, ga->region->size);
}

static void galloc_put(struct galloc *ga)
{
    if (--ga->refs > 0 || ga->live) return;
    if (ga->chunk) galloc_unback(ga);
    for (struct galloc **pp = &gallocs; *pp; pp = &(*pp)->next) {
        if (*pp == ga) {
            *pp = ga->next;
            break;
        }
    }
    sim_region_free(ga->region);
    free(ga);
}

/* Backing of freed allocations goes back, then chunks nobody uses. */
static void graph_trim(struct sim_device *d)
{
    for (struct galloc *ga = gallocs; ga; ga = ga->next)
        if (ga->region->dev == d && ga->chunk && !ga->live) galloc_unback(ga);
    for (struct gchunk **pp = &gchunks; *pp;) {
        struct gchunk *c = *pp;
        if (c->dev != d || c->users > 0) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        d->graph_reserved -= c->size;
        sim_phys_free(d, &c->phys);
        free(c);
    }
}

static struct gchunk *gchunk_new(struct sim_device *d, size_t bytes)
{
    size_t size = bytes < GRAPH_CHUNK ? GRAPH_CHUNK : bytes;
    uint32_t n = (uint32_t)(size / SIM_PAGE);
    struct gchunk *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (n > d->npages || sim_phys_alloc(d, n, &c->phys) != 0) {
        graph_trim(d);
        if (n > d->npages || sim_phys_alloc(d, n, &c->phys) != 0) {
            free(c);
            return NULL;
        }
    }
    c->dev = d;
    c->size = size;
    c->next = gchunks;
    gchunks = c;
    d->graph_reserved += size;
    if (d->graph_reserved > d->graph_reserved_high) d->graph_reserved_high = d->graph_reserved;
    return c;
}

static CUresult galloc_launch(struct galloc *ga)
{
    struct sim_device *d = ga->region->dev;
    if (ga->live) return CUDA_ERROR_INVALID_VALUE;
    if (!ga->chunk) {
        size_t bytes = ga->region->size;
        struct gchunk *c;
        for (c = gchunks; c; c = c->next)
            if (c->dev == d && c->size - c->taken >= bytes) break;
        if (!c && !(c = gchunk_new(d, bytes))) return CUDA_ERROR_OUT_OF_MEMORY;
        c->taken += bytes;
        c->users++;
        ga->chunk = c;
        ga->bytes = bytes;
    }
    ga->live = 1;
    if (ga->chunk->live_users++ == 0) {
        d->graph_used += ga->chunk->size;
        if (d->graph_used > d->graph_used_high) d->graph_used_high = d->graph_used;
    }
    d->alloc_calls++;
    return CUDA_SUCCESS;
}

static void galloc_free(struct galloc *ga)
{
    ga->live = 0;
    if (--ga->chunk->live_users == 0) ga->region->dev->graph_used -= ga->chunk->size;
    ga->region->dev->free_calls++;
    if (ga->refs == 0) {
        ga->refs = 1;
        galloc_put(ga);
    }
}

CUresult sim_graph_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size)
{
    if (addr >= r->base + r->request) return CUDA_ERROR_INVALID_VALUE;
    *base = r->base;
    *size = r->request;
    return CUDA_SUCCESS;
}

CUresult sim_graph_free_ptr(struct sim_region *r, uintptr_t addr)
{
    struct galloc *ga = r->owner;
    if (addr != r->base || !ga->live) return CUDA_ERROR_INVALID_VALUE;
    galloc_free(ga);
    return CUDA_SUCCESS;
}

/* ---- graphs and nodes ---- */

static struct gnode *node_add(struct sim_graph *g, enum gnode_kind kind)
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

static struct sim_graph *graph_new(struct sim_device *d)
{
    struct sim_graph *g = calloc(1, sizeof *g);
    if (g) {
        g->magic = SIM_GRAPH_MAGIC;
        g->dev = d;
    }
    return g;
}

static void nodes_free(struct gnode *n)
{
    while (n) {
        struct gnode *next = n->next;
        if (n->kind == GN_ALLOC) galloc_put(n->ga);
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
    if (rc == CUDA_SUCCESS && !(g = graph_new(d))) rc = CUDA_ERROR_OUT_OF_MEMORY;
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
        nodes_free(g->head);
        g->magic = 0;
        free(g);
    }
    sim_unlock();
    return rc;
}

static CUresult alloc_node(struct sim_graph *g, CUDA_MEM_ALLOC_NODE_PARAMS *p, struct gnode **out)
{
    struct sim_device *d;
    CUresult rc = sim_device_get(p->poolProps.location.id, &d);
    if (rc != CUDA_SUCCESS || p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct galloc *ga = galloc_new(d, p->bytesize);
    struct gnode *n = ga ? node_add(g, GN_ALLOC) : NULL;
    if (!n) {
        if (ga) {
            ga->refs = 1;
            galloc_put(ga);
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
    if (rc == CUDA_SUCCESS) rc = alloc_node(g, nodeParams, &n);
    if (rc == CUDA_SUCCESS) *phGraphNode = (CUgraphNode)n;
    sim_unlock();
    return rc;
}

static CUresult free_node(struct sim_graph *g, CUdeviceptr dptr, struct gnode **out)
{
    struct sim_region *r = sim_region_find(dptr);
    if (!r || r->kind != SIM_R_GRAPH || r->base != dptr) return CUDA_ERROR_INVALID_VALUE;
    struct gnode *n = node_add(g, GN_FREE);
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
    if (rc == CUDA_SUCCESS) rc = free_node(g, dptr, &n);
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
    if (rc == CUDA_SUCCESS && !(n = node_add(g, GN_OP))) rc = CUDA_ERROR_OUT_OF_MEMORY;
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
    if (rc == CUDA_SUCCESS && !(n = node_add(g, GN_OP))) rc = CUDA_ERROR_OUT_OF_MEMORY;
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
    if (rc == CUDA_SUCCESS && !(n = node_add(g, GN_EMPTY))) rc = CUDA_ERROR_OUT_OF_MEMORY;
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
        nodes_free(e->head);
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
        nodes_free(e->head);
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
        return galloc_launch(n->ga);
    case GN_FREE:
        r = sim_region_find(n->fptr);
        if (r && r->kind == SIM_R_GRAPH && ((struct galloc *)r->owner)->live) galloc_free(r->owner);
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

/* ---- graph memory pool ---- */

SIM_API CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_device(d);
        graph_trim(d);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    struct sim_device *d;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    cuuint64_t v = 0;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
            v = d->graph_used;
            break;
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
            v = d->graph_used_high;
            break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
            v = d->graph_reserved;
            break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
            v = d->graph_reserved_high;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    if (rc == CUDA_SUCCESS) memcpy(value, &v, sizeof v);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    struct sim_device *d;
    cuuint64_t v;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&v, value, sizeof v);
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    if (rc == CUDA_SUCCESS && v != 0) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
            d->graph_used_high = d->graph_used;
        else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
            d->graph_reserved_high = d->graph_reserved;
        else
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return rc;
}

/* ---- stream capture ---- */

/* The stream this thread captures in global or thread-local mode, if any: in
 * those modes the thread may make no potentially unsafe call until it ends. */
static __thread struct sim_stream *tl_strict_capture;

CUresult sim_unsafe_call(void)
{
    if (tl_strict_capture == NULL) return CUDA_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    sim_lock();
    if (tl_strict_capture->capture == SIM_CAP_ACTIVE) {
        tl_strict_capture->capture = SIM_CAP_INVALIDATED;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    sim_unlock();
    return rc;
}

int sim_capturing(struct sim_stream *s)
{
    return s->capture != SIM_CAP_NONE;
}

void sim_capture_op(struct sim_stream *s, struct sim_op *op)
{
    struct gnode *n = s->capture == SIM_CAP_ACTIVE ? node_add(s->capture_graph, GN_OP) : NULL;
    if (n) {
        n->op = *op;
        n->op.next = NULL;
    }
    free(op);
}

CUresult sim_capture_alloc(struct sim_stream *s, size_t size, CUdeviceptr *out)
{
    if (s->capture != SIM_CAP_ACTIVE) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = s->ctx->dev->ordinal;
    p.bytesize = size;
    struct gnode *n;
    CUresult rc = alloc_node(s->capture_graph, &p, &n);
    if (rc == CUDA_SUCCESS) *out = p.dptr;
    return rc;
}

CUresult sim_capture_free(struct sim_stream *s, CUdeviceptr ptr)
{
    if (s->capture != SIM_CAP_ACTIVE) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct gnode *n;
    return free_node(s->capture_graph, ptr, &n);
}

static CUresult begin_capture(CUstream h, enum sim_default_stream ds, CUstreamCaptureMode mode)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->is_legacy) rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (rc == CUDA_SUCCESS && s->capture != SIM_CAP_NONE) rc = CUDA_ERROR_ILLEGAL_STATE;
    if (rc == CUDA_SUCCESS && !(s->capture_graph = graph_new(s->ctx->dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        s->capture = SIM_CAP_ACTIVE;
        s->capture_id = next_capture_id++;
        if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) tl_strict_capture = s;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamBeginCapture(CUstream hStream)
{
    return begin_capture(hStream, SIM_DS_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return begin_capture(hStream, SIM_DS_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin_capture(hStream, SIM_DS_LEGACY, mode);
}

SIM_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin_capture(hStream, SIM_DS_PER_THREAD, mode);
}

static CUresult end_capture(CUstream h, CUgraph *out, enum sim_default_stream ds)
{
    struct sim_stream *s;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->capture == SIM_CAP_NONE) rc = CUDA_ERROR_ILLEGAL_STATE;
    if (rc == CUDA_SUCCESS) {
        struct sim_graph *g = s->capture_graph;
        *out = NULL;
        if (s->capture == SIM_CAP_INVALIDATED) {
            nodes_free(g->head);
            free(g);
            rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            *out = (CUgraph)g;
        }
        s->capture = SIM_CAP_NONE;
        s->capture_graph = NULL;
        if (tl_strict_capture == s) tl_strict_capture = NULL;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(hStream, phGraph, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(hStream, phGraph, SIM_DS_PER_THREAD);
}

static CUresult capture_info(CUstream h, enum sim_default_stream ds, CUstreamCaptureStatus *st,
                             cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS) {
        if (st)
            *st = s->capture == SIM_CAP_ACTIVE        ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                  : s->capture == SIM_CAP_INVALIDATED ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                      : CU_STREAM_CAPTURE_STATUS_NONE;
        if (id && s->capture != SIM_CAP_NONE) *id = s->capture_id;
        if (graph) *graph = (CUgraph)s->capture_graph;
        if (deps) *deps = NULL;
        if (edges) *edges = NULL;
        if (ndeps) *ndeps = 0;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    sim_count_call(SIM_COUNT_cuStreamIsCapturing);
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    sim_count_call(SIM_COUNT_cuStreamIsCapturing);
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out)
{
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                             CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, NULL, NULL, NULL,
                        NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}
