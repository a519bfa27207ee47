/* A trace's events become per-device allocation streams: only device memory
 * (cudaMalloc/cuMemAlloc families, stream-ordered pool allocations, VMM
 * handles), only what the process really got (successful, non-empty), and
 * each free matched to the allocation it ends. */
#include "replay/stream.h"

#include <stdlib.h>

#include "record/event.h"
#include "record/record.h"

void cf_rp_capture_init(struct cf_rp_capture *c, uint64_t start_ns)
{
    *c = (struct cf_rp_capture){.start_ns = start_ns};
}

void cf_rp_capture_fini(struct cf_rp_capture *c)
{
    for (int d = 0; d < CF_RP_MAX_DEVICES; d++) {
        if (c->dev[d] == NULL) continue;
        cf_rp_stream_fini(c->dev[d]);
        free(c->dev[d]);
    }
    cf_u64map_free(&c->ptrs);
    cf_u64map_free(&c->handles);
    cf_rp_capture_init(c, 0);
}

/* -1: not device memory the models replay. */
static int src_of(const struct cf_event *e)
{
    const struct cf_api_info *a = &cf_api_info[e->api];
    /* Graph nodes live in the graph's own pool, outside every allocator modelled. */
    if (a->role != 'A' || (e->flags & CF_EVF_GRAPH)) return -1;
    switch (a->kind) {
    case CF_KIND_DEVICE:
        return (e->flags & CF_EVF_ARENA) ? CF_RP_ARENA : CF_RP_RAW;
    case CF_KIND_POOL:
        return (e->flags & CF_EVF_ARENA) ? CF_RP_ARENA : CF_RP_POOL;
    case CF_KIND_VMM:
        return CF_RP_VMM;
    default:
        return -1;
    }
}

static struct cf_rp_stream *stream_of(struct cf_rp_capture *c, int device)
{
    /* An allocation whose device was not known went to the current device,
     * device 0 in most programs. */
    if (device < 0 || device >= CF_RP_MAX_DEVICES) device = 0;
    if (c->dev[device] == NULL) {
        c->dev[device] = malloc(sizeof *c->dev[device]);
        if (c->dev[device] == NULL) {
            c->failed = true;
            return NULL;
        }
        cf_rp_stream_init(c->dev[device], device);
    }
    return c->dev[device];
}

static uint64_t rel(const struct cf_rp_capture *c, uint64_t t)
{
    return t > c->start_ns ? t - c->start_ns : 0;
}

static void end_live(struct cf_rp_capture *c, struct cf_u64map *map, uint64_t key,
                     const struct cf_event *e)
{
    uint64_t v;
    if (!cf_u64map_del(map, key, &v)) return;
    struct cf_rp_stream *s = c->dev[v >> 32];
    if (s) cf_rp_stream_free(s, (uint32_t)v, rel(c, e->t_ns), e->seq);
}

static void take_alloc(struct cf_rp_capture *c, const struct cf_event *e)
{
    int src = src_of(e);
    if (e->result != 0 || e->addr == 0 || e->size == 0) return;
    if (e->size > CF_RP_MAX_SIZE || e->addr > UINT64_MAX - e->size) {
        c->skipped++;
        return;
    }
    if (src < 0) {
        c->skipped++;
        return;
    }
    struct cf_u64map *map = src == CF_RP_VMM ? &c->handles : &c->ptrs;
    if (cf_u64map_get(map, e->addr)) {
        c->replaced++;
        end_live(c, map, e->addr, e);
    }
    struct cf_rp_stream *s = stream_of(c, e->device);
    if (s == NULL) return;
    uint32_t id = cf_rp_stream_alloc(s, (enum cf_rp_src)src, e->size, e->addr, e->stream,
                                     rel(c, e->t_ns), e->seq);
    if (id == UINT32_MAX || cf_u64map_put(map, e->addr, (uint64_t)s->device << 32 | id) != 0)
        c->failed = true;
}

void cf_rp_capture_event(struct cf_rp_capture *c, const struct cf_event *e)
{
    if ((e->type != CF_EV_ALLOC && e->type != CF_EV_FREE) || e->api >= CF_API_COUNT) return;
    if (e->type == CF_EV_ALLOC) {
        take_alloc(c, e);
        return;
    }
    const struct cf_api_info *a = &cf_api_info[e->api];
    /* A failed free changes nothing; an unknown address is not ours to end. */
    if (a->role != 'F' || e->result != 0 || e->addr == 0) return;
    if (a->kind == CF_KIND_VMM)
        end_live(c, &c->handles, e->addr, e);
    else if (a->kind == CF_KIND_DEVICE || a->kind == CF_KIND_POOL)
        end_live(c, &c->ptrs, e->addr, e);
}
