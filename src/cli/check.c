/* cudafrag check REPORT [limits] and cudafrag run --check [limits] -- PROG:
 * a report held against limits, for CI. Exit status 0 within the limits, 1
 * when one is exceeded (each reason on stderr), 2 when the report cannot be
 * read or the command line is wrong; with run, the program's own non-zero
 * status comes first. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmdline.h"
#include "cli/names.h"
#include "cli/view.h"
#include "cli/views.h"
#include "config/config.h"
#include "report/format.h"
#include "report/outpath.h"

static const char *const severities[] = {"", "low", "medium", "high"};

void cf_limits_init(struct cf_limits *l)
{
    *l = (struct cf_limits){false, UINT64_MAX, UINT64_MAX, UINT64_MAX, 2.0, 0};
}

static int parse_frac(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno) return -1;
    if (*end == '%') {
        v /= 100;
        end++;
    }
    if (*end || !(v >= 0 && v <= 1)) return -1;
    *out = v;
    return 0;
}

static int limit_value(struct cf_limits *l, int opt, const char *v)
{
    uint64_t *size = opt == CF_LIM_PEAK_LIVE   ? &l->max_peak_live
                     : opt == CF_LIM_FOOTPRINT ? &l->max_footprint
                     : opt == CF_LIM_LEAK      ? &l->max_leak
                                               : NULL;
    if (size) return cf_parse_size(v, 0, UINT64_MAX, size);
    if (opt == CF_LIM_FRAG) return parse_frac(v, &l->max_frag);
    for (int i = 1; i <= 3; i++)
        if (strcmp(v, severities[i]) == 0) {
            l->fail_on = i;
            return 0;
        }
    return -1;
}

int cf_limits_option(struct cf_limits *l, int opt, const char *v, const char *sub)
{
    static const char *const names[] = {"--max-peak-live", "--max-footprint", "--max-fragmentation",
                                        "--max-leak", "--fail-on"};
    if (opt < CF_LIM_PEAK_LIVE || opt > CF_LIM_FAIL_ON) return 0;
    if (limit_value(l, opt, v) != 0)
        return cf_usage_error(sub, "%s \"%s\": not a valid value", names[opt - CF_LIM_PEAK_LIVE],
                              v);
    l->any = true;
    return 1;
}

/* ---- the checks ---- */

static unsigned over(const char *src, const char *what, uint64_t v, uint64_t limit)
{
    char a[32], b[32];
    if (v <= limit) return 0;
    fprintf(stderr, "cudafrag: check %s: %s %s is above the limit %s\n", src, what,
            cf_fmt_bytes(v, a, sizeof a), cf_fmt_bytes(limit, b, sizeof b));
    return 1;
}

static unsigned check_findings(const struct cf_view *v, int fail_on)
{
    unsigned bad = 0;
    for (unsigned i = 0; fail_on && i < v->nfindings; i++) {
        int sev = 0;
        for (int k = 1; k <= 3; k++)
            if (strcmp(v->findings[i].severity, severities[k]) == 0) sev = k;
        if (sev < fail_on) continue;
        fprintf(stderr, "cudafrag: check %s: [%s] %s: %s\n", v->source, v->findings[i].severity,
                v->findings[i].id, v->findings[i].title);
        bad++;
    }
    return bad;
}

static unsigned check_view(const struct cf_view *v, const struct cf_limits *l)
{
    unsigned bad = 0;
    char what[64];
    for (unsigned i = 0; i < v->ndevs; i++) {
        snprintf(what, sizeof what, "device %d peak live", v->devs[i].device);
        bad += over(v->source, what, v->devs[i].peak_live, l->max_peak_live);
        snprintf(what, sizeof what, "device %d peak footprint", v->devs[i].device);
        bad += over(v->source, what, v->devs[i].peak_footprint, l->max_footprint);
    }
    bad += over(v->source, "live at the end (leaked)", v->leaked_bytes, l->max_leak);
    if (l->max_frag <= 1 && isnan(v->frag))
        fprintf(stderr, "cudafrag: check %s: fragmentation unknown (no footprint): not checked\n",
                v->source);
    if (l->max_frag <= 1 && v->frag > l->max_frag) {
        fprintf(stderr, "cudafrag: check %s: fragmentation %.1f%% is above the limit %.1f%%\n",
                v->source, 100 * v->frag, 100 * l->max_frag);
        bad++;
    }
    return bad + check_findings(v, l->fail_on);
}

int cf_check_file(const char *path, const struct cf_limits *l)
{
    struct cf_view v;
    int rc = cf_view_load(path, &v);
    /* A trace that cannot be read (damaged) is a failure, a malformed report a usage error. */
    if (rc != 0) return rc == 2 ? 1 : CF_EXIT_USAGE;
    unsigned bad = check_view(&v, l);
    if (bad == 0) fprintf(stderr, "cudafrag: check %s: within the limits\n", path);
    cf_view_free(&v);
    return bad ? 1 : 0;
}

int cf_cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        CF_LIMIT_LONGOPTS, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    struct cf_limits l;
    cf_limits_init(&l);
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        if (opt == 'h') {
            cf_help_print(stdout, "check");
            return 0;
        }
        if (cf_limits_option(&l, opt, optarg, "check") != 1) return CF_EXIT_USAGE;
    }
    if (argc - optind > 1) return cf_usage_error("check", "unexpected \"%s\"", argv[optind + 1]);
    if (optind == argc || !l.any)
        return cf_usage_error("check", "needs a report and at least one limit");
    return cf_check_file(argv[optind], &l);
}
