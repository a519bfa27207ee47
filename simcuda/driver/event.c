/* Events: a recorded event stands for its stream's work up to the record.
 * Querying or synchronizing an event runs that work. */
#include "sim.h"

#include <stdlib.h>
#include <time.h>

struct sim_event {
    struct sim_handle handle;
    unsigned flags;
    struct sim_stream *stream; /* NULL: complete (or never recorded) */
    uint64_t seq;
    int recorded;
    double record_ms; /* host clock at record, for cuEventElapsedTime */
    struct sim_event *next;
};

static struct sim_event *all_events;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sim_events_forget_stream(struct sim_stream *s)
{
    for (struct sim_event *e = all_events; e; e = e->next)
        if (e->stream == s) e->stream = NULL;
}

SIM_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    struct sim_event *e = NULL;
    if (rc == CUDA_SUCCESS && !(e = calloc(1, sizeof *e))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        sim_handle_init(&e->handle, SIM_H_EVENT);
        e->flags = Flags;
        e->next = all_events;
        all_events = e;
        *phEvent = (CUevent)e;
    }
    sim_unlock();
    return rc;
}

static CUresult event_destroy(CUevent h)
{
    CUresult rc;
    sim_lock();
    struct sim_event *e = sim_handle_get(h, SIM_H_EVENT, &rc);
    if (e) {
        for (struct sim_event **pp = &all_events; *pp; pp = &(*pp)->next) {
            if (*pp == e) {
                *pp = e->next;
                break;
            }
        }
        sim_handle_retire(&e->handle);
        free(e);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuEventDestroy(CUevent hEvent)
{
    SIM_ENTRY();
    return event_destroy(hEvent);
}

SIM_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    SIM_ENTRY();
    return event_destroy(hEvent);
}

static CUresult event_record(CUevent h, CUstream hs, enum sim_default_stream ds)
{
    CUresult rc;
    struct sim_stream *s;
    sim_lock();
    struct sim_event *e = sim_handle_get(h, SIM_H_EVENT, &rc);
    if (e) rc = sim_stream_resolve(hs, ds, &s);
    if (rc == CUDA_SUCCESS) {
        e->recorded = 1;
        e->record_ms = now_ms();
        e->stream = NULL;
        /* Inside a capture the record becomes part of the graph; outside
         * one it marks the stream's position, including the implicit
         * ordering of the legacy default stream. */
        if (!sim_capturing(s)) {
            struct sim_op *marker = sim_op_new(SIM_OP_NOP);
            if (!marker) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                sim_enqueue(s, marker);
                e->seq = marker->seq;
                e->stream = s;
                if (s->head == marker) sim_drain(s, e->seq);
                if (s->done_seq >= e->seq) e->stream = NULL;
            }
        }
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    SIM_ENTRY();
    return event_record(hEvent, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    SIM_ENTRY();
    return event_record(hEvent, hStream, SIM_DS_PER_THREAD);
}

SIM_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    SIM_ENTRY();
    return event_record(hEvent, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    SIM_ENTRY();
    return event_record(hEvent, hStream, SIM_DS_PER_THREAD);
}

/* Query and synchronize both complete the event: work only ever runs when
 * someone looks, so a query is the moment the device "catches up". */
static CUresult event_complete(CUevent h)
{
    CUresult rc;
    sim_lock();
    struct sim_event *e = sim_handle_get(h, SIM_H_EVENT, &rc);
    if (e && e->stream) {
        struct sim_stream *s = e->stream;
        sim_drain(s, e->seq);
        e->stream = NULL;
        sim_sync_point(s->ctx->dev);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuEventQuery(CUevent hEvent)
{
    SIM_ENTRY();
    return event_complete(hEvent);
}

SIM_API CUresult cuEventSynchronize(CUevent hEvent)
{
    SIM_ENTRY();
    return event_complete(hEvent);
}

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
    CUresult rc;
    struct sim_event *b = NULL;
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_event *a = sim_handle_get(start, SIM_H_EVENT, &rc);
    if (a) b = sim_handle_get(end, SIM_H_EVENT, &rc);
    if (rc == CUDA_SUCCESS && ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS && (!a->recorded || !b->recorded)) rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS && (a->stream || b->stream)) rc = CUDA_ERROR_NOT_READY;
    if (rc == CUDA_SUCCESS) *ms = (float)(b->record_ms - a->record_ms);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    SIM_ENTRY();
    return elapsed(pMilliseconds, hStart, hEnd);
}

SIM_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    SIM_ENTRY();
    return elapsed(pMilliseconds, hStart, hEnd);
}

static CUresult stream_wait_event(CUstream hs, CUevent h, unsigned flags,
                                  enum sim_default_stream ds)
{
    CUresult rc;
    struct sim_stream *s;
    sim_lock();
    struct sim_event *e = sim_handle_get(h, SIM_H_EVENT, &rc);
    if (e) rc = sim_stream_resolve(hs, ds, &s);
    if (rc == CUDA_SUCCESS && e->stream && !sim_capturing(s))
        sim_stream_wait_for(s, e->stream, e->seq);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    SIM_ENTRY();
    return stream_wait_event(hStream, hEvent, Flags, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    SIM_ENTRY();
    return stream_wait_event(hStream, hEvent, Flags, SIM_DS_PER_THREAD);
}
