/* The objects behind CUDA handles. A handle is the object's address, so
 * every such object starts with a struct sim_handle whose tag says which kind
 * of live object it is: NULL, a handle of another kind or a destroyed one
 * gets the error the real driver gives instead of being used. The tag is
 * cleared before an object is freed; contexts are never freed, because other
 * threads' current-context stacks may still name them. */
#ifndef SIM_DRIVER_HANDLE_H
#define SIM_DRIVER_HANDLE_H

#include <cuda.h>
#include <stdint.h>

enum sim_handle_kind {
    SIM_H_CTX,
    SIM_H_STREAM,
    SIM_H_EVENT,
    SIM_H_POOL,
    SIM_H_GRAPH,
    SIM_H_GRAPH_NODE,
    SIM_H_GRAPH_EXEC,
    SIM_H_VMM,
    SIM_H_ARRAY,
    SIM_H_KINDS
};

struct sim_handle {
    uint32_t tag;
};

void sim_handle_init(struct sim_handle *h, enum sim_handle_kind kind);
/* Handles to the object stop working. */
void sim_handle_retire(struct sim_handle *h);
/* h (NULL allowed) is a live object of this kind. */
int sim_handle_valid(const void *h, enum sim_handle_kind kind);
/* The object behind h, or NULL with *rc CUDA_ERROR_NOT_INITIALIZED before cuInit
 * and the kind's invalid-handle error otherwise. Call with the sim lock held. */
void *sim_handle_get(const void *h, enum sim_handle_kind kind, CUresult *rc);
/* The same check, taking the sim lock, for calls that only validate a handle. */
CUresult sim_handle_check(const void *h, enum sim_handle_kind kind);

#endif
