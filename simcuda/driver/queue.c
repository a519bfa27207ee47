/* The completion model. Work is queued per stream and runs, in order, only
 * when something waits for it (stream, event or context synchronization, a
 * synchronous call, cuMemFree). This makes the order in which a program's
 * work completes deterministic and lets every enqueue be checked against the
 * still-pending work of other streams. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
    struct sim_op *op = calloc(1, sizeof *op);
    if (op) op->kind = kind;
    return op;
}

/* ---- dependencies ---- */

static uint64_t dep_of(struct sim_stream *s, struct sim_stream *t)
{
    for (size_t i = 0; i < s->ndeps; i++)
        if (s->deps[i].stream == t) return s->deps[i].seq;
    return 0;
}

uint64_t sim_stream_dep(struct sim_stream *s, struct sim_stream *t)
{
    return dep_of(s, t);
}

static void set_dep(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    if (t == s) return;
    for (size_t i = 0; i < s->ndeps; i++) {
        if (s->deps[i].stream == t) {
            if (s->deps[i].seq < seq) s->deps[i].seq = seq;
            return;
        }
    }
    if (s->ndeps == s->cap_deps) {
        size_t cap = s->cap_deps ? 2 * s->cap_deps : 4;
        struct sim_dep *n = realloc(s->deps, cap * sizeof *n);
        if (!n) return;
        s->deps = n;
        s->cap_deps = cap;
    }
    s->deps[s->ndeps].stream = t;
    s->deps[s->ndeps].seq = seq;
    s->ndeps++;
}

/* s waits for t's work up to seq, and so for everything that work waits for. */
static void add_dep(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    set_dep(s, t, seq);
    for (size_t i = 0; i < t->ndeps; i++)
        set_dep(s, t->deps[i].stream, t->deps[i].seq);
}

static void widen(struct sim_stream *s, uintptr_t lo, uintptr_t hi)
{
    if (lo == hi) return;
    if (s->pend_lo == s->pend_hi) {
        s->pend_lo = lo;
        s->pend_hi = hi;
        return;
    }
    if (lo < s->pend_lo) s->pend_lo = lo;
    if (hi > s->pend_hi) s->pend_hi = hi;
}

static void append(struct sim_stream *s, struct sim_op *op)
{
    widen(s, op->wr_lo, op->wr_hi);
    widen(s, op->rd_lo, op->rd_hi);
    op->seq = s->next_seq++;
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
}

static void wait_on(struct sim_stream *s, struct sim_stream *t)
{
    struct sim_op *w = sim_op_new(SIM_OP_WAIT);
    if (!w) return;
    w->u.wait.stream = t;
    w->u.wait.seq = t->next_seq - 1;
    add_dep(s, t, w->u.wait.seq);
    append(s, w);
}

static int is_blocking(struct sim_stream *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* The legacy default stream waits for all blocking streams of its context
 * and they wait for it. */
static void legacy_ordering(struct sim_stream *s)
{
    if (s->is_legacy) {
        for (struct sim_stream *t = s->ctx->streams; t; t = t->next)
            if (t != s && is_blocking(t) && t->head) wait_on(s, t);
    } else if (is_blocking(s) && s->ctx->legacy && s->ctx->legacy->head) {
        wait_on(s, s->ctx->legacy);
    }
}

/* ---- hazards ---- */

static int overlap(uintptr_t alo, uintptr_t ahi, uintptr_t blo, uintptr_t bhi)
{
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

static int conflicts(const struct sim_op *a, const struct sim_op *b)
{
    return overlap(a->wr_lo, a->wr_hi, b->wr_lo, b->wr_hi) ||
           overlap(a->wr_lo, a->wr_hi, b->rd_lo, b->rd_hi) ||
           overlap(a->rd_lo, a->rd_hi, b->wr_lo, b->wr_hi);
}

static void check_hazards(struct sim_stream *s, const struct sim_op *op)
{
    if (op->wr_lo == op->wr_hi && op->rd_lo == op->rd_hi) return;
    for (struct sim_stream *t = sim.streams; t; t = t->next_all) {
        if (t == s || !t->head) continue;
        /* Cheap rejection: nothing pending on t comes near this op. */
        if (!overlap(op->wr_lo, op->wr_hi, t->pend_lo, t->pend_hi) &&
            !overlap(op->rd_lo, op->rd_hi, t->pend_lo, t->pend_hi))
            continue;
        uint64_t covered = dep_of(s, t);
        for (struct sim_op *y = t->head; y; y = y->next) {
            if (y->seq <= covered || !conflicts(op, y)) continue;
            sim.hazards++;
            if (!sim.hazard_reported) {
                sim.hazard_reported = 1;
                fprintf(stderr,
                        "simcuda: stream-order hazard: work queued on stream %llu touches "
                        "device memory [%#lx, %#lx) that pending work of stream %llu uses, "
                        "with no event or stream dependency between them\n",
                        s->id, (unsigned long)(op->wr_hi ? op->wr_lo : op->rd_lo),
                        (unsigned long)(op->wr_hi ? op->wr_hi : op->rd_hi), t->id);
            }
            return;
        }
    }
}

void sim_enqueue(struct sim_stream *s, struct sim_op *op)
{
    legacy_ordering(s);
    check_hazards(s, op);
    append(s, op);
}

/* ---- execution ---- */

static void fill(const struct sim_op *op)
{
    for (size_t row = 0; row < op->u.set.height; row++) {
        uint8_t *p = (uint8_t *)(op->u.set.dst + row * op->u.set.pitch);
        size_t n = op->u.set.width;
        if (op->u.set.elem == 1) {
            memset(p, (int)(op->u.set.value & 0xff), n);
        } else if (op->u.set.elem == 2) {
            uint16_t v = (uint16_t)op->u.set.value;
            for (size_t i = 0; i < n; i++)
                memcpy(p + 2 * i, &v, 2);
        } else {
            uint32_t v = op->u.set.value;
            for (size_t i = 0; i < n; i++)
                memcpy(p + 4 * i, &v, 4);
        }
    }
}

static void copy(const struct sim_op *op)
{
    for (size_t row = 0; row < op->u.copy.height; row++)
        memmove((void *)(op->u.copy.dst + row * op->u.copy.dpitch),
                (const void *)(op->u.copy.src + row * op->u.copy.spitch), op->u.copy.width);
}

static void execute(struct sim_stream *s, struct sim_op *op)
{
    switch (op->kind) {
    case SIM_OP_MEMSET:
        fill(op);
        break;
    case SIM_OP_COPY:
        copy(op);
        break;
    case SIM_OP_HOSTFN:
        op->u.host.fn(op->u.host.arg);
        break;
    case SIM_OP_WAIT:
        sim_drain(op->u.wait.stream, op->u.wait.seq);
        break;
    case SIM_OP_POOLFREE:
        sim_pool_free_done(op->u.pfree.chunk, op->u.pfree.off, op->u.pfree.len, s, op->seq);
        break;
    case SIM_OP_NOP:
        break;
    }
}

void sim_drain(struct sim_stream *s, uint64_t upto)
{
    while (s->head && s->head->seq <= upto) {
        struct sim_op *op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        execute(s, op);
        s->done_seq = op->seq;
        free(op);
    }
    if (!s->head) {
        s->done_seq = s->next_seq - 1;
        s->pend_lo = s->pend_hi = 0;
    }
}

void sim_drain_all(struct sim_stream *s)
{
    sim_drain(s, s->next_seq - 1);
}

void sim_drain_ctx(struct sim_ctx *ctx)
{
    for (struct sim_stream *t = ctx->streams; t; t = t->next)
        sim_drain_all(t);
}

void sim_drain_device(struct sim_device *d)
{
    for (struct sim_stream *t = sim.streams; t; t = t->next_all)
        if (t->ctx->dev == d) sim_drain_all(t);
}

void sim_drain_everything(void)
{
    for (struct sim_stream *t = sim.streams; t; t = t->next_all)
        sim_drain_all(t);
}

void sim_run_now(struct sim_stream *s, struct sim_op *op)
{
    sim_enqueue(s, op);
    sim_drain_all(s);
}

void sim_sync_point(struct sim_device *d)
{
    sim_pools_release_idle(d);
}

void sim_queues_forget_stream(struct sim_stream *s)
{
    for (struct sim_stream *t = sim.streams; t; t = t->next_all) {
        for (struct sim_op *op = t->head; op; op = op->next)
            if (op->kind == SIM_OP_WAIT && op->u.wait.stream == s) op->kind = SIM_OP_NOP;
        for (size_t i = 0; i < t->ndeps; i++) {
            if (t->deps[i].stream == s) {
                t->deps[i] = t->deps[--t->ndeps];
                break;
            }
        }
    }
}

/* Pending work on the stream, including work it waits for on others. */
int sim_stream_pending(struct sim_stream *s)
{
    if (s->head) return 1;
    if (s->is_legacy) {
        for (struct sim_stream *t = s->ctx->streams; t; t = t->next)
            if (t != s && is_blocking(t) && t->head) return 1;
    }
    return 0;
}

void sim_stream_wait_for(struct sim_stream *s, struct sim_stream *t, uint64_t seq)
{
    if (t == s || t->done_seq >= seq) return;
    struct sim_op *w = sim_op_new(SIM_OP_WAIT);
    if (!w) return;
    w->u.wait.stream = t;
    w->u.wait.seq = seq;
    add_dep(s, t, seq);
    sim_enqueue(s, w);
}
