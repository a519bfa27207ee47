/* cudafrag merge [--json] [-o OUT] R0 R1 ...: the reports (or traces) of a
 * job's ranks side by side: per rank its peaks, fragmentation, allocations,
 * leaks and findings; totals; the rank that peaked (the largest footprint of
 * one device, which is what runs out first) and how far above the mean it is;
 * call sites summed over ranks by key. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmdline.h"
#include "cli/names.h"
#include "cli/view.h"
#include "cli/views.h"
#include "report/format.h"
#include "report/json_write.h"
#include "report/oom.h"
#include "report/strbuf.h"

#define TOP_SITES 20

struct rank {
    struct cf_view v;
    uint64_t max_dev_fp; /* the largest peak footprint of one device */
    int max_dev;
    unsigned sev[3]; /* high, medium, low */
};

struct msite {
    const char *key, *label;
    uint64_t peak_live, bytes, leaked;
    unsigned ranks;
    const char *max_rank;
    uint64_t max_peak;
};

static void digest(struct rank *r)
{
    r->max_dev = -1;
    for (unsigned i = 0; i < r->v.ndevs; i++)
        if (r->max_dev < 0 || r->v.devs[i].peak_footprint > r->max_dev_fp) {
            r->max_dev_fp = r->v.devs[i].peak_footprint;
            r->max_dev = r->v.devs[i].device;
        }
    for (unsigned i = 0; i < r->v.nfindings; i++) {
        const char *s = r->v.findings[i].severity;
        r->sev[strcmp(s, "high") == 0 ? 0 : strcmp(s, "medium") == 0 ? 1 : 2]++;
    }
}

static int by_rank(const void *a, const void *b)
{
    const struct rank *x = a, *y = b;
    char *ex, *ey;
    long rx = strtol(x->v.rank, &ex, 10), ry = strtol(y->v.rank, &ey, 10);
    if (!*ex && !*ey && *x->v.rank && *y->v.rank && rx != ry) return rx < ry ? -1 : 1;
    return strcmp(x->v.rank, y->v.rank);
}

static int by_peak(const void *a, const void *b)
{
    uint64_t x = ((const struct msite *)a)->peak_live, y = ((const struct msite *)b)->peak_live;
    return (x < y) - (x > y);
}

/* The row of m (k rows so far) that sums vs's key, added when new; NULL when out of memory. */
static struct msite *msite_of(struct msite *m, unsigned *k, struct cf_rowindex *index,
                              const struct cf_view_site *vs)
{
    uint32_t cursor = 0, row;
    while (cf_rowindex_next(index, vs->hash, &cursor, &row))
        if (strcmp(m[row].key, vs->key) == 0) return &m[row];
    if (cf_rowindex_add(index, vs->hash, *k) != 0) return NULL;
    m[*k] = (struct msite){.key = vs->key, .label = vs->label};
    return &m[(*k)++];
}

static struct msite *sum_sites(const struct rank *r, unsigned n, unsigned *count)
{
    unsigned cap = 0, k = 0;
    for (unsigned i = 0; i < n; i++)
        cap += r[i].v.nsites;
    struct msite *m = calloc(cap + 1, sizeof *m);
    struct cf_rowindex index = {0};
    for (unsigned i = 0; m && i < n; i++)
        for (unsigned s = 0; s < r[i].v.nsites; s++) {
            const struct cf_view_site *vs = &r[i].v.sites[s];
            struct msite *x = msite_of(m, &k, &index, vs);
            if (x == NULL) { /* out of memory: sums without some sites would mislead */
                free(m);
                m = NULL;
                break;
            }
            x->peak_live += vs->peak_live;
            x->bytes += vs->bytes;
            x->leaked += vs->leaked;
            x->ranks++;
            if (x->max_rank == NULL || vs->peak_live > x->max_peak) {
                x->max_peak = vs->peak_live;
                x->max_rank = r[i].v.rank;
            }
        }
    cf_rowindex_free(&index);
    if (m) qsort(m, k, sizeof *m, by_peak);
    *count = m ? k : 0;
    return m;
}

static const struct rank *peak_rank(const struct rank *r, unsigned n, double *ratio)
{
    const struct rank *top = &r[0];
    double sum = 0;
    for (unsigned i = 0; i < n; i++) {
        sum += (double)r[i].max_dev_fp;
        if (r[i].max_dev_fp > top->max_dev_fp) top = &r[i];
    }
    *ratio = sum > 0 ? (double)top->max_dev_fp / (sum / n) : NAN;
    return top;
}

/* ---- what merge refuses ---- */

/* Why ranks a and b (their files fa and fb, zeroed when not found) cannot
 * both be merged; NULL when they can. */
static const char *why_twice(const struct cf_view *a, const struct cf_view *b,
                             const struct stat *fa, const struct stat *fb, char *why, size_t n)
{
    if (fa->st_ino && fa->st_dev == fb->st_dev && fa->st_ino == fb->st_ino)
        snprintf(why, n, "are the same file");
    else if (a->pid && a->pid == b->pid && strcmp(a->host, b->host) == 0)
        snprintf(why, n, "are of one run (pid %ld on %s)", a->pid, a->host);
    else
        return NULL;
    return why;
}

/* A rank counted twice would double the job's totals and could hide the rank
 * that peaked: the same file given twice, or two files of one run (a copy, or a
 * run's report beside its trace). Two runs that say they are the same rank are
 * merged with a warning: a process started without RANK, OMPI_COMM_WORLD_RANK or
 * SLURM_PROCID says it is rank 0, so separate runs of one program often do. */
static int refuse_twice(const struct rank *r, unsigned n)
{
    struct stat *f = calloc(n + 1, sizeof *f);
    if (f == NULL) return 1;
    for (unsigned i = 0; i < n; i++)
        if (stat(r[i].v.source, &f[i]) != 0) memset(&f[i], 0, sizeof f[i]);
    char why[320];
    int rc = 0;
    bool warned = false;
    for (unsigned i = 0; i < n && rc == 0; i++)
        for (unsigned k = 0; k < i && rc == 0; k++) {
            if (why_twice(&r[k].v, &r[i].v, &f[k], &f[i], why, sizeof why) != NULL)
                rc = cf_usage_error("merge", "%s and %s %s: give each rank once", r[k].v.source,
                                    r[i].v.source, why);
            else if (!warned && strcmp(r[k].v.rank, r[i].v.rank) == 0) {
                fprintf(stderr,
                        "cudafrag: merge: warning: %s and %s are both rank %s (separate runs: "
                        "set RANK to tell a job's ranks apart)\n",
                        r[k].v.source, r[i].v.source, r[i].v.rank);
                warned = true;
            }
        }
    free(f);
    return rc;
}

/* Ranks of one job run one program; anything else is most likely a wrong file. */
static void warn_programs(const struct rank *r, unsigned n)
{
    for (unsigned i = 1; i < n; i++)
        if (strcmp(cf_names_base(r[i].v.program), cf_names_base(r[0].v.program)) != 0) {
            fprintf(stderr,
                    "cudafrag: merge: warning: the reports are of different programs (%s in %s, "
                    "%s in %s)\n",
                    r[0].v.program, r[0].v.source, r[i].v.program, r[i].v.source);
            return;
        }
}

/* ---- text ---- */

static void text_rank(FILE *o, const struct rank *r)
{
    char l[32], f[32], m[32], a[32], k[32], fr[16] = "?";
    if (!isnan(r->v.frag)) snprintf(fr, sizeof fr, "%.1f%%", 100 * r->v.frag);
    fprintf(o, "%-6s %-14.14s %8ld %4u %11s %11s %11s %7s %10" PRIu64 " %11s %11s %u/%u/%u\n",
            r->v.rank, r->v.host, r->v.pid, r->v.ndevs, cf_fmt_bytes(r->v.peak_live, l, sizeof l),
            cf_fmt_bytes(r->v.peak_footprint, f, sizeof f),
            cf_fmt_bytes(r->max_dev_fp, m, sizeof m), fr, r->v.allocs,
            cf_fmt_bytes(r->v.alloc_bytes, a, sizeof a),
            cf_fmt_bytes(r->v.leaked_bytes, k, sizeof k), r->sev[0], r->sev[1], r->sev[2]);
}

/* Each rank's devices, one row each: a rank that touched a device it should not
 * (one process per GPU) shows up here. */
static void text_devices(FILE *o, const struct rank *r, unsigned n)
{
    char l[32], f[32];
    fprintf(o, "\n-- devices --\n%-6s %6s %11s %11s %7s %10s %10s\n", "rank", "device", "peak live",
            "footprint", "frag", "allocs", "frees");
    for (unsigned i = 0; i < n; i++)
        for (unsigned k = 0; k < r[i].v.ndevs; k++) {
            const struct cf_view_dev *d = &r[i].v.devs[k];
            char fr[16] = "?";
            if (!isnan(d->frag)) snprintf(fr, sizeof fr, "%.1f%%", 100 * d->frag);
            fprintf(o, "%-6s %6d %11s %11s %7s %10" PRIu64 " %10" PRIu64 "\n", r[i].v.rank,
                    d->device, cf_fmt_bytes(d->peak_live, l, sizeof l),
                    cf_fmt_bytes(d->peak_footprint, f, sizeof f), fr, d->allocs, d->frees);
        }
}

/* The rank whose first out-of-memory failure came first on the wall clock;
 * NULL when no rank failed or none says when (reports older than the time). */
static const struct rank *first_oom(const struct rank *r, unsigned n)
{
    const struct rank *first = NULL;
    for (unsigned i = 0; i < n; i++)
        if (r[i].v.ooms && !isnan(r[i].v.oom_first_unix_s) &&
            (first == NULL || r[i].v.oom_first_unix_s < first->v.oom_first_unix_s))
            first = &r[i];
    return first;
}

static const char *recovery(int recovered)
{
    return recovered == 1 ? "; recovered" : recovered == 0 ? "; did not recover" : "";
}

/* Which rank ran out of memory first, and each failing rank's time: in a job
 * the first one is the cause, the others often wait on it and fail after. */
static void text_oom(FILE *o, const struct rank *r, unsigned n)
{
    unsigned failed = 0;
    for (unsigned i = 0; i < n; i++)
        failed += r[i].v.ooms > 0;
    if (failed == 0) return;
    const struct rank *top = first_oom(r, n);
    char w[48];
    fprintf(o, "\nout of memory: %u of %u ranks", failed, n);
    if (top)
        fprintf(o, "; rank %s failed first, at %s\n", top->v.rank,
                cf_fmt_wall(top->v.oom_first_unix_s, w, sizeof w));
    else
        fprintf(o, "; which failed first is unknown (the reports do not give the wall clock)\n");
    for (unsigned i = 0; i < n; i++) {
        const struct cf_view *v = &r[i].v;
        if (v->ooms == 0) continue;
        char t[32];
        fprintf(o, "  rank %s: %" PRIu64 " failed allocation%s, first at +%s", v->rank, v->ooms,
                v->ooms == 1 ? "" : "s", cf_fmt_secs(v->oom_first_at_s, t, sizeof t));
        if (!isnan(v->oom_first_unix_s)) {
            fprintf(o, " (%s", cf_fmt_wall(v->oom_first_unix_s, w, sizeof w));
            if (top && top != &r[i])
                fprintf(o, ", %.3f s after rank %s", v->oom_first_unix_s - top->v.oom_first_unix_s,
                        top->v.rank);
            fputs(")", o);
        }
        fprintf(o, "%s%s\n", recovery(v->oom_recovered),
                v->at_oom ? " (the report written at the failure)" : "");
    }
}

static void text_out(FILE *o, const struct rank *r, unsigned n, const struct msite *m, unsigned nm)
{
    char a[32], b[32], c[32], d[32];
    uint64_t live = 0, fp = 0, allocs = 0, bytes = 0, leaked = 0;
    double ratio;
    fprintf(o, "cudafrag merge: %u ranks of %s\n\n", n, r[0].v.program);
    fprintf(o, "%-6s %-14s %8s %4s %11s %11s %11s %7s %10s %11s %11s %s\n", "rank", "host", "pid",
            "devs", "peak live", "footprint", "max device", "frag", "allocs", "allocated", "leaked",
            "findings h/m/l");
    for (unsigned i = 0; i < n; i++) {
        text_rank(o, &r[i]);
        live += r[i].v.peak_live, fp += r[i].v.peak_footprint, allocs += r[i].v.allocs;
        bytes += r[i].v.alloc_bytes, leaked += r[i].v.leaked_bytes;
    }
    fprintf(o, "%-6s %-14s %8s %4s %11s %11s %11s %7s %10" PRIu64 " %11s %11s\n", "total", "", "",
            "", cf_fmt_bytes(live, a, sizeof a), cf_fmt_bytes(fp, b, sizeof b), "", "", allocs,
            cf_fmt_bytes(bytes, c, sizeof c), cf_fmt_bytes(leaked, d, sizeof d));
    text_devices(o, r, n);
    const struct rank *top = peak_rank(r, n, &ratio);
    fprintf(o, "\npeak: rank %s, device %d, footprint %s (%.2fx the mean over ranks)\n",
            top->v.rank, top->max_dev, cf_fmt_bytes(top->max_dev_fp, a, sizeof a), ratio);
    text_oom(o, r, n);
    fprintf(o, "\n-- call sites by peak live bytes summed over ranks --\n");
    for (unsigned i = 0; i < nm && i < TOP_SITES; i++)
        fprintf(o, "  %11s  %u ranks, most on rank %s (%s)  %s\n",
                cf_fmt_bytes(m[i].peak_live, a, sizeof a), m[i].ranks, m[i].max_rank,
                cf_fmt_bytes(m[i].max_peak, b, sizeof b), m[i].label);
}

/* ---- JSON ---- */

static void json_dev(struct cf_jw *j, const struct cf_view_dev *d)
{
    cf_jw_obj(j, NULL);
    cf_jw_i64(j, "device", d->device);
    cf_jw_u64(j, "peak_live_bytes", d->peak_live);
    cf_jw_u64(j, "peak_footprint_bytes", d->peak_footprint);
    cf_jw_u64(j, "allocs", d->allocs);
    cf_jw_u64(j, "frees", d->frees);
    cf_jw_num(j, "fragmentation", d->frag);
    cf_jw_obj_end(j);
}

static void json_oom(struct cf_jw *j, const struct cf_view *v)
{
    cf_jw_obj(j, "oom");
    cf_jw_u64(j, "count", v->ooms);
    cf_jw_num(j, "first_at_s", v->ooms ? v->oom_first_at_s : NAN);
    cf_jw_fixed(j, "first_unix_s", v->ooms ? v->oom_first_unix_s : NAN, 6);
    if (v->ooms && v->oom_recovered >= 0)
        cf_jw_bool(j, "recovered", v->oom_recovered == 1);
    else
        cf_jw_null(j, "recovered");
    cf_jw_bool(j, "report_at_failure", v->at_oom);
    cf_jw_obj_end(j);
}

static void json_rank(struct cf_jw *j, const struct rank *r)
{
    cf_jw_obj(j, NULL);
    cf_jw_str(j, "rank", r->v.rank);
    cf_jw_str(j, "host", r->v.host);
    cf_jw_i64(j, "pid", r->v.pid);
    cf_jw_str(j, "source", r->v.source);
    cf_jw_arr(j, "devices");
    for (unsigned i = 0; i < r->v.ndevs; i++)
        json_dev(j, &r->v.devs[i]);
    cf_jw_arr_end(j);
    cf_jw_u64(j, "peak_live_bytes", r->v.peak_live);
    cf_jw_u64(j, "peak_footprint_bytes", r->v.peak_footprint);
    cf_jw_num(j, "fragmentation", r->v.frag);
    cf_jw_u64(j, "allocs", r->v.allocs);
    cf_jw_u64(j, "alloc_bytes", r->v.alloc_bytes);
    cf_jw_u64(j, "live_at_report_bytes", r->v.leaked_bytes);
    cf_jw_obj(j, "findings");
    cf_jw_u64(j, "high", r->sev[0]);
    cf_jw_u64(j, "medium", r->sev[1]);
    cf_jw_u64(j, "low", r->sev[2]);
    cf_jw_obj_end(j);
    json_oom(j, &r->v);
    cf_jw_obj_end(j);
}

static void json_totals(struct cf_jw *j, const struct rank *r, unsigned n)
{
    uint64_t live = 0, fp = 0, allocs = 0, bytes = 0, leaked = 0;
    for (unsigned i = 0; i < n; i++) {
        live += r[i].v.peak_live, fp += r[i].v.peak_footprint, allocs += r[i].v.allocs;
        bytes += r[i].v.alloc_bytes, leaked += r[i].v.leaked_bytes;
    }
    cf_jw_obj(j, "totals");
    cf_jw_u64(j, "ranks", n);
    cf_jw_u64(j, "peak_live_bytes", live);
    cf_jw_u64(j, "peak_footprint_bytes", fp);
    cf_jw_u64(j, "allocs", allocs);
    cf_jw_u64(j, "alloc_bytes", bytes);
    cf_jw_u64(j, "live_at_report_bytes", leaked);
    cf_jw_obj_end(j);
    double ratio;
    const struct rank *top = peak_rank(r, n, &ratio);
    cf_jw_obj(j, "peak_rank");
    cf_jw_str(j, "rank", top->v.rank);
    cf_jw_i64(j, "device", top->max_dev);
    cf_jw_u64(j, "peak_footprint_bytes", top->max_dev_fp);
    cf_jw_num(j, "over_mean", ratio);
    cf_jw_obj_end(j);
    const struct rank *oom = first_oom(r, n);
    if (oom) {
        cf_jw_obj(j, "first_oom");
        cf_jw_str(j, "rank", oom->v.rank);
        cf_jw_fixed(j, "first_unix_s", oom->v.oom_first_unix_s, 6);
        cf_jw_obj_end(j);
    } else {
        cf_jw_null(j, "first_oom");
    }
}

static void json_out(FILE *o, const struct rank *r, unsigned n, const struct msite *m, unsigned nm)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_obj(&j, NULL);
    cf_jw_arr(&j, "ranks");
    for (unsigned i = 0; i < n; i++)
        json_rank(&j, &r[i]);
    cf_jw_arr_end(&j);
    json_totals(&j, r, n);
    cf_jw_arr(&j, "sites");
    for (unsigned i = 0; i < nm; i++) {
        cf_jw_obj(&j, NULL);
        cf_jw_str(&j, "key", m[i].key);
        cf_jw_str(&j, "label", m[i].label);
        cf_jw_u64(&j, "peak_live_bytes", m[i].peak_live);
        cf_jw_u64(&j, "bytes", m[i].bytes);
        cf_jw_u64(&j, "ranks", m[i].ranks);
        cf_jw_str(&j, "max_rank", m[i].max_rank);
        cf_jw_u64(&j, "max_peak_live_bytes", m[i].max_peak);
        cf_jw_obj_end(&j);
    }
    cf_jw_arr_end(&j);
    cf_jw_obj_end(&j);
    cf_buf_puts(&b, "\n");
    if (!b.failed) fwrite(b.data, 1, b.len, o);
    cf_buf_free(&b);
}

/* --json, -o OUT and *first, the index of the first input: 0, -1 after
 * --help, or the usage status. */
static int parse(int argc, char **argv, const char **out, bool *json, int *first)
{
    enum { OPT_JSON = CF_OPT_LONG };
    static const struct option longopts[] = {{"json", no_argument, NULL, OPT_JSON},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":ho:", longopts, &started)) != -1;) {
        if (opt == OPT_JSON) {
            *json = true;
        } else if (opt == 'o') {
            *out = optarg;
        } else if (opt == 'h') {
            cf_help_print(stdout, "merge");
            return -1;
        } else {
            return CF_EXIT_USAGE;
        }
    }
    *first = optind;
    if (optind == argc) return cf_usage_error("merge", "needs at least one report");
    return cf_out_not_input("merge", *out, argv + optind, argc - optind);
}

int cf_cmd_merge(int argc, char **argv)
{
    const char *out = "-";
    bool json = false;
    int first = 0, rc = parse(argc, argv, &out, &json, &first);
    if (rc) return rc < 0 ? 0 : rc;
    struct rank *r = calloc((size_t)argc + 1, sizeof *r);
    unsigned n = 0, nm = 0;
    rc = r ? 0 : 1;
    for (int i = first; i < argc && rc == 0; i++) {
        if (cf_view_load(argv[i], &r[n].v) == 0)
            digest(&r[n++]);
        else
            rc = 1;
    }
    if (rc == 0) rc = refuse_twice(r, n);
    if (rc == 0) warn_programs(r, n);
    FILE *o = rc == 0 ? cf_out_open(out) : NULL;
    if (o) {
        qsort(r, n, sizeof *r, by_rank);
        struct msite *m = sum_sites(r, n, &nm);
        if (m == NULL)
            fprintf(stderr, "cudafrag: out of memory while summing the call sites\n");
        else if (json)
            json_out(o, r, n, m, nm);
        else
            text_out(o, r, n, m, nm);
        rc = cf_out_close(o, out);
        if (m == NULL) rc = 1;
        free(m);
    } else if (rc == 0) {
        rc = 1;
    }
    for (unsigned i = 0; i < n; i++)
        cf_view_free(&r[i].v);
    free(r);
    return rc;
}
