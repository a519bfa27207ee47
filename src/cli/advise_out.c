/* What `cudafrag advise` prints (text and JSON), the text report's short
 * "setting to use" section, and the command itself. The layouts are
 * documented in docs/replay.md ("cudafrag advise"). */
#include "cli/advise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmdline.h"
#include "cli/replay.h"
#include "config/config.h"
#include "report/format.h"
#include "report/json_write.h"
#include "report/snapshot.h"

#define TOP 5 /* settings listed besides the run's own */

static const char *const segments_note =
    "no advice: these allocations are PyTorch's cache segments, not its tensors; trace the "
    "run with `cudafrag run --blocks --trace` or import a memory snapshot (`cudafrag import`)";
static const char *const pool_note =
    "no advice: these allocations are XLA's pool regions, not its buffers; trace the run with "
    "`cudafrag run --blocks --trace` (XLA_PYTHON_CLIENT_ALLOCATOR=platform)";

static bool jax(const struct cf_advise *a)
{
    return a->framework == CF_ADV_JAX;
}

static const char *note_of(const struct cf_advise *a)
{
    return !a->segments ? NULL : jax(a) ? pool_note : segments_note;
}

void cf_advise_line(const struct cf_advise *a, const struct cf_adv_setting *s, char *out, size_t n)
{
    if (jax(a) && s->conf[0])
        snprintf(out, n, "%s", s->conf);
    else if (jax(a))
        snprintf(out, n, "unset XLA_PYTHON_CLIENT_PREALLOCATE and %s (JAX's defaults)",
                 a->fraction_var);
    else if (s->conf[0])
        snprintf(out, n, "%s=%s", a->var, s->conf);
    else
        snprintf(out, n, "unset %s (PyTorch's defaults)", a->var);
}

const char *cf_advise_name(const struct cf_advise *a, const struct cf_adv_setting *s)
{
    return s->conf[0] ? s->conf : jax(a) ? "JAX's defaults" : "PyTorch's defaults";
}

static const char *B(uint64_t v, char *buf, size_t n)
{
    return cf_fmt_bytes(v, buf, n);
}

/* "848 MiB" and "less"/"below", or "more"/"above" where the setting chosen for
 * every device together costs this one more than its own (JAX). */
static const char *saving_bytes(const struct cf_adv_device *d, char *buf, size_t n)
{
    return B((uint64_t)(d->saving < 0 ? -d->saving : d->saving), buf, n);
}

/* ---- text ---- */

static void own_text_jax(const struct cf_advise *a, struct cf_buf *o)
{
    if (strcmp(a->own_from, "recorded") != 0)
        cf_buf_puts(o, "your setting: not recorded in this trace: taken as JAX's defaults\n");
    else if (a->own_conf[0])
        cf_buf_printf(o, "your setting: %s (recorded at start)\n", a->own_conf);
    else
        cf_buf_puts(o, "your setting: JAX's defaults (preallocate 75 % of the device; "
                       "XLA_PYTHON_CLIENT_PREALLOCATE and the MEM_FRACTION variables were not "
                       "set)\n");
    if (a->not_modelled[0]) cf_buf_printf(o, "  not modelled, left out: %s\n", a->not_modelled);
}

static void own_text(const struct cf_advise *a, struct cf_buf *o)
{
    if (jax(a)) {
        own_text_jax(a, o);
        return;
    }
    if (a->own_conf[0])
        cf_buf_printf(o, "your setting: %s=%s (%s)\n", a->var, a->own_conf,
                      strcmp(a->own_from, "blocks") == 0 ? "recorded in CUDAFRAG_BLOCKS"
                                                         : "recorded at start");
    else if (strcmp(a->own_from, "recorded") == 0)
        cf_buf_puts(o, "your setting: PyTorch's defaults (PYTORCH_CUDA_ALLOC_CONF and "
                       "PYTORCH_ALLOC_CONF were not set)\n");
    else
        cf_buf_printf(o,
                      "your setting: not recorded in this trace%s: taken as PyTorch's "
                      "defaults\n",
                      a->imported ? " (an imported snapshot)" : "");
    if (a->not_modelled[0]) cf_buf_printf(o, "  not modelled, left out: %s\n", a->not_modelled);
}

static void framework_text(const struct cf_advise *a, struct cf_buf *o)
{
    static const char *const names[] = {"not identified", "PyTorch", "JAX"};
    cf_buf_printf(o, "framework: %s", names[a->framework]);
    if (a->imported)
        cf_buf_puts(o, " (an imported memory snapshot)");
    else if (a->framework != CF_ADV_UNKNOWN)
        cf_buf_printf(o, " (%llu of %llu allocations through %s)",
                      (unsigned long long)a->framework_allocs, (unsigned long long)a->allocs,
                      a->framework_module);
    else
        cf_buf_puts(o, " (no allocation through libc10_cuda.so): the advice is what PyTorch's "
                       "allocator would do with these allocations");
    cf_buf_puts(o, "\n");
    if (a->blocks[0]) cf_buf_printf(o, "blocks: %s\n", a->blocks);
}

static void row_text(const struct cf_advise *a, const struct cf_adv_device *d, unsigned i,
                     struct cf_buf *o)
{
    const struct cf_adv_setting *s = &d->settings[i], *own = &d->settings[d->own];
    char b[32], vs[32] = "-";
    if (s->result.error[0]) {
        cf_buf_printf(o, "    %12s  %9s  %s (%s)\n", "-", "-", cf_advise_name(a, s),
                      s->result.error);
        return;
    }
    if ((int)i != d->own && own->result.peak_footprint)
        snprintf(vs, sizeof vs, "%+.1f %%",
                 100.0 *
                     ((double)s->result.peak_footprint / (double)own->result.peak_footprint - 1.0));
    cf_buf_printf(o, "    %12s  %9s  %s%s%s\n", B(s->result.peak_footprint, b, sizeof b), vs,
                  cf_advise_name(a, s), (int)i == d->own ? " (your setting)" : "",
                  s->result.oom ? " (out of memory)" : "");
}

static void advice_text(const struct cf_advise *a, const struct cf_adv_device *d, struct cf_buf *o)
{
    const struct cf_adv_setting *own = &d->settings[d->own];
    char line[320], b1[32], b2[32], b3[32];
    if (d->advice == CF_ADV_NONE_FITS) {
        const struct cf_adv_setting *least = &d->settings[d->rank[0]];
        cf_buf_printf(o, "  use: none of the settings tried fits in %s; the least, %s, needs %s\n",
                      B(d->device_memory, b1, sizeof b1), cf_advise_name(a, least),
                      B(least->result.peak_footprint, b2, sizeof b2));
        return;
    }
    const struct cf_adv_setting *pick = &d->settings[d->pick];
    if (d->advice == CF_ADV_KEEP) {
        cf_buf_printf(o,
                      "  use: keep your setting (%s): predicted peak reserved %s; no setting "
                      "tried is predicted more than 3 %% lower\n",
                      cf_advise_name(a, own), B(own->result.peak_footprint, b1, sizeof b1));
    } else {
        cf_advise_line(a, pick, line, sizeof line);
        cf_buf_printf(o, "  use: %s\n", line);
        if (own->result.oom)
            cf_buf_printf(o,
                          "       predicted peak reserved %s; your setting runs out of memory "
                          "(it needs %s)\n",
                          B(pick->result.peak_footprint, b1, sizeof b1),
                          B(own->result.peak_footprint, b2, sizeof b2));
        else
            cf_buf_printf(o,
                          "       predicted peak reserved %s against %s with your setting: %s "
                          "%s (%.1f %%)\n",
                          B(pick->result.peak_footprint, b1, sizeof b1),
                          B(own->result.peak_footprint, b2, sizeof b2),
                          saving_bytes(d, b3, sizeof b3), d->saving < 0 ? "more" : "less",
                          100.0 * fabs(d->saving_frac));
    }
    for (unsigned c = 0; c < 2; c++)
        if (d->caution[c][0]) cf_buf_printf(o, "  caution: %s\n", d->caution[c]);
}

static void device_text(const struct cf_advise *a, const struct cf_adv_device *d, struct cf_buf *o)
{
    char b1[32], b2[32];
    cf_buf_printf(o, "\ndevice %d: %u allocations; peak live %s; ", d->stream->device,
                  d->stream->nallocs, B(d->stream->peak_live, b1, sizeof b1));
    if (d->device_memory == CF_RP_UNLIMITED)
        cf_buf_puts(o, "device memory not known (out of memory not checked)\n");
    else
        cf_buf_printf(o, "device memory %s (from the %s)\n", B(d->device_memory, b2, sizeof b2),
                      d->memory_from);
    advice_text(a, d, o);
    cf_buf_printf(o, "  settings tried: %u; the best %u and yours, by predicted peak reserved:\n",
                  d->nsettings, d->nsettings < TOP ? d->nsettings : TOP);
    cf_buf_printf(o, "    %12s  %9s  %s\n", "peak", "vs yours", "setting");
    bool own_shown = false;
    for (unsigned r = 0; r < d->nsettings; r++) {
        unsigned i = d->rank[r];
        if (r >= TOP && (own_shown || (int)i != d->own)) continue;
        own_shown |= (int)i == d->own;
        row_text(a, d, i, o);
    }
}

void cf_advise_render_text(const struct cf_advise *a, struct cf_buf *o)
{
    cf_buf_printf(o, "-- allocator advice for %s --\nprogram: %s\n", a->trace, a->program);
    framework_text(a, o);
    if (a->segments) {
        cf_buf_printf(o, "%s\n", note_of(a));
        return;
    }
    own_text(a, o);
    if (jax(a) && a->ndevs > 1)
        cf_buf_printf(o,
                      "one setting for all %u devices (JAX's variables hold for the whole "
                      "process): chosen by their peaks summed\n",
                      a->ndevs);
    if (a->ndevs == 0)
        cf_buf_puts(o, "no device-memory allocation in the trace: nothing to advise\n");
    for (unsigned i = 0; i < a->ndevs; i++)
        device_text(a, &a->devs[i], o);
    if (a->ndevs && jax(a))
        cf_buf_puts(
            o, "\npeak = the xla-bfc model's peak pool (peak_pool_bytes in JAX's memory_stats()); "
               "when\npreallocated, the whole limit (docs/replay.md)\n");
    else if (a->ndevs)
        cf_buf_puts(o, "\npeak = the model's peak reserved memory; the pytorch and async-pool "
                       "models are within 3 % of\nPyTorch's and the driver's own figures on an "
                       "H200 (docs/replay.md)\n");
}

/* ---- the report's section ---- */

void cf_advise_render_section(const struct cf_advise *a, struct cf_buf *o)
{
    if (a->framework == CF_ADV_UNKNOWN || a->segments || a->ndevs == 0) return;
    char line[320], b1[32], b2[32];
    cf_buf_printf(o, "\n-- setting to use (%s; every setting: cudafrag advise %s) --\n",
                  jax(a) ? "JAX" : "PyTorch", a->trace);
    for (unsigned i = 0; i < a->ndevs; i++) {
        const struct cf_adv_device *d = &a->devs[i];
        const struct cf_adv_setting *own = &d->settings[d->own];
        cf_buf_printf(o, "  device %d: ", d->stream->device);
        if (d->advice == CF_ADV_NONE_FITS) {
            cf_buf_puts(o, "no setting tried fits in the device's memory\n");
        } else if (d->advice == CF_ADV_KEEP) {
            cf_buf_printf(o, "keep your setting (%s): predicted peak reserved %s\n",
                          cf_advise_name(a, own), B(own->result.peak_footprint, b1, sizeof b1));
        } else {
            cf_advise_line(a, &d->settings[d->pick], line, sizeof line);
            cf_buf_printf(o, "%s: predicted peak reserved %s", line,
                          B(d->settings[d->pick].result.peak_footprint, b1, sizeof b1));
            if (own->result.oom)
                cf_buf_puts(o, " (your setting runs out of memory)\n");
            else
                cf_buf_printf(o, ", %s (%.1f %%) %s your setting's\n",
                              saving_bytes(d, b2, sizeof b2), 100.0 * fabs(d->saving_frac),
                              d->saving < 0 ? "above" : "below");
        }
    }
}

/* ---- JSON ---- */

static void json_setting(const struct cf_advise *a, const struct cf_adv_device *d, unsigned i,
                         const char *k, struct cf_jw *j)
{
    const struct cf_adv_setting *s = &d->settings[i];
    char line[320];
    cf_advise_line(a, s, line, sizeof line);
    cf_jw_obj(j, k);
    cf_jw_str(j, "conf", s->conf);
    cf_jw_str(j, "line", line);
    cf_jw_str(j, "model", s->result.label[0] ? s->result.label : s->config.label);
    cf_jw_u64(j, "knobs_changed", s->changed);
    cf_jw_bool(j, "measured", !s->unmeasured);
    cf_jw_bool(j, "own", (int)i == d->own);
    if (s->result.error[0]) {
        cf_jw_str(j, "error", s->result.error);
    } else {
        cf_jw_u64(j, "peak_reserved_bytes", s->result.peak_footprint);
        cf_jw_u64(j, "driver_calls", s->result.driver_calls);
        cf_jw_bool(j, "oom", s->result.oom);
    }
    cf_jw_obj_end(j);
}

static void json_saving(const struct cf_adv_device *d, struct cf_jw *j)
{
    if (d->pick >= 0 && !d->settings[d->own].result.oom) {
        cf_jw_i64(j, "saving_bytes", d->saving);
        cf_jw_fixed(j, "saving_fraction", d->saving_frac, 6);
    } else {
        cf_jw_null(j, "saving_bytes");
        cf_jw_null(j, "saving_fraction");
    }
}

static void json_device(const struct cf_advise *a, const struct cf_adv_device *d, struct cf_jw *j)
{
    static const char *const advice[] = {"keep", "change", "none-fits"};
    cf_jw_obj(j, NULL);
    cf_jw_i64(j, "device", d->stream->device);
    cf_jw_u64(j, "allocations", d->stream->nallocs);
    cf_jw_u64(j, "peak_live_bytes", d->stream->peak_live);
    cf_jw_known(j, "device_memory_bytes", d->device_memory, d->device_memory != CF_RP_UNLIMITED);
    cf_jw_str(j, "advice", advice[d->advice]);
    if (d->pick >= 0)
        json_setting(a, d, (unsigned)d->pick, "recommended", j);
    else
        cf_jw_null(j, "recommended");
    json_setting(a, d, (unsigned)d->own, "own", j);
    json_saving(d, j);
    cf_jw_fixed(j, "model_error", CF_ADV_MODEL_ERROR, 2);
    if (jax(a)) cf_jw_known(j, "jax_need_bytes", d->jax_need, d->jax_need != 0);
    cf_jw_arr(j, "cautions");
    for (unsigned c = 0; c < 2; c++)
        if (d->caution[c][0]) cf_jw_str(j, NULL, d->caution[c]);
    cf_jw_arr_end(j);
    cf_jw_arr(j, "settings");
    for (unsigned r = 0; r < d->nsettings; r++)
        json_setting(a, d, d->rank[r], NULL, j);
    cf_jw_arr_end(j);
    cf_jw_obj_end(j);
}

void cf_advise_render_json(const struct cf_advise *a, struct cf_buf *o)
{
    static const char *const names[] = {NULL, "PyTorch", "JAX"};
    struct cf_jw j = cf_jw_start_spaced(o);
    cf_jw_obj(&j, NULL);
    cf_jw_str(&j, "trace", a->trace);
    cf_jw_str(&j, "program", a->program);
    cf_jw_str(&j, "framework", names[a->framework]);
    cf_jw_bool(&j, "imported", a->imported);
    cf_jw_str(&j, "block_capture", a->blocks[0] ? a->blocks : NULL);
    cf_jw_str(&j, "variable", a->var);
    cf_jw_str(&j, "own_setting", a->own_conf);
    cf_jw_str(&j, "own_setting_from", a->own_from ? a->own_from : "");
    cf_jw_str(&j, "not_modelled", a->not_modelled);
    cf_jw_str(&j, "note", note_of(a));
    cf_jw_arr(&j, "devices");
    for (unsigned i = 0; i < a->ndevs; i++)
        json_device(a, &a->devs[i], &j);
    cf_jw_arr_end(&j);
    cf_jw_obj_end(&j);
    cf_buf_puts(o, "\n");
}

/* ---- the command ---- */

struct command {
    const char *trace;
    bool json;
    uint64_t device_memory;
};

/* 0, 1 after --help, or CF_EXIT_USAGE. */
static int parse(int argc, char **argv, struct command *c)
{
    enum { OPT_JSON = CF_OPT_LONG, OPT_DEVICE_MEMORY };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"device-memory", required_argument, NULL, OPT_DEVICE_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        if (opt == 'h') {
            cf_help_print(stdout, "advise");
            return 1;
        } else if (opt == OPT_JSON) {
            c->json = true;
        } else if (opt == OPT_DEVICE_MEMORY) {
            if (cf_parse_size(optarg, 1, UINT64_MAX - 1, &c->device_memory) != 0)
                return cf_usage_error("advise",
                                      "--device-memory \"%s\": expected a size (digits with an "
                                      "optional K, M, G or T suffix)",
                                      optarg);
        } else {
            return CF_EXIT_USAGE;
        }
    }
    if (optind == argc) return cf_usage_error("advise", "needs a trace file");
    if (argc - optind > 1) return cf_usage_error("advise", "unexpected \"%s\"", argv[optind + 1]);
    c->trace = argv[optind];
    return 0;
}

static int advise(const struct command *c)
{
    struct cf_advise *a = cf_advise_new(true, c->device_memory);
    if (a == NULL) {
        fprintf(stderr, "cudafrag: out of memory\n");
        return 1;
    }
    struct cf_snap snap;
    struct cf_replay_hooks hooks = {.after_event = cf_advise_event, .ctx = a};
    if (cf_replay_open(c->trace, &hooks, &snap) != 0) {
        cf_advise_free(a);
        return 1;
    }
    int rc = cf_advise_run(a, c->trace, &snap) != 0;
    struct cf_buf b = {0};
    if (rc == 0) {
        if (c->json)
            cf_advise_render_json(a, &b);
        else
            cf_advise_render_text(a, &b);
        if (b.failed) {
            fprintf(stderr, "cudafrag: out of memory while printing the advice for %s\n", c->trace);
            rc = 1;
        } else {
            fwrite(b.data, 1, b.len, stdout);
        }
    }
    cf_buf_free(&b);
    cf_replay_close(&snap);
    cf_advise_free(a);
    return rc;
}

int cf_cmd_advise(int argc, char **argv)
{
    struct command c = {0};
    int rc = parse(argc, argv, &c);
    if (rc == 1) return 0;
    return rc ? rc : advise(&c);
}
