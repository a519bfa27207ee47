/* The event sink: every event takes the next sequence number here and goes to
 * the trace. The lowest file of the record that builds events: the tables
 * (footprint.c, pool.c, sample.c, ...) emit through it, and nothing in it calls
 * back into them. */
#include "record/internal.h"

static uint64_t next_seq = 1;

uint64_t cf_seq_next(void)
{
    return __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
}

void cf_emit(struct cf_event *e)
{
    if (e->seq == 0) e->seq = cf_seq_next();
    cf_trace_emit(e);
}

void cf_trace_series(uint64_t seq, uint64_t now, int device, enum cf_series series, uint64_t value,
                     uint64_t used)
{
    struct cf_event e = {.type = CF_EV_SERIES,
                         .op = (uint8_t)series,
                         .seq = seq,
                         .t_ns = now,
                         .device = device,
                         .v = {value, used}};
    cf_trace_emit(&e);
}
