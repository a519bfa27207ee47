/* The view of a trace, written as the subset of the JSON report that
 * view.c reads, with every call site rather than the report's top rows and
 * frames named from DWARF. It runs in a child of the command: a replay fills
 * the process's record tables, which are not reset for a second trace. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/names.h"
#include "cli/replay.h"
#include "cli/view.h"
#include "report/json_write.h"
#include "report/oom.h"
#include "report/snapshot.h"
#include "report/strbuf.h"
#include "base/log.h"

static void sym_frame(struct cf_jw *j, const struct cf_sym *y)
{
    cf_jw_obj(j, NULL);
    cf_jw_str(j, "function", y->function[0] ? y->function : NULL);
    cf_jw_str(j, "module", y->module[0] ? y->module : NULL);
    cf_jw_str(j, "file", y->line ? y->file : NULL);
    cf_jw_u64(j, "line", y->line);
    cf_jw_obj_end(j);
}

/* The frame and the functions inlined at it, innermost first, up to left in all;
 * returns how many were written. */
static unsigned frame(struct cf_jw *j, uintptr_t addr, unsigned left)
{
    const struct cf_sym *chain;
    unsigned n = cf_names_inlined(addr, &chain), k;
    for (k = 0; k < n && k < left; k++)
        sym_frame(j, &chain[k]);
    return k;
}

static void site(struct cf_jw *j, const struct cf_snap *s, int idx)
{
    if (idx < 0 || (unsigned)idx >= s->nsites) {
        cf_jw_null(j, "site");
        return;
    }
    const struct cf_site *st = &s->sites[idx];
    char id[24];
    snprintf(id, sizeof id, "%016" PRIx64, st->hash);
    cf_jw_obj(j, "site");
    cf_jw_str(j, "id", id);
    cf_jw_str(j, "api", cf_api_info[st->api].name);
    cf_jw_arr(j, "frames");
    /* The frames the report shows the site by: allocator and framework plumbing
     * left out (the same for every site behind it), unless every frame is. */
    unsigned k = 0, outer = st->nframes;
    for (unsigned f = 0; f < st->nframes && k < 4; f++) {
        if (cf_frame_is_marker(st->frames[f])) continue;
        outer = f;
        if (cf_names_frame(st->frames[f])->folded) continue;
        k += frame(j, st->frames[f], 4 - k);
    }
    if (k == 0 && outer < st->nframes) frame(j, st->frames[outer], 4);
    cf_jw_arr_end(j);
    cf_jw_obj_end(j);
}

static void devices(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "devices");
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *d = &s->devs[i];
        const struct cf_device_stats *ds = &s->rec.dev[d->device];
        cf_jw_obj(j, NULL);
        cf_jw_i64(j, "device", d->device);
        cf_jw_u64(j, "total_bytes", ds->total_bytes);
        cf_jw_u64(j, "peak_live_bytes", d->peak_live);
        cf_jw_u64(j, "peak_footprint_bytes", d->peak_footprint);
        cf_jw_u64(j, "allocs", ds->allocs);
        cf_jw_u64(j, "frees", ds->frees);
        cf_jw_num(j, "fragmentation", d->headline_frag);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void head(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_obj(j, "program");
    cf_jw_str(j, "name", s->program);
    cf_jw_i64(j, "pid", s->pid);
    cf_jw_str(j, "rank", s->rank);
    cf_jw_str(j, "host", s->host);
    cf_jw_num(j, "duration_s", s->duration_s);
    cf_jw_bool(j, "from_trace", true);
    cf_jw_obj_end(j);
    devices(j, s);
    cf_jw_obj(j, "summary");
    cf_jw_u64(j, "allocs", s->rec.total_allocs);
    cf_jw_u64(j, "frees", s->rec.total_frees);
    cf_jw_u64(j, "alloc_bytes", s->total_alloc_bytes);
    cf_jw_u64(j, "peak_live_bytes", s->total_peak_live);
    cf_jw_u64(j, "peak_footprint_bytes", s->total_peak_footprint);
    cf_jw_u64(j, "live_at_report_bytes", s->leaked_bytes);
    cf_jw_u64(j, "live_at_report_count", s->leaked_count);
    cf_jw_num(j, "fragmentation", s->headline_frag);
    cf_jw_obj_end(j);
    cf_jw_obj(j, "fragmentation");
    cf_jw_num(j, "internal_waste", s->internal_waste);
    cf_jw_obj_end(j);
    cf_jw_arr(j, "ooms");
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "api", cf_api_info[s->rec.ooms[i].api].name);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_u64(j, "ooms_dropped", s->rec.ooms_dropped);
    cf_jw_u64(j, "site_count", s->nsites);
    struct cf_oom_summary sum;
    cf_snap_oom_summary(s, &sum);
    cf_jw_obj(j, "oom");
    cf_jw_num(j, "first_at_s", sum.first ? sum.first_at_s : NAN);
    cf_jw_fixed(j, "first_unix_s", sum.first_unix_s, 6);
    if (sum.first && sum.recovered >= 0)
        cf_jw_bool(j, "recovered", sum.recovered == 1);
    else
        cf_jw_null(j, "recovered");
    cf_jw_obj_end(j);
}

static void body(struct cf_jw *j, const struct cf_snap *s)
{
    cf_jw_arr(j, "top_sites_by_peak");
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_peak[i]];
        cf_jw_obj(j, NULL);
        site(j, s, (int)s->by_peak[i]);
        cf_jw_u64(j, "calls", st->calls);
        cf_jw_u64(j, "bytes", st->bytes);
        cf_jw_u64(j, "peak_live_bytes", st->peak_live_bytes);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_arr(j, "live_at_report");
    for (unsigned i = 0; i < s->nleaks; i++) {
        cf_jw_obj(j, NULL);
        site(j, s, s->leaks[i].site);
        cf_jw_u64(j, "bytes", s->leaks[i].bytes);
        cf_jw_u64(j, "count", s->leaks[i].count);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_arr(j, "findings");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "id", f->id);
        cf_jw_str(j, "severity", f->severity);
        cf_jw_str(j, "title", f->title);
        site(j, s, f->site);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

int cf_view_trace_json(const char *name, const void *data, size_t len, int fd)
{
    struct cf_snap s;
    if (cf_replay_open_mem(name, data, len, NULL, &s) != 0) return 1;
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_obj(&j, NULL);
    head(&j, &s);
    body(&j, &s);
    cf_jw_obj_end(&j);
    cf_buf_puts(&b, "\n");
    int rc = b.failed || cf_write_all(fd, b.data, b.len) != 0;
    cf_buf_free(&b);
    cf_names_free();
    cf_replay_close(&s);
    return rc;
}
