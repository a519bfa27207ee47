#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "report/cuda_errors.h"
#include "report/outpath.h"
#include "report/render.h"

#include "cudafrag_build.h"

/* Small emitters: every key is written by exactly one of these, which keeps the
 * comma handling in one place ("first" tracks the open object or array). */
struct json {
    struct cf_buf *b;
    bool first;
};

static void sep(struct json *j)
{
    if (!j->first) cf_buf_put(j->b, ",", 1);
    j->first = false;
}

static void key(struct json *j, const char *k)
{
    sep(j);
    cf_buf_json_str(j->b, k);
    cf_buf_put(j->b, ":", 1);
}

static void k_u64(struct json *j, const char *k, uint64_t v)
{
    key(j, k);
    cf_buf_printf(j->b, "%" PRIu64, v);
}

/* A count that a partial report or a failed model does not know: null. */
static void k_known(struct json *j, const char *k, uint64_t v, bool known)
{
    key(j, k);
    if (known)
        cf_buf_printf(j->b, "%" PRIu64, v);
    else
        cf_buf_puts(j->b, "null");
}

static void k_int(struct json *j, const char *k, long long v)
{
    key(j, k);
    cf_buf_printf(j->b, "%lld", v);
}

static void k_num(struct json *j, const char *k, double v)
{
    key(j, k);
    cf_buf_json_num(j->b, v);
}

static void k_str(struct json *j, const char *k, const char *v)
{
    key(j, k);
    cf_buf_json_str(j->b, v);
}

static void k_bool(struct json *j, const char *k, bool v)
{
    key(j, k);
    cf_buf_puts(j->b, v ? "true" : "false");
}

static void open_obj(struct json *j, const char *k)
{
    if (k)
        key(j, k);
    else
        sep(j);
    cf_buf_put(j->b, "{", 1);
    j->first = true;
}

static void open_arr(struct json *j, const char *k)
{
    key(j, k);
    cf_buf_put(j->b, "[", 1);
    j->first = true;
}

static void close_obj(struct json *j)
{
    cf_buf_put(j->b, "}", 1);
    j->first = false;
}

static void close_arr(struct json *j)
{
    cf_buf_put(j->b, "]", 1);
    j->first = false;
}

static void frame(struct json *j, const struct cf_snap *s, uintptr_t addr)
{
    const struct cf_sym *sym = cf_symtab_find(&s->syms, addr);
    bool native = !cf_frame_is_python(addr), named = sym && sym->module[0];
    char hex[32];
    open_obj(j, NULL);
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)addr);
    k_str(j, "address", native ? hex : NULL);
    k_str(j, "function", sym && sym->function[0] ? sym->function : NULL);
    k_str(j, "module", named ? sym->module : NULL);
    snprintf(hex, sizeof hex, "0x%llx", named ? (unsigned long long)sym->offset : 0ull);
    k_str(j, "offset", named ? hex : NULL);
    k_str(j, "file", sym && sym->line ? sym->file : NULL);
    if (sym && sym->line)
        k_u64(j, "line", sym->line);
    else
        k_str(j, "line", NULL);
    k_bool(j, "python", !native);
    k_bool(j, "folded", sym && sym->folded);
    close_obj(j);
}

/* "recorded" (the site has Python frames), why it has none, or null (the
 * process had no Python interpreter). */
static const char *python_frames(const struct cf_snap *s, int idx)
{
    const struct cf_site *st = &s->sites[idx];
    uint32_t marker = cf_snap_site_python(s, idx);
    if (marker) return marker == CF_PY_GIL_RELEASED ? "gil_released" : "none";
    for (unsigned f = 0; f < st->nframes; f++)
        if (cf_frame_is_python(st->frames[f])) return "recorded";
    return NULL;
}

static void site_obj(struct json *j, const struct cf_snap *s, int idx, const char *k)
{
    if (idx < 0 || (unsigned)idx >= s->nsites) {
        key(j, k);
        cf_buf_puts(j->b, "null");
        return;
    }
    const struct cf_site *st = &s->sites[idx];
    char label[512], hex[24];
    open_obj(j, k);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)st->hash);
    k_str(j, "id", hex);
    k_str(j, "api", cf_api_info[st->api].name);
    cf_snap_site_label(s, idx, label, sizeof label);
    k_str(j, "label", label);
    int shown = cf_snap_site_shown(s, idx);
    if (shown >= 0)
        k_int(j, "shown_frame", shown);
    else
        k_str(j, "shown_frame", NULL);
    k_str(j, "python_frames", python_frames(s, idx));
    /* The whole stack, innermost first; the markers are not frames. */
    open_arr(j, "frames");
    for (unsigned f = 0; f < st->nframes; f++)
        if (!cf_frame_is_marker(st->frames[f])) frame(j, s, st->frames[f]);
    close_arr(j);
    k_str(j, "owner", cf_owner_info[cf_snap_site_owner(s, idx)].key);
    close_obj(j);
}

static void site_stats(struct json *j, const struct cf_snap *s, unsigned idx)
{
    const struct cf_site *st = &s->sites[idx];
    double span = cf_site_span_s(st);
    open_obj(j, NULL);
    site_obj(j, s, (int)idx, "site");
    k_u64(j, "calls", st->calls);
    k_u64(j, "bytes", st->bytes);
    k_u64(j, "failures", st->failures);
    k_u64(j, "frees", st->frees);
    k_u64(j, "live_bytes", st->live_bytes);
    k_u64(j, "live_count", st->live_count);
    k_u64(j, "peak_live_bytes", st->peak_live_bytes);
    k_u64(j, "min_size_bytes", st->min_size);
    k_u64(j, "max_size_bytes", st->max_size);
    k_u64(j, "distinct_sizes", st->distinct_sizes);
    k_bool(j, "distinct_sizes_capped", st->distinct_sizes > CF_SITE_SIZES);
    /* A rate needs a second of activity: a shorter burst has only its span. */
    k_num(j, "rate_per_s", span >= 1.0 ? (double)st->calls / span : NAN);
    k_num(j, "active_s", span);
    k_num(j, "mean_lifetime_s", cf_site_mean_lifetime_s(st));
    close_obj(j);
}

/* CUDAFRAG_BLOCKS as a list: null when the run was not `cudafrag run --blocks`. */
static void block_capture(struct json *j, const char *blocks)
{
    if (blocks == NULL || blocks[0] == '\0') {
        k_str(j, "block_capture", NULL);
        return;
    }
    open_arr(j, "block_capture");
    char item[512];
    for (const char *p = cf_opt_item(blocks, item, sizeof item); p;
         p = cf_opt_item(p, item, sizeof item)) {
        sep(j);
        cf_buf_json_str(j->b, item);
    }
    close_arr(j);
}

static void header(struct json *j, const struct cf_snap *s)
{
    k_int(j, "schema_version", 3);
    k_str(j, "cudafrag_version", CUDAFRAG_VERSION);
    k_str(j, "kind", s->interim ? "interim" : "final");
    k_str(j, "reason", s->reason ? s->reason : "exit");
    char what[256];
    cf_snap_describe_missing(s, what, sizeof what);
    k_bool(j, "partial", s->missing != 0);
    k_str(j, "partial_reason", s->missing ? what : NULL);
    open_obj(j, "program");
    k_str(j, "name", s->program);
    /* null: unknown (an imported run's) */
    if (s->pid > 0)
        k_int(j, "pid", s->pid);
    else
        k_str(j, "pid", NULL);
    k_str(j, "rank", s->rank[0] ? s->rank : NULL);
    k_str(j, "host", s->host[0] ? s->host : NULL);
    k_bool(j, "from_trace", s->replayed);
    k_str(j, "imported_from", cf_snap_import_kind(s));
    k_num(j, "duration_s", s->duration_s);
    if (s->fork.parent_pid)
        k_int(j, "forked_from_pid", s->fork.parent_pid);
    else
        k_str(j, "forked_from_pid", NULL);
    char why[256];
    k_str(j, "not_traced", cf_snap_untraced_note(s, why, sizeof why));
    close_obj(j);
    block_capture(j, s->blocks);
}

static void devices(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "devices");
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *v = &s->devs[i];
        const struct cf_device_stats *ds = &s->rec.dev[v->device];
        open_obj(j, NULL);
        k_int(j, "device", v->device);
        k_u64(j, "total_bytes", ds->total_bytes);
        k_u64(j, "live_bytes", ds->live_bytes);
        k_u64(j, "live_count", ds->live_count);
        k_u64(j, "allocs", ds->allocs);
        k_u64(j, "frees", ds->frees);
        k_u64(j, "peak_live_bytes", v->peak_live);
        k_num(j, "peak_live_at_s",
              ds->peak_t_ns > s->rec.start_ns ? (double)(ds->peak_t_ns - s->rec.start_ns) / 1e9
                                              : 0);
        k_u64(j, "peak_footprint_bytes", v->peak_footprint);
        k_num(j, "peak_footprint_at_s",
              ds->peak_footprint_t_ns > s->rec.start_ns
                  ? (double)(ds->peak_footprint_t_ns - s->rec.start_ns) / 1e9
                  : 0);
        k_u64(j, "live_at_peak_footprint_bytes", ds->live_at_peak_footprint);
        k_u64(j, "footprint_at_peak_live_bytes", ds->footprint_at_peak_live);
        k_num(j, "fragmentation_at_peak_footprint", v->frag_at_peak_footprint);
        k_num(j, "fragmentation_at_peak_live", v->frag_at_peak_live);
        k_bool(j, "footprint_exact", !ds->footprint_inexact);
        open_obj(j, "footprint_now");
        k_u64(j, "total_bytes", ds->footprint);
        k_u64(j, "raw_pages_bytes", ds->raw_bytes);
        k_u64(j, "pool_reserved_bytes", ds->pool_reserved);
        k_u64(j, "graph_reserved_bytes", ds->graph_reserved);
        k_u64(j, "arena_mapped_bytes", ds->arena_mapped);
        k_u64(j, "vmm_bytes", ds->vmm_bytes);
        k_u64(j, "array_bytes", ds->array_bytes);
        close_obj(j);
        open_obj(j, "meminfo_cross_check");
        k_u64(j, "samples", ds->footprint_samples);
        k_u64(j, "baseline_used_bytes", ds->baseline_used);
        k_u64(j, "measured_peak_bytes", ds->measured_peak);
        k_u64(j, "max_deviation_bytes", ds->max_deviation);
        k_u64(j, "max_measured_above_bytes", ds->max_over);
        k_u64(j, "max_measured_below_bytes", ds->max_under);
        close_obj(j);
        k_u64(j, "peak_requested_bytes", ds->peak_requested);
        k_u64(j, "peak_granted_bytes", ds->peak_granted);
        k_num(j, "internal_waste", v->internal_waste);
        k_num(j, "fragmentation", v->headline_frag);
        close_obj(j);
    }
    close_arr(j);
}

static void summary(struct json *j, const struct cf_snap *s)
{
    open_obj(j, "summary");
    k_u64(j, "allocs", s->rec.total_allocs);
    k_u64(j, "frees", s->rec.total_frees);
    k_u64(j, "unknown_frees", s->rec.unknown_frees);
    k_u64(j, "alloc_bytes", s->total_alloc_bytes);
    k_u64(j, "peak_live_bytes", s->total_peak_live);
    k_u64(j, "peak_footprint_bytes", s->total_peak_footprint);
    k_num(j, "fragmentation", s->headline_frag);
    k_known(j, "live_at_report_bytes", s->leaked_bytes, !(s->missing & CF_SNAP_NO_LIVE));
    k_known(j, "live_at_report_count", s->leaked_count, !(s->missing & CF_SNAP_NO_LIVE));
    k_u64(j, "inherited_live_bytes", s->fork.inherited_bytes);
    k_u64(j, "inherited_live_count", s->fork.inherited_count);
    k_u64(j, "distinct_sizes", s->rec.distinct_sizes);
    k_bool(j, "distinct_sizes_capped", s->rec.distinct_sizes_capped);
    k_u64(j, "host_live_bytes", s->rec.host.live_bytes);
    k_u64(j, "host_peak_live_bytes", s->rec.host.peak_live_bytes);
    k_u64(j, "managed_live_bytes", s->rec.managed.live_bytes);
    k_u64(j, "managed_peak_live_bytes", s->rec.managed.peak_live_bytes);
    k_bool(j, "stacks_available", !s->rec.stacks_unavailable);
    k_u64(j, "allocs_without_stack", s->rec.allocs_without_stack);
    k_u64(j, "replaced_live", s->rec.replaced_live);
    k_u64(j, "capture_skips", s->rec.capture_skips);
    k_bool(j, "driver_usable", !s->driver_unusable);
    close_obj(j);
}

static void apis(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "apis");
    for (int a = 0; a < CF_API_COUNT; a++) {
        const struct cf_api_stats *st = &s->rec.api[a];
        if (st->calls == 0) continue;
        open_obj(j, NULL);
        k_str(j, "name", cf_api_info[a].name);
        k_str(j, "kind", cf_kind_name[cf_api_info[a].kind]);
        k_u64(j, "calls", st->calls);
        k_u64(j, "bytes", st->bytes);
        k_u64(j, "failures", st->failures);
        open_arr(j, "errors");
        for (int k = 0; k < CF_API_ERRORS && st->errors[k].code; k++) {
            char num[32];
            int code = (int)(st->errors[k].code - 1);
            open_obj(j, NULL);
            k_int(j, "code", code);
            k_str(j, "name", cf_cuda_error_name((enum cf_api)a, code, num, sizeof num));
            k_u64(j, "count", st->errors[k].count);
            close_obj(j);
        }
        close_arr(j);
        k_num(j, "time_s", cf_api_time_s(st));
        k_u64(j, "timed_calls", st->timed);
        close_obj(j);
    }
    close_arr(j);
}

static void hist(struct json *j, const char *k, const struct cf_hist *h, bool with_bytes)
{
    open_arr(j, k);
    for (int b = 0; b < CF_HIST_BINS; b++) {
        if (h->count[b] == 0) continue;
        open_obj(j, NULL);
        k_int(j, "log2", b);
        k_u64(j, "count", h->count[b]);
        if (with_bytes) k_u64(j, "bytes", h->bytes[b]);
        close_obj(j);
    }
    close_arr(j);
}

static void sites(struct json *j, const struct cf_snap *s)
{
    k_known(j, "site_count", s->nsites, !(s->missing & CF_SNAP_NO_SITES));
    open_arr(j, "top_sites_by_peak");
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_stats(j, s, s->by_peak[i]);
    close_arr(j);
    open_arr(j, "top_sites_by_calls");
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_stats(j, s, s->by_calls[i]);
    close_arr(j);
}

/* Every owner, with zeros when it allocated nothing: null while the call sites
 * are not known (a partial report). */
static void owners(struct json *j, const struct cf_snap *s)
{
    if (s->missing & CF_SNAP_NO_SITES) {
        k_str(j, "owners", NULL);
        return;
    }
    open_obj(j, "owners");
    for (int o = 0; o < CF_OWNER_COUNT; o++) {
        const struct cf_owner_view *v = &s->owners[o];
        open_obj(j, cf_owner_info[o].key);
        k_u64(j, "peak_live_bytes", v->peak_live);
        k_num(j, "share_of_peak", v->share);
        k_u64(j, "live_bytes", v->live);
        k_u64(j, "allocations", v->allocations);
        k_u64(j, "bytes", v->bytes);
        k_u64(j, "sites", v->sites);
        close_obj(j);
    }
    close_obj(j);
}

static void leaks(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "live_at_report");
    for (unsigned i = 0; i < s->nleaks && i < s->top; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        open_obj(j, NULL);
        site_obj(j, s, l->site, "site");
        k_str(j, "kind", cf_kind_name[l->kind]);
        k_u64(j, "bytes", l->bytes);
        k_u64(j, "count", l->count);
        close_obj(j);
    }
    close_arr(j);
}

static void pools(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "pools");
    for (unsigned i = 0; i < s->npools; i++) {
        const struct cf_pool *p = &s->pools[i];
        char hex[24];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)p->handle);
        open_obj(j, NULL);
        k_str(j, "handle", hex);
        k_str(j, "name", cf_snap_pool_name(s, p->handle));
        k_int(j, "device", p->device);
        k_bool(j, "default", p->is_default);
        k_bool(j, "created_by_app", p->created_by_app);
        k_bool(j, "destroyed", p->destroyed);
        k_u64(j, "reserved_bytes", p->reserved_cur);
        k_u64(j, "reserved_high_bytes", p->reserved_high);
        k_u64(j, "used_bytes", p->used_cur);
        k_u64(j, "used_high_bytes", p->used_high);
        k_u64(j, "release_threshold_bytes", p->release_threshold);
        k_u64(j, "allocs", p->allocs);
        k_u64(j, "frees", p->frees);
        k_u64(j, "peak_live_bytes", p->peak_live_bytes);
        k_u64(j, "shrinks", p->shrinks);
        k_u64(j, "regrows", p->regrows);
        k_u64(j, "trims", p->trims);
        close_obj(j);
    }
    close_arr(j);
}

static void graph(struct json *j, const struct cf_snap *s)
{
    const struct cf_graph_stats *g = &s->rec.graph;
    open_obj(j, "graph");
    k_u64(j, "alloc_nodes", g->alloc_nodes);
    k_u64(j, "free_nodes", g->free_nodes);
    k_u64(j, "node_bytes", g->node_bytes);
    open_arr(j, "devices");
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        if (!g->reserved_high[d] && !g->used_high[d]) continue;
        open_obj(j, NULL);
        k_int(j, "device", d);
        k_u64(j, "reserved_high_bytes", g->reserved_high[d]);
        k_u64(j, "used_high_bytes", g->used_high[d]);
        close_obj(j);
    }
    close_arr(j);
    close_obj(j);
}

static void fragmentation(struct json *j, const struct cf_snap *s)
{
    open_obj(j, "fragmentation");
    k_num(j, "internal_waste", s->internal_waste);
    k_num(j, "pool_reserved_over_used",
          s->pool_used_high ? (double)s->pool_reserved_high / (double)s->pool_used_high : NAN);
    k_num(j, "peak_footprint_over_peak_live",
          s->total_peak_live && s->total_peak_footprint
              ? (double)s->total_peak_footprint / (double)s->total_peak_live
              : NAN);
    k_num(j, "headline", s->headline_frag);
    close_obj(j);
}

static void ooms(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "ooms");
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *e = &s->rec.ooms[i];
        open_obj(j, NULL);
        k_str(j, "api", cf_api_info[e->api].name);
        k_int(j, "device", e->device);
        k_u64(j, "request_bytes", e->request);
        k_u64(j, "free_bytes", e->free_bytes);
        k_u64(j, "total_bytes", e->total_bytes);
        k_bool(j, "enough_free", e->total_bytes && e->free_bytes >= e->request);
        k_num(j, "at_s", e->t_ns > s->rec.start_ns ? (double)(e->t_ns - s->rec.start_ns) / 1e9 : 0);
        site_obj(j, s, e->site ? cf_snap_site_index(s, e->site->hash) : -1, "site");
        close_obj(j);
    }
    close_arr(j);
    k_u64(j, "ooms_dropped", s->rec.ooms_dropped);
}

static void marks(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "marks");
    for (unsigned i = 0; i < s->rec.nmarks; i++) {
        const struct cf_user_mark *m = &s->rec.marks[i];
        open_obj(j, NULL);
        k_str(j, "label", m->text);
        k_num(j, "at_s", m->t_ns > s->rec.start_ns ? (double)(m->t_ns - s->rec.start_ns) / 1e9 : 0);
        close_obj(j);
    }
    close_arr(j);
    k_u64(j, "marks_dropped", s->rec.marks_dropped);
}

static void regions(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "regions");
    for (unsigned i = 0; i < s->rec.nregions; i++) {
        const struct cf_region *r = &s->rec.regions[i];
        open_obj(j, NULL);
        k_str(j, "name", r->name);
        k_u64(j, "device", (uint64_t)r->device);
        k_u64(j, "runs", r->runs);
        k_u64(j, "peak_live_bytes", r->peak_live);
        k_u64(j, "peak_footprint_bytes", r->peak_footprint);
        close_obj(j);
    }
    close_arr(j);
    k_u64(j, "regions_dropped", s->rec.regions_dropped);
}

/* A model that failed gives no figure: its byte counts and ratios are null. */
static void arena_obj(struct json *j, const char *k, const struct cf_arena_stats *a)
{
    char why[256];
    cf_render_arena_failure(a, why, sizeof why);
    bool ok = why[0] == '\0', read = !a->locked_out;
    open_obj(j, k);
    k_bool(j, "active", a->active);
    k_bool(j, "vmm", a->vmm);
    k_bool(j, "failed", !ok);
    k_str(j, "failure", ok ? NULL : why);
    k_known(j, "peak_live_bytes", a->peak_live, ok);
    k_known(j, "peak_reserved_bytes", a->peak_reserved, ok);
    k_known(j, "peak_mapped_bytes", a->peak_mapped, ok);
    k_known(j, "live_bytes", a->live_now, ok);
    k_known(j, "reserved_bytes", a->reserved_now, ok);
    k_known(j, "mapped_bytes", a->mapped_now, ok);
    k_known(j, "granules_mapped", a->granules_mapped, ok);
    k_known(j, "granules_unmapped", a->granules_unmapped, ok);
    k_known(j, "driver_calls", a->driver_calls, ok);
    k_known(j, "allocs_served", a->allocs_served, read);
    k_known(j, "frees_served", a->frees_served, read);
    k_num(j, "alloc_time_s", read ? (double)a->ns_in_alloc / 1e9 : NAN);
    k_num(j, "free_time_s", read ? (double)a->ns_in_free / 1e9 : NAN);
    k_num(j, "fragmentation_at_peak",
          ok && a->peak_mapped ? 1.0 - (double)a->peak_live / (double)a->peak_mapped : NAN);
    k_num(j, "external_fragmentation_at_peak", ok ? a->ext_frag_at_peak : NAN);
    k_known(j, "ooms", a->ooms, read);
    close_obj(j);
}

static void finding_sites(struct json *j, const struct cf_snap *s, const struct cf_finding *f)
{
    k_str(j, "measure", f->measure[0] ? f->measure : NULL);
    k_u64(j, "site_count", f->nsites);
    open_arr(j, "sites");
    for (unsigned i = 0; i < f->nsites && i < s->top; i++) {
        const struct cf_finding_site *e = &f->sites[i];
        open_obj(j, NULL);
        site_obj(j, s, e->site, "site");
        k_u64(j, "stacks", e->stacks);
        k_num(j, "value", e->value);
        k_num(j, "share", e->share);
        k_str(j, "note", e->note);
        close_obj(j);
    }
    close_arr(j);
}

static void findings(struct json *j, const struct cf_snap *s)
{
    open_arr(j, "findings");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        open_obj(j, NULL);
        k_str(j, "id", f->id);
        k_str(j, "severity", f->severity);
        site_obj(j, s, f->site, "site");
        k_str(j, "title", f->title);
        finding_sites(j, s, f);
        open_obj(j, "numbers");
        for (unsigned n = 0; n < f->nnum; n++)
            k_num(j, f->num[n].name, f->num[n].value);
        close_obj(j);
        k_str(j, "advice", f->advice);
        close_obj(j);
    }
    close_arr(j);
    k_u64(j, "findings_dropped", s->findings_dropped);
}

void cf_render_json(const struct cf_snap *s, struct cf_buf *out)
{
    struct json j = {out, true};
    cf_buf_put(out, "{", 1);
    header(&j, s);
    devices(&j, s);
    summary(&j, s);
    apis(&j, s);
    hist(&j, "size_histogram", &s->rec.sizes, true);
    hist(&j, "lifetime_histogram_ns", &s->rec.lifetimes, false);
    sites(&j, s);
    owners(&j, s);
    leaks(&j, s);
    pools(&j, s);
    graph(&j, s);
    fragmentation(&j, s);
    ooms(&j, s);
    marks(&j, s);
    regions(&j, s);
    open_obj(&j, "arena_vs_native");
    arena_obj(&j, "arena", &s->arena);
    arena_obj(&j, "shadow", &s->shadow);
    /* What the shadow model is held against, and what it leaves out. */
    k_u64(&j, "native_modelled_peak_bytes", cf_snap_shadow_native(s));
    k_u64(&j, "native_unmodelled_at_peak_bytes", cf_snap_shadow_left_out(s));
    close_obj(&j);
    findings(&j, s);
    cf_buf_puts(out, "}\n");
}
