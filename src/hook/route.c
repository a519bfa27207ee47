#include "hook/cuda_abi.h"

#include "hook/route.h"

#include "arena/arena.h"
#include "base/ctx_state.h"

#include <errno.h>

bool cf_route_alloc(enum cf_api api, uint64_t *out, uint64_t size)
{
    /* Size 0 keeps the real API's answer (success with a NULL pointer). */
    if (size == 0 || !cf_arena_enabled()) return false;
    int saved = errno;
    CUdeviceptr p = 0;
    uint64_t granted = 0;
    uint64_t t0 = cf_now_ns();
    bool served = cf_arena_alloc(&p, size, NULL, false, &granted) == CUDA_SUCCESS;
    if (served) {
        *out = p;
        cf_note_arena_alloc(api, p, size, granted, NULL, -1, t0, cf_now_ns());
    }
    errno = saved;
    return served;
}

bool cf_route_alloc_async(enum cf_api api, uint64_t *out, uint64_t size, CUstream stream,
                          const struct cf_async_target *t)
{
    if (size == 0 || !t->is_default || t->capturing || !cf_arena_async_enabled()) return false;
    /* The arena serves the current device: a stream of another device passes through. */
    if (cf_current_device() != t->device) return false;
    int saved = errno;
    CUdeviceptr p = 0;
    uint64_t granted = 0;
    uint64_t t0 = cf_now_ns();
    bool served = cf_arena_alloc(&p, size, stream, true, &granted) == CUDA_SUCCESS;
    if (served) {
        *out = p;
        cf_note_arena_alloc(api, p, size, granted, stream, t->device, t0, cf_now_ns());
    }
    errno = saved;
    return served;
}

bool cf_route_free(enum cf_api api, uint64_t ptr, CUstream stream, bool async, CUresult *rc)
{
    if (ptr == 0 || !cf_arena_enabled() || !cf_arena_owns(ptr)) return false;
    int saved = errno;
    /* Taken out first: the arena may hand ptr to another thread as soon as it is free. */
    struct cf_alloc *live = cf_rec_free_begin(ptr);
    uint64_t t0 = cf_now_ns();
    *rc = cf_arena_free(ptr, stream, async);
    uint64_t end = cf_now_ns();
    cf_rec_free_end(api, ptr, live, *rc, end - t0, end);
    errno = saved;
    return true;
}
