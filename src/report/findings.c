#include "report/findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/cuda_errors.h"
#include "report/format.h"
#include "report/snapshot.h"
#include "base/log.h"

#define B(v) cf_fmt_bytes((v), (char[32]){0}, 32)
#define T(v) cf_fmt_secs((v), (char[32]){0}, 32)

/* ---- building findings ---- */

static struct cf_finding *add(struct cf_snap *s, const char *id, const char *severity,
                              const char *measure)
{
    static const unsigned chunk = 16;
    if (s->nfindings % chunk == 0) {
        struct cf_finding *f = realloc(s->findings, (s->nfindings + chunk) * sizeof *f);
        if (f == NULL) return NULL;
        s->findings = f;
    }
    struct cf_finding *f = &s->findings[s->nfindings++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->severity = severity;
    f->site = -1;
    f->measure = measure;
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

/* ---- the sites a finding covers ---- */

/* Stacks are merged by the frame they are shown at: a framework's allocator
 * reached from one line of the program along many paths is one site to change. */
struct pick {
    uintptr_t key;
    int site;
    double value;
    uint64_t count;
};

struct cover {
    struct pick *p;
    unsigned n, cap;
    double total;
};

static uintptr_t shown_key(const struct cf_snap *s, int site)
{
    int f = cf_snap_site_shown(s, site);
    if (site < 0) return UINTPTR_MAX;
    return f >= 0 ? s->sites[site].frames[f] : UINTPTR_MAX - 1 - (uintptr_t)site;
}

static void cover_add(const struct cf_snap *s, struct cover *c, int site, double value,
                      uint64_t count)
{
    if (c->n == c->cap) {
        unsigned cap = c->cap ? 2 * c->cap : 16;
        struct pick *p = realloc(c->p, cap * sizeof *p);
        if (p == NULL) return;
        c->p = p;
        c->cap = cap;
    }
    c->p[c->n++] = (struct pick){shown_key(s, site), site, value, count};
    c->total += value;
}

static int by_key_then_value(const void *a, const void *b)
{
    const struct pick *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->value < y->value) - (x->value > y->value);
}

static int by_value_desc(const void *a, const void *b)
{
    const struct cf_finding_site *x = a, *y = b;
    if (x->value != y->value) return (x->value < y->value) - (x->value > y->value);
    return (x->key > y->key) - (x->key < y->key);
}

static void merge_pick(const struct cf_snap *s, struct cf_finding_site *e, const struct pick *p)
{
    if (e->stacks++ == 0) {
        e->key = p->key;
        e->site = p->site; /* runs are sorted largest first */
        e->first_ns = UINT64_MAX;
    }
    e->value += p->value;
    e->count += p->count;
    if (p->site < 0) return;
    const struct cf_site *st = &s->sites[p->site];
    if (st->first_ns && st->first_ns < e->first_ns) e->first_ns = st->first_ns;
    if (st->last_ns > e->last_ns) e->last_ns = st->last_ns;
}

typedef void note_fn(const struct cf_snap *s, struct cf_finding_site *e);

/* The picks become f->sites, largest first, each with its share and note. */
static void cover_finish(const struct cf_snap *s, struct cf_finding *f, struct cover *c,
                         note_fn *note)
{
    qsort(c->p, c->n, sizeof *c->p, by_key_then_value);
    f->sites = calloc(c->n ? c->n : 1, sizeof *f->sites);
    for (unsigned i = 0; f->sites && i < c->n; i++) {
        if (i > 0 && c->p[i].key != c->p[i - 1].key) f->nsites++;
        merge_pick(s, &f->sites[f->nsites], &c->p[i]);
    }
    if (f->sites && c->n) f->nsites++;
    qsort(f->sites, f->nsites, sizeof *f->sites, by_value_desc);
    for (unsigned i = 0; i < f->nsites; i++) {
        f->sites[i].share = c->total > 0 ? f->sites[i].value / c->total : 0;
        if (note) note(s, &f->sites[i]);
    }
    if (f->nsites) f->site = f->sites[0].site;
    free(c->p);
    *c = (struct cover){0};
}

/* The site's name when there is one, else "N call sites". */
static const char *where(const struct cf_snap *s, const struct cf_finding *f, char *out, size_t n)
{
    if (f->nsites == 1)
        cf_snap_site_label_short(s, f->sites[0].site, out, n);
    else
        snprintf(out, n, "%u call sites", f->nsites);
    return out;
}

static double entry_span_s(const struct cf_finding_site *e)
{
    return e->last_ns > e->first_ns && e->first_ns != UINT64_MAX
               ? (double)(e->last_ns - e->first_ns) / 1e9
               : 0;
}

/* "at 2500/s" over a second or more; a shorter burst as its span, never as a
 * rate of a one-second floor. */
static const char *pace(const struct cf_finding_site *e, char *out, size_t n)
{
    double span = entry_span_s(e);
    if (span >= 1.0)
        snprintf(out, n, "at %.0f/s", (double)e->count / span);
    else
        snprintf(out, n, "within %s", T(span));
    return out;
}

/* ---- rules on call sites ---- */

/* Synchronous device allocations: each one is a driver round trip. */
static bool is_sync_device_alloc(enum cf_api api)
{
    return api == CF_API_cudaMalloc || api == CF_API_cuMemAlloc || api == CF_API_cudaMallocPitch ||
           api == CF_API_cuMemAllocPitch || api == CF_API_cudaMalloc3D;
}

static void calls_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    char p[48];
    snprintf(e->note, sizeof e->note, "%llu calls %s", (unsigned long long)e->count,
             pace(e, p, sizeof p));
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

static void alloc_rate_rule(struct cf_snap *s)
{
    struct cover c = {0};
    uint64_t calls = 0, bytes = 0;
    double max_turnover = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (!is_sync_device_alloc(st->api) || cf_site_rate(st) <= CF_RATE_PER_S) continue;
        cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        calls += st->calls;
        bytes += st->bytes;
        if (turnover(st) > max_turnover) max_turnover = turnover(st);
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = add(s, "alloc-rate", max_turnover >= CF_TURNOVER_HIGH ? "high" : "medium",
                              "calls"))) {
        free(c.p);
        return;
    }
    cover_finish(s, f, &c, calls_note);
    char w[600], p[48], api[160];
    apis_of(s, f, api, sizeof api);
    if (f->nsites == 1)
        title(f, "%s called %llu times %s at %s", api, (unsigned long long)calls,
              pace(&f->sites[0], p, sizeof p), where(s, f, w, sizeof w));
    else
        title(f, "%llu %s calls at %s, each more than %.0f per second of its active time",
              (unsigned long long)calls, api, where(s, f, w, sizeof w), CF_RATE_PER_S);
    advice(f,
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
    double span = entry_span_s(&f->sites[0]);
    num(f, "calls", (double)calls);
    num(f, "bytes", (double)bytes);
    num(f, "sites", f->nsites);
    num(f, "rate_per_s", span >= 1.0 ? (double)f->sites[0].count / span : NAN);
    num(f, "span_s", span);
    num(f, "turnover", max_turnover);
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
    struct cf_finding *f = add(s, "many-sizes", "low", "calls");
    if (f == NULL) return;
    f->site = s->nsites ? (int)s->by_calls[0] : -1;
    title(f, "%llu distinct allocation sizes in the whole process",
          (unsigned long long)s->rec.distinct_sizes);
    advice(f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
              "of 2 MiB above) so freed blocks can serve later requests.");
    num(f, "distinct_sizes", (double)s->rec.distinct_sizes);
}

static void many_sizes_rule(struct cf_snap *s)
{
    if (s->rec.distinct_sizes <= CF_MANY_SIZES) return;
    struct cover c = {0};
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (st->distinct_sizes <= CF_SITE_MANY_SIZES) continue;
        cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        if (st->min_size < lo) lo = st->min_size;
        if (st->max_size > hi) hi = st->max_size;
    }
    struct cf_finding *f = c.n ? add(s, "many-sizes", "medium", "calls") : NULL;
    if (f == NULL) {
        free(c.p);
        if (c.n == 0) process_sizes_rule(s);
        return;
    }
    cover_finish(s, f, &c, sizes_note);
    const struct cf_site *top = &s->sites[f->site];
    bool capped = top->distinct_sizes > CF_SITE_SIZES;
    char w[600];
    if (f->nsites == 1)
        title(f, "%s%u distinct sizes (%s to %s) requested at %s; %llu in the whole process",
              capped ? "more than " : "", capped ? CF_SITE_SIZES : top->distinct_sizes, B(lo),
              B(hi), where(s, f, w, sizeof w), (unsigned long long)s->rec.distinct_sizes);
    else
        title(f,
              "%u call sites each request more than %u distinct sizes (%s to %s in all); %llu "
              "in the whole process",
              f->nsites, CF_SITE_MANY_SIZES, B(lo), B(hi),
              (unsigned long long)s->rec.distinct_sizes);
    advice(f, "Round requests up to a few size classes (powers of two below 2 MiB, multiples "
              "of 2 MiB above) so a freed block fits the next request; many distinct sizes "
              "defeat caching allocators and pools and fragment the free space.");
    num(f, "site_distinct_sizes", top->distinct_sizes);
    num(f, "process_distinct_sizes", (double)s->rec.distinct_sizes);
    num(f, "min_size_bytes", (double)lo);
    num(f, "max_size_bytes", (double)hi);
    num(f, "sites", f->nsites);
}

static void life_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%llu calls, mean life %s", (unsigned long long)e->count,
             T(cf_site_mean_lifetime_s(&s->sites[e->site])));
}

static void hot_loop_rule(struct cf_snap *s)
{
    struct cover c = {0};
    uint64_t calls = 0, frees = 0, life_ns = 0, lives = 0;
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (st->calls < CF_HOT_CALLS || st->frees * 2 < st->calls ||
            !(cf_site_mean_lifetime_s(st) < CF_HOT_LIFETIME_S))
            continue;
        cover_add(s, &c, (int)s->by_calls[i], (double)st->calls, st->calls);
        calls += st->calls;
        frees += st->frees;
        life_ns += st->lifetime_ns_total;
        lives += st->lifetime_count;
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = add(s, "hot-loop", "medium", "calls"))) {
        free(c.p);
        return;
    }
    cover_finish(s, f, &c, life_note);
    double life = lives ? (double)life_ns / (double)lives / 1e9 : NAN;
    char w[600];
    title(f, "%llu allocations at %s live only %s on average: %s", (unsigned long long)calls,
          where(s, f, w, sizeof w), T(life),
          f->nsites > 1 ? "allocations inside hot loops" : "allocation inside a hot loop");
    advice(f, "Hoist the allocation out of the loop: allocate the buffer once (sized for the "
              "largest iteration) and reuse it, or keep a scratch buffer per stream.");
    num(f, "calls", (double)calls);
    num(f, "frees", (double)frees);
    num(f, "mean_lifetime_s", life);
    num(f, "sites", f->nsites);
}

/* ---- rules on what is live at the report ---- */

/* A site's value is a sum of byte counts in a double; a damaged trace can push it
 * past 2^64, where converting it is undefined. */
static uint64_t bytes_of(double v)
{
    if (!(v > 0)) return 0;
    return v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
}

static void leak_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%s in %llu allocation%s", B(bytes_of(e->value)),
             (unsigned long long)e->count, e->count == 1 ? "" : "s");
}

/* The kind of memory when all leaks of a finding share one ("device"), else "". */
static const char *leak_kind(const struct cf_snap *s, bool held)
{
    const char *kind = NULL;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if ((l->site >= 0 && s->sites[l->site].frees == 0) != held) continue;
        if (kind && strcmp(kind, cf_kind_name[l->kind]) != 0) return "";
        kind = cf_kind_name[l->kind];
    }
    return kind ? kind : "";
}

/* Two causes: nothing allocated at the site was ever freed (memory held: a cache,
 * buffers meant to live as long as the program), or some was (memory lost). */
static void leak_rule(struct cf_snap *s, bool held)
{
    struct cover c = {0};
    uint64_t bytes = 0, count = 0;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if ((l->site >= 0 && s->sites[l->site].frees == 0) != held) continue;
        cover_add(s, &c, l->site, (double)l->bytes, l->count);
        bytes += l->bytes;
        count += l->count;
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = add(s, "leak", bytes >= (1u << 20) ? "medium" : "low", "bytes"))) {
        free(c.p);
        return;
    }
    cover_finish(s, f, &c, leak_note);
    const char *kind = leak_kind(s, held);
    char w[600];
    title(f, "%llu %s%sallocation%s (%s) still live at exit from %s", (unsigned long long)count,
          kind, kind[0] ? " " : "", count == 1 ? "" : "s", B(bytes), where(s, f, w, sizeof w));
    if (held)
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
    num(f, "bytes", (double)bytes);
    num(f, "count", (double)count);
    num(f, "sites", f->nsites);
}

static void waste_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%s more than requested", B(bytes_of(e->value)));
}

/* Live allocations whose granted size is known, rounded up by more than 20 %. */
static bool site_rounding_rule(struct cf_snap *s)
{
    struct cover c = {0};
    uint64_t req = 0, gra = 0;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if (l->requested == 0 || l->granted <= l->requested ||
            (double)(l->granted - l->requested) / (double)l->requested <= CF_ROUNDING_WASTE)
            continue;
        cover_add(s, &c, l->site, (double)(l->granted - l->requested), l->count);
        req += l->requested;
        gra += l->granted;
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = add(s, "rounding-waste", "medium", "bytes"))) {
        free(c.p);
        return c.n != 0;
    }
    cover_finish(s, f, &c, waste_note);
    double waste = (double)(gra - req) / (double)req;
    char w[600];
    title(f, "allocations at %s are rounded up by %.0f%%: %s granted for %s requested",
          where(s, f, w, sizeof w), waste * 100, B(gra), B(req));
    advice(f, "The driver rounds large requests up to 2 MiB multiples, so sizes just above "
              "a multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request exact "
              "multiples of 2 MiB (trim a few bytes or merge neighbouring buffers into one "
              "allocation), or sub-allocate small buffers from one larger block.");
    num(f, "waste_ratio", waste);
    num(f, "requested_bytes", (double)req);
    num(f, "granted_bytes", (double)gra);
    num(f, "sites", f->nsites);
    return true;
}

/* ---- rules on devices ---- */

static int list_device(char *out, size_t n, size_t len, int device)
{
    int w = snprintf(out + len, n - len, "%s%d", len ? ", " : "", device);
    return w > 0 && (size_t)w < n - len ? w : 0;
}

/* When no site qualifies: every device rounded up by more than 20 % at its live peak. */
static void device_rounding_rule(struct cf_snap *s)
{
    char devs[256] = "";
    size_t len = 0;
    uint64_t req = 0, gra = 0;
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *v = &s->devs[i];
        if (!(v->internal_waste > CF_ROUNDING_WASTE)) continue;
        len += (size_t)list_device(devs, sizeof devs, len, v->device);
        req += s->rec.dev[v->device].peak_requested;
        gra += s->rec.dev[v->device].peak_granted;
    }
    struct cf_finding *f;
    if (req == 0 || !(f = add(s, "rounding-waste", "medium", "bytes"))) return;
    f->site = s->nsites ? (int)s->by_peak[0] : -1;
    double waste = (double)(gra - req) / (double)req;
    title(f,
          "device%s %s: allocations are rounded up by %.0f%% at the live peak (%s granted for "
          "%s requested)",
          strchr(devs, ',') ? "s" : "", devs, waste * 100, B(gra), B(req));
    advice(f, "The driver rounds large requests up to 2 MiB multiples, so sizes just above a "
              "multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request exact "
              "multiples of 2 MiB, merge small buffers into one allocation, or sub-allocate "
              "them from a larger block.");
    num(f, "waste_ratio", waste);
    num(f, "requested_bytes", (double)req);
    num(f, "granted_bytes", (double)gra);
}

static uint64_t above(uint64_t held, uint64_t live)
{
    return held > live ? held - live : 0;
}

/* What a device held beyond live bytes at its footprint peak, part by part. The
 * footprint is the sum of its series (record/footprint.c) and the live bytes the
 * sum of the same allocations' requested sizes, so the parts are exact and add
 * up: the last one, the rounding of VMM handles and CUDA arrays (their granted
 * size is in the footprint, their requested size in the live bytes), is what the
 * four series leave. */
enum { PAGES, POOL, GRAPH, ARENA, OTHER, NPARTS };

struct excess {
    uint64_t footprint, live, total, part[NPARTS];
    bool total_known; /* every device's size was sampled (cuMemGetInfo) */
};

static const char *const cause_text[NPARTS] = {
    "partly used 2 MiB pages of cudaMalloc/cuMemAlloc: the driver backs every 2 MiB page a "
    "live allocation touches, so freed holes between live blocks and sizes just above a 2 MiB "
    "multiple hold memory; request 2 MiB multiples, allocate long-lived buffers first, or "
    "sub-allocate from one block (or try --arena)",
    "the reserve of stream-ordered pools: trim them (cudaMemPoolTrimTo) or lower their release "
    "threshold",
    "the graph memory pool: trim it (cudaDeviceGraphMemTrim) between graph phases",
    "cudafrag's arena (mapped but free)",
    "VMM handles and CUDA arrays rounded up to the allocation granularity: create handles in "
    "multiples of cuMemGetAllocationGranularity's recommended size",
};

static uint64_t sum_parts(const uint64_t *part, int n)
{
    uint64_t sum = 0;
    for (int k = 0; k < n; k++)
        sum += part[k];
    return sum;
}

/* The largest part, or -1 when the device's footprint is not worth a finding. */
static int device_excess(const struct cf_snap *s, const struct cf_dev_view *v, struct excess *x)
{
    const struct cf_device_stats *ds = &s->rec.dev[v->device];
    const struct cf_fp_parts *p = &ds->at_peak;
    uint64_t extra = above(v->peak_footprint, ds->live_at_peak_footprint);
    if (extra < CF_FOOTPRINT_MIN_BYTES ||
        v->peak_footprint < CF_FOOTPRINT_RATIO * (double)ds->live_at_peak_footprint)
        return -1;
    *x = (struct excess){v->peak_footprint,
                         ds->live_at_peak_footprint,
                         ds->total_bytes,
                         {above(p->raw, p->raw_live), above(p->pool, p->pool_live),
                          above(p->graph, p->graph_used), above(p->arena, p->arena_live), 0},
                         ds->total_bytes != 0};
    x->part[OTHER] = above(extra, sum_parts(x->part, OTHER));
    int big = PAGES;
    for (int k = POOL; k < NPARTS; k++)
        if (x->part[k] > x->part[big]) big = k;
    return big;
}

/* By the share of the devices' memory: a few MiB are nothing on a GPU of 80 GiB
 * and most of one of 64 MiB. Without the devices' size, no finding is high. */
static const char *footprint_severity(const struct excess *x, uint64_t extra)
{
    if (!x->total_known) return "medium";
    double share = (double)extra / (double)x->total;
    if (share >= CF_FOOTPRINT_HIGH_SHARE) return "high";
    return share >= CF_FOOTPRINT_MEDIUM_SHARE ? "medium" : "low";
}

static void footprint_finding(struct cf_snap *s, int cause, const struct excess *x,
                              const char *devs, bool several)
{
    uint64_t extra = above(x->footprint, x->live);
    struct cf_finding *f = add(s, "footprint-over-live", footprint_severity(x, extra), "");
    if (f == NULL) return;
    f->site = s->nsites ? (int)s->by_peak[0] : -1;
    char share[96] = "";
    if (x->total_known)
        snprintf(share, sizeof share, ", %.1f%% of %s device memory",
                 100.0 * (double)extra / (double)x->total, B(x->total));
    title(f, "device%s %s: at %s footprint peak%s %s, %s (%.0f%%) was not live%s",
          several ? "s" : "", devs, several ? "their" : "its", several ? "s" : "", B(x->footprint),
          B(extra), 100.0 * (double)extra / (double)x->footprint, share);
    char other[64] = "";
    if (x->part[OTHER]) snprintf(other, sizeof other, ", VMM/array rounding %s", B(x->part[OTHER]));
    advice(f,
           "Held beyond live bytes (%s): page waste %s, pool reserve %s, graph pool %s, arena "
           "%s%s. Largest part: %s.",
           B(extra), B(x->part[PAGES]), B(x->part[POOL]), B(x->part[GRAPH]), B(x->part[ARENA]),
           other, cause_text[cause]);
    num(f, "peak_footprint_bytes", (double)x->footprint);
    num(f, "live_at_peak_footprint_bytes", (double)x->live);
    num(f, "page_waste_bytes", (double)x->part[PAGES]);
    num(f, "pool_reserve_bytes", (double)x->part[POOL]);
    num(f, "graph_reserve_bytes", (double)x->part[GRAPH]);
    num(f, "arena_slack_bytes", (double)x->part[ARENA]);
    num(f, "vmm_array_rounding_bytes", (double)x->part[OTHER]);
    num(f, "device_total_bytes", x->total_known ? (double)x->total : NAN);
}

/* One finding per cause (the largest part), over the devices it applies to. */
static void footprint_rule(struct cf_snap *s)
{
    for (int cause = PAGES; cause < NPARTS; cause++) {
        struct excess sum = {.total_known = true}, x;
        char devs[256] = "";
        size_t len = 0;
        unsigned n = 0;
        for (unsigned i = 0; i < s->ndevs; i++) {
            if (device_excess(s, &s->devs[i], &x) != cause) continue;
            len += (size_t)list_device(devs, sizeof devs, len, s->devs[i].device);
            sum.footprint += x.footprint;
            sum.live += x.live;
            sum.total += x.total;
            sum.total_known = sum.total_known && x.total_known;
            for (int k = PAGES; k < NPARTS; k++)
                sum.part[k] += x.part[k];
            n++;
        }
        if (n) footprint_finding(s, cause, &sum, devs, n > 1);
    }
}

/* ---- pools and out-of-memory events ---- */

static void cover_pool_sites(const struct cf_snap *s, struct cover *c)
{
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (cf_api_info[st->api].kind == CF_KIND_POOL && cf_api_info[st->api].role == 'A')
            cover_add(s, c, (int)s->by_calls[i], (double)st->calls, st->calls);
    }
}

static void pool_rule(struct cf_snap *s)
{
    const struct cf_pool *worst = NULL;
    unsigned n = 0;
    for (unsigned i = 0; i < s->npools; i++)
        if (s->pools[i].regrows >= CF_REGROWS) {
            n++;
            if (worst == NULL || s->pools[i].regrows > worst->regrows) worst = &s->pools[i];
        }
    struct cf_finding *f;
    if (n == 0 || !(f = add(s, "pool-regrow", "medium", "calls"))) return;
    struct cover c = {0};
    cover_pool_sites(s, &c);
    cover_finish(s, f, &c, calls_note);
    char w[600] = "", more[64] = "";
    if (n > 1) snprintf(more, sizeof more, " (and %u more pools)", n - 1);
    if (f->nsites) snprintf(w, sizeof w, " at %s", where(s, f, (char[512]){0}, 512));
    const char *name = cf_snap_pool_name(s, worst->handle);
    char pool[200];
    if (name)
        snprintf(pool, sizeof pool, "%s", name);
    else
        snprintf(pool, sizeof pool, "%s pool 0x%llx", worst->is_default ? "default" : "application",
                 (unsigned long long)worst->handle);
    title(f, "%s on device %d returned memory %llu times and grew back %llu times%s%s", pool,
          worst->device, (unsigned long long)worst->shrinks, (unsigned long long)worst->regrows,
          more, w);
    advice(f,
           "Raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (cudaMemPoolAttrReleaseThreshold) on "
           "the pool, e.g. to its high-water mark %s or UINT64_MAX, so memory freed "
           "before a synchronization is kept for the next allocations instead of being "
           "unmapped and mapped again.",
           B(worst->reserved_high));
    num(f, "regrows", (double)worst->regrows);
    num(f, "shrinks", (double)worst->shrinks);
    num(f, "release_threshold_bytes", (double)worst->release_threshold);
    num(f, "reserved_high_bytes", (double)worst->reserved_high);
    num(f, "pools", n);
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
        char label[512];
        cf_snap_site_label(s, (int)s->by_peak[i], label, sizeof label);
        int w = snprintf(out + len, n - len, "%s%s (peak %s)", i ? "; " : "", label,
                         B(st->peak_live_bytes));
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
    if (len == 0) snprintf(out, n, "no recorded call site");
}

static void oom_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%llu failure%s", (unsigned long long)e->count,
             e->count == 1 ? "" : "s");
}

static bool enough_free(const struct cf_oom *o)
{
    return o->total_bytes && o->free_bytes >= o->request;
}

/* Larger than the whole device: nothing the program frees can make room for it. */
static bool beyond_device(const struct cf_oom *o)
{
    return o->total_bytes && o->request > o->total_bytes;
}

static void oom_advice(const struct cf_snap *s, struct cf_finding *f, bool enough,
                       const struct cf_oom *big, unsigned beyond, unsigned n)
{
    char holders[1600];
    uint64_t reserve = 0, rounding = 0, cached = 0;
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_device_stats *ds = &s->rec.dev[s->devs[i].device];
        reserve += pool_reserve_on(s, s->devs[i].device);
        rounding += above(ds->peak_granted, ds->peak_requested);
    }
    cached = above(s->arena.peak_mapped, s->arena.peak_live);
    top_holders(s, holders, sizeof holders);
    if (enough)
        advice(f,
               "OOM with enough free memory: the free memory is fragmented or held in "
               "reserves. Held: pool reserves %s, rounding waste %s, caching/arena %s. "
               "Largest live holders: %s. Trim pools (cudaMemPoolTrimTo) before large "
               "allocations, allocate long-lived large buffers first, or run with --arena.",
               B(reserve), B(rounding), B(cached), holders);
    else if (beyond == n)
        /* Freeing and smaller batches are the wrong advice here. */
        advice(f,
               "The request%s alone (%s%s) is larger than the whole device (%s): it cannot "
               "succeed however much is freed. Split the buffer (process the data in chunks, "
               "or shard it across devices), or check the size computation.",
               n > 1 ? "s" : "", n > 1 ? "the largest " : "", B(big->request), B(big->total_bytes));
    else if (beyond)
        advice(f,
               "The largest request (%s) alone is larger than the whole device (%s): split "
               "it (process the data in chunks, or shard it across devices). For the other "
               "%u the device was full. Largest live holders: %s. Free or shrink these, or "
               "reduce the batch size.",
               B(big->request), B(big->total_bytes), n - beyond, holders);
    else
        advice(f,
               "The device was full. Largest live holders: %s. Free or shrink these, "
               "or reduce the batch size.",
               holders);
}

/* One finding for the failures with enough free memory, one for the others. */
static void oom_rule(struct cf_snap *s, bool enough)
{
    struct cover c = {0};
    const struct cf_oom *big = NULL;
    unsigned beyond = 0;
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *o = &s->rec.ooms[i];
        if (enough_free(o) != enough) continue;
        cover_add(s, &c, o->site ? cf_snap_site_index(s, o->site->hash) : -1, 1, 1);
        if (big == NULL || o->request > big->request) big = o;
        beyond += beyond_device(o);
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = add(s, enough ? "oom-with-free-memory" : "oom", "high", "failures"))) {
        free(c.p);
        return;
    }
    unsigned n = c.n;
    cover_finish(s, f, &c, oom_note);
    char w[600], lead[64] = "";
    if (n > 1) snprintf(lead, sizeof lead, "%u allocations failed; the largest: ", n);
    title(f, "%s%s of %s failed with out-of-memory on device %d at %s (%s)", lead,
          cf_api_info[big->api].name, B(big->request), big->device, where(s, f, w, sizeof w),
          cf_fmt_free_of(big->free_bytes, big->total_bytes, (char[96]){0}, 96));
    oom_advice(s, f, enough, big, beyond, n);
    num(f, "request_bytes", (double)big->request);
    num(f, "free_bytes", (double)big->free_bytes);
    num(f, "total_bytes", (double)big->total_bytes);
    num(f, "failures", n);
}

/* " with cudaErrorMemoryAllocation" or ": 3 with cudaErrorMemoryAllocation, 1 with ..." */
static void error_list(enum cf_api api, const struct cf_api_stats *st, char *out, size_t n)
{
    char num[32];
    uint64_t named = 0;
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < CF_API_ERRORS && st->errors[k].code; k++) {
        const char *name = cf_cuda_error_name(api, (int)(st->errors[k].code - 1), num, sizeof num);
        bool only = k == 0 && st->errors[0].count == st->failures;
        int w = only ? snprintf(out, n, " with %s", name)
                     : snprintf(out + len, n - len, "%s%llu with %s", k ? ", " : ": ",
                                (unsigned long long)st->errors[k].count, name);
        if (w < 0 || (size_t)w >= n - len) return;
        len += (size_t)w;
        named += st->errors[k].count;
    }
    if (named < st->failures)
        snprintf(out + len, n - len, "%s%llu with other errors", len ? ", " : ": ",
                 (unsigned long long)(st->failures - named));
}

static void failures_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%llu failed", (unsigned long long)e->count);
}

/* Failed allocation calls, whatever the mode, one finding per API: without it a
 * run in which every allocation failed reported "findings (0) none". */
static void failure_rule(struct cf_snap *s)
{
    for (int a = 0; a < CF_API_COUNT; a++) {
        const struct cf_api_stats *st = &s->rec.api[a];
        if (cf_api_info[a].role != 'A' || st->failures == 0) continue;
        struct cover c = {0};
        for (unsigned i = 0; i < s->nsites; i++)
            if (s->sites[i].failures && (int)s->sites[i].api == a)
                cover_add(s, &c, (int)i, (double)s->sites[i].failures, s->sites[i].failures);
        struct cf_finding *f = add(s, "allocation-failures",
                                   st->failures == st->calls ? "high" : "medium", "failures");
        if (f == NULL) {
            free(c.p);
            return;
        }
        if (c.n)
            cover_finish(s, f, &c, failures_note);
        else
            free(c.p); /* failures at no recorded site (a replayed trace may name none) */
        char errors[160], w[600];
        error_list((enum cf_api)a, st, errors, sizeof errors);
        title(f, "%llu of %llu %s calls failed%s%s%s", (unsigned long long)st->failures,
              (unsigned long long)st->calls, cf_api_info[a].name, errors, f->nsites ? " at " : "",
              f->nsites ? where(s, f, w, sizeof w) : "");
        int first = (int)(st->errors[0].code - 1);
        bool setup = st->errors[0].code && st->failures == st->calls &&
                     cf_cuda_error_is_setup((enum cf_api)a, first);
        if (setup && cf_api_is_runtime((enum cf_api)a))
            advice(f, "The CUDA runtime could not use the driver, so nothing could be allocated. "
                      "Under `cudafrag run --sim` this is a program that carries NVIDIA's own "
                      "runtime (linked with libcudart_static.a, or loading NVIDIA's libcudart.so "
                      "through an RPATH), which the simulated device cannot serve: run it on a "
                      "GPU, or link it against the simulated runtime. On a GPU, check that the "
                      "driver is installed and at least as new as the runtime.");
        else if (setup)
            advice(f, "The driver was not usable, so nothing could be allocated: cuInit was not "
                      "called or failed, or there is no device. Check the driver installation "
                      "and CUDA_VISIBLE_DEVICES.");
        else if (st->errors[0].code && cf_cuda_error_is_oom((enum cf_api)a, first))
            advice(f, "Out of memory: the oom findings say what held the memory when the calls "
                      "failed.");
        else
            advice(f, "cudafrag passed these errors to the program unchanged. An invalid value "
                      "usually means a size, pointer or flag computed wrongly; check that the "
                      "program handles the failure.");
        num(f, "calls", (double)st->calls);
        num(f, "failures", (double)st->failures);
        if (st->errors[0].code) num(f, "first_error_code", first);
    }
}

/* ---- all of them ---- */

static int severity_rank(const char *sev)
{
    return strcmp(sev, "high") == 0 ? 0 : strcmp(sev, "medium") == 0 ? 1 : 2;
}

/* High first; within a severity, grouped by id. */
static int finding_order(const struct cf_finding *a, const struct cf_finding *b)
{
    int d = severity_rank(a->severity) - severity_rank(b->severity);
    return d ? d : strcmp(a->id, b->id);
}

int cf_findings_compute(struct cf_snap *s)
{
    oom_rule(s, true);
    oom_rule(s, false);
    failure_rule(s);
    alloc_rate_rule(s);
    many_sizes_rule(s);
    hot_loop_rule(s);
    bool site_waste = site_rounding_rule(s);
    if (!s->interim) {
        leak_rule(s, true);
        leak_rule(s, false);
    }
    footprint_rule(s);
    if (!site_waste) device_rounding_rule(s);
    pool_rule(s);
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

void cf_findings_free(struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nfindings; i++)
        free(s->findings[i].sites);
    free(s->findings);
    s->findings = NULL;
    s->nfindings = 0;
}
