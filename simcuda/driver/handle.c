/* One table for every kind of handle: its tag and the error a bad handle of
 * that kind gets, which differs by API as it does in the real driver. */
#include "sim.h"

static const struct {
    uint32_t tag;
    CUresult invalid;
} kinds[SIM_H_KINDS] = {
    [SIM_H_CTX] = {0x43545820U, CUDA_ERROR_INVALID_CONTEXT},
    [SIM_H_STREAM] = {0x5354524dU, CUDA_ERROR_INVALID_HANDLE},
    [SIM_H_EVENT] = {0x45564e54U, CUDA_ERROR_INVALID_HANDLE},
    [SIM_H_POOL] = {0x504f4f4cU, CUDA_ERROR_INVALID_VALUE},
    [SIM_H_GRAPH] = {0x47524150U, CUDA_ERROR_INVALID_VALUE},
    [SIM_H_GRAPH_NODE] = {0x474e4f44U, CUDA_ERROR_INVALID_VALUE},
    [SIM_H_GRAPH_EXEC] = {0x47455845U, CUDA_ERROR_INVALID_VALUE},
    [SIM_H_VMM] = {0x564d4d48U, CUDA_ERROR_INVALID_VALUE},
    [SIM_H_ARRAY] = {0x41525259U, CUDA_ERROR_INVALID_HANDLE},
};

void sim_handle_init(struct sim_handle *h, enum sim_handle_kind kind)
{
    h->tag = kinds[kind].tag;
}

void sim_handle_retire(struct sim_handle *h)
{
    h->tag = 0;
}

int sim_handle_valid(const void *h, enum sim_handle_kind kind)
{
    return h && ((const struct sim_handle *)h)->tag == kinds[kind].tag;
}

void *sim_handle_get(const void *h, enum sim_handle_kind kind, CUresult *rc)
{
    if (!sim_ready()) {
        *rc = CUDA_ERROR_NOT_INITIALIZED;
        return NULL;
    }
    if (!sim_handle_valid(h, kind)) {
        *rc = kinds[kind].invalid;
        return NULL;
    }
    *rc = CUDA_SUCCESS;
    return (void *)h;
}

CUresult sim_handle_check(const void *h, enum sim_handle_kind kind)
{
    CUresult rc;
    sim_lock();
    sim_handle_get(h, kind, &rc);
    sim_unlock();
    return rc;
}
