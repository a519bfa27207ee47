/* cudafrag diff [--json] [--top N] A B: what changed from run A to run B, each
 * a JSON report or a trace: per device peaks, fragmentation, totals, per call
 * site growth, new and gone sites and findings. Sites and findings are matched
 * by key (view.h), never by address or the run's ids. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmdline.h"
#include "cli/view.h"
#include "config/config.h"
#include "cli/views.h"
#include "report/format.h"
#include "report/json_write.h"
#include "report/strbuf.h"

struct row {
    const char *key, *label;
    const struct cf_view_site *a, *b;
    int64_t dpeak, dbytes;
};

static const struct cf_view_dev *dev_of(const struct cf_view *v, int device)
{
    for (unsigned i = 0; i < v->ndevs; i++)
        if (v->devs[i].device == device) return &v->devs[i];
    return NULL;
}

static int64_t delta(uint64_t a, uint64_t b)
{
    return b >= a ? (int64_t)(b - a) : -(int64_t)(a - b);
}

static uint64_t mag(int64_t d)
{
    return d < 0 ? (uint64_t)-d : (uint64_t)d;
}

static int by_change(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    if (mag(a->dpeak) != mag(b->dpeak)) return mag(a->dpeak) < mag(b->dpeak) ? 1 : -1;
    if (mag(a->dbytes) != mag(b->dbytes)) return mag(a->dbytes) < mag(b->dbytes) ? 1 : -1;
    return strcmp(a->key, b->key);
}

/* Every key of A, then B's that A lacks; sorted by the change of peak live. */
static struct row *rows_of(const struct cf_view *a, const struct cf_view *b, unsigned *n)
{
    struct row *r = calloc(a->nsites + b->nsites + 1, sizeof *r);
    unsigned k = 0;
    for (unsigned i = 0; r && i < a->nsites; i++)
        r[k++] = (struct row){.key = a->sites[i].key,
                              .label = a->sites[i].label,
                              .a = &a->sites[i],
                              .b = cf_view_find(b, a->sites[i].key)};
    for (unsigned i = 0; r && i < b->nsites; i++)
        if (!cf_view_find(a, b->sites[i].key))
            r[k++] =
                (struct row){.key = b->sites[i].key, .label = b->sites[i].label, .b = &b->sites[i]};
    for (unsigned i = 0; i < k; i++) {
        r[i].dpeak = delta(r[i].a ? r[i].a->peak_live : 0, r[i].b ? r[i].b->peak_live : 0);
        r[i].dbytes = delta(r[i].a ? r[i].a->bytes : 0, r[i].b ? r[i].b->bytes : 0);
    }
    if (r) qsort(r, k, sizeof *r, by_change);
    *n = k;
    return r;
}

/* ---- text ---- */

static void change_bytes(uint64_t a, uint64_t b, char *out, size_t n)
{
    char x[32], y[32], d[32];
    int64_t dd = delta(a, b);
    int len = snprintf(out, n, "%10s -> %10s  %c%s", cf_fmt_bytes(a, x, sizeof x),
                       cf_fmt_bytes(b, y, sizeof y), dd < 0 ? '-' : '+',
                       cf_fmt_bytes(mag(dd), d, sizeof d));
    if (a && len > 0 && (size_t)len < n)
        snprintf(out + len, n - (size_t)len, " (%+.1f%%)", 100.0 * (double)dd / (double)a);
}

static void change_frac(double a, double b, char *out, size_t n)
{
    if (isnan(a) || isnan(b))
        snprintf(out, n, "%9s%% -> %9s%%", isnan(a) ? "?" : "", isnan(b) ? "?" : "");
    if (isnan(a) || isnan(b)) return;
    snprintf(out, n, "%9.1f%% -> %9.1f%%  %+.1f points", 100 * a, 100 * b, 100 * (b - a));
}

static void text_totals(const struct cf_view *a, const struct cf_view *b)
{
    char line[160];
    for (int d = 0; d < CF_VIEW_DEVICES; d++) {
        const struct cf_view_dev *x = dev_of(a, d), *y = dev_of(b, d);
        if (!x && !y) continue;
        change_bytes(x ? x->peak_live : 0, y ? y->peak_live : 0, line, sizeof line);
        printf("device %-3d peak live       %s\n", d, line);
        change_bytes(x ? x->peak_footprint : 0, y ? y->peak_footprint : 0, line, sizeof line);
        printf("device %-3d peak footprint  %s\n", d, line);
        change_frac(x ? x->frag : NAN, y ? y->frag : NAN, line, sizeof line);
        printf("device %-3d fragmentation   %s\n", d, line);
    }
    change_frac(a->frag, b->frag, line, sizeof line);
    printf("fragmentation (all)       %s\n", line);
    printf("allocations               %10" PRIu64 " -> %10" PRIu64 "  %+" PRId64 "\n", a->allocs,
           b->allocs, delta(a->allocs, b->allocs));
    change_bytes(a->alloc_bytes, b->alloc_bytes, line, sizeof line);
    printf("bytes allocated           %s\n", line);
    change_bytes(a->leaked_bytes, b->leaked_bytes, line, sizeof line);
    printf("live at the end           %s\n", line);
    printf("out-of-memory failures    %10" PRIu64 " -> %10" PRIu64 "\n", a->ooms, b->ooms);
}

static void text_sites(const struct row *r, unsigned n, unsigned top)
{
    char line[160], x[32], y[32];
    unsigned same = 0, shown = 0;
    printf("\n-- call sites by change of peak live bytes (then of bytes allocated) --\n");
    for (unsigned i = 0; i < n; i++) {
        if (r[i].dpeak == 0 && r[i].dbytes == 0 && r[i].a && r[i].b) same++;
        if ((r[i].dpeak == 0 && r[i].dbytes == 0 && r[i].a && r[i].b) || shown == top) continue;
        change_bytes(r[i].a ? r[i].a->peak_live : 0, r[i].b ? r[i].b->peak_live : 0, line,
                     sizeof line);
        printf("  %-4s %s  allocated %s -> %s  %s\n",
               !r[i].a   ? "new"
               : !r[i].b ? "gone"
                         : "",
               line, cf_fmt_bytes(r[i].a ? r[i].a->bytes : 0, x, sizeof x),
               cf_fmt_bytes(r[i].b ? r[i].b->bytes : 0, y, sizeof y), r[i].label);
        shown++;
    }
    if (shown == 0) printf("  no change\n");
    if (same) printf("  (%u call sites unchanged)\n", same);
}

static bool finding_in(const struct cf_view *v, const struct cf_view_finding *f)
{
    for (unsigned i = 0; i < v->nfindings; i++)
        if (strcmp(v->findings[i].id, f->id) == 0 && strcmp(v->findings[i].key, f->key) == 0)
            return true;
    return false;
}

static void text_findings(const struct cf_view *a, const struct cf_view *b)
{
    printf("\n-- findings --\n");
    unsigned n = 0;
    for (unsigned i = 0; i < b->nfindings; i++)
        if (!finding_in(a, &b->findings[i]) && ++n)
            printf("  new   [%s] %s: %s\n", b->findings[i].severity, b->findings[i].id,
                   b->findings[i].title);
    for (unsigned i = 0; i < a->nfindings; i++)
        if (!finding_in(b, &a->findings[i]) && ++n)
            printf("  gone  [%s] %s: %s\n", a->findings[i].severity, a->findings[i].id,
                   a->findings[i].title);
    if (n == 0) printf("  the same in both\n");
}

static void notes(const struct cf_view *a, const struct cf_view *b)
{
    const struct cf_view *v[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (v[i]->site_count > v[i]->listed)
            fprintf(stderr,
                    "cudafrag: diff: %s lists its top call sites only (%" PRIu64
                    " recorded): a site missing from it may be below its top\n",
                    v[i]->source, v[i]->site_count);
    if (a->from_trace != b->from_trace)
        fprintf(stderr, "cudafrag: diff: one input is a trace (frames named from DWARF, with "
                        "file:line), the other a report written at exit (symbol tables only): "
                        "their call sites will not match; compare like with like\n");
}

/* ---- JSON ---- */

static void jbytes(struct cf_jw *j, const char *k, uint64_t a, uint64_t b)
{
    cf_jw_obj(j, k);
    cf_jw_u64(j, "a", a);
    cf_jw_u64(j, "b", b);
    cf_jw_i64(j, "change", delta(a, b));
    cf_jw_obj_end(j);
}

static void jfrac(struct cf_jw *j, const char *k, double a, double b)
{
    cf_jw_obj(j, k);
    cf_jw_num(j, "a", a);
    cf_jw_num(j, "b", b);
    cf_jw_num(j, "change", b - a);
    cf_jw_obj_end(j);
}

static void json_devices(struct cf_jw *j, const struct cf_view *a, const struct cf_view *b)
{
    cf_jw_arr(j, "devices");
    for (int d = 0; d < CF_VIEW_DEVICES; d++) {
        const struct cf_view_dev *x = dev_of(a, d), *y = dev_of(b, d);
        if (!x && !y) continue;
        cf_jw_obj(j, NULL);
        cf_jw_i64(j, "device", d);
        jbytes(j, "peak_live_bytes", x ? x->peak_live : 0, y ? y->peak_live : 0);
        jbytes(j, "peak_footprint_bytes", x ? x->peak_footprint : 0, y ? y->peak_footprint : 0);
        jfrac(j, "fragmentation", x ? x->frag : NAN, y ? y->frag : NAN);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static void json_site(struct cf_jw *j, const char *k, const struct cf_view_site *s)
{
    if (s == NULL) {
        cf_jw_null(j, k);
        return;
    }
    cf_jw_obj(j, k);
    cf_jw_u64(j, "peak_live_bytes", s->peak_live);
    cf_jw_u64(j, "bytes", s->bytes);
    cf_jw_u64(j, "calls", s->calls);
    cf_jw_u64(j, "leaked_bytes", s->leaked);
    cf_jw_obj_end(j);
}

static void json_findings(struct cf_jw *j, const char *k, const struct cf_view *in,
                          const struct cf_view *other)
{
    cf_jw_arr(j, k);
    for (unsigned i = 0; i < in->nfindings; i++) {
        if (finding_in(other, &in->findings[i])) continue;
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "id", in->findings[i].id);
        cf_jw_str(j, "severity", in->findings[i].severity);
        cf_jw_str(j, "title", in->findings[i].title);
        cf_jw_str(j, "site_key", in->findings[i].key);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
}

static const char *status_of(const struct row *r)
{
    return !r->a ? "new" : !r->b ? "gone" : r->dpeak || r->dbytes ? "changed" : "same";
}

static void json_out(const struct cf_view *a, const struct cf_view *b, const struct row *r,
                     unsigned n)
{
    struct cf_buf o = {0};
    struct cf_jw j = cf_jw_start(&o);
    cf_jw_obj(&j, NULL);
    cf_jw_str(&j, "a", a->source);
    cf_jw_str(&j, "b", b->source);
    json_devices(&j, a, b);
    cf_jw_obj(&j, "summary");
    jbytes(&j, "allocs", a->allocs, b->allocs);
    jbytes(&j, "alloc_bytes", a->alloc_bytes, b->alloc_bytes);
    jbytes(&j, "live_at_report_bytes", a->leaked_bytes, b->leaked_bytes);
    jfrac(&j, "fragmentation", a->frag, b->frag);
    cf_jw_obj_end(&j);
    cf_jw_arr(&j, "sites");
    for (unsigned i = 0; i < n; i++) {
        cf_jw_obj(&j, NULL);
        cf_jw_str(&j, "key", r[i].key);
        cf_jw_str(&j, "label", r[i].label);
        cf_jw_str(&j, "status", status_of(&r[i]));
        json_site(&j, "a", r[i].a);
        json_site(&j, "b", r[i].b);
        cf_jw_i64(&j, "peak_live_change", r[i].dpeak);
        cf_jw_obj_end(&j);
    }
    cf_jw_arr_end(&j);
    cf_jw_obj(&j, "findings");
    json_findings(&j, "new", b, a);
    json_findings(&j, "gone", a, b);
    cf_jw_obj_end(&j);
    cf_jw_obj_end(&j);
    cf_buf_puts(&o, "\n");
    if (!o.failed) fwrite(o.data, 1, o.len, stdout);
    cf_buf_free(&o);
}

/* in[2], --json and --top N: 0, -1 after --help, or the usage status. */
static int parse(int argc, char **argv, const char *in[2], bool *json, unsigned *top)
{
    enum { OPT_JSON = CF_OPT_LONG, OPT_TOP };
    static const struct option longopts[] = {{"json", no_argument, NULL, OPT_JSON},
                                             {"top", required_argument, NULL, OPT_TOP},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    int64_t n;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        if (opt == OPT_JSON) {
            *json = true;
        } else if (opt == OPT_TOP) {
            if (cf_parse_int(optarg, 1, UINT32_MAX, &n) != 0)
                return cf_usage_error("diff", "--top \"%s\": expected a whole number from 1",
                                      optarg);
            *top = (unsigned)n;
        } else if (opt == 'h') {
            cf_help_print(stdout, "diff");
            return -1;
        } else {
            return CF_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) return cf_usage_error("diff", "needs two reports or traces");
    in[0] = argv[optind];
    in[1] = argv[optind + 1];
    return 0;
}

int cf_cmd_diff(int argc, char **argv)
{
    const char *in[2] = {NULL, NULL};
    bool json = false;
    unsigned top = 20;
    int rc = parse(argc, argv, in, &json, &top);
    if (rc) return rc < 0 ? 0 : rc;
    struct cf_view a, b;
    if (cf_view_load(in[0], &a) != 0) return 1;
    if (cf_view_load(in[1], &b) != 0) {
        cf_view_free(&a);
        return 1;
    }
    unsigned n = 0;
    struct row *r = rows_of(&a, &b, &n);
    notes(&a, &b);
    if (json) {
        json_out(&a, &b, r, n);
    } else {
        printf("cudafrag diff\n  A %s\n  B %s\n\n", a.source, b.source);
        text_totals(&a, &b);
        text_sites(r, n, top);
        text_findings(&a, &b);
    }
    free(r);
    cf_view_free(&a);
    cf_view_free(&b);
    return fflush(stdout) == 0 ? 0 : 1;
}
