/* Interfaces between the files of the record layer; nothing outside src/record/
 * includes this. Lock order: a live shard lock, then a device's footprint lock
 * (footprint.c), then a thread's trace buffer lock; the pool lock, then a
 * device's footprint lock; the site lock, the apply lock and the Python frames
 * lock alone. The meta allocator's locks nest inside any. */
#ifndef CF_RECORD_INTERNAL_H
#define CF_RECORD_INTERNAL_H

#include <pthread.h>

#include "record/event.h"
#include "record/record.h"
#include "record/trace.h"
#include "util/export.h"

/* ---- clock.c ---- */
void cf_tid_forget(void); /* in the child after fork */

/* ---- stack.c: libunwind, loaded privately on first use ---- */
/* Frames of the application above `caller` (the return address of the cf_rec_*
 * entry point), skipping cudafrag's own; returns how many (0 when stacks are off). */
uint32_t cf_stack_capture(uintptr_t frames[CF_MAX_FRAMES], uintptr_t caller);
uint64_t cf_stack_hash(const uintptr_t *frames, uint32_t n, enum cf_api api);
void cf_stack_configure(int depth);
void cf_stack_before_fork(void);
void cf_stack_after_fork_child(void);

/* ---- pyframes.c: Python frames, read only by a thread holding the GIL ---- */
/* Merges this thread's Python frames into frames[0..n) where the interpreter's
 * eval loop is, or appends a marker saying why there are none; returns the new
 * count (at most max). Returns n in a process without a Python interpreter. */
uint32_t cf_py_merge(uintptr_t *frames, uint32_t n, uint32_t max);
void cf_py_configure(int depth);
void cf_py_define(const struct cf_event *e); /* a PYFRAME event, replayed */
void cf_py_lock(void);                       /* fork: alone, before the meta locks */
void cf_py_unlock(void);

/* ---- site.c: call sites, under one lock ---- */
/* The site of a stack, created (with the next id) when new: *created says so. */
struct cf_site *cf_site_get(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                            uint32_t nframes, bool *created);
void cf_site_count(struct cf_site *site, uint64_t size, bool ok, uint64_t now);
void cf_site_free(struct cf_site *site, uint64_t size, uint64_t lifetime_ns);
void cf_site_lock(void);
void cf_site_unlock(void);

/* ---- modules.c: which object a frame is in, announced to the trace once ---- */
/* The trace's frame value of a return address: CF_FRAME(module id, offset). */
uint64_t cf_module_frame(uintptr_t addr);
/* Emits the SITE event of a new site (frames as module + offset). */
void cf_trace_site(const struct cf_site *site);

/* ---- live.c: live allocations, sharded by address ---- */
/* Insert a (replacing a stale entry at the same address); a->seq is set. Returns
 * true when a's device reached a new footprint peak. */
bool cf_live_insert(struct cf_alloc *a, uint64_t *seq);
struct cf_alloc *cf_live_remove(uint64_t addr, uint64_t now); /* NULL: not live */
/* Undo cf_live_remove after a free that failed; a is retired instead when its
 * address has been recorded again meanwhile. */
void cf_live_restore(struct cf_alloc *a, uint64_t now);
void cf_live_lock_all(void);
void cf_live_unlock_all(void);
void cf_live_build_view(void); /* cf_rec.live, with all shards locked */
void cf_live_drop_view(void);
/* The end of an allocation's life: site, pool, lifetime histogram, node freed. */
void cf_rec_retire(struct cf_alloc *a, uint64_t now);

/* ---- footprint.c: per-device live bytes and footprint, the event order ---- */
uint64_t cf_seq_next(void);
/* Account a's entry into (exit from) the live set; return the event's seq and set
 * *new_peak when the device's footprint reached a new peak. */
uint64_t cf_fp_alloc(const struct cf_alloc *a, bool *new_peak);
uint64_t cf_fp_free(const struct cf_alloc *a, uint64_t now);
/* A series read from the driver: pool reserved (value = delta), graph pool
 * (value = reserved, used), arena mapped (value). Returns the event's seq. */
uint64_t cf_fp_series(int device, enum cf_series series, int64_t value, uint64_t used,
                      uint64_t now);
/* A cuMemGetInfo sample held against the computed footprint. */
uint64_t cf_fp_meminfo(int device, uint64_t used, uint64_t total, uint64_t now);
void cf_fp_lock_all(void);
void cf_fp_unlock_all(void);
/* Emit a SERIES event (also used by footprint.c for the arena). */
void cf_trace_series(uint64_t seq, uint64_t now, int device, enum cf_series series, uint64_t value,
                     uint64_t used);

/* ---- metrics.c: counters, histograms, device statistics (atomics) ---- */
/* result: the code the call returned; non-zero counts as a failure with that code. */
void cf_metrics_api(enum cf_api api, uint64_t bytes, int result, uint64_t ns);
void cf_metrics_size(uint64_t size);
void cf_metrics_lifetime(uint64_t ns, uint64_t bytes);
unsigned cf_hist_bin(uint64_t v);
uint64_t cf_atomic_max(uint64_t *slot, uint64_t v); /* returns the previous maximum */

/* ---- pool.c: pools by handle, under one lock ---- */
void cf_pool_account(uint64_t pool, int device, int64_t bytes);
/* After an allocation from pool, the driver may have grown it (by more than the
 * allocation: frees pending on other streams are not reusable yet), so its
 * reserved bytes are read after each one; all its attributes once per interval.
 * *reserved: the last value read. */
enum cf_pool_read { CF_POOL_READ_NONE, CF_POOL_READ_RESERVED, CF_POOL_READ_ALL };
enum cf_pool_read cf_pool_wants_read(uint64_t pool, uint64_t now, uint64_t interval_ns,
                                     uint64_t *reserved);
uint64_t cf_pool_store_reserved(uint64_t pool, int device, uint64_t reserved, uint64_t now);
struct cf_pool_sample {
    uint64_t reserved_cur, reserved_high, used_cur, used_high, threshold;
};
/* Stores a sample; returns its seq (the reserved change is a footprint event). */
uint64_t cf_pool_store_sample(uint64_t pool, int device, const struct cf_pool_sample *s,
                              uint64_t now);
unsigned cf_pool_handles(uint64_t *out, unsigned max); /* pools not destroyed */
void cf_pool_lock(void);
void cf_pool_unlock(void);
/* The pool operations as applied (in-process and in replay); 'reserved' of a
 * destroyed pool goes back to its device. */
void cf_pool_apply(const struct cf_event *e);
uint64_t cf_pool_apply_seq(const struct cf_event *e); /* seq of a footprint change, or 0 */

/* ---- sample.c: the documented driver calls ---- */
int cf_sample_resolve_device(int device);
void cf_sample_after_alloc(const struct cf_alloc *a, bool new_peak, uint64_t now);
/* cuMemGetInfo at an allocation failure: free and total, 0 when unknown. */
void cf_sample_oom(uint64_t stream, int device, uint64_t *free_b, uint64_t *total_b);
void cf_sample_pool_now(uint64_t pool, int device);
void cf_sample_configure(uint64_t interval_ns);

/* ---- apply.c: events to tables, shared by the process and the replay ---- */
struct cf_event;
/* Returns true at a new footprint peak; *copy is the entry as inserted. */
bool cf_apply_alloc(struct cf_event *e, struct cf_site *site, struct cf_alloc *copy);
/* Takes addr out of the live set (NULL: not live), then cf_apply_free finishes. */
struct cf_alloc *cf_apply_free_begin(uint64_t addr, uint64_t now);
void cf_apply_free(struct cf_event *e, struct cf_alloc *a);
void cf_apply_graph_high(const struct cf_event *e);
void cf_apply_mark(const struct cf_event *e);
void cf_apply_lock(void); /* the OOM list and the graph high-water marks */
void cf_apply_unlock(void);
void cf_emit(struct cf_event *e); /* fills seq when 0, then traces */

#endif
