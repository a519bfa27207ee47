/* An allocator model: what one allocator would do with an allocation stream.
 * Each model keeps its own placement state and exposes, after every operation,
 * the device memory it would hold (footprint), the bytes it grants the live
 * allocations, and the driver calls it made. The runner (run.c) drives a model
 * through a stream; the models never see the trace. */
#ifndef CF_REPLAY_MODEL_H
#define CF_REPLAY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay/stream.h"

#define CF_RP_MAX_KNOBS  8
#define CF_RP_UNLIMITED  UINT64_MAX /* device memory not known: no model runs out */
#define CF_RP_LABEL_SIZE 192

enum cf_rp_knob_type {
    CF_RP_KNOB_SIZE,   /* bytes: digits with K/M/G/T, or "max" */
    CF_RP_KNOB_MIB,    /* MiB: an integer from lo to hi, or "max" (UINT64_MAX) */
    CF_RP_KNOB_INT,    /* an integer from lo to hi */
    CF_RP_KNOB_POW2,   /* 0 or a power of two up to hi */
    CF_RP_KNOB_REAL,   /* a number from lo to hi */
    CF_RP_KNOB_BOOL,   /* True/False, true/false, 1/0, yes/no, on/off */
    CF_RP_KNOB_CHOICE, /* one of choices ('|'-separated); the value is its index */
};

struct cf_rp_knob_def {
    const char *name;
    enum cf_rp_knob_type type;
    const char *def; /* the default, as a user would write it */
    double lo, hi;   /* MIB, INT, POW2 and REAL */
    const char *choices;
    const char *doc;
};

struct cf_rp_knob_val {
    uint64_t u; /* SIZE, MIB, INT, POW2, BOOL, CHOICE */
    double d;   /* REAL */
};

/* What a model starts from. */
struct cf_rp_setup {
    struct cf_rp_knob_val knob[CF_RP_MAX_KNOBS]; /* in the order of the model's knobs */
    uint64_t device_memory;                      /* CF_RP_UNLIMITED when unknown */
    uint32_t nallocs;                            /* every id the stream uses is below */
};

/* The common head of every model's state, read by the runner after each operation. */
struct cf_rp_model {
    const struct cf_rp_model_def *def;
    uint64_t footprint;    /* device memory the allocator holds now */
    uint64_t granted;      /* bytes the live allocations occupy, rounding included */
    uint64_t driver_calls; /* calls that obtain or return device memory, so far */
};

struct cf_rp_model_def {
    const char *name, *summary;
    const struct cf_rp_knob_def *knobs;
    unsigned nknobs;
    /* Not in the default what-if table: a framework's allocator whose row means
     * something only for that framework's runs (asked for with --model). */
    bool on_request;
    /* NULL when out of host memory or the model cannot start (*why says why). */
    struct cf_rp_model *(*create)(const struct cf_rp_setup *setup, const char **why);
    /* Serves the allocation in every case, so the replay stays in step with the
     * traced program; false when the allocator would have failed with out of
     * memory on a device of setup->device_memory (after whatever the allocator
     * does to make room first). */
    bool (*alloc)(struct cf_rp_model *m, const struct cf_rp_op *op);
    void (*free)(struct cf_rp_model *m, const struct cf_rp_op *op);
    /* External fragmentation of the model's free memory now: 1 - largest free
     * block / total free (0 when nothing is free). May take time. */
    double (*ext_frag)(struct cf_rp_model *m);
    /* Re-derives every invariant of the model's state from scratch (no overlap,
     * every byte accounted for, the counters above); the number violated. */
    int (*check)(struct cf_rp_model *m);
    void (*destroy)(struct cf_rp_model *m);
};

extern const struct cf_rp_model_def cf_rp_model_lower_bound, cf_rp_model_driver,
    cf_rp_model_pytorch, cf_rp_model_async_pool, cf_rp_model_arena, cf_rp_model_xla_bfc;
/* Every model, in the order the table lists them. */
extern const struct cf_rp_model_def *const cf_rp_models[];
extern const unsigned cf_rp_nmodels;
const struct cf_rp_model_def *cf_rp_model_find(const char *name, size_t len);

/* ---- a model with its knobs set (config.c) ---- */

struct cf_rp_config {
    const struct cf_rp_model_def *def;
    struct cf_rp_knob_val val[CF_RP_MAX_KNOBS];
    bool set[CF_RP_MAX_KNOBS];      /* given by the user (else the default) */
    char text[CF_RP_MAX_KNOBS][32]; /* the value as given */
    char label[CF_RP_LABEL_SIZE];   /* "pytorch:max_split_size_mb=128" */
};

/* "NAME[:KNOB=VALUE,...]" into c; 0, or -1 with a message in err. */
int cf_rp_config_parse(const char *spec, struct cf_rp_config *c, char *err, size_t n);
/* The model's defaults. */
void cf_rp_config_default(struct cf_rp_config *c, const struct cf_rp_model_def *def);
/* Sets one knob from its text; 0, or -1 with a message in err. */
int cf_rp_config_set(struct cf_rp_config *c, const char *knob, size_t knob_len, const char *value,
                     size_t value_len, char *err, size_t n);
/* Index of a knob of def, -1 when it has none of that name. */
int cf_rp_knob_index(const struct cf_rp_model_def *def, const char *name, size_t len);

#endif
