/* Internal model of the simulated CUDA driver: devices, physical pages,
 * VA ranges, streams, pools, VMM handles and graphs. Every entry point that
 * reads or changes shared state holds sim_lock() for its whole duration, so
 * the model itself needs no finer locking. Compiled with __CUDA_API_VERSION_INTERNAL so that cuda.h
 * declares both the legacy and the _v2/_ptsz/_ptds names we export. */
#ifndef SIM_DRIVER_SIM_H
#define SIM_DRIVER_SIM_H

#include "handle.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_API __attribute__((visibility("default")))

#define SIM_PAGE        ((size_t)2 << 20) /* physical page and VA unit */
#define SIM_SMALL_MAX   ((size_t)1 << 20) /* cuMemAlloc requests up to this are packed */
#define SIM_SMALL_ALIGN ((size_t)512)
#define SIM_SLOTS       (SIM_PAGE / SIM_SMALL_ALIGN)
#define SIM_POOL_CHUNK  ((size_t)32 << 20) /* shared chunk of a mempool for small requests */
#define SIM_MAX_DEVICES 8
#define SIM_NO_RUN      UINT32_MAX

#define SIM_ROUND_UP(x, a) ((((x) + (a)-1) / (a)) * (a))

/* Stream selector for the NULL handle: legacy default stream or the
 * calling thread's per-thread default stream (the _ptsz/_ptds entry points). */
enum sim_default_stream { SIM_DS_LEGACY = 0, SIM_DS_PER_THREAD = 1 };

/* ---- physical pages (phys.c) ---- */
struct sim_phys {
    uint32_t first; /* first page of the run, SIM_NO_RUN in paged mode */
    uint32_t count;
};

/* ---- VA regions: every device-range address belongs to one region ---- */
enum sim_region_kind {
    SIM_R_LARGE,     /* one cuMemAlloc block > 1 MiB */
    SIM_R_SMALLPAGE, /* one 2 MiB page shared by packed small blocks */
    SIM_R_POOLCHUNK, /* one mempool chunk */
    SIM_R_RESERVE,   /* one cuMemAddressReserve range */
    SIM_R_GRAPH,     /* one graph allocation (alloc node) */
    SIM_R_ARRAY,     /* the backing of one CUDA array */
};

struct sim_device;

struct sim_region {
    enum sim_region_kind kind;
    struct sim_device *dev;
    uintptr_t base;
    size_t size;          /* VA bytes, a multiple of SIM_PAGE */
    size_t request;       /* bytes the caller asked for (large blocks, arrays) */
    struct sim_phys phys; /* pages held directly (large, small page, chunk, array) */
    int has_phys;
    void *owner;          /* kind-specific object */
    uint16_t *slot_start; /* small page: start slot of the block using each slot */
    uint32_t *slot_bytes; /* small page: requested bytes, at a block's start slot */
    uint32_t used_slots;
    struct sim_region *next_small; /* list of small pages of the device */
};

struct sim_pool;
struct sim_stream;
struct sim_ctx;

struct sim_device {
    int ordinal;
    size_t capacity;
    uint32_t npages;
    uint32_t pages_used;
    uint32_t pages_peak; /* high water of pages_used: the device's true peak footprint */
    uint8_t *page_map;   /* contiguous mode: 1 per used page */
    uintptr_t va_base;
    size_t va_size;
    uint32_t va_units;
    struct sim_region **unit_owner; /* per VA unit */
    uint32_t va_hint;               /* no unit below it is free */
    struct sim_region *small_pages;
    struct sim_pool *default_pool;
    struct sim_pool *current_pool;
    struct sim_pool *pools; /* every pool of the device */
    size_t vmm_physical;
    size_t graph_used, graph_used_high, graph_reserved, graph_reserved_high;
    unsigned long long alloc_calls, free_calls;
    struct sim_ctx *primary;
    int peer_access[SIM_MAX_DEVICES];
};

struct sim_state {
    int initialized;
    int ndevices;
    int contiguous;
    size_t capacity;
    size_t va_size; /* SIMCUDA_VA: the address space per device, 0 = automatic */
    struct sim_device dev[SIM_MAX_DEVICES];
    struct sim_stream *streams; /* every stream of the process, for hazard checks */
    unsigned long long hazards;
    int hazard_reported;
};

extern struct sim_state sim;

/* cuInit has completed (the flag is published after the devices exist). */
static inline int sim_ready(void)
{
    return __atomic_load_n(&sim.initialized, __ATOMIC_ACQUIRE);
}

void sim_lock(void);
void sim_unlock(void);

/* Fault injection (fault.c, SIMCUDA_FAULT): the first statement of every entry
 * point. Returns the injected error from the entry point when a rule fires;
 * only the outermost entry point of a call counts (the cleanup leaves it). */
int sim_fault_enter(const char *name, CUresult *rc);
void sim_fault_leave(int *hit);
#define SIM_ENTRY()                                                                                \
    CUresult sim_fault_rc_ = CUDA_SUCCESS;                                                         \
    __attribute__((cleanup(sim_fault_leave))) int sim_fault_hit_ =                                 \
        sim_fault_enter(__func__, &sim_fault_rc_);                                                 \
    if (sim_fault_hit_) return sim_fault_rc_

/* The 32-bit ABIs of CUDA 2.x cannot carry simulated addresses, which all
 * lie above 4 GiB. (A CUDA 13 driver refuses them with
 * CUDA_ERROR_INVALID_CONTEXT in the contexts it creates today.) */
static inline CUresult sim_legacy_abi(void)
{
    return sim_ready() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
}

/* knobs.c: SIMCUDA_MEM, SIMCUDA_DEVICES and SIMCUDA_PHYS into sim */
void sim_read_knobs(void);

/* device.c */
CUresult sim_device_get(CUdevice d, struct sim_device **out);

/* context.c */
struct sim_ctx *sim_ctx_new(struct sim_device *d, unsigned flags, int primary);
struct sim_ctx *sim_current_ctx(void);
/* Current context's device, or an error (NOT_INITIALIZED / INVALID_CONTEXT). */
CUresult sim_current_device(struct sim_device **out);

/* phys.c */
int sim_phys_alloc(struct sim_device *d, uint32_t n, struct sim_phys *out);
void sim_phys_free(struct sim_device *d, struct sim_phys *p);
uint32_t sim_phys_largest_free_run(struct sim_device *d);

/* va.c */
struct sim_region *sim_region_new(struct sim_device *d, enum sim_region_kind kind, size_t size,
                                  size_t align, uintptr_t hint);
void sim_region_free(struct sim_region *r);
/* Region holding addr on any device, or NULL. */
struct sim_region *sim_region_find(uintptr_t addr);
struct sim_device *sim_device_of_addr(uintptr_t addr);
void sim_discard(uintptr_t base, size_t size);

/* mem.c: what a device address belongs to */
struct sim_range_info {
    uintptr_t base;
    size_t size;
    int device;
    int is_managed;
    int is_host;
    unsigned host_flags;
};
/* Describe the allocation holding addr; CUDA_ERROR_INVALID_VALUE if none. */
CUresult sim_describe(uintptr_t addr, struct sim_range_info *out);
/* Device accesses [addr, addr+len) are valid (allocated and accessible). */
CUresult sim_check_device_range(uintptr_t addr, size_t len);
int sim_is_device_addr(uintptr_t addr);

/* host.c: page-locked host memory and managed memory (outside device ranges) */
CUresult sim_describe_host(uintptr_t addr, struct sim_range_info *out);
CUresult sim_free_managed(uintptr_t addr);

/* pool.c */
struct sim_pool *sim_pool_new(struct sim_device *d, int is_default);
size_t sim_pools_reserved(struct sim_device *d);

/* pool_alloc.c */
CUresult sim_pool_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size);
CUresult sim_pool_free_now(struct sim_region *r, uintptr_t addr);
struct sim_pool *sim_pool_of(struct sim_region *r);
void sim_pool_free_done(void *chunk, size_t off, size_t len, struct sim_stream *s, uint64_t seq);
void sim_pools_release_idle(struct sim_device *d);

/* vmm.c */
CUresult sim_vmm_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size,
                          int *accessible);
CUresult sim_vmm_check(struct sim_region *r, uintptr_t addr, size_t len);

/* graph_mempool.c */
CUresult sim_graph_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size);
CUresult sim_graph_free_ptr(struct sim_region *r, uintptr_t addr);

/* capture.c: stream-ordered allocations and frees on a capturing stream */
struct sim_graph;
CUresult sim_capture_alloc(struct sim_stream *s, size_t size, CUdeviceptr *out);
CUresult sim_capture_free(struct sim_stream *s, CUdeviceptr ptr);

/* ---- streams (stream.c) and their work (queue.c) ---- */
enum sim_op_kind {
    SIM_OP_MEMSET,
    SIM_OP_COPY,
    SIM_OP_HOSTFN,
    SIM_OP_WAIT,
    SIM_OP_POOLFREE,
    SIM_OP_NOP,
};

struct sim_op {
    enum sim_op_kind kind;
    uint64_t seq;
    uintptr_t wr_lo, wr_hi; /* device bytes written, [lo, hi) */
    uintptr_t rd_lo, rd_hi; /* device bytes read */
    union {
        struct {
            uintptr_t dst;
            size_t pitch, width, height; /* width in elements */
            unsigned elem;               /* 1, 2 or 4 bytes */
            unsigned value;
        } set;
        struct {
            uintptr_t dst, src;
            size_t width, height; /* bytes per row, rows */
            size_t dpitch, spitch;
        } copy;
        struct {
            CUhostFn fn;
            void *arg;
        } host;
        struct {
            struct sim_stream *stream;
            uint64_t seq;
        } wait;
        struct {
            void *chunk;
            size_t off, len;
        } pfree;
    } u;
    struct sim_op *next;
};

struct sim_dep {
    struct sim_stream *stream;
    uint64_t seq;
};

enum sim_capture_state { SIM_CAP_NONE, SIM_CAP_ACTIVE, SIM_CAP_INVALIDATED };

struct sim_stream {
    struct sim_handle handle;
    struct sim_ctx *ctx;
    unsigned flags;
    int priority;
    int is_legacy;
    int is_per_thread;
    unsigned long long id;
    uint64_t next_seq; /* seq of the next op */
    uint64_t done_seq; /* every op with seq <= done_seq has executed */
    struct sim_op *head, *tail;
    uintptr_t pend_lo, pend_hi; /* hull of the device bytes pending work touches */
    struct sim_dep *deps;
    size_t ndeps, cap_deps;
    enum sim_capture_state capture;
    struct sim_graph *capture_graph;
    unsigned long long capture_id;
    struct sim_stream *next;     /* all streams of the context */
    struct sim_stream *next_all; /* all streams of the process */
};

struct sim_ctx {
    struct sim_handle handle;
    struct sim_device *dev;
    unsigned flags;
    int is_primary;
    int refcount; /* primary: retain count; created: 1 until destroyed */
    struct sim_stream *legacy;
    struct sim_stream *streams;
    unsigned long long id;
};

/* stream.c */
/* Resolve a stream handle; NULL means the default stream of kind ds. */
CUresult sim_stream_resolve(CUstream h, enum sim_default_stream ds, struct sim_stream **out);
struct sim_stream *sim_stream_new(struct sim_ctx *ctx, unsigned flags, int priority);
void sim_stream_destroy(struct sim_stream *s);
void sim_ctx_init_streams(struct sim_ctx *ctx);

/* queue.c */
/* Queue op on s (takes ownership), after the implicit legacy-stream ordering
 * and the hazard check. */
void sim_enqueue(struct sim_stream *s, struct sim_op *op);
struct sim_op *sim_op_new(enum sim_op_kind kind);
void sim_drain(struct sim_stream *s, uint64_t upto);
void sim_drain_all(struct sim_stream *s);
void sim_drain_ctx(struct sim_ctx *ctx);
void sim_drain_device(struct sim_device *d);
void sim_drain_everything(void);
CUresult sim_mem_free_block(struct sim_region *r, CUdeviceptr dptr);
/* Queue op on s and run it and everything it is ordered after: the
 * behaviour of a synchronous call. */
void sim_run_now(struct sim_stream *s, struct sim_op *op);
void sim_sync_point(struct sim_device *d);
/* The last seq of t that work queued on s from now on runs after. */
uint64_t sim_stream_dep(struct sim_stream *s, struct sim_stream *t);
/* s's later work runs after t's work up to seq. */
void sim_stream_wait_for(struct sim_stream *s, struct sim_stream *t, uint64_t seq);
int sim_stream_pending(struct sim_stream *s);
/* s is being destroyed, its work done: other streams stop waiting for it. */
void sim_queues_forget_stream(struct sim_stream *s);

/* event.c: events recorded on a stream being destroyed become complete. */
void sim_events_forget_stream(struct sim_stream *s);

/* copy.c: validated, stream-ordered memset/memcpy used by every variant */
CUresult sim_memset(uintptr_t dst, size_t pitch, unsigned value, unsigned elem, size_t width,
                    size_t height, CUstream h, enum sim_default_stream ds, int async);
CUresult sim_memcpy(uintptr_t dst, uintptr_t src, size_t bytes, CUstream h,
                    enum sim_default_stream ds, int async);

/* capture.c: capture of ordinary async ops */
int sim_capturing(struct sim_stream *s);
/* A call that is "potentially unsafe" during stream capture: when the calling
 * thread captures in global or thread-local mode, the capture is invalidated and
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED returned (as the real driver does). Call
 * without the sim lock held. */
CUresult sim_unsafe_call(void);
void sim_capture_op(struct sim_stream *s, struct sim_op *op);

/* calls.c: how often the query entry points a profiler may use on every
 * intercepted call were called (simcudaCallCount), for the tests that count
 * the driver calls cudafrag adds. */
#define SIM_COUNTED_CALLS(X)                                                                       \
    X(cuCtxGetDevice)                                                                              \
    X(cuCtxGetCurrent)                                                                             \
    X(cuStreamIsCapturing)                                                                         \
    X(cuStreamGetDevice)                                                                           \
    X(cuDeviceGetDefaultMemPool)                                                                   \
    X(cuDeviceGetMemPool)                                                                          \
    X(cuMemPoolGetAttribute)
enum sim_counted {
#define SIM_COUNTED_ENUM(name) SIM_COUNT_##name,
    SIM_COUNTED_CALLS(SIM_COUNTED_ENUM)
#undef SIM_COUNTED_ENUM
        SIM_COUNTED_N
};
void sim_count_call(enum sim_counted which);

#endif
