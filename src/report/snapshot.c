#include "report/snapshot.h"

#include "record/read.h"
#include "report/trace_out.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cf_snap *sort_ctx; /* qsort has no context argument */

static int desc(uint64_t x, uint64_t y)
{
    return (x < y) - (x > y);
}

static int by_peak_desc(const void *a, const void *b)
{
    const struct cf_site *x = &sort_ctx->sites[*(const unsigned *)a];
    const struct cf_site *y = &sort_ctx->sites[*(const unsigned *)b];
    if (x->peak_live_bytes != y->peak_live_bytes)
        return desc(x->peak_live_bytes, y->peak_live_bytes);
    return desc(x->calls, y->calls);
}

static int by_calls_desc(const void *a, const void *b)
{
    const struct cf_site *x = &sort_ctx->sites[*(const unsigned *)a];
    const struct cf_site *y = &sort_ctx->sites[*(const unsigned *)b];
    if (x->calls != y->calls) return desc(x->calls, y->calls);
    return desc(x->peak_live_bytes, y->peak_live_bytes);
}

static int by_hash(const void *a, const void *b)
{
    uint64_t x = ((const struct cf_site *)a)->hash, y = ((const struct cf_site *)b)->hash;
    return x < y ? -1 : x > y;
}

int cf_snap_site_index(const struct cf_snap *s, uint64_t hash)
{
    struct cf_site key;
    key.hash = hash;
    if (s->nsites == 0) return -1;
    const struct cf_site *hit = bsearch(&key, s->sites, s->nsites, sizeof key, by_hash);
    return hit ? (int)(hit - s->sites) : -1;
}

double cf_site_span_s(const struct cf_site *site)
{
    return site->last_ns > site->first_ns ? (double)(site->last_ns - site->first_ns) / 1e9 : 0;
}

const char *cf_snap_untraced_note(const struct cf_snap *s, char *out, size_t n)
{
    if (s->fork.trace == CF_CHILD_AFTER_CUDA)
        snprintf(out, n,
                 "pid %ld is not traced: it was forked after its parent (pid %ld) used CUDA, "
                 "and the call sites and allocations it inherited are in the parent's trace",
                 s->pid, s->fork.parent_pid);
    else if (s->fork.trace == CF_CHILD_SAME_NAME)
        snprintf(out, n,
                 "pid %ld is not traced: a forked child's trace would take its parent's file "
                 "name (CUDAFRAG_OUTPUT has no %%p)",
                 s->pid);
    else
        return NULL;
    return out;
}

double cf_site_rate(const struct cf_site *site)
{
    double span = cf_site_span_s(site);
    return (double)site->calls / (span > 1.0 ? span : 1.0);
}

double cf_site_mean_lifetime_s(const struct cf_site *site)
{
    if (site->lifetime_count == 0) return NAN;
    return (double)site->lifetime_ns_total / (double)site->lifetime_count / 1e9;
}

static double frag_of(uint64_t live, uint64_t footprint)
{
    if (footprint == 0) return NAN;
    double f = 1.0 - (double)live / (double)footprint;
    return f < 0 ? 0 : f;
}

/* The footprint is computed from the events (record/footprint.c): what the
 * device held for the program, without the context's own memory. */
static void derive_devices(struct cf_snap *s)
{
    uint64_t req = 0, gra = 0;
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        const struct cf_device_stats *ds = &s->rec.dev[d];
        if (!ds->seen) continue;
        struct cf_dev_view *v = &s->devs[s->ndevs++];
        v->device = d;
        v->peak_live = ds->peak_live_bytes;
        v->peak_footprint = ds->peak_footprint;
        v->headline_frag = frag_of(v->peak_live, v->peak_footprint);
        v->frag_at_peak_footprint = frag_of(ds->live_at_peak_footprint, ds->peak_footprint);
        v->frag_at_peak_live = frag_of(ds->peak_live_bytes, ds->footprint_at_peak_live);
        s->total_peak_granted += ds->peak_granted;
        s->total_peak_raw += ds->peak_raw_bytes;
        s->total_raw_at_peak += ds->at_peak.raw;
        v->internal_waste = NAN;
        if (ds->peak_requested && ds->peak_granted >= ds->peak_requested)
            v->internal_waste =
                (double)(ds->peak_granted - ds->peak_requested) / (double)ds->peak_requested;
        s->total_peak_live += v->peak_live;
        s->total_peak_footprint += v->peak_footprint;
        if (ds->peak_requested && ds->peak_granted >= ds->peak_requested) {
            req += ds->peak_requested;
            gra += ds->peak_granted;
        }
    }
    s->headline_frag = frag_of(s->total_peak_live, s->total_peak_footprint);
    s->internal_waste = req ? (double)(gra - req) / (double)req : NAN;
    for (int a = 0; a < CF_API_COUNT; a++)
        if (cf_api_info[a].role == 'A') s->total_alloc_bytes += s->rec.api[a].bytes;
    for (unsigned i = 0; i < s->npools; i++) {
        s->pool_reserved_high += s->pools[i].reserved_high;
        s->pool_used_high += s->pools[i].used_high;
    }
}

/* Every frame of a named site is resolved: the allocator frames folded away
 * must be known to be so before the one shown is. */
#define ALL_FRAMES CF_MAX_FRAMES

static void add_site_frames(struct cf_snap *s, int idx, unsigned depth)
{
    if (idx < 0) return;
    const struct cf_site *site = &s->sites[idx];
    for (unsigned f = 0; f < site->nframes && f < depth; f++)
        cf_symtab_add(&s->syms, site->frames[f]);
}

/* Only sites that appear in the report are symbolized: reading symbol tables (and,
 * offline, DWARF) is the slow part. */
void cf_snap_symbols(struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nsites && i < s->top; i++) {
        add_site_frames(s, (int)s->by_peak[i], ALL_FRAMES);
        add_site_frames(s, (int)s->by_calls[i], ALL_FRAMES);
    }
    /* Leak groups can carry rounding-waste findings beyond the table's rows. */
    for (unsigned i = 0; i < s->nleaks && i < s->top + 64; i++)
        add_site_frames(s, s->leaks[i].site, ALL_FRAMES);
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_api_info *api = &cf_api_info[s->sites[s->by_calls[i]].api];
        if (api->kind == CF_KIND_POOL && api->role == 'A') {
            add_site_frames(s, (int)s->by_calls[i], ALL_FRAMES); /* named by pool-regrow */
            break;
        }
    }
    for (unsigned i = 0; i < s->rec.nooms; i++)
        if (s->rec.ooms[i].site)
            add_site_frames(s, cf_snap_site_index(s, s->rec.ooms[i].site->hash), ALL_FRAMES);
    /* Sites that may carry a finding: cheap tests, generous on purpose, busiest
     * first and bounded (findings are capped per id anyway). */
    for (unsigned i = 0, n = 0; i < s->nsites && n < 512; i++) {
        const struct cf_site *st = &s->sites[s->by_calls[i]];
        if (cf_site_rate(st) > CF_RATE_PER_S || st->distinct_sizes > CF_SITE_MANY_SIZES ||
            st->calls >= CF_HOT_CALLS) {
            add_site_frames(s, (int)s->by_calls[i], ALL_FRAMES);
            n++;
        }
    }
    cf_symtab_resolve(&s->syms);
}

static void take_who(struct cf_snap *s, const struct cf_snap_who *w)
{
    snprintf(s->program, sizeof s->program, "%s", w->program);
    snprintf(s->rank, sizeof s->rank, "%s", w->rank);
    snprintf(s->host, sizeof s->host, "%s", w->host);
    s->pid = w->pid;
    snprintf(s->imported, sizeof s->imported, "%s", w->imported);
    memcpy(s->pool_names, w->pool_names, sizeof s->pool_names);
    s->npool_names = w->npool_names;
    s->wall_known = w->realtime_base_ns != 0;
    s->wall_minus_event_ns = (int64_t)(w->realtime_base_ns - w->monotonic_base_ns);
}

static void take_copy(struct cf_snap *s, const struct cf_rec_read *r)
{
    s->rec = r->rec;
    s->sites = r->sites;
    s->nsites = r->nsites;
    s->pools = r->pools;
    s->npools = r->npools;
    s->leaks = r->live;
    s->nleaks = r->nlive;
    s->leaked_bytes = r->live_bytes;
    s->leaked_count = r->live_count;
    s->pynames = r->pynames;
    s->syms.py = r->pynames;
    s->syms.npy = r->npynames;
    cf_snap_leave_out(s, r->held);
}

int cf_snap_take(struct cf_snap *s, const struct cf_snap_input *in)
{
    memset(s, 0, sizeof *s);
    s->interim = in->interim;
    s->replayed = in->replayed;
    s->reason = in->reason;
    s->top = in->top;
    s->blocks = in->blocks;
    s->fork = in->fork;
    s->missing = in->missing;
    s->driver_unusable = in->driver_unusable;
    s->syms.resolver = in->resolver;
    take_who(s, &in->who);
    take_copy(s, &in->copy);
    s->now_ns = in->now_ns;
    s->duration_s = s->now_ns > s->rec.start_ns ? (double)(s->now_ns - s->rec.start_ns) / 1e9 : 0;
    s->arena = in->arena;
    s->shadow = in->shadow;
    derive_devices(s);
    s->by_peak = malloc((s->nsites + 1) * sizeof *s->by_peak);
    s->by_calls = malloc((s->nsites + 1) * sizeof *s->by_calls);
    if (!s->by_peak || !s->by_calls) return -1;
    for (unsigned i = 0; i < s->nsites; i++)
        s->by_peak[i] = s->by_calls[i] = i;
    sort_ctx = s;
    qsort(s->by_peak, s->nsites, sizeof *s->by_peak, by_peak_desc);
    qsort(s->by_calls, s->nsites, sizeof *s->by_calls, by_calls_desc);
    sort_ctx = NULL;
    return 0;
}

uint64_t cf_snap_shadow_native(const struct cf_snap *s)
{
    if (s->total_peak_raw) return s->total_peak_raw;
    uint64_t native = s->total_peak_footprint > s->total_peak_granted ? s->total_peak_footprint
                                                                      : s->total_peak_granted;
    return native ? native : s->total_peak_live;
}

uint64_t cf_snap_shadow_left_out(const struct cf_snap *s)
{
    return s->total_peak_footprint > s->total_raw_at_peak
               ? s->total_peak_footprint - s->total_raw_at_peak
               : 0;
}

void cf_snap_free(struct cf_snap *s)
{
    struct cf_rec_read r = {
        .sites = s->sites, .pools = s->pools, .live = s->leaks, .pynames = s->pynames};
    cf_rec_read_free(&r);
    free(s->by_peak);
    free(s->by_calls);
    free(s->site_owner);
    cf_findings_free(s);
    cf_symtab_free(&s->syms);
    memset(s, 0, sizeof *s);
}

const char *cf_snap_import_kind(const struct cf_snap *s)
{
    if (s->imported[0] == '\0') return NULL;
    return strcmp(s->imported, "pytorch-memory-snapshot") == 0 ? "PyTorch memory snapshot"
                                                               : s->imported;
}

void cf_snap_describe_program(const struct cf_snap *s, char *out, size_t n)
{
    if (s->imported[0]) {
        snprintf(out, n, "imported from %s (%s)", s->program, cf_snap_import_kind(s));
        return;
    }
    char pid[32] = "";
    if (s->pid > 0) snprintf(pid, sizeof pid, "pid %ld", s->pid);
    if (pid[0] || s->rank[0])
        snprintf(out, n, "%s (%s%s%s%s)", s->program, pid, pid[0] && s->rank[0] ? ", " : "",
                 s->rank[0] ? "rank " : "", s->rank);
    else
        snprintf(out, n, "%s", s->program);
}

const char *cf_snap_pool_name(const struct cf_snap *s, uint64_t handle)
{
    for (unsigned i = 0; i < s->npool_names; i++)
        if (s->pool_names[i].handle == handle) return s->pool_names[i].name;
    return NULL;
}
