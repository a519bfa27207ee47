/* The what-if analysis: options, the trace read once into per-device streams,
 * every model configuration run over each stream, the table filled; and the
 * replay command, which prints it. The models and the table are the replay
 * library's (src/replay/); this file only connects them to the trace and the
 * command line. The HTML report runs the same analysis (whatif.h). */
#include "cli/whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cache_use.h"
#include "cli/cmdline.h"
#include "cli/replay.h"
#include "config/config.h"
#include "record/record.h"
#include "replay/model.h"
#include "replay/run.h"
#include "replay/stream.h"
#include "replay/table.h"
#include "report/snapshot.h"

#define EXIT_USAGE  2
#define MAX_CONFIGS 256
#define MAX_SWEEPS  8
#define MAX_VALUES  64

struct sweep_spec {
    const struct cf_rp_model_def *model; /* NULL: every model that has the knob */
    char knob[48];
    char *values[MAX_VALUES];
    unsigned nvalues;
};

struct options {
    uint64_t device_memory; /* 0: from the trace */
    uint32_t check_every;   /* 0: no invariant checks */
    struct cf_rp_config base[MAX_CONFIGS];
    unsigned nbase;
    struct sweep_spec sweeps[MAX_SWEEPS];
    unsigned nsweeps;
};

/* The rows of the table: the models as given, then each sweep's settings. */
struct plan {
    struct cf_rp_config rows[MAX_CONFIGS];
    unsigned nrows;
    struct cf_rp_sweep sweeps[MAX_CONFIGS];
    unsigned nsweeps;
};

struct cf_whatif {
    struct options o;
    struct plan p;
    struct cf_rp_capture cap;
    struct cf_cache_use cache;
    struct cf_rp_device_table devs[CF_RP_MAX_DEVICES];
    struct cf_rp_table t;
};

static void list_models(void)
{
    for (unsigned i = 0; i < cf_rp_nmodels; i++) {
        const struct cf_rp_model_def *d = cf_rp_models[i];
        printf("%s\n    %s\n", d->name, d->summary);
        for (unsigned k = 0; k < d->nknobs; k++)
            printf("    %s (default %s): %s\n", d->knobs[k].name, d->knobs[k].def, d->knobs[k].doc);
    }
}

/* "[MODEL:]KNOB=V1,V2,...": the values stay in arg, split in place. */
static int parse_sweep(char *arg, struct sweep_spec *w, char *err, size_t n)
{
    char *eq = strchr(arg, '='), *colon = strchr(arg, ':');
    if (eq == NULL || eq[1] == '\0') {
        snprintf(err, n, "--sweep \"%s\": expected [MODEL:]KNOB=V1,V2,...", arg);
        return -1;
    }
    *eq = '\0';
    char *knob = arg;
    if (colon && colon < eq) {
        w->model = cf_rp_model_find(arg, (size_t)(colon - arg));
        if (w->model == NULL) {
            snprintf(err, n, "--sweep: unknown model \"%.*s\"", (int)(colon - arg), arg);
            return -1;
        }
        knob = colon + 1;
    }
    if (strlen(knob) == 0 || strlen(knob) >= sizeof w->knob) {
        snprintf(err, n, "--sweep: bad knob name \"%s\"", knob);
        return -1;
    }
    snprintf(w->knob, sizeof w->knob, "%s", knob);
    for (char *v = eq + 1, *next; v; v = next) {
        next = strchr(v, ',');
        if (next) *next++ = '\0';
        if (w->nvalues == MAX_VALUES) {
            snprintf(err, n, "--sweep %s: at most %d values", w->knob, MAX_VALUES);
            return -1;
        }
        w->values[w->nvalues++] = v;
    }
    return 0;
}

int cf_whatif_option(struct cf_whatif *w, int opt, const char *v, const char *sub)
{
    struct options *o = &w->o;
    char err[256];
    switch (opt) {
    case CF_WI_DEVICE_MEMORY:
        if (cf_parse_size(v, 1, UINT64_MAX - 1, &o->device_memory) != 0)
            return cf_usage_error(sub,
                                  "--device-memory \"%s\": expected a size (digits with an "
                                  "optional K, M, G or T suffix)",
                                  v);
        return 1;
    case CF_WI_MODEL:
        if (o->nbase == MAX_CONFIGS) return cf_usage_error(sub, "too many models");
        if (cf_rp_config_parse(v, &o->base[o->nbase++], err, sizeof err) != 0)
            return cf_usage_error(sub, "%s", err);
        return 1;
    case CF_WI_SWEEP:
        if (o->nsweeps == MAX_SWEEPS) return cf_usage_error(sub, "too many sweeps");
        if (parse_sweep((char *)v, &o->sweeps[o->nsweeps++], err, sizeof err) != 0)
            return cf_usage_error(sub, "%s", err);
        return 1;
    default:
        return 0;
    }
}

void cf_whatif_set_check(struct cf_whatif *w, uint32_t every)
{
    w->o.check_every = every;
}

struct command {
    const char *trace;
    bool json;
};

/* 0, 1 when done (--models, --help), or EXIT_USAGE. */
static int parse(int argc, char **argv, struct cf_whatif *w, struct command *c)
{
    enum { OPT_MODELS = CF_OPT_LONG, OPT_JSON, OPT_CHECK };
    static const struct option longopts[] = {CF_WHATIF_LONGOPTS,
                                             {"models", no_argument, NULL, OPT_MODELS},
                                             {"json", no_argument, NULL, OPT_JSON},
                                             {"check", optional_argument, NULL, OPT_CHECK},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    int64_t n = 1;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        int rc = cf_whatif_option(w, opt, optarg, "replay");
        if (rc == EXIT_USAGE) return rc;
        if (rc == 1) continue;
        if (opt == OPT_MODELS) {
            list_models();
            return 1;
        } else if (opt == 'h') {
            cf_help_print(stdout, "replay");
            return 1;
        } else if (opt == OPT_JSON) {
            c->json = true;
        } else if (opt == OPT_CHECK) {
            if (optarg && cf_parse_int(optarg, 1, UINT32_MAX, &n) != 0)
                return cf_usage_error("replay", "--check=%s: expected --check=N, N from 1", optarg);
            cf_whatif_set_check(w, (uint32_t)n);
        } else {
            return EXIT_USAGE;
        }
    }
    if (optind == argc) return cf_usage_error("replay", "needs a trace file");
    c->trace = argv[optind];
    if (argc - optind > 1) return cf_usage_error("replay", "unexpected \"%s\"", argv[optind + 1]);
    return 0;
}

static int add_sweep(struct plan *p, const struct options *o, unsigned base,
                     const struct sweep_spec *w, const char *sub)
{
    char err[256];
    if (p->nrows + w->nvalues > MAX_CONFIGS)
        return cf_usage_error(sub, "too many settings to sweep");
    struct cf_rp_sweep *s = &p->sweeps[p->nsweeps++];
    *s = (struct cf_rp_sweep){.base = base, .first = p->nrows, .count = w->nvalues};
    snprintf(s->knob, sizeof s->knob, "%s", w->knob);
    for (unsigned k = 0; k < w->nvalues; k++) {
        struct cf_rp_config *c = &p->rows[p->nrows++];
        *c = o->base[base];
        if (cf_rp_config_set(c, w->knob, strlen(w->knob), w->values[k], strlen(w->values[k]), err,
                             sizeof err) != 0)
            return cf_usage_error(sub, "--sweep: %s", err);
    }
    return 0;
}

int cf_whatif_plan(struct cf_whatif *w, const char *sub)
{
    struct plan *p = &w->p;
    struct options *o = &w->o;
    if (o->nbase == 0)
        for (unsigned i = 0; i < cf_rp_nmodels; i++)
            if (!cf_rp_models[i]->on_request)
                cf_rp_config_default(&o->base[o->nbase++], cf_rp_models[i]);
    for (unsigned i = 0; i < o->nbase; i++)
        p->rows[p->nrows++] = o->base[i];
    for (unsigned k = 0; k < o->nsweeps; k++) {
        const struct sweep_spec *sw = &o->sweeps[k];
        bool any = false;
        for (unsigned b = 0; b < o->nbase; b++) {
            const struct cf_rp_model_def *d = o->base[b].def;
            if ((sw->model && sw->model != d) ||
                cf_rp_knob_index(d, sw->knob, strlen(sw->knob)) < 0)
                continue;
            any = true;
            int rc = add_sweep(p, o, b, sw, sub);
            if (rc) return rc;
        }
        if (!any)
            return cf_usage_error(sub, "--sweep: no model given has a knob named \"%s\"", sw->knob);
    }
    return 0;
}

void cf_whatif_event(const struct cf_event *e, void *ctx)
{
    struct cf_whatif *w = ctx;
    /* The trace's start is known once the replay applies events. */
    if (w->cap.start_ns == 0) w->cap.start_ns = cf_rec.start_ns;
    cf_rp_capture_event(&w->cap, e);
    cf_cache_use_event(&w->cache, e);
}

static int run_device(struct cf_rp_device_table *d, const struct plan *p, const struct options *o)
{
    int device = d->stream->device;
    const struct cf_device_stats *ds = &cf_rec.dev[device];
    d->device_memory = CF_RP_UNLIMITED;
    if (o->device_memory) {
        d->device_memory = o->device_memory;
        d->memory_from = "option";
    } else if (ds->total_bytes) {
        d->device_memory = ds->total_bytes;
        d->memory_from = "trace";
    }
    d->traced_known = ds->seen;
    d->traced_peak_footprint = ds->peak_footprint;
    d->traced_peak_live = ds->peak_live_bytes;
    d->results = calloc(p->nrows, sizeof *d->results);
    d->sweeps = calloc(p->nsweeps + 1u, sizeof *d->sweeps);
    if (d->results == NULL || d->sweeps == NULL) return -1;
    struct cf_rp_run_opts ro = {.device_memory = d->device_memory, .check_every = o->check_every};
    d->nresults = p->nrows;
    for (unsigned i = 0; i < p->nrows; i++)
        cf_rp_run(d->stream, &p->rows[i], &ro, &d->results[i]);
    d->nsweeps = p->nsweeps;
    for (unsigned i = 0; i < p->nsweeps; i++) {
        d->sweeps[i] = p->sweeps[i];
        d->sweeps[i].best = cf_rp_sweep_best(d->results, d->sweeps[i].first, d->sweeps[i].count);
    }
    return 0;
}

int cf_whatif_run(struct cf_whatif *w, const char *trace, const struct cf_snap *snap)
{
    struct cf_rp_table *t = &w->t;
    *t = (struct cf_rp_table){.trace = trace,
                              .program = snap->program,
                              .blocks = snap->blocks,
                              .devs = w->devs,
                              .checked = w->o.check_every != 0};
    if (w->cap.failed) {
        fprintf(stderr, "cudafrag: out of memory while reading %s\n", trace);
        return -1;
    }
    for (int d = 0; d < CF_RP_MAX_DEVICES; d++) {
        struct cf_rp_stream *s = w->cap.dev[d];
        if (s == NULL || s->nallocs == 0) continue;
        w->devs[t->ndevs].stream = s;
        if (run_device(&w->devs[t->ndevs++], &w->p, &w->o) != 0) {
            fprintf(stderr, "cudafrag: out of memory while replaying %s\n", trace);
            return -1;
        }
    }
    cf_cache_use_find(&w->cache, t);
    int rc = 0;
    for (unsigned i = 0; i < t->ndevs; i++)
        for (unsigned r = 0; r < w->devs[i].nresults; r++) {
            if (w->devs[i].results[r].error[0] == '\0') continue;
            /* The table says so too, but a model that could not run is a failure. */
            fprintf(stderr, "cudafrag: %s\n", w->devs[i].results[r].error);
            rc = 1;
        }
    return rc;
}

const struct cf_rp_table *cf_whatif_table(const struct cf_whatif *w)
{
    return &w->t;
}

struct cf_whatif *cf_whatif_new(void)
{
    struct cf_whatif *w = calloc(1, sizeof *w);
    if (w) cf_rp_capture_init(&w->cap, 0);
    return w;
}

void cf_whatif_free(struct cf_whatif *w)
{
    if (w == NULL) return;
    for (unsigned i = 0; i < CF_RP_MAX_DEVICES; i++) {
        free(w->devs[i].results);
        free(w->devs[i].sweeps);
    }
    cf_rp_capture_fini(&w->cap);
    cf_cache_use_free(&w->cache);
    free(w);
}

static int print_table(const struct cf_rp_table *t, bool json)
{
    struct cf_buf b = {0};
    if (json)
        cf_rp_render_json(t, &b);
    else
        cf_rp_render_text(t, &b);
    int rc = 0;
    if (b.failed) {
        fprintf(stderr, "cudafrag: out of memory while printing the replay of %s\n", t->trace);
        rc = 1;
    } else {
        fwrite(b.data, 1, b.len, stdout);
    }
    cf_buf_free(&b);
    return rc;
}

static int replay(struct cf_whatif *w, const struct command *c)
{
    struct cf_snap snap;
    struct cf_replay_hooks hooks = {.after_event = cf_whatif_event, .ctx = w};
    if (cf_replay_open(c->trace, &hooks, &snap) != 0) return 1;
    int rc = cf_whatif_run(w, c->trace, &snap);
    /* The table is printed even when a model failed: its row says why. */
    if (rc >= 0 && print_table(&w->t, c->json) != 0) rc = 1;
    cf_replay_close(&snap);
    return rc ? 1 : 0;
}

int cf_cmd_replay(int argc, char **argv)
{
    struct command c = {0};
    struct cf_whatif *w = cf_whatif_new();
    if (w == NULL) {
        fprintf(stderr, "cudafrag: out of memory\n");
        return 1;
    }
    int rc = parse(argc, argv, w, &c);
    if (rc == 0) rc = cf_whatif_plan(w, "replay");
    if (rc == 0)
        rc = replay(w, &c);
    else if (rc == 1) /* --models or --help: printed */
        rc = 0;
    cf_whatif_free(w);
    return rc;
}
