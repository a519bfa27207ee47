/* Drives one allocator model operation by operation, checking its invariants
 * after each, so a test states the footprint the model must hold at every
 * step of a hand-built allocation stream. */
#ifndef CF_TESTS_REPLAY_HARNESS_H
#define CF_TESTS_REPLAY_HARNESS_H

#include "check.h"
#include "replay/model.h"
#include "replay/run.h"
#include "replay/stream.h"

#define KiB          ((uint64_t)1 << 10)
#define MiB          ((uint64_t)1 << 20)
#define GiB          ((uint64_t)1 << 30)
#define H_MAX_ALLOCS 4096

struct harness {
    struct cf_rp_config cfg;
    struct cf_rp_model *m;
    struct cf_rp_op live[H_MAX_ALLOCS]; /* by id: the allocation */
    uint32_t next;
    uint64_t t, requested;
};

static inline void h_start(struct harness *h, const char *spec, uint64_t device_memory)
{
    char err[256];
    if (cf_rp_config_parse(spec, &h->cfg, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    struct cf_rp_setup st = {.device_memory = device_memory, .nallocs = H_MAX_ALLOCS};
    memcpy(st.knob, h->cfg.val, sizeof st.knob);
    const char *why = "";
    h->m = h->cfg.def->create(&st, &why);
    if (h->m == NULL) fprintf(stderr, "%s: %s\n", spec, why);
    CHECK(h->m != NULL);
    h->next = 0;
    h->requested = 0;
}

static inline void h_check(struct harness *h)
{
    int violations = h->m->def->check(h->m);
    if (violations == 0 && h->m->granted >= h->requested && h->m->footprint >= h->m->granted)
        return;
    fprintf(stderr,
            "%s after operation %llu: %d violations, footprint %llu, granted %llu, "
            "requested %llu\n",
            h->cfg.label, (unsigned long long)h->t, violations, (unsigned long long)h->m->footprint,
            (unsigned long long)h->m->granted, (unsigned long long)h->requested);
    exit(1);
}

/* Returns the id; *fits (when not NULL) whether it fitted in the device. */
static inline uint32_t h_alloc_at(struct harness *h, uint64_t size, uint64_t stream, uint8_t src,
                                  uint64_t addr, bool *fits)
{
    uint32_t id = h->next++;
    CHECK_LT(id, H_MAX_ALLOCS);
    h->live[id] = (struct cf_rp_op){
        .src = src, .id = id, .size = size, .addr = addr, .strm = stream, .t_ns = h->t++};
    bool ok = h->m->def->alloc(h->m, &h->live[id]);
    if (fits)
        *fits = ok;
    else
        CHECK(ok);
    h->requested += size;
    h_check(h);
    return id;
}

static inline uint32_t h_alloc(struct harness *h, uint64_t size, uint64_t stream)
{
    return h_alloc_at(h, size, stream, CF_RP_POOL, 0, NULL);
}

static inline void h_free(struct harness *h, uint32_t id)
{
    struct cf_rp_op op = h->live[id];
    op.free = true;
    op.t_ns = h->t++;
    h->m->def->free(h->m, &op);
    h->requested -= op.size;
    h_check(h);
}

static inline void h_end(struct harness *h)
{
    h->m->def->destroy(h->m);
    h->m = NULL;
}

#endif
