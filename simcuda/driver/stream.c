/* Streams: created ones, each context's legacy default stream and each
 * thread's per-thread default streams; resolving a handle to one, and the
 * stream API. How their work runs is queue.c's job. */
#include "sim.h"

#include <pthread.h>
#include <stdlib.h>

#define PTDS_SLOTS 16

static unsigned long long next_stream_id = 1;

struct sim_stream *sim_stream_new(struct sim_ctx *ctx, unsigned flags, int priority)
{
    struct sim_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    sim_handle_init(&s->handle, SIM_H_STREAM);
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->id = next_stream_id++;
    s->next_seq = 1;
    s->next = ctx->streams;
    ctx->streams = s;
    s->next_all = sim.streams;
    sim.streams = s;
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
    if (!sim_handle_valid(ctx, SIM_H_CTX)) return 0;
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
        if (!sim_handle_valid(ctx, SIM_H_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
        int per_thread = h == CU_STREAM_PER_THREAD || (h == NULL && ds == SIM_DS_PER_THREAD);
        s = per_thread ? per_thread_stream(ctx) : ctx->legacy;
        if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        s = (struct sim_stream *)h;
        if (!sim_handle_valid(s, SIM_H_STREAM)) return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = s;
    return CUDA_SUCCESS;
}

/* Destroying drains the stream first, so nothing can still wait on it. */
void sim_stream_destroy(struct sim_stream *s)
{
    sim_drain_all(s);
    sim_queues_forget_stream(s);
    sim_events_forget_stream(s);
    for (struct sim_stream **pp = &s->ctx->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    for (struct sim_stream **pp = &sim.streams; *pp; pp = &(*pp)->next_all) {
        if (*pp == s) {
            *pp = s->next_all;
            break;
        }
    }
    sim_handle_retire(&s->handle);
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
    SIM_ENTRY();
    return stream_create(phStream, Flags, 0);
}

SIM_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    SIM_ENTRY();
    return stream_create(phStream, flags, priority);
}

static CUresult stream_destroy(CUstream h)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
    sim_lock();
    struct sim_stream *s = (struct sim_stream *)h;
    CUresult rc = CUDA_SUCCESS;
    if (!sim_handle_valid(s, SIM_H_STREAM) || s->is_legacy || s->is_per_thread)
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
    SIM_ENTRY();
    return stream_destroy(hStream);
}

SIM_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    SIM_ENTRY();
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
    SIM_ENTRY();
    return stream_sync(hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    SIM_ENTRY();
    return stream_sync(hStream, SIM_DS_PER_THREAD);
}

static CUresult stream_query(CUstream h, enum sim_default_stream ds)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->capture != SIM_CAP_NONE)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (rc == CUDA_SUCCESS && sim_stream_pending(s)) rc = CUDA_ERROR_NOT_READY;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamQuery(CUstream hStream)
{
    SIM_ENTRY();
    return stream_query(hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    SIM_ENTRY();
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
    SIM_ENTRY();
    return flags ? stream_get(hStream, SIM_DS_LEGACY, flags, NULL, NULL, NULL, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    SIM_ENTRY();
    return flags ? stream_get(hStream, SIM_DS_PER_THREAD, flags, NULL, NULL, NULL, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    SIM_ENTRY();
    return priority ? stream_get(hStream, SIM_DS_LEGACY, NULL, priority, NULL, NULL, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    SIM_ENTRY();
    return priority ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, priority, NULL, NULL, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    SIM_ENTRY();
    return pctx ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, pctx, NULL, NULL)
                : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    SIM_ENTRY();
    return pctx ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, NULL, pctx, NULL, NULL)
                : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    SIM_ENTRY();
    return streamId ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, NULL, streamId, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
    SIM_ENTRY();
    return streamId ? stream_get(hStream, SIM_DS_PER_THREAD, NULL, NULL, NULL, streamId, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuStreamGetDevice);
    return device ? stream_get(hStream, SIM_DS_LEGACY, NULL, NULL, NULL, NULL, device)
                  : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    SIM_ENTRY();
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
    SIM_ENTRY();
    return launch_host(hStream, fn, userData, SIM_DS_LEGACY);
}

SIM_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    SIM_ENTRY();
    return launch_host(hStream, fn, userData, SIM_DS_PER_THREAD);
}
