/* cudafrag export TRACE --format F [-o OUT] [--weight W] [--device N]. */
#include "cli/export.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmdline.h"
#include "cli/names.h"
#include "cli/views.h"
#include "config/config.h"

static const struct cf_exporter exporters[] = {
    {"torch-snapshot", true, cf_export_torch_begin, cf_export_torch_end},
    {"chrome-trace", false, cf_export_chrome_begin, cf_export_chrome_end},
    {"folded", false, NULL, cf_export_folded},
    {"rmm-csv", false, cf_export_rmm_begin, cf_export_rmm_end},
};

struct args {
    const char *trace, *out;
    const struct cf_exporter *ex;
    struct cf_export_opts o;
};

static const struct cf_exporter *find(const char *name)
{
    for (unsigned i = 0; i < sizeof exporters / sizeof exporters[0]; i++)
        if (strcmp(name, exporters[i].name) == 0) return &exporters[i];
    return NULL;
}

enum { OPT_FORMAT = CF_OPT_LONG, OPT_WEIGHT, OPT_DEVICE };

static int one_option(struct args *a, int opt, const char *v)
{
    int64_t d;
    switch (opt) {
    case OPT_FORMAT:
        if ((a->ex = find(v)) == NULL)
            return cf_usage_error("export",
                                  "unknown format \"%s\" (torch-snapshot, chrome-trace, "
                                  "folded or rmm-csv)",
                                  v);
        return 0;
    case 'o':
        a->out = v;
        return 0;
    case OPT_WEIGHT:
        if (cf_weight_parse(v, &a->o.weight) != 0)
            return cf_usage_error("export", "unknown weight \"%s\"", v);
        return 0;
    case OPT_DEVICE:
        if (cf_parse_int(v, 0, CF_MAX_DEVICES - 1, &d) != 0)
            return cf_usage_error("export",
                                  "--device \"%s\": expected a device number from 0 to %d", v,
                                  CF_MAX_DEVICES - 1);
        a->o.device = (int)d;
        return 0;
    case 'h':
        cf_help_print(stdout, "export");
        return -1;
    default:
        return CF_EXIT_USAGE;
    }
}

/* 0, -1 after --help, or the usage status. */
static int parse(struct args *a, int argc, char **argv)
{
    static const struct option longopts[] = {{"format", required_argument, NULL, OPT_FORMAT},
                                             {"output", required_argument, NULL, 'o'},
                                             {"weight", required_argument, NULL, OPT_WEIGHT},
                                             {"device", required_argument, NULL, OPT_DEVICE},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":ho:", longopts, &started)) != -1;) {
        int rc = one_option(a, opt, optarg);
        if (rc) return rc;
    }
    if (optind < argc) a->trace = argv[optind++];
    if (optind < argc) return cf_usage_error("export", "unexpected \"%s\"", argv[optind]);
    if (a->trace == NULL || a->ex == NULL)
        return cf_usage_error("export", "needs a trace and --format");
    if (a->ex->binary && strcmp(a->out, "-") == 0 && isatty(STDOUT_FILENO))
        return cf_usage_error("export", "%s is binary: write it with -o FILE", a->ex->name);
    return cf_out_not_input("export", a->out, (char *const *)&a->trace, 1);
}

/* The device asked for is one the trace has: otherwise the output would be
 * empty for nothing. */
static int device_check(const struct args *a, const struct cf_coll *c)
{
    int d = a->o.device;
    if (d < 0 || c->dev[d].used) return 0;
    char have[CF_MAX_DEVICES * 4 + 8] = "";
    size_t n = 0;
    for (int k = 0; k < CF_MAX_DEVICES; k++)
        if (c->dev[k].used && n < sizeof have)
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%d", n ? ", " : "", k);
    return cf_usage_error("export", "--device %d: %s has %s%s", d, a->trace,
                          n ? "device(s) " : "no device memory", have);
}

static int run(const struct args *a, FILE *out)
{
    static struct cf_coll c; /* zeroed: cf_coll_free is safe before cf_coll_run */
    struct cf_coll_sink sink = {0};
    int rc = a->ex->begin ? a->ex->begin(&sink, &a->o, out) : 0;
    if (rc == 0) rc = cf_coll_run(&c, a->trace, &sink);
    if (rc == 0) rc = device_check(a, &c);
    if (rc == 0) rc = a->ex->end(&c, &a->o, out);
    cf_coll_free(&c);
    cf_names_free();
    return rc;
}

int cf_cmd_export(int argc, char **argv)
{
    struct args a = {.out = "-", .o = {.weight = CF_W_PEAK, .device = -1}};
    int rc = parse(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    FILE *out = cf_out_open(a.out);
    if (out == NULL) return 1;
    rc = run(&a, out);
    if (rc) {
        cf_out_discard(out, a.out);
        return rc;
    }
    return cf_out_close(out, a.out);
}
