#include "replay/stream.h"

#include <stdlib.h>
#include <string.h>

void cf_rp_stream_init(struct cf_rp_stream *s, int device)
{
    memset(s, 0, sizeof *s);
    s->device = device;
}

void cf_rp_stream_fini(struct cf_rp_stream *s)
{
    free(s->ops);
    free(s->alloc_op);
    free(s->is_live);
    cf_rp_stream_init(s, s->device);
}

static bool reserve_op(struct cf_rp_stream *s)
{
    if (s->nops < s->cap) return true;
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    if (cap <= s->cap) return false;
    struct cf_rp_op *ops = realloc(s->ops, (size_t)cap * sizeof *ops);
    if (ops == NULL) return false;
    s->ops = ops;
    s->cap = cap;
    return true;
}

static bool reserve_id(struct cf_rp_stream *s)
{
    if (s->nallocs < s->id_cap) return true;
    uint32_t cap = s->id_cap ? s->id_cap * 2 : 1024;
    if (cap <= s->id_cap) return false;
    uint32_t *at = realloc(s->alloc_op, (size_t)cap * sizeof *at);
    if (at == NULL) return false;
    s->alloc_op = at;
    uint8_t *live = realloc(s->is_live, cap);
    if (live == NULL) return false;
    s->is_live = live;
    s->id_cap = cap;
    return true;
}

uint32_t cf_rp_stream_alloc(struct cf_rp_stream *s, enum cf_rp_src src, uint64_t size,
                            uint64_t addr, uint64_t strm, uint64_t t_ns, uint64_t seq)
{
    /* UINT32_MAX names no allocation, and op indices must fit too. */
    if (s->failed || s->nops >= UINT32_MAX - 1 || !reserve_op(s) || !reserve_id(s)) {
        s->failed = true;
        return UINT32_MAX;
    }
    uint32_t id = s->nallocs++;
    s->alloc_op[id] = s->nops;
    s->is_live[id] = 1;
    s->ops[s->nops++] = (struct cf_rp_op){.src = (uint8_t)src,
                                          .id = id,
                                          .size = size,
                                          .addr = addr,
                                          .strm = strm,
                                          .t_ns = t_ns,
                                          .seq = seq};
    s->live += size;
    if (s->live > s->peak_live) {
        s->peak_live = s->live;
        s->peak_live_t_ns = t_ns;
    }
    return id;
}

bool cf_rp_stream_free(struct cf_rp_stream *s, uint32_t id, uint64_t t_ns, uint64_t seq)
{
    if (s->failed || id >= s->nallocs || !s->is_live[id]) return false;
    if (s->nops >= UINT32_MAX - 1 || !reserve_op(s)) {
        s->failed = true;
        return false;
    }
    struct cf_rp_op op = s->ops[s->alloc_op[id]];
    op.free = true;
    op.t_ns = t_ns;
    op.seq = seq;
    s->ops[s->nops++] = op;
    s->is_live[id] = 0;
    s->live -= op.size;
    s->nfrees++;
    return true;
}
