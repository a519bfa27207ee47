/* Streams and their completion model. Work is queued per stream and runs,
 * in order, only when something waits for it (stream, event or context
 * synchronization, a synchronous call, cuMemFree). This makes the order in
 * which a program's work completes deterministic and lets every enqueue be
 * checked against the still-pending work of other streams. */
#include "sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTDS_SLOTS 16

static struct sim_stream *all_streams;
static unsigned long long next_stream_id = 1;

struct sim_stream *sim_stream_new(struct sim_ctx *ctx, unsigned flags, int priority)
{
    struct sim_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->magic = SIM_STREAM_MAGIC;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->id = next_stream_id++;
    s->next_seq = 1;
    s->next = ctx->streams;
    ctx->streams = s;
    s->next_all = all_streams;
    all_streams = s;
    return s;
}

void sim_ctx_init_streams(struct sim_ctx *ctx)
{
    ctx->legacy = sim_stream_new(ctx, 0, 0);
    if (ctx->legacy) ctx->legacy->is_legacy = 1;
}

/* The calling thread's per-thread default streams, one per context. They
 * are destroyed (after running their work) when the thread exits. */
struct ptds_slot {
    struct sim_ctx *ctx;
    struct sim_stream *stream;
};

static __thread struct ptds_slot *ptds;
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

static int stream_in_ctx(struct sim_ctx *ctx, struct sim_stream *s)
{
    if (ctx->magic != SIM_CTX_MAGIC) return 0;
    for (struct sim_stream *t = ctx->streams; t; t = t->next)
        if (t == s) return 1;
    return 0;
}

static void ptds_thread_exit(void *arg)
{
    struct ptds_slot *slots = arg;
    sim_lock();
    for (int i = 0; i < PTDS_SLOTS; i++)
        if (slots[i].stream && stream_in_ctx(slots[i].ctx, slots[i].stream))
            sim_stream_destroy(slots[i].stream);
    sim_unlock();
    free(slots);
}

static void ptds_key_create(void)
{
    pthread_key_create(&ptds_key, ptds_thread_exit);
}

static struct sim_stream *per_thread_stream(struct sim_ctx *ctx)
{
    if (!ptds) {
        ptds = calloc(PTDS_SLOTS, sizeof *ptds);
        if (!ptds) return NULL;
        pthread_once(&ptds_once, ptds_key_create);
        pthread_setspecific(ptds_key, ptds);
    }
    int empty = -1;
    for (int i = 0; i < PTDS_SLOTS; i++) {
        if (ptds[i].ctx == ctx && ptds[i].stream && stream_in_ctx(ctx, ptds[i].stream))
            return ptds[i].stream;
        if (empty < 0 && (!ptds[i].stream || !stream_in_ctx(ptds[i].ctx, ptds[i].stream)))
            empty = i;
    }
    struct sim_stream *s = sim_stream_new(ctx, 0, 0);
    if (!s) return NULL;
    s->is_per_thread = 1;
    if (empty < 0) empty = 0; /* more contexts than slots: the oldest stream is forgotten */
    ptds[empty].ctx = ctx;
    ptds[empty].stream = s;
    return s;
}

CUresult sim_stream_resolve(CUstream h, enum sim_default_stream ds, struct sim_stream **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_stream *s;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct sim_ctx *ctx = sim_current_ctx();
        if (!ctx || ctx->magic != SIM_CTX_MAGIC) return CUDA_ERROR_INVALID_CONTEXT;
        int per_thread = h == CU_STREAM_PER_THREAD || (h == NULL && ds == SIM_DS_PER_THREAD);
        s = per_thread ? per_thread_stream(ctx) : ctx->legacy;
        if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        s = (struct sim_stream *)h;
        if (s->magic != SIM_STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = s;
    return CUDA_SUCCESS;
}

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
    struct sim_op *op = calloc(1, sizeof *op);
    if (op) op->kind = kind;
    return op;
}

/* ---- dependencies ---- */

static uint64_t dep_of(struct sim_stream *s, struct sim_stream *t)
{
    for (size_t i = 0; i < s->ndeps; i++)
        if (s->deps[i].stream == t) return s->deps[i].seq;
    return 0;
}

uint64_t sim_stream_dep(struct sim_stream *s, struct sim_stream *t)
{
    return dep_of(s, t);
}

static void set_dep(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    if (t == s) return;
    for (size_t i = 0; i < s->ndeps; i++) {
        if (s->deps[i].stream == t) {
            if (s->deps[i].seq < seq) s->deps[i].seq = seq;
            return;
        }
    }
    if (s->ndeps == s->cap_deps) {
        size_t cap = s->cap_deps ? 2 * s->cap_deps : 4;
        struct sim_dep *n = realloc(s->deps, cap * sizeof *n);
        if (!n) return;
        s->deps = n;
        s->cap_deps = cap;
    }
    s->deps[s->ndeps].stream = t;
    s->deps[s->ndeps].seq = seq;
    s->ndeps++;
}

/* s waits for t's work up to seq, and so for everything that work waits for. */
static void add_dep(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    set_dep(s, t, seq);
    for (size_t i = 0; i < t->ndeps; i++)
        set_dep(s, t->deps[i].stream, t->deps[i].seq);
}

static void widen(struct sim_stream *s, uintptr_t lo, uintptr_t hi)
{
    if (lo == hi) return;
    if (s->pend_lo == s->pend_hi) {
        s->pend_lo = lo;
        s->pend_hi = hi;
        return;
    }
    if (lo < s->pend_lo) s->pend_lo = lo;
    if (hi > s->pend_hi) s->pend_hi = hi;
}

static void append(struct sim_stream *s, struct sim_op *op)
{
    widen(s, op->wr_lo, op->wr_hi);
    widen(s, op->rd_lo, op->rd_hi);
    op->seq = s->next_seq++;
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
}

static void wait_on(struct sim_stream *s, struct sim_stream *t)
{
    struct sim_op *w = sim_op_new(SIM_OP_WAIT);
    if (!w) return;
    w->u.wait.stream = t;
    w->u.wait.seq = t->next_seq - 1;
    add_dep(s, t, w->u.wait.seq);
    append(s, w);
}

static int is_blocking(struct sim_stream *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* The legacy default stream waits for all blocking streams of its context
 * and they wait for it. */
static void legacy_ordering(struct sim_stream *s)
{
    if (s->is_legacy) {
        for (struct sim_stream *t = s->ctx->streams; t; t = t->next)
            if (t != s && is_blocking(t) && t->head) wait_on(s, t);
    } else if (is_blocking(s) && s->ctx->legacy && s->ctx->legacy->head) {
        wait_on(s, s->ctx->legacy);
    }
}

/* ---- hazards ---- */

static int overlap(uintptr_t alo, uintptr_t ahi, uintptr_t blo, uintptr_t bhi)
{
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

static int conflicts(const struct sim_op *a, const struct sim_op *b)
{
    return overlap(a->wr_lo, a->wr_hi, b->wr_lo, b->wr_hi) ||
           overlap(a->wr_lo, a->wr_hi, b->rd_lo, b->rd_hi) ||
           overlap(a->rd_lo, a->rd_hi, b->wr_lo, b->wr_hi);
}

static void check_hazards(struct sim_stream *s, const struct sim_op *op)
{
    if (op->wr_lo == op->wr_hi && op->rd_lo == op->rd_hi) return;
    for (struct sim_stream *t = all_streams; t; t = t->next_all) {
        if (t == s || !t->head) continue;
        /* Cheap rejection: nothing pending on t comes near this op. */
        if (!overlap(op->wr_lo, op->wr_hi, t->pend_lo, t->pend_hi) &&
            !overlap(op->rd_lo, op->rd_hi, t->pend_lo, t->pend_hi))
            continue;
        uint64_t covered = dep_of(s, t);
        for (struct sim_op *y = t->head; y; y = y->next) {
            if (y->seq <= covered || !conflicts(op, y)) continue;
            sim.hazards++;
            if (!sim.hazard_reported) {
                sim.hazard_reported = 1;
                fprintf(stderr,
                        "simcuda: stream-order hazard: work queued on stream %llu touches "
                        "device memory [%#lx, %#lx) that pending work of stream %llu uses, "
                        "with no event or stream dependency between them\n",
                        s->id, (unsigned long)(op->wr_hi ? op->wr_lo : op->rd_lo),
                        (unsigned long)(op->wr_hi ? op->wr_hi : op->rd_hi), t->id);
            }
            return;
        }
    }
}

void sim_enqueue(struct sim_stream *s, struct sim_op *op)
{
    legacy_ordering(s);
    check_hazards(s, op);
    append(s, op);
}

/* ---- execution ---- */

static void fill(const struct sim_op *op)
{
    for (size_t row = 0; row < op->u.set.height; row++) {
        uint8_t *p = (uint8_t *)(op->u.set.dst + row * op->u.set.pitch);
        size_t n = op->u.set.width;
        if (op->u.set.elem == 1) {
            memset(p, (int)(op->u.set.value & 0xff), n);
        } else if (op->u.set.elem == 2) {
            uint16_t v = (uint16_t)op->u.set.value;
            for (size_t i = 0; i < n; i++)
                memcpy(p + 2 * i, &v, 2);
        } else {
            uint32_t v = op->u.set.value;
            for (size_t i = 0; i < n; i++)
                memcpy(p + 4 * i, &v, 4);
        }
    }
}

static void copy(const struct sim_op *op)
{
    for (size_t row = 0; row < op->u.copy.height; row++)
        memmove((void *)(op->u.copy.dst + row * op->u.copy.dpitch),
                (const void *)(op->u.copy.src + row * op->u.copy.spitch), op->u.copy.width);
}

static void execute(struct sim_stream *s, struct sim_op *op)
{
    switch (op->kind) {
    case SIM_OP_MEMSET:
        fill(op);
        break;
    case SIM_OP_COPY:
        copy(op);
        break;
    case SIM_OP_HOSTFN:
        op->u.host.fn(op->u.host.arg);
        break;
    case SIM_OP_WAIT:
        sim_drain(op->u.wait.stream, op->u.wait.seq);
        break;
    case SIM_OP_POOLFREE:
        sim_pool_free_done(op->u.pfree.chunk, op->u.pfree.off, op->u.pfree.len, s, op->seq);
        break;
    case SIM_OP_NOP:
        break;
    }
}

void sim_drain(struct sim_stream *s, uint64_t upto)
{
    while (s->head && s->head->seq <= upto) {
        struct sim_op *op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        execute(s, op);
        s->done_seq = op->seq;
        free(op);
    }
    if (!s->head) {
        s->done_seq = s->next_seq - 1;
        s->pend_lo = s->pend_hi = 0;
    }
}

void sim_drain_all(struct sim_stream *s)
{
    sim_drain(s, s->next_seq - 1);
}

void sim_drain_ctx(struct sim_ctx *ctx)
{
    for (struct sim_stream *t = ctx->streams; t; t = t->next)
        sim_drain_all(t);
}

void sim_drain_device(struct sim_device *d)
{
    for (struct sim_stream *t = all_streams; t; t = t->next_all)
        if (t->ctx->dev == d) sim_drain_all(t);
}

void sim_drain_everything(void)
{
    for (struct sim_stream *t = all_streams; t; t = t->next_all)
        sim_drain_all(t);
}

void sim_run_now(struct sim_stream *s, struct sim_op *op)
{
    sim_enqueue(s, op);
    sim_drain_all(s);
}

void sim_sync_point(struct sim_device *d)
{
    sim_pools_release_idle(d);
}

/* Destroying drains the stream first, so nothing can still wait on it. */
void sim_stream_destroy(struct sim_stream *s)
{
    sim_drain_all(s);
    for (struct sim_stream *t = all_streams; t; t = t->next_all) {
        for (struct sim_op *op = t->head; op; op = op->next)
            if (op->kind == SIM_OP_WAIT && op->u.wait.stream == s) op->kind = SIM_OP_NOP;
        for (size_t i = 0; i < t->ndeps; i++) {
            if (t->deps[i].stream == s) {
                t->deps[i] = t->deps[--t->ndeps];
                break;
            }
        }
    }
    sim_events_forget_stream(s);
    for (struct sim_stream **pp = &s->ctx->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    for (struct sim_stream **pp = &all_streams; *pp; pp = &(*pp)->next_all) {
        if (*pp == s) {
            *pp = s->next_all;
            break;
        }
    }
    s->magic = 0;
    free(s->deps);
    free(s);
}

/* ---- stream API ---- */

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
    struct sim_device *d;
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS) {
        if (priority > 0) priority = 0;
        if (priority < -5) priority = -5;
        struct sim_stream *s = sim_stream_new(sim_current_ctx(), flags, priority);
        if (s)
            *ph = (CUstream)s;
        else
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

SIM_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return stream_create(phStream, flags, priority);
}

static CUresult stream_destroy(CUstream h)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
    sim_lock();
    struct sim_stream *s = (struct sim_stream *)h;
    CUresult rc = CUDA_SUCCESS;
    if (s->magic != SIM_STREAM_MAGIC || s->is_legacy || s->is_per_thread)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (s->capture != SIM_CAP_NONE)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else
        sim_stream_destroy(s);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamDestroy(CUstream hStream)
{
    return stream_destroy(hStream);
}

SIM_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    return stream_destroy(hStream);
}

static CUresult capture_check(struct sim_stream *s)
{
    if (s->capture == SIM_CAP_NONE) return CUDA_SUCCESS;
    s->capture = SIM_CAP_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult stream_sync(CUstream h, enum sim_default_stream ds)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS) rc = capture_check(s);
    if (rc == CUDA_SUCCESS) {
        sim_drain_all(s);
        sim_sync_point(s->ctx->dev);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamSynchronize(CUstream hStream)
{
    return stream_sync(hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_sync(hStream, SIM_DS_PER_THREAD);
}

/* Pending work on the stream, including work it waits for on others. */
static int stream_pending(struct sim_stream *s)
{
    if (s->head) return 1;
    if (s->is_legacy) {
        for (struct sim_stream *t = s->ctx->streams; t; t = t->next)
            if (t != s && is_blocking(t) && t->head) return 1;
    }
    return 0;
}

static CUresult stream_query(CUstream h, enum sim_default_stream ds)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->capture != SIM_CAP_NONE)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (rc == CUDA_SUCCESS && stream_pending(s)) rc = CUDA_ERROR_NOT_READY;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamQuery(CUstream hStream)
{
    return stream_query(hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return stream_query(hStream, SIM_DS_PER_THREAD);
}

static CUresult stream_get(CUstream h, enum sim_default_stream ds, unsigned *flags, int *prio,
                           CUcontext *ctx, unsigned long long *id, CUdevice *dev)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS) {
        if (flags) *flags = s->flags;
        if (prio) *prio = s->priority;
        if (ctx) *ctx = (CUcontext)s->ctx;
        if (id) *id = s->id;
        if (dev) *dev = s->ctx->dev->ordinal;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, SIM_DS_LEGACY, flags, NULL, NULL, NULL, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, SIM_DS_PER_THREAD, flags, NULL, NULL, NULL, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    return priority ? stream_get(hStream, SIM_DS_LEGACY, NULL, priority, NULL, NULL, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    return priority ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, priority, NULL, NULL, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    return pctx ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, pctx, NULL, NULL)
                : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    return pctx ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, NULL, pctx, NULL, NULL)
                : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    return streamId ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, NULL, streamId, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
    return streamId ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, NULL, NULL, streamId, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    sim_count_call(SIM_COUNT_cuStreamGetDevice);
    return device ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, NULL, NULL, device)
                  : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    sim_count_call(SIM_COUNT_cuStreamGetDevice);
    return device ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, NULL, NULL, NULL, device)
                  : CUDA_ERROR_INVALID_VALUE;
}

static CUresult launch_host(CUstream h, CUhostFn fn, void *arg, enum sim_default_stream ds)
{
    struct sim_stream *s;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    struct sim_op *op = NULL;
    if (rc == CUDA_SUCCESS && !(op = sim_op_new(SIM_OP_HOSTFN))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        op->u.host.fn = fn;
        op->u.host.arg = arg;
        if (sim_capturing(s))
            sim_capture_op(s, op);
        else
            sim_enqueue(s, op);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host(hStream, fn, userData, SIM_DS_LEGACY);
}

SIM_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host(hStream, fn, userData, SIM_DS_PER_THREAD);
}

void sim_stream_wait_for(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    if (t == s || t->done_seq >= seq) return;
    struct sim_op *w = sim_op_new(SIM_OP_WAIT);
    if (!w) return;
    w->u.wait.stream = t;
    w->u.wait.seq = seq;
    add_dep(s, t, seq);
    sim_enqueue(s, w);
}
