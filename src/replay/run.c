/* A model is run twice over the stream: the first pass finds the peak of its
 * footprint, the driver calls and the first out of memory; the second stops at
 * the peak to measure the fragmentation there (a free-space scan at every new
 * peak would cost a scan per allocation on a growing program). The models are
 * deterministic, so the second pass walks through the same states. Asked only
 * whether it fits (advise's searches), one pass, to the first out of memory. */
#include "replay/run.h"

#include <stdio.h>
#include <string.h>

static struct cf_rp_model *start(const struct cf_rp_stream *s, const struct cf_rp_config *c,
                                 const struct cf_rp_run_opts *o, struct cf_rp_result *r)
{
    struct cf_rp_setup st = {.device_memory = o->device_memory, .nallocs = s->nallocs};
    memcpy(st.knob, c->val, sizeof st.knob);
    const char *why = "failed";
    struct cf_rp_model *m = c->def->create(&st, &why);
    if (m == NULL) snprintf(r->error, sizeof r->error, "%s: %s", c->label, why);
    return m;
}

static void step(struct cf_rp_model *m, const struct cf_rp_op *op, uint64_t i,
                 struct cf_rp_result *r)
{
    if (op->free) {
        m->def->free(m, op);
        return;
    }
    if (m->def->alloc(m, op)) return;
    if (!r->oom) {
        r->oom = true;
        r->oom_op = i;
        r->oom_t_ns = op->t_ns;
        r->oom_seq = op->seq;
        r->oom_size = op->size;
    }
    r->ooms++;
}

int cf_rp_run(const struct cf_rp_stream *s, const struct cf_rp_config *c,
              const struct cf_rp_run_opts *o, struct cf_rp_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->label, sizeof r->label, "%s", c->label);
    r->config = c;
    r->peak_live = s->peak_live;
    struct cf_rp_model *m = start(s, c, o, r);
    if (m == NULL) return -1;
    uint64_t live = 0;
    for (uint64_t i = 0; i < s->nops; i++) {
        const struct cf_rp_op *op = &s->ops[i];
        step(m, op, i, r);
        if (r->oom && o->fit_only) break;
        live = op->free ? live - op->size : live + op->size;
        if (m->footprint > r->peak_footprint) {
            r->peak_footprint = m->footprint;
            r->peak_op = i;
            r->peak_t_ns = op->t_ns;
            r->live_at_peak = live;
        }
        if (o->check_every && ((i + 1) % o->check_every == 0 || i + 1 == s->nops))
            r->violations += m->def->check(m);
    }
    r->driver_calls = m->driver_calls;
    m->def->destroy(m);
    if (r->peak_footprint == 0 || o->fit_only) return 0;

    struct cf_rp_result again = {0};
    if ((m = start(s, c, o, &again)) == NULL) {
        snprintf(r->error, sizeof r->error, "%s", again.error);
        return -1;
    }
    for (uint64_t i = 0; i <= r->peak_op; i++)
        step(m, &s->ops[i], i, &again);
    r->granted_at_peak = m->granted;
    if (m->granted < r->live_at_peak)
        r->violations++; /* a model never grants less than is asked */
    else if (r->live_at_peak)
        r->internal = (double)(m->granted - r->live_at_peak) / (double)r->live_at_peak;
    r->external = m->def->ext_frag(m);
    /* A model that is not deterministic would reach another state here. */
    if (m->footprint != r->peak_footprint) r->violations++;
    if (o->check_every) r->violations += m->def->check(m);
    m->def->destroy(m);
    return 0;
}
