/* Device memory behind one device's arena. Preferred: one virtual range reserved
 * once (cuMemAddressReserve) whose granules are backed on demand (cuMemCreate +
 * cuMemMap + cuMemSetAccess) and given back when idle. Devices without VMM, or a
 * failing VMM call at start, get large cuMemAlloc chunks instead (vmm = false).
 * The caller serialises calls (the arena's grow mutex). */
#ifndef CF_ARENA_BACKING_H
#define CF_ARENA_BACKING_H

#include "arena/gmap.h"

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#define CF_BACKING_GRANULE   ((uint64_t)2 << 20)
#define CF_BACKING_CHUNK_MIN ((uint64_t)64 << 20) /* cuMemAlloc fallback chunk */

struct cf_backing {
    bool vmm;
    CUdevice dev;
    CUcontext ctx;
    uint64_t base, reserve, granule;       /* VMM: this part of the reserved range */
    uint64_t va_base, va_total;            /* VMM: the whole reservation (all parts) */
    struct cf_gmap gmap;                   /* VMM: which granules are backed */
    CUmemGenericAllocationHandle *handles; /* VMM: by chunk head granule */
    uint64_t chunks_bytes;                 /* fallback: bytes in chunks (the arena updates it) */
    uint64_t driver_calls;                 /* every CUDA call made for backing */
};

/* Needs ctx current on the calling thread. reserve = 0: the device's total
 * memory. Reserves *nparts ranges of that size in one reservation (fewer if
 * the address space is short; *nparts says how many) and sets bk up as part
 * 0. Returns CUDA_SUCCESS (VMM or fallback) or the error that made even the
 * fallback impossible. */
CUresult cf_backing_init(struct cf_backing *bk, CUdevice dev, CUcontext ctx, uint64_t reserve,
                         unsigned *nparts);
/* Part k of the reservation part 0 (bk0) made: 0 or -1 (host out of memory). */
int cf_backing_init_part(struct cf_backing *bk, const struct cf_backing *bk0, unsigned k);
void cf_backing_fini(struct cf_backing *bk);

/* VMM: back [addr, addr+bytes) (granule-aligned, inside the reserve, unmapped).
 * The granule map is the caller's to update, under the lock its readers take. */
CUresult cf_backing_map(struct cf_backing *bk, uint64_t addr, uint64_t bytes);
/* Peer access (cuCtxEnablePeerAccess): natively, a device that enabled access to
 * another's memory reaches every cudaMalloc block of it, but VMM memory only answers
 * the devices its cuMemSetAccess named. reader is given access to owner's chunks
 * mapped from now on; devices from 32 up are not tracked. */
void cf_backing_add_reader(int owner, int reader);
/* VMM: give reader access to every chunk bk has mapped. Caller holds the part's
 * grow mutex (the mapped state cannot change under it). */
CUresult cf_backing_grant(struct cf_backing *bk, int reader);
/* VMM: give back the chunk mapped at addr. */
CUresult cf_backing_unmap(struct cf_backing *bk, uint64_t addr, uint64_t bytes);

/* Fallback: a new chunk of at least bytes. */
CUresult cf_backing_chunk_alloc(struct cf_backing *bk, uint64_t bytes, uint64_t *addr,
                                uint64_t *got);
CUresult cf_backing_chunk_free(struct cf_backing *bk, uint64_t addr, uint64_t bytes);

#endif
