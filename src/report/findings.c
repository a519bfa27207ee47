/* The findings' driver: the rules run in order (findings_calls.c, findings_held.c,
 * findings_failures.c), and what they share to build a finding and the sites it covers. */
#include "report/findings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/findings_rules.h"

/* ---- building findings ---- */

struct cf_finding *cf_finding_add(struct cf_snap *s, const char *id, const char *severity,
                                  const char *measure)
{
    static const unsigned chunk = 16;
    if (s->nfindings % chunk == 0) {
        struct cf_finding *f = realloc(s->findings, (s->nfindings + chunk) * sizeof *f);
        if (f == NULL) return NULL;
        s->findings = f;
    }
    struct cf_finding *f = &s->findings[s->nfindings++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->severity = severity;
    f->site = -1;
    f->measure = measure;
    return f;
}

void cf_finding_num(struct cf_finding *f, const char *name, double v)
{
    if (f->nnum < CF_FINDING_NUMS) {
        f->num[f->nnum].name = name;
        f->num[f->nnum++].value = v;
    }
}

void cf_finding_title(struct cf_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->title, sizeof f->title, fmt, ap);
    va_end(ap);
}

void cf_finding_advice(struct cf_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->advice, sizeof f->advice, fmt, ap);
    va_end(ap);
}

/* ---- the sites a finding covers ---- */

/* Stacks are merged by the frame they are shown at: a framework's allocator
 * reached from one line of the program along many paths is one site to change. */
static uintptr_t shown_key(const struct cf_snap *s, int site)
{
    int f = cf_snap_site_shown(s, site);
    if (site < 0) return UINTPTR_MAX;
    return f >= 0 ? s->sites[site].frames[f] : UINTPTR_MAX - 1 - (uintptr_t)site;
}

void cf_cover_add(const struct cf_snap *s, struct cf_cover *c, int site, double value,
                  uint64_t count)
{
    if (c->n == c->cap) {
        unsigned cap = c->cap ? 2 * c->cap : 16;
        struct cf_cover_pick *p = realloc(c->p, cap * sizeof *p);
        if (p == NULL) return;
        c->p = p;
        c->cap = cap;
    }
    c->p[c->n++] = (struct cf_cover_pick){shown_key(s, site), site, value, count};
    c->total += value;
}

static int by_key_then_value(const void *a, const void *b)
{
    const struct cf_cover_pick *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->value < y->value) - (x->value > y->value);
}

static int by_value_desc(const void *a, const void *b)
{
    const struct cf_finding_site *x = a, *y = b;
    if (x->value != y->value) return (x->value < y->value) - (x->value > y->value);
    return (x->key > y->key) - (x->key < y->key);
}

static void merge_pick(const struct cf_snap *s, struct cf_finding_site *e,
                       const struct cf_cover_pick *p)
{
    if (e->stacks++ == 0) {
        e->key = p->key;
        e->site = p->site; /* runs are sorted largest first */
        e->first_ns = UINT64_MAX;
    }
    e->value += p->value;
    e->count += p->count;
    if (p->site < 0) return;
    const struct cf_site *st = &s->sites[p->site];
    if (st->first_ns && st->first_ns < e->first_ns) e->first_ns = st->first_ns;
    if (st->last_ns > e->last_ns) e->last_ns = st->last_ns;
}

/* The picks become f->sites, largest first, each with its share and note. */
void cf_cover_finish(const struct cf_snap *s, struct cf_finding *f, struct cf_cover *c,
                     cf_note_fn *note)
{
    qsort(c->p, c->n, sizeof *c->p, by_key_then_value);
    f->sites = calloc(c->n ? c->n : 1, sizeof *f->sites);
    for (unsigned i = 0; f->sites && i < c->n; i++) {
        if (i > 0 && c->p[i].key != c->p[i - 1].key) f->nsites++;
        merge_pick(s, &f->sites[f->nsites], &c->p[i]);
    }
    if (f->sites && c->n) f->nsites++;
    qsort(f->sites, f->nsites, sizeof *f->sites, by_value_desc);
    for (unsigned i = 0; i < f->nsites; i++) {
        f->sites[i].share = c->total > 0 ? f->sites[i].value / c->total : 0;
        if (note) note(s, &f->sites[i]);
    }
    if (f->nsites) f->site = f->sites[0].site;
    free(c->p);
    *c = (struct cf_cover){0};
}

/* The site's name when there is one, else "N call sites". */
const char *cf_finding_where(const struct cf_snap *s, const struct cf_finding *f, char *out,
                             size_t n)
{
    if (f->nsites == 1)
        cf_snap_site_label_short(s, f->sites[0].site, out, n);
    else
        snprintf(out, n, "%u call sites", f->nsites);
    return out;
}

double cf_finding_span_s(const struct cf_finding_site *e)
{
    return e->last_ns > e->first_ns && e->first_ns != UINT64_MAX
               ? (double)(e->last_ns - e->first_ns) / 1e9
               : 0;
}

/* "at 2500/s" over a second or more; a shorter burst as its span, never as a
 * rate of a one-second floor. */
const char *cf_finding_pace(const struct cf_finding_site *e, char *out, size_t n)
{
    double span = cf_finding_span_s(e);
    if (span >= 1.0)
        snprintf(out, n, "at %.0f/s", (double)e->count / span);
    else
        snprintf(out, n, "within %s", T(span));
    return out;
}

/* ---- all of them ---- */

static int severity_rank(const char *sev)
{
    return strcmp(sev, "high") == 0 ? 0 : strcmp(sev, "medium") == 0 ? 1 : 2;
}

/* High first; within a severity, grouped by id. */
static int finding_order(const struct cf_finding *a, const struct cf_finding *b)
{
    int d = severity_rank(a->severity) - severity_rank(b->severity);
    return d ? d : strcmp(a->id, b->id);
}

int cf_findings_compute(struct cf_snap *s)
{
    cf_oom_rule(s, true);
    cf_oom_rule(s, false);
    cf_failure_rule(s);
    cf_alloc_rate_rule(s);
    cf_many_sizes_rule(s);
    cf_hot_loop_rule(s);
    bool site_waste = cf_site_rounding_rule(s);
    if (!s->interim) {
        cf_leak_rule(s, true);
        cf_leak_rule(s, false);
    }
    cf_footprint_rule(s);
    if (!site_waste) cf_device_rounding_rule(s);
    cf_pool_rule(s);
    cf_library_memory_rule(s);
    /* Insertion sort: stable, so findings of one id keep the order they were found in. */
    for (unsigned i = 1; i < s->nfindings; i++) {
        struct cf_finding tmp = s->findings[i];
        unsigned j = i;
        for (; j > 0 && finding_order(&s->findings[j - 1], &tmp) > 0; j--)
            s->findings[j] = s->findings[j - 1];
        s->findings[j] = tmp;
    }
    return 0;
}

void cf_findings_free(struct cf_snap *s)
{
    for (unsigned i = 0; i < s->nfindings; i++)
        free(s->findings[i].sites);
    free(s->findings);
    s->findings = NULL;
    s->nfindings = 0;
}
