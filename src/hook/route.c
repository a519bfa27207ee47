#include "hook/cuda_abi.h"

#include "hook/route.h"

#include "arena/arena.h"
#include "base/ctx_state.h"

#include <errno.h>

/* The arena makes the primary context current when none is, as the runtime does
 * at its first call; a driver call instead fails without a context, so it goes
 * to the driver then. A kept answer: no driver call in a steady state. */
static bool context_for(enum cf_api api)
{
    if (api != CF_API_cuMemAlloc && api != CF_API_cuMemAllocPitch) return true;
    CUcontext ctx = NULL;
    return cf_current_context(&ctx) == CUDA_SUCCESS && ctx != NULL;
}

CF_HOT bool cf_route_alloc(enum cf_api api, uint64_t *out, uint64_t size)
{
    /* Size 0 keeps the real API's answer (success with a NULL pointer). While
     * any capture runs, the driver decides: a synchronous allocation is an
     * unsafe call that fails and invalidates a global-mode capture, or one of
     * the capturing thread in thread-local mode, and succeeds in relaxed mode. */
    if (size == 0 || cf_capture_in_progress() || !context_for(api) || !cf_arena_enabled())
        return false;
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

CF_HOT bool cf_route_alloc_async(enum cf_api api, uint64_t *out, uint64_t size, CUstream stream,
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

/* The arena refuses the free: the real call gets a pointer the driver refuses. */
static bool refuse(struct cf_free_note *f, enum cf_api api, uint64_t ptr, uint64_t *real_ptr)
{
    *real_ptr = cf_arena_refused_ptr(ptr);
    cf_note_free_begin(f, api, ptr);
    return false;
}

CF_HOT bool cf_route_free(struct cf_free_note *f, enum cf_api api, uint64_t ptr, CUstream stream,
                          bool async, uint64_t *real_ptr)
{
    *real_ptr = ptr;
    f->stream = 0; /* cf_route_free_async names the stream */
    if (ptr == 0 || !cf_arena_enabled() || !cf_arena_owns(ptr)) {
        cf_note_free_begin(f, api, ptr);
        return false;
    }
    int saved = errno;
    /* Taken out first: the arena may hand ptr to another thread as soon as it is free. */
    f->api = api;
    f->addr = ptr;
    f->live = cf_rec_free_begin(ptr, &f->t0);
    CUresult rc = cf_arena_free(ptr, stream, async);
    uint64_t end = cf_now_ns();
    if (rc == CUDA_SUCCESS)
        cf_rec_free_end(api, ptr, f->live, rc, end - f->t0, end);
    else
        /* Refused (interior or stale pointer, stream-ordered free of a block a
         * synchronous allocation took): the real call fails as natively, and the
         * runtime's last error with it; the caller records its result. */
        *real_ptr = cf_arena_refused_ptr(ptr);
    errno = saved;
    return rc == CUDA_SUCCESS;
}

CF_HOT bool cf_route_free_async(struct cf_free_note *f, enum cf_api api, uint64_t ptr,
                                CUstream stream, bool ptsz, uint64_t *real_ptr)
{
    /* Captured, the free becomes a graph node, which only a graph allocation may
     * take: the driver refuses arena memory there as it refuses the program's. */
    if (ptr != 0 && cf_arena_enabled() && cf_arena_owns(ptr) && cf_stream_capturing(stream, ptsz))
        return refuse(f, api, ptr, real_ptr);
    if (cf_route_free(f, api, ptr, stream, true, real_ptr)) return true;
    /* The block is the pool's again once the real free returns -- unless the free
     * is captured into a graph, where it happens at a launch. */
    if (!cf_capture_in_progress()) f->stream = cf_stream_key((uint64_t)(uintptr_t)stream, ptsz);
    return false;
}

enum cf_route_q cf_route_query(uint64_t ptr, struct cf_arena_block *blk)
{
    if (ptr == 0 || !cf_hook_enabled() || cf_in_hook || !cf_arena_enabled() || !cf_arena_owns(ptr))
        return CF_Q_NATIVE;
    return cf_arena_find_block(ptr, blk) ? CF_Q_BLOCK : CF_Q_STALE;
}
