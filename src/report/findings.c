#include "report/findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/format.h"
#include "report/snapshot.h"
#include "util/log.h"

#define MAX_LEAK_FINDINGS 5

/* At most CUDAFRAG_TOP findings of one id (sites are visited busiest first);
 * the rest are counted in findings_dropped. */
static struct cf_finding *add(struct cf_snap *s, const char *id, const char *severity, int site)
{
    static const unsigned chunk = 16;
    unsigned same = 0;
    for (unsigned i = 0; i < s->nfindings; i++)
        same += strcmp(s->findings[i].id, id) == 0;
    if (same >= s->top) {
        s->findings_dropped++;
        return NULL;
    }
    if (s->nfindings % chunk == 0) {
        struct cf_finding *f = realloc(s->findings, (s->nfindings + chunk) * sizeof *f);
        if (f == NULL) return NULL;
        s->findings = f;
    }
    struct cf_finding *f = &s->findings[s->nfindings++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->severity = severity;
    f->site = site;
    return f;
}

static void num(struct cf_finding *f, const char *name, double v)
{
    if (f->nnum < CF_FINDING_NUMS) {
        f->num[f->nnum].name = name;
        f->num[f->nnum++].value = v;
    }
}

static void title(struct cf_finding *f, const char *fmt, ...) CF_PRINTF(2, 3);
static void title(struct cf_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->title, sizeof f->title, fmt, ap);
    va_end(ap);
}

static void advice(struct cf_finding *f, const char *fmt, ...) CF_PRINTF(2, 3);
static void advice(struct cf_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->advice, sizeof f->advice, fmt, ap);
    va_end(ap);
}

/* Synchronous device allocations: each one is a driver round trip. */
static bool is_sync_device_alloc(enum cf_api api)
{
    return api == CF_API_cudaMalloc || api == CF_API_cuMemAlloc || api == CF_API_cudaMallocPitch ||
           api == CF_API_cuMemAllocPitch || api == CF_API_cudaMalloc3D;
}

static void site_rules(struct cf_snap *s, unsigned i, bool *any_sizes)
{
    const struct cf_site *st = &s->sites[i];
    char where[512], a[32], b[32];
    cf_snap_site_label(s, (int)i, where, sizeof where);
    const char *api = cf_api_info[st->api].name;

    double rate = cf_site_rate(st);
    struct cf_finding *f;
    if (is_sync_device_alloc(st->api) && rate > CF_RATE_PER_S &&
        (f = add(s, "alloc-rate", rate > 10 * CF_RATE_PER_S ? "high" : "medium", (int)i))) {
        title(f, "%s called %llu times at %.0f/s at %s", api, (unsigned long long)st->calls, rate,
              where);
        advice(f,
               "Pool these allocations: use cudaMallocAsync/cudaFreeAsync (the driver caches "
               "freed memory in a pool) or a caching allocator, or allocate once and reuse the "
               "buffer. Every %s/free pair is a driver call that can synchronize the device.",
               api);
        num(f, "calls", (double)st->calls);
        num(f, "rate_per_s", rate);
        num(f, "bytes", (double)st->bytes);
    }
    if (st->distinct_sizes > CF_SITE_MANY_SIZES && s->rec.distinct_sizes > CF_MANY_SIZES &&
        (f = add(s, "many-sizes", "medium", (int)i))) {
        *any_sizes = true;
        bool capped = st->distinct_sizes > CF_SITE_SIZES;
        title(f, "%s%u distinct sizes (%s to %s) requested at %s; %llu in the whole process",
              capped ? "more than " : "", capped ? CF_SITE_SIZES : st->distinct_sizes,
              cf_fmt_bytes(st->min_size, a, sizeof a), cf_fmt_bytes(st->max_size, b, sizeof b),
              where, (unsigned long long)s->rec.distinct_sizes);
        advice(f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
                  "of 2 MiB above) so a freed block fits the next request; many distinct sizes "
                  "defeat caching allocators and pools and fragment the free space.");
        num(f, "site_distinct_sizes", st->distinct_sizes);
        num(f, "process_distinct_sizes", (double)s->rec.distinct_sizes);
        num(f, "min_size_bytes", (double)st->min_size);
        num(f, "max_size_bytes", (double)st->max_size);
    }
    double life = cf_site_mean_lifetime_s(st);
    if (st->calls >= CF_HOT_CALLS && st->frees * 2 >= st->calls && life < CF_HOT_LIFETIME_S &&
        (f = add(s, "hot-loop", "medium", (int)i))) {
        char t[32];
        title(f, "%llu allocations at %s live only %s on average: allocation inside a hot loop",
              (unsigned long long)st->calls, where, cf_fmt_secs(life, t, sizeof t));
        advice(f, "Hoist the allocation out of the loop: allocate the buffer once (sized for the "
                  "largest iteration) and reuse it, or keep a scratch buffer per stream.");
        num(f, "calls", (double)st->calls);
        num(f, "frees", (double)st->frees);
        num(f, "mean_lifetime_s", life);
    }
}

/* Leaks grouped by what the report shows as their site (the innermost frame):
 * different stacks through one allocating function -- a framework's allocator
 * called from many places -- make one finding, not one per stack. */
struct leak_group {
    char where[512];
    uint64_t bytes, count, site_frees;
    int site;
    enum cf_kind kind;
};

static unsigned group_leaks(const struct cf_snap *s, struct leak_group *g, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        char where[sizeof g->where];
        cf_snap_site_label(s, l->site, where, sizeof where);
        unsigned k = 0;
        while (k < n && strcmp(g[k].where, where) != 0)
            k++;
        if (k == n) {
            if (n == max) continue;
            memset(&g[n], 0, sizeof g[n]);
            memcpy(g[n].where, where, sizeof where);
            g[n].site = l->site;
            g[n].kind = l->kind;
            n++;
        }
        g[k].bytes += l->bytes;
        g[k].count += l->count;
        g[k].site_frees += l->site >= 0 ? s->sites[l->site].frees : 0;
    }
    return n;
}

static void leak_findings(struct cf_snap *s)
{
    struct leak_group g[MAX_LEAK_FINDINGS];
    unsigned n = group_leaks(s, g, MAX_LEAK_FINDINGS);
    char a[32];
    for (unsigned i = 0; i < n; i++) {
        struct cf_finding *f =
            add(s, "leak", g[i].bytes >= (1u << 20) ? "medium" : "low", g[i].site);
        if (f == NULL) return;
        title(f, "%llu %s allocation%s (%s) still live at exit from %s",
              (unsigned long long)g[i].count, cf_kind_name[g[i].kind], g[i].count == 1 ? "" : "s",
              cf_fmt_bytes(g[i].bytes, a, sizeof a), g[i].where);
        if (g[i].site_frees == 0)
            advice(f, "Nothing allocated here was freed during the whole run: typical of a "
                      "caching allocator's segments (PyTorch, CuPy and JAX keep freed blocks "
                      "for reuse until exit) or of buffers meant to live as long as the "
                      "program. Then this is memory held, not lost -- the framework's own "
                      "statistics tell how much of it was in use. Otherwise free it with the "
                      "matching call before the program exits.");
        else
            advice(f, "Free them with the matching call (cudaFree, cuMemFree, cudaFreeHost, "
                      "cuMemRelease, ...) before the program exits; a long-running process "
                      "that repeats this path grows without bound.");
        num(f, "site_frees", (double)g[i].site_frees);
        num(f, "bytes", (double)g[i].bytes);
        num(f, "count", (double)g[i].count);
    }
}

static void leak_rules(struct cf_snap *s, bool *site_waste)
{
    char where[512], a[32], b[32];
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if (l->requested == 0 || l->granted <= l->requested) continue;
        double waste = (double)(l->granted - l->requested) / (double)l->requested;
        struct cf_finding *f;
        if (waste <= CF_ROUNDING_WASTE || !(f = add(s, "rounding-waste", "medium", l->site)))
            continue;
        *site_waste = true;
        cf_snap_site_label(s, l->site, where, sizeof where);
        title(f, "allocations at %s are rounded up by %.0f%%: %s granted for %s requested", where,
              waste * 100, cf_fmt_bytes(l->granted, a, sizeof a),
              cf_fmt_bytes(l->requested, b, sizeof b));
        advice(f, "The driver rounds large requests up to 2 MiB multiples, so sizes just above "
                  "a multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request exact "
                  "multiples of 2 MiB (trim a few bytes or merge neighbouring buffers into one "
                  "allocation), or sub-allocate small buffers from one larger block.");
        num(f, "waste_ratio", waste);
        num(f, "requested_bytes", (double)l->requested);
        num(f, "granted_bytes", (double)l->granted);
    }
    if (!s->interim) leak_findings(s);
}

static uint64_t pool_reserve_on(const struct cf_snap *s, int device)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < s->npools; i++)
        if (s->pools[i].device == device && s->pools[i].reserved_high > s->pools[i].used_high)
            sum += s->pools[i].reserved_high - s->pools[i].used_high;
    return sum;
}

/* "name (12 MiB), name (3 MiB)": who holds the most memory, for OOM findings. */
static void top_holders(const struct cf_snap *s, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < s->nsites && i < 3; i++) {
        const struct cf_site *st = &s->sites[s->by_peak[i]];
        if (st->peak_live_bytes == 0) break;
        char where[512], a[32];
        cf_snap_site_label(s, (int)s->by_peak[i], where, sizeof where);
        int w = snprintf(out + len, n - len, "%s%s (peak %s)", i ? "; " : "", where,
                         cf_fmt_bytes(st->peak_live_bytes, a, sizeof a));
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
    if (len == 0) snprintf(out, n, "no recorded call site");
}

static uint64_t above(uint64_t held, uint64_t live)
{
    return held > live ? held - live : 0;
}

/* At the footprint peak, what the device held beyond live bytes, part by part
 * (all exact: the parts are what the footprint is computed from). */
static void footprint_rule(struct cf_snap *s, const struct cf_dev_view *v,
                           const struct cf_device_stats *ds, int top)
{
    char a[32], b[32], c[32], d[32], e[32], g[32];
    const struct cf_fp_parts *p = &ds->at_peak;
    uint64_t live = ds->live_at_peak_footprint;
    uint64_t extra = above(v->peak_footprint, live);
    if (extra < CF_FOOTPRINT_MIN_BYTES || v->peak_footprint < CF_FOOTPRINT_RATIO * (double)live)
        return;
    struct cf_finding *f =
        add(s, "footprint-over-live", extra >= CF_FOOTPRINT_HIGH_BYTES ? "high" : "medium", top);
    if (f == NULL) return;
    uint64_t pages = above(p->raw, p->raw_live), pool = above(p->pool, p->pool_live);
    uint64_t graph = above(p->graph, p->graph_used), arena = above(p->arena, p->arena_live);
    const char *cause =
        pages >= pool && pages >= graph && pages >= arena
            ? "partly used 2 MiB pages of cudaMalloc/cuMemAlloc: the driver backs every 2 MiB "
              "page a live allocation touches, so freed holes between live blocks and sizes "
              "just above a 2 MiB multiple hold memory; request 2 MiB multiples, allocate "
              "long-lived buffers first, or sub-allocate from one block (or try --arena)"
        : pool >= graph && pool >= arena
            ? "the reserve of stream-ordered pools: trim them (cudaMemPoolTrimTo) or lower their "
              "release threshold"
        : graph >= arena ? "the graph memory pool: trim it (cudaDeviceGraphMemTrim) between "
                           "graph phases"
                         : "cudafrag's arena (mapped but free)";
    title(f, "device %d: at its footprint peak %s, %s (%.0f%%) was not live", v->device,
          cf_fmt_bytes(v->peak_footprint, a, sizeof a), cf_fmt_bytes(extra, b, sizeof b),
          100.0 * (double)extra / (double)v->peak_footprint);
    advice(f,
           "Held beyond live bytes: page waste %s, pool reserve %s, graph pool %s, arena %s. "
           "Largest part: %s.",
           cf_fmt_bytes(pages, c, sizeof c), cf_fmt_bytes(pool, d, sizeof d),
           cf_fmt_bytes(graph, e, sizeof e), cf_fmt_bytes(arena, g, sizeof g), cause);
    num(f, "peak_footprint_bytes", (double)v->peak_footprint);
    num(f, "live_at_peak_footprint_bytes", (double)live);
    num(f, "page_waste_bytes", (double)pages);
    num(f, "pool_reserve_bytes", (double)pool);
    num(f, "graph_reserve_bytes", (double)graph);
    num(f, "arena_slack_bytes", (double)arena);
}

static void device_rules(struct cf_snap *s, bool site_waste)
{
    char a[32], b[32];
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *v = &s->devs[i];
        const struct cf_device_stats *ds = &s->rec.dev[v->device];
        int top = s->nsites ? (int)s->by_peak[0] : -1;
        struct cf_finding *f;
        footprint_rule(s, v, ds, top);
        if (!site_waste && v->internal_waste > CF_ROUNDING_WASTE &&
            (f = add(s, "rounding-waste", "medium", top))) {
            title(f,
                  "device %d: allocations are rounded up by %.0f%% at the live peak (%s granted "
                  "for %s requested)",
                  v->device, v->internal_waste * 100, cf_fmt_bytes(ds->peak_granted, a, sizeof a),
                  cf_fmt_bytes(ds->peak_requested, b, sizeof b));
            advice(f, "The driver rounds large requests up to 2 MiB multiples, so sizes just "
                      "above a multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request "
                      "exact multiples of 2 MiB, merge small buffers into one allocation, or "
                      "sub-allocate them from a larger block.");
            num(f, "waste_ratio", v->internal_waste);
            num(f, "requested_bytes", (double)ds->peak_requested);
            num(f, "granted_bytes", (double)ds->peak_granted);
        }
    }
}

static void pool_rules(struct cf_snap *s)
{
    int pool_site = -1;
    for (unsigned i = 0; i < s->nsites; i++) {
        unsigned idx = s->by_calls[i];
        if (cf_api_info[s->sites[idx].api].kind == CF_KIND_POOL &&
            cf_api_info[s->sites[idx].api].role == 'A') {
            pool_site = (int)idx;
            break;
        }
    }
    char a[32], where[512];
    for (unsigned i = 0; i < s->npools; i++) {
        const struct cf_pool *p = &s->pools[i];
        struct cf_finding *f;
        if (p->regrows < CF_REGROWS || !(f = add(s, "pool-regrow", "medium", pool_site))) continue;
        cf_snap_site_label(s, pool_site, where, sizeof where);
        title(f,
              "%s pool 0x%llx on device %d returned memory %llu times and grew back %llu times "
              "at %s",
              p->is_default ? "default" : "application", (unsigned long long)p->handle, p->device,
              (unsigned long long)p->shrinks, (unsigned long long)p->regrows, where);
        advice(f,
               "Raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (cudaMemPoolAttrReleaseThreshold) on "
               "this pool, e.g. to its high-water mark %s or UINT64_MAX, so memory freed "
               "before a synchronization is kept for the next allocations instead of being "
               "unmapped and mapped again.",
               cf_fmt_bytes(p->reserved_high, a, sizeof a));
        num(f, "regrows", (double)p->regrows);
        num(f, "shrinks", (double)p->shrinks);
        num(f, "release_threshold_bytes", (double)p->release_threshold);
        num(f, "reserved_high_bytes", (double)p->reserved_high);
    }
}

static void oom_rules(struct cf_snap *s)
{
    char a[32], b[32], c[32], d[32], e[32], holders[1600];
    uint64_t reserve = 0, rounding = 0;
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_device_stats *ds = &s->rec.dev[s->devs[i].device];
        reserve += pool_reserve_on(s, s->devs[i].device);
        if (ds->peak_granted > ds->peak_requested)
            rounding += ds->peak_granted - ds->peak_requested;
    }
    uint64_t cached = 0;
    if (s->arena.peak_mapped > s->arena.peak_live)
        cached = s->arena.peak_mapped - s->arena.peak_live;
    top_holders(s, holders, sizeof holders);
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *o = &s->rec.ooms[i];
        bool enough = o->total_bytes && o->free_bytes >= o->request;
        int site = o->site ? cf_snap_site_index(s, o->site->hash) : -1;
        struct cf_finding *f = add(s, enough ? "oom-with-free-memory" : "oom", "high", site);
        if (f == NULL) return;
        char where[512];
        cf_snap_site_label(s, site, where, sizeof where);
        title(f, "%s of %s failed with out-of-memory on device %d at %s (free %s of %s)",
              cf_api_info[o->api].name, cf_fmt_bytes(o->request, a, sizeof a), o->device, where,
              cf_fmt_bytes(o->free_bytes, b, sizeof b), cf_fmt_bytes(o->total_bytes, c, sizeof c));
        if (enough)
            advice(f,
                   "OOM with enough free memory: the free memory is fragmented or held in "
                   "reserves. Held: pool reserves %s, rounding waste %s, caching/arena %s. "
                   "Largest live holders: %s. Trim pools (cudaMemPoolTrimTo) before large "
                   "allocations, allocate long-lived large buffers first, or run with --arena.",
                   cf_fmt_bytes(reserve, d, sizeof d), cf_fmt_bytes(rounding, e, sizeof e),
                   cf_fmt_bytes(cached, a, sizeof a), holders);
        else
            advice(f,
                   "The device was full. Largest live holders: %s. Free or shrink these, "
                   "or reduce the batch size.",
                   holders);
        num(f, "request_bytes", (double)o->request);
        num(f, "free_bytes", (double)o->free_bytes);
        num(f, "total_bytes", (double)o->total_bytes);
    }
}

static int severity_rank(const char *sev)
{
    return strcmp(sev, "high") == 0 ? 0 : strcmp(sev, "medium") == 0 ? 1 : 2;
}

/* High first; within a severity, grouped by id so one kind of problem reads as a list. */
static int finding_order(const struct cf_finding *a, const struct cf_finding *b)
{
    int d = severity_rank(a->severity) - severity_rank(b->severity);
    return d ? d : strcmp(a->id, b->id);
}

int cf_findings_compute(struct cf_snap *s)
{
    bool any_sizes = false, site_waste = false;
    oom_rules(s);
    for (unsigned i = 0; i < s->nsites; i++)
        site_rules(s, s->by_calls[i], &any_sizes);
    struct cf_finding *f;
    if (!any_sizes && s->rec.distinct_sizes > CF_MANY_SIZES &&
        (f = add(s, "many-sizes", "low", s->nsites ? (int)s->by_calls[0] : -1))) {
        title(f, "%llu distinct allocation sizes in the whole process",
              (unsigned long long)s->rec.distinct_sizes);
        advice(f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
                  "of 2 MiB above) so freed blocks can serve later requests.");
        num(f, "distinct_sizes", (double)s->rec.distinct_sizes);
    }
    leak_rules(s, &site_waste);
    device_rules(s, site_waste);
    pool_rules(s);
    /* Insertion sort: stable, so findings of one id keep the order they were found in. */
    for (unsigned i = 1; i < s->nfindings; i++) {
        struct cf_finding tmp = s->findings[i];
        unsigned j = i;
        for (; j > 0 && finding_order(&s->findings[j - 1], &tmp) > 0; j--)
            s->findings[j] = s->findings[j - 1];
        s->findings[j] = tmp;
    }
    return 0;
}
