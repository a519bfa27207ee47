/* `cudafrag advise TRACE`: the allocator setting to use, in one step. A PyTorch
 * run's tensors (a `--blocks` trace or an imported snapshot) are replayed through
 * the pytorch and async-pool models (src/replay/) over a grid of the caching
 * allocator's knobs and the cudaMallocAsync backend; the lowest predicted peak
 * reserved that fits the device is set against the run's own setting, with the
 * models' documented error (docs/replay.md, "cudafrag advise"). A JAX run's
 * buffers go through the xla-bfc model instead (advise_jax.c). */
#ifndef CF_CLI_ADVISE_H
#define CF_CLI_ADVISE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cache_use.h"
#include "replay/model.h"
#include "replay/run.h"
#include "replay/stream.h"
#include "report/strbuf.h"

struct cf_event;
struct cf_snap;

/* The pytorch and async-pool models are within 3 % of what PyTorch and the
 * driver reported on an H200 (docs/replay.md, "Accuracy"): a difference below
 * this fraction of the run's own peak is not evidence. */
#define CF_ADV_MODEL_ERROR 0.03
/* The MEM_FRACTION advised for JAX is the smallest limit the run fits in, plus
 * this much: the model's error, and room for what XLA allocates differently
 * when its pool is on (autotuning scratch, which it may leave out when short). */
#define CF_ADV_JAX_HEADROOM 0.05
/* Whether the xla-bfc model's figures were checked against JAX on a GPU on
 * more than one loop shape (docs/replay.md: one so far, an MLP on an H100). */
#define CF_ADV_JAX_MEASURED false

#define CF_ADV_MAX_SETTINGS 24 /* per device */

enum cf_adv_framework { CF_ADV_UNKNOWN, CF_ADV_PYTORCH, CF_ADV_JAX };
enum cf_adv_advice { CF_ADV_KEEP, CF_ADV_CHANGE, CF_ADV_NONE_FITS };

struct cf_adv_setting {
    struct cf_rp_config config;
    char conf[192];   /* as PyTorch reads it ("expandable_segments:True"); "": its defaults */
    unsigned changed; /* knobs away from PyTorch's defaults */
    bool unmeasured;  /* a knob whose model was not measured against a GPU */
    struct cf_rp_result result;
};

struct cf_adv_device {
    const struct cf_rp_stream *stream;
    uint64_t device_memory;  /* CF_RP_UNLIMITED: not known */
    const char *memory_from; /* "option" or "trace" */
    struct cf_adv_setting *settings;
    unsigned nsettings;
    unsigned *rank; /* settings, best first */
    int own, pick;  /* the run's own setting; the advised one (-1: none fits) */
    enum cf_adv_advice advice;
    uint64_t jax_need; /* JAX: the smallest preallocated limit that fits (0: none, or not run) */
    int64_t saving;    /* own peak - picked peak (bytes) */
    double saving_frac;
    char caution[2][512];
};

struct cf_advise {
    struct cf_rp_capture cap;
    struct cf_cache_use cache;  /* whether the allocations are a cache's segments */
    struct cf_u64map site_slot; /* trace site id -> slot + 1 */
    struct cf_adv_site *sites;
    uint32_t nsites, site_cap;
    uint64_t device_memory; /* --device-memory, 0: from the trace */
    bool full;              /* the whole grid (the report's section runs a short one) */
    bool failed;            /* out of host memory while reading */
    const char *trace;
    char program[256], blocks[1024];
    bool imported;
    enum cf_adv_framework framework;
    char framework_module[128];
    uint64_t framework_allocs, allocs;
    bool segments; /* the allocations are a cache's segments: no advice */
    /* The run's own setting (docs/replay.md): the variable, its value, where from. */
    char var[64], own_conf[1024], not_modelled[512];
    char fraction_var[32]; /* JAX: the MEM_FRACTION variable the run used */
    double jax_fraction;   /* JAX: the fraction advised for every device (0: none fits) */
    const char *own_from;  /* "recorded", "blocks", "not recorded" */
    struct cf_adv_device devs[CF_RP_MAX_DEVICES];
    unsigned ndevs;
    bool decided, not_blocks; /* cf_advise_blocks_event: the trace is not a --blocks run */
};

struct cf_advise *cf_advise_new(bool full, uint64_t device_memory);
void cf_advise_free(struct cf_advise *a);
/* The replay's after_event hook. */
void cf_advise_event(const struct cf_event *e, void *a);
/* The same for the report's section and the HTML page, which advise on
 * `--blocks` runs only: at the first event (CUDAFRAG_BLOCKS adopted from the
 * trace by then) a trace without it sets a->not_blocks and is not captured. */
void cf_advise_blocks_event(const struct cf_event *e, void *a);
/* Once the trace is read, while its replay is still open: the settings run.
 * 0, or -1 after a message (out of memory). */
int cf_advise_run(struct cf_advise *a, const char *trace, const struct cf_snap *snap);

/* advise.c's helpers that advise_jax.c shares. */
void cf_adv_add(struct cf_adv_device *d, const struct cf_adv_setting *s);
/* A variable's value as recorded at the run's start; false when unset. */
bool cf_adv_recorded(const char *name, char *out, size_t n);

/* The ranking (advise_rank.c): d's advice, pick, saving and cautions from its
 * settings' results; for JAX, one decision for every device, by their peaks summed. */
void cf_adv_decide(struct cf_adv_device *d, bool jax);
void cf_adv_decide_jointly(struct cf_advise *a);

/* The JAX half (advise_jax.c). */
bool cf_adv_jax_block_level(const struct cf_advise *a);
void cf_adv_jax_describe(const struct cf_advise *a, struct cf_adv_setting *s);
/* The run's own XLA setting into s, and a's own_conf, own_from and fraction_var. */
void cf_adv_jax_own(struct cf_advise *a, struct cf_adv_setting *s);
/* The MEM_FRACTION to try for every device (each device's jax_need found on
 * the way); 0 when some device fits in none. */
double cf_adv_jax_fraction(struct cf_advise *a);
/* The settings tried for a JAX run, the run's own among them (d->own). */
void cf_adv_jax_plan(struct cf_advise *a, struct cf_adv_device *d);

/* The setting as one environment line: "PYTORCH_CUDA_ALLOC_CONF=..." */
void cf_advise_line(const struct cf_advise *a, const struct cf_adv_setting *s, char *out, size_t n);
/* The setting as the advice names it: its conf, or "PyTorch's defaults" / "JAX's defaults". */
const char *cf_advise_name(const struct cf_advise *a, const struct cf_adv_setting *s);
void cf_advise_render_text(const struct cf_advise *a, struct cf_buf *out);
void cf_advise_render_json(const struct cf_advise *a, struct cf_buf *out);
/* The text report's short section (nothing when the trace is not a PyTorch
 * `--blocks` run's). */
void cf_advise_render_section(const struct cf_advise *a, struct cf_buf *out);

/* argv: "advise" and its arguments. Returns the command's exit status. */
int cf_cmd_advise(int argc, char **argv);

#endif
