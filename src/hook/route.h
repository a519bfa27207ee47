/* Rerouting to cudafrag's arena (CUDAFRAG_ARENA=1). Each returns false when the
 * arena does not take the call; the wrapper then makes the real call, so a program
 * is never worse off than without the arena. Called with the guard held. */
#ifndef CF_HOOK_ROUTE_H
#define CF_HOOK_ROUTE_H

#include "hook/note.h"

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
/* Any free of a pointer the arena owns; *rc is the arena's result. */
bool cf_route_free(enum cf_api api, uint64_t ptr, CUstream stream, bool async, CUresult *rc);

#endif
