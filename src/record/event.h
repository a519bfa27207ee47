/* The record's one currency: every change to what cudafrag knows is an event.
 * In the profiled process the hooks' calls become events that are applied to
 * the tables (cf_rec_apply) and appended to the trace; `cudafrag report TRACE`
 * decodes the same events and applies them in seq order to the same tables, so
 * the exit report and the offline one come from one analysis. Their encoding in
 * the trace: record/trace_format.h and docs/trace-format.md. */
#ifndef CF_RECORD_EVENT_H
#define CF_RECORD_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// clang-format off
/* X(id, value): the numbers are part of the file format. */
#define CF_EVENT_TYPES(X)                                                                          \
    X(ALLOC, 1)      /* an allocation call, successful or not */                                  \
    X(FREE, 2)       /* a free call; seq is where the memory left the live set */                 \
    X(CALL, 3)       /* any other counted API call */                                             \
    X(POOL, 4)       /* pool created/seen, destroyed, threshold, trim, attribute sample */        \
    X(SERIES, 5)     /* a read footprint series: pool reserved delta, graph pool, arena */        \
    X(MEMINFO, 6)    /* cuMemGetInfo cross-check sample */                                         \
    X(GRAPH_HIGH, 7) /* graph memory pool high-water marks */                                     \
    X(SITE, 8)       /* a call site: its stack as (module, offset) frames */                      \
    X(MODULE, 9)     /* a loaded object: path, load bias, build-id */                             \
    X(MARK, 10)      /* cudafrag_mark() from the program */                                       \
    X(END, 11)       /* the final report was taken here; the arena's own figures */               \
    X(GRAPH_NODE, 12) /* a graph memory free node was added */                                  \
    X(PYFRAME, 13)    /* a Python frame: file, function, line */
// clang-format on
enum cf_ev_type {
#define CF_EV_ENUM(id, v) CF_EV_##id = v,
    CF_EVENT_TYPES(CF_EV_ENUM)
#undef CF_EV_ENUM
};

/* ALLOC flags. */
#define CF_EVF_ARENA     0x01u /* served by cudafrag's arena */
#define CF_EVF_GRAPH     0x02u /* made while capturing: a graph allocation node */
#define CF_EVF_OOM       0x04u /* failed with an out-of-memory code; v[0..1] = free, total */
#define CF_EVF_SHADOW    0x08u /* feeds the host-only arena model */
#define CF_EVF_ESTIMATED 0x10u /* granted is the documented rounding estimate */
#define CF_EVF_NO_STACK  0x20u /* the thread's stack had too little room left to unwind */

/* POOL operations. */
enum cf_pool_op {
    CF_POOL_SEEN = 1,      /* flags: 1 default, 2 created by the app */
    CF_POOL_DESTROYED = 2, /* reserved bytes go back to the device */
    CF_POOL_THRESHOLD = 3, /* v[0] = release threshold */
    CF_POOL_TRIM = 4,
    CF_POOL_SAMPLE = 5,   /* v[0..4] = reserved cur/high, used cur/high, threshold */
    CF_POOL_RESERVED = 6, /* v[0] = reserved bytes now (read after an allocation) */
};

#define CF_EV_STR_MAX 4096

/* A decoded event. Which fields mean something depends on type. */
struct cf_event {
    uint8_t type, api, flags, op;
    int32_t device;
    uint32_t tid;
    int32_t result;
    uint32_t site;
    uint64_t seq, t_ns;
    uint64_t addr, size, granted, stream, pool, ns;
    uint64_t v[8];
    /* SITE: frames; MODULE: path and build-id; MARK: text; PYFRAME: file and
     * function (id in site, line in v[0]). Points into the
     * decoder's buffer or the caller's memory. */
    uint32_t nframes;
    const uint64_t *frames; /* SITE: module id << 40 | offset */
    const char *str, *str2;
    uint32_t len, len2;
};

/* SITE frames in module CF_PY_MODULE are Python frames: the offset is a PYFRAME
 * id, or one of the markers below, which say why a thread has no Python frames. */
#define CF_PY_MODULE       0xFFFFFFu
#define CF_PY_GIL_RELEASED 1u  /* the thread runs Python but had released the GIL */
#define CF_PY_NO_FRAMES    2u  /* no Python code on the thread's stack */
#define CF_PY_UNNAMED      3u  /* a frame whose names could not be recorded */
#define CF_PY_FIRST_ID     16u /* PYFRAME ids start here */

#define CF_FRAME_MODULE(f) ((uint32_t)((f) >> 40))
#define CF_FRAME_OFFSET(f) ((f) & ((1ull << 40) - 1))
#define CF_FRAME(mod, off) (((uint64_t)(mod) << 40) | ((off) & ((1ull << 40) - 1)))

/* An event of the hook path (ALLOC, FREE, CALL) with every field zero but
 * v[2..7], which those events never carry: a compound literal would zero all 192
 * bytes with one `rep stos`, whose start-up cost showed in the cost of a call
 * (docs/performance.md). The fields are set after. */
static inline void cf_event_hot(struct cf_event *e, uint8_t type)
{
    e->type = type;
    e->api = e->flags = e->op = 0;
    e->device = e->result = 0;
    e->tid = e->site = 0;
    e->seq = e->t_ns = e->addr = e->size = e->granted = e->stream = e->pool = e->ns = 0;
    e->v[0] = e->v[1] = 0;
    e->nframes = e->len = e->len2 = 0;
    e->frames = NULL;
    e->str = e->str2 = NULL;
}

#endif
