/* A PyTorch memory snapshot into a cudafrag trace. The snapshot's
 * device_traces hold, per device, what the caching allocator did in its
 * history window (torch.cuda.memory._record_memory_history): tensor
 * allocations ("alloc"), their return to the cache ("free_completed"), and the
 * segments it took from the driver ("segment_alloc"/"segment_free", and
 * "segment_map"/"segment_unmap" with expandable segments).
 *
 * Tensors become stream-ordered allocations of one pool per device that
 * stands for the caching allocator (cudaMallocAsync/cudaFreeAsync events), and
 * the segments become that pool's reserved bytes (POOL events): `cudafrag
 * report` then shows PyTorch's reserved memory as the footprint and the
 * tensors as the live bytes, and `cudafrag replay` replays the tensors. The
 * window may start after the program did: tensors freed in it without having
 * been allocated in it, and tensors the snapshot's segments show allocated at
 * the end, were live at its start and are allocated there; the reserved bytes
 * at the start are what the segments hold at the end minus the window's
 * changes. The trace file itself is written by snapshot_trace.c. */
#include "cli/snapshot_import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmdline.h"
#include "cli/input.h"
#include "cli/pickle.h"
#include "cli/snapshot_frames.h"
#include "cli/snapshot_trace.h"
#include "record/trace_format.h"
#include "record/record.h"
#include "replay/stream.h"
#include "replay/u64map.h"

#define EXIT_USAGE 2
#define MAX_FILE   ((uint64_t)4 << 30)
#define OOM_RESULT 2 /* cudaErrorMemoryAllocation */

static int conv_fail(struct cf_import *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    return -1;
}

static struct cf_import_event *add(struct cf_import *c, struct cf_import_events *de, unsigned d,
                                   uint64_t t_us, uint8_t type)
{
    if (de->n == de->cap) {
        size_t cap = de->cap ? de->cap * 2 : 1024;
        struct cf_import_event *v = realloc(de->v, cap * sizeof *v);
        if (v == NULL) {
            conv_fail(c, "out of memory");
            return NULL;
        }
        de->v = v;
        de->cap = cap;
    }
    struct cf_import_event *x = &de->v[de->n++];
    memset(x, 0, sizeof *x);
    x->t_us = t_us;
    x->e.type = type;
    x->e.device = (int32_t)d;
    return x;
}

/* The call site of a snapshot entry (or block) from its "frames". */
static int site_of(struct cf_import *c, const struct cf_pk *dict, uint32_t *site)
{
    if (cf_sf_site(&c->sites, cf_pk_get(dict, "frames"), site) != 0)
        return conv_fail(c, "out of memory");
    return 0;
}

/* from: the entry or block whose frames say where the tensor was allocated. */
static int add_alloc(struct cf_import *c, struct cf_import_events *de, unsigned d, uint64_t t_us,
                     uint64_t addr, uint64_t size, uint64_t stream, const struct cf_pk *from)
{
    uint32_t site = 0;
    if (site_of(c, from, &site) != 0) return -1;
    struct cf_import_event *x = add(c, de, d, t_us, CF_EV_ALLOC);
    if (x == NULL) return -1;
    x->e.site = site;
    x->e.api = CF_API_cudaMallocAsync;
    x->e.addr = addr;
    x->e.size = size;
    x->e.stream = stream;
    x->e.pool = CF_IMPORT_POOL(d);
    return 0;
}

/* ---- reading the snapshot's values ---- */

struct where {
    unsigned device;
    uint64_t entry;
};

static int need_int(struct cf_import *c, const struct cf_pk *dict, const char *key, struct where w,
                    int64_t *out)
{
    const struct cf_pk *v = cf_pk_get(dict, key);
    if (v == NULL || v->type != CF_PK_INT)
        return conv_fail(c, "device_traces[%u][%llu]: \"%s\" is %s, not an integer", w.device,
                         (unsigned long long)w.entry, key, v ? "of another type" : "missing");
    *out = v->i;
    return 0;
}

static int need_size(struct cf_import *c, const struct cf_pk *dict, const char *key, struct where w,
                     uint64_t *out)
{
    int64_t v = 0;
    if (need_int(c, dict, key, w, &v) != 0) return -1;
    if (v < 0 || (uint64_t)v > CF_RP_MAX_SIZE)
        return conv_fail(c, "device_traces[%u][%llu]: \"%s\" = %lld is not a size", w.device,
                         (unsigned long long)w.entry, key, (long long)v);
    *out = (uint64_t)v;
    return 0;
}

/* An optional integer: def when absent or of another type. */
static int64_t opt_int(const struct cf_pk *dict, const char *key, int64_t def)
{
    const struct cf_pk *v = cf_pk_get(dict, key);
    return v && v->type == CF_PK_INT ? v->i : def;
}

static int time_of(struct cf_import *c, const struct cf_pk *entry, struct where w, uint64_t *t_us)
{
    int64_t t = 0;
    if (need_int(c, entry, "time_us", w, &t) != 0) return -1;
    if (t < 0 || t > INT64_MAX / 1000)
        return conv_fail(c, "device_traces[%u][%llu]: time_us %lld out of range", w.device,
                         (unsigned long long)w.entry, (long long)t);
    *t_us = (uint64_t)t;
    return 0;
}

/* The earliest time of any entry: the trace's origin. */
static int find_start(struct cf_import *c, const struct cf_pk *traces)
{
    c->t0_us = UINT64_MAX;
    for (unsigned d = 0; d < traces->len; d++) {
        const struct cf_pk *t = traces->items[d];
        if (t->type != CF_PK_LIST) return conv_fail(c, "device_traces[%u] is not a list", d);
        for (uint64_t i = 0; i < t->len; i++) {
            uint64_t us = 0;
            if (t->items[i]->type != CF_PK_DICT)
                return conv_fail(c, "device_traces[%u][%llu] is not a dict", d,
                                 (unsigned long long)i);
            if (time_of(c, t->items[i], (struct where){d, i}, &us) != 0) return -1;
            if (us < c->t0_us) c->t0_us = us;
            if (us > c->t_end_us) c->t_end_us = us;
        }
    }
    if (c->t0_us == UINT64_MAX) c->t0_us = c->t_end_us = 0;
    return 0;
}

/* ---- one device ---- */

struct device_state {
    struct cf_u64map live;          /* address -> size */
    struct cf_import_events before; /* allocations live before the window */
    int64_t net, lowest;            /* reserved bytes changed in the window, and the lowest point */
};

static int entry(struct cf_import *c, struct device_state *s, const struct cf_pk *e, struct where w)
{
    unsigned d = w.device;
    struct cf_import_events *de = &c->dev[d];
    const struct cf_pk *action = cf_pk_get(e, "action");
    uint64_t t = 0, addr = 0, size = 0;
    int64_t stream = 0;
    if (action == NULL || action->type != CF_PK_STR)
        return conv_fail(c, "device_traces[%u][%llu]: no \"action\" string", d,
                         (unsigned long long)w.entry);
    if (time_of(c, e, w, &t) != 0) return -1;
    if (cf_pk_is_str(action, "alloc")) {
        if (need_size(c, e, "addr", w, &addr) || need_size(c, e, "size", w, &size) ||
            need_int(c, e, "stream", w, &stream))
            return -1;
        if (cf_u64map_put(&s->live, addr, size) != 0) return conv_fail(c, "out of memory");
        c->allocs++;
        return add_alloc(c, de, d, t, addr, size, (uint64_t)stream, e);
    }
    if (cf_pk_is_str(action, "free_completed")) {
        if (need_size(c, e, "addr", w, &addr) || need_size(c, e, "size", w, &size)) return -1;
        if (!cf_u64map_del(&s->live, addr, NULL)) {
            /* Allocated before the window: live from its start. PyTorch
             * gives a free the stack of the allocation (unless
             * stacks="all", where it is the free's own). */
            if (add_alloc(c, &s->before, d, c->t0_us, addr, size, (uint64_t)opt_int(e, "stream", 0),
                          e) != 0)
                return -1;
            c->before_window++;
        }
        struct cf_import_event *x = add(c, de, d, t, CF_EV_FREE);
        if (x == NULL) return -1;
        x->e.api = CF_API_cudaFreeAsync;
        x->e.addr = addr;
        c->frees++;
        return 0;
    }
    bool grows = cf_pk_is_str(action, "segment_alloc") || cf_pk_is_str(action, "segment_map");
    bool shrinks = cf_pk_is_str(action, "segment_free") || cf_pk_is_str(action, "segment_unmap");
    if (grows || shrinks) {
        if (need_size(c, e, "size", w, &size) != 0) return -1;
        s->net += grows ? (int64_t)size : -(int64_t)size;
        if (s->net < s->lowest) s->lowest = s->net;
        struct cf_import_event *x = add(c, de, d, t, CF_EV_POOL);
        if (x == NULL) return -1;
        x->e.op = CF_POOL_RESERVED;
        x->e.pool = CF_IMPORT_POOL(d);
        x->reserved_delta = grows ? (int64_t)size : -(int64_t)size;
        return 0;
    }
    if (cf_pk_is_str(action, "oom")) {
        if (need_size(c, e, "size", w, &size) != 0) return -1;
        int64_t device_free = opt_int(e, "device_free", 0);
        uint32_t site = 0;
        if (site_of(c, e, &site) != 0) return -1;
        struct cf_import_event *x = add(c, de, d, t, CF_EV_ALLOC);
        if (x == NULL) return -1;
        x->e.site = site;
        x->e.api = CF_API_cudaMallocAsync;
        x->e.flags = CF_EVF_OOM;
        x->e.result = OOM_RESULT;
        x->e.size = size;
        x->e.pool = CF_IMPORT_POOL(d);
        x->e.v[0] = device_free > 0 ? (uint64_t)device_free : 0;
        c->ooms++;
        return 0;
    }
    /* free_requested (the free completes later), snapshot, and what newer
     * PyTorch versions add: nothing for the allocation stream. */
    if (!cf_pk_is_str(action, "free_requested") && !cf_pk_is_str(action, "snapshot")) c->skipped++;
    return 0;
}

/* What the snapshot's segments hold for device d at its end, and its live blocks. */
static int final_state(struct cf_import *c, const struct cf_pk *segments, unsigned d,
                       struct device_state *s, uint64_t *reserved)
{
    *reserved = 0;
    if (segments == NULL) return 0;
    if (segments->type != CF_PK_LIST) return conv_fail(c, "\"segments\" is not a list");
    for (uint64_t i = 0; i < segments->len; i++) {
        const struct cf_pk *seg = segments->items[i], *v;
        if (seg->type != CF_PK_DICT)
            return conv_fail(c, "segments[%llu] is not a dict", (unsigned long long)i);
        v = cf_pk_get(seg, "device");
        if (v == NULL || v->type != CF_PK_INT || v->i != (int64_t)d) continue;
        v = cf_pk_get(seg, "total_size");
        if (v && v->type == CF_PK_INT && v->i > 0) *reserved += (uint64_t)v->i;
        const struct cf_pk *blocks = cf_pk_get(seg, "blocks");
        if (blocks == NULL || blocks->type != CF_PK_LIST) continue;
        for (uint64_t k = 0; k < blocks->len; k++) {
            const struct cf_pk *b = blocks->items[k];
            const struct cf_pk *state = cf_pk_get(b, "state"), *addr = cf_pk_get(b, "address");
            const struct cf_pk *size = cf_pk_get(b, "requested_size");
            if (size == NULL || size->type != CF_PK_INT || size->i <= 0)
                size = cf_pk_get(b, "size");
            if (!cf_pk_is_str(state, "active_allocated") || addr == NULL ||
                addr->type != CF_PK_INT || size == NULL || size->type != CF_PK_INT ||
                size->i <= 0 || (uint64_t)size->i > CF_RP_MAX_SIZE)
                continue;
            if (cf_u64map_get(&s->live, (uint64_t)addr->i)) continue; /* allocated in the window */
            if (add_alloc(c, &s->before, d, c->t0_us, (uint64_t)addr->i, (uint64_t)size->i,
                          (uint64_t)opt_int(seg, "stream", 0), b) != 0)
                return -1;
            c->before_window++;
        }
    }
    return 0;
}

static int device(struct cf_import *c, unsigned d, const struct cf_pk *trace,
                  const struct cf_pk *segments)
{
    struct device_state s = {0};
    int rc = 0;
    for (uint64_t i = 0; i < trace->len && rc == 0; i++)
        rc = entry(c, &s, trace->items[i], (struct where){d, i});
    uint64_t reserved_end = 0;
    if (rc == 0) rc = final_state(c, segments, d, &s, &reserved_end);
    /* Reserved at the start: the end minus the window's changes, and never
     * below what the window's releases need. */
    int64_t start = (int64_t)reserved_end - s.net;
    if (start < -s.lowest) start = -s.lowest;
    struct cf_import_events body = c->dev[d], *de = &c->dev[d];
    *de = (struct cf_import_events){0};
    struct cf_import_event *x = rc == 0 ? add(c, de, d, c->t0_us, CF_EV_POOL) : NULL;
    if (x) {
        x->e.op = CF_POOL_SEEN;
        x->e.flags = 2; /* created by the program */
        x->e.pool = CF_IMPORT_POOL(d);
        x = add(c, de, d, c->t0_us, CF_EV_POOL);
    }
    if (x) {
        x->e.op = CF_POOL_RESERVED;
        x->e.pool = CF_IMPORT_POOL(d);
        x->e.v[0] = (uint64_t)start;
    }
    /* The device's events: the pool, what was live before, then the window. */
    for (size_t i = 0; rc == 0 && x && i < s.before.n + body.n; i++) {
        const struct cf_import_event *from =
            i < s.before.n ? &s.before.v[i] : &body.v[i - s.before.n];
        struct cf_import_event *to = add(c, de, d, from->t_us, from->e.type);
        if (to == NULL) break;
        *to = *from;
        if (to->e.type == CF_EV_POOL && to->e.op == CF_POOL_RESERVED) {
            start += to->reserved_delta;
            to->e.v[0] = (uint64_t)start;
        }
    }
    if (x == NULL || c->error[0]) rc = -1;
    free(s.before.v);
    free(body.v);
    cf_u64map_free(&s.live);
    return rc;
}

/* ---- what each device's pool stands for ---- */

/* A private pool (CUDA graphs, torch.cuda.MemPool) its segments name: their
 * segment_pool_id, a pair that is (0, 0) for the allocator's own pools. */
static bool private_pool(const struct cf_pk *seg, int64_t id[2])
{
    const struct cf_pk *v = cf_pk_get(seg, "segment_pool_id");
    if (v == NULL || (v->type != CF_PK_TUPLE && v->type != CF_PK_LIST) || v->len != 2) return false;
    for (int k = 0; k < 2; k++) {
        if (v->items[k]->type != CF_PK_INT) return false;
        id[k] = v->items[k]->i;
    }
    return id[0] != 0 || id[1] != 0;
}

/* ", private pools (1, 0) (2, 0)" for device d: the first few, then "...". */
static void private_pools(const struct cf_pk *segments, unsigned d, char *out, size_t n)
{
    int64_t seen[4][2];
    unsigned nseen = 0;
    bool more = false;
    out[0] = '\0';
    for (uint64_t i = 0; segments && segments->type == CF_PK_LIST && i < segments->len; i++) {
        const struct cf_pk *seg = segments->items[i];
        int64_t id[2];
        if (opt_int(seg, "device", -1) != (int64_t)d || !private_pool(seg, id)) continue;
        unsigned k = 0;
        while (k < nseen && (seen[k][0] != id[0] || seen[k][1] != id[1]))
            k++;
        if (k < nseen) continue;
        if (nseen == 4) {
            more = true;
            continue;
        }
        seen[nseen][0] = id[0];
        seen[nseen++][1] = id[1];
    }
    size_t len = 0;
    for (unsigned k = 0; k < nseen && len < n; k++)
        len += (size_t)snprintf(out + len, n - len, "%s(%lld, %lld)",
                                k ? " " : ", with private pools ", (long long)seen[k][0],
                                (long long)seen[k][1]);
    if (more && len < n) snprintf(out + len, n - len, " ...");
}

/* The pool of every device is PyTorch's caching allocator; the snapshot's
 * allocator settings and segments say more where they have it. */
static void name_pools(struct cf_import *c, const struct cf_pk *root)
{
    const struct cf_pk *exp =
        cf_pk_get(cf_pk_get(root, "allocator_settings"), "expandable_segments");
    bool expandable = exp && (exp->type == CF_PK_BOOL || exp->type == CF_PK_INT) && exp->i;
    for (unsigned d = 0; d < c->ndevs; d++) {
        char priv[96];
        private_pools(cf_pk_get(root, "segments"), d, priv, sizeof priv);
        snprintf(c->pool_name[d], sizeof c->pool_name[d], "PyTorch caching allocator%s%s%s%s",
                 expandable || priv[0] ? " (" : "", expandable ? "expandable segments" : "",
                 expandable ? priv
                 : priv[0]  ? priv + 2
                            : "",
                 expandable || priv[0] ? ")" : "");
    }
}

/* ---- the command ---- */

static int convert(struct cf_import *c, const struct cf_pk *root)
{
    if (root->type != CF_PK_DICT) return conv_fail(c, "the snapshot is not a dict");
    const struct cf_pk *traces = cf_pk_get(root, "device_traces");
    if (traces == NULL || traces->type != CF_PK_LIST)
        return conv_fail(c, "no \"device_traces\" list (was the history recorded? "
                            "torch.cuda.memory._record_memory_history)");
    if (traces->len > CF_RP_MAX_DEVICES)
        return conv_fail(c, "%llu devices (at most %d)", (unsigned long long)traces->len,
                         CF_RP_MAX_DEVICES);
    if (find_start(c, traces) != 0) return -1;
    c->ndevs = (unsigned)traces->len;
    const struct cf_pk *segments = cf_pk_get(root, "segments");
    for (unsigned d = 0; d < c->ndevs; d++)
        if (device(c, d, traces->items[d], segments) != 0) return -1;
    name_pools(c, root);
    return 0;
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
    char *text;
    if (cf_input_read(path, MAX_FILE, NULL, &text, len) != 0) return -1;
    if (*len > MAX_FILE) {
        fprintf(stderr, "cudafrag: %s: larger than 4 GiB\n", path);
        free(text);
        return -1;
    }
    *data = (uint8_t *)text;
    return 0;
}

static void default_output(const char *in, char *out, size_t n)
{
    size_t len = strlen(in);
    if (len > 7 && strcmp(in + len - 7, ".pickle") == 0) len -= 7;
    snprintf(out, n, "%.*s.cftrace", (int)len, in);
}

/* The snapshot and -o: 0, -1 after --help, or the usage status. */
static int parse(int argc, char **argv, const char **in, const char **out)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":ho:", longopts, &started)) != -1;) {
        if (opt == 'o') {
            *out = optarg;
        } else if (opt == 'h') {
            cf_help_print(stdout, "import");
            return -1;
        } else {
            return EXIT_USAGE;
        }
    }
    if (optind == argc) return cf_usage_error("import", "needs a snapshot file");
    if (argc - optind > 1) return cf_usage_error("import", "unexpected \"%s\"", argv[optind + 1]);
    *in = argv[optind];
    return 0;
}

int cf_cmd_import(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int prc = parse(argc, argv, &in, &out);
    if (prc) return prc < 0 ? 0 : prc;
    char path[4096];
    if (out == NULL) default_output(in, path, sizeof path);
    if (cf_out_not_input("import", out ? out : path, (char *const *)&in, 1) != 0) return EXIT_USAGE;
    uint8_t *data;
    size_t len;
    if (read_file(in, &data, &len) != 0) return 1;
    struct cf_pk_doc doc;
    static struct cf_import c;
    memset(&c, 0, sizeof c);
    int rc = 1;
    if (cf_pk_parse(data, len, &doc) != 0)
        fprintf(stderr, "cudafrag: %s is not a snapshot cudafrag reads: %s\n", in, doc.error);
    else if (convert(&c, doc.root) != 0)
        fprintf(stderr, "cudafrag: %s: %s\n", in, c.error);
    else
        rc = cf_import_write_trace(&c, in, out ? out : path);
    if (rc == 0)
        printf("%s: %llu allocations (%llu live before the history window), %llu frees, "
               "%llu out of memory, on %u device(s)%s\n",
               out ? out : path, (unsigned long long)(c.allocs + c.before_window),
               (unsigned long long)c.before_window, (unsigned long long)c.frees,
               (unsigned long long)c.ooms, c.ndevs,
               c.skipped ? "; entries of unknown actions skipped" : "");
    for (unsigned d = 0; d < CF_RP_MAX_DEVICES; d++)
        free(c.dev[d].v);
    cf_sf_free(&c.sites);
    cf_pk_free(&doc);
    free(data);
    return rc;
}
