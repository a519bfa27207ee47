#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "report/cuda_errors.h"
#include "report/json_write.h"
#include "report/oom.h"
#include "report/outpath.h"
#include "report/render.h"

#include "cudafrag_build.h"

static void frame(struct cf_jw *j, const struct cf_snap *s, uintptr_t addr)
{
    const struct cf_sym *sym = cf_symtab_find(&s->syms, addr);
    bool native = !cf_frame_is_python(addr), named = sym && sym->module[0];
    char hex[32];
    cf_jw_obj(j, NULL);
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)addr);
    cf_jw_str(j, "address", native ? hex : NULL);
    cf_jw_str(j, "function", sym && sym->function[0] ? sym->function : NULL);
    cf_jw_str(j, "module", named ? sym->module : NULL);
    snprintf(hex, sizeof hex, "0x%llx", named ? (unsigned long long)sym->offset : 0ull);
    cf_jw_str(j, "offset", named ? hex : NULL);
    cf_jw_str(j, "file", sym && sym->line ? sym->file : NULL);
    if (sym && sym->line)
        cf_jw_u64(j, "line", sym->line);
    else
        cf_jw_str(j, "line", NULL);
    cf_jw_bool(j, "python", !native);
    cf_jw_bool(j, "folded", sym && sym->folded);
    cf_jw_obj_end(j);
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

static void site_obj(struct cf_jw *j, const struct cf_snap *s, int idx, const char *k)
{
    if (idx < 0 || (unsigned)idx >= s->nsites) {
        cf_jw_null(j, k);
        return;
    }
    const struct cf_site *st = &s->sites[idx];
    char label[512], hex[24];
    cf_jw_obj(j, k);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)st->hash);
    cf_jw_str(j, "id", hex);
    cf_jw_str(j, "api", cf_api_info[st->api].name);
    cf_snap_site_label(s, idx, label, sizeof label);
    cf_jw_str(j, "label", label);
    int shown = cf_snap_site_shown(s, idx);
    if (shown >= 0)
        cf_jw_i64(j, "shown_frame", shown);
    else
        cf_jw_str(j, "shown_frame", NULL);
    cf_jw_str(j, "python_frames", python_frames(s, idx));
    /* The whole stack, innermost first; the markers are not frames. */
    cf_jw_arr(j, "frames");
    for (unsigned f = 0; f < st->nframes; f++)
        if (!cf_frame_is_marker(st->frames[f])) frame(j, s, st->frames[f]);
    cf_jw_arr_end(j);
    cf_jw_str(j, "owner", cf_owner_info[cf_snap_site_owner(s, idx)].key);
    cf_jw_obj_end(j);
}

static void site_stats(struct cf_jw *j, const struct cf_snap *s, unsigned idx)
{
    const struct cf_site *st = &s->sites[idx];
    double span = cf_site_span_s(st);
    cf_jw_obj(j, NULL);
    site_obj(j, s, (int)idx, "site");
    cf_jw_u64(j, "calls", st->calls);
    cf_jw_u64(j, "bytes", st->bytes);
    cf_jw_u64(j, "failures", st->failures);
    cf_jw_u64(j, "frees", st->frees);
    cf_jw_u64(j, "live_bytes", st->live_bytes);
    cf_jw_u64(j, "live_count", st->live_count);
    cf_jw_u64(j, "peak_live_bytes", st->peak_live_bytes);
    cf_jw_u64(j, "min_size_bytes", st->min_size);
    cf_jw_u64(j, "max_size_bytes", st->max_size);
    cf_jw_u64(j, "distinct_sizes", st->distinct_sizes);
    cf_jw_bool(j, "distinct_sizes_capped", st->distinct_sizes > CF_SITE_SIZES);
    /* A rate needs a second of activity: a shorter burst has only its span. */
    cf_jw_num(j, "rate_per_s", span >= 1.0 ? (double)st->calls / span : NAN);
    cf_jw_num(j, "active_s", span);
    cf_jw_num(j, "mean_lifetime_s", cf_site_mean_lifetime_s(st));
    cf_jw_obj_end(j);
}

/* CUDAFRAG_BLOCKS as a list: null when the run was not `cudafrag run --blocks`. */
static void block_capture(struct cf_jw *j, const char *blocks)
{
    if (blocks == NULL || blocks[0] == '\0') {
        cf_jw_str(j, "block_capture", NULL);
        return;
    }
    cf_jw_arr(j, "block_capture");
    char item[512];
    for (const char *p = cf_opt_item(blocks, item, sizeof item); p;
         p = cf_opt_item(p, item, sizeof item)) {
        cf_jw_str(j, NULL, item);
    }
    cf_jw_arr_end(j);
}

static void header(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_i64(j, "schema_version", 3);
    cf_jw_str(j, "cudafrag_version", CUDAFRAG_VERSION);
    cf_jw_str(j, "kind", s->interim ? "interim" : "final");
    cf_jw_str(j, "reason", s->reason ? s->reason : "exit");
    char what[256];
    cf_snap_describe_missing(s, what, sizeof what);
    cf_jw_bool(j, "partial", s->missing != 0);
    cf_jw_str(j, "partial_reason", s->missing ? what : NULL);
    cf_jw_obj(j, "program");
    cf_jw_str(j, "name", s->program);
    /* null: unknown (an imported run's) */
    if (s->pid > 0)
        cf_jw_i64(j, "pid", s->pid);
    else
        cf_jw_str(j, "pid", NULL);
    cf_jw_str(j, "rank", s->rank[0] ? s->rank : NULL);
    cf_jw_str(j, "host", s->host[0] ? s->host : NULL);
    cf_jw_bool(j, "from_trace", s->replayed);
    cf_jw_str(j, "imported_from", cf_snap_import_kind(s));
    cf_jw_num(j, "duration_s", s->duration_s);
    if (s->fork.parent_pid)
        cf_jw_i64(j, "forked_from_pid", s->fork.parent_pid);
    else
        cf_jw_str(j, "forked_from_pid", NULL);
    char why[256];
    cf_jw_str(j, "not_traced", cf_snap_untraced_note(s, why, sizeof why));
    cf_jw_obj_end(j);
    block_capture(j, s->blocks);
}

static void devices(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "devices");
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *v = &s->devs[i];
        const struct cf_device_stats *ds = &s->rec.dev[v->device];
        cf_jw_obj(j, NULL);
        cf_jw_i64(j, "device", v->device);
        cf_jw_u64(j, "total_bytes", ds->total_bytes);
        cf_jw_u64(j, "live_bytes", ds->live_bytes);
        cf_jw_u64(j, "live_count", ds->live_count);
        cf_jw_u64(j, "allocs", ds->allocs);
        cf_jw_u64(j, "frees", ds->frees);
        cf_jw_u64(j, "peak_live_bytes", v->peak_live);
        cf_jw_num(j, "peak_live_at_s",
                  ds->peak_t_ns > s->rec.start_ns ? (double)(ds->peak_t_ns - s->rec.start_ns) / 1e9
                                                  : 0);
        cf_jw_u64(j, "peak_footprint_bytes", v->peak_footprint);
        cf_jw_num(j, "peak_footprint_at_s",
                  ds->peak_footprint_t_ns > s->rec.start_ns
                      ? (double)(ds->peak_footprint_t_ns - s->rec.start_ns) / 1e9
                      : 0);
        cf_jw_u64(j, "live_at_peak_footprint_bytes", ds->live_at_peak_footprint);
        cf_jw_u64(j, "footprint_at_peak_live_bytes", ds->footprint_at_peak_live);
        cf_jw_num(j, "fragmentation_at_peak_footprint", v->frag_at_peak_footprint);
        cf_jw_num(j, "fragmentation_at_peak_live", v->frag_at_peak_live);
        cf_jw_bool(j, "footprint_exact", !ds->footprint_inexact);
        cf_jw_obj(j, "footprint_now");
        cf_jw_u64(j, "total_bytes", ds->footprint);
        cf_jw_u64(j, "raw_pages_bytes", ds->raw_bytes);
        cf_jw_u64(j, "pool_reserved_bytes", ds->pool_reserved);
        cf_jw_u64(j, "graph_reserved_bytes", ds->graph_reserved);
        cf_jw_u64(j, "arena_mapped_bytes", ds->arena_mapped);
        cf_jw_u64(j, "vmm_bytes", ds->vmm_bytes);
        cf_jw_u64(j, "array_bytes", ds->array_bytes);
        cf_jw_obj_end(j);
        cf_jw_obj(j, "meminfo_cross_check");
        cf_jw_u64(j, "samples", ds->footprint_samples);
        cf_jw_u64(j, "baseline_used_bytes", ds->baseline_used);
        cf_jw_u64(j, "measured_peak_bytes", ds->measured_peak);
        cf_jw_u64(j, "max_deviation_bytes", ds->max_deviation);
        cf_jw_u64(j, "max_measured_above_bytes", ds->max_over);
        cf_jw_u64(j, "max_measured_below_bytes", ds->max_under);
        cf_jw_obj_end(j);
        cf_jw_u64(j, "peak_requested_bytes", ds->peak_requested);
        cf_jw_u64(j, "peak_granted_bytes", ds->peak_granted);
        cf_jw_num(j, "internal_waste", v->internal_waste);
        cf_jw_num(j, "fragmentation", v->headline_frag);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void summary(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_obj(j, "summary");
    cf_jw_u64(j, "allocs", s->rec.total_allocs);
    cf_jw_u64(j, "frees", s->rec.total_frees);
    cf_jw_u64(j, "unknown_frees", s->rec.unknown_frees);
    cf_jw_u64(j, "alloc_bytes", s->total_alloc_bytes);
    cf_jw_u64(j, "peak_live_bytes", s->total_peak_live);
    cf_jw_u64(j, "peak_footprint_bytes", s->total_peak_footprint);
    cf_jw_num(j, "fragmentation", s->headline_frag);
    cf_jw_known(j, "live_at_report_bytes", s->leaked_bytes, !(s->missing & CF_SNAP_NO_LIVE));
    cf_jw_known(j, "live_at_report_count", s->leaked_count, !(s->missing & CF_SNAP_NO_LIVE));
    cf_jw_u64(j, "inherited_live_bytes", s->fork.inherited_bytes);
    cf_jw_u64(j, "inherited_live_count", s->fork.inherited_count);
    cf_jw_u64(j, "distinct_sizes", s->rec.distinct_sizes);
    cf_jw_bool(j, "distinct_sizes_capped", s->rec.distinct_sizes_capped);
    cf_jw_u64(j, "host_live_bytes", s->rec.host.live_bytes);
    cf_jw_u64(j, "host_peak_live_bytes", s->rec.host.peak_live_bytes);
    cf_jw_u64(j, "managed_live_bytes", s->rec.managed.live_bytes);
    cf_jw_u64(j, "managed_peak_live_bytes", s->rec.managed.peak_live_bytes);
    cf_jw_bool(j, "stacks_available", !s->rec.stacks_unavailable);
    cf_jw_u64(j, "allocs_without_stack", s->rec.allocs_without_stack);
    cf_jw_u64(j, "replaced_live", s->rec.replaced_live);
    cf_jw_u64(j, "capture_skips", s->rec.capture_skips);
    cf_jw_bool(j, "driver_usable", !s->driver_unusable);
    cf_jw_obj_end(j);
}

static void apis(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "apis");
    for (int a = 0; a < CF_API_COUNT; a++) {
        const struct cf_api_stats *st = &s->rec.api[a];
        if (st->calls == 0) continue;
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "name", cf_api_info[a].name);
        cf_jw_str(j, "kind", cf_kind_name[cf_api_info[a].kind]);
        cf_jw_u64(j, "calls", st->calls);
        cf_jw_u64(j, "bytes", st->bytes);
        cf_jw_u64(j, "failures", st->failures);
        cf_jw_arr(j, "errors");
        for (int k = 0; k < CF_API_ERRORS && st->errors[k].code; k++) {
            char num[32];
            int code = (int)(st->errors[k].code - 1);
            cf_jw_obj(j, NULL);
            cf_jw_i64(j, "code", code);
            cf_jw_str(j, "name", cf_cuda_error_name((enum cf_api)a, code, num, sizeof num));
            cf_jw_u64(j, "count", st->errors[k].count);
            cf_jw_obj_end(j);
        }
        cf_jw_arr_end(j);
        cf_jw_num(j, "time_s", cf_api_time_s(st));
        cf_jw_u64(j, "timed_calls", st->timed);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void hist(struct cf_jw *j, const char *k, const struct cf_hist *h, bool with_bytes)
{
    cf_jw_arr(j, k);
    for (int b = 0; b < CF_HIST_BINS; b++) {
        if (h->count[b] == 0) continue;
        cf_jw_obj(j, NULL);
        cf_jw_i64(j, "log2", b);
        cf_jw_u64(j, "count", h->count[b]);
        if (with_bytes) cf_jw_u64(j, "bytes", h->bytes[b]);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void sites(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_known(j, "site_count", s->nsites, !(s->missing & CF_SNAP_NO_SITES));
    cf_jw_arr(j, "top_sites_by_peak");
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_stats(j, s, s->by_peak[i]);
    cf_jw_arr_end(j);
    cf_jw_arr(j, "top_sites_by_calls");
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_stats(j, s, s->by_calls[i]);
    cf_jw_arr_end(j);
}

/* Every owner, with zeros when it allocated nothing: null while the call sites
 * are not known (a partial report). */
static void owners(struct cf_jw *j, const struct cf_snap *s)
{
    if (s->missing & CF_SNAP_NO_SITES) {
        cf_jw_str(j, "owners", NULL);
        return;
    }
    cf_jw_obj(j, "owners");
    for (int o = 0; o < CF_OWNER_COUNT; o++) {
        const struct cf_owner_view *v = &s->owners[o];
        cf_jw_obj(j, cf_owner_info[o].key);
        cf_jw_u64(j, "peak_live_bytes", v->peak_live);
        cf_jw_num(j, "share_of_peak", v->share);
        cf_jw_u64(j, "live_bytes", v->live);
        cf_jw_u64(j, "allocations", v->allocations);
        cf_jw_u64(j, "bytes", v->bytes);
        cf_jw_u64(j, "sites", v->sites);
        cf_jw_obj_end(j);
    }
    cf_jw_obj_end(j);
}

static void leaks(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "live_at_report");
    for (unsigned i = 0; i < s->nleaks && i < s->top; i++) {
        const struct cf_live_group *l = &s->leaks[i];
        cf_jw_obj(j, NULL);
        site_obj(j, s, l->site, "site");
        cf_jw_str(j, "kind", cf_kind_name[l->kind]);
        cf_jw_u64(j, "bytes", l->bytes);
        cf_jw_u64(j, "count", l->count);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void pools(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "pools");
    for (unsigned i = 0; i < s->npools; i++) {
        const struct cf_pool *p = &s->pools[i];
        char hex[24];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)p->handle);
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "handle", hex);
        cf_jw_str(j, "name", cf_snap_pool_name(s, p->handle));
        cf_jw_i64(j, "device", p->device);
        cf_jw_bool(j, "default", p->is_default);
        cf_jw_bool(j, "created_by_app", p->created_by_app);
        cf_jw_bool(j, "destroyed", p->destroyed);
        cf_jw_u64(j, "reserved_bytes", p->reserved_cur);
        cf_jw_u64(j, "reserved_high_bytes", p->reserved_high);
        cf_jw_u64(j, "used_bytes", p->used_cur);
        cf_jw_u64(j, "used_high_bytes", p->used_high);
        cf_jw_u64(j, "release_threshold_bytes", p->release_threshold);
        cf_jw_u64(j, "allocs", p->allocs);
        cf_jw_u64(j, "frees", p->frees);
        cf_jw_u64(j, "peak_live_bytes", p->peak_live_bytes);
        cf_jw_u64(j, "shrinks", p->shrinks);
        cf_jw_u64(j, "regrows", p->regrows);
        cf_jw_u64(j, "trims", p->trims);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void graph(struct cf_jw *j, const struct cf_snap *s)
{
    const struct cf_graph_stats *g = &s->rec.graph;
    cf_jw_obj(j, "graph");
    cf_jw_u64(j, "alloc_nodes", g->alloc_nodes);
    cf_jw_u64(j, "free_nodes", g->free_nodes);
    cf_jw_u64(j, "node_bytes", g->node_bytes);
    cf_jw_arr(j, "devices");
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        if (!g->reserved_high[d] && !g->used_high[d]) continue;
        cf_jw_obj(j, NULL);
        cf_jw_i64(j, "device", d);
        cf_jw_u64(j, "reserved_high_bytes", g->reserved_high[d]);
        cf_jw_u64(j, "used_high_bytes", g->used_high[d]);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_obj_end(j);
}

static void fragmentation(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_obj(j, "fragmentation");
    cf_jw_num(j, "internal_waste", s->internal_waste);
    cf_jw_num(j, "pool_reserved_over_used",
              s->pool_used_high ? (double)s->pool_reserved_high / (double)s->pool_used_high : NAN);
    cf_jw_num(j, "peak_footprint_over_peak_live",
              s->total_peak_live && s->total_peak_footprint
                  ? (double)s->total_peak_footprint / (double)s->total_peak_live
                  : NAN);
    cf_jw_num(j, "headline", s->headline_frag);
    cf_jw_obj_end(j);
}

static void ooms(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "ooms");
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *e = &s->rec.ooms[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "api", cf_api_info[e->api].name);
        cf_jw_i64(j, "device", e->device);
        cf_jw_u64(j, "request_bytes", e->request);
        cf_jw_u64(j, "free_bytes", e->free_bytes);
        cf_jw_u64(j, "total_bytes", e->total_bytes);
        cf_jw_bool(j, "enough_free", e->total_bytes && e->free_bytes >= e->request);
        cf_jw_num(j, "at_s",
                  e->t_ns > s->rec.start_ns ? (double)(e->t_ns - s->rec.start_ns) / 1e9 : 0);
        site_obj(j, s, e->site ? cf_snap_site_index(s, e->site->hash) : -1, "site");
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_u64(j, "ooms_dropped", s->rec.ooms_dropped);
}

/* The failures in brief. failed_request is the first (the OOM report's own);
 * top_holders, what was live by call site, only in the OOM report. */
static void oom_summary(struct cf_jw *j, const struct cf_snap *s)
{
    struct cf_oom_summary sum;
    cf_snap_oom_summary(s, &sum);
    const struct cf_oom *e = sum.first;
    cf_jw_obj(j, "oom");
    cf_jw_u64(j, "count", sum.count);
    cf_jw_bool(j, "report_at_failure", s->at_oom);
    cf_jw_num(j, "first_at_s", e ? sum.first_at_s : NAN);
    cf_jw_fixed(j, "first_unix_s", sum.first_unix_s, 6); /* %.6g keeps whole minutes */
    if (e && sum.recovered >= 0)
        cf_jw_bool(j, "recovered", sum.recovered == 1);
    else
        cf_jw_null(j, "recovered");
    if (e) {
        cf_jw_obj(j, "failed_request");
        cf_jw_str(j, "api", cf_api_info[e->api].name);
        cf_jw_i64(j, "device", e->device);
        cf_jw_u64(j, "request_bytes", e->request);
        cf_jw_u64(j, "free_bytes", e->free_bytes);
        cf_jw_u64(j, "total_bytes", e->total_bytes);
        site_obj(j, s, e->site ? cf_snap_site_index(s, e->site->hash) : -1, "site");
        cf_jw_obj_end(j);
    } else {
        cf_jw_null(j, "failed_request");
    }
    cf_jw_arr(j, "top_holders");
    for (unsigned i = 0; s->at_oom && !(s->missing & CF_SNAP_NO_LIVE) && i < s->nleaks && i < 5;
         i++) {
        cf_jw_obj(j, NULL);
        cf_jw_u64(j, "bytes", s->leaks[i].bytes);
        cf_jw_u64(j, "count", s->leaks[i].count);
        cf_jw_str(j, "kind", cf_kind_name[s->leaks[i].kind]);
        site_obj(j, s, s->leaks[i].site, "site");
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_obj_end(j);
}

static void marks(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "marks");
    for (unsigned i = 0; i < s->rec.nmarks; i++) {
        const struct cf_user_mark *m = &s->rec.marks[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "label", m->text);
        cf_jw_num(j, "at_s",
                  m->t_ns > s->rec.start_ns ? (double)(m->t_ns - s->rec.start_ns) / 1e9 : 0);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_u64(j, "marks_dropped", s->rec.marks_dropped);
}

static void regions(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "regions");
    for (unsigned i = 0; i < s->rec.nregions; i++) {
        const struct cf_region *r = &s->rec.regions[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "name", r->name);
        cf_jw_u64(j, "device", (uint64_t)r->device);
        cf_jw_u64(j, "runs", r->runs);
        cf_jw_u64(j, "peak_live_bytes", r->peak_live);
        cf_jw_u64(j, "peak_footprint_bytes", r->peak_footprint);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_u64(j, "regions_dropped", s->rec.regions_dropped);
}

/* A model that failed gives no figure: its byte counts and ratios are null. */
static void arena_obj(struct cf_jw *j, const char *k, const struct cf_arena_stats *a)
{
    char why[256];
    cf_render_arena_failure(a, why, sizeof why);
    bool ok = why[0] == '\0', read = !a->locked_out;
    cf_jw_obj(j, k);
    cf_jw_bool(j, "active", a->active);
    cf_jw_bool(j, "vmm", a->vmm);
    cf_jw_bool(j, "failed", !ok);
    cf_jw_str(j, "failure", ok ? NULL : why);
    cf_jw_known(j, "peak_live_bytes", a->peak_live, ok);
    cf_jw_known(j, "peak_reserved_bytes", a->peak_reserved, ok);
    cf_jw_known(j, "peak_mapped_bytes", a->peak_mapped, ok);
    cf_jw_known(j, "live_bytes", a->live_now, ok);
    cf_jw_known(j, "reserved_bytes", a->reserved_now, ok);
    cf_jw_known(j, "mapped_bytes", a->mapped_now, ok);
    cf_jw_known(j, "granules_mapped", a->granules_mapped, ok);
    cf_jw_known(j, "granules_unmapped", a->granules_unmapped, ok);
    cf_jw_known(j, "driver_calls", a->driver_calls, ok);
    cf_jw_known(j, "allocs_served", a->allocs_served, read);
    cf_jw_known(j, "frees_served", a->frees_served, read);
    cf_jw_num(j, "alloc_time_s", read ? (double)a->ns_in_alloc / 1e9 : NAN);
    cf_jw_num(j, "free_time_s", read ? (double)a->ns_in_free / 1e9 : NAN);
    cf_jw_num(j, "fragmentation_at_peak",
              ok && a->peak_mapped ? 1.0 - (double)a->peak_live / (double)a->peak_mapped : NAN);
    cf_jw_num(j, "external_fragmentation_at_peak", ok ? a->ext_frag_at_peak : NAN);
    cf_jw_known(j, "ooms", a->ooms, read);
    cf_jw_obj_end(j);
}

static void finding_sites(struct cf_jw *j, const struct cf_snap *s, const struct cf_finding *f)
{
    cf_jw_str(j, "measure", f->measure[0] ? f->measure : NULL);
    cf_jw_u64(j, "site_count", f->nsites);
    cf_jw_arr(j, "sites");
    for (unsigned i = 0; i < f->nsites && i < s->top; i++) {
        const struct cf_finding_site *e = &f->sites[i];
        cf_jw_obj(j, NULL);
        site_obj(j, s, e->site, "site");
        cf_jw_u64(j, "stacks", e->stacks);
        cf_jw_num(j, "value", e->value);
        cf_jw_num(j, "share", e->share);
        cf_jw_str(j, "note", e->note);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void findings(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "findings");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "id", f->id);
        cf_jw_str(j, "severity", f->severity);
        site_obj(j, s, f->site, "site");
        cf_jw_str(j, "title", f->title);
        finding_sites(j, s, f);
        cf_jw_obj(j, "numbers");
        for (unsigned n = 0; n < f->nnum; n++)
            cf_jw_num(j, f->num[n].name, f->num[n].value);
        cf_jw_obj_end(j);
        cf_jw_str(j, "advice", f->advice);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_u64(j, "findings_dropped", s->findings_dropped);
}

void cf_render_json(const struct cf_snap *s, struct cf_buf *out)
{
    struct cf_jw j = cf_jw_start(out);
    cf_jw_obj(&j, NULL);
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
    oom_summary(&j, s);
    marks(&j, s);
    regions(&j, s);
    cf_jw_obj(&j, "arena_vs_native");
    arena_obj(&j, "arena", &s->arena);
    arena_obj(&j, "shadow", &s->shadow);
    /* What the shadow model is held against, and what it leaves out. */
    cf_jw_u64(&j, "native_modelled_peak_bytes", cf_snap_shadow_native(s));
    cf_jw_u64(&j, "native_unmodelled_at_peak_bytes", cf_snap_shadow_left_out(s));
    cf_jw_obj_end(&j);
    findings(&j, s);
    cf_jw_obj_end(&j);
    cf_buf_puts(out, "\n");
}
