/* The CSV of RAPIDS RMM's logging_resource_adaptor, which RMM's replay
 * benchmark reads: "Thread,Time,Action,Pointer,Size,Stream", one row per
 * allocate, free or allocate failure of device memory (device, pool and
 * managed allocations: what an RMM device_memory_resource hands out; pinned
 * host memory, VMM handles, arrays and graph nodes are not pointers such a
 * resource returns). Time is the wall clock (UTC) as HH:MM:SS.microseconds,
 * from the trace's start time. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/export.h"
#include "cli/replay.h"

static struct rmm {
    FILE *out;
    int device; /* -1: every device */
    double wall_start_s;
    bool have_wall;
} rm;

static bool device_memory(uint8_t kind)
{
    return kind == CF_KIND_DEVICE || kind == CF_KIND_POOL || kind == CF_KIND_MANAGED;
}

static void row(const struct cf_event *e, const char *action, uint64_t ptr, uint64_t size,
                uint64_t stream)
{
    char v[64];
    if (!rm.have_wall && cf_replay_header("wall_start_s", v, sizeof v) == 0) {
        rm.wall_start_s = strtod(v, NULL);
        rm.have_wall = true;
    }
    uint64_t start = cf_rec.start_ns;
    double t = rm.wall_start_s + (double)(e->t_ns > start ? e->t_ns - start : 0) / 1e9;
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    long usec = (long)((t - (double)secs) * 1e6);
    fprintf(rm.out, "%" PRIu32 ",%02d:%02d:%02d.%06ld,%s,0x%" PRIx64 ",%" PRIu64 ",0x%" PRIx64 "\n",
            e->tid, tm.tm_hour, tm.tm_min, tm.tm_sec, usec > 999999 ? 999999 : usec, action, ptr,
            size, stream);
}

static bool wanted(int32_t device)
{
    return rm.device < 0 || device == rm.device;
}

static void on_alloc(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx)
{
    if (!wanted(a ? a->device : e->device)) return;
    if (a && device_memory(a->kind) && !(e->flags & CF_EVF_GRAPH))
        row(e, "allocate", a->addr, a->size, a->stream);
    else if (a == NULL && device_memory((uint8_t)cf_api_info[e->api].kind))
        row(e, "allocate failure", 0, e->size, e->stream);
}

static void on_release(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx)
{
    if (device_memory(a->kind) && wanted(a->device)) row(e, "free", a->addr, a->size, a->stream);
}

int cf_export_rmm_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out)
{
    memset(&rm, 0, sizeof rm);
    rm.out = out;
    rm.device = o->device;
    sink->alloc = on_alloc;
    sink->release = on_release;
    fputs("Thread,Time,Action,Pointer,Size,Stream\n", out);
    return 0;
}

int cf_export_rmm_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out)
{
    return 0;
}
