/* What the wrappers tell the record layer, in the shapes the wrappers need. All of
 * these run with the guard held, right after the real call returned (they read its
 * time from cf_call_ns). */
#ifndef CF_HOOK_NOTE_H
#define CF_HOOK_NOTE_H

#include "record/record.h"

#include <cuda.h>
#include <driver_types.h>
#include <stdbool.h>
#include <stdint.h>

/* The answer when the real function does not exist in this process (warned once). */
CUresult cf_missing_driver(const char *name);
cudaError_t cf_missing_runtime(const char *name);
/* A driver result as the runtime API reports it. */
cudaError_t cf_runtime_error(CUresult rc);

/* An allocation or registration of any kind but async/pool ones. device = -1: the
 * record layer finds the current device. */
void cf_note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted, int device,
                   int result, bool oom);
/* cudaMalloc/cuMemAlloc families made by the real API: also fed to the shadow arena. */
void cf_note_device_alloc(enum cf_api api, uint64_t addr, uint64_t requested, int result, bool oom);
void cf_note_device_free(enum cf_api api, uint64_t addr, int result);
void cf_note_free(enum cf_api api, uint64_t addr, int result);
/* A counted call that neither allocates nor frees (pools, mapping). */
void cf_note_call(enum cf_api api, int result);

/* Where a stream-ordered allocation goes: the stream's device, the pool it draws
 * from, and whether the stream is capturing (then it is a graph allocation). */
struct cf_async_target {
    int device;
    uint64_t pool;
    bool is_default, capturing;
};
/* pool = 0: the device's current pool. ptsz: stream 0 means the per-thread stream. */
void cf_async_target(CUstream stream, bool ptsz, uint64_t pool, struct cf_async_target *t);
void cf_note_async_alloc(enum cf_api api, uint64_t addr, uint64_t requested, CUstream stream,
                         const struct cf_async_target *t, int result, bool oom);

/* Pool bookkeeping seen through the pool APIs. */
void cf_note_pool_created(uint64_t pool, int device);
void cf_note_device_pool_set(int device, uint64_t pool);
void cf_note_device_pool_got(int device, uint64_t pool, bool is_default);

#endif
