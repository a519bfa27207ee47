/* `cudafrag report TRACE`: the report the traced process printed at exit, from
 * its trace alone. The events are applied, in the order the process gave them
 * (seq), to the same record tables the process kept, and the same snapshot,
 * findings and renderers turn them into a report. Only the names of call sites
 * differ: here they come from DWARF (libdwfl), with file:line and inlined
 * frames, where the exiting process had only its symbol tables. */
#include "cli/replay.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/advise.h"
#include "cli/symbolize_dw.h"
#include "config/config.h"
#include "record/event.h"
#include "record/record.h"
#include "record/trace_end.h"
#include "record/trace_read.h"
#include "report/render.h"
#include "report/snapshot.h"

#define MAX_MODULES 4096

struct module {
    char *path, *build_id;
};

/* What the replay learns besides the events it applies. */
struct replay {
    struct cf_trace trace;
    struct module modules[MAX_MODULES];
    bool have_end;
    uint64_t end_ns;             /* the END event's time */
    struct cf_arena_stats arena; /* the arena's figures the END event carries */
    struct cf_snap_who who;      /* the traced process, from the header */
    uint64_t last_t;
    uint32_t damaged; /* 1 + the index of the first chunk whose events do not decode */
    char reason[64];
    struct cf_dw *dw;
};

static struct replay *current; /* for the symbol resolver, which has no context */
bool cf_replay_dwarf = true;

/* ---- the traced process's settings and identity ---- */

/* The process's CUDAFRAG_* settings, not the command's own: from the defaults,
 * each one the trace's header names (one a newer version knows is passed over). */
static void adopt_settings(struct replay *r)
{
    char value[4096];
    cf_config_defaults();
    for (const char *p = cf_trace_header_next(&r->trace, "env", NULL, value, sizeof value); p;
         p = cf_trace_header_next(&r->trace, "env", p, value, sizeof value)) {
        char *eq = strchr(value, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        cf_opt_set(value, eq + 1);
    }
    cf_rec_init_from_trace();
}

/* "pool_name=0xHANDLE NAME" lines: what the importer says a pool stands for. */
static void adopt_pool_names(struct replay *r, struct cf_snap_who *w)
{
    char value[256];
    for (const char *p = cf_trace_header_next(&r->trace, "pool_name", NULL, value, sizeof value);
         p && w->npool_names < CF_SNAP_POOL_NAMES;
         p = cf_trace_header_next(&r->trace, "pool_name", p, value, sizeof value)) {
        struct cf_snap_pool_name *n = &w->pool_names[w->npool_names];
        char *end = NULL;
        n->handle = strtoull(value, &end, 16);
        if (end == value || *end != ' ') continue;
        snprintf(n->name, sizeof n->name, "%s", end + 1);
        w->npool_names++;
    }
}

static void adopt_identity(struct replay *r)
{
    struct cf_snap_who *w = &r->who;
    char value[64];
    memset(w, 0, sizeof *w); /* a key the trace leaves out is unknown, not the last trace's */
    cf_trace_header_next(&r->trace, "program", NULL, w->program, sizeof w->program);
    cf_trace_header_next(&r->trace, "imported", NULL, w->imported, sizeof w->imported);
    adopt_pool_names(r, w);
    cf_trace_header_next(&r->trace, "rank", NULL, w->rank, sizeof w->rank);
    cf_trace_header_next(&r->trace, "host", NULL, w->host, sizeof w->host);
    if (cf_trace_header_next(&r->trace, "pid", NULL, value, sizeof value))
        w->pid = strtol(value, NULL, 10);
    cf_rec_init();
    if (cf_trace_header_next(&r->trace, "start_ns", NULL, value, sizeof value))
        cf_rec.start_ns = strtoull(value, NULL, 10);
    char mono[32];
    if (cf_trace_header_next(&r->trace, "realtime_base_ns", NULL, value, sizeof value) &&
        cf_trace_header_next(&r->trace, "monotonic_base_ns", NULL, mono, sizeof mono)) {
        w->realtime_base_ns = strtoull(value, NULL, 10);
        w->monotonic_base_ns = strtoull(mono, NULL, 10);
    }
}

/* ---- first pass: sites, modules, the END event ---- */

static char *dup_bytes(const char *s, uint32_t n)
{
    char *d = malloc(n + 1u);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void first_pass_event(struct replay *r, const struct cf_event *e)
{
    if (e->type == CF_EV_SITE || e->type == CF_EV_PYFRAME) {
        cf_rec_apply_event(e);
    } else if (e->type == CF_EV_MODULE && e->site < MAX_MODULES && !r->modules[e->site].path) {
        r->modules[e->site].path = dup_bytes(e->str, e->len);
        r->modules[e->site].build_id = dup_bytes(e->str2, e->len2);
    } else if (e->type == CF_EV_END) {
        cf_trace_end_read(e->str, e->len, &r->arena, r->reason, sizeof r->reason);
        r->end_ns = e->v[0];
        r->have_end = true;
    }
}

static void first_pass(struct replay *r)
{
    for (uint32_t i = 0; i < r->trace.nchunks; i++) {
        const struct cf_trace_chunk *c = &r->trace.chunks[i];
        /* Chunks without definitions need no first look (their events are counted
         * and timed in the second pass). */
        if (r->trace.any_defs && !c->defs) continue;
        struct cf_dec dec = {.p = c->data, .end = c->data + c->len};
        struct cf_event e;
        int rc;
        while ((rc = cf_ev_decode(&dec, &e)) == 1)
            first_pass_event(r, &e);
        if (rc < 0 && !r->damaged) r->damaged = i + 1;
    }
}

/* ---- second pass: every thread's stream, merged by seq ---- */

struct cursor {
    uint32_t tid, *chunks, n, next;
    struct cf_dec dec;
    struct cf_event ev;
};

static bool cursor_step(struct replay *r, struct cursor *c)
{
    for (;;) {
        int rc = cf_ev_decode(&c->dec, &c->ev);
        if (rc == 1) {
            c->ev.tid = c->tid;
            if (c->ev.t_ns > r->last_t && c->ev.type != CF_EV_END) r->last_t = c->ev.t_ns;
            return true;
        }
        if (rc < 0 && !r->damaged) r->damaged = c->chunks[c->next - 1] + 1;
        if (c->next == c->n) return false;
        const struct cf_trace_chunk *k = &r->trace.chunks[c->chunks[c->next++]];
        c->dec = (struct cf_dec){.p = k->data, .end = k->data + k->len};
    }
}

/* One cursor per thread id, its chunks in file order (their order of writing). */
static struct cursor *make_cursors(struct replay *r, uint32_t *ncur, uint32_t **idx_out)
{
    struct cursor *cur = calloc(r->trace.nchunks + 1u, sizeof *cur);
    uint32_t *idx = calloc(r->trace.nchunks + 1u, sizeof *idx);
    uint32_t n = 0, used = 0;
    *idx_out = idx;
    if (!cur || !idx) {
        free(cur);
        return NULL;
    }
    for (uint32_t i = 0; i < r->trace.nchunks; i++) {
        uint32_t tid = r->trace.chunks[i].tid, k;
        for (k = 0; k < n && cur[k].tid != tid; k++) {
        }
        if (k < n) continue;
        cur[n] = (struct cursor){.tid = tid, .chunks = idx + used};
        for (uint32_t j = i; j < r->trace.nchunks; j++)
            if (r->trace.chunks[j].tid == tid) cur[n].chunks[cur[n].n++] = j;
        used += cur[n].n;
        n++;
    }
    *ncur = n;
    return cur;
}

static void sift_down(struct cursor **heap, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < n && heap[l]->ev.seq < heap[m]->ev.seq) m = l;
        if (l + 1 < n && heap[l + 1]->ev.seq < heap[m]->ev.seq) m = l + 1;
        if (m == i) return;
        struct cursor *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static int second_pass(struct replay *r, const struct cf_replay_hooks *h)
{
    uint32_t n = 0, live = 0, *idx = NULL;
    struct cursor *cur = make_cursors(r, &n, &idx);
    struct cursor **heap = calloc(n + 1u, sizeof *heap);
    if (cur == NULL || heap == NULL) {
        free(idx);
        free(cur);
        free(heap);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (cursor_step(r, &cur[i])) heap[live++] = &cur[i];
    for (uint32_t i = live / 2 + 1; i-- > 0;)
        sift_down(heap, live, i);
    while (live) {
        struct cursor *c = heap[0];
        if (c->ev.type != CF_EV_SITE && c->ev.type != CF_EV_PYFRAME) cf_rec_apply_event(&c->ev);
        if (h && h->after_event) h->after_event(&c->ev, h->ctx);
        if (!cursor_step(r, c)) heap[0] = heap[--live];
        sift_down(heap, live, 0);
    }
    free(idx);
    free(cur);
    free(heap);
    return 0;
}

/* ---- names: DWARF through libdwfl ---- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The end of a long path is the part a reader needs. */
static void set_file(struct cf_sym *s, const struct cf_dw_frame *f)
{
    if (!f->file[0] || !f->line) return;
    size_t len = strlen(f->file), keep = sizeof s->file - 1;
    const char *tail = len > keep ? f->file + len - keep : f->file;
    snprintf(s->file, sizeof s->file, "%.*s", (int)keep, tail);
    s->line = f->line;
}

/* s->addr named into s[0 .. n-1], the frames inlined there innermost first (one
 * when nothing is inlined or known); returns n, at most max. */
static int resolve_chain(struct cf_sym *s, int max)
{
    uint32_t mod = CF_FRAME_MODULE(s->addr);
    uint64_t off = CF_FRAME_OFFSET(s->addr);
    const struct module *m = mod < MAX_MODULES ? &current->modules[mod] : NULL;
    s->offset = s->lookup = off;
    if (m == NULL || m->path == NULL) return 1;
    snprintf(s->path, sizeof s->path, "%s", m->path);
    snprintf(s->module, sizeof s->module, "%s", base_name(m->path));
    struct cf_dw_frame f[8];
    /* off - 1: a return address may already belong to the next line or function. */
    int n =
        off && cf_replay_dwarf ? cf_dw_lookup(current->dw, m->path, m->build_id, off - 1, f, 8) : 0;
    if (n <= 0 || f[0].stale) return 1;
    int all = n;
    if (n > max) n = max;
    for (int k = 0; k < n; k++) {
        if (k) {
            s[k] = s[0];
            s[k].file[0] = '\0';
            s[k].line = 0;
        }
        snprintf(s[k].function, sizeof s[k].function, "%.*s", (int)sizeof s[k].function - 1,
                 f[k].function);
        /* Folding matches the function the code belongs to, as the exiting process
         * (which knows no inlining) did. */
        if (all > 1)
            snprintf(s[k].symbol, sizeof s[k].symbol, "%.*s", (int)sizeof s[k].symbol - 1,
                     f[all - 1].function);
        set_file(&s[k], &f[k]);
    }
    return n;
}

static void resolve_frame(struct cf_sym *s)
{
    resolve_chain(s, 1);
}

/* ---- the command ---- */

static void say_what_was_read(const struct replay *r)
{
    if (r->trace.truncated)
        fprintf(stderr,
                "cudafrag: %s is truncated at chunk %u (byte offset %llu): the process was "
                "killed? The report covers the events up to its last whole chunk\n",
                r->trace.path, r->trace.truncated_chunk,
                (unsigned long long)r->trace.truncated_offset);
    if (!r->have_end)
        fprintf(stderr,
                "cudafrag: %s has no final report mark (the process did not exit "
                "normally): the report ends at the last event\n",
                r->trace.path);
}

static struct replay the_replay;

/* The report's steps, as in the process but from the trace: the record the
 * events were applied to copied, the snapshot with the traced process's
 * identity, time and arena figures, the frames named (DWARF), the owners, the
 * findings. */
static int take_snapshot(struct replay *r, struct cf_snap *s)
{
    struct cf_snap_input *in = calloc(1, sizeof *in);
    if (in == NULL) return -1;
    in->replayed = true;
    in->reason = r->have_end ? (r->reason[0] ? r->reason : "exit") : "end of trace";
    in->top = (unsigned)cf_opt_int(CF_OPT_TOP);
    in->blocks = cf_opt_str(CF_OPT_BLOCKS);
    in->now_ns = r->have_end ? r->end_ns : r->last_t;
    struct cf_arena_stats own;
    cf_arena_get_stats(&own, &in->shadow); /* the shadow model ran here, on the events */
    in->arena = r->arena;                  /* the arena ran in the process */
    in->who = r->who;
    in->resolver = resolve_frame;
    int rc = cf_rec_read(&in->copy);
    if (rc == 0) rc = cf_snap_take(s, in);
    free(in);
    if (rc != 0) return rc;
    cf_snap_symbols(s);
    if (cf_owners_compute(s) != 0) return -1;
    return cf_findings_compute(s);
}

/* The trace of r loaded (0) or not (anything else): the rest of the replay. */
static int replay_loaded(struct replay *r, int loaded, const struct cf_replay_hooks *hooks,
                         struct cf_snap *s)
{
    memset(s, 0, sizeof *s); /* freed on the failure paths below, taken or not */
    if (loaded != 0) {
        fprintf(stderr, "cudafrag: %s\n", r->trace.error);
        return 1;
    }
    const char *path = r->trace.path;
    adopt_settings(r);
    adopt_identity(r);
    r->dw = cf_dw_open();
    first_pass(r);
    int rc = second_pass(r, hooks);
    if (r->damaged) {
        /* A chunk that passed its checks but does not decode: never reported from. */
        cf_trace_damaged(&r->trace, r->damaged - 1, "its events do not decode");
        fprintf(stderr, "cudafrag: %s\n", r->trace.error);
        memset(s, 0, sizeof *s);
        cf_replay_close(s);
        return 1;
    }
    say_what_was_read(r);
    cf_owner_path_resolver = cf_replay_module;
    if (rc == 0) rc = take_snapshot(r, s);
    if (rc != 0) {
        fprintf(stderr, "cudafrag: out of memory while analysing %s\n", path);
        cf_replay_close(s);
        return 1;
    }
    return 0;
}

int cf_replay_open(const char *path, const struct cf_replay_hooks *hooks, struct cf_snap *s)
{
    memset(&the_replay, 0, sizeof the_replay);
    current = &the_replay;
    return replay_loaded(&the_replay, cf_trace_load(&the_replay.trace, path), hooks, s);
}

int cf_replay_open_mem(const char *name, const void *data, size_t len,
                       const struct cf_replay_hooks *hooks, struct cf_snap *s)
{
    memset(&the_replay, 0, sizeof the_replay);
    current = &the_replay;
    return replay_loaded(&the_replay, cf_trace_load_mem(&the_replay.trace, name, data, len), hooks,
                         s);
}

void cf_replay_close(struct cf_snap *s)
{
    cf_snap_free(s);
    if (current) {
        cf_dw_close(current->dw);
        cf_trace_unload(&current->trace);
        for (unsigned i = 0; i < MAX_MODULES; i++) {
            free(current->modules[i].path);
            free(current->modules[i].build_id);
        }
        current = NULL;
    }
}

/* A Python frame of the trace, named by the record it was applied to. */
static void python_frame(struct cf_sym *out)
{
    struct cf_pyframe pf;
    bool known = cf_pyframe_get((uint32_t)CF_FRAME_OFFSET(out->addr), &pf);
    cf_sym_python(out, known ? &pf : NULL);
}

int cf_replay_resolve(uint64_t frame, struct cf_sym *out)
{
    if (current == NULL) return -1;
    memset(out, 0, sizeof *out);
    out->addr = (uintptr_t)frame;
    if (cf_frame_is_python(frame))
        python_frame(out);
    else
        resolve_frame(out);
    return 0;
}

int cf_replay_resolve_inlined(uint64_t frame, struct cf_sym *out, int max)
{
    if (current == NULL || max < 1) return -1;
    memset(out, 0, sizeof *out * (size_t)max);
    out->addr = (uintptr_t)frame;
    if (!cf_frame_is_python(frame)) return resolve_chain(out, max);
    python_frame(out);
    return 1;
}

int cf_replay_module(uint64_t frame, char *path, size_t n)
{
    if (current == NULL || cf_frame_is_python(frame)) return -1;
    uint32_t mod = CF_FRAME_MODULE(frame);
    if (mod >= MAX_MODULES || current->modules[mod].path == NULL) return -1;
    snprintf(path, n, "%s", current->modules[mod].path);
    return 0;
}

int cf_replay_header(const char *key, char *value, size_t n)
{
    if (current == NULL || cf_trace_header_next(&current->trace, key, NULL, value, n) == NULL)
        return -1;
    return 0;
}

const char *cf_replay_header_next(const char *key, const char *after, char *value, size_t n)
{
    return current ? cf_trace_header_next(&current->trace, key, after, value, n) : NULL;
}

static void report_section(struct cf_advise *a, const char *path, const struct cf_snap *s,
                           struct cf_buf *b)
{
    static const char end[] = "==== end of cudafrag report ====\n";
    size_t n = sizeof end - 1;
    if (a == NULL || s->blocks == NULL || s->blocks[0] == '\0') return;
    if (cf_advise_run(a, path, s) != 0 || b->len < n || memcmp(b->data + b->len - n, end, n))
        return;
    b->len -= n;
    cf_advise_render_section(a, b);
    cf_buf_puts(b, end);
}

int cf_replay_report(const char *path, bool json, FILE *out)
{
    struct cf_snap s;
    /* Only the text report has the section, and it costs a capture of the stream. */
    struct cf_advise *a = json ? NULL : cf_advise_new(false, 0);
    struct cf_replay_hooks hooks = {.after_event = a ? cf_advise_blocks_event : NULL, .ctx = a};
    if (cf_replay_open(path, &hooks, &s) != 0) {
        cf_advise_free(a);
        return 1;
    }
    struct cf_buf b = {0};
    if (json) {
        cf_render_json(&s, &b);
    } else {
        cf_render_text(&s, &b);
        report_section(a, path, &s, &b);
    }
    if (!b.failed) fwrite(b.data, 1, b.len, out);
    int rc = b.failed ? 1 : 0;
    if (rc) fprintf(stderr, "cudafrag: out of memory while rendering the report of %s\n", path);
    cf_buf_free(&b);
    cf_replay_close(&s);
    cf_advise_free(a);
    return rc;
}
