/* What the wrappers tell the record layer, in the shapes the wrappers need. All of
 * these run with the guard held, right after the real call returned (they read its
 * time from cf_call_ns); frees also tell it right before. */
#ifndef CF_HOOK_NOTE_H
#define CF_HOOK_NOTE_H

#include "hook/guard.h"
#include "record/record.h"

#include <cuda.h>
#include <driver_types.h>
#include <stdbool.h>
#include <stdint.h>

/* The answer when the real function does not exist in this process (warned once). */
CUresult cf_missing_driver(const char *name);
cudaError_t cf_missing_runtime(const char *name);

/* An allocation or registration of any kind but async/pool ones. device = -1: the
 * calling thread's current device. */
void cf_note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted, int device,
                   int result, bool oom);
/* cudaMalloc/cuMemAlloc families made by the real API: also fed to the shadow arena. */
void cf_note_device_alloc(enum cf_api api, uint64_t addr, uint64_t requested, int result, bool oom);

/* A free in flight. The record forgets the address before the real call: once that
 * call has given the address back, the driver may hand it to another thread, whose
 * allocation must not be taken for this one when the free is recorded. */
struct cf_free_note {
    enum cf_api api;
    uint64_t addr;
    struct cf_alloc *live; /* taken out of the live table; NULL: addr was not live */
    uint64_t stream;       /* a stream-ordered free's stream, else 0 */
    uint64_t t0;           /* the free's start, read by the record where the life ended */
};
void cf_note_free_begin(struct cf_free_note *f, enum cf_api api, uint64_t addr);
void cf_note_free_end(struct cf_free_note *f, int result);

/* rc = call, timed from the free's start (f.t0: no clock read of its own) into
 * cf_call_ns and cf_call_end_ns. */
#define CF_TIMED_FREE(rc, f, call)                                                                 \
    do {                                                                                           \
        rc = (call);                                                                               \
        cf_call_end_ns = cf_now_ns();                                                              \
        cf_call_ns = cf_call_end_ns - (f).t0 + (cf_call_end_ns == (f).t0);                         \
    } while (0)

/* CF_TIMED_FREE for 1 in cf_time_one_in calls (guard.h); otherwise no clock read at
 * all: the free's event is stamped with its start, and cf_call_ns is 0. */
#define CF_TIMED_FREE_SAMPLED(rc, f, call)                                                         \
    do {                                                                                           \
        if (cf_time_this()) {                                                                      \
            CF_TIMED_FREE(rc, f, call);                                                            \
        } else {                                                                                   \
            rc = (call);                                                                           \
            cf_call_end_ns = (f).t0;                                                               \
            cf_call_ns = 0;                                                                        \
        }                                                                                          \
    } while (0)

/* rc = call, a free of addr by api, wrapped like CF_WRAP (errno of the real call kept). */
#define CF_WRAP_FREE(rc, api, addr, call)                                                          \
    do {                                                                                           \
        if (!cf_hook_begin()) {                                                                    \
            rc = (call);                                                                           \
            break;                                                                                 \
        }                                                                                          \
        struct cf_free_note cf_free_;                                                              \
        cf_note_free_begin(&cf_free_, api, addr);                                                  \
        CF_TIMED_FREE(rc, cf_free_, call);                                                         \
        int cf_saved_errno_ = errno;                                                               \
        cf_note_free_end(&cf_free_, rc);                                                           \
        errno = cf_saved_errno_;                                                                   \
        cf_hook_end();                                                                             \
    } while (0)

/* A counted call that neither allocates nor frees (pools, mapping). */
void cf_note_call(enum cf_api api, int result);

/* Where a stream-ordered allocation goes: the stream's device, the pool it draws
 * from, and whether the stream is capturing (then it is a graph allocation). */
struct cf_async_target {
    int device;
    uint64_t pool, stream_key;
    bool is_default, capturing;
};
/* pool = 0: the device's current pool. ptsz: stream 0 means the per-thread stream. */
void cf_async_target(CUstream stream, bool ptsz, uint64_t pool, struct cf_async_target *t);
void cf_note_async_alloc(enum cf_api api, uint64_t addr, uint64_t requested, CUstream stream,
                         const struct cf_async_target *t, int result, bool oom);

/* An allocation cudafrag's arena served (hook/route.c), timed by the caller from
 * t0 to end: the real API was not called. */
void cf_note_arena_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted,
                         CUstream stream, int device, uint64_t t0, uint64_t end);

/* Pool bookkeeping seen through the pool APIs. */
void cf_note_pool_created(uint64_t pool, int device);
void cf_note_device_pool_set(int device, uint64_t pool);
void cf_note_device_pool_got(int device, uint64_t pool, bool is_default);

#endif
