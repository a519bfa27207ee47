/* Interfaces between the files of the record layer; nothing outside src/record/
 * includes this. Lock order: each record lock is taken alone (no record lock is
 * held while another is taken), and the meta allocator's locks nest inside any. */
#ifndef CF_RECORD_INTERNAL_H
#define CF_RECORD_INTERNAL_H

#include <pthread.h>

#include "record/record.h"
#include "util/export.h"

/* ---- clock.c ---- */
void cf_tid_forget(void); /* in the child after fork */

/* ---- stack.c: libunwind, loaded privately on first use ---- */
/* Frames of the application above `caller` (the return address of the cf_rec_*
 * entry point), skipping cudafrag's own; returns how many (0 when stacks are off). */
uint32_t cf_stack_capture(uintptr_t frames[CF_MAX_FRAMES], uintptr_t caller);
uint64_t cf_stack_hash(const uintptr_t *frames, uint32_t n, enum cf_api api);
void cf_stack_configure(int depth);
void cf_stack_after_fork_child(void);

/* ---- site.c: call sites, under one lock ---- */
struct cf_site *cf_site_alloc(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                              uint32_t nframes, uint64_t size, bool ok, uint64_t now);
void cf_site_free(struct cf_site *site, uint64_t size, uint64_t lifetime_ns);
void cf_site_lock(void);
void cf_site_unlock(void);

/* ---- live.c: live allocations, sharded by address ---- */
/* Insert a (replacing a stale entry at the same address); returns true when
 * a's device reached a new peak of live bytes. */
bool cf_live_insert(struct cf_alloc *a);
struct cf_alloc *cf_live_remove(uint64_t addr); /* NULL: not live */
/* Undo cf_live_remove after a free that failed; a is retired instead when its
 * address has been recorded again meanwhile. */
void cf_live_restore(struct cf_alloc *a);
void cf_live_lock_all(void);
void cf_live_unlock_all(void);
void cf_live_build_view(void); /* cf_rec.live, with all shards locked */
void cf_live_drop_view(void);
/* The end of an allocation's life: site, pool, lifetime histogram, node freed. */
void cf_rec_retire(struct cf_alloc *a, uint64_t now);

/* ---- metrics.c: counters, histograms, device statistics (atomics) ---- */
void cf_metrics_api(enum cf_api api, uint64_t bytes, bool failed, uint64_t ns);
bool cf_metrics_live_add(const struct cf_alloc *a, uint64_t now);
void cf_metrics_live_sub(const struct cf_alloc *a);
void cf_metrics_size(uint64_t size);
void cf_metrics_lifetime(uint64_t ns, uint64_t bytes);
unsigned cf_hist_bin(uint64_t v);
/* cf_rec.dev[d], cf_rec.host, or NULL when the kind holds no device memory (graph). */
struct cf_device_stats *cf_metrics_stats_for(enum cf_kind kind, int device);
uint64_t cf_atomic_max(uint64_t *slot, uint64_t v); /* returns the previous maximum */

/* ---- pool.c: pools by handle, under one lock ---- */
void cf_pool_account(uint64_t pool, int device, int64_t bytes);
bool cf_pool_claim_sample(uint64_t pool, uint64_t now, uint64_t interval_ns);
struct cf_pool_sample {
    uint64_t reserved_cur, reserved_high, used_cur, used_high, threshold;
};
void cf_pool_store_sample(uint64_t pool, const struct cf_pool_sample *s);
unsigned cf_pool_handles(uint64_t *out, unsigned max); /* pools not destroyed */
void cf_pool_lock(void);
void cf_pool_unlock(void);

/* ---- sample.c: the documented driver calls ---- */
int cf_sample_resolve_device(int device);
void cf_sample_after_alloc(const struct cf_alloc *a, bool new_peak, uint64_t now);
void cf_sample_oom(const struct cf_alloc_info *ai, int device, struct cf_site *site, uint64_t now);
void cf_sample_configure(uint64_t interval_ns);
void cf_sample_lock_all(void);
void cf_sample_unlock_all(void);

#endif
