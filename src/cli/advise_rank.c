/* `cudafrag advise`'s ranking and decision: which of the settings a device
 * tried to advise, keep or none, with the cautions the pick rests on; for JAX,
 * one decision for every device of the process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/advise.h"

static bool fits(const struct cf_adv_setting *s)
{
    return s->result.error[0] == '\0' && !s->result.oom;
}

static const struct cf_adv_device *ranking; /* for qsort's comparison */
static uint64_t band_top;                   /* peaks up to this are equal: the models' error */

static bool in_band(const struct cf_adv_setting *s)
{
    return fits(s) && s->result.peak_footprint <= band_top;
}

static int cmp(uint64_t x, uint64_t y)
{
    return x < y ? -1 : x > y;
}

/* Fits first. Peaks within the models' error of the lowest are equal: among
 * them the fewest knobs changed, then the native allocator (the cudaMallocAsync
 * backend replaces it, and its model ran 1.1 to 2.9 % low on every H200
 * measurement), then the lowest peak. The rest by peak, then knobs. Then the
 * fewest driver calls, then the order tried. */
static int cmp_rank(const void *x, const void *y)
{
    unsigned i = *(const unsigned *)x, j = *(const unsigned *)y;
    const struct cf_adv_setting *s = &ranking->settings[i], *t = &ranking->settings[j];
    const struct cf_rp_result *r = &s->result, *q = &t->result;
    int c = 0;
    if (fits(s) != fits(t)) return fits(s) ? -1 : 1;
    if (in_band(s) != in_band(t)) return in_band(s) ? -1 : 1;
    if (in_band(s)) {
        c = cmp(s->changed, t->changed);
        if (!c)
            c = cmp(s->config.def == &cf_rp_model_async_pool,
                    t->config.def == &cf_rp_model_async_pool);
        if (!c) c = cmp(r->peak_footprint, q->peak_footprint);
    } else {
        c = cmp(r->peak_footprint, q->peak_footprint);
        if (!c) c = cmp(s->changed, t->changed);
    }
    if (!c) c = cmp(r->driver_calls, q->driver_calls);
    return c ? c : cmp(i, j);
}

static void pct(char *out, size_t n, double f)
{
    snprintf(out, n, "%.1f %%", 100.0 * f);
}

/* The setting with the lowest peak that fits; -1 when none does. */
static int lowest(const struct cf_adv_device *d)
{
    int low = -1;
    for (unsigned i = 0; i < d->nsettings; i++)
        if (fits(&d->settings[i]) && (low < 0 || d->settings[i].result.peak_footprint <
                                                     d->settings[low].result.peak_footprint))
            low = (int)i;
    return low;
}

/* What the pick rests on, for JAX: the smallest pool the run fits in. */
static void jax_caution(const struct cf_adv_device *d, char *out, size_t n)
{
    const struct cf_adv_setting *pick = &d->settings[d->pick];
    const char *unchecked = pick->unmeasured ? "; the xla-bfc model follows XLA's source and was "
                                               "measured on one JAX loop only (within 0.1 %, "
                                               "docs/replay.md): check with a run"
                                             : "";
    if (strstr(pick->conf, "MEM_FRACTION") && !strstr(pick->conf, "PREALLOCATE") && d->jax_need)
        snprintf(out, n,
                 "the smallest preallocated pool this run fits in is %.3f of the device; the "
                 "fraction advised is at least %.0f %% above it, for the model's error, and the "
                 "run fits in pools up to 5 %% larger too (best fit can fail in a larger pool)%s",
                 (double)d->jax_need / (double)d->device_memory, 100.0 * CF_ADV_JAX_HEADROOM,
                 unchecked);
    else if (unchecked[0])
        snprintf(out, n, "%s", unchecked + 2);
}

static void cautions(struct cf_adv_device *d, int low, bool jax)
{
    const struct cf_adv_setting *own = &d->settings[d->own];
    char p[32];
    if (d->advice == CF_ADV_KEEP && low != d->own &&
        d->settings[low].result.peak_footprint < own->result.peak_footprint) {
        const struct cf_adv_setting *best = &d->settings[low];
        double f = 1.0 - (double)best->result.peak_footprint / (double)own->result.peak_footprint;
        pct(p, sizeof p, f);
        snprintf(d->caution[0], sizeof d->caution[0],
                 "%s is predicted %s lower, less than the models' documented error (3 %%): not "
                 "worth a change on this evidence",
                 best->conf[0] ? best->conf
                 : jax         ? "JAX's defaults"
                               : "PyTorch's defaults",
                 p);
    }
    if (d->advice != CF_ADV_CHANGE) return;
    if (jax)
        jax_caution(d, d->caution[1], sizeof d->caution[1]);
    else if (d->settings[d->pick].unmeasured || own->unmeasured)
        snprintf(d->caution[1], sizeof d->caution[1],
                 "the model's figures for max_split_size_mb, roundup_power2_divisions and "
                 "garbage_collection_threshold follow PyTorch's source but were not measured on "
                 "a GPU: check with a run");
}

/* Keep the run's own setting when nothing that fits beats it by more than the
 * models' error; else the first ranked setting that does. */
void cf_adv_decide(struct cf_adv_device *d, bool jax)
{
    int low = lowest(d);
    const struct cf_adv_setting *own = &d->settings[d->own];
    for (unsigned i = 0; i < d->nsettings; i++)
        d->rank[i] = i;
    ranking = d;
    band_top = low < 0 ? 0
                       : (uint64_t)((double)d->settings[low].result.peak_footprint *
                                    (1.0 + CF_ADV_MODEL_ERROR));
    qsort(d->rank, d->nsettings, sizeof *d->rank, cmp_rank);
    double bar = fits(own) ? (double)own->result.peak_footprint * (1.0 - CF_ADV_MODEL_ERROR) : 0;
    d->pick = d->own;
    d->advice = CF_ADV_KEEP;
    if (low < 0) {
        d->advice = CF_ADV_NONE_FITS;
        d->pick = -1;
    } else if (!fits(own) || (double)d->settings[low].result.peak_footprint < bar) {
        d->advice = CF_ADV_CHANGE;
        for (unsigned r = 0; r < d->nsettings && d->pick == d->own; r++) {
            const struct cf_adv_setting *s = &d->settings[d->rank[r]];
            if (fits(s) && (!fits(own) || (double)s->result.peak_footprint < bar))
                d->pick = (int)d->rank[r];
        }
    }
    if (d->pick >= 0 && fits(own)) {
        d->saving = (int64_t)own->result.peak_footprint -
                    (int64_t)d->settings[d->pick].result.peak_footprint;
        d->saving_frac =
            own->result.peak_footprint ? (double)d->saving / (double)own->result.peak_footprint : 0;
    }
    cautions(d, low, jax);
}

/* JAX's variables hold for every GPU of the process, so its setting is chosen
 * once: by the devices' peaks summed, fitting only where it fits on each. Every
 * device tried the same settings in the same order (the same plan). */
void cf_adv_decide_jointly(struct cf_advise *a)
{
    if (a->ndevs < 2) return;
    struct cf_adv_device all = a->devs[0];
    struct cf_adv_setting settings[CF_ADV_MAX_SETTINGS];
    unsigned rank[CF_ADV_MAX_SETTINGS];
    memcpy(settings, all.settings, all.nsettings * sizeof *settings);
    for (unsigned i = 1; i < a->ndevs; i++)
        for (unsigned k = 0; k < all.nsettings && k < a->devs[i].nsettings; k++) {
            const struct cf_rp_result *r = &a->devs[i].settings[k].result;
            settings[k].result.peak_footprint += r->peak_footprint;
            settings[k].result.oom |= r->oom;
            if (r->error[0]) snprintf(settings[k].result.error, sizeof r->error, "%s", r->error);
        }
    all.settings = settings;
    all.rank = rank;
    all.caution[0][0] = all.caution[1][0] = '\0';
    cf_adv_decide(&all, true);
    for (unsigned i = 0; i < a->ndevs; i++) {
        struct cf_adv_device *d = &a->devs[i];
        d->advice = all.advice;
        d->pick = all.pick;
        d->saving = 0;
        d->saving_frac = 0;
        const struct cf_adv_setting *own = &d->settings[d->own];
        if (d->pick >= 0 && fits(own)) {
            d->saving = (int64_t)own->result.peak_footprint -
                        (int64_t)d->settings[d->pick].result.peak_footprint;
            d->saving_frac = own->result.peak_footprint
                                 ? (double)d->saving / (double)own->result.peak_footprint
                                 : 0;
        }
        d->caution[0][0] = d->caution[1][0] = '\0';
        cautions(d, lowest(d), true);
    }
}
