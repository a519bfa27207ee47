#include "replay/table.h"

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "report/format.h"
#include "report/json_write.h"

/* Whether r does better than b: no error, no out of memory when the other runs
 * out, then the lower peak footprint, then fewer driver calls. */
static bool better(const struct cf_rp_result *r, const struct cf_rp_result *b)
{
    if (r->error[0]) return false;
    if (b == NULL) return true;
    if (r->oom != b->oom) return !r->oom;
    if (r->peak_footprint != b->peak_footprint) return r->peak_footprint < b->peak_footprint;
    return r->driver_calls < b->driver_calls;
}

int cf_rp_sweep_best(const struct cf_rp_result *rows, unsigned first, unsigned count)
{
    int best = -1;
    for (unsigned i = first; i < first + count; i++)
        if (better(&rows[i], best < 0 ? NULL : &rows[best])) best = (int)i;
    return best;
}

/* The rows that are allocators (the lower bound is a floor, not one) and ran. */
static bool ranked(const struct cf_rp_result *r)
{
    return !r->error[0] && !(r->config && r->config->def == &cf_rp_model_lower_bound);
}

int cf_rp_best_model(const struct cf_rp_device_table *d)
{
    int best = -1;
    for (unsigned i = 0; i < d->nresults; i++) {
        const struct cf_rp_result *r = &d->results[i];
        /* One that ran out of memory peaked low because it stopped: never the best. */
        if (!ranked(r) || r->oom) continue;
        if (better(r, best < 0 ? NULL : &d->results[best])) best = (int)i;
    }
    return best;
}

bool cf_rp_none_fits(const struct cf_rp_device_table *d)
{
    bool any = false;
    for (unsigned i = 0; i < d->nresults; i++) {
        if (!ranked(&d->results[i])) continue;
        if (!d->results[i].oom) return false;
        any = true;
    }
    return any;
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

static double secs(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* ---- text ---- */

void cf_rp_oom_text(const struct cf_rp_device_table *d, const struct cf_rp_result *r, char *out,
                    size_t n)
{
    char t[32];
    if (d->device_memory == CF_RP_UNLIMITED)
        snprintf(out, n, "-");
    else if (!r->oom)
        snprintf(out, n, "no");
    else if (r->ooms > 1)
        snprintf(out, n, "at op %llu, +%s (%llu times)", (unsigned long long)r->oom_op,
                 cf_fmt_secs(secs(r->oom_t_ns), t, sizeof t), (unsigned long long)r->ooms);
    else
        snprintf(out, n, "at op %llu, +%s", (unsigned long long)r->oom_op,
                 cf_fmt_secs(secs(r->oom_t_ns), t, sizeof t));
}

static void row_text(const struct cf_rp_table *t, const struct cf_rp_device_table *d,
                     const struct cf_rp_result *r, int width, struct cf_buf *o)
{
    char peak[32], oom[96];
    if (r->error[0]) {
        cf_buf_printf(o, "  %-*s  not run: %s\n", width, r->label, r->error);
        return;
    }
    cf_rp_oom_text(d, r, oom, sizeof oom);
    cf_buf_printf(o, "  %-*s  %14s  %7.3f  %8.1f%%  %8.1f%%  %12llu  %s", width, r->label,
                  cf_fmt_bytes(r->peak_footprint, peak, sizeof peak),
                  ratio(r->peak_footprint, r->peak_live), 100 * r->internal, 100 * r->external,
                  (unsigned long long)r->driver_calls, oom);
    if (t->checked) cf_buf_printf(o, "  [checks: %d failed]", r->violations);
    cf_buf_puts(o, "\n");
}

static void sweep_text(const struct cf_rp_device_table *d, const struct cf_rp_sweep *s,
                       struct cf_buf *o)
{
    char peak[32];
    const struct cf_rp_result *base = &d->results[s->base];
    if (s->best < 0) {
        cf_buf_printf(o, "  sweep of %s for %s: no setting ran\n", s->knob, base->label);
        return;
    }
    const struct cf_rp_result *b = &d->results[s->best];
    cf_buf_printf(o, "  best %s for %s: %s (peak %s", s->knob, base->label, b->label,
                  cf_fmt_bytes(b->peak_footprint, peak, sizeof peak));
    if (!base->error[0] && base->peak_footprint)
        cf_buf_printf(o, ", %+.1f%% against %s",
                      100.0 * ((double)b->peak_footprint / (double)base->peak_footprint - 1),
                      base->label);
    cf_buf_puts(o, b->oom ? ", runs out of memory)\n" : ")\n");
}

static void best_text(const struct cf_rp_device_table *d, struct cf_buf *o)
{
    char peak[32];
    if (cf_rp_none_fits(d)) {
        cf_buf_printf(o, "  best: none: no model fits in %s of device memory\n",
                      cf_fmt_bytes(d->device_memory, peak, sizeof peak));
        return;
    }
    int best = cf_rp_best_model(d);
    if (best < 0) return;
    const struct cf_rp_result *b = &d->results[best];
    cf_buf_printf(o, "  best: %s (peak footprint %s, %.3f x live)\n", b->label,
                  cf_fmt_bytes(b->peak_footprint, peak, sizeof peak),
                  ratio(b->peak_footprint, b->peak_live));
}

static void device_text(const struct cf_rp_table *t, const struct cf_rp_device_table *d,
                        struct cf_buf *o)
{
    char a[32], b[32];
    const struct cf_rp_stream *s = d->stream;
    cf_buf_printf(o, "\ndevice %d: %u allocations, %u frees replayed; peak live %s at +%s\n",
                  s->device, s->nallocs, s->nfrees, cf_fmt_bytes(s->peak_live, a, sizeof a),
                  cf_fmt_secs(secs(s->peak_live_t_ns), b, sizeof b));
    if (d->device_memory == CF_RP_UNLIMITED)
        cf_buf_puts(o, "  device memory not known (give --device-memory): no out-of-memory "
                       "check\n");
    else
        cf_buf_printf(o, "  device memory %s (%s)\n", cf_fmt_bytes(d->device_memory, a, sizeof a),
                      strcmp(d->memory_from, "trace") == 0 ? "from the trace"
                                                           : "from --device-memory");
    if (d->traced_known)
        cf_buf_printf(o, "  traced run: peak footprint %s (%.3f x its peak live %s)\n",
                      cf_fmt_bytes(d->traced_peak_footprint, a, sizeof a),
                      ratio(d->traced_peak_footprint, d->traced_peak_live),
                      cf_fmt_bytes(d->traced_peak_live, b, sizeof b));
    int width = 5;
    for (unsigned i = 0; i < d->nresults; i++) {
        int len = (int)strlen(d->results[i].label);
        if (len > width) width = len;
    }
    cf_buf_printf(o, "\n  %-*s  %14s  %7s  %9s  %9s  %12s  %s\n", width, "model", "peak footprint",
                  "x live", "internal", "external", "driver calls", "out of memory");
    for (unsigned i = 0; i < d->nresults; i++)
        row_text(t, d, &d->results[i], width, o);
    best_text(d, o);
    if (d->nsweeps) cf_buf_puts(o, "\n");
    for (unsigned i = 0; i < d->nsweeps; i++)
        sweep_text(d, &d->sweeps[i], o);
}

void cf_rp_cache_note(const struct cf_rp_table *t, struct cf_buf *o)
{
    const char *fw = t->cache.framework;
    if (fw == NULL) return;
    cf_buf_printf(o,
                  "not block-level: %llu of %llu allocations replayed came from %s's caching "
                  "allocator\n(%s), in a run that did not bypass it: unless the program "
                  "turned the cache off\nitself, they are the cache's segments, not its "
                  "tensors, and every model below caches them\nagain. For the tensors, trace "
                  "the run with `cudafrag run --blocks --trace` or import a\nmemory snapshot "
                  "(`cudafrag import`): docs/replay.md.\n",
                  (unsigned long long)t->cache.allocations, (unsigned long long)t->cache.of, fw,
                  t->cache.module);
}

void cf_rp_render_text(const struct cf_rp_table *t, struct cf_buf *o)
{
    cf_buf_printf(o, "-- what-if replay of %s --\n", t->trace);
    if (t->program && t->program[0]) cf_buf_printf(o, "program: %s\n", t->program);
    if (t->blocks && t->blocks[0])
        cf_buf_printf(o, "blocks: framework caches bypassed (cudafrag run --blocks): %s\n",
                      t->blocks);
    cf_rp_cache_note(t, o);
    if (t->ndevs == 0) cf_buf_puts(o, "\nno device memory was allocated: nothing to replay\n");
    for (unsigned i = 0; i < t->ndevs; i++)
        device_text(t, &t->devs[i], o);
    cf_buf_puts(o, "\npeak footprint: device memory the allocator holds at its peak; x live: "
                   "over the peak of live bytes\nrequested; internal, external: fragmentation "
                   "at that peak (docs/replay.md)\n");
}

/* ---- JSON ---- */

static void result_json(struct cf_jw *j, const struct cf_rp_table *t,
                        const struct cf_rp_device_table *d, const struct cf_rp_result *r)
{
    const struct cf_rp_config *c = r->config;
    cf_jw_obj(j, NULL);
    cf_jw_str(j, "model", c->def->name);
    cf_jw_str(j, "label", r->label);
    cf_jw_obj(j, "knobs");
    for (unsigned i = 0; i < c->def->nknobs; i++)
        cf_jw_str(j, c->def->knobs[i].name, c->set[i] ? c->text[i] : c->def->knobs[i].def);
    cf_jw_obj_end(j);
    if (r->error[0]) {
        cf_jw_str(j, "error", r->error);
        cf_jw_obj_end(j);
        return;
    }
    cf_jw_u64(j, "peak_footprint_bytes", r->peak_footprint);
    cf_jw_num(j, "peak_footprint_over_peak_live", ratio(r->peak_footprint, r->peak_live));
    cf_jw_u64(j, "peak_at_op", r->peak_op);
    cf_jw_num(j, "peak_at_s", secs(r->peak_t_ns));
    cf_jw_u64(j, "live_at_peak_bytes", r->live_at_peak);
    cf_jw_u64(j, "granted_at_peak_bytes", r->granted_at_peak);
    cf_jw_num(j, "internal_fragmentation_at_peak", r->internal);
    cf_jw_num(j, "external_fragmentation_at_peak", r->external);
    cf_jw_u64(j, "driver_calls", r->driver_calls);
    if (d->device_memory == CF_RP_UNLIMITED || !r->oom) {
        cf_jw_null(j, "oom");
    } else {
        cf_jw_obj(j, "oom");
        cf_jw_u64(j, "op", r->oom_op);
        cf_jw_u64(j, "seq", r->oom_seq);
        cf_jw_num(j, "at_s", secs(r->oom_t_ns));
        cf_jw_u64(j, "request_bytes", r->oom_size);
        cf_jw_u64(j, "count", r->ooms);
        cf_jw_obj_end(j);
    }
    if (t->checked) cf_jw_u64(j, "check_violations", (uint64_t)r->violations);
    cf_jw_obj_end(j);
}

static void device_json(struct cf_jw *j, const struct cf_rp_table *t,
                        const struct cf_rp_device_table *d)
{
    const struct cf_rp_stream *s = d->stream;
    cf_jw_obj(j, NULL);
    cf_jw_u64(j, "device", (uint64_t)s->device);
    cf_jw_known(j, "device_memory_bytes", d->device_memory, d->device_memory != CF_RP_UNLIMITED);
    cf_jw_str(j, "device_memory_from", d->device_memory == CF_RP_UNLIMITED ? NULL : d->memory_from);
    cf_jw_u64(j, "allocations", s->nallocs);
    cf_jw_u64(j, "frees", s->nfrees);
    cf_jw_u64(j, "peak_live_bytes", s->peak_live);
    cf_jw_num(j, "peak_live_at_s", secs(s->peak_live_t_ns));
    if (d->traced_known) {
        cf_jw_obj(j, "traced");
        cf_jw_u64(j, "peak_footprint_bytes", d->traced_peak_footprint);
        cf_jw_u64(j, "peak_live_bytes", d->traced_peak_live);
        cf_jw_obj_end(j);
    }
    cf_jw_arr(j, "models");
    for (unsigned i = 0; i < d->nresults; i++)
        result_json(j, t, d, &d->results[i]);
    cf_jw_arr_end(j);
    int best = cf_rp_best_model(d);
    cf_jw_str(j, "best", best < 0 ? NULL : d->results[best].label);
    cf_jw_bool(j, "no_model_fits", cf_rp_none_fits(d));
    cf_jw_arr(j, "sweeps");
    for (unsigned i = 0; i < d->nsweeps; i++) {
        const struct cf_rp_sweep *w = &d->sweeps[i];
        cf_jw_obj(j, NULL);
        cf_jw_str(j, "knob", w->knob);
        cf_jw_str(j, "base", d->results[w->base].label);
        cf_jw_arr(j, "labels");
        for (unsigned r = w->first; r < w->first + w->count; r++)
            cf_jw_str(j, NULL, d->results[r].label);
        cf_jw_arr_end(j);
        cf_jw_str(j, "best", w->best < 0 ? NULL : d->results[w->best].label);
        cf_jw_obj_end(j);
    }
    cf_jw_arr_end(j);
    cf_jw_obj_end(j);
}

/* As in the report: the switches as a list, null when not a --blocks run. */
static void block_capture(struct cf_jw *j, const char *blocks)
{
    if (blocks == NULL || blocks[0] == '\0') {
        cf_jw_str(j, "block_capture", NULL);
        return;
    }
    cf_jw_arr(j, "block_capture");
    char item[512];
    for (const char *p = cf_opt_item(blocks, item, sizeof item); p;
         p = cf_opt_item(p, item, sizeof item))
        cf_jw_str(j, NULL, item);
    cf_jw_arr_end(j);
}

static void cache_json(struct cf_jw *j, const struct cf_rp_table *t)
{
    if (t->cache.framework == NULL) {
        cf_jw_str(j, "framework_cache", NULL);
        return;
    }
    struct cf_buf note = {0};
    cf_rp_cache_note(t, &note);
    cf_jw_obj(j, "framework_cache");
    cf_jw_str(j, "framework", t->cache.framework);
    cf_jw_str(j, "module", t->cache.module);
    cf_jw_u64(j, "allocations", t->cache.allocations);
    cf_jw_u64(j, "of", t->cache.of);
    cf_jw_str(j, "note", note.failed ? NULL : note.data);
    cf_jw_obj_end(j);
    cf_buf_free(&note);
}

void cf_rp_render_json(const struct cf_rp_table *t, struct cf_buf *o)
{
    struct cf_jw j = cf_jw_start_spaced(o);
    cf_jw_obj(&j, NULL);
    cf_jw_str(&j, "trace", t->trace);
    cf_jw_str(&j, "program", t->program);
    block_capture(&j, t->blocks);
    cache_json(&j, t);
    cf_jw_arr(&j, "devices");
    for (unsigned i = 0; i < t->ndevs; i++)
        device_json(&j, t, &t->devs[i]);
    cf_jw_arr_end(&j);
    cf_jw_obj_end(&j);
    cf_buf_puts(o, "\n");
}
