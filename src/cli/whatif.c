/* The replay command: options, the trace read once into per-device streams,
 * every model configuration run over each stream, the table printed. The
 * models and the table are the replay library's (src/replay/); this file only
 * connects them to the trace and the command line. */
#include "cli/whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const char *trace;
    uint64_t device_memory; /* 0: from the trace */
    bool json;
    uint32_t check_every; /* 0: no invariant checks */
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

static int usage_error(const char *usage, const char *fmt, const char *arg)
{
    fputs("cudafrag: replay: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EXIT_USAGE;
}

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

static const char *option_value(const char *name, char **argv, int *i, int argc)
{
    size_t len = strlen(name);
    if (strncmp(argv[*i], name, len) != 0) return NULL;
    if (argv[*i][len] == '=') return argv[*i] + len + 1;
    if (argv[*i][len] != '\0' || *i + 1 >= argc) return NULL;
    return argv[++*i];
}

/* 0, 1 when done (--models), or EXIT_USAGE. */
static int parse(int argc, char **argv, struct options *o, const char *usage)
{
    char err[256];
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--models") == 0) {
            list_models();
            return 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--check") == 0) {
            o->check_every = 1;
        } else if (strncmp(argv[i], "--check=", 8) == 0) {
            int64_t n;
            if (cf_parse_int(argv[i] + 8, 1, UINT32_MAX, &n) != 0)
                return usage_error(usage, "%s: expected --check=N, N from 1", argv[i]);
            o->check_every = (uint32_t)n;
        } else if ((v = option_value("--device-memory", argv, &i, argc))) {
            if (cf_parse_size(v, 1, UINT64_MAX - 1, &o->device_memory) != 0)
                return usage_error(usage,
                                   "--device-memory \"%s\": expected a size (digits with an "
                                   "optional K, M, G or T suffix)",
                                   v);
        } else if ((v = option_value("--model", argv, &i, argc))) {
            if (o->nbase == MAX_CONFIGS) return usage_error(usage, "too many models%s", "");
            if (cf_rp_config_parse(v, &o->base[o->nbase++], err, sizeof err) != 0)
                return usage_error(usage, "%s", err);
        } else if ((v = option_value("--sweep", argv, &i, argc))) {
            if (o->nsweeps == MAX_SWEEPS) return usage_error(usage, "too many sweeps%s", "");
            if (parse_sweep((char *)v, &o->sweeps[o->nsweeps++], err, sizeof err) != 0)
                return usage_error(usage, "%s", err);
        } else if (argv[i][0] == '-' || o->trace) {
            return usage_error(usage, "unexpected \"%s\" (or an option without its value)",
                               argv[i]);
        } else {
            o->trace = argv[i];
        }
    }
    if (o->trace == NULL) return usage_error(usage, "needs a trace file%s", "");
    if (o->nbase == 0)
        for (unsigned i = 0; i < cf_rp_nmodels; i++)
            cf_rp_config_default(&o->base[o->nbase++], cf_rp_models[i]);
    return 0;
}

static int add_sweep(struct plan *p, const struct options *o, unsigned base,
                     const struct sweep_spec *w, const char *usage)
{
    char err[256];
    if (p->nrows + w->nvalues > MAX_CONFIGS)
        return usage_error(usage, "too many settings to sweep%s", "");
    struct cf_rp_sweep *s = &p->sweeps[p->nsweeps++];
    *s = (struct cf_rp_sweep){.base = base, .first = p->nrows, .count = w->nvalues};
    snprintf(s->knob, sizeof s->knob, "%s", w->knob);
    for (unsigned k = 0; k < w->nvalues; k++) {
        struct cf_rp_config *c = &p->rows[p->nrows++];
        *c = o->base[base];
        if (cf_rp_config_set(c, w->knob, strlen(w->knob), w->values[k], strlen(w->values[k]), err,
                             sizeof err) != 0)
            return usage_error(usage, "--sweep: %s", err);
    }
    return 0;
}

static int make_plan(struct plan *p, const struct options *o, const char *usage)
{
    for (unsigned i = 0; i < o->nbase; i++)
        p->rows[p->nrows++] = o->base[i];
    for (unsigned w = 0; w < o->nsweeps; w++) {
        const struct sweep_spec *sw = &o->sweeps[w];
        bool any = false;
        for (unsigned b = 0; b < o->nbase; b++) {
            const struct cf_rp_model_def *d = o->base[b].def;
            if ((sw->model && sw->model != d) ||
                cf_rp_knob_index(d, sw->knob, strlen(sw->knob)) < 0)
                continue;
            any = true;
            int rc = add_sweep(p, o, b, sw, usage);
            if (rc) return rc;
        }
        if (!any)
            return usage_error(usage, "--sweep: no model given has a knob named \"%s\"", sw->knob);
    }
    return 0;
}

static void on_event(const struct cf_event *e, void *ctx)
{
    struct cf_rp_capture *cap = ctx;
    /* The trace's start is known once the replay applies events. */
    if (cap->start_ns == 0) cap->start_ns = cf_rec.start_ns;
    cf_rp_capture_event(cap, e);
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

static int replay(const struct options *o, const struct plan *p)
{
    static struct cf_rp_capture cap;
    struct cf_snap snap;
    cf_rp_capture_init(&cap, 0);
    struct cf_replay_hooks hooks = {.after_event = on_event, .ctx = &cap};
    if (cf_replay_open(o->trace, &hooks, &snap) != 0) return 1;
    int rc = 0;
    struct cf_rp_device_table devs[CF_RP_MAX_DEVICES];
    struct cf_rp_table t = {.trace = o->trace,
                            .program = cf_snap_replay_who.program,
                            .blocks = snap.blocks,
                            .devs = devs,
                            .checked = o->check_every != 0};
    memset(devs, 0, sizeof devs);
    if (cap.failed) {
        fprintf(stderr, "cudafrag: out of memory while reading %s\n", o->trace);
        rc = 1;
    }
    for (int d = 0; d < CF_RP_MAX_DEVICES && rc == 0; d++) {
        struct cf_rp_stream *s = cap.dev[d];
        if (s == NULL || s->nallocs == 0) continue;
        devs[t.ndevs].stream = s;
        if (run_device(&devs[t.ndevs++], p, o) != 0) {
            fprintf(stderr, "cudafrag: out of memory while replaying %s\n", o->trace);
            rc = 1;
        }
    }
    if (rc == 0) {
        struct cf_buf b = {0};
        if (o->json)
            cf_rp_render_json(&t, &b);
        else
            cf_rp_render_text(&t, &b);
        if (b.failed) {
            fprintf(stderr, "cudafrag: out of memory while printing the replay of %s\n", o->trace);
            rc = 1;
        } else {
            fwrite(b.data, 1, b.len, stdout);
        }
        cf_buf_free(&b);
    }
    for (unsigned i = 0; i < t.ndevs; i++) {
        for (unsigned r = 0; r < devs[i].nresults; r++) {
            if (devs[i].results[r].error[0] == '\0') continue;
            /* The table says so too, but a model that could not run is a failure. */
            fprintf(stderr, "cudafrag: %s\n", devs[i].results[r].error);
            rc = 1;
        }
        free(devs[i].results);
        free(devs[i].sweeps);
    }
    cf_rp_capture_fini(&cap);
    cf_replay_close(&snap);
    return rc;
}

int cf_cmd_replay(int argc, char **argv, const char *usage)
{
    static struct options o;
    static struct plan p;
    memset(&o, 0, sizeof o);
    memset(&p, 0, sizeof p);
    int rc = parse(argc, argv, &o, usage);
    if (rc == 1) return 0;
    if (rc == 0) rc = make_plan(&p, &o, usage);
    return rc ? rc : replay(&o, &p);
}
