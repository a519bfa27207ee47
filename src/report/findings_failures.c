/* Findings on pools that shrink and regrow, out-of-memory events and failed calls. */
#include "report/findings_rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/cuda_errors.h"

/* ---- pools and out-of-memory events ---- */

static void cover_pool_sites(const struct cf_snap *s, struct cf_cover *c)
{
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (cf_api_info[st->api].kind == CF_KIND_POOL && cf_api_info[st->api].role == 'A')
            cf_cover_add(s, c, (int)s->by_calls[i], (double)st->calls, st->calls);
    }
}

void cf_pool_rule(struct cf_snap *s)
{
    const struct cf_pool *worst = NULL;
    unsigned n = 0;
    for (unsigned i = 0; i < s->npools; i++)
        if (s->pools[i].regrows >= CF_REGROWS) {
            n++;
            if (worst == NULL || s->pools[i].regrows > worst->regrows) worst = &s->pools[i];
        }
    struct cf_finding *f;
    if (n == 0 || !(f = cf_finding_add(s, "pool-regrow", "medium", "calls"))) return;
    struct cf_cover c = {0};
    cover_pool_sites(s, &c);
    cf_cover_finish(s, f, &c, cf_calls_note);
    char w[600] = "", more[64] = "";
    if (n > 1) snprintf(more, sizeof more, " (and %u more pools)", n - 1);
    if (f->nsites) snprintf(w, sizeof w, " at %s", cf_finding_where(s, f, (char[512]){0}, 512));
    const char *name = cf_snap_pool_name(s, worst->handle);
    char pool[200];
    if (name)
        snprintf(pool, sizeof pool, "%s", name);
    else
        snprintf(pool, sizeof pool, "%s pool 0x%llx", worst->is_default ? "default" : "application",
                 (unsigned long long)worst->handle);
    cf_finding_title(f, "%s on device %d returned memory %llu times and grew back %llu times%s%s",
                     pool, worst->device, (unsigned long long)worst->shrinks,
                     (unsigned long long)worst->regrows, more, w);
    cf_finding_advice(
        f,
        "Raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (cudaMemPoolAttrReleaseThreshold) on "
        "the pool, e.g. to its high-water mark %s or UINT64_MAX, so memory freed "
        "before a synchronization is kept for the next allocations instead of being "
        "unmapped and mapped again.",
        B(worst->reserved_high));
    cf_finding_num(f, "regrows", (double)worst->regrows);
    cf_finding_num(f, "shrinks", (double)worst->shrinks);
    cf_finding_num(f, "release_threshold_bytes", (double)worst->release_threshold);
    cf_finding_num(f, "reserved_high_bytes", (double)worst->reserved_high);
    cf_finding_num(f, "pools", n);
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
        rounding += cf_above(ds->peak_granted, ds->peak_requested);
    }
    cached = cf_above(s->arena.peak_mapped, s->arena.peak_live);
    top_holders(s, holders, sizeof holders);
    if (enough)
        cf_finding_advice(
            f,
            "OOM with enough free memory: the free memory is fragmented or held in "
            "reserves. Held: pool reserves %s, rounding waste %s, caching/arena %s. "
            "Largest live holders: %s. Trim pools (cudaMemPoolTrimTo) before large "
            "allocations, allocate long-lived large buffers first, or run with --arena.",
            B(reserve), B(rounding), B(cached), holders);
    else if (beyond == n)
        /* Freeing and smaller batches are the wrong advice here. */
        cf_finding_advice(
            f,
            "The request%s alone (%s%s) is larger than the whole device (%s): it cannot "
            "succeed however much is freed. Split the buffer (process the data in chunks, "
            "or shard it across devices), or check the size computation.",
            n > 1 ? "s" : "", n > 1 ? "the largest " : "", B(big->request), B(big->total_bytes));
    else if (beyond)
        cf_finding_advice(
            f,
            "The largest request (%s) alone is larger than the whole device (%s): split "
            "it (process the data in chunks, or shard it across devices). For the other "
            "%u the device was full. Largest live holders: %s. Free or shrink these, or "
            "reduce the batch size.",
            B(big->request), B(big->total_bytes), n - beyond, holders);
    else
        cf_finding_advice(f,
                          "The device was full. Largest live holders: %s. Free or shrink these, "
                          "or reduce the batch size.",
                          holders);
}

/* One finding for the failures with enough free memory, one for the others. */
void cf_oom_rule(struct cf_snap *s, bool enough)
{
    struct cf_cover c = {0};
    const struct cf_oom *big = NULL;
    unsigned beyond = 0;
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *o = &s->rec.ooms[i];
        if (enough_free(o) != enough) continue;
        cf_cover_add(s, &c, o->site ? cf_snap_site_index(s, o->site->hash) : -1, 1, 1);
        if (big == NULL || o->request > big->request) big = o;
        beyond += beyond_device(o);
    }
    struct cf_finding *f;
    if (c.n == 0 ||
        !(f = cf_finding_add(s, enough ? "oom-with-free-memory" : "oom", "high", "failures"))) {
        free(c.p);
        return;
    }
    unsigned n = c.n;
    cf_cover_finish(s, f, &c, oom_note);
    char w[600], lead[64] = "";
    if (n > 1) snprintf(lead, sizeof lead, "%u allocations failed; the largest: ", n);
    cf_finding_title(f, "%s%s of %s failed with out-of-memory on device %d at %s (%s)", lead,
                     cf_api_info[big->api].name, B(big->request), big->device,
                     cf_finding_where(s, f, w, sizeof w),
                     cf_fmt_free_of(big->free_bytes, big->total_bytes, (char[96]){0}, 96));
    oom_advice(s, f, enough, big, beyond, n);
    cf_finding_num(f, "request_bytes", (double)big->request);
    cf_finding_num(f, "free_bytes", (double)big->free_bytes);
    cf_finding_num(f, "total_bytes", (double)big->total_bytes);
    cf_finding_num(f, "failures", n);
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
void cf_failure_rule(struct cf_snap *s)
{
    for (int a = 0; a < CF_API_COUNT; a++) {
        const struct cf_api_stats *st = &s->rec.api[a];
        if (cf_api_info[a].role != 'A' || st->failures == 0) continue;
        struct cf_cover c = {0};
        for (unsigned i = 0; i < s->nsites; i++)
            if (s->sites[i].failures && (int)s->sites[i].api == a)
                cf_cover_add(s, &c, (int)i, (double)s->sites[i].failures, s->sites[i].failures);
        struct cf_finding *f = cf_finding_add(
            s, "allocation-failures", st->failures == st->calls ? "high" : "medium", "failures");
        if (f == NULL) {
            free(c.p);
            return;
        }
        if (c.n)
            cf_cover_finish(s, f, &c, failures_note);
        else
            free(c.p); /* failures at no recorded site (a replayed trace may name none) */
        char errors[160], w[600];
        error_list((enum cf_api)a, st, errors, sizeof errors);
        cf_finding_title(f, "%llu of %llu %s calls failed%s%s%s", (unsigned long long)st->failures,
                         (unsigned long long)st->calls, cf_api_info[a].name, errors,
                         f->nsites ? " at " : "",
                         f->nsites ? cf_finding_where(s, f, w, sizeof w) : "");
        int first = (int)(st->errors[0].code - 1);
        bool setup = st->errors[0].code && st->failures == st->calls &&
                     cf_cuda_error_is_setup((enum cf_api)a, first);
        if (setup && cf_api_is_runtime((enum cf_api)a))
            cf_finding_advice(
                f, "The CUDA runtime could not use the driver, so nothing could be allocated. "
                   "Under `cudafrag run --sim` this is a program that carries NVIDIA's own "
                   "runtime (linked with libcudart_static.a, or loading NVIDIA's libcudart.so "
                   "through an RPATH), which the simulated device cannot serve: run it on a "
                   "GPU, or link it against the simulated runtime. On a GPU, check that the "
                   "driver is installed and at least as new as the runtime.");
        else if (setup)
            cf_finding_advice(
                f, "The driver was not usable, so nothing could be allocated: cuInit was not "
                   "called or failed, or there is no device. Check the driver installation "
                   "and CUDA_VISIBLE_DEVICES.");
        else if (st->errors[0].code && cf_cuda_error_is_oom((enum cf_api)a, first))
            cf_finding_advice(
                f, "Out of memory: the oom findings say what held the memory when the calls "
                   "failed.");
        else
            cf_finding_advice(
                f, "cudafrag passed these errors to the program unchanged. An invalid value "
                   "usually means a size, pointer or flag computed wrongly; check that the "
                   "program handles the failure.");
        cf_finding_num(f, "calls", (double)st->calls);
        cf_finding_num(f, "failures", (double)st->failures);
        if (st->errors[0].code) cf_finding_num(f, "first_error_code", first);
    }
}
