/* The analysis of `cudafrag advise`: which framework made the trace's
 * allocations, the run's own allocator setting, the grid of settings run
 * through the replay models. JAX's settings are advise_jax.c's, the ranking
 * advise_rank.c's, the output advise_out.c's. */
#include "cli/advise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cache_use.h"
#include "cli/replay.h"
#include "config/config.h"
#include "record/event.h"
#include "record/record.h"
#include "replay/caches.h"
#include "report/snapshot.h"

struct cf_adv_site {
    uint64_t allocs;
    enum cf_adv_framework framework;
    char module[128];
};

/* ---- which framework made the allocations: the modules on their stacks ---- */

static struct cf_adv_site *site_slot(struct cf_advise *a, uint32_t id)
{
    uint64_t *v = cf_u64map_get(&a->site_slot, id);
    if (v) return &a->sites[*v - 1];
    if (a->nsites == a->site_cap) {
        uint32_t cap = a->site_cap ? 2 * a->site_cap : 64;
        struct cf_adv_site *grown = realloc(a->sites, cap * sizeof *grown);
        if (grown == NULL) return NULL;
        a->sites = grown;
        a->site_cap = cap;
    }
    if (cf_u64map_put(&a->site_slot, id, a->nsites + 1u) != 0) return NULL;
    struct cf_adv_site *s = &a->sites[a->nsites++];
    memset(s, 0, sizeof *s);
    return s;
}

/* PyTorch's allocator lives in libc10_cuda.so (caches.c); XLA's client in
 * modules named for XLA or JAX (xla_extension.so, jaxlib's plugins). */
static enum cf_adv_framework framework_of(const char *base)
{
    const struct cf_rp_cache *c = cf_rp_cache_of(base);
    if (c && strcmp(c->framework, "PyTorch") == 0) return CF_ADV_PYTORCH;
    if (strcasestr(base, "xla") || strcasestr(base, "jax")) return CF_ADV_JAX;
    return CF_ADV_UNKNOWN;
}

static void site_frames(struct cf_adv_site *s, const struct cf_event *e)
{
    char path[512];
    for (uint32_t f = 0; f < e->nframes && s->framework == CF_ADV_UNKNOWN; f++) {
        if (cf_replay_module(e->frames[f], path, sizeof path) != 0) continue;
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        s->framework = framework_of(base);
        if (s->framework != CF_ADV_UNKNOWN) snprintf(s->module, sizeof s->module, "%.127s", base);
    }
}

void cf_advise_event(const struct cf_event *e, void *ctx)
{
    struct cf_advise *a = ctx;
    if (a->cap.start_ns == 0) a->cap.start_ns = cf_rec.start_ns;
    cf_rp_capture_event(&a->cap, e);
    cf_cache_use_event(&a->cache, e);
    bool alloc = e->type == CF_EV_ALLOC && e->result == 0 && e->size != 0;
    if (alloc) a->allocs++;
    if (a->failed || e->site == 0 || (e->type != CF_EV_SITE && !alloc)) return;
    struct cf_adv_site *s = site_slot(a, e->site);
    if (s == NULL)
        a->failed = true;
    else if (e->type == CF_EV_SITE)
        site_frames(s, e);
    else
        s->allocs++;
}

void cf_advise_blocks_event(const struct cf_event *e, void *ctx)
{
    struct cf_advise *a = ctx;
    if (!a->decided) {
        const char *blocks = cf_opt_str(CF_OPT_BLOCKS);
        a->decided = true;
        a->not_blocks = blocks == NULL || blocks[0] == '\0';
    }
    if (!a->not_blocks) cf_advise_event(e, a);
}

/* The framework most allocations came through; JAX only where PyTorch made none. */
static void find_framework(struct cf_advise *a)
{
    uint64_t n[3] = {0};
    const char *module[3] = {NULL};
    for (uint32_t i = 0; i < a->nsites; i++) {
        const struct cf_adv_site *s = &a->sites[i];
        n[s->framework] += s->allocs;
        if (s->allocs && module[s->framework] == NULL) module[s->framework] = s->module;
    }
    if (a->imported) {
        a->framework = CF_ADV_PYTORCH;
        a->framework_allocs = a->allocs;
        snprintf(a->framework_module, sizeof a->framework_module, "a PyTorch memory snapshot");
        return;
    }
    enum cf_adv_framework f = n[CF_ADV_PYTORCH] ? CF_ADV_PYTORCH
                              : n[CF_ADV_JAX]   ? CF_ADV_JAX
                                                : CF_ADV_UNKNOWN;
    a->framework = f;
    a->framework_allocs = n[f];
    if (f != CF_ADV_UNKNOWN)
        snprintf(a->framework_module, sizeof a->framework_module, "%s", module[f]);
}

/* ---- settings as PyTorch reads them, and as the models take them ---- */

/* The knobs PyTorch's variable sets that the pytorch model has, in the order a
 * setting is written; measured: its error against an H200 is documented. */
static const struct {
    const char *name;
    bool measured;
} pt_knobs[] = {
    {"expandable_segments", true},        {"max_split_size_mb", false},
    {"roundup_power2_divisions", false},  {"garbage_collection_threshold", false},
    {"max_non_split_rounding_mb", false},
};
#define NPT_KNOBS (sizeof pt_knobs / sizeof pt_knobs[0])

/* conf, changed and unmeasured from the configuration's knobs. */
static void describe(struct cf_adv_setting *s)
{
    const struct cf_rp_config *c = &s->config;
    s->conf[0] = '\0';
    s->changed = 0;
    s->unmeasured = false;
    if (c->def == &cf_rp_model_async_pool) {
        snprintf(s->conf, sizeof s->conf, "backend:cudaMallocAsync");
        s->changed = 1;
        return;
    }
    struct cf_rp_config def;
    cf_rp_config_default(&def, c->def);
    for (unsigned k = 0; k < NPT_KNOBS; k++) {
        int i = cf_rp_knob_index(c->def, pt_knobs[k].name, strlen(pt_knobs[k].name));
        if (i < 0 || memcmp(&c->val[i], &def.val[i], sizeof c->val[i]) == 0) continue;
        char v[32];
        const struct cf_rp_knob_def *kd = &c->def->knobs[i];
        if (kd->type == CF_RP_KNOB_BOOL)
            snprintf(v, sizeof v, "%s", c->val[i].u ? "True" : "False");
        else if (kd->type == CF_RP_KNOB_REAL)
            snprintf(v, sizeof v, "%g", c->val[i].d);
        else
            snprintf(v, sizeof v, "%llu", (unsigned long long)c->val[i].u);
        size_t len = strlen(s->conf);
        snprintf(s->conf + len, sizeof s->conf - len, "%s%s:%s", len ? "," : "", kd->name, v);
        s->changed++;
        s->unmeasured |= !pt_knobs[k].measured;
    }
}

/* The next item of a PyTorch setting ("a:b,c:[d:e,f:g]"): commas inside
 * brackets belong to the item. Returns its length, 0 at the end. */
static size_t next_item(const char **p)
{
    while (**p == ',' || **p == ' ')
        (*p)++;
    int depth = 0;
    size_t len = 0;
    for (; (*p)[len] && ((*p)[len] != ',' || depth > 0); len++)
        depth += (*p)[len] == '[' ? 1 : (*p)[len] == ']' ? -1 : 0;
    return len;
}

static void not_modelled(struct cf_advise *a, const char *item, size_t len, const char *why)
{
    size_t used = strlen(a->not_modelled);
    snprintf(a->not_modelled + used, sizeof a->not_modelled - used, "%s%.*s%s%s", used ? ", " : "",
             (int)len, item, why ? " " : "", why ? why : "");
}

/* The model and knobs of the user's setting; what the models cannot take goes
 * to a->not_modelled. */
static void parse_own(struct cf_advise *a, struct cf_adv_setting *s)
{
    char err[256], key[64], value[64];
    bool async = false;
    cf_rp_config_default(&s->config, &cf_rp_model_pytorch);
    for (const char *p = a->own_conf;;) {
        size_t len = next_item(&p);
        if (len == 0) break;
        size_t klen = strcspn(p, ":");
        if (klen >= len || klen >= sizeof key || len - klen - 1 >= sizeof value) {
            not_modelled(a, p, len, NULL);
            p += len;
            continue;
        }
        snprintf(key, sizeof key, "%.*s", (int)klen, p);
        snprintf(value, sizeof value, "%.*s", (int)(len - klen - 1), p + klen + 1);
        if (strcmp(key, "backend") == 0) {
            async = strcmp(value, "native") != 0;
        } else if (cf_rp_knob_index(&cf_rp_model_pytorch, key, klen) < 0 ||
                   strcmp(key, "memory_fraction") == 0) {
            not_modelled(a, p, len, NULL);
        } else if (cf_rp_config_set(&s->config, key, klen, value, strlen(value), err, sizeof err) !=
                   0) {
            not_modelled(a, p, len, "(the model takes one value)");
        }
        p += len;
    }
    if (async) {
        if (describe(s), s->changed)
            not_modelled(a, s->conf, strlen(s->conf), "(the cudaMallocAsync backend ignores it)");
        cf_rp_config_default(&s->config, &cf_rp_model_async_pool);
    }
    describe(s);
}

bool cf_adv_recorded(const char *name, char *out, size_t n)
{
    char line[2048];
    size_t len = strlen(name);
    for (const char *p = cf_replay_header_next("framework_env", NULL, line, sizeof line); p;
         p = cf_replay_header_next("framework_env", p, line, sizeof line))
        if (strncmp(line, name, len) == 0 && line[len] == '=') {
            snprintf(out, n, "%s", line + len + 1);
            return true;
        }
    return false;
}

/* From CUDAFRAG_BLOCKS of a trace older than framework_env: "VAR=VALUE (user's)". */
static bool from_blocks(const char *blocks, const char *name, char *out, size_t n)
{
    const char *p = strstr(blocks, name);
    if (p == NULL || p[strlen(name)] != '=') return false;
    p += strlen(name) + 1;
    const char *end = strstr(p, " (user's)");
    size_t len = end ? (size_t)(end - p) : strcspn(p, ";");
    snprintf(out, n, "%.*s", (int)len, p);
    return true;
}

/* PyTorch reads PYTORCH_ALLOC_CONF first where it knows it, else
 * PYTORCH_CUDA_ALLOC_CONF (every version reads that one). */
static void find_own_setting(struct cf_advise *a)
{
    static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
    char names[256];
    snprintf(a->var, sizeof a->var, "PYTORCH_CUDA_ALLOC_CONF");
    a->own_conf[0] = '\0';
    if (cf_replay_header("framework_vars", names, sizeof names) == 0) {
        a->own_from = "recorded";
        for (unsigned i = 0; i < 2; i++)
            if (cf_adv_recorded(vars[i], a->own_conf, sizeof a->own_conf)) {
                snprintf(a->var, sizeof a->var, "%s", vars[i]);
                return;
            }
        return;
    }
    for (unsigned i = 0; i < 2; i++)
        if (from_blocks(a->blocks, vars[i], a->own_conf, sizeof a->own_conf)) {
            snprintf(a->var, sizeof a->var, "%s", vars[i]);
            a->own_from = "blocks";
            return;
        }
    a->own_from = "not recorded";
}

/* ---- the grid ---- */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* max_split_size_mb to try: the median and the 90th percentile of the requests
 * the large pool serves (above 1 MiB), in MiB, above 20 as PyTorch asks. */
static unsigned split_sizes(const struct cf_rp_stream *st, uint64_t out[2])
{
    uint64_t *sizes = malloc((st->nallocs + 1u) * sizeof *sizes);
    size_t n = 0;
    if (sizes == NULL) return 0;
    for (uint32_t i = 0; i < st->nops; i++)
        if (!st->ops[i].free && st->ops[i].size > (1u << 20)) sizes[n++] = st->ops[i].size;
    unsigned k = 0;
    if (n) {
        qsort(sizes, n, sizeof *sizes, cmp_u64);
        uint64_t q[2] = {sizes[n / 2], sizes[n * 9 / 10]};
        for (unsigned j = 0; j < 2; j++) {
            uint64_t mib = (q[j] + (1u << 20) - 1) >> 20;
            if (mib < 21) mib = 21;
            if (k == 0 || out[k - 1] != mib) out[k++] = mib;
        }
    }
    free(sizes);
    return k;
}

void cf_adv_add(struct cf_adv_device *d, const struct cf_adv_setting *s)
{
    for (unsigned i = 0; i < d->nsettings; i++)
        if (strcmp(d->settings[i].conf, s->conf) == 0) return;
    if (d->nsettings < CF_ADV_MAX_SETTINGS) d->settings[d->nsettings++] = *s;
}

static void add_pytorch(struct cf_adv_device *d, bool expandable, uint64_t split_mib,
                        unsigned divisions)
{
    struct cf_adv_setting s = {0};
    char v[32], err[128];
    cf_rp_config_default(&s.config, &cf_rp_model_pytorch);
    if (expandable)
        cf_rp_config_set(&s.config, "expandable_segments", 19, "True", 4, err, sizeof err);
    if (split_mib) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)split_mib);
        cf_rp_config_set(&s.config, "max_split_size_mb", 17, v, strlen(v), err, sizeof err);
    }
    if (divisions) {
        snprintf(v, sizeof v, "%u", divisions);
        cf_rp_config_set(&s.config, "roundup_power2_divisions", 24, v, strlen(v), err, sizeof err);
    }
    describe(&s);
    cf_adv_add(d, &s);
}

/* The defaults first, the run's own setting, then the grid: expandable
 * segments x max_split_size_mb x roundup_power2_divisions, and the
 * cudaMallocAsync backend. garbage_collection_threshold acts only with a
 * memory fraction, which a variable cannot set: not swept. The report's
 * short grid: the defaults, expandable segments and the backend. */
static void plan(struct cf_advise *a, struct cf_adv_device *d)
{
    static const unsigned divisions[] = {0, 4, 8};
    uint64_t split[3] = {0};
    struct cf_adv_setting own = {0};
    add_pytorch(d, false, 0, 0);
    parse_own(a, &own);
    cf_adv_add(d, &own);
    unsigned nsplit = a->full ? 1 + split_sizes(d->stream, split + 1) : 1;
    for (unsigned e = 0; e < 2; e++)
        for (unsigned m = 0; m < nsplit; m++)
            for (unsigned v = 0; v < (a->full ? 3u : 1u); v++)
                add_pytorch(d, e, split[m], divisions[v]);
    struct cf_adv_setting async = {0};
    cf_rp_config_default(&async.config, &cf_rp_model_async_pool);
    describe(&async);
    cf_adv_add(d, &async);
    for (unsigned i = 0; i < d->nsettings; i++)
        if (strcmp(d->settings[i].conf, own.conf) == 0) d->own = (int)i;
}

static void device_memory(const struct cf_advise *a, struct cf_adv_device *d)
{
    const struct cf_device_stats *ds = &cf_rec.dev[d->stream->device];
    d->device_memory = CF_RP_UNLIMITED;
    if (a->device_memory) {
        d->device_memory = a->device_memory;
        d->memory_from = "option";
    } else if (ds->total_bytes) {
        d->device_memory = ds->total_bytes;
        d->memory_from = "trace";
    }
}

static int run_device(struct cf_advise *a, struct cf_adv_device *d)
{
    d->settings = calloc(CF_ADV_MAX_SETTINGS, sizeof *d->settings);
    d->rank = calloc(CF_ADV_MAX_SETTINGS, sizeof *d->rank);
    if (d->settings == NULL || d->rank == NULL) return -1;
    if (a->framework == CF_ADV_JAX)
        cf_adv_jax_plan(a, d);
    else
        plan(a, d);
    struct cf_rp_run_opts ro = {.device_memory = d->device_memory};
    for (unsigned i = 0; i < d->nsettings; i++) {
        struct cf_adv_setting *s = &d->settings[i];
        cf_rp_run(d->stream, &s->config, &ro, &s->result);
        s->result.config = &s->config;
    }
    cf_adv_decide(d, a->framework == CF_ADV_JAX);
    return 0;
}

/* A trace whose allocations are PyTorch's cache segments, by the replay's own
 * rule (cache_use.c): replaying them through the models would cache twice. */
static bool cache_segments(struct cf_advise *a)
{
    struct cf_rp_device_table devs[CF_RP_MAX_DEVICES];
    struct cf_rp_table t = {.blocks = a->blocks, .devs = devs};
    for (int d = 0; d < CF_RP_MAX_DEVICES; d++)
        if (a->cap.dev[d] && a->cap.dev[d]->nallocs)
            devs[t.ndevs++] = (struct cf_rp_device_table){.stream = a->cap.dev[d]};
    cf_cache_use_find(&a->cache, &t);
    return !a->imported && t.cache.framework != NULL;
}

int cf_advise_run(struct cf_advise *a, const char *trace, const struct cf_snap *snap)
{
    char value[64];
    a->trace = trace;
    snprintf(a->program, sizeof a->program, "%.255s", snap->program);
    snprintf(a->blocks, sizeof a->blocks, "%s", snap->blocks ? snap->blocks : "");
    a->imported = cf_replay_header("imported", value, sizeof value) == 0;
    if (a->failed || a->cap.failed) {
        fprintf(stderr, "cudafrag: out of memory while reading %s\n", trace);
        return -1;
    }
    find_framework(a);
    if (a->framework == CF_ADV_JAX) {
        struct cf_adv_setting own;
        snprintf(a->var, sizeof a->var, "XLA_PYTHON_CLIENT_PREALLOCATE, *_MEM_FRACTION");
        cf_adv_jax_own(a, &own); /* the text names it even with no device to advise on */
        a->segments = !cf_adv_jax_block_level(a);
    } else {
        find_own_setting(a);
        a->segments = cache_segments(a);
    }
    if (a->segments) return 0;
    for (int dv = 0; dv < CF_RP_MAX_DEVICES; dv++) {
        struct cf_rp_stream *s = a->cap.dev[dv];
        if (s == NULL || s->nallocs == 0) continue;
        a->devs[a->ndevs].stream = s;
        device_memory(a, &a->devs[a->ndevs++]);
    }
    /* One variable sets JAX's fraction for every GPU of the process. */
    if (a->framework == CF_ADV_JAX) a->jax_fraction = cf_adv_jax_fraction(a);
    for (unsigned i = 0; i < a->ndevs; i++) {
        a->not_modelled[0] = '\0';
        if (run_device(a, &a->devs[i]) != 0) {
            fprintf(stderr, "cudafrag: out of memory while replaying %s\n", trace);
            return -1;
        }
    }
    if (a->framework == CF_ADV_JAX) cf_adv_decide_jointly(a);
    return 0;
}

struct cf_advise *cf_advise_new(bool full, uint64_t device_memory)
{
    struct cf_advise *a = calloc(1, sizeof *a);
    if (a == NULL) return NULL;
    cf_rp_capture_init(&a->cap, 0);
    a->full = full;
    a->device_memory = device_memory;
    return a;
}

void cf_advise_free(struct cf_advise *a)
{
    if (a == NULL) return;
    for (unsigned i = 0; i < a->ndevs; i++) {
        free(a->devs[i].settings);
        free(a->devs[i].rank);
    }
    cf_rp_capture_fini(&a->cap);
    cf_u64map_free(&a->site_slot);
    cf_cache_use_free(&a->cache);
    free(a->sites);
    free(a);
}
