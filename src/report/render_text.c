#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arena/shadow.h"
#include "report/format.h"
#include "report/oom.h"
#include "report/outpath.h"
#include "report/render.h"

#include "cudafrag_build.h"

#define B(v) cf_fmt_bytes((v), (char[32]){0}, 32)
#define T(v) cf_fmt_secs((v), (char[32]){0}, 32)

static double pct(double ratio)
{
    return ratio * 100.0;
}

static void header(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_printf(o, "==== cudafrag %s %s report (%s) ====\n", CUDAFRAG_VERSION,
                  s->interim ? "interim" : "final", s->reason ? s->reason : "exit");
    char who[700];
    cf_snap_describe_program(s, who, sizeof who);
    cf_buf_printf(o, "program   %s%s\n", who,
                  s->replayed && !s->imported[0] ? " -- from its trace" : "");
    cf_buf_printf(o, "duration  %s\n", T(s->duration_s));
    if (s->blocks && s->blocks[0])
        cf_buf_printf(o, "blocks    framework caches bypassed (cudafrag run --blocks): %s\n",
                      s->blocks);
    cf_buf_puts(o, "devices  ");
    if (s->ndevs == 0) cf_buf_puts(o, " none used");
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_device_stats *ds = &s->rec.dev[s->devs[i].device];
        if (ds->total_bytes)
            cf_buf_printf(o, " %d (%s total)", s->devs[i].device, B(ds->total_bytes));
        else
            cf_buf_printf(o, " %d", s->devs[i].device);
    }
    cf_buf_puts(o, "\n");
    if (s->missing) {
        char what[256];
        cf_snap_describe_missing(s, what, sizeof what);
        cf_buf_printf(o, "note: partial report: %s\n", what);
    }
}

static double secs_since_start(const struct cf_snap *s, uint64_t t)
{
    return t > s->rec.start_ns ? (double)(t - s->rec.start_ns) / 1e9 : 0;
}

/* The footprint is computed from the events; cuMemGetInfo only checks it. */
static void device_summary(const struct cf_snap *s, const struct cf_dev_view *v, struct cf_buf *o)
{
    const struct cf_device_stats *ds = &s->rec.dev[v->device];
    cf_buf_printf(o, "device %d: peak live %s at +%s, peak footprint %s at +%s\n", v->device,
                  B(v->peak_live), T(secs_since_start(s, ds->peak_t_ns)), B(v->peak_footprint),
                  T(secs_since_start(s, ds->peak_footprint_t_ns)));
    if (!isnan(v->frag_at_peak_footprint) && !isnan(v->frag_at_peak_live))
        cf_buf_printf(o,
                      "  at the footprint peak %.1f%% of it was not live (live %s); at the live "
                      "peak %.1f%% (footprint %s)\n",
                      pct(v->frag_at_peak_footprint), B(ds->live_at_peak_footprint),
                      pct(v->frag_at_peak_live), B(ds->footprint_at_peak_live));
    else if (!isnan(v->frag_at_peak_footprint))
        /* Nothing was ever live (only failed requests, or a pool that was never
         * allocated from): there is no live peak to hold against. */
        cf_buf_printf(o, "  at the footprint peak %.1f%% of it was not live (live %s)\n",
                      pct(v->frag_at_peak_footprint), B(ds->live_at_peak_footprint));
    if (ds->footprint_samples)
        cf_buf_printf(o,
                      "  cuMemGetInfo cross-check: %llu samples; it saw at most %s more (memory "
                      "outside allocations: context, modules, libraries) and %s less\n",
                      (unsigned long long)ds->footprint_samples, B(ds->max_over), B(ds->max_under));
    if (ds->footprint_inexact)
        cf_buf_puts(o, "  note: cudafrag ran out of memory for its page table: the footprint is "
                       "a lower bound\n");
}

static void summary(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_puts(o, "\n-- summary --\n");
    cf_buf_printf(o, "allocations %llu, frees %llu (unknown pointers %llu), %s allocated\n",
                  (unsigned long long)s->rec.total_allocs, (unsigned long long)s->rec.total_frees,
                  (unsigned long long)s->rec.unknown_frees, B(s->total_alloc_bytes));
    for (unsigned i = 0; i < s->ndevs; i++)
        device_summary(s, &s->devs[i], o);
    if (s->driver_unusable)
        cf_buf_puts(o, "note: a child forked after its parent used CUDA may not call the driver: "
                       "the footprint is computed from the events (inherited ones included), "
                       "without a cuMemGetInfo cross-check in this process\n");
    if (s->fork.parent_pid)
        cf_buf_printf(o,
                      "note: forked from pid %ld after it used CUDA: %llu allocations (%s) live "
                      "at the fork are the parent's (listed below as live, not this process's "
                      "leaks: it cannot free them)\n",
                      s->fork.parent_pid, (unsigned long long)s->fork.inherited_count,
                      B(s->fork.inherited_bytes));
    char why[256];
    if (cf_snap_untraced_note(s, why, sizeof why)) cf_buf_printf(o, "note: %s\n", why);
    if (isnan(s->headline_frag))
        cf_buf_puts(o, "fragmentation: no device memory was held\n");
    else
        cf_buf_printf(o, "fragmentation 1 - peak live / peak footprint = %.1f%%\n",
                      pct(s->headline_frag));
    if (s->missing & CF_SNAP_NO_LIVE)
        cf_buf_printf(o, "%s: unknown (partial report)\n",
                      s->interim ? "live now" : "leaks at exit");
    else
        cf_buf_printf(o, "%s: %llu allocations, %s%s\n", s->interim ? "live now" : "leaks at exit",
                      (unsigned long long)s->leaked_count, B(s->leaked_bytes),
                      s->fork.parent_pid ? " (the parent's included, see above)" : "");
    cf_render_oom_line(s, o);
    if (s->rec.host.seen || s->rec.host.peak_live_bytes)
        cf_buf_printf(o, "pinned/registered host memory: peak live %s, live now %s\n",
                      B(s->rec.host.peak_live_bytes), B(s->rec.host.live_bytes));
    if (s->rec.managed.seen)
        cf_buf_printf(o,
                      "managed memory (not in the device footprint): peak live %s, live now %s\n",
                      B(s->rec.managed.peak_live_bytes), B(s->rec.managed.live_bytes));
    if (s->trace.events)
        cf_buf_printf(o, "trace: %llu events, %s written (%.1f bytes per event)%s\n",
                      (unsigned long long)s->trace.events, B(s->trace.file_bytes),
                      (double)s->trace.file_bytes / (double)s->trace.events,
                      s->trace.chunks_lost || s->trace.partial
                          ? "; some buffered events could not be written"
                          : "");
    if (s->rec.allocs_without_stack)
        cf_buf_printf(o,
                      "note: %llu allocations recorded without a call stack: their thread's stack "
                      "was too small to unwind\n",
                      (unsigned long long)s->rec.allocs_without_stack);
    if (s->rec.stacks_unavailable)
        cf_buf_puts(o, "note: call stacks unavailable (libunwind could not be loaded); call "
                       "sites are keyed by API\n");
    if (s->rec.replaced_live)
        cf_buf_printf(o,
                      "note: %llu addresses came back from the driver while still recorded "
                      "live (their frees were not seen)\n",
                      (unsigned long long)s->rec.replaced_live);
}

static void api_table(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_puts(o, "\n-- API calls --\n");
    cf_buf_printf(o, "%-28s %10s %12s %8s %12s\n", "api", "calls", "bytes", "failures", "time");
    bool estimated = false;
    for (int a = 0; a < CF_API_COUNT; a++) {
        const struct cf_api_stats *st = &s->rec.api[a];
        if (st->calls == 0) continue;
        char t[40];
        snprintf(t, sizeof t, "%s%s", cf_api_estimated(st) ? "~" : "", T(cf_api_time_s(st)));
        estimated |= cf_api_estimated(st);
        cf_buf_printf(o, "%-28s %10llu %12s %8llu %12s\n", cf_api_info[a].name,
                      (unsigned long long)st->calls, B(st->bytes), (unsigned long long)st->failures,
                      t);
    }
    if (estimated)
        cf_buf_puts(o, "~ estimated from a sample of the calls (CUDAFRAG_TIME_ONE_IN)\n");
}

static void histograms(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_printf(o, "\n-- sizes (%s%llu distinct) --\n",
                  s->rec.distinct_sizes_capped ? "at least " : "",
                  (unsigned long long)s->rec.distinct_sizes);
    for (int b = 0; b < CF_HIST_BINS; b++) {
        if (s->rec.sizes.count[b] == 0) continue;
        cf_buf_printf(o, "  >= %-10s %10llu allocations %12s\n", B(1ull << b),
                      (unsigned long long)s->rec.sizes.count[b], B(s->rec.sizes.bytes[b]));
    }
    cf_buf_puts(o, "\n-- lifetimes --\n");
    for (int b = 0; b < CF_HIST_BINS; b++) {
        if (s->rec.lifetimes.count[b] == 0) continue;
        cf_buf_printf(o, "  >= %-10s %10llu allocations\n", T((double)(1ull << b) / 1e9),
                      (unsigned long long)s->rec.lifetimes.count[b]);
    }
}

static const char *no_python_why(uint32_t marker)
{
    return marker == CF_PY_GIL_RELEASED
               ? "no Python frames: the thread had released the GIL, as ctypes.CDLL and most "
                 "framework operations do"
               : "no Python frames: no Python code on this thread's stack (a native worker "
                 "thread, such as PyTorch's autograd engine running the backward pass; "
                 "shown: its first frame outside allocators)";
}

/* "3000/s" over a second or more; a shorter burst as its count and span. */
static void rate(const struct cf_site *st, struct cf_buf *o)
{
    double span = cf_site_span_s(st);
    if (st->calls < 2 || span <= 0) return;
    if (span >= 1.0)
        cf_buf_printf(o, "  rate %.0f/s", cf_site_rate(st));
    else
        cf_buf_printf(o, "  within %s", T(span));
}

static void site_row(const struct cf_snap *s, unsigned idx, struct cf_buf *o)
{
    const struct cf_site *st = &s->sites[idx];
    char where[512];
    cf_snap_site_label(s, (int)idx, where, sizeof where);
    /* A site remembers CF_SITE_SIZES sizes; one more only says "there were more". */
    char sizes[16];
    if (st->distinct_sizes > CF_SITE_SIZES)
        snprintf(sizes, sizeof sizes, ">%u", CF_SITE_SIZES);
    else
        snprintf(sizes, sizeof sizes, "%u", st->distinct_sizes);
    cf_buf_printf(o, "  %-18s calls %-8llu peak live %-10s bytes %-10s sizes %s",
                  cf_api_info[st->api].name, (unsigned long long)st->calls, B(st->peak_live_bytes),
                  B(st->bytes), sizes);
    /* Rate and lifetime tell a hot loop from a one-time allocation at a glance. */
    rate(st, o);
    if (st->frees > 0) cf_buf_printf(o, "  mean life %s", T(cf_site_mean_lifetime_s(st)));
    cf_buf_printf(o, "  owner %s\n    at %s\n",
                  cf_owner_info[cf_snap_site_owner(s, (int)idx)].label, where);
    /* Up to three callers, allocator and framework frames left out like the site's. */
    int f = cf_snap_site_shown(s, (int)idx);
    for (unsigned k = 0; k < 3 && f >= 0 && (f = cf_snap_next_shown(s, (int)idx, f)) >= 0; k++) {
        cf_snap_frame_label(s, st->frames[f], where, sizeof where);
        cf_buf_printf(o, "       %s\n", where);
    }
    uint32_t marker = cf_snap_site_python(s, (int)idx);
    if (marker) cf_buf_printf(o, "    (%s)\n", no_python_why(marker));
}

/* The by-calls table only when it would not repeat the by-peak one. */
static bool same_order(const struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        if (s->by_peak[i] != s->by_calls[i]) return false;
    return true;
}

static void sites(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->missing & CF_SNAP_NO_SITES) {
        cf_buf_puts(o, "\n-- call sites: unknown (partial report) --\n");
        return;
    }
    cf_buf_printf(o, "\n-- top call sites by peak live bytes (%u sites) --\n", s->nsites);
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_row(s, s->by_peak[i], o);
    if (same_order(s)) return;
    cf_buf_puts(o, "\n-- top call sites by calls --\n");
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_row(s, s->by_calls[i], o);
}

static int by_owner_peak(const void *a, const void *b, void *ctx)
{
    const struct cf_owner_view *v = ctx;
    uint64_t x = v[*(const int *)a].peak_live, y = v[*(const int *)b].peak_live;
    return x != y ? (x < y) - (x > y) : *(const int *)a - *(const int *)b;
}

/* Device memory by who allocated it, largest first; owners without sites left out. */
static void owners(const struct cf_snap *s, struct cf_buf *o)
{
    if ((s->missing & CF_SNAP_NO_SITES) || s->nsites == 0) return;
    int order[CF_OWNER_COUNT];
    for (int i = 0; i < CF_OWNER_COUNT; i++)
        order[i] = i;
    qsort_r(order, CF_OWNER_COUNT, sizeof order[0], by_owner_peak, (void *)s->owners);
    cf_buf_puts(o, "\n-- memory by owner --\n");
    cf_buf_printf(o, "  %-16s %10s %14s %12s %12s %6s\n", "owner", "peak live", "share of peak",
                  "live at end", "allocations", "sites");
    for (int i = 0; i < CF_OWNER_COUNT; i++) {
        const struct cf_owner_view *v = &s->owners[order[i]];
        if (v->sites == 0 && v->live == 0) continue;
        cf_buf_printf(o, "  %-16s %10s %13.1f%% %12s %12llu %6u\n", cf_owner_info[order[i]].label,
                      B(v->peak_live), pct(v->share), B(v->live),
                      (unsigned long long)v->allocations, v->sites);
    }
    cf_buf_puts(o, "  (peak live: the owner's call sites' own peaks, summed; who owns what: "
                   "docs/report.md#owners)\n");
}

static void leaks(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->missing & CF_SNAP_NO_LIVE) {
        cf_buf_printf(o, "\n-- %s: unknown (partial report) --\n",
                      s->interim ? "live allocations" : "leaks at exit");
        return;
    }
    cf_buf_printf(o, "\n-- %s (%llu allocations, %s) --\n",
                  s->interim ? "live allocations" : "leaks at exit",
                  (unsigned long long)s->leaked_count, B(s->leaked_bytes));
    if (!s->interim && s->nleaks)
        cf_buf_puts(o, "(memory the CUDA runtime frees during its own teardown is freed before "
                       "this report and is not listed)\n");
    for (unsigned i = 0; i < s->nleaks && i < s->top; i++) {
        char where[512];
        cf_snap_site_label(s, s->leaks[i].site, where, sizeof where);
        cf_buf_printf(o, "  %-10s %6llu x %-8s at %s\n", B(s->leaks[i].bytes),
                      (unsigned long long)s->leaks[i].count, cf_kind_name[s->leaks[i].kind], where);
    }
}

static void pools(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->npools == 0) return;
    cf_buf_puts(o, "\n-- memory pools --\n");
    for (unsigned i = 0; i < s->npools; i++) {
        const struct cf_pool *p = &s->pools[i];
        const char *name = cf_snap_pool_name(s, p->handle);
        char what[200];
        if (name)
            snprintf(what, sizeof what, "%s, device %d", name, p->device);
        else
            snprintf(what, sizeof what, "pool 0x%llx device %d %s", (unsigned long long)p->handle,
                     p->device, p->is_default ? "default" : "app");
        /* UINT64_MAX (PyTorch's setting) means "never give memory back", not 16 EiB. */
        const char *threshold = p->release_threshold == UINT64_MAX ? "none (keeps all it reserves)"
                                                                   : B(p->release_threshold);
        cf_buf_printf(o,
                      "  %s%s: reserved %s (high %s), used %s (high %s), "
                      "release threshold %s, shrinks %llu, regrows %llu, trims %llu\n",
                      what, p->destroyed ? " (destroyed)" : "", B(p->reserved_cur),
                      B(p->reserved_high), B(p->used_cur), B(p->used_high), threshold,
                      (unsigned long long)p->shrinks, (unsigned long long)p->regrows,
                      (unsigned long long)p->trims);
    }
}

static void graph(const struct cf_snap *s, struct cf_buf *o)
{
    const struct cf_graph_stats *g = &s->rec.graph;
    bool any = g->alloc_nodes || g->free_nodes;
    for (int d = 0; d < CF_MAX_DEVICES && !any; d++)
        any = g->reserved_high[d] || g->used_high[d];
    if (!any) return;
    cf_buf_printf(o, "\n-- graph memory --\n  alloc nodes %llu (%s), free nodes %llu\n",
                  (unsigned long long)g->alloc_nodes, B(g->node_bytes),
                  (unsigned long long)g->free_nodes);
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        if (g->reserved_high[d] || g->used_high[d])
            cf_buf_printf(o, "  device %d: graph pool reserved high %s, used high %s\n", d,
                          B(g->reserved_high[d]), B(g->used_high[d]));
}

static void fragmentation(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_puts(o, "\n-- fragmentation --\n");
    if (isnan(s->internal_waste))
        cf_buf_puts(o, "  internal (rounding) waste: granted sizes unknown\n");
    else
        cf_buf_printf(o,
                      "  internal (rounding) waste = (granted - requested) / requested = %.1f%%\n",
                      pct(s->internal_waste));
    if (s->pool_used_high)
        cf_buf_printf(o, "  pool reserved / used (high water) = %s / %s = %.2f\n",
                      B(s->pool_reserved_high), B(s->pool_used_high),
                      (double)s->pool_reserved_high / (double)s->pool_used_high);
    if (s->total_peak_live && s->total_peak_footprint)
        cf_buf_printf(o, "  headline peak footprint / peak live = %s / %s = %.2f\n",
                      B(s->total_peak_footprint), B(s->total_peak_live),
                      (double)s->total_peak_footprint / (double)s->total_peak_live);
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *v = &s->devs[i];
        cf_buf_printf(o, "  device %d: internal waste ", v->device);
        if (isnan(v->internal_waste))
            cf_buf_puts(o, "-");
        else
            cf_buf_printf(o, "%.1f%%", pct(v->internal_waste));
        if (isnan(v->headline_frag))
            cf_buf_puts(o, ", 1 - live/footprint -\n");
        else
            cf_buf_printf(o, ", 1 - live/footprint %.1f%%\n", pct(v->headline_frag));
    }
}

static void marks(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->rec.nmarks == 0) return;
    cf_buf_printf(o, "\n-- marks (%u) --\n", s->rec.nmarks);
    for (unsigned i = 0; i < s->rec.nmarks; i++)
        cf_buf_printf(o, "  +%s  %s\n", T(secs_since_start(s, s->rec.marks[i].t_ns)),
                      s->rec.marks[i].text);
}

/* cudafrag_region_push/pop: each region's highest figures while it was open. */
static void regions(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->rec.nregions == 0) return;
    cf_buf_printf(o, "\n-- regions (%u) --\n", s->rec.nregions);
    cf_buf_puts(o, "  device  runs  peak live   peak footprint  region\n");
    for (unsigned i = 0; i < s->rec.nregions; i++) {
        const struct cf_region *r = &s->rec.regions[i];
        cf_buf_printf(o, "  %6d  %4" PRIu64 "  %-10s  %-14s  %s\n", r->device, r->runs,
                      B(r->peak_live), B(r->peak_footprint), r->name);
    }
    if (s->rec.regions_dropped)
        cf_buf_printf(o, "  (%u runs of further regions not kept: at most %d)\n",
                      s->rec.regions_dropped, CF_MAX_REGIONS);
}

static void ooms(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->rec.nooms == 0) return;
    cf_buf_printf(o, "\n-- out-of-memory events (%u", s->rec.nooms);
    if (s->rec.ooms_dropped) cf_buf_printf(o, ", %u more not kept", s->rec.ooms_dropped);
    cf_buf_puts(o, ") --\n");
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *e = &s->rec.ooms[i];
        char where[512];
        cf_snap_site_label(s, e->site ? cf_snap_site_index(s, e->site->hash) : -1, where,
                           sizeof where);
        cf_buf_printf(
            o, "  %s of %s on device %d: %s%s\n    at %s\n", cf_api_info[e->api].name,
            B(e->request), e->device,
            cf_fmt_free_of(e->free_bytes, e->total_bytes, (char[96]){0}, 96),
            e->total_bytes && e->free_bytes >= e->request ? " -- OOM with enough free memory" : "",
            where);
    }
}

void cf_render_arena_failure(const struct cf_arena_stats *a, char *out, size_t n)
{
    char r[32], max[32];
    cf_fmt_bytes(a->peak_reserved, r, sizeof r);
    cf_fmt_bytes(CF_SHADOW_MAX_RESERVE, max, sizeof max);
    out[0] = '\0';
    if (a->locked_out)
        snprintf(out, n, "not read: its lock was still held at the report (partial report)");
    else if (!cf_shadow_failed(a))
        return;
    else if (a->broken && a->peak_reserved > CF_SHADOW_MAX_RESERVE)
        snprintf(out, n,
                 "a range of %s (CUDAFRAG_ARENA_RESERVE) is more than it can model (%s at most)", r,
                 max);
    else if (a->broken)
        snprintf(out, n,
                 "its tables for a range of %s (CUDAFRAG_ARENA_RESERVE) could not be allocated", r);
    else
        snprintf(out, n,
                 "%llu of %llu allocations did not fit in its range of %s (CUDAFRAG_ARENA_RESERVE)",
                 (unsigned long long)a->ooms, (unsigned long long)(a->ooms + a->allocs_served), r);
}

/* An arena that could not serve an allocation passed it to CUDA: its figures
 * then describe only part of the run. */
static void arena_served(const struct cf_arena_stats *a, struct cf_buf *o)
{
    if (a->locked_out) {
        char why[256];
        cf_render_arena_failure(a, why, sizeof why);
        cf_buf_printf(o, "  arena: %s\n", why);
        return;
    }
    double frag = a->peak_mapped ? 1.0 - (double)a->peak_live / (double)a->peak_mapped : NAN;
    cf_buf_printf(o, "  arena (%s): peak live %s, peak reserved %s, peak mapped %s\n",
                  a->vmm ? "VMM" : "cuMemAlloc chunks", B(a->peak_live), B(a->peak_reserved),
                  B(a->peak_mapped));
    cf_buf_printf(o,
                  "  fragmentation at peak 1 - live/mapped %.1f%%, external 1 - largest free / "
                  "total free %.1f%%\n",
                  pct(frag), pct(a->ext_frag_at_peak));
    uint64_t served = a->allocs_served + a->frees_served;
    cf_buf_printf(o,
                  "  %llu allocations and %llu frees served with %llu driver calls (%llu "
                  "avoided); time in alloc %s, free %s; arena OOMs %llu\n",
                  (unsigned long long)a->allocs_served, (unsigned long long)a->frees_served,
                  (unsigned long long)a->driver_calls,
                  (unsigned long long)(served > a->driver_calls ? served - a->driver_calls : 0),
                  T((double)a->ns_in_alloc / 1e9), T((double)a->ns_in_free / 1e9),
                  (unsigned long long)a->ooms);
    if (a->ooms)
        cf_buf_printf(o,
                      "  %llu allocations did not fit in the arena and went to CUDA directly; the "
                      "figures above cover only the %llu it served\n",
                      (unsigned long long)a->ooms, (unsigned long long)a->allocs_served);
}

static void arena(const struct cf_snap *s, struct cf_buf *o)
{
    const struct cf_arena_stats *a = &s->arena, *sh = &s->shadow;
    if (!a->active && !sh->shadow) return;
    cf_buf_puts(o, "\n-- arena vs native --\n");
    if (a->active) {
        arena_served(a, o);
    } else if (cf_shadow_failed(sh)) {
        char why[256];
        cf_render_arena_failure(sh, why, sizeof why);
        cf_buf_printf(o, "  shadow arena model failed: %s; no estimate\n", why);
    } else if (sh->peak_mapped == 0) {
        cf_buf_puts(o, "  shadow arena model: no device allocation to replay\n");
    } else {
        uint64_t left_out = cf_snap_shadow_left_out(s);
        cf_buf_printf(o,
                      "  with --arena: ~%s instead of %s (shadow model: peak mapped %s, peak live "
                      "%s, external fragmentation at peak %.1f%%)\n",
                      B(sh->peak_mapped), B(cf_snap_shadow_native(s)), B(sh->peak_mapped),
                      B(sh->peak_live), pct(sh->ext_frag_at_peak));
        if (left_out)
            cf_buf_printf(o,
                          "  the model replays cudaMalloc and cuMemAlloc allocations only: the "
                          "rest of the footprint (%s of %s at its peak: stream-ordered pools, "
                          "VMM, graph memory, arrays) is outside this comparison; `cudafrag "
                          "replay` models all of it from a trace (--trace)\n",
                          B(left_out), B(s->total_peak_footprint));
    }
}

/* The sites a finding covers, with their share, when there is more than one
 * (the title names a single one); CUDAFRAG_TOP of them. */
static void finding_sites(const struct cf_snap *s, const struct cf_finding *f, struct cf_buf *o)
{
    if (f->nsites < 2) return;
    double rest = 0;
    for (unsigned i = 0; i < f->nsites; i++) {
        const struct cf_finding_site *e = &f->sites[i];
        if (i >= s->top) {
            rest += e->share;
            continue;
        }
        char label[512];
        cf_snap_site_label_short(s, e->site, label, sizeof label);
        cf_buf_printf(o, "      %3.0f%%  %s  (%s)\n", pct(e->share), label, e->note);
    }
    if (f->nsites > s->top)
        cf_buf_printf(o, "      %3.0f%%  %u more call site%s (CUDAFRAG_TOP shows %u)\n", pct(rest),
                      f->nsites - s->top, f->nsites - s->top == 1 ? "" : "s", s->top);
}

static void findings(const struct cf_snap *s, struct cf_buf *o)
{
    cf_buf_printf(o, "\n-- findings (%u) --\n", s->nfindings);
    if (s->nfindings == 0) cf_buf_puts(o, "  none\n");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        cf_buf_printf(o, "  [%s] %s: %s\n", f->severity, f->id, f->title);
        finding_sites(s, f, o);
        cf_buf_printf(o, "      -> %s\n", f->advice);
    }
}

void cf_render_text(const struct cf_snap *s, struct cf_buf *o)
{
    header(s, o);
    cf_render_oom_failure(s, o);
    summary(s, o);
    api_table(s, o);
    histograms(s, o);
    sites(s, o);
    owners(s, o);
    leaks(s, o);
    pools(s, o);
    graph(s, o);
    fragmentation(s, o);
    ooms(s, o);
    marks(s, o);
    regions(s, o);
    arena(s, o);
    findings(s, o);
    cf_buf_puts(o, "==== end of cudafrag report ====\n");
}
