/* Pointer attributes: what a (device or host) address belongs to. */
#include "sim.h"

#include <string.h>

struct ptr_facts {
    struct sim_range_info info;
    struct sim_region *region; /* NULL for host and managed memory */
};

static CUresult facts(uintptr_t addr, struct ptr_facts *f)
{
    f->region = sim_region_find(addr);
    return sim_describe(addr, &f->info);
}

#define PUT(type, val)                                                                             \
    do {                                                                                           \
        type v_ = (val);                                                                           \
        memcpy(data, &v_, sizeof v_);                                                              \
    } while (0)

static CUresult attribute(const struct ptr_facts *f, CUpointer_attribute attr, void *data,
                          uintptr_t addr)
{
    const struct sim_range_info *in = &f->info;
    int device_mem = !in->is_host || in->is_managed;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        PUT(CUcontext, (CUcontext)sim.dev[in->device].primary);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        PUT(unsigned int, device_mem ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        PUT(CUdeviceptr, (CUdeviceptr)addr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!in->is_host) return CUDA_ERROR_INVALID_VALUE;
        PUT(void *, (void *)addr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        PUT(unsigned int, (unsigned)in->is_managed);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        PUT(int, in->device);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        PUT(CUdeviceptr, (CUdeviceptr)in->base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        PUT(size_t, in->size);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        PUT(unsigned int, 1u);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        PUT(unsigned long long, (unsigned long long)in->base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        PUT(unsigned int, (unsigned)CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        PUT(CUmemoryPool, f->region && f->region->kind == SIM_R_POOLCHUNK
                              ? (CUmemoryPool)sim_pool_of(f->region)
                              : NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        PUT(unsigned int, 0u);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        PUT(unsigned long long, 0ull);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIM_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute_id,
                                       CUdeviceptr ptr)
{
    SIM_ENTRY();
    struct ptr_facts f;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = facts(ptr, &f);
    if (rc == CUDA_SUCCESS) rc = attribute(&f, attribute_id, data, ptr);
    sim_unlock();
    return rc;
}

/* Zero of the attribute's size, for a pointer CUDA does not know. */
static size_t attribute_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return sizeof(int);
    default:
        return sizeof(unsigned int);
    }
}

/* The range attributes of an unknown pointer are left as they were (as
 * measured on an H200). */
static int is_range(CUpointer_attribute a)
{
    return a == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR || a == CU_POINTER_ATTRIBUTE_RANGE_SIZE ||
           a == CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR || a == CU_POINTER_ATTRIBUTE_MAPPING_SIZE;
}

/* Unlike the single form, an unknown pointer is not an error here: the
 * attributes read as zero (the device ordinal as -2), which is how callers
 * tell plain host memory apart. */
SIM_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    SIM_ENTRY();
    struct ptr_facts f;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    int known = facts(ptr, &f) == CUDA_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes && rc == CUDA_SUCCESS; i++) {
        if (!data[i]) continue;
        if (known && attribute(&f, attributes[i], data[i], ptr) == CUDA_SUCCESS) continue;
        if (!known && attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
            int none = -2;
            memcpy(data[i], &none, sizeof none);
        } else if (known || !is_range(attributes[i])) {
            memset(data[i], 0, attribute_size(attributes[i]));
        }
    }
    sim_unlock();
    return rc;
}
