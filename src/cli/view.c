/* Reading a report into a view. Sites can appear twice in a report (by peak and
 * by calls) and different stacks can share a key (they differ below the four
 * frames a report keeps): rows are merged by key, figures added. */
#include "cli/view.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/input.h"
#include "cli/json_read.h"
#include "cli/names.h"
#include "record/trace_format.h"

#define MAX_SITES (1u << 20)

static uint64_t u64_of(const struct cf_json *j, const struct cf_jnode *obj, const char *k)
{
    uint64_t v = 0;
    cf_json_u64(cf_json_get(j, obj, k), &v);
    return v;
}

static void copy_str(char *out, size_t n, const char *s)
{
    snprintf(out, n, "%s", s ? s : "");
}

static void key_frame(const struct cf_json *j, const struct cf_jnode *f, char *out, size_t n)
{
    const char *mod = cf_json_str(j, cf_json_get(j, f, "module"));
    const char *fn = cf_json_str(j, cf_json_get(j, f, "function"));
    const char *file = cf_json_str(j, cf_json_get(j, f, "file"));
    uint64_t line = u64_of(j, f, "line");
    snprintf(out, n, "%.120s:%.200s:%.120s:%llu", mod ? mod : "?", fn ? fn : "?",
             file ? cf_names_base(file) : "?", (unsigned long long)line);
}

/* Appends frame f to a site's key; the first frame added also names the label. */
static void add_frame(const struct cf_json *j, const struct cf_jnode *f, const char *api, char *key,
                      size_t *len, char *label, bool first)
{
    char part[512];
    key_frame(j, f, part, sizeof part);
    if (*len < CF_VIEW_KEY) *len += (size_t)snprintf(key + *len, CF_VIEW_KEY - *len, " < %s", part);
    if (!first) return;
    const char *fn = cf_json_str(j, cf_json_get(j, f, "function"));
    const char *file = cf_json_str(j, cf_json_get(j, f, "file"));
    if (file)
        snprintf(label, 256, "%.40s at %.100s (%.80s:%llu)", api ? api : "?", fn ? fn : "?",
                 cf_names_base(file), (unsigned long long)u64_of(j, f, "line"));
    else
        snprintf(label, 256, "%.40s at %.100s (%.80s)", api ? api : "?", fn ? fn : "?",
                 cf_json_str(j, cf_json_get(j, f, "module")) ?: "?");
}

/* The key and a label of a site object (JSON null: no call site). */
static void site_key(const struct cf_json *j, const struct cf_jnode *site, char *key, char *label)
{
    const char *api = cf_json_str(j, cf_json_get(j, site, "api"));
    if (site == NULL || site->type != CF_J_OBJ) {
        snprintf(key, CF_VIEW_KEY, "(no call site)");
        snprintf(label, 256, "(no call site)");
        return;
    }
    size_t len = (size_t)snprintf(key, CF_VIEW_KEY, "%.40s", api ? api : "?");
    const struct cf_jnode *frames = cf_json_get(j, site, "frames");
    unsigned k = 0;
    for (const struct cf_jnode *f = cf_json_first(j, frames); f && k < 4; f = cf_json_next(j, f)) {
        /* Allocator and framework plumbing is the same for every site behind it. */
        const struct cf_jnode *folded = cf_json_get(j, f, "folded");
        if (folded && folded->type == CF_J_TRUE) continue;
        add_frame(j, f, api, key, &len, label, k++ == 0);
    }
    if (k > 0) return;
    /* Every frame folded (a framework's own thread): the frame the report shows. */
    const struct cf_jnode *shown = cf_json_get(j, site, "shown_frame");
    unsigned want = (unsigned)u64_of(j, site, "shown_frame"), i = 0;
    for (const struct cf_jnode *f = cf_json_first(j, frames); f && shown && shown->type == CF_J_NUM;
         f = cf_json_next(j, f), i++) {
        if (i != want) continue;
        add_frame(j, f, api, key, &len, label, true);
        return;
    }
    snprintf(label, 256, "%.40s (no stack)", api ? api : "?");
}

static struct cf_view_site *find(const struct cf_view *v, const char *key, uint64_t h)
{
    uint32_t cursor = 0, row;
    while (cf_rowindex_next(&v->index, h, &cursor, &row))
        if (strcmp(v->sites[row].key, key) == 0) return &v->sites[row];
    return NULL;
}

const struct cf_view_site *cf_view_find(const struct cf_view *v, const char *key)
{
    return find(v, key, cf_rowindex_hash(key));
}

static struct cf_view_site *site_row(struct cf_view *v, const char *key, const char *label)
{
    uint64_t h = cf_rowindex_hash(key);
    struct cf_view_site *s = find(v, key, h);
    if (s) return s;
    if (v->nsites >= MAX_SITES) return NULL;
    if (v->nsites == v->sites_cap) {
        unsigned cap = v->sites_cap ? 2 * v->sites_cap : 64;
        if ((s = realloc(v->sites, cap * sizeof *s)) == NULL) return NULL;
        v->sites = s;
        v->sites_cap = cap;
    }
    if (cf_rowindex_add(&v->index, h, v->nsites) != 0) return NULL;
    s = &v->sites[v->nsites++];
    memset(s, 0, sizeof *s);
    s->hash = h;
    copy_str(s->key, sizeof s->key, key);
    copy_str(s->label, sizeof s->label, label);
    return s;
}

/* The site ids a report lists, so that a site in both of its lists counts once. */
struct seen_ids {
    char (*id)[24];
    unsigned n, cap;
    struct cf_rowindex index;
};

/* False when id was seen already; a site without an id is never one seen. */
static bool first_sight(struct seen_ids *seen, const char *id)
{
    if (id == NULL) return true;
    uint64_t h = cf_rowindex_hash(id);
    uint32_t cursor = 0, row;
    while (cf_rowindex_next(&seen->index, h, &cursor, &row))
        if (strcmp(seen->id[row], id) == 0) return false;
    if (seen->n < seen->cap && cf_rowindex_add(&seen->index, h, seen->n) == 0)
        copy_str(seen->id[seen->n++], 24, id);
    return true;
}

/* Sites of one list; ids already taken from another list of the same report are skipped. */
static void site_list(struct cf_view *v, const struct cf_json *j, const struct cf_jnode *list,
                      struct seen_ids *seen)
{
    for (const struct cf_jnode *e = cf_json_first(j, list); e; e = cf_json_next(j, e)) {
        const struct cf_jnode *site = cf_json_get(j, e, "site");
        if (!first_sight(seen, cf_json_str(j, cf_json_get(j, site, "id")))) continue;
        char key[CF_VIEW_KEY], label[256];
        site_key(j, site, key, label);
        struct cf_view_site *s = site_row(v, key, label);
        if (s == NULL) return;
        s->calls += u64_of(j, e, "calls");
        s->bytes += u64_of(j, e, "bytes");
        s->peak_live += u64_of(j, e, "peak_live_bytes");
    }
}

static void sites(struct cf_view *v, const struct cf_json *j, const struct cf_jnode *r)
{
    unsigned cap =
        cf_json_get(j, r, "top_sites_by_peak") ? cf_json_get(j, r, "top_sites_by_peak")->count : 0;
    cap += cf_json_get(j, r, "top_sites_by_calls") ? cf_json_get(j, r, "top_sites_by_calls")->count
                                                   : 0;
    struct seen_ids seen = {.id = calloc(cap + 1, 24), .cap = cap};
    if (seen.id == NULL) return;
    site_list(v, j, cf_json_get(j, r, "top_sites_by_peak"), &seen);
    site_list(v, j, cf_json_get(j, r, "top_sites_by_calls"), &seen);
    free(seen.id);
    cf_rowindex_free(&seen.index);
    v->listed = seen.n;
    const struct cf_jnode *leaks = cf_json_get(j, r, "live_at_report");
    for (const struct cf_jnode *e = cf_json_first(j, leaks); e; e = cf_json_next(j, e)) {
        char key[CF_VIEW_KEY], label[256];
        site_key(j, cf_json_get(j, e, "site"), key, label);
        struct cf_view_site *s = site_row(v, key, label);
        if (s) s->leaked += u64_of(j, e, "bytes");
    }
    v->site_count = u64_of(j, r, "site_count");
}

static void findings(struct cf_view *v, const struct cf_json *j, const struct cf_jnode *r)
{
    const struct cf_jnode *list = cf_json_get(j, r, "findings");
    v->findings = calloc(list ? list->count + 1 : 1, sizeof *v->findings);
    for (const struct cf_jnode *f = cf_json_first(j, list); f && v->findings;
         f = cf_json_next(j, f)) {
        struct cf_view_finding *x = &v->findings[v->nfindings++];
        char label[256];
        copy_str(x->id, sizeof x->id, cf_json_str(j, cf_json_get(j, f, "id")));
        copy_str(x->severity, sizeof x->severity, cf_json_str(j, cf_json_get(j, f, "severity")));
        copy_str(x->title, sizeof x->title, cf_json_str(j, cf_json_get(j, f, "title")));
        site_key(j, cf_json_get(j, f, "site"), x->key, label);
    }
}

static void devices(struct cf_view *v, const struct cf_json *j, const struct cf_jnode *r)
{
    const struct cf_jnode *list = cf_json_get(j, r, "devices");
    for (const struct cf_jnode *d = cf_json_first(j, list); d && v->ndevs < CF_VIEW_DEVICES;
         d = cf_json_next(j, d)) {
        struct cf_view_dev *x = &v->devs[v->ndevs++];
        x->device = (int)cf_json_num(cf_json_get(j, d, "device"), -1);
        x->peak_live = u64_of(j, d, "peak_live_bytes");
        x->peak_footprint = u64_of(j, d, "peak_footprint_bytes");
        x->total = u64_of(j, d, "total_bytes");
        x->allocs = u64_of(j, d, "allocs");
        x->frees = u64_of(j, d, "frees");
        x->frag = cf_json_num(cf_json_get(j, d, "fragmentation"), NAN);
    }
}

static void oom(struct cf_view *v, const struct cf_json *j, const struct cf_jnode *r)
{
    const struct cf_jnode *o = cf_json_get(j, r, "oom"), *rec = cf_json_get(j, o, "recovered");
    const struct cf_jnode *at = cf_json_get(j, o, "report_at_failure");
    v->oom_first_at_s = cf_json_num(cf_json_get(j, o, "first_at_s"), NAN);
    v->oom_first_unix_s = cf_json_num(cf_json_get(j, o, "first_unix_s"), NAN);
    v->oom_recovered = rec && rec->type == CF_J_TRUE ? 1 : rec && rec->type == CF_J_FALSE ? 0 : -1;
    v->at_oom = at && at->type == CF_J_TRUE;
}

static int from_json(struct cf_view *v, const struct cf_json *j)
{
    const struct cf_jnode *r = cf_json_root(j), *p = cf_json_get(j, r, "program");
    const struct cf_jnode *s = cf_json_get(j, r, "summary");
    if (r == NULL || r->type != CF_J_OBJ || s == NULL || !cf_json_get(j, r, "devices")) return -1;
    copy_str(v->program, sizeof v->program, cf_json_str(j, cf_json_get(j, p, "name")));
    copy_str(v->rank, sizeof v->rank, cf_json_str(j, cf_json_get(j, p, "rank")));
    copy_str(v->host, sizeof v->host, cf_json_str(j, cf_json_get(j, p, "host")));
    v->pid = (long)cf_json_num(cf_json_get(j, p, "pid"), 0);
    v->duration_s = cf_json_num(cf_json_get(j, p, "duration_s"), NAN);
    v->from_trace =
        cf_json_get(j, p, "from_trace") && cf_json_get(j, p, "from_trace")->type == CF_J_TRUE;
    v->allocs = u64_of(j, s, "allocs");
    v->frees = u64_of(j, s, "frees");
    v->alloc_bytes = u64_of(j, s, "alloc_bytes");
    v->peak_live = u64_of(j, s, "peak_live_bytes");
    v->peak_footprint = u64_of(j, s, "peak_footprint_bytes");
    v->leaked_bytes = u64_of(j, s, "live_at_report_bytes");
    v->leaked_count = u64_of(j, s, "live_at_report_count");
    v->frag = cf_json_num(cf_json_get(j, s, "fragmentation"), NAN);
    v->internal_waste =
        cf_json_num(cf_json_get(j, cf_json_get(j, r, "fragmentation"), "internal_waste"), NAN);
    const struct cf_jnode *ooms = cf_json_get(j, r, "ooms");
    v->ooms = (ooms ? ooms->count : 0) + u64_of(j, r, "ooms_dropped");
    oom(v, j, r);
    devices(v, j, r);
    sites(v, j, r);
    findings(v, j, r);
    return 0;
}

/* ---- traces: replayed in a child, which writes its view as JSON to a pipe ---- */

static char *read_all(int fd, size_t *len)
{
    size_t cap = 1u << 16, n = 0;
    char *buf = malloc(cap);
    for (ssize_t k = 1; buf && k > 0 && n <= CF_JSON_MAX_BYTES;) {
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (b == NULL) break;
            buf = b;
        }
        k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            k = 1;
        else if (k > 0)
            n += (size_t)k;
    }
    *len = n;
    return buf;
}

/* 0, -1, or 2 when the child failed having said why (a damaged trace). */
static int trace_json(const char *path, const char *data, size_t size, struct cf_json *j)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(cf_view_trace_json(path, data, size, fds[1]) ? 1 : 0);
    }
    close(fds[1]);
    size_t len = 0;
    char *text = pid > 0 ? read_all(fds[0], &len) : NULL;
    close(fds[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    int rc = -1;
    if (text && WIFEXITED(status) && WEXITSTATUS(status) == 0) rc = cf_json_parse(j, text, len);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1) rc = 2;
    free(text);
    return rc;
}

int cf_view_load(const char *path, struct cf_view *v)
{
    struct cf_json j = {0}; /* freed below even when no text was parsed into it */
    memset(v, 0, sizeof *v);
    memset(&j, 0, sizeof j);
    copy_str(v->source, sizeof v->source, path);
    /* Read once: the kind is told from the bytes that are then parsed. */
    char *data;
    size_t len;
    if (cf_input_read(path, CF_JSON_MAX_BYTES, CF_TRACE_MAGIC, &data, &len) != 0) return 1;
    bool trace = len >= 8 && memcmp(data, CF_TRACE_MAGIC, 8) == 0;
    int rc = trace ? trace_json(path, data, len, &j) : cf_json_parse(&j, data, len);
    free(data);
    if (rc != 0 && !trace) fprintf(stderr, "cudafrag: %s: %s\n", path, j.error);
    if (rc != 0 && rc != 2 && trace)
        fprintf(stderr, "cudafrag: %s: the trace could not be read\n", path);
    if (rc == 2) return 2; /* the replay said why: the trace is damaged or unsupported */
    if (rc == 0 && (rc = from_json(v, &j)) != 0)
        fprintf(stderr, "cudafrag: %s is not a cudafrag report (no summary or devices)\n", path);
    cf_json_free(&j);
    return rc ? 1 : 0;
}

void cf_view_free(struct cf_view *v)
{
    free(v->sites);
    free(v->findings);
    cf_rowindex_free(&v->index);
    memset(v, 0, sizeof *v);
}
