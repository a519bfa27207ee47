/* Events applied to the record's tables. The profiled process applies each
 * event as it happens (record.c builds them from the hooks' calls); `cudafrag
 * report TRACE` decodes a trace and applies the same events in seq order
 * (cf_apply_event). One set of functions for both is what makes the
 * offline report the exit report. */
#include <string.h>

#include "arena/arena.h"
#include "record/internal.h"

static pthread_mutex_t misc_lock = PTHREAD_MUTEX_INITIALIZER; /* OOM list, graph highs */

void cf_apply_lock(void)
{
    pthread_mutex_lock(&misc_lock);
}

void cf_apply_unlock(void)
{
    pthread_mutex_unlock(&misc_lock);
}

bool cf_apply_lock_until(const struct timespec *deadline)
{
    return cf_mutex_lock_until(&misc_lock, deadline);
}

/* Every field one by one: zeroing the node first would be a `rep stos` (cf_event_hot
 * in event.h says why not). */
static struct cf_alloc *new_alloc(const struct cf_event *e, struct cf_site *site)
{
    _Static_assert(sizeof(struct cf_alloc) == 96, "new_alloc sets every field of cf_alloc");
    struct cf_alloc *a = cf_meta_alloc(sizeof *a);
    if (a == NULL) return NULL;
    a->seq = a->t_end = 0;
    a->pool_rec = NULL;
    a->addr = e->addr;
    a->api = e->api;
    a->kind = (uint8_t)((e->flags & CF_EVF_GRAPH) ? CF_KIND_GRAPH : cf_api_info[e->api].kind);
    a->requested = e->size;
    a->granted = e->granted;
    a->granted_estimated = (e->flags & CF_EVF_ESTIMATED) != 0;
    a->device = e->device;
    a->tid = e->tid;
    a->stream = e->stream;
    a->pool = e->pool;
    a->t_ns = e->t_ns;
    a->arena = (e->flags & CF_EVF_ARENA) != 0;
    a->shadowed = (e->flags & CF_EVF_SHADOW) != 0;
    a->site = site;
    return a;
}

CF_COLD static void store_oom(const struct cf_event *e, struct cf_site *site)
{
    pthread_mutex_lock(&misc_lock);
    if (cf_rec.nooms < CF_MAX_OOMS) {
        cf_rec.ooms[cf_rec.nooms++] = (struct cf_oom){.api = (enum cf_api)e->api,
                                                      .device = e->device,
                                                      .request = e->size,
                                                      .free_bytes = e->v[0],
                                                      .total_bytes = e->v[1],
                                                      .t_ns = e->t_ns,
                                                      .site = site};
    } else {
        cf_rec.ooms_dropped++;
    }
    pthread_mutex_unlock(&misc_lock);
}

bool cf_apply_alloc(struct cf_event *e, struct cf_site *site)
{
    bool ok = e->result == 0;
    cf_metrics_api((enum cf_api)e->api, ok ? e->size : 0, (int)e->result, e->ns);
    if (CF_UNLIKELY(e->flags & CF_EVF_NO_STACK))
        __atomic_add_fetch(&cf_rec.allocs_without_stack, 1, __ATOMIC_RELAXED);
    if (ok && e->addr == 0) return false; /* a zero-byte request: nothing was allocated */
    if (!ok) {
        enum cf_kind kind = (e->flags & CF_EVF_GRAPH) ? CF_KIND_GRAPH : cf_api_info[e->api].kind;
        cf_site_fail(site, cf_slot_of(kind, e->device));
        if (e->flags & CF_EVF_OOM) store_oom(e, site);
        return false;
    }
    struct cf_alloc *a = new_alloc(e, site);
    if (a == NULL) return false;
    if (a->kind == CF_KIND_GRAPH) {
        __atomic_add_fetch(&cf_rec.graph.alloc_nodes, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&cf_rec.graph.node_bytes, a->requested, __ATOMIC_RELAXED);
    }
    struct cf_pool *pool =
        a->kind == CF_KIND_POOL && a->pool ? cf_pool_get(a->pool, a->device) : NULL;
    a->pool_rec = pool;
    cf_metrics_size(a->requested);
    if (a->shadowed) cf_shadow_alloc(a->addr, a->requested, a->device < 0 ? 0 : a->device);
    uint64_t seq = 0;
    bool new_peak = cf_live_insert(a, site, pool, &seq);
    e->seq = seq;
    return new_peak;
}

/* a: the entry cf_live_remove took out (NULL: the address was not live). */
void cf_apply_free(struct cf_event *e, struct cf_alloc *a)
{
    enum cf_api api = (enum cf_api)e->api;
    uint64_t now = e->t_ns;
    if (cf_api_info[api].kind == CF_KIND_GRAPH)
        __atomic_add_fetch(&cf_rec.graph.free_nodes, 1, __ATOMIC_RELAXED);
    if (e->seq == 0 && a) e->seq = a->seq;
    if (e->result != 0 || e->addr == 0) { /* freeing NULL is a valid no-op */
        if (a && a->shadowed) cf_shadow_alloc(a->addr, a->requested, a->device < 0 ? 0 : a->device);
        if (a) cf_live_restore(a, now);
        cf_metrics_api(api, 0, (int)e->result, e->ns);
        return;
    }
    if (a == NULL) {
        cf_metrics_api(api, 0, 0, e->ns);
        __atomic_add_fetch(&cf_rec.unknown_frees, 1, __ATOMIC_RELAXED);
        return;
    }
    cf_metrics_api(api, a->requested, 0, e->ns);
    cf_live_forget(a);
}

struct cf_alloc *cf_apply_free_begin(uint64_t addr, uint64_t now, uint64_t *end)
{
    struct cf_alloc *a = addr ? cf_live_remove(addr, now, end) : NULL;
    if (a && a->shadowed) cf_shadow_free(addr);
    return a;
}

static void raise_to(uint64_t *high, uint64_t v)
{
    if (v > *high) *high = v;
}

void cf_apply_graph_high(const struct cf_event *e)
{
    if (e->device < 0 || e->device >= CF_MAX_DEVICES) return;
    pthread_mutex_lock(&misc_lock);
    raise_to(&cf_rec.graph.reserved_high[e->device], e->v[0]);
    raise_to(&cf_rec.graph.used_high[e->device], e->v[1]);
    pthread_mutex_unlock(&misc_lock);
}

void cf_apply_mark(const struct cf_event *e)
{
    pthread_mutex_lock(&misc_lock);
    if (cf_rec.nmarks < CF_MAX_MARKS) {
        struct cf_user_mark *m = &cf_rec.marks[cf_rec.nmarks++];
        m->t_ns = e->t_ns;
        uint32_t n = e->len < sizeof m->text - 1 ? e->len : (uint32_t)sizeof m->text - 1;
        memcpy(m->text, e->str, n);
        m->text[n] = '\0';
    } else {
        cf_rec.marks_dropped++;
    }
    pthread_mutex_unlock(&misc_lock);
}

/* ---- replay ---- */

/* Sites by the id the trace gives them. */
static struct cf_site **sites_by_id;
static uint32_t sites_cap;

static void define_site(const struct cf_event *e)
{
    if (e->site == 0 || e->site > (1u << 24)) return;
    if (e->site >= sites_cap) {
        uint32_t cap = sites_cap ? sites_cap : 256;
        while (cap <= e->site)
            cap *= 2;
        struct cf_site **grown = cf_meta_alloc(cap * sizeof *grown);
        if (grown == NULL) return;
        memset(grown, 0, cap * sizeof *grown);
        if (sites_by_id) {
            memcpy(grown, sites_by_id, sites_cap * sizeof *grown);
            cf_meta_free(sites_by_id, sites_cap * sizeof *grown);
        }
        sites_by_id = grown;
        sites_cap = cap;
    }
    uintptr_t frames[CF_MAX_FRAMES];
    uint32_t n = e->nframes < CF_MAX_FRAMES ? e->nframes : CF_MAX_FRAMES;
    for (uint32_t i = 0; i < n; i++)
        frames[i] = (uintptr_t)e->frames[i];
    bool created;
    sites_by_id[e->site] = cf_site_get(e->addr, (enum cf_api)e->api, frames, n, &created);
}

static struct cf_site *site_by_id(uint32_t id)
{
    return id < sites_cap ? sites_by_id[id] : NULL;
}

/* A copy of the event is applied: the seq the tables give an ALLOC or FREE in the
 * process is the copy's here, and the trace's stays as it was. */
void cf_apply_event(const struct cf_event *ev)
{
    struct cf_event e = *ev;
    /* A SITE names the API it was first seen with, used as an index in the report. */
    bool has_api = e.type == CF_EV_ALLOC || e.type == CF_EV_FREE || e.type == CF_EV_CALL ||
                   e.type == CF_EV_SITE;
    if (has_api && e.api >= CF_API_COUNT) return; /* a damaged or newer trace */
    switch (e.type) {
    case CF_EV_ALLOC:
        cf_apply_alloc(&e, site_by_id(e.site));
        break;
    case CF_EV_FREE: {
        /* The allocation's life ended where the free began, as in the process. */
        uint64_t end = e.t_ns > e.ns ? e.t_ns - e.ns : 1;
        cf_apply_free(&e, cf_apply_free_begin(e.addr, e.t_ns, &end));
        break;
    }
    case CF_EV_CALL:
        cf_metrics_api((enum cf_api)e.api, 0, (int)e.result, e.ns);
        break;
    case CF_EV_POOL:
        cf_pool_apply(&e);
        break;
    case CF_EV_SERIES:
        if (e.op == CF_SERIES_GRAPH || e.op == CF_SERIES_ARENA)
            cf_fp_series(e.device, (enum cf_series)e.op, (int64_t)e.v[0], e.v[1], e.t_ns);
        break;
    case CF_EV_MEMINFO:
        cf_fp_meminfo(e.device, e.v[0], e.v[1], e.t_ns);
        break;
    case CF_EV_GRAPH_HIGH:
        cf_apply_graph_high(&e);
        break;
    case CF_EV_SITE:
        define_site(&e);
        break;
    case CF_EV_MARK:
        cf_apply_mark(&e);
        break;
    case CF_EV_PYFRAME:
        cf_py_define(&e);
        break;
    default: /* MODULE, END: read by the command itself */
        break;
    }
}
