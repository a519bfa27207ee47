/* Interfaces between the files of the record layer; nothing outside src/record/
 * includes this. Lock order: the site table's lock and the pool table's lock
 * alone; slot locks (footprint.c), two at once only in ascending order, then a
 * thread's trace buffer lock; the apply lock and the Python frames lock alone.
 * The meta allocator's locks and the thread registry's nest inside any. */
#ifndef CF_RECORD_INTERNAL_H
#define CF_RECORD_INTERNAL_H

#include <pthread.h>

#include "record/event.h"
#include "record/lock.h"
#include "record/record.h"
#include "record/trace_write.h"
#include "base/export.h"
#include "base/lockwait.h"

/* ---- emit.c: the event sink ---- */
uint64_t cf_seq_next(void);
void cf_emit(struct cf_event *e); /* fills seq when 0, then traces */
/* Emit a SERIES event (footprint.c for the arena, sample.c for the graph pool). */
void cf_trace_series(uint64_t seq, uint64_t now, int device, enum cf_series series, uint64_t value,
                     uint64_t used);

/* ---- thread.c: what a thread counts on its own, and its caches ---- */
#define CF_SITE_REFS   8 /* call sites a thread remembers (direct-mapped by stack hash) */
#define CF_KNOWN_SIZES 3 /* sizes a thread knows are in the distinct-size set */

/* A call site as its last use on this thread left it: the site table is not
 * searched and the site's cold lines are not read (site.c). */
struct cf_site_ref {
    uint64_t hash;
    struct cf_site *site;       /* NULL: empty */
    uint64_t last_size;         /* size + 1 of the last allocation noted at the site (0: none) */
} __attribute__((aligned(32))); /* two to a cache line */

struct cf_bin {
    uint64_t count, bytes;
};

/* One per thread (reused after the thread exits), from the meta allocator. The
 * owner writes without atomics or locks, with relaxed stores; cf_rec_collect
 * reads with relaxed loads. Laid out so that one call touches few lines. */
struct cf_thread {
    /* Changed under the slot lock of the live table (live.c), so that
     * cf_rec_lock_all, which holds every slot, finds them agreeing with it. */
    uint64_t allocs, frees;
    uint64_t pool_handle; /* pool.c: the pool this thread used last */
    struct cf_pool *pool;
    uint64_t known_sizes[CF_KNOWN_SIZES]; /* metrics.c; 0: empty */
    int32_t last_slot;                    /* live.c: where its last allocation went */
    struct cf_site_ref sites[CF_SITE_REFS] __attribute__((aligned(64)));
    struct cf_api_stats api[CF_API_COUNT] __attribute__((aligned(64)));
    struct cf_bin sizes[CF_HIST_BINS] __attribute__((aligned(64)));
    struct cf_bin lifetimes[CF_HIST_BINS];
    struct cf_thread *next; /* the registry, under its lock */
    bool owned;             /* a live thread counts in it */
};

extern __thread struct cf_thread *cf_thread_tls __attribute__((tls_model("initial-exec")));
CF_COLD struct cf_thread *cf_thread_attach(void); /* NULL: no memory, nothing is counted */
/* The calling thread's block. */
static inline struct cf_thread *cf_thread_self(void)
{
    struct cf_thread *t = cf_thread_tls;
    return CF_LIKELY(t != NULL) ? t : cf_thread_attach();
}
/* Owner-side addition: a plain add, but a single relaxed store for the readers. */
static inline void cf_count(uint64_t *slot, uint64_t v)
{
    __atomic_store_n(slot, __atomic_load_n(slot, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}
/* cf_rec.total_allocs/total_frees from every block (the crash summary reads them
 * without locks, so live.c refreshes them now and then). */
CF_COLD void cf_thread_publish_totals(void);
/* The cf_rec_* of the same names (record.h): the threads' counters. */
void cf_thread_collect(void);
bool cf_thread_collect_until(const struct timespec *deadline);
uint64_t cf_thread_api_calls(enum cf_api api);
uint64_t cf_thread_calls_total(void);
bool cf_thread_any_activity(void);
void cf_thread_lock(void); /* fork: the registry, after the record locks */
void cf_thread_unlock(void);
void cf_thread_after_fork_child(void); /* also releases the registry lock */

/* ---- stack.c: libunwind, loaded privately at init (or on first use) ---- */
/* Frames of the application above `caller` (the return address of the cf_rec_*
 * entry point), skipping cudafrag's own; returns how many (0 when stacks are off),
 * -1 when the thread's stack has too little room left to unwind. */
int cf_stack_capture(uintptr_t frames[CF_MAX_FRAMES], uintptr_t caller);
/* At init: libunwind loaded and bound, one unwind made, while the stack is large. */
void cf_stack_warm_up(void);
uint64_t cf_stack_hash(const uintptr_t *frames, uint32_t n, enum cf_api api);
void cf_stack_configure(int depth);
void cf_stack_before_fork(void);
void cf_stack_after_fork_child(void);

/* ---- pyframes.c: Python frames, interned; read from memory (pyread.c) or, for
 * versions whose layout is not known, through the C API by a GIL holder ---- */
/* Merges this thread's Python frames into frames[0..n) where the interpreter's
 * eval loop is, or appends a marker saying why there are none; returns the new
 * count (at most max). Returns n in a process without a Python interpreter. */
uint32_t cf_py_merge(uintptr_t *frames, uint32_t n, uint32_t max);
void cf_py_configure(int depth, bool memory); /* memory: CUDAFRAG_PYTHON_MEMORY */
void cf_py_define(const struct cf_event *e);  /* a PYFRAME event, replayed */
void cf_py_lock(void);                        /* fork: alone, before the meta locks */
void cf_py_unlock(void);

/* ---- pyread.c: this thread's Python frames read from memory, without the GIL ---- */
/* A Python frame as read: its code object with what identifies it (a code object
 * freed and another made at its address is told apart by these), and where it is. */
struct cf_py_raw {
    uintptr_t code, filename, name, linetable; /* name: co_qualname (3.11+) or co_name */
    int32_t firstlineno;
    int32_t offset;  /* of its instruction in bytes; -1: before the first */
    bool ends_entry; /* the outermost frame of one C call of the eval loop */
};
/* The layout of CPython `version` (PY_VERSION_HEX); false when it is not known. */
bool cf_pyread_setup(unsigned long version);
/* Up to max frames of tstate (this thread's own), innermost first; -1 when what
 * was read does not look like CPython's frames. */
int cf_pyread_walk(uintptr_t tstate, struct cf_py_raw *out, uint32_t max);
/* "file\0function\0" of a frame's code (the end of a long file name); the
 * length with both '\0's, 0 when unreadable. */
uint32_t cf_pyread_names(const struct cf_py_raw *f, char *text, uint32_t file_cap,
                         uint32_t func_cap, uint32_t *file_len);
uint32_t cf_pyread_line(const struct cf_py_raw *f); /* 0: unknown */

/* ---- site.c: call sites; the table under one lock, a site's figures under the
 * lock of its home slot ---- */
/* The site of a stack, created (with the next id) when new: *created says so. */
struct cf_site *cf_site_get(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                            uint32_t nframes, bool *created);
/* The slot whose lock guards the site's figures: the slot of its first event
 * (`slot`), fixed from then on. */
int cf_site_home(struct cf_site *site, int slot);
/* With the home slot locked: an allocation, and the end of one's life. */
void cf_site_count_locked(struct cf_site *site, uint64_t size, uint64_t now, bool graph);
/* sign -1: an allocation's end; +1: undone (its free failed). */
void cf_site_free_locked(struct cf_site *site, uint64_t size, uint64_t lifetime_ns, int sign);
CF_COLD void cf_site_fail(struct cf_site *site, int slot); /* a failed allocation; locks */
void cf_site_lock(void);                                   /* the table */
void cf_site_unlock(void);
bool cf_site_lock_until(const struct timespec *deadline);

/* ---- modules.c: which object a frame is in, announced to the trace once ---- */
/* The trace's frame value of a return address: CF_FRAME(module id, offset). */
uint64_t cf_module_frame(uintptr_t addr);
/* Emits the SITE event of a new site (frames as module + offset). */
CF_COLD void cf_trace_site(const struct cf_site *site);

/* ---- live.c: live allocations, a table per slot ---- */
/* Insert a (replacing a stale entry at the same address) with a->seq set, and
 * count it at its site and pool, all under a's slot lock when they live there.
 * Returns true when a's device reached a new footprint peak. */
bool cf_live_insert(struct cf_alloc *a, struct cf_site *site, struct cf_pool *pool, uint64_t *seq);
/* addr out of the live set (NULL: not live), its site's and pool's figures with
 * it, in the critical section of its slot when they live there: its life ends at
 * *end, the clock read in that section when 0 (in process: the free's start, the
 * time of the free's event less its duration). */
struct cf_alloc *cf_live_remove(uint64_t addr, uint64_t now, uint64_t *end);
/* Undo cf_live_remove after a free that failed; a is forgotten instead when its
 * address has been recorded again meanwhile. */
void cf_live_restore(struct cf_alloc *a, uint64_t now);
/* After cf_live_remove, the free done: the lifetime histogram, the node freed. */
void cf_live_forget(struct cf_alloc *a);
/* A copy of the live allocation at addr (cf_rec_live_at); false when not live. */
bool cf_live_copy(uint64_t addr, struct cf_alloc *out);
/* The end of an allocation's life not seen as a free (replaced in its table):
 * site, pool, lifetime histogram, node freed. */
CF_COLD void cf_live_retire(struct cf_alloc *a, uint64_t now);

/* ---- footprint.c: the slots, their locks and footprints, the event order ---- */
/* A slot per device, one for pinned host memory, one for managed memory, and one
 * for allocations of no device (graph memory). A slot's lock guards its live
 * table (live.c), its live bytes and footprint, and the figures of the call sites
 * and pools whose home it is (site.c, pool.c): an intercepted call takes one
 * lock. Two slots are only ever locked at once in ascending order; the slot of
 * no device comes first, so a pool met before its device was known can take its
 * device's slot after its own. */
#define CF_SLOT_OTHER   0
#define CF_SLOT_HOST    (CF_MAX_DEVICES + 1)
#define CF_SLOT_MANAGED (CF_MAX_DEVICES + 2)
#define CF_SLOTS        (CF_MAX_DEVICES + 3)
struct cf_live_pair {
    uint64_t addr;
    struct cf_alloc *a; /* NULL: empty */
};
struct cf_live_table {
    struct cf_live_pair *pairs;
    uint64_t mask;  /* pairs - 1; 0 before the first insert */
    uint64_t count; /* pairs in use */
};
/* A slot's lock, its live table's head and its page counts: one cache line. */
struct page_ref;
struct cf_slot {
    struct cf_lock lock;
    struct cf_live_table live;
    struct page_ref *edges; /* first/last pages of live raw allocations */
    uint64_t interior_pages, edge_pages;
} __attribute__((aligned(64)));
extern struct cf_slot cf_slots[CF_SLOTS];

/* Device d: slot d + 1. */
static inline int cf_slot_of(enum cf_kind kind, int device)
{
    if (kind == CF_KIND_HOST) return CF_SLOT_HOST;
    if (kind == CF_KIND_MANAGED) return CF_SLOT_MANAGED;
    if (kind == CF_KIND_GRAPH || device < 0 || device >= CF_MAX_DEVICES) return CF_SLOT_OTHER;
    return device + 1;
}
static inline void cf_slot_lock(int slot)
{
    cf_lock(&cf_slots[slot].lock);
}
static inline void cf_slot_unlock(int slot)
{
    cf_unlock(&cf_slots[slot].lock);
}
/* With the slot (a's) locked: account a's entry into (exit from) the live set;
 * return the event's seq and set *new_peak when the device's footprint reached a
 * new peak. */
uint64_t cf_fp_alloc(const struct cf_alloc *a, int slot, bool *new_peak);
uint64_t cf_fp_free(const struct cf_alloc *a, int slot, uint64_t now);
/* With the slot locked: its device's allocation and free counts change (a free
 * that failed gives its count back). */
void cf_fp_count(int slot, int64_t allocs, int64_t frees);
/* A series read from the driver: pool reserved (value = delta), graph pool
 * (value = reserved, used), arena mapped (value). Returns the event's seq. The
 * _locked form: with the device's slot locked. */
uint64_t cf_fp_series(int device, enum cf_series series, int64_t value, uint64_t used,
                      uint64_t now);
uint64_t cf_fp_series_locked(int device, enum cf_series series, int64_t value, uint64_t used,
                             uint64_t now);
/* A cuMemGetInfo sample held against the computed footprint. */
uint64_t cf_fp_meminfo(int device, uint64_t used, uint64_t total, uint64_t now);
void cf_fp_lock_all(void); /* every slot */
void cf_fp_unlock_all(void);
void cf_fp_forget_sleepers(void); /* in a child after fork */
/* At init: whether the arena's mapped bytes are read at its events (the process)
 * or come as SERIES events (a trace). */
void cf_fp_follow_arena(bool on);
bool cf_fp_lock_all_until(const struct timespec *deadline); /* every device or none */

/* ---- metrics.c: counters and histograms (per thread), distinct sizes ---- */
/* result: the code the call returned; non-zero counts as a failure with that code. */
void cf_metrics_api(enum cf_api api, uint64_t bytes, int result, uint64_t ns);
void cf_metrics_size(uint64_t size);
void cf_metrics_lifetime(uint64_t ns, uint64_t bytes);
unsigned cf_hist_bin(uint64_t v);
uint64_t cf_atomic_max(uint64_t *slot, uint64_t v);       /* returns the previous maximum */
uint64_t cf_metrics_estimate_granted(uint64_t requested); /* cf_rec_estimate_granted */

/* ---- pool.c: pools by handle; the table under one lock, a pool's fields under
 * the lock of its home slot (its device's, or the slot of no device) ---- */
/* The pool of a handle, added (device -1: not known yet) when new; NULL: no memory. */
struct cf_pool *cf_pool_get(uint64_t handle, int device);
/* With the pool's home slot locked: an allocation from it. */
void cf_pool_count_locked(struct cf_pool *p, uint64_t bytes);
/* With the pool's home slot locked: a free from it (sign -1), or undone (+1). */
void cf_pool_free_locked(struct cf_pool *p, uint64_t bytes, int sign);
/* An allocation from pool may have grown it (by more than the allocation: frees
 * pending on other streams are not reusable yet), so its reserved bytes are read
 * after each one's real call, before it is recorded; all its attributes once per
 * interval. *reserved: the last value read. */
enum cf_pool_read { CF_POOL_READ_NONE, CF_POOL_READ_RESERVED, CF_POOL_READ_ALL };
enum cf_pool_read cf_pool_wants_read(uint64_t pool, int device, uint64_t now, uint64_t interval_ns,
                                     uint64_t *reserved);
uint64_t cf_pool_store_reserved(uint64_t pool, int device, uint64_t reserved, uint64_t now);
struct cf_pool_sample {
    uint64_t reserved_cur, reserved_high, used_cur, used_high, threshold;
};
/* Stores a sample; returns its seq (the reserved change is a footprint event). */
uint64_t cf_pool_store_sample(uint64_t pool, int device, const struct cf_pool_sample *s,
                              uint64_t now);
unsigned cf_pool_handles(uint64_t *out, unsigned max); /* pools not destroyed */
void cf_pool_lock(void);                               /* the table */
void cf_pool_unlock(void);
/* The pool operations as applied (in-process and in replay); 'reserved' of a
 * destroyed pool goes back to its device. */
void cf_pool_apply(const struct cf_event *e);
uint64_t cf_pool_apply_seq(const struct cf_event *e); /* seq of a footprint change, or 0 */
bool cf_pool_lock_until(const struct timespec *deadline);

/* ---- sample.c: the documented driver calls ---- */
/* What the sampling after an allocation needs to know of it: once inserted, the
 * node may be freed by another thread. (A copy of the whole node cost three
 * cache lines of stack on every allocation.) */
struct cf_alloc_brief {
    uint64_t stream, pool, size;
    int32_t device;
    uint8_t kind;
};
int cf_sample_resolve_device(int device);
/* After the real call, before the allocation is recorded: the read of the pool it
 * came from, so that the growth that served it is in the footprint at the instant
 * it becomes live (footprint >= live at every event, in the process and in a
 * replay). What the read found, for the cross-check after. */
enum cf_pool_grew { CF_POOL_SAME, CF_POOL_NEW_PEAK, CF_POOL_CAPTURING };
enum cf_pool_grew cf_sample_before_alloc(const struct cf_alloc_brief *a, uint64_t now);
/* After it is recorded: the cuMemGetInfo cross-check at a new footprint peak. */
void cf_sample_after_alloc(const struct cf_alloc_brief *a, bool new_peak, enum cf_pool_grew pool,
                           uint64_t now);
/* cuMemGetInfo at an allocation failure: free and total, 0 when unknown. */
CF_COLD void cf_sample_oom(uint64_t stream, int device, uint64_t *free_b, uint64_t *total_b);
void cf_sample_pool_now(uint64_t pool, int device);
void cf_sample_configure(uint64_t interval_ns);
/* After a synchronization: the reserved bytes of pools above their threshold. */
void cf_sample_after_sync(void);
/* Pool memory may have gone back to the device (trim, destruction, failed request). */
void cf_sample_pools_may_shrink(void);
/* The cf_rec_* of these names (record.h). */
void cf_sample_thread_seen(void);
void cf_sample_pool_freed(const struct cf_alloc *a, uint64_t stream);
void cf_sample_graph_launched(uint64_t stream);
bool cf_sample_final(void);

/* ---- region.c: the cf_rec_region_* of these names (record.h) ---- */
int cf_region_push(const char *name);
int cf_region_pop(void);
int cf_region_peak(int device, uint64_t *live, uint64_t *footprint);

/* ---- apply.c: events to tables, shared by the process and the replay ---- */
struct cf_event;
/* Returns true at a new footprint peak. */
bool cf_apply_alloc(struct cf_event *e, struct cf_site *site);
/* Takes addr out of the live set (NULL: not live), then cf_apply_free finishes. */
struct cf_alloc *cf_apply_free_begin(uint64_t addr, uint64_t now, uint64_t *end);
void cf_apply_free(struct cf_event *e, struct cf_alloc *a);
void cf_apply_graph_high(const struct cf_event *e);
void cf_apply_mark(const struct cf_event *e);
void cf_apply_lock(void); /* the OOM list and the graph high-water marks */
void cf_apply_unlock(void);
bool cf_apply_lock_until(const struct timespec *deadline);
/* One decoded event applied in seq order (cf_rec_apply_event). */
void cf_apply_event(const struct cf_event *e);

/* ---- read.c: the report's copy ---- */
struct cf_rec_read;
/* With the CF_REC_HELD_* locks `locks` held: r filled from the record (what a
 * lock not held guards left empty). 0, or -1 when memory ran out (r freed). */
int cf_read_copy(struct cf_rec_read *r, unsigned locks);
/* After the copy, the locks let go (the Python frames' lock is taken alone): the
 * names of its sites' Python frames. 0, or -1 when memory ran out. */
int cf_read_pynames(struct cf_rec_read *r);
void cf_read_free(struct cf_rec_read *r);

#endif
