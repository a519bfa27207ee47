/* `cudafrag advise` for a JAX run: the run's buffers (a --blocks trace, where
 * XLA_PYTHON_CLIENT_ALLOCATOR=platform gives each buffer its own cuMemAlloc)
 * replayed through the xla-bfc model, XLA's allocator as JAX sets it up. The
 * settings tried: JAX's defaults (preallocate 75 % of the device), the run's
 * own, growing instead of preallocating, and preallocating the smallest
 * fraction the run fits in with some headroom, the setting a user who shares
 * the GPU asks for. The knobs are XLA_PYTHON_CLIENT_PREALLOCATE and
 * XLA_PYTHON_CLIENT_MEM_FRACTION (or XLA_CLIENT_MEM_FRACTION, its newer name,
 * where the run used that one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/advise.h"
#include "cli/replay.h"

#define XLA_ALLOC    "XLA_PYTHON_CLIENT_ALLOCATOR"
#define XLA_PREALLOC "XLA_PYTHON_CLIENT_PREALLOCATE"
#define DEF_FRACTION 0.75

/* Whether the run gave each buffer its own allocation: the platform allocator,
 * set by --blocks or by the user. Otherwise the trace holds XLA's pool regions. */
bool cf_adv_jax_block_level(const struct cf_advise *a)
{
    char v[64];
    if (cf_adv_recorded(XLA_ALLOC, v, sizeof v)) return strcasecmp(v, "platform") == 0;
    return strstr(a->blocks, XLA_ALLOC "=platform") != NULL;
}

/* The setting as a user writes it: the variables away from JAX's defaults. */
void cf_adv_jax_describe(const struct cf_advise *a, struct cf_adv_setting *s)
{
    const struct cf_rp_config *c = &s->config;
    s->conf[0] = '\0';
    s->changed = 0;
    s->unmeasured = !CF_ADV_JAX_MEASURED;
    if (c->def != &cf_rp_model_xla_bfc) {
        snprintf(s->conf, sizeof s->conf, "%s=platform", XLA_ALLOC);
        s->changed = 1;
        return;
    }
    int pre = cf_rp_knob_index(c->def, "preallocate", 11);
    int frac = cf_rp_knob_index(c->def, "mem_fraction", 12);
    if (c->val[pre].u == 0) {
        snprintf(s->conf, sizeof s->conf, "%s=false", XLA_PREALLOC);
        s->changed++;
    }
    if (fabs(c->val[frac].d - DEF_FRACTION) > 1e-9) {
        size_t len = strlen(s->conf);
        snprintf(s->conf + len, sizeof s->conf - len, "%s%s=%g", len ? " " : "", a->fraction_var,
                 c->val[frac].d);
        s->changed++;
    }
}

static void set_knob(struct cf_adv_setting *s, const char *knob, const char *v)
{
    char err[128];
    cf_rp_config_set(&s->config, knob, strlen(knob), v, strlen(v), err, sizeof err);
}

static void bfc(const struct cf_advise *a, struct cf_adv_setting *s, bool preallocate,
                double fraction)
{
    char v[32];
    memset(s, 0, sizeof *s);
    cf_rp_config_default(&s->config, &cf_rp_model_xla_bfc);
    set_knob(s, "preallocate", preallocate ? "True" : "False");
    snprintf(v, sizeof v, "%.17g", fraction);
    set_knob(s, "mem_fraction", v);
    cf_adv_jax_describe(a, s);
}

/* The run's own setting, from the variables recorded at its start. JAX reads
 * "0", "false" and "False" as off; a fraction it could not read is left out. */
void cf_adv_jax_own(struct cf_advise *a, struct cf_adv_setting *s)
{
    char v[64], pre[64] = "", frac[64] = "";
    bool preallocate = true;
    double fraction = DEF_FRACTION;
    a->own_from =
        cf_replay_header("framework_vars", v, sizeof v) == 0 ? "recorded" : "not recorded";
    snprintf(a->fraction_var, sizeof a->fraction_var, "XLA_PYTHON_CLIENT_MEM_FRACTION");
    if (cf_adv_recorded(XLA_PREALLOC, pre, sizeof pre))
        preallocate =
            strcmp(pre, "0") != 0 && strcmp(pre, "false") != 0 && strcmp(pre, "False") != 0;
    if (cf_adv_recorded("XLA_CLIENT_MEM_FRACTION", frac, sizeof frac))
        snprintf(a->fraction_var, sizeof a->fraction_var, "XLA_CLIENT_MEM_FRACTION");
    else
        cf_adv_recorded("XLA_PYTHON_CLIENT_MEM_FRACTION", frac, sizeof frac);
    if (frac[0]) {
        char *end;
        double f = strtod(frac, &end);
        if (*end == '\0' && f >= 1e-6 && f <= 1)
            fraction = f;
        else
            snprintf(a->not_modelled, sizeof a->not_modelled, "%s=%s (not a fraction up to 1)",
                     a->fraction_var, frac);
    }
    bfc(a, s, preallocate, fraction);
    /* --blocks keeps a platform allocator the user chose, and says so. */
    if (strstr(a->blocks, XLA_ALLOC "=platform (user's)") ||
        (a->blocks[0] == '\0' && cf_adv_jax_block_level(a))) {
        cf_rp_config_default(&s->config, &cf_rp_model_driver);
        cf_adv_jax_describe(a, s);
    }
    snprintf(a->own_conf, sizeof a->own_conf, "%s", s->conf);
}

static bool fits_in(const struct cf_advise *a, const struct cf_adv_device *d, uint64_t limit)
{
    struct cf_adv_setting s;
    struct cf_rp_result r;
    bfc(a, &s, true, (double)limit / (double)d->device_memory);
    struct cf_rp_run_opts ro = {.device_memory = d->device_memory, .fit_only = true};
    return cf_rp_run(d->stream, &s.config, &ro, &r) == 0 && !r.oom;
}

/* The smallest preallocated limit the run fits in, to within 0.2 %; 0 when
 * not even the whole device does. Fitting is not monotonic in the limit: the
 * pool's tail chunk is one of best fit's candidates, and its size moves with
 * the limit, so a larger pool can place a request elsewhere and fail later
 * (a stream of growing KV caches fits 18.3 % of a device and not 18.5 %). The
 * search keeps a limit that was seen to fit. */
static uint64_t smallest_limit(const struct cf_advise *a, const struct cf_adv_device *d)
{
    uint64_t lo = d->stream->peak_live, hi = d->device_memory;
    if (!fits_in(a, d, hi)) return 0;
    if (lo && fits_in(a, d, lo)) return lo;
    while (hi - lo > hi / 512 + 256) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (fits_in(a, d, mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* The first of the PROBES steps of 1 % above f at which some device's run
 * does not fit a preallocated pool of that fraction of its memory; -1 when
 * every one fits at every step. */
#define PROBES 5
static int failed_probe(const struct cf_advise *a, double f)
{
    for (int k = 0; k <= PROBES; k++)
        for (unsigned i = 0; i < a->ndevs; i++) {
            const struct cf_adv_device *d = &a->devs[i];
            double total = (double)d->device_memory;
            if (!fits_in(a, d, (uint64_t)(total * fmin(1.0, f * (1 + 0.01 * k))))) return k;
        }
    return -1;
}

static double thousandths_up(double f)
{
    return ceil(f * 1000.0 - 1e-9) / 1000.0;
}

/* The fraction to advise, one for every device as the variable is: three
 * decimals, at least the headroom above what each device's run needs, and
 * fitting there and in pools up to PROBES % larger on every device, so that a
 * run a little unlike the trace does not land in a pocket where best fit fails. */
double cf_adv_jax_fraction(struct cf_advise *a)
{
    double f = 0;
    for (unsigned i = 0; i < a->ndevs; i++) {
        struct cf_adv_device *d = &a->devs[i];
        if (d->device_memory == CF_RP_UNLIMITED || (d->jax_need = smallest_limit(a, d)) == 0)
            return 0;
        double total = (double)d->device_memory;
        f = fmax(f, thousandths_up((double)d->jax_need * (1.0 + CF_ADV_JAX_HEADROOM) / total));
    }
    for (unsigned tries = 0; f > 0 && f <= 1.0 && tries < 20; tries++) {
        int k = failed_probe(a, f);
        if (k < 0) return f;
        f = thousandths_up(f * (1 + 0.01 * k) + 1e-6); /* past the probe that failed */
    }
    return 0;
}

void cf_adv_jax_plan(struct cf_advise *a, struct cf_adv_device *d)
{
    struct cf_adv_setting s, own;
    bfc(a, &s, true, DEF_FRACTION);
    cf_adv_add(d, &s);
    cf_adv_jax_own(a, &own);
    cf_adv_add(d, &own);
    int frac = cf_rp_knob_index(&cf_rp_model_xla_bfc, "mem_fraction", 12);
    double own_fraction =
        own.config.def == &cf_rp_model_xla_bfc ? own.config.val[frac].d : DEF_FRACTION;
    bfc(a, &s, false, own_fraction);
    cf_adv_add(d, &s);
    if (a->jax_fraction > 0) {
        bfc(a, &s, true, a->jax_fraction);
        cf_adv_add(d, &s);
    }
    for (unsigned i = 0; i < d->nsettings; i++)
        if (strcmp(d->settings[i].conf, own.conf) == 0) d->own = (int)i;
}
