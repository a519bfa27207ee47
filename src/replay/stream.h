/* The allocation stream a what-if replay feeds to each allocator model: one
 * device's device-memory allocations and frees, in the traced process's order,
 * with frees already matched to their allocation (ids are dense per device,
 * so a model keeps its per-allocation state in arrays). */
#ifndef CF_REPLAY_STREAM_H
#define CF_REPLAY_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/u64map.h"

/* How the traced process got the memory: what a model may take from the trace. */
enum cf_rp_src {
    CF_RP_RAW,  /* cudaMalloc/cuMemAlloc families from the driver: addr is the driver's placement */
    CF_RP_POOL, /* stream-ordered (async) pool allocations */
    CF_RP_VMM,  /* cuMemCreate handles: physical memory, addr is the handle */
    CF_RP_ARENA, /* served by cudafrag's arena: addr is the arena's placement */
};

struct cf_rp_op {
    bool free;
    uint8_t src;   /* enum cf_rp_src of the allocation */
    uint32_t id;   /* the allocation (frees name the allocation they end) */
    uint64_t size; /* bytes requested (copied into the free) */
    uint64_t addr; /* the address the traced process got (copied into the free) */
    uint64_t strm; /* the stream it was allocated on, 0 for synchronous calls */
    uint64_t t_ns; /* since the trace's start */
    uint64_t seq;  /* the event's place in the trace */
};

struct cf_rp_stream {
    int device;
    struct cf_rp_op *ops;
    uint32_t nops, cap, nallocs, nfrees;
    uint64_t live, peak_live, peak_live_t_ns; /* bytes requested and live */
    uint32_t *alloc_op;                       /* by id: the index of its allocation */
    uint8_t *is_live;                         /* by id */
    uint32_t id_cap;
    bool failed; /* host memory ran out while building: the stream is incomplete */
};

void cf_rp_stream_init(struct cf_rp_stream *s, int device);
void cf_rp_stream_fini(struct cf_rp_stream *s);
/* Appends an allocation and returns its id (UINT32_MAX when out of memory). */
uint32_t cf_rp_stream_alloc(struct cf_rp_stream *s, enum cf_rp_src src, uint64_t size,
                            uint64_t addr, uint64_t strm, uint64_t t_ns, uint64_t seq);
/* Appends the free of a live allocation; false (nothing appended) when id is not live. */
bool cf_rp_stream_free(struct cf_rp_stream *s, uint32_t id, uint64_t t_ns, uint64_t seq);

/* ---- from a trace's events (capture.c) ---- */

#define CF_RP_MAX_DEVICES 64
/* Larger requests are damage in the trace, not allocations (no device has a PiB). */
#define CF_RP_MAX_SIZE ((uint64_t)1 << 50)

struct cf_event;

struct cf_rp_capture {
    struct cf_rp_stream *dev[CF_RP_MAX_DEVICES];
    struct cf_u64map ptrs, handles; /* live address / VMM handle -> device << 32 | id */
    uint64_t start_ns;
    uint64_t skipped;  /* successful allocations that are not device memory (host, managed,
                          arrays, graph nodes) */
    uint64_t replaced; /* an address came back while live: its free was missed */
    bool failed;
};

void cf_rp_capture_init(struct cf_rp_capture *c, uint64_t start_ns);
/* Takes one event of the trace, in seq order. */
void cf_rp_capture_event(struct cf_rp_capture *c, const struct cf_event *e);
void cf_rp_capture_fini(struct cf_rp_capture *c);

#endif
