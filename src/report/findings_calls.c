/* Findings on call sites: allocation rate, many sizes, allocations in hot loops. */
#include "report/findings_rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rules on call sites ---- */

/* Synchronous device allocations: each one is a driver round trip. */
static bool is_sync_device_alloc(enum cf_api api)
{
    return api == CF_API_cudaMalloc || api == CF_API_cuMemAlloc || api == CF_API_cudaMallocPitch ||
           api == CF_API_cuMemAllocPitch || api == CF_API_cudaMalloc3D;
}

void cf_calls_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    char p[48];
    snprintf(e->note, sizeof e->note, "%llu calls %s", (unsigned long long)e->count,
             cf_finding_pace(e, p, sizeof p));
}

/* "cudaMalloc/cudaMallocPitch": the APIs of the covered sites, each once. */
static const char *apis_of(const struct cf_snap *s, const struct cf_finding *f, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < f->nsites; i++) {
        enum cf_api api = s->sites[f->sites[i].site].api;
        bool seen = false;
        for (unsigned k = 0; k < i && !seen; k++)
            seen = s->sites[f->sites[k].site].api == api;
        int w =
            seen ? 0 : snprintf(out + len, n - len, "%s%s", len ? "/" : "", cf_api_info[api].name);
        if (w > 0 && (size_t)w < n - len) len += (size_t)w;
    }
    return out;
}

/* How many times over a site allocated the most it ever held at once: 1 when
 * every allocation stayed live, 2000 for a 1 MiB buffer allocated and freed 2000
 * times. A count of the program's own, the same on a loaded machine as on an idle
 * one, unlike the rate, which a busier machine lowers. */
static double turnover(const struct cf_site *st)
{
    return st->peak_live_bytes ? (double)st->bytes / (double)st->peak_live_bytes : 0;
}

void cf_alloc_rate_rule(struct cf_snap *s)
{
    struct cf_cover c = {0};
    uint64_t calls = 0, bytes = 0;
    double max_turnover = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (!is_sync_device_alloc(st->api) || cf_site_rate(st) <= CF_RATE_PER_S) continue;
        cf_cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        calls += st->calls;
        bytes += st->bytes;
        if (turnover(st) > max_turnover) max_turnover = turnover(st);
    }
    struct cf_finding *f;
    if (c.n == 0 ||
        !(f = cf_finding_add(s, "alloc-rate", max_turnover >= CF_TURNOVER_HIGH ? "high" : "medium",
                             "calls"))) {
        free(c.p);
        return;
    }
    cf_cover_finish(s, f, &c, cf_calls_note);
    char w[600], p[48], api[160];
    apis_of(s, f, api, sizeof api);
    if (f->nsites == 1)
        cf_finding_title(f, "%s called %llu times %s at %s", api, (unsigned long long)calls,
                         cf_finding_pace(&f->sites[0], p, sizeof p),
                         cf_finding_where(s, f, w, sizeof w));
    else
        cf_finding_title(
            f, "%llu %s calls at %s, each more than %.0f per second of its active time",
            (unsigned long long)calls, api, cf_finding_where(s, f, w, sizeof w), CF_RATE_PER_S);
    cf_finding_advice(
        f,
        "Pool these allocations: use cudaMallocAsync/cudaFreeAsync (the driver caches freed "
        "memory in a pool) or a caching allocator, or allocate once and reuse the buffer. "
        "Every %s/free pair is a driver call that can synchronize the device.%s",
        f->nsites == 1 ? api : "allocation",
        /* The rate may be of cudafrag's own making: the frameworks' caches are off. */
        s->blocks && s->blocks[0]
            ? " In this run (cudafrag run --blocks) the frameworks' caches were off on "
              "purpose: calls made by PyTorch, JAX or CuPy are the tensors their cache "
              "serves in a normal run."
            : "");
    double span = cf_finding_span_s(&f->sites[0]);
    cf_finding_num(f, "calls", (double)calls);
    cf_finding_num(f, "bytes", (double)bytes);
    cf_finding_num(f, "sites", f->nsites);
    cf_finding_num(f, "rate_per_s", span >= 1.0 ? (double)f->sites[0].count / span : NAN);
    cf_finding_num(f, "span_s", span);
    cf_finding_num(f, "turnover", max_turnover);
}

static void sizes_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    const struct cf_site *st = &s->sites[e->site];
    snprintf(e->note, sizeof e->note, "%s%u sizes, %s to %s, %llu calls",
             st->distinct_sizes > CF_SITE_SIZES ? "more than " : "",
             st->distinct_sizes > CF_SITE_SIZES ? CF_SITE_SIZES : st->distinct_sizes,
             B(st->min_size), B(st->max_size), (unsigned long long)e->count);
}

static void process_sizes_rule(struct cf_snap *s)
{
    struct cf_finding *f = cf_finding_add(s, "many-sizes", "low", "calls");
    if (f == NULL) return;
    f->site = s->nsites ? (int)s->by_calls[0] : -1;
    cf_finding_title(f, "%llu distinct allocation sizes in the whole process",
                     (unsigned long long)s->rec.distinct_sizes);
    cf_finding_advice(
        f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
           "of 2 MiB above) so freed blocks can serve later requests.");
    cf_finding_num(f, "distinct_sizes", (double)s->rec.distinct_sizes);
}

void cf_many_sizes_rule(struct cf_snap *s)
{
    if (s->rec.distinct_sizes <= CF_MANY_SIZES) return;
    struct cf_cover c = {0};
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (st->distinct_sizes <= CF_SITE_MANY_SIZES) continue;
        cf_cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        if (st->min_size < lo) lo = st->min_size;
        if (st->max_size > hi) hi = st->max_size;
    }
    struct cf_finding *f = c.n ? cf_finding_add(s, "many-sizes", "medium", "calls") : NULL;
    if (f == NULL) {
        free(c.p);
        if (c.n == 0) process_sizes_rule(s);
        return;
    }
    cf_cover_finish(s, f, &c, sizes_note);
    const struct cf_site *top = &s->sites[f->site];
    bool capped = top->distinct_sizes > CF_SITE_SIZES;
    char w[600];
    if (f->nsites == 1)
        cf_finding_title(
            f, "%s%u distinct sizes (%s to %s) requested at %s; %llu in the whole process",
            capped ? "more than " : "", capped ? CF_SITE_SIZES : top->distinct_sizes, B(lo), B(hi),
            cf_finding_where(s, f, w, sizeof w), (unsigned long long)s->rec.distinct_sizes);
    else
        cf_finding_title(
            f,
            "%u call sites each request more than %u distinct sizes (%s to %s in all); %llu "
            "in the whole process",
            f->nsites, CF_SITE_MANY_SIZES, B(lo), B(hi), (unsigned long long)s->rec.distinct_sizes);
    cf_finding_advice(
        f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
           "of 2 MiB above) so a freed block fits the next request; many distinct sizes "
           "defeat caching allocators and pools and fragment the free space.");
    cf_finding_num(f, "site_distinct_sizes", top->distinct_sizes);
    cf_finding_num(f, "process_distinct_sizes", (double)s->rec.distinct_sizes);
    cf_finding_num(f, "min_size_bytes", (double)lo);
    cf_finding_num(f, "max_size_bytes", (double)hi);
    cf_finding_num(f, "sites", f->nsites);
}

static void life_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%llu calls, mean life %s", (unsigned long long)e->count,
             T(cf_site_mean_lifetime_s(&s->sites[e->site])));
}

void cf_hot_loop_rule(struct cf_snap *s)
{
    struct cf_cover c = {0};
    uint64_t calls = 0, frees = 0, life_ns = 0, lives = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (st->calls < CF_HOT_CALLS || st->frees * 2 < st->calls ||
            !(cf_site_mean_lifetime_s(st) < CF_HOT_LIFETIME_S))
            continue;
        cf_cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        calls += st->calls;
        frees += st->frees;
        life_ns += st->lifetime_ns_total;
        lives += st->lifetime_count;
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = cf_finding_add(s, "hot-loop", "medium", "calls"))) {
        free(c.p);
        return;
    }
    cf_cover_finish(s, f, &c, life_note);
    double life = lives ? (double)life_ns / (double)lives / 1e9 : NAN;
    char w[600];
    cf_finding_title(f, "%llu allocations at %s live only %s on average: %s",
                     (unsigned long long)calls, cf_finding_where(s, f, w, sizeof w), T(life),
                     f->nsites > 1 ? "allocations inside hot loops"
                                   : "allocation inside a hot loop");
    cf_finding_advice(
        f, "Hoist the allocation out of the loop: allocate the buffer once (sized for the "
           "largest iteration) and reuse it, or keep a scratch buffer per stream.");
    cf_finding_num(f, "calls", (double)calls);
    cf_finding_num(f, "frees", (double)frees);
    cf_finding_num(f, "mean_lifetime_s", life);
    cf_finding_num(f, "sites", f->nsites);
}
