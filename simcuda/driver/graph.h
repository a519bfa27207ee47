/* Graphs, their nodes and graph allocations: what graph.c, graph_mempool.c and
 * capture.c share. */
#ifndef SIM_DRIVER_GRAPH_H
#define SIM_DRIVER_GRAPH_H

#include "sim.h"

enum gnode_kind { GN_OP, GN_ALLOC, GN_FREE, GN_EMPTY };

struct gchunk;

/* One per alloc node, shared with the executables instantiated from its graph,
 * so that a launch cannot back an allocation that is still live. */
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
    struct sim_handle handle;
    enum gnode_kind kind;
    struct sim_op op;
    struct galloc *ga;
    CUdeviceptr fptr;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc_params;
    struct gnode *next;
};

struct sim_graph {
    struct sim_handle handle;
    struct sim_device *dev;
    struct gnode *head, *tail;
};

/* graph_mempool.c: graph allocations, backed from the graph memory pool at launch */
struct galloc *sim_galloc_new(struct sim_device *d, size_t size);
/* Drops a node's reference; the allocation goes when no node names it and it is not live. */
void sim_galloc_put(struct galloc *ga);
CUresult sim_galloc_launch(struct galloc *ga);
void sim_galloc_free(struct galloc *ga);

/* graph.c */
struct sim_graph *sim_graph_new(struct sim_device *d);
struct gnode *sim_gnode_add(struct sim_graph *g, enum gnode_kind kind);
void sim_gnodes_free(struct gnode *n);
CUresult sim_graph_add_alloc(struct sim_graph *g, CUDA_MEM_ALLOC_NODE_PARAMS *p,
                             struct gnode **out);
CUresult sim_graph_add_free(struct sim_graph *g, CUdeviceptr dptr, struct gnode **out);

#endif
