/* Driver pointer queries, wrapped only so that arena memory answers like the
 * program's own allocations (CUDAFRAG_ARENA=1): the driver knows arena memory
 * by its VMM mappings, each holding many allocations and outliving them. Not
 * counted; pass-throughs for every pointer the arena does not own. The runtime's
 * cudaPointerGetAttributes reaches these through the driver functions it looked
 * up, with the shared and the static runtime alike. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/route.h"
#include "hook/symbols.h"

#include <string.h>

#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_DRV(sym);                                                      \
    if (real == NULL) return cf_missing_driver(#sym)

CF_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                                   CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuMemGetAddressRange_v2);
    struct cf_arena_block blk;
    switch (cf_route_query(dptr, &blk)) {
    case CF_Q_BLOCK:
        if (pbase) *pbase = blk.base;
        if (psize) *psize = blk.size;
        return CUDA_SUCCESS;
    case CF_Q_STALE:
        return real(pbase, psize, cf_arena_unknown_ptr());
    default:
        return real(pbase, psize, dptr);
    }
}

/* The legacy ABI cannot reach arena memory (32-bit addresses); wrapped so that a
 * lookup for it finds one of our rows. */
CF_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                                CUdeviceptr_v1 dptr)
{
    REAL_OR_FAIL(cuMemGetAddressRange);
    return real(pbase, psize, dptr);
}

/* Put the arena's answer for attribute a into data, when it is one the arena
 * answers (the allocation's range and identity); the rest stay the driver's. */
static void block_attribute(const struct cf_arena_block *blk, CUpointer_attribute a, void *data)
{
    if (data == NULL) return;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: {
        CUdeviceptr v = blk->base;
        memcpy(data, &v, sizeof v);
        break;
    }
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: {
        size_t v = blk->size;
        memcpy(data, &v, sizeof v);
        break;
    }
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: {
        unsigned long long v = blk->buffer_id;
        memcpy(data, &v, sizeof v);
        break;
    }
    default:
        break;
    }
}

CF_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                                 CUdeviceptr ptr)
{
    REAL_OR_FAIL(cuPointerGetAttribute);
    struct cf_arena_block blk;
    enum cf_route_q q = cf_route_query(ptr, &blk);
    /* The driver answers first: its argument checks and errors stay native. */
    CUresult rc = real(data, attribute, q == CF_Q_STALE ? cf_arena_unknown_ptr() : ptr);
    if (rc == CUDA_SUCCESS && q == CF_Q_BLOCK) block_attribute(&blk, attribute, data);
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                                  CUpointer_attribute *attributes, void **data,
                                                  CUdeviceptr ptr)
{
    REAL_OR_FAIL(cuPointerGetAttributes);
    struct cf_arena_block blk;
    enum cf_route_q q = cf_route_query(ptr, &blk);
    CUresult rc =
        real(numAttributes, attributes, data, q == CF_Q_STALE ? cf_arena_unknown_ptr() : ptr);
    if (rc == CUDA_SUCCESS && q == CF_Q_BLOCK)
        for (unsigned int i = 0; i < numAttributes; i++)
            block_attribute(&blk, attributes[i], data[i]);
    return rc;
}
