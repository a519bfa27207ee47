/* The replay's after_event hook keeps a copy of the live set (address -> site,
 * size, device) that mirrors the record's own rules (record/apply.c, live.c):
 * a failed free changes nothing, an unknown address is ignored, an allocation
 * at a live address retires the old one. From it, each device's live bytes per
 * site; at every new live or footprint peak of a device those are copied out.
 * A peak can be reached thousands of times in a rising phase, so only the sites
 * that changed since the last copy are copied (a dirty list per device). */
#include "cli/collect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/replay.h"
#include "record/record.h"

#define MAX_SITE_ID (1u << 24) /* as record/apply.c: larger ids name no site */
#define DIRTY_LIVE  1u
#define DIRTY_FP    2u

struct live_table {
    struct cf_coll_alloc *slots; /* addr 0: empty (nothing is allocated at 0) */
    uint64_t cap, n;
};

struct dev_state {
    bool seen;
    struct cf_coll_values last;
    uint64_t peak_live, peak_fp; /* the peaks last copied */
    uint64_t live_at_fp;         /* the live bytes at the footprint peak last copied */
    uint64_t *cur;               /* live bytes by site id */
    uint8_t *dirty;
    uint32_t *dirty_live, *dirty_fp, n_live, n_fp;
};

struct cf_coll_state {
    struct cf_coll *c;
    const struct cf_coll_sink *sink;
    struct live_table live;
    uint32_t idcap;
    int seen[CF_MAX_DEVICES];
    unsigned nseen;
    struct dev_state d[CF_MAX_DEVICES];
    bool failed; /* out of memory: the figures would be wrong */
};

/* ---- the live set: open addressing, linear probing, backward-shift delete ---- */

static uint64_t slot_of(const struct live_table *t, uint64_t addr)
{
    return ((addr >> 8) * 0x9e3779b97f4a7c15ull) & (t->cap - 1);
}

static bool table_grow(struct live_table *t)
{
    struct live_table g = {.cap = t->cap ? t->cap * 2 : 1024};
    g.slots = calloc(g.cap, sizeof *g.slots);
    if (g.slots == NULL) return false;
    for (uint64_t i = 0; i < t->cap; i++) {
        if (t->slots[i].addr == 0) continue;
        uint64_t j = slot_of(&g, t->slots[i].addr);
        while (g.slots[j].addr)
            j = (j + 1) & (g.cap - 1);
        g.slots[j] = t->slots[i];
    }
    g.n = t->n;
    free(t->slots);
    *t = g;
    return true;
}

static uint64_t table_find(const struct live_table *t, uint64_t addr)
{
    if (t->cap == 0) return UINT64_MAX;
    for (uint64_t i = slot_of(t, addr);; i = (i + 1) & (t->cap - 1)) {
        if (t->slots[i].addr == addr) return i;
        if (t->slots[i].addr == 0) return UINT64_MAX;
    }
}

static bool table_put(struct live_table *t, const struct cf_coll_alloc *a)
{
    if ((t->n + 1) * 4 > t->cap * 3 && !table_grow(t)) return false;
    uint64_t i = slot_of(t, a->addr);
    while (t->slots[i].addr)
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = *a;
    t->n++;
    return true;
}

static bool table_take(struct live_table *t, uint64_t addr, struct cf_coll_alloc *out)
{
    uint64_t i = table_find(t, addr), mask = t->cap - 1;
    if (i == UINT64_MAX) return false;
    *out = t->slots[i];
    t->slots[i].addr = 0;
    t->n--;
    /* Pull later members of the run back so lookups never stop at the hole. */
    for (uint64_t j = (i + 1) & mask; t->slots[j].addr; j = (j + 1) & mask) {
        uint64_t home = slot_of(t, t->slots[j].addr);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            t->slots[j].addr = 0;
            i = j;
        }
    }
    return true;
}

/* ---- per-site arrays, grown as site ids appear ---- */

static bool grow_u64(uint64_t **p, uint32_t old, uint32_t cap)
{
    uint64_t *n = realloc(*p, cap * sizeof *n);
    if (n == NULL) return false;
    memset(n + old, 0, (cap - old) * sizeof *n);
    *p = n;
    return true;
}

static bool grow_dev(struct dev_state *d, struct cf_coll_dev *out, uint32_t old, uint32_t cap)
{
    uint8_t *dirty = realloc(d->dirty, cap);
    uint32_t *l = realloc(d->dirty_live, cap * sizeof *l);
    if (dirty) d->dirty = dirty;
    if (l) d->dirty_live = l;
    uint32_t *f = realloc(d->dirty_fp, cap * sizeof *f);
    if (f) d->dirty_fp = f;
    if (!dirty || !l || !f) return false;
    memset(d->dirty + old, 0, cap - old);
    return grow_u64(&d->cur, old, cap) && grow_u64(&out->at_live_peak.by_id, old, cap) &&
           grow_u64(&out->at_footprint_peak.by_id, old, cap);
}

static bool ensure_id(struct cf_coll_state *st, uint32_t id)
{
    if (id < st->idcap) return true;
    uint32_t old = st->idcap, cap = old ? old : 64;
    while (cap <= id)
        cap *= 2;
    struct cf_coll *c = st->c;
    if (!grow_u64(&c->hash_of_id, old, cap) || !grow_u64(&c->calls_of_id, old, cap) ||
        !grow_u64(&c->bytes_of_id, old, cap))
        return false;
    for (unsigned k = 0; k < st->nseen; k++)
        if (!grow_dev(&st->d[st->seen[k]], &c->dev[st->seen[k]], old, cap)) return false;
    st->idcap = c->nids = cap;
    return true;
}

/* ---- events ---- */

static uint32_t site_id(uint32_t id)
{
    return id < MAX_SITE_ID ? id : 0;
}

static void account(struct cf_coll_state *st, const struct cf_coll_alloc *a, int sign)
{
    if (!a->counted || !st->d[a->device].seen) return;
    struct dev_state *d = &st->d[a->device];
    d->cur[a->site] += (uint64_t)sign * a->size;
    if (!(d->dirty[a->site] & DIRTY_LIVE)) d->dirty_live[d->n_live++] = a->site;
    if (!(d->dirty[a->site] & DIRTY_FP)) d->dirty_fp[d->n_fp++] = a->site;
    d->dirty[a->site] |= DIRTY_LIVE | DIRTY_FP;
}

static void see_device(struct cf_coll_state *st, int dev)
{
    if (dev < 0 || dev >= CF_MAX_DEVICES || st->d[dev].seen || !cf_rec.dev[dev].seen) return;
    if (!grow_dev(&st->d[dev], &st->c->dev[dev], 0, st->idcap)) {
        st->failed = true;
        return;
    }
    st->d[dev].seen = true;
    st->c->dev[dev].used = true;
    st->seen[st->nseen++] = dev;
}

static void on_alloc(struct cf_coll_state *st, const struct cf_event *e)
{
    const struct cf_coll_sink *k = st->sink;
    if (e->result != 0) {
        if (k && k->alloc) k->alloc(e, NULL, k->ctx);
        return;
    }
    if (e->addr == 0) return; /* a zero-byte request: nothing was allocated */
    struct cf_coll_alloc a = {.addr = e->addr,
                              .size = e->size,
                              .granted = e->granted,
                              .stream = e->stream,
                              .site = site_id(e->site),
                              .device = e->device,
                              .api = e->api};
    a.kind = (uint8_t)((e->flags & CF_EVF_GRAPH) ? CF_KIND_GRAPH : cf_api_info[e->api].kind);
    a.counted = a.kind != CF_KIND_HOST && a.kind != CF_KIND_MANAGED && a.kind != CF_KIND_GRAPH &&
                a.device >= 0 && a.device < CF_MAX_DEVICES;
    see_device(st, a.device);
    if (!ensure_id(st, a.site)) st->failed = true;
    if (st->failed) return;
    st->c->calls_of_id[a.site]++;
    st->c->bytes_of_id[a.site] += a.size;
    struct cf_coll_alloc stale;
    if (table_take(&st->live, a.addr, &stale)) {
        account(st, &stale, -1);
        if (k && k->release) k->release(e, &stale, k->ctx);
    }
    if (!table_put(&st->live, &a)) st->failed = true;
    account(st, &a, +1);
    if (k && k->alloc) k->alloc(e, &a, k->ctx);
}

static void on_free(struct cf_coll_state *st, const struct cf_event *e)
{
    struct cf_coll_alloc a;
    if (e->addr == 0 || e->result != 0 || !table_take(&st->live, e->addr, &a)) return;
    account(st, &a, -1);
    if (st->sink && st->sink->release) st->sink->release(e, &a, st->sink->ctx);
}

/* Copies the sites that changed since the last copy into a peak's figures. */
static void commit(struct dev_state *d, struct cf_coll_peak *p, uint32_t *list, uint32_t *n,
                   uint8_t bit)
{
    for (uint32_t i = 0; i < *n; i++) {
        p->by_id[list[i]] = d->cur[list[i]];
        d->dirty[list[i]] &= (uint8_t)~bit;
    }
    *n = 0;
}

static void check_device(struct cf_coll_state *st, int dev, uint64_t t)
{
    const struct cf_device_stats *ds = &cf_rec.dev[dev];
    struct dev_state *d = &st->d[dev];
    struct cf_coll_dev *out = &st->c->dev[dev];
    if (ds->peak_live_bytes > d->peak_live) {
        commit(d, &out->at_live_peak, d->dirty_live, &d->n_live, DIRTY_LIVE);
        out->at_live_peak.t_ns = t;
        out->at_live_peak.total = ds->peak_live_bytes;
        out->at_live_peak.graph_used = ds->graph_used;
        d->peak_live = ds->peak_live_bytes;
    }
    /* The record moves the footprint peak's instant along its plateau to more live
     * bytes (a pool's growth comes just before the allocation it served). */
    if (ds->peak_footprint > d->peak_fp || ds->live_at_peak_footprint > d->live_at_fp) {
        commit(d, &out->at_footprint_peak, d->dirty_fp, &d->n_fp, DIRTY_FP);
        out->at_footprint_peak.t_ns = t;
        out->at_footprint_peak.total = ds->live_at_peak_footprint;
        out->at_footprint_peak.graph_used = ds->graph_used;
        d->peak_fp = ds->peak_footprint;
        d->live_at_fp = ds->live_at_peak_footprint;
    }
    struct cf_coll_values v = {ds->live_bytes, ds->footprint, ds->pool_reserved, ds->arena_mapped};
    if (memcmp(&v, &d->last, sizeof v) == 0) return;
    d->last = v;
    if (st->sink && st->sink->point) st->sink->point(dev, t, &v, st->sink->ctx);
}

static bool has_device(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC || e->type == CF_EV_POOL || e->type == CF_EV_SERIES ||
           e->type == CF_EV_MEMINFO;
}

static void after_event(const struct cf_event *e, void *ctx)
{
    struct cf_coll_state *st = ctx;
    bool api_ok = e->api < CF_API_COUNT; /* the record skips others too */
    if (e->type == CF_EV_SITE && site_id(e->site) && ensure_id(st, e->site))
        st->c->hash_of_id[e->site] = e->addr;
    else if (e->type == CF_EV_ALLOC && api_ok)
        on_alloc(st, e);
    else if (e->type == CF_EV_FREE && api_ok)
        on_free(st, e);
    if (has_device(e) && e->device >= 0)
        see_device(st, e->device);
    else if (has_device(e)) /* a pool met before its device was known */
        for (int d = 0; d < CF_MAX_DEVICES; d++)
            see_device(st, d);
    st->c->start_ns = cf_rec.start_ns; /* set from the header before the first event */
    uint64_t t = e->t_ns > st->c->start_ns ? e->t_ns - st->c->start_ns : 0;
    for (unsigned i = 0; i < st->nseen && !st->failed; i++)
        check_device(st, st->seen[i], t);
    if (st->sink && st->sink->event) st->sink->event(e, st->sink->ctx);
}

int cf_coll_run(struct cf_coll *c, const char *path, const struct cf_coll_sink *sink)
{
    memset(c, 0, sizeof *c);
    struct cf_coll_state *st = calloc(1, sizeof *st);
    if (st == NULL) return 1;
    st->c = c;
    st->sink = sink;
    c->state = st;
    ensure_id(st, 0);
    struct cf_replay_hooks hooks = {.after_event = after_event, .ctx = st};
    int rc = cf_replay_open(path, &hooks, &c->snap);
    if (rc == 0) c->open = true;
    if (rc == 0 && st->failed) {
        fprintf(stderr, "cudafrag: out of memory while analysing %s\n", path);
        rc = 1;
    }
    return rc;
}

void cf_coll_free(struct cf_coll *c)
{
    struct cf_coll_state *st = c->state;
    if (c->open) cf_replay_close(&c->snap);
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        free(c->dev[d].at_live_peak.by_id);
        free(c->dev[d].at_footprint_peak.by_id);
        if (st == NULL) continue;
        free(st->d[d].cur);
        free(st->d[d].dirty);
        free(st->d[d].dirty_live);
        free(st->d[d].dirty_fp);
    }
    if (st) free(st->live.slots);
    free(st);
    free(c->hash_of_id);
    free(c->calls_of_id);
    free(c->bytes_of_id);
    memset(c, 0, sizeof *c);
}

int cf_coll_site_index(const struct cf_coll *c, uint32_t id)
{
    if (id == 0 || id >= c->nids || c->hash_of_id[id] == 0) return -1;
    return cf_snap_site_index(&c->snap, c->hash_of_id[id]);
}

void cf_coll_each_live(const struct cf_coll *c, void (*fn)(const struct cf_coll_alloc *, void *),
                       void *ctx)
{
    const struct live_table *t = c->state ? &c->state->live : NULL;
    for (uint64_t i = 0; t && i < t->cap; i++)
        if (t->slots[i].addr) fn(&t->slots[i], ctx);
}
