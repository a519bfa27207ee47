/* cudafrag export TRACE --format F [-o OUT] [--weight W] [--device N]. */
#include "cli/export.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/names.h"
#include "cli/views.h"

static const struct cf_exporter exporters[] = {
    {"torch-snapshot", true, cf_export_torch_begin, cf_export_torch_end},
    {"chrome-trace", false, cf_export_chrome_begin, cf_export_chrome_end},
    {"folded", false, NULL, cf_export_folded},
    {"rmm-csv", false, cf_export_rmm_begin, cf_export_rmm_end},
};

static const char usage[] =
    "usage: cudafrag export TRACE --format torch-snapshot|chrome-trace|folded|rmm-csv\n"
    "                       [-o OUT] [--weight peak|footprint-peak|leaked|allocated|calls]\n"
    "                       [--device N]\n";

struct args {
    const char *trace, *out;
    const struct cf_exporter *ex;
    struct cf_export_opts o;
};

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "cudafrag: export: %s \"%s\"\n%s", what, arg, usage);
    return CF_EXIT_USAGE;
}

static const struct cf_exporter *find(const char *name)
{
    for (unsigned i = 0; i < sizeof exporters / sizeof exporters[0]; i++)
        if (strcmp(name, exporters[i].name) == 0) return &exporters[i];
    return NULL;
}

static int one_arg(struct args *a, char **argv, int *i, int argc)
{
    const char *opt = argv[*i];
    bool has_value = strcmp(opt, "--format") == 0 || strcmp(opt, "-o") == 0 ||
                     strcmp(opt, "--weight") == 0 || strcmp(opt, "--device") == 0;
    if (!has_value) {
        if (opt[0] == '-' || a->trace) return bad("unexpected", opt);
        a->trace = opt;
        return 0;
    }
    if (*i + 1 >= argc) return bad("missing the value of", opt);
    const char *v = argv[++*i];
    char *end;
    if (strcmp(opt, "--format") == 0 && (a->ex = find(v)) == NULL) return bad("unknown format", v);
    if (strcmp(opt, "-o") == 0) a->out = v;
    if (strcmp(opt, "--weight") == 0 && cf_weight_parse(v, &a->o.weight) != 0)
        return bad("unknown weight", v);
    if (strcmp(opt, "--device") == 0) {
        long d = strtol(v, &end, 10);
        if (*v == '\0' || *end || d < 0 || d >= CF_MAX_DEVICES) return bad("bad device", v);
        a->o.device = (int)d;
    }
    return 0;
}

static int run(const struct args *a, FILE *out)
{
    static struct cf_coll c; /* zeroed: cf_coll_free is safe before cf_coll_run */
    struct cf_coll_sink sink = {0};
    int rc = a->ex->begin ? a->ex->begin(&sink, out) : 0;
    if (rc == 0) rc = cf_coll_run(&c, a->trace, &sink);
    if (rc == 0) rc = a->ex->end(&c, &a->o, out);
    cf_coll_free(&c);
    cf_names_free();
    return rc;
}

int cf_cmd_export(int argc, char **argv)
{
    struct args a = {.out = "-", .o = {.weight = CF_W_PEAK, .device = -1}};
    for (int i = 0; i < argc; i++) {
        int rc = one_arg(&a, argv, &i, argc);
        if (rc) return rc;
    }
    if (a.trace == NULL || a.ex == NULL) {
        fprintf(stderr, "cudafrag: export needs a trace and --format\n%s", usage);
        return CF_EXIT_USAGE;
    }
    if (a.ex->binary && strcmp(a.out, "-") == 0 && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "cudafrag: export: %s is binary: write it with -o FILE\n", a.ex->name);
        return CF_EXIT_USAGE;
    }
    FILE *out = cf_out_open(a.out);
    if (out == NULL) return 1;
    int rc = run(&a, out);
    return cf_out_close(out, a.out) || rc;
}
