/* cudafrag's own arena (CUDAFRAG_ARENA=1), through the host-only shadow model
 * the profiler runs beside native programs (src/arena/shadow.c): the arena's
 * TLSF, granule map and trimming policy, with no CUDA call. The footprint is
 * the granules the arena would have mapped; its driver calls are one reserve
 * plus create, map and set-access per chunk mapped and unmap and release per
 * chunk given back. The reserved range is the device's memory, as the arena
 * reserves it. The shadow model is one per process: one arena model at a time.
 * Not modelled (the shadow does not model them either): the arena's per-stream
 * parts and the quarantine of stream-ordered frees, and the trimming the arena
 * does before failing when mapping would exceed the device (out of memory is
 * recorded when the mapped bytes exceed the device's memory). An allocation
 * the arena cannot place in its range is out of memory too; it is counted as
 * a raw driver allocation (2 MiB pages of its own) so that the replay goes on. */
#include "replay/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena/arena.h"
#include "arena/shadow.h"
#include "config/config.h"

struct arena_model {
    struct cf_rp_model m;
    uint64_t capacity;
    uint32_t nallocs;
    uint8_t *held;                             /* by id: the shadow took it */
    uint64_t overflow_pages, overflow_granted; /* allocations the arena could not place */
    struct cf_config_saved *saved;             /* the command's settings, restored at the end */
};

#define PAGE ((uint64_t)2 << 20)
#define SLOT ((uint64_t)512)

static bool running;

static void follow(struct arena_model *a)
{
    struct cf_arena_stats s;
    cf_shadow_stats(&s);
    a->m.footprint = s.mapped_now + a->overflow_pages;
    a->m.granted = s.live_now + a->overflow_granted;
    a->m.driver_calls = s.active ? s.driver_calls : 0;
}

static uint64_t ooms(void)
{
    struct cf_arena_stats s;
    cf_shadow_stats(&s);
    return s.ooms;
}

/* Distinct keys for the shadow, whatever addresses the trace had. */
static uint64_t key_of(uint32_t id)
{
    return (uint64_t)id + 1;
}

static bool arena_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct arena_model *a = (struct arena_model *)m;
    uint64_t before = ooms();
    cf_shadow_alloc(key_of(op->id), op->size, 0);
    a->held[op->id] = ooms() == before;
    if (!a->held[op->id]) {
        a->overflow_pages += (op->size + PAGE - 1) / PAGE * PAGE;
        a->overflow_granted += (op->size + SLOT - 1) / SLOT * SLOT;
    }
    follow(a);
    return a->held[op->id] && m->footprint <= a->capacity;
}

static void arena_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct arena_model *a = (struct arena_model *)m;
    if (a->held[op->id]) {
        cf_shadow_free(key_of(op->id));
    } else {
        a->overflow_pages -= (op->size + PAGE - 1) / PAGE * PAGE;
        a->overflow_granted -= (op->size + SLOT - 1) / SLOT * SLOT;
    }
    a->held[op->id] = 0;
    follow(a);
}

static double ext_frag(struct cf_rp_model *m)
{
    return cf_shadow_ext_frag_now(0);
}

static int check(struct cf_rp_model *m)
{
    struct arena_model *a = (struct arena_model *)m;
    struct cf_arena_stats s;
    cf_shadow_stats(&s);
    return cf_shadow_check() + (s.mapped_now < s.live_now) +
           (s.mapped_now + a->overflow_pages != m->footprint) +
           (s.live_now + a->overflow_granted != m->granted);
}

static void destroy(struct cf_rp_model *m)
{
    struct arena_model *a = (struct arena_model *)m;
    cf_shadow_reset();
    cf_config_restore(a->saved);
    free(a->held);
    free(a);
    running = false;
}

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    if (running) {
        *why = "the arena's shadow model is already running";
        return NULL;
    }
    struct arena_model *a = calloc(1, sizeof *a);
    if (a) a->held = calloc(st->nallocs ? st->nallocs : 1, 1);
    if (a == NULL || a->held == NULL) {
        free(a);
        *why = "out of memory";
        return NULL;
    }
    a->saved = cf_config_save();
    if (a->saved == NULL) {
        free(a->held);
        free(a);
        *why = "out of memory";
        return NULL;
    }
    running = true;
    a->m.def = &cf_rp_model_arena;
    a->capacity = st->device_memory;
    a->nallocs = st->nallocs;
    char slack[32], reserve[32];
    snprintf(slack, sizeof slack, "%llu", (unsigned long long)st->knob[0].u);
    snprintf(reserve, sizeof reserve, "%llu",
             st->device_memory == CF_RP_UNLIMITED ? 0ull : (unsigned long long)st->device_memory);
    cf_opt_set("CUDAFRAG_SHADOW", "1");
    cf_opt_set("CUDAFRAG_ARENA_SLACK", slack);
    cf_opt_set("CUDAFRAG_ARENA_RESERVE", reserve);
    cf_shadow_reset();
    return &a->m;
}

static const struct cf_rp_knob_def knobs[] = {
    {"slack", CF_RP_KNOB_SIZE, "64M", 0, 0, NULL,
     "mapped bytes beyond the live ones the arena keeps before unmapping idle chunks "
     "(CUDAFRAG_ARENA_SLACK)"},
};

const struct cf_rp_model_def cf_rp_model_arena = {
    .name = "arena",
    .summary = "cudafrag's arena (CUDAFRAG_ARENA=1) through its shadow model: TLSF in a VMM "
               "range, 2 MiB granules mapped in chunks, idle chunks unmapped past the slack",
    .knobs = knobs,
    .nknobs = sizeof knobs / sizeof knobs[0],
    .create = create,
    .alloc = arena_alloc,
    .free = arena_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
