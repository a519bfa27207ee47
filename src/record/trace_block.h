/* A thread's block of trace records, and the queue that takes full blocks to the
 * writer thread (trace_block.c). Records are events as they are in memory: the
 * event path only copies them, the writer encodes them (trace_codec.c). */
#ifndef CF_RECORD_TRACE_BLOCK_H
#define CF_RECORD_TRACE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "record/event.h"
#include "base/export.h"

/* A block holds about 2 900 allocation records; encoded, they are a chunk of
 * 20-40 KiB for zstd, which compresses that as well as larger ones. */
#define CF_BLOCK_BYTES (256u * 1024u)
/* Encoded, a record takes at most 143 bytes for its 88 (an ALLOC, FREE or CALL:
 * trace_codec.c) and 10 per frame for 8: the encoder's buffer, 3 blocks, holds
 * any block's events. */
#define CF_BLOCK_ENCODED_MAX (3u * CF_BLOCK_BYTES)

/* What every event changes (the fill, the count) comes first, in the block's first
 * cache line (a block is page-aligned); the writer's fields after it. The records
 * start on a line of their own. */
struct cf_block {
    uint32_t len; /* bytes of records in data */
    uint32_t nevents;
    bool defs; /* holds a SITE, MODULE, PYFRAME or END event */
    struct cf_block *next;
    uint32_t tid;
    uint8_t data[CF_BLOCK_BYTES] __attribute__((aligned(64)));
};

/* ---- records: an event as the block holds it ----
 *
 * ALLOC, FREE and CALL: the event's first 88 bytes (type to ns), and v[0..1] after
 * them when it failed for memory (CF_EVF_OOM). Any other event: all of struct
 * cf_event, then its frames, str and str2, the record rounded up to 8 bytes; the
 * writer points the copy's pointers at them. */
#define CF_HOT_RECORD_BYTES offsetof(struct cf_event, v)
_Static_assert(CF_HOT_RECORD_BYTES == 88, "the hot record is the event's first 88 bytes");

static inline bool cf_record_hot(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC || e->type == CF_EV_FREE || e->type == CF_EV_CALL;
}

static inline bool cf_record_oom_values(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC && (e->flags & CF_EVF_OOM);
}

/* An ALLOC, FREE or CALL event into b, if it fits: the common case, inline. */
static inline bool cf_block_put_hot(struct cf_block *b, const struct cf_event *e)
{
    bool oom = cf_record_oom_values(e);
    uint32_t n = (uint32_t)CF_HOT_RECORD_BYTES + (oom ? 16u : 0u);
    if (CF_UNLIKELY(n > CF_BLOCK_BYTES - b->len)) return false;
    uint8_t *p = b->data + b->len;
    /* seq is set last, just before the event is emitted: copied on its own, its
     * load is served by its store, where a 16-byte load across it and site would
     * wait for the store to reach the cache (about 15 cycles). */
    const size_t seq = offsetof(struct cf_event, seq), t = offsetof(struct cf_event, t_ns);
    memcpy(p, e, seq);
    memcpy(p + seq, &e->seq, sizeof e->seq);
    memcpy(p + t, &e->t_ns, CF_HOT_RECORD_BYTES - t);
    if (oom) memcpy(p + CF_HOT_RECORD_BYTES, e->v, 16);
    b->len += n;
    b->nevents++;
    return true;
}

/* Any other event (a SITE, a MODULE, ...) into b, if it fits: the whole struct and
 * its payload. An event larger than a block never fits. */
bool cf_block_put_record(struct cf_block *b, const struct cf_event *e);
/* The record at p back into e, whose pointers then point into the record;
 * returns the record's size. */
uint32_t cf_block_get_record(const uint8_t *p, struct cf_event *e);

/* ---- the pool of blocks and the queue to the writer ---- */

/* An empty block for thread tid (NULL: no memory). */
struct cf_block *cf_block_new(uint32_t tid);
/* b to the writer; blocks reach the file in the order they are queued. */
void cf_block_queue(struct cf_block *b);
/* Every queued block, oldest first (NULL: none). */
struct cf_block *cf_block_take_queued(void);
/* Written blocks back to the pool. */
void cf_block_recycle(struct cf_block *b);
/* The writer's wait: until a block is queued, until (CLOCK_MONOTONIC) passes
 * (true), or go_on() says stop. */
bool cf_block_wait(const struct timespec *until, bool (*go_on)(void));
/* The queue's condition, at init and in a forked child that traces again. */
void cf_block_queue_init(void);
/* In a forked child, whose parent's threads (the writer among them) are gone: the
 * queue empty, its lock made anew. */
void cf_block_queue_after_fork(void);

#endif
