/* Rerouting to cudafrag's arena (CUDAFRAG_ARENA=1). Each returns false when the
 * arena does not take the call; the wrapper then makes the real call, so a program
 * is never worse off than without the arena. Called with the guard held. */
#ifndef CF_HOOK_ROUTE_H
#define CF_HOOK_ROUTE_H

#include "hook/note.h"

#include "arena/arena.h"

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* Row pitch of arena-served pitched allocations: what devices report as
 * CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT rounds up to at most this. */
#define CF_ARENA_PITCH 512u

/* cudaMalloc/cuMemAlloc and the pitch variants: *out on success. */
bool cf_route_alloc(enum cf_api api, uint64_t *out, uint64_t size);
/* cudaMallocAsync/cuMemAllocAsync on the device's default pool, not capturing. */
bool cf_route_alloc_async(enum cf_api api, uint64_t *out, uint64_t size, CUstream stream,
                          const struct cf_async_target *t);
/* Any free. True: the arena freed ptr (and it is recorded). False: the caller
 * makes the real call with *real_ptr and ends the note f, begun here, with its
 * result. *real_ptr is ptr, except when the arena owns ptr but refuses the free
 * (an interior or stale pointer, or a stream-ordered free of a block a synchronous
 * allocation took, which the driver refuses too): then it is a pointer the driver
 * refuses the same way, so that the program gets the native answer from the real
 * function -- with the shared runtime, its last-error state included. */
bool cf_route_free(struct cf_free_note *f, enum cf_api api, uint64_t ptr, CUstream stream,
                   bool async, uint64_t *real_ptr);
/* cudaFreeAsync/cuMemFreeAsync: the same, and refused on a capturing stream.
 * ptsz: stream 0 is the per-thread stream. */
bool cf_route_free_async(struct cf_free_note *f, enum cf_api api, uint64_t ptr, CUstream stream,
                         bool ptsz, uint64_t *real_ptr);

/* Pointer queries (address range, attributes) about ptr. The driver describes
 * arena memory by its mapping, which holds many allocations and outlives them:
 * NATIVE: not arena memory (or a nested call), ask the driver; BLOCK: ptr lies
 * in the live arena allocation *blk, whose range and buffer id replace the
 * driver's; STALE: arena memory outside any live allocation, which the driver
 * would not know natively: ask it about cf_arena_unknown_ptr() instead. */
enum cf_route_q { CF_Q_NATIVE, CF_Q_BLOCK, CF_Q_STALE };
enum cf_route_q cf_route_query(uint64_t ptr, struct cf_arena_block *blk);

#endif
