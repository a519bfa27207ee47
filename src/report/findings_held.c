/* Findings on what is live at the report (leaks, rounding) and on the devices'
 * footprints. */
#include "report/findings_rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void cf_leak_rule(struct cf_snap *s, bool held)
{
    struct cf_cover c = {0};
    uint64_t bytes = 0, count = 0;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if ((l->site >= 0 && s->sites[l->site].frees == 0) != held) continue;
        cf_cover_add(s, &c, l->site, (double)l->bytes, l->count);
        bytes += l->bytes;
        count += l->count;
    }
    struct cf_finding *f;
    if (c.n == 0 ||
        !(f = cf_finding_add(s, "leak", bytes >= (1u << 20) ? "medium" : "low", "bytes"))) {
        free(c.p);
        return;
    }
    cf_cover_finish(s, f, &c, leak_note);
    const char *kind = leak_kind(s, held);
    char w[600];
    cf_finding_title(f, "%llu %s%sallocation%s (%s) still live at exit from %s",
                     (unsigned long long)count, kind, kind[0] ? " " : "", count == 1 ? "" : "s",
                     B(bytes), cf_finding_where(s, f, w, sizeof w));
    if (held)
        cf_finding_advice(f,
                          "Nothing allocated here was freed during the whole run: typical of a "
                          "caching allocator's segments (PyTorch, CuPy and JAX keep freed blocks "
                          "for reuse until exit) or of buffers meant to live as long as the "
                          "program. Then this is memory held, not lost -- the framework's own "
                          "statistics tell how much of it was in use. Otherwise free it with the "
                          "matching call before the program exits.");
    else
        cf_finding_advice(f, "Free them with the matching call (cudaFree, cuMemFree, cudaFreeHost, "
                             "cuMemRelease, ...) before the program exits; a long-running process "
                             "that repeats this path grows without bound.");
    cf_finding_num(f, "bytes", (double)bytes);
    cf_finding_num(f, "count", (double)count);
    cf_finding_num(f, "sites", f->nsites);
}

static void waste_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "%s more than requested", B(bytes_of(e->value)));
}

/* Live allocations whose granted size is known, rounded up by more than 20 %. */
bool cf_site_rounding_rule(struct cf_snap *s)
{
    struct cf_cover c = {0};
    uint64_t req = 0, gra = 0;
    for (unsigned i = 0; i < s->nleaks; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        if (l->requested == 0 || l->granted <= l->requested ||
            (double)(l->granted - l->requested) / (double)l->requested <= CF_ROUNDING_WASTE)
            continue;
        cf_cover_add(s, &c, l->site, (double)(l->granted - l->requested), l->count);
        req += l->requested;
        gra += l->granted;
    }
    struct cf_finding *f;
    if (c.n == 0 || !(f = cf_finding_add(s, "rounding-waste", "medium", "bytes"))) {
        free(c.p);
        return c.n != 0;
    }
    cf_cover_finish(s, f, &c, waste_note);
    double waste = (double)(gra - req) / (double)req;
    char w[600];
    cf_finding_title(f, "allocations at %s are rounded up by %.0f%%: %s granted for %s requested",
                     cf_finding_where(s, f, w, sizeof w), waste * 100, B(gra), B(req));
    cf_finding_advice(f,
                      "The driver rounds large requests up to 2 MiB multiples, so sizes just above "
                      "a multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request exact "
                      "multiples of 2 MiB (trim a few bytes or merge neighbouring buffers into one "
                      "allocation), or sub-allocate small buffers from one larger block.");
    cf_finding_num(f, "waste_ratio", waste);
    cf_finding_num(f, "requested_bytes", (double)req);
    cf_finding_num(f, "granted_bytes", (double)gra);
    cf_finding_num(f, "sites", f->nsites);
    return true;
}

/* ---- rules on devices ---- */

static int list_device(char *out, size_t n, size_t len, int device)
{
    int w = snprintf(out + len, n - len, "%s%d", len ? ", " : "", device);
    return w > 0 && (size_t)w < n - len ? w : 0;
}

/* When no site qualifies: every device rounded up by more than 20 % at its live peak. */
void cf_device_rounding_rule(struct cf_snap *s)
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
    if (req == 0 || !(f = cf_finding_add(s, "rounding-waste", "medium", "bytes"))) return;
    f->site = s->nsites ? (int)s->by_peak[0] : -1;
    double waste = (double)(gra - req) / (double)req;
    cf_finding_title(
        f,
        "device%s %s: allocations are rounded up by %.0f%% at the live peak (%s granted for "
        "%s requested)",
        strchr(devs, ',') ? "s" : "", devs, waste * 100, B(gra), B(req));
    cf_finding_advice(
        f, "The driver rounds large requests up to 2 MiB multiples, so sizes just above a "
           "multiple of 2 MiB (or between 1 and 2 MiB) waste the most. Request exact "
           "multiples of 2 MiB, merge small buffers into one allocation, or sub-allocate "
           "them from a larger block.");
    cf_finding_num(f, "waste_ratio", waste);
    cf_finding_num(f, "requested_bytes", (double)req);
    cf_finding_num(f, "granted_bytes", (double)gra);
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
    uint64_t extra = cf_above(v->peak_footprint, ds->live_at_peak_footprint);
    if (extra < CF_FOOTPRINT_MIN_BYTES ||
        v->peak_footprint < CF_FOOTPRINT_RATIO * (double)ds->live_at_peak_footprint)
        return -1;
    *x = (struct excess){v->peak_footprint,
                         ds->live_at_peak_footprint,
                         ds->total_bytes,
                         {cf_above(p->raw, p->raw_live), cf_above(p->pool, p->pool_live),
                          cf_above(p->graph, p->graph_used), cf_above(p->arena, p->arena_live), 0},
                         ds->total_bytes != 0};
    x->part[OTHER] = cf_above(extra, sum_parts(x->part, OTHER));
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
    uint64_t extra = cf_above(x->footprint, x->live);
    struct cf_finding *f =
        cf_finding_add(s, "footprint-over-live", footprint_severity(x, extra), "");
    if (f == NULL) return;
    f->site = s->nsites ? (int)s->by_peak[0] : -1;
    char share[96] = "";
    if (x->total_known)
        snprintf(share, sizeof share, ", %.1f%% of %s device memory",
                 100.0 * (double)extra / (double)x->total, B(x->total));
    cf_finding_title(f, "device%s %s: at %s footprint peak%s %s, %s (%.0f%%) was not live%s",
                     several ? "s" : "", devs, several ? "their" : "its", several ? "s" : "",
                     B(x->footprint), B(extra), 100.0 * (double)extra / (double)x->footprint,
                     share);
    char other[64] = "";
    if (x->part[OTHER]) snprintf(other, sizeof other, ", VMM/array rounding %s", B(x->part[OTHER]));
    cf_finding_advice(
        f,
        "Held beyond live bytes (%s): page waste %s, pool reserve %s, graph pool %s, arena "
        "%s%s. Largest part: %s.",
        B(extra), B(x->part[PAGES]), B(x->part[POOL]), B(x->part[GRAPH]), B(x->part[ARENA]), other,
        cause_text[cause]);
    cf_finding_num(f, "peak_footprint_bytes", (double)x->footprint);
    cf_finding_num(f, "live_at_peak_footprint_bytes", (double)x->live);
    cf_finding_num(f, "page_waste_bytes", (double)x->part[PAGES]);
    cf_finding_num(f, "pool_reserve_bytes", (double)x->part[POOL]);
    cf_finding_num(f, "graph_reserve_bytes", (double)x->part[GRAPH]);
    cf_finding_num(f, "arena_slack_bytes", (double)x->part[ARENA]);
    cf_finding_num(f, "vmm_array_rounding_bytes", (double)x->part[OTHER]);
    cf_finding_num(f, "device_total_bytes", x->total_known ? (double)x->total : NAN);
}

/* One finding per cause (the largest part), over the devices it applies to. */
void cf_footprint_rule(struct cf_snap *s)
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
