/* PyTorch's memory snapshot (torch.cuda.memory._snapshot()), which its memory
 * viewer and torch.cuda._memory_viz read: {"segments", "device_traces",
 * "allocator_settings"}. Device memory only (what counts in a device's live
 * bytes). Every allocation is shown as its own segment: a cudaMalloc is one,
 * and pools give no addresses for their reserves. An allocation becomes
 * segment_alloc + alloc, a free free_requested + free_completed +
 * segment_free, a failed allocation with out of memory an "oom" entry. Frames
 * are innermost first, as PyTorch writes them, under the API called.
 *
 * Entries are kept per device in temporary files of fixed records while the
 * trace replays, and pickled at the end, when every call site is named: a
 * site's frame list is pickled once and referenced from the memo after. */
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "cli/names.h"
#include "cli/pickle_write.h"

enum action { A_SEG_ALLOC, A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_FREE, A_OOM };
static const char *const action_name[] = {"segment_alloc",  "alloc",        "free_requested",
                                          "free_completed", "segment_free", "oom"};

struct rec {
    uint32_t action, site;
    uint64_t addr, size, stream, time_us, device_free;
};

static struct torch {
    FILE *dev[CF_MAX_DEVICES];
    uint64_t start_ns;
    bool failed;
    struct cf_coll *c;
    struct cf_pkw pk;
    uint32_t *memo_of_site; /* memo index + 1 of a site's frame list */
    int device;             /* -1: every device */
} tz;

static void put(int device, const struct rec *r)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return;
    if (tz.device >= 0 && device != tz.device) return;
    if (tz.dev[device] == NULL && (tz.dev[device] = tmpfile()) == NULL) tz.failed = true;
    if (tz.dev[device] && fwrite(r, sizeof *r, 1, tz.dev[device]) != 1) tz.failed = true;
}

static uint64_t time_us(const struct cf_event *e)
{
    uint64_t start = cf_rec.start_ns;
    return e->t_ns > start ? (e->t_ns - start) / 1000 : 0;
}

static uint64_t seg_size(const struct cf_coll_alloc *a)
{
    return a->granted > a->size ? a->granted : a->size;
}

static void on_alloc(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx)
{
    if (a == NULL) {
        if (e->flags & CF_EVF_OOM)
            put(e->device, &(struct rec){.action = A_OOM,
                                         .site = e->site,
                                         .size = e->size,
                                         .stream = e->stream,
                                         .time_us = time_us(e),
                                         .device_free = e->v[0]});
        return;
    }
    if (!a->counted) return;
    struct rec r = {.site = a->site, .addr = a->addr, .stream = a->stream, .time_us = time_us(e)};
    r.action = A_SEG_ALLOC;
    r.size = seg_size(a);
    put(a->device, &r);
    r.action = A_ALLOC;
    r.size = a->size;
    put(a->device, &r);
}

static void on_release(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx)
{
    if (!a->counted) return;
    struct rec r = {.site = a->site,
                    .addr = a->addr,
                    .size = a->size,
                    .stream = a->stream,
                    .time_us = time_us(e)};
    r.action = A_FREE_REQ;
    put(a->device, &r);
    r.action = A_FREE_DONE;
    put(a->device, &r);
    r.action = A_SEG_FREE;
    r.size = seg_size(a);
    put(a->device, &r);
}

int cf_export_torch_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out)
{
    memset(&tz, 0, sizeof tz);
    tz.device = o->device;
    sink->alloc = on_alloc;
    sink->release = on_release;
    return 0;
}

/* ---- pickling ---- */

static void frame(struct cf_pkw *p, const char *file, unsigned line, const char *name)
{
    cf_pkw_dict(p);
    cf_pkw_mark(p);
    cf_pkw_kstr(p, "filename", file);
    cf_pkw_kuint(p, "line", line);
    cf_pkw_kstr(p, "name", name);
    cf_pkw_setitems(p);
}

/* Innermost first, as PyTorch's frames are; a function inlined at a frame is a
 * frame of its own, as in `cudafrag symbolize`. */
static void sym_frame(struct cf_pkw *p, const struct cf_sym *y)
{
    char name[CF_NAME_LEN];
    if (y->function[0])
        snprintf(name, sizeof name, "%s", y->function);
    else if (y->python)
        snprintf(name, sizeof name, "(python frame %llu)",
                 (unsigned long long)CF_FRAME_OFFSET(y->addr));
    else
        snprintf(name, sizeof name, "%s+0x%llx", y->module[0] ? y->module : "??",
                 (unsigned long long)y->offset);
    frame(p, y->line ? y->file : (y->path[0] ? y->path : "??"), y->line, name);
}

static void frames_of(struct cf_pkw *p, uint32_t id)
{
    if (id < tz.c->nids && tz.memo_of_site[id]) {
        cf_pkw_get(p, tz.memo_of_site[id] - 1);
        return;
    }
    int idx = cf_coll_site_index(tz.c, id);
    const struct cf_site *st = idx >= 0 ? &tz.c->snap.sites[idx] : NULL;
    cf_pkw_list(p);
    cf_pkw_mark(p);
    if (st) frame(p, "??", 0, cf_api_info[st->api].name);
    for (unsigned i = 0; st && i < st->nframes; i++) {
        if (cf_frame_is_marker(st->frames[i])) continue;
        const struct cf_sym *chain;
        unsigned n = cf_names_inlined(st->frames[i], &chain);
        for (unsigned k = 0; k < n; k++)
            sym_frame(p, &chain[k]);
    }
    cf_pkw_appends(p);
    uint32_t m = cf_pkw_put(p);
    if (id < tz.c->nids) tz.memo_of_site[id] = m + 1;
}

static void entry(struct cf_pkw *p, const struct rec *r)
{
    cf_pkw_dict(p);
    cf_pkw_mark(p);
    cf_pkw_kstr(p, "action", action_name[r->action]);
    cf_pkw_kuint(p, "addr", r->addr);
    cf_pkw_kuint(p, "size", r->size);
    cf_pkw_kuint(p, "stream", r->stream);
    cf_pkw_kuint(p, "time_us", r->time_us);
    if (r->action == A_OOM) cf_pkw_kuint(p, "device_free", r->device_free);
    cf_pkw_str(p, "frames");
    frames_of(p, r->site);
    cf_pkw_setitems(p);
}

static void device_trace(struct cf_pkw *p, FILE *f)
{
    struct rec r;
    unsigned n = 0;
    cf_pkw_list(p);
    cf_pkw_mark(p);
    if (f) rewind(f);
    while (f && fread(&r, sizeof r, 1, f) == 1) {
        if (r.action > A_OOM) break;
        entry(p, &r);
        if (++n % CF_PKW_BATCH == 0) {
            cf_pkw_appends(p);
            cf_pkw_mark(p);
        }
    }
    cf_pkw_appends(p);
}

struct segments {
    struct cf_pkw *p;
    unsigned n;
};

static void segment(const struct cf_coll_alloc *a, void *ctx)
{
    struct segments *sg = ctx;
    struct cf_pkw *p = sg->p;
    if (!a->counted || (tz.device >= 0 && a->device != tz.device)) return;
    if (sg->n && sg->n % CF_PKW_BATCH == 0) {
        cf_pkw_appends(p);
        cf_pkw_mark(p);
    }
    sg->n++;
    uint64_t size = seg_size(a);
    cf_pkw_dict(p);
    cf_pkw_mark(p);
    cf_pkw_kuint(p, "device", (uint64_t)a->device);
    cf_pkw_kuint(p, "address", a->addr);
    cf_pkw_kuint(p, "total_size", size);
    cf_pkw_kuint(p, "allocated_size", size);
    cf_pkw_kuint(p, "active_size", size);
    cf_pkw_kuint(p, "requested_size", a->size);
    cf_pkw_kuint(p, "stream", a->stream);
    cf_pkw_kstr(p, "segment_type", size >= (1u << 20) ? "large" : "small");
    cf_pkw_str(p, "is_expandable");
    cf_pkw_bool(p, false);
    cf_pkw_str(p, "frames");
    frames_of(p, a->site);
    cf_pkw_str(p, "blocks");
    cf_pkw_list(p);
    cf_pkw_mark(p);
    cf_pkw_dict(p);
    cf_pkw_mark(p);
    cf_pkw_kuint(p, "size", size);
    cf_pkw_kuint(p, "requested_size", a->size);
    cf_pkw_kstr(p, "state", "active_allocated");
    cf_pkw_str(p, "frames");
    frames_of(p, a->site);
    cf_pkw_setitems(p);
    cf_pkw_appends(p);
    cf_pkw_setitems(p);
}

int cf_export_torch_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out)
{
    int last = -1, rc = 0;
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        if (tz.dev[d] || c->dev[d].used) last = d;
    tz.c = c;
    tz.memo_of_site = calloc(c->nids + 1, sizeof *tz.memo_of_site);
    if (tz.failed || tz.memo_of_site == NULL) {
        fprintf(stderr, "cudafrag: export: cannot write temporary files\n");
        rc = 1;
    }
    struct cf_pkw *p = &tz.pk;
    p->f = out;
    if (rc == 0) {
        cf_pkw_start(p);
        cf_pkw_dict(p);
        cf_pkw_mark(p);
        cf_pkw_str(p, "segments");
        cf_pkw_list(p);
        cf_pkw_mark(p);
        struct segments sg = {p, 0};
        cf_coll_each_live(c, segment, &sg);
        cf_pkw_appends(p);
        cf_pkw_str(p, "device_traces");
        cf_pkw_list(p);
        cf_pkw_mark(p);
        for (int d = 0; d <= last; d++)
            device_trace(p, tz.dev[d]);
        cf_pkw_appends(p);
        cf_pkw_str(p, "allocator_settings");
        cf_pkw_dict(p);
        cf_pkw_setitems(p);
        cf_pkw_stop(p);
    }
    if (p->capped)
        fprintf(stderr, "cudafrag: export: %llu values above 2^53 written as 2^53-1\n",
                (unsigned long long)p->capped);
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        if (tz.dev[d]) fclose(tz.dev[d]);
    free(tz.memo_of_site);
    memset(&tz, 0, sizeof tz);
    return rc;
}
