/* Chrome trace event format (JSON), which Perfetto and chrome://tracing load:
 * per device one counter track with four series (live, footprint, pool
 * reserved, arena mapped) holding every change, each allocation API call as a
 * slice on its thread, OOMs and cudafrag_mark() texts as instant events, the
 * peaks and the findings as instant events, and process and thread names.
 * Events are written while the trace is replayed, so memory stays flat.
 * Timestamps are microseconds since the epoch (CLOCK_REALTIME, the clock of
 * Kineto's and Nsight Systems' traces) where the trace's header holds the clock
 * base; an older trace's are microseconds since the process started. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "cli/replay.h"
#include "report/format.h"
#include "report/strbuf.h"

#define MAX_TIDS 4096

static struct chrome {
    FILE *out;
    int device; /* -1: every device */
    bool first;
    long pid;
    uint64_t start_ns;
    uint64_t wall_at_start_ns; /* CLOCK_REALTIME at start_ns; 0: relative times */
    uint32_t tids[MAX_TIDS];
    unsigned ntids;
} ch;

static void put_str(const char *s)
{
    struct cf_buf b = {0};
    cf_buf_json_str(&b, s);
    if (!b.failed) fwrite(b.data, 1, b.len, ch.out);
    cf_buf_free(&b);
}

/* t_ns: since the process started. Printed from integers: microseconds since the
 * epoch need more digits than a double keeps to the nanosecond. */
static void open_event(const char *ph, const char *name, uint64_t t_ns, uint32_t tid)
{
    uint64_t ts = ch.wall_at_start_ns + t_ns;
    fputs(ch.first ? "\n" : ",\n", ch.out);
    ch.first = false;
    fputs("{\"name\":", ch.out);
    put_str(name);
    fprintf(ch.out, ",\"ph\":\"%s\",\"ts\":%" PRIu64 ".%03u,\"pid\":%ld,\"tid\":%" PRIu32, ph,
            ts / 1000, (unsigned)(ts % 1000), ch.pid, tid);
}

static uint64_t since_start(uint64_t t_ns)
{
    return t_ns > ch.start_ns ? t_ns - ch.start_ns : 0;
}

/* The wall clock at the process's start from the header's clock base (one
 * instant read on both clocks); 0 when the trace has none. */
static uint64_t wall_at_start(uint64_t start_ns)
{
    char wall[32], mono[32];
    if (cf_replay_header("realtime_base_ns", wall, sizeof wall) != 0 ||
        cf_replay_header("monotonic_base_ns", mono, sizeof mono) != 0)
        return 0;
    uint64_t w = strtoull(wall, NULL, 10), m = strtoull(mono, NULL, 10);
    if (w == 0 || m == 0 || m - start_ns > w) return 0;
    return w - (m - start_ns);
}

static void note_tid(uint32_t tid)
{
    for (unsigned i = 0; i < ch.ntids; i++)
        if (ch.tids[i] == tid) return;
    if (ch.ntids < MAX_TIDS) ch.tids[ch.ntids++] = tid;
}

static void first_event(void)
{
    char v[32];
    if (ch.start_ns) return;
    ch.start_ns = cf_rec.start_ns ? cf_rec.start_ns : 1;
    ch.wall_at_start_ns = wall_at_start(ch.start_ns);
    ch.pid = cf_replay_header("pid", v, sizeof v) == 0 ? strtol(v, NULL, 10) : 1;
}

static void point(int device, uint64_t t_ns, const struct cf_coll_values *v, void *ctx)
{
    char name[48];
    if (ch.device >= 0 && device != ch.device) return;
    snprintf(name, sizeof name, "device %d memory", device);
    open_event("C", name, t_ns, 0);
    fprintf(ch.out,
            ",\"args\":{\"live\":%" PRIu64 ",\"footprint\":%" PRIu64 ",\"pool reserved\":%" PRIu64
            ",\"arena mapped\":%" PRIu64 "}}",
            v->live, v->footprint, v->pool_reserved, v->arena_mapped);
}

static void call_slice(const struct cf_event *e)
{
    uint64_t end = since_start(e->t_ns);
    open_event("X", cf_api_info[e->api].name, end > e->ns ? end - e->ns : 0, e->tid);
    fprintf(ch.out, ",\"dur\":%" PRIu64 ".%03u,\"args\":{\"result\":%" PRId32, e->ns / 1000,
            (unsigned)(e->ns % 1000), e->result);
    if (e->type == CF_EV_ALLOC) fprintf(ch.out, ",\"size\":%" PRIu64, e->size);
    /* The stream an allocation is ordered on (0 the legacy default stream), as
     * a profiler's kernel and copy slices name theirs. */
    if (e->type == CF_EV_ALLOC) fprintf(ch.out, ",\"stream\":\"0x%" PRIx64 "\"", e->stream);
    if (e->type != CF_EV_CALL) fprintf(ch.out, ",\"addr\":\"0x%" PRIx64 "\"", e->addr);
    fputs("}}", ch.out);
}

static void oom_instant(const struct cf_event *e)
{
    char name[96], a[32];
    snprintf(name, sizeof name, "out of memory: %s %s", cf_api_info[e->api].name,
             cf_fmt_bytes(e->size, a, sizeof a));
    open_event("i", name, since_start(e->t_ns), e->tid);
    fprintf(ch.out,
            ",\"s\":\"p\",\"args\":{\"device\":%" PRId32 ",\"request_bytes\":%" PRIu64
            ",\"free_bytes\":%" PRIu64 ",\"total_bytes\":%" PRIu64 "}}",
            e->device, e->size, e->v[0], e->v[1]);
}

static void mark_instant(const struct cf_event *e)
{
    char text[CF_EV_STR_MAX + 1];
    snprintf(text, sizeof text, "%.*s", (int)e->len, e->str);
    open_event("i", text, since_start(e->t_ns), e->tid);
    fputs(",\"s\":\"t\"}", ch.out);
}

static void event(const struct cf_event *e, void *ctx)
{
    first_event();
    bool api = (e->type == CF_EV_ALLOC || e->type == CF_EV_FREE || e->type == CF_EV_CALL) &&
               e->api < CF_API_COUNT && (ch.device < 0 || e->device == ch.device);
    if (api) {
        note_tid(e->tid);
        call_slice(e);
    }
    if (api && e->type == CF_EV_ALLOC && (e->flags & CF_EVF_OOM)) oom_instant(e);
    if (e->type == CF_EV_MARK) mark_instant(e);
}

int cf_export_chrome_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out)
{
    memset(&ch, 0, sizeof ch);
    ch.out = out;
    ch.device = o->device;
    ch.first = true;
    sink->point = point;
    sink->event = event;
    fputs("{\"traceEvents\":[", out);
    return 0;
}

static void peak_instant(int d, const char *what, uint64_t t_ns, uint64_t bytes)
{
    char name[96], b[32];
    snprintf(name, sizeof name, "device %d %s %s", d, what, cf_fmt_bytes(bytes, b, sizeof b));
    open_event("i", name, t_ns, 0);
    fprintf(ch.out, ",\"s\":\"p\",\"args\":{\"device\":%d,\"bytes\":%" PRIu64 "}}", d, bytes);
}

static void findings(const struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        char name[sizeof f->title + 64];
        snprintf(name, sizeof name, "[%s] %s: %s", f->severity, f->id, f->title);
        open_event("i", name, (uint64_t)(s->duration_s * 1e9), 0);
        fputs(",\"s\":\"g\",\"args\":{\"advice\":", ch.out);
        put_str(f->advice);
        fputs("}}", ch.out);
    }
}

static void names(const struct cf_snap *s)
{
    char name[700];
    cf_snap_describe_program(s, name, sizeof name);
    open_event("M", "process_name", 0, 0);
    fputs(",\"args\":{\"name\":", ch.out);
    put_str(name);
    fputs("}}", ch.out);
    for (unsigned i = 0; i < ch.ntids; i++) {
        snprintf(name, sizeof name, "thread %" PRIu32, ch.tids[i]);
        open_event("M", "thread_name", 0, ch.tids[i]);
        fputs(",\"args\":{\"name\":", ch.out);
        put_str(name);
        fputs("}}", ch.out);
    }
}

int cf_export_chrome_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out)
{
    const struct cf_snap *s = &c->snap;
    ch.pid = s->pid > 0 ? s->pid : 1; /* an imported run has none */
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        if (!c->dev[d].used || (o->device >= 0 && d != o->device)) continue;
        peak_instant(d, "peak live", c->dev[d].at_live_peak.t_ns, s->rec.dev[d].peak_live_bytes);
        peak_instant(d, "peak footprint", c->dev[d].at_footprint_peak.t_ns,
                     s->rec.dev[d].peak_footprint);
    }
    findings(s);
    names(s);
    fprintf(out,
            "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"cudafrag\","
            "\"clock\":\"%s\"}}\n",
            ch.wall_at_start_ns ? "CLOCK_REALTIME microseconds since the epoch"
                                : "microseconds since the process started");
    return 0;
}
