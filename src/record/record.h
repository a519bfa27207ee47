/* The record layer: what the hooks tell us, kept in uthash tables, read by the
 * report. Hooks call cf_rec_*() after the real CUDA call returned (frees also
 * before it: cf_rec_free_begin); nothing here makes a CUDA call except the
 * documented sampling calls (sample.c). */
#ifndef CF_RECORD_H
#define CF_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/export.h"
#include "base/table.h"

#define CF_MAX_FRAMES  64
#define CF_SITE_SIZES  8 /* distinct sizes a site remembers (size_seen) */
#define CF_MAX_DEVICES 64
#define CF_HIST_BINS   64

/* What kind of memory an API hands out. */
// clang-format off
#define CF_KINDS(X) X(DEVICE, "device") X(MANAGED, "managed") X(HOST, "host") X(VMM, "vmm")  \
    X(POOL, "pool") X(GRAPH, "graph") X(ARRAY, "array")
// clang-format on
enum cf_kind {
#define CF_KIND_ENUM(id, str) CF_KIND_##id,
    CF_KINDS(CF_KIND_ENUM)
#undef CF_KIND_ENUM
        CF_KIND_COUNT
};

/* Every user-level entry point we count: X(id, kind, role). role: A = allocates,
 * F = frees, O = other (pool management, mapping, lookups). The id is the API name
 * the user called; _ptsz variants count under their base name. */
// clang-format off
#define CF_APIS(X)                                                                                 \
    X(cudaMalloc, DEVICE, A) X(cudaFree, DEVICE, F) X(cudaMallocPitch, DEVICE, A)                  \
    X(cudaMalloc3D, DEVICE, A) X(cudaMallocArray, ARRAY, A) X(cudaMalloc3DArray, ARRAY, A)         \
    X(cudaFreeArray, ARRAY, F) X(cudaMallocManaged, MANAGED, A) X(cudaMallocHost, HOST, A)         \
    X(cudaHostAlloc, HOST, A) X(cudaFreeHost, HOST, F) X(cudaHostRegister, HOST, A)                \
    X(cudaHostUnregister, HOST, F) X(cudaMallocAsync, POOL, A) X(cudaFreeAsync, POOL, F)           \
    X(cudaMallocFromPoolAsync, POOL, A) X(cudaMemPoolCreate, POOL, O)                              \
    X(cudaMemPoolDestroy, POOL, O) X(cudaMemPoolSetAttribute, POOL, O)                             \
    X(cudaMemPoolGetAttribute, POOL, O) X(cudaMemPoolTrimTo, POOL, O)                              \
    X(cudaDeviceSetMemPool, POOL, O) X(cudaDeviceGetMemPool, POOL, O)                              \
    X(cudaDeviceGetDefaultMemPool, POOL, O) X(cudaGraphAddMemAllocNode, GRAPH, A)                  \
    X(cudaGraphAddMemFreeNode, GRAPH, F) X(cuMemAlloc, DEVICE, A) X(cuMemFree, DEVICE, F)          \
    X(cuMemAllocPitch, DEVICE, A) X(cuMemAllocManaged, MANAGED, A) X(cuMemAllocHost, HOST, A)      \
    X(cuMemHostAlloc, HOST, A) X(cuMemFreeHost, HOST, F) X(cuMemHostRegister, HOST, A)             \
    X(cuMemHostUnregister, HOST, F) X(cuMemAllocAsync, POOL, A) X(cuMemFreeAsync, POOL, F)         \
    X(cuMemAllocFromPoolAsync, POOL, A) X(cuMemPoolCreate, POOL, O) X(cuMemPoolDestroy, POOL, O)   \
    X(cuMemPoolSetAttribute, POOL, O) X(cuMemPoolGetAttribute, POOL, O)                            \
    X(cuMemPoolTrimTo, POOL, O) X(cuDeviceSetMemPool, POOL, O) X(cuDeviceGetMemPool, POOL, O)      \
    X(cuDeviceGetDefaultMemPool, POOL, O) X(cuMemCreate, VMM, A) X(cuMemRelease, VMM, F)           \
    X(cuMemMap, VMM, O) X(cuMemUnmap, VMM, O) X(cuMemAddressReserve, VMM, O)                       \
    X(cuMemAddressFree, VMM, O) X(cuGraphAddMemAllocNode, GRAPH, A)                                \
    X(cuGraphAddMemFreeNode, GRAPH, F)
// clang-format on

enum cf_api {
#define CF_API_ENUM(name, kind, role) CF_API_##name,
    CF_APIS(CF_API_ENUM)
#undef CF_API_ENUM
        CF_API_COUNT
};

struct cf_api_info {
    const char *name;
    enum cf_kind kind;
    char role; /* 'A', 'F' or 'O' */
};
extern const struct cf_api_info cf_api_info[CF_API_COUNT];
extern const char *const cf_kind_name[CF_KIND_COUNT];

/* A call site: one distinct stack (or one API when stacks are off). The first two
 * cache lines (a node starts on a line: its allocator class is a multiple of 64)
 * are what an allocation or a free from the site reads and writes; the frames,
 * the first sizes and the table handle come after. */
struct cf_site {
    int32_t home;            /* the slot whose lock guards the figures (site.c); -1: none yet */
    uint32_t distinct_sizes; /* exact up to CF_SITE_SIZES; CF_SITE_SIZES + 1 means more */
    uint64_t calls, bytes, live_bytes, peak_live_bytes, live_count;
    uint64_t min_size, max_size;
    uint64_t frees, failures;
    uint64_t graph_calls; /* of calls, those made as graph memory (a capturing stream) */
    uint64_t lifetime_ns_total, lifetime_count;
    uint64_t first_ns, last_ns; /* for the allocation rate */
    uint64_t hash;              /* key */
    uint32_t id;                /* small number the trace refers to it by, from 1 */
    enum cf_api api;            /* first API seen at this site */
    uint32_t nframes;
    uint64_t size_seen[CF_SITE_SIZES]; /* the first distinct sizes, for distinct_sizes */
    uintptr_t *frames; /* nframes return addresses, innermost first (allocated with the site) */
    UT_hash_handle hh;
};

/* A live allocation, keyed by address (VMM: by physical handle). */
struct cf_alloc {
    uint64_t addr;               /* key */
    uint64_t requested, granted; /* granted = 0 when unknown */
    uint64_t stream, pool;
    uint64_t t_ns;
    uint64_t seq;   /* where it entered (then left) the live set, in event order */
    uint64_t t_end; /* once out of the live set: the end of its life (its free's start) */
    struct cf_site *site;
    struct cf_pool *pool_rec; /* the pool's record (pool != 0 and stream-ordered), else NULL */
    int32_t device;
    uint32_t tid;
    uint8_t api;            /* enum cf_api */
    uint8_t kind;           /* enum cf_kind */
    bool arena;             /* served by cudafrag's arena */
    bool granted_estimated; /* granted is the documented rounding estimate */
    bool shadowed;          /* fed to the host-only arena model */
    /* No table handle: the live tables (live.c) hold (address, node) pairs, and
     * the report's copy walks them (read.c). */
};

/* A memory pool seen through the pool APIs or async allocations. The first cache
 * line (a node starts on a line) is what an allocation from the pool and its free
 * read and write. */
struct cf_pool {
    int32_t home; /* the slot whose lock guards every field but handle and hh (pool.c) */
    int device;
    bool is_default, destroyed, created_by_app;
    bool shrunk; /* the last change of reserved_cur was downwards */
    uint64_t allocs, frees, live_bytes, peak_live_bytes;
    uint64_t samples, last_sample_ns; /* cuMemPoolGetAttribute samples taken */
    uint64_t reserved_cur, reserved_high, used_cur, used_high; /* last sampled */
    uint64_t release_threshold;
    uint64_t shrinks; /* reserved went down between samples (memory returned) */
    uint64_t regrows; /* reserved went up again after a shrink */
    uint64_t trims;
    uint64_t live_at_read; /* live_bytes when reserved was last read */
    uint64_t handle;       /* key */
    UT_hash_handle hh;
};

struct cf_oom {
    enum cf_api api;
    int device;
    uint64_t request;
    uint64_t free_bytes, total_bytes; /* cuMemGetInfo at the failure; 0 if unknown */
    uint64_t t_ns;
    struct cf_site *site;
};
#define CF_MAX_OOMS 32

/* A marker the program put into the run (cudafrag_mark). */
struct cf_user_mark {
    uint64_t t_ns;
    char text[64];
};
#define CF_MAX_MARKS 64

/* A named region of the program (cudafrag_region_push/pop) on one device: the
 * highest live bytes and footprint seen inside it, over every time it ran. */
struct cf_region {
    char name[64];
    int32_t device;
    uint64_t runs;
    uint64_t peak_live, peak_footprint;
};
#define CF_MAX_REGIONS 64

/* The first CF_API_ERRORS distinct codes a call failed with, each counted, so the
 * report can say what went wrong and not only how often. */
#define CF_API_ERRORS 3
struct cf_api_stats {
    uint64_t calls, bytes, failures;
    /* Time spent inside the real calls that were timed, and how many were: all of
     * them but the stream-ordered ones (CUDAFRAG_TIME_ONE_IN). cf_api_time_ns
     * gives the estimate for all calls. */
    uint64_t ns_total, timed;
    struct cf_api_error {
        uint64_t code; /* (uint32_t)result + 1; 0: slot free */
        uint64_t count;
    } errors[CF_API_ERRORS];
};

/* Seconds spent in every call of an API: measured when every call was timed,
 * otherwise the timed calls' mean times the calls (an estimate: cf_api_estimated). */
static inline bool cf_api_estimated(const struct cf_api_stats *st)
{
    return st->timed > 0 && st->timed < st->calls;
}

static inline double cf_api_time_s(const struct cf_api_stats *st)
{
    double s = (double)st->ns_total / 1e9;
    return cf_api_estimated(st) ? s * (double)st->calls / (double)st->timed : s;
}

/* The fields every allocation and free of the device changes come first, in 128
 * bytes: cf_rec.dev[0] starts on a cache line, so a call on device 0 reads two. */
struct cf_device_stats {
    bool seen;
    bool footprint_inexact; /* a page node could not be allocated: the count is low */
    /* A region is open (cudafrag_region_push): the window peaks below follow the
     * live bytes and footprint. In the padding of the first line, which every
     * event of the device reads anyway. */
    bool window_open;
    uint64_t live_bytes, peak_live_bytes;
    uint64_t live_count;
    /* The footprint, computed from the events (footprint.c): what the device holds
     * for the program after each event, and its parts. */
    uint64_t footprint, peak_footprint;
    uint64_t requested_live, granted_live; /* for internal (rounding) waste */
    uint64_t peak_requested, peak_granted;
    uint64_t raw_live, pool_live, arena_live; /* live bytes behind raw pages, pools, arena */
    uint64_t raw_bytes;      /* 2 MiB pages touched by live cudaMalloc/cuMemAlloc ranges */
    uint64_t peak_raw_bytes; /* their peak: what the arena model is held against */
    /* Allocations entered into and frees taken out of this device's live set:
     * the per-device share of total_allocs and total_frees. */
    uint64_t allocs, frees;
    /* The rest of the footprint's parts: read together when one of them changes. */
    uint64_t pool_reserved;  /* stream-ordered pools, read from their attributes */
    uint64_t graph_reserved; /* the graph memory pool, read after graph launches */
    uint64_t graph_used;     /* graph allocations in use (counted in live_bytes) */
    uint64_t arena_mapped;   /* cudafrag's arena */
    uint64_t vmm_bytes;      /* physical memory of live cuMemCreate handles */
    uint64_t array_bytes;    /* CUDA arrays (estimated: their layout is opaque) */
    uint64_t peak_t_ns, peak_footprint_t_ns;
    uint64_t live_at_peak_footprint, footprint_at_peak_live;
    struct cf_fp_parts {
        uint64_t raw, raw_live, pool, pool_live, graph, graph_used, arena, arena_live, vmm;
    } at_peak; /* the footprint's parts at its peak */
    /* Cross-check: cuMemGetInfo (total - free), sampled at new footprint peaks. */
    uint64_t total_bytes, baseline_used, measured_peak, footprint_samples;
    uint64_t max_deviation;  /* largest |measured - computed| over the samples */
    uint64_t max_over;       /* largest measured - computed: memory outside our events */
    uint64_t max_under;      /* largest computed - measured: cudafrag counted too much */
    uint64_t last_sample_ns; /* rate limit of the cross-check samples */
    /* The highest live bytes and footprint since the innermost open region began
     * (record/region.c); written only while window_open. */
    uint64_t window_live, window_footprint;
};

/* The footprint series that are read from the driver rather than derived. */
enum cf_series { CF_SERIES_POOL, CF_SERIES_GRAPH, CF_SERIES_ARENA };

/* sizes: bin = floor(log2(size)); lifetimes: bin = floor(log2(ns)) and bytes are
 * those of the allocations whose lifetime fell in the bin. Bin 0 also holds 0. */
struct cf_hist {
    uint64_t count[CF_HIST_BINS], bytes[CF_HIST_BINS];
};

/* Graph memory: nodes created and the graph pool's high water. */
struct cf_graph_stats {
    uint64_t alloc_nodes, free_nodes, node_bytes;
    uint64_t reserved_high[CF_MAX_DEVICES], used_high[CF_MAX_DEVICES];
};

/* Everything the report reads. One instance (cf_rec); the report takes
 * cf_rec_lock_all()/cf_rec_unlock_all() around reading it. */
struct cf_record {
    struct cf_device_stats dev[CF_MAX_DEVICES]; /* first: cf_rec is 64-byte aligned */
    uint64_t start_ns;
    struct cf_api_stats api[CF_API_COUNT];
    struct cf_hist sizes, lifetimes;
    struct cf_site *sites; /* uthash by hash */
    struct cf_pool *pools; /* uthash by handle */
    struct cf_oom ooms[CF_MAX_OOMS];
    uint32_t nooms, ooms_dropped;
    struct cf_graph_stats graph;
    uint64_t distinct_sizes;
    uint64_t total_allocs, total_frees, unknown_frees;
    uint64_t capture_skips; /* sampling skipped because a stream was capturing */
    /* Added after the first layout: */
    struct cf_device_stats host; /* pinned/registered host memory (no footprint) */
    bool distinct_sizes_capped;  /* the bounded size set filled: distinct_sizes is a floor */
    uint64_t replaced_live;      /* an address came back while still live (its free was missed) */
    bool stacks_unavailable;     /* libunwind could not be loaded: sites are keyed by API */
    struct cf_device_stats managed;          /* managed memory: its own series, no footprint */
    struct cf_user_mark marks[CF_MAX_MARKS]; /* cudafrag_mark(), in order */
    uint32_t nmarks, marks_dropped;
    struct cf_region regions[CF_MAX_REGIONS]; /* by name and device, in order of first end */
    uint32_t nregions, regions_dropped;
    uint64_t allocs_without_stack; /* their thread's stack was too small to unwind */
};
extern struct cf_record cf_rec;

/* ---- called by the hooks ---- */
struct cf_alloc_info {
    enum cf_api api;
    uint64_t addr;      /* pointer (or VMM handle) returned to the app; 0 on failure */
    uint64_t requested; /* bytes the app asked for (pitch: pitch*height) */
    uint64_t granted;   /* bytes the device really gives, 0 if unknown */
    uint64_t stream, pool;
    int device; /* -1: the current one (base/ctx_state.h), 0 when unknown */
    int result; /* CUresult / cudaError_t the app got; 0 = success */
    bool oom;   /* result is an out-of-memory code */
    bool arena;
    bool graph;    /* made while the stream was capturing: a graph allocation, pool = 0 */
    bool shadow;   /* feed the host-only arena model (native cudaMalloc/cuMemAlloc family) */
    uint64_t ns;   /* time inside the real call, 0 if not measured */
    uint64_t t_ns; /* when the real call returned; 0: the record reads the clock */
    /* The stream as one value per stream (cf_stream_key): the default stream named
     * by the handle of the one it is. 0: not known (stream is used). */
    uint64_t stream_key;
};
void cf_rec_alloc(const struct cf_alloc_info *ai);
/* Returns true when addr was a live allocation we recorded. */
bool cf_rec_free(enum cf_api api, uint64_t addr, int result);
/* The same free in two steps, around the real call. Once the real call has given
 * the address back, the driver may hand it to another thread, whose allocation
 * can be recorded before this call returns: so begin takes addr's entry out of
 * the live table first (NULL: addr is not live), and end, given the real result,
 * retires the entry or puts it back when the free failed. Neither holds a lock
 * across the real call. begin sets *t0 to the free's start (the clock read where
 * the allocation's life ends); ns, given to end, is measured from it, so that
 * t_ns - ns is that start in a replay too. end returns what cf_rec_free returns;
 * t_ns is when the real call returned (0: the record reads the clock). */
struct cf_alloc *cf_rec_free_begin(uint64_t addr, uint64_t *t0);
bool cf_rec_free_end(enum cf_api api, uint64_t addr, struct cf_alloc *a, int result, uint64_t ns,
                     uint64_t t_ns);
void cf_rec_call(enum cf_api api, int result, uint64_t ns); /* count an 'O' API */
void cf_rec_pool_seen(uint64_t pool, int device, bool is_default, bool created_by_app);
void cf_rec_pool_destroyed(uint64_t pool);
void cf_rec_pool_threshold(uint64_t pool, uint64_t threshold);
void cf_rec_pool_trim(uint64_t pool);
/* A free returned successfully: a's block is the pool's again at once for the
 * stream of key stream (cf_stream_key; 0: a synchronous free). */
void cf_rec_pool_freed(const struct cf_alloc *a, uint64_t stream);
/* One value per stream: a handle, or for the default stream (0) the handle of the
 * stream it is -- CU_STREAM_PER_THREAD through a _ptsz entry point, else
 * CU_STREAM_LEGACY -- so that 0 and that handle compare equal. */
static inline uint64_t cf_stream_key(uint64_t stream, bool ptsz)
{
    return stream ? stream : ptsz ? 0x2 : 0x1;
}
/* The pool read an allocation can skip (src/record/sample.c) relies on a single
 * thread allocating from pools, so a second one says so before its first real
 * call (cf_rec_pool_alloc_begin). The rule's shared words, read by every
 * allocation it covers, are on one line of their own. */
#define CF_POOL_THREADS_MANY ((uintptr_t)1)
struct cf_pool_skip {
    uintptr_t thread; /* the one thread allocating from pools; 0: none yet */
    uint64_t changes; /* bumped where pool memory may go back to the device */
    bool off;         /* a verified skip found the pool changed */
};
extern struct cf_pool_skip cf_pool_skip;
extern __thread char cf_thread_token __attribute__((tls_model("initial-exec")));
void cf_rec_pool_thread_seen(void);
static inline void cf_rec_pool_alloc_begin(void)
{
    uintptr_t t = __atomic_load_n(&cf_pool_skip.thread, __ATOMIC_RELAXED);
    if (__builtin_expect(t != CF_POOL_THREADS_MANY && t != (uintptr_t)&cf_thread_token, 0))
        cf_rec_pool_thread_seen();
}
/* A synchronization returned: a pool holding more than its release threshold may
 * have handed memory back in it, so those pools' reserved bytes are read now
 * (a documented sampling call) rather than at their next allocation. */
void cf_rec_synchronized(void);
/* A marker from the program (cudafrag_mark), kept in the trace. */
void cf_rec_mark(const char *text);
/* Regions (record/region.c): push opens one named region inside the open ones
 * (-1: NULL name, or nested deeper than CF_REGION_DEPTH); pop closes the innermost,
 * records its peaks per device and puts a marker with them into the trace (-1:
 * none is open). Regions are the process's, not a thread's: they nest in time. */
#define CF_REGION_DEPTH 16
int cf_rec_region_push(const char *name);
int cf_rec_region_pop(void);
/* The innermost open region's peaks so far on device; -1: none is open. */
int cf_rec_region_peak(int device, uint64_t *live, uint64_t *footprint);

/* A Python frame of a site: frames CF_FRAME(CF_PY_MODULE, id) (record/event.h).
 * The strings live as long as the process. False for an unknown id. */
struct cf_pyframe {
    const char *file, *function;
    uint32_t line;
};
bool cf_pyframe_get(uint32_t id, struct cf_pyframe *out);

/* ---- replay: `cudafrag report TRACE` applies decoded events to the same tables ---- */
struct cf_event;
/* The record of a trace, set up in the command before any other cf_rec_* call:
 * as in the process, but nothing is unwound, traced or read from the arena (the
 * trace's events carry it all). */
void cf_rec_init_from_trace(void);
/* Applies one event in seq order. SITE events must be applied first (any order
 * among themselves); an ALLOC naming an unknown site is recorded without one. */
void cf_rec_apply_event(const struct cf_event *e);
/* Frames of replayed sites are CF_FRAME(module id, offset) values. */

/* Idempotent; called lazily by every cf_rec_* and by the library constructor.
 * Registers the fork handlers below with pthread_atfork. Inline: every
 * intercepted call asks, and once the record is set up the answer is one load
 * (pthread_once is a call into libc each time). */
extern bool cf_rec_ready;
CF_COLD void cf_rec_init_once(void);
static inline void cf_rec_init(void)
{
    if (__builtin_expect(__atomic_load_n(&cf_rec_ready, __ATOMIC_ACQUIRE), 1)) return;
    cf_rec_init_once();
}
void cf_rec_atfork_prepare(void);
void cf_rec_atfork_parent(void);
void cf_rec_atfork_child(void);

/* The driver's rounding as measured on an H200 (an estimate): up to 1 MiB rounds
 * up to 512 B, larger requests to 2 MiB. */
uint64_t cf_rec_estimate_granted(uint64_t requested);

/* ---- used by the report ---- */
/* Every record lock, then the per-thread counters summed into cf_rec
 * (cf_rec_collect). */
void cf_rec_lock_all(void);
void cf_rec_unlock_all(void);
/* Sums what every thread counted on its own into cf_rec: the per-API counters,
 * the size and lifetime histograms, total_allocs and total_frees. Those fields
 * of cf_rec are only as recent as the last collect. */
void cf_rec_collect(void);
/* The same, unless the threads' registry is not free by deadline: false. */
struct timespec;
bool cf_rec_collect_until(const struct timespec *deadline);
/* One API's calls so far, summed over the threads (for cudafrag_api_calls). */
uint64_t cf_rec_api_calls(enum cf_api api);
/* Every API's calls so far, summed over the threads (did this image use CUDA). */
uint64_t cf_rec_calls_total(void);
/* cf_rec_lock_all for a report that may run in a thread interrupted while it held
 * a record lock (exit() from a signal handler): each lock not had by deadline is
 * left alone, and what it guards with it. Returns the CF_REC_HELD_* bits of the
 * locks held; release them with cf_rec_unlock_held. A site's or pool's figures
 * change under its home slot's lock: they are consistent only with SLOTS too. */
enum {
    CF_REC_HELD_SITES = 1,     /* the table cf_rec.sites */
    CF_REC_HELD_POOLS = 4,     /* the table cf_rec.pools */
    CF_REC_HELD_SLOTS = 8,     /* every slot: live tables, device, site and pool figures */
    CF_REC_HELD_APPLY = 16,    /* OOM events, marks, graph pool high water */
    CF_REC_HELD_COUNTERS = 32, /* the threads' counters were collected into cf_rec */
    CF_REC_HELD_ALL = 61,
};
struct timespec;
unsigned cf_rec_try_lock_all(const struct timespec *deadline);
void cf_rec_unlock_held(unsigned held);
/* Sample pool attributes and cuMemGetInfo once more (final numbers). Returns
 * false, sampling nothing, in a child forked after its parent used CUDA: the
 * driver is not usable there, and the figures are the parent's from before the
 * fork. */
bool cf_rec_sample_final(void);
/* The same, unless the locks it needs are not free by deadline: then it samples
 * nothing and returns -1 (else 1 sampled, 0 not in a forked child). */
int cf_rec_sample_final_until(const struct timespec *deadline);
/* A graph was launched on stream: sample the graph memory pool (rate-limited). */
void cf_rec_graph_launched(uint64_t stream);
bool cf_rec_any_activity(void);

#endif
