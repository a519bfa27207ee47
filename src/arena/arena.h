/* cudafrag's pooled arena (CUDAFRAG_ARENA=1): serves cudaMalloc/cuMemAlloc (and,
 * with CUDAFRAG_ARENA_ASYNC=1, default-pool async allocations) from a VMM-backed
 * range with a TLSF-like sub-allocator whose metadata lives on the host. */
#ifndef CF_ARENA_H
#define CF_ARENA_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

bool cf_arena_enabled(void);       /* CUDAFRAG_ARENA and the arena could start */
bool cf_arena_async_enabled(void); /* also take default-pool async allocations */

/* Allocate on the calling thread's current device. stream = 0 for synchronous
 * allocations. Returns CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY (after trimming),
 * or CUDA_ERROR_NOT_SUPPORTED when the caller must fall back to the real API
 * (e.g. a stream is capturing). *granted = bytes the block really takes. */
CUresult cf_arena_alloc(CUdeviceptr *out, uint64_t size, CUstream stream, bool async,
                        uint64_t *granted);
/* True when the arena owns ptr: with VMM, ptr lies in the arena's reserved
 * range (only the arena hands out addresses there, so a pointer there that
 * starts no live block is an invalid free and cf_arena_free says so); with
 * the cuMemAlloc fallback, ptr lies in one of its chunks. No driver call. */
bool cf_arena_owns(CUdeviceptr ptr);
/* Free an arena block. async: stream-ordered free on stream, refused
 * (CUDA_ERROR_INVALID_VALUE, the block stays live) when a synchronous
 * allocation took the block, as the driver refuses it. */
CUresult cf_arena_free(CUdeviceptr ptr, CUstream stream, bool async);
/* For a free cf_arena_free refused: the pointer to hand the real free function
 * instead, which the driver refuses the way it would have refused ptr without
 * the arena. With VMM, ptr itself (the reservation holds no allocation the
 * driver could free); with the cuMemAlloc fallback, whose chunks the driver
 * would free, an address that is no device memory. */
CUdeviceptr cf_arena_refused_ptr(CUdeviceptr ptr);
/* An address no driver takes for device memory (one of cudafrag's own host
 * bytes): queries about a stale arena pointer are asked about it instead. */
CUdeviceptr cf_arena_unknown_ptr(void);

/* The live arena allocation holding ptr (interior pointers too), as the driver
 * would describe an allocation of its own: its start, the bytes asked for, and
 * a buffer id unique in the process. False when ptr lies in none (then, if
 * cf_arena_owns(ptr), the pointer is stale: freed, or past its allocation).
 * An interior pointer costs a walk along the part's blocks under its lock. */
struct cf_arena_block {
    uint64_t base, size, buffer_id;
};
bool cf_arena_find_block(CUdeviceptr ptr, struct cf_arena_block *out);

/* The application is about to destroy a stream: the arena stops referring to it
 * (called by the stream-destroy hooks before the real call). */
void cf_arena_stream_destroyed(CUstream stream);
/* Run the application's synchronisation of `stream` (sync: the real
 * cuStreamSynchronize): once it succeeds, every stream-ordered free the program
 * made on that stream before it is done on the device, so those blocks go back
 * to the TLSF at once, without an event -- for every stream's allocations, as
 * the frees of a synchronised program are in the shadow model. */
CUresult cf_arena_stream_synchronize(CUstream stream, CUresult(CUDAAPI *sync)(CUstream));
/* cuCtxEnablePeerAccess(peer) succeeded on a thread whose current device is reader:
 * the arena memory of peer's device, mapped and to be mapped, becomes accessible to
 * reader, as its cudaMalloc memory is natively. */
void cf_arena_peer_access(CUcontext peer, int reader);

/* Native runs: feed the host-only shadow model (no CUDA calls). It is fed only
 * when cf_shadow_enabled(): CUDAFRAG_SHADOW and the arena not serving. */
bool cf_shadow_enabled(void);
void cf_shadow_alloc(uint64_t addr, uint64_t size, int device);
void cf_shadow_free(uint64_t addr);

/* Figures for the report's "arena vs native" section. */
struct cf_arena_stats {
    bool active, vmm, shadow; /* vmm=false: cuMemAlloc chunks fallback */
    uint64_t peak_live, peak_reserved, peak_mapped;
    uint64_t reserved_now, mapped_now, live_now;
    uint64_t granules_mapped, granules_unmapped;
    uint64_t driver_calls, allocs_served, frees_served;
    uint64_t ns_in_alloc, ns_in_free;
    double ext_frag_at_peak; /* 1 - largest free / total free, at peak mapped */
    uint64_t ooms;           /* allocations not served (arena) or not replayed (model) */
    /* Not read: a lock was still held at the report's deadline (a thread
     * interrupted inside the arena at exit). */
    bool locked_out;
    /* The model could not start on a device (peak_reserved: the range asked for):
     * more than CF_SHADOW_MAX_RESERVE, or its tables could not be allocated. */
    bool broken;
};
void cf_arena_get_stats(struct cf_arena_stats *arena, struct cf_arena_stats *shadow);
/* Bytes the arena has mapped on device now (no driver call): the device's footprint
 * from arena-served allocations. */
uint64_t cf_arena_mapped_now(int device);
/* The same, leaving out (locked_out) what is not free by deadline (NULL: wait). */
struct timespec;
void cf_arena_get_stats_until(struct cf_arena_stats *arena, struct cf_arena_stats *shadow,
                              const struct timespec *deadline);

/* True when the model's figures do not describe the run: it could not replay
 * every allocation, could not start, or could not be read. */
static inline bool cf_shadow_failed(const struct cf_arena_stats *s)
{
    return s->shadow && (s->broken || s->ooms || s->locked_out);
}

/* Consistency check of every device's sub-allocator (tests): the number of
 * violated invariants, 0 when sound. */
int cf_arena_check(void);

#endif
