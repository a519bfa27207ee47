/* The view of a trace, written as the subset of the JSON report that
 * view.c reads, with every call site rather than the report's top rows and
 * frames named from DWARF. It runs in a child of the command: a replay fills
 * the process's record tables, which are not reset for a second trace. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cli/names.h"
#include "cli/replay.h"
#include "cli/view.h"
#include "report/fold.h"
#include "report/snapshot.h"
#include "report/strbuf.h"
#include "base/log.h"

static void kstr(struct cf_buf *b, const char *k, const char *v)
{
    cf_buf_printf(b, "\"%s\":", k);
    cf_buf_json_str(b, v);
}

static void knum(struct cf_buf *b, const char *k, double v)
{
    cf_buf_printf(b, "\"%s\":", k);
    cf_buf_json_num(b, v);
}

static void sym_frame(struct cf_buf *b, const struct cf_sym *y)
{
    cf_buf_puts(b, "{");
    kstr(b, "function", y->function[0] ? y->function : NULL);
    cf_buf_puts(b, ",");
    kstr(b, "module", y->module[0] ? y->module : NULL);
    cf_buf_puts(b, ",");
    kstr(b, "file", y->line ? y->file : NULL);
    cf_buf_printf(b, ",\"line\":%u}", y->line);
}

/* The frame and the functions inlined at it, innermost first, up to *left in all;
 * returns how many were written. */
static unsigned frame(struct cf_buf *b, uintptr_t addr, unsigned written, unsigned left)
{
    const struct cf_sym *chain;
    unsigned n = cf_names_inlined(addr, &chain), k;
    for (k = 0; k < n && k < left; k++) {
        if (written + k) cf_buf_puts(b, ",");
        sym_frame(b, &chain[k]);
    }
    return k;
}

static void site(struct cf_buf *b, const struct cf_snap *s, int idx)
{
    if (idx < 0 || (unsigned)idx >= s->nsites) {
        cf_buf_puts(b, "\"site\":null");
        return;
    }
    const struct cf_site *st = &s->sites[idx];
    cf_buf_printf(b, "\"site\":{\"id\":\"%016" PRIx64 "\",", st->hash);
    kstr(b, "api", cf_api_info[st->api].name);
    cf_buf_puts(b, ",\"frames\":[");
    /* The frames the report shows the site by: allocator and framework plumbing
     * left out (the same for every site behind it), unless every frame is. */
    unsigned k = 0, outer = st->nframes;
    for (unsigned f = 0; f < st->nframes && k < 4; f++) {
        if (cf_frame_is_marker(st->frames[f])) continue;
        outer = f;
        if (cf_fold_frame(cf_names_frame(st->frames[f]))) continue;
        k += frame(b, st->frames[f], k, 4 - k);
    }
    if (k == 0 && outer < st->nframes) frame(b, st->frames[outer], 0, 4);
    cf_buf_puts(b, "]}");
}

static void head(struct cf_buf *b, const struct cf_snap *s)
{
    cf_buf_puts(b, "{\"program\":{");
    kstr(b, "name", s->program);
    cf_buf_printf(b, ",\"pid\":%ld,", s->pid);
    kstr(b, "rank", s->rank);
    cf_buf_puts(b, ",");
    kstr(b, "host", s->host);
    cf_buf_puts(b, ",");
    knum(b, "duration_s", s->duration_s);
    cf_buf_puts(b, ",\"from_trace\":true},\"devices\":[");
    for (unsigned i = 0; i < s->ndevs; i++) {
        const struct cf_dev_view *d = &s->devs[i];
        cf_buf_printf(b,
                      "%s{\"device\":%d,\"total_bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
                      ",\"peak_footprint_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64
                      ",\"frees\":%" PRIu64 ",",
                      i ? "," : "", d->device, s->rec.dev[d->device].total_bytes, d->peak_live,
                      d->peak_footprint, s->rec.dev[d->device].allocs, s->rec.dev[d->device].frees);
        knum(b, "fragmentation", d->headline_frag);
        cf_buf_puts(b, "}");
    }
    cf_buf_printf(b,
                  "],\"summary\":{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
                  ",\"alloc_bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64
                  ",\"peak_footprint_bytes\":%" PRIu64 ",\"live_at_report_bytes\":%" PRIu64
                  ",\"live_at_report_count\":%" PRIu64 ",",
                  s->rec.total_allocs, s->rec.total_frees, s->total_alloc_bytes, s->total_peak_live,
                  s->total_peak_footprint, s->leaked_bytes, s->leaked_count);
    knum(b, "fragmentation", s->headline_frag);
    cf_buf_puts(b, "},\"fragmentation\":{");
    knum(b, "internal_waste", s->internal_waste);
    cf_buf_puts(b, "},\"ooms\":[");
    for (unsigned i = 0; i < s->rec.nooms; i++)
        cf_buf_printf(b, "%s{\"api\":\"%s\"}", i ? "," : "", cf_api_info[s->rec.ooms[i].api].name);
    cf_buf_printf(b, "],\"ooms_dropped\":%u,\"site_count\":%u", s->rec.ooms_dropped, s->nsites);
}

static void body(struct cf_buf *b, const struct cf_snap *s)
{
    cf_buf_puts(b, ",\"top_sites_by_peak\":[");
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[s->by_peak[i]];
        cf_buf_puts(b, i ? ",{" : "{");
        site(b, s, (int)s->by_peak[i]);
        cf_buf_printf(
            b, ",\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRIu64 "}",
            st->calls, st->bytes, st->peak_live_bytes);
    }
    cf_buf_puts(b, "],\"live_at_report\":[");
    for (unsigned i = 0; i < s->nleaks; i++) {
        cf_buf_puts(b, i ? ",{" : "{");
        site(b, s, s->leaks[i].site);
        cf_buf_printf(b, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}", s->leaks[i].bytes,
                      s->leaks[i].count);
    }
    cf_buf_puts(b, "],\"findings\":[");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        cf_buf_puts(b, i ? ",{" : "{");
        kstr(b, "id", f->id);
        cf_buf_puts(b, ",");
        kstr(b, "severity", f->severity);
        cf_buf_puts(b, ",");
        kstr(b, "title", f->title);
        cf_buf_puts(b, ",");
        site(b, s, f->site);
        cf_buf_puts(b, "}");
    }
    cf_buf_puts(b, "]}\n");
}

int cf_view_trace_json(const char *name, const void *data, size_t len, int fd)
{
    struct cf_snap s;
    if (cf_replay_open_mem(name, data, len, NULL, &s) != 0) return 1;
    struct cf_buf b = {0};
    head(&b, &s);
    body(&b, &s);
    int rc = b.failed || cf_write_all(fd, b.data, b.len) != 0;
    cf_buf_free(&b);
    cf_names_free();
    cf_replay_close(&s);
    return rc;
}
