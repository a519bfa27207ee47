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
#include "report/json_write.h"
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

/* One event at a time, written out whole: the document is never held. */
static struct cf_buf evb;
static struct cf_jw ej;

/* Microseconds from integers: since the epoch they need more digits than a
 * double keeps to the nanosecond. */
static void micros(const char *k, uint64_t ns)
{
    cf_jw_key(&ej, k);
    cf_buf_printf(ej.b, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* t_ns: since the process started. */
static void open_event(const char *ph, const char *name, uint64_t t_ns, uint32_t tid)
{
    evb.len = 0;
    ej = cf_jw_start(&evb);
    cf_jw_obj(&ej, NULL);
    cf_jw_str(&ej, "name", name);
    cf_jw_str(&ej, "ph", ph);
    micros("ts", ch.wall_at_start_ns + t_ns);
    cf_jw_i64(&ej, "pid", ch.pid);
    cf_jw_u64(&ej, "tid", tid);
}

/* Events one to a line, as the viewers' own files have them. */
static void close_event(void)
{
    cf_jw_obj_end(&ej);
    fputs(ch.first ? "\n" : ",\n", ch.out);
    ch.first = false;
    if (!evb.failed) fwrite(evb.data, 1, evb.len, ch.out);
}

static void hex(const char *k, uint64_t v)
{
    char s[24];
    snprintf(s, sizeof s, "0x%" PRIx64, v);
    cf_jw_str(&ej, k, s);
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
    cf_jw_obj(&ej, "args");
    cf_jw_u64(&ej, "live", v->live);
    cf_jw_u64(&ej, "footprint", v->footprint);
    cf_jw_u64(&ej, "pool reserved", v->pool_reserved);
    cf_jw_u64(&ej, "arena mapped", v->arena_mapped);
    cf_jw_obj_end(&ej);
    close_event();
}

static void call_slice(const struct cf_event *e)
{
    uint64_t end = since_start(e->t_ns);
    open_event("X", cf_api_info[e->api].name, end > e->ns ? end - e->ns : 0, e->tid);
    micros("dur", e->ns);
    cf_jw_obj(&ej, "args");
    cf_jw_i64(&ej, "result", e->result);
    if (e->type == CF_EV_ALLOC) cf_jw_u64(&ej, "size", e->size);
    /* The stream an allocation is ordered on (0 the legacy default stream), as
     * a profiler's kernel and copy slices name theirs. */
    if (e->type == CF_EV_ALLOC) hex("stream", e->stream);
    if (e->type != CF_EV_CALL) hex("addr", e->addr);
    cf_jw_obj_end(&ej);
    close_event();
}

static void oom_instant(const struct cf_event *e)
{
    char name[96], a[32];
    snprintf(name, sizeof name, "out of memory: %s %s", cf_api_info[e->api].name,
             cf_fmt_bytes(e->size, a, sizeof a));
    open_event("i", name, since_start(e->t_ns), e->tid);
    cf_jw_str(&ej, "s", "p");
    cf_jw_obj(&ej, "args");
    cf_jw_i64(&ej, "device", e->device);
    cf_jw_u64(&ej, "request_bytes", e->size);
    cf_jw_u64(&ej, "free_bytes", e->v[0]);
    cf_jw_u64(&ej, "total_bytes", e->v[1]);
    cf_jw_obj_end(&ej);
    close_event();
}

static void mark_instant(const struct cf_event *e)
{
    char text[CF_EV_STR_MAX + 1];
    snprintf(text, sizeof text, "%.*s", (int)e->len, e->str);
    open_event("i", text, since_start(e->t_ns), e->tid);
    cf_jw_str(&ej, "s", "t");
    close_event();
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
    /* The document's frame around the events is written by hand: the events
     * stream out one to a line in between. */
    fputs("{\"traceEvents\":[", out);
    return 0;
}

static void peak_instant(int d, const char *what, uint64_t t_ns, uint64_t bytes)
{
    char name[96], b[32];
    snprintf(name, sizeof name, "device %d %s %s", d, what, cf_fmt_bytes(bytes, b, sizeof b));
    open_event("i", name, t_ns, 0);
    cf_jw_str(&ej, "s", "p");
    cf_jw_obj(&ej, "args");
    cf_jw_i64(&ej, "device", d);
    cf_jw_u64(&ej, "bytes", bytes);
    cf_jw_obj_end(&ej);
    close_event();
}

static void findings(const struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        char name[sizeof f->title + 64];
        snprintf(name, sizeof name, "[%s] %s: %s", f->severity, f->id, f->title);
        open_event("i", name, (uint64_t)(s->duration_s * 1e9), 0);
        cf_jw_str(&ej, "s", "g");
        cf_jw_obj(&ej, "args");
        cf_jw_str(&ej, "advice", f->advice);
        cf_jw_obj_end(&ej);
        close_event();
    }
}

/* Metadata: the process's name or a thread's. */
static void name_event(const char *what, uint32_t tid, const char *name)
{
    open_event("M", what, 0, tid);
    cf_jw_obj(&ej, "args");
    cf_jw_str(&ej, "name", name);
    cf_jw_obj_end(&ej);
    close_event();
}

static void names(const struct cf_snap *s)
{
    char name[700];
    cf_snap_describe_program(s, name, sizeof name);
    name_event("process_name", 0, name);
    for (unsigned i = 0; i < ch.ntids; i++) {
        snprintf(name, sizeof name, "thread %" PRIu32, ch.tids[i]);
        name_event("thread_name", ch.tids[i], name);
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
    cf_buf_free(&evb);
    return 0;
}
