/* Between the files of the findings; nothing outside them includes this. The
 * driver (findings.c) builds findings and merges the sites they cover; each rule
 * adds the findings of one kind of problem. */
#ifndef CF_REPORT_FINDINGS_RULES_H
#define CF_REPORT_FINDINGS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/findings.h"
#include "report/format.h"
#include "report/snapshot.h"
#include "base/log.h"

#define B(v) cf_fmt_bytes((v), (char[32]){0}, 32)
#define T(v) cf_fmt_secs((v), (char[32]){0}, 32)

/* ---- findings.c: building a finding ---- */
/* NULL when out of memory: the rule then adds nothing. */
struct cf_finding *cf_finding_add(struct cf_snap *s, const char *id, const char *severity,
                                  const char *measure);
void cf_finding_num(struct cf_finding *f, const char *name, double v);
void cf_finding_title(struct cf_finding *f, const char *fmt, ...) CF_PRINTF(2, 3);
void cf_finding_advice(struct cf_finding *f, const char *fmt, ...) CF_PRINTF(2, 3);

/* ---- findings.c: the sites a finding covers ---- */
struct cf_cover_pick {
    uintptr_t key; /* the frame the site is shown at */
    int site;
    double value;
    uint64_t count;
};

/* The sites picked for a finding, in the order found; cf_cover_finish merges them. */
struct cf_cover {
    struct cf_cover_pick *p;
    unsigned n, cap;
    double total;
};

typedef void cf_note_fn(const struct cf_snap *s, struct cf_finding_site *e);

void cf_cover_add(const struct cf_snap *s, struct cf_cover *c, int site, double value,
                  uint64_t count);
/* The picks become f->sites, largest first, each with its share and note; frees c. */
void cf_cover_finish(const struct cf_snap *s, struct cf_finding *f, struct cf_cover *c,
                     cf_note_fn *note);
const char *cf_finding_where(const struct cf_snap *s, const struct cf_finding *f, char *out,
                             size_t n);
double cf_finding_span_s(const struct cf_finding_site *e);
const char *cf_finding_pace(const struct cf_finding_site *e, char *out, size_t n);

static inline uint64_t cf_above(uint64_t held, uint64_t live)
{
    return held > live ? held - live : 0;
}

/* ---- findings_calls.c: rules on call sites ---- */
void cf_calls_note(const struct cf_snap *s, struct cf_finding_site *e);
void cf_alloc_rate_rule(struct cf_snap *s);
void cf_many_sizes_rule(struct cf_snap *s);
void cf_hot_loop_rule(struct cf_snap *s);

/* ---- findings_held.c: rules on what is live at the report, and on devices ---- */
void cf_leak_rule(struct cf_snap *s, bool held);
/* False when no site qualifies: cf_device_rounding_rule then looks at the devices. */
bool cf_site_rounding_rule(struct cf_snap *s);
void cf_device_rounding_rule(struct cf_snap *s);
void cf_footprint_rule(struct cf_snap *s);

/* ---- findings_failures.c: pools, out-of-memory events, failed calls ---- */
void cf_pool_rule(struct cf_snap *s);
/* One finding for the failures with enough free memory, one for the others. */
void cf_oom_rule(struct cf_snap *s, bool enough);
void cf_failure_rule(struct cf_snap *s);

/* ---- findings_owners.c: who owns the memory ---- */
void cf_library_memory_rule(struct cf_snap *s);

#endif
