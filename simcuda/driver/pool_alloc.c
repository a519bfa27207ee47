/* Stream-ordered allocator with the growth measured on an H200: every
 * request is a 512 B-aligned block placed first-fit in the pool's chunks;
 * when none has room, a request up to 1 MiB adds a 32 MiB chunk and a larger
 * one a chunk of exactly round_up(size, 2 MiB). "Used" counts the bytes
 * asked for. A freed block is reusable at once by the freeing stream, by
 * streams ordered after the free through events, and by any stream once the
 * free has completed. Idle chunks go back at synchronization points while
 * the pool reserves more than its release threshold. */
#include "pool.h"

#include <stdlib.h>

enum seg_state { SEG_FREE, SEG_USED, SEG_PENDING };

struct seg {
    size_t off, len;
    enum seg_state state;
    struct sim_stream *stream; /* SEG_PENDING: the freeing stream */
    uint64_t free_seq;         /* SEG_PENDING: the free's place in that stream */
    size_t request;
    struct seg *prev, *next;
};

struct chunk {
    struct sim_region *region;
    struct sim_pool *pool;
    unsigned pending_ops; /* queued frees that still name this chunk */
    size_t avail;         /* bytes in free or pending segments */
    size_t max_free;      /* no free or pending segment is longer */
    struct seg *segs;
    struct chunk *prev, *next;
};

/* ---- chunks ---- */

static int chunk_idle(const struct chunk *c)
{
    return c->pending_ops == 0 && c->segs && !c->segs->next && c->segs->state == SEG_FREE;
}

static void chunk_unlink(struct sim_pool *p, struct chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (p->open == c)
        p->open = c->next;
    else
        p->full = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void chunk_push(struct chunk **list, struct chunk *c)
{
    c->prev = NULL;
    c->next = *list;
    if (*list) (*list)->prev = c;
    *list = c;
}

/* `taken` bytes of chunk c were allocated, `returned` bytes freed. */
static void chunk_account(struct sim_pool *p, struct chunk *c, size_t taken, size_t returned)
{
    int was_full = c->avail == 0;
    c->avail = c->avail - taken + returned;
    if (was_full != (c->avail == 0)) {
        chunk_unlink(p, c);
        chunk_push(c->avail == 0 ? &p->full : &p->open, c);
    }
}

static void chunk_release(struct sim_pool *p, struct chunk *c)
{
    chunk_unlink(p, c);
    p->reserved -= c->region->size;
    for (struct seg *s = c->segs, *n; s; s = n) {
        n = s->next;
        free(s);
    }
    sim_region_free(c->region);
    free(c);
}

void sim_pool_trim(struct sim_pool *p, size_t keep)
{
    struct chunk *c = p->open;
    while (c && p->reserved > keep) {
        struct chunk *n = c->next;
        if (chunk_idle(c)) chunk_release(p, c);
        c = n;
    }
}

void sim_pools_release_idle(struct sim_device *d)
{
    for (struct sim_pool *p = d->pools; p; p = p->next)
        sim_pool_trim(p, p->threshold);
}

static struct chunk *chunk_new(struct sim_pool *p, size_t size)
{
    struct sim_device *d = p->dev;
    struct sim_phys ph;
    uint32_t n = (uint32_t)(size / SIM_PAGE);
    if (n > d->npages) return NULL;
    if (sim_phys_alloc(d, n, &ph) != 0) {
        /* Memory held idle by pools is given back before failing. */
        for (struct sim_pool *q = d->pools; q; q = q->next)
            sim_pool_trim(q, 0);
        if (sim_phys_alloc(d, n, &ph) != 0) return NULL;
    }
    struct chunk *c = calloc(1, sizeof *c);
    struct seg *s = calloc(1, sizeof *s);
    struct sim_region *r = c && s ? sim_region_new(d, SIM_R_POOLCHUNK, size, 0, 0) : NULL;
    if (!r) {
        free(c);
        free(s);
        sim_phys_free(d, &ph);
        return NULL;
    }
    r->phys = ph;
    r->has_phys = 1;
    r->owner = c;
    s->len = size;
    s->state = SEG_FREE;
    c->region = r;
    c->pool = p;
    c->segs = s;
    c->avail = size;
    c->max_free = size;
    chunk_push(&p->open, c);
    p->reserved += size;
    if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
    return c;
}

/* ---- segments ---- */

static void seg_merge_next(struct seg *s)
{
    struct seg *n = s->next;
    s->len += n->len;
    s->next = n->next;
    if (n->next) n->next->prev = s;
    free(n);
}

static void seg_coalesce(struct seg *s)
{
    if (s->next && s->next->state == SEG_FREE) seg_merge_next(s);
    if (s->prev && s->prev->state == SEG_FREE) seg_merge_next(s->prev);
}

static int seg_split(struct seg *s, size_t len)
{
    if (s->len == len) return 0;
    struct seg *n = calloc(1, sizeof *n);
    if (!n) return -1;
    n->off = s->off + len;
    n->len = s->len - len;
    n->state = s->state;
    n->stream = s->stream;
    n->free_seq = s->free_seq;
    n->prev = s;
    n->next = s->next;
    if (s->next) s->next->prev = n;
    s->next = n;
    s->len = len;
    return 0;
}

/* A pending free is reusable by its own stream, and by a stream that
 * already waits (through events) for the free, when the pool follows event
 * dependencies; otherwise only once the free has completed. */
static int seg_usable(const struct sim_pool *p, const struct seg *s, struct sim_stream *st,
                      size_t need)
{
    if (s->len < need) return 0;
    if (s->state == SEG_FREE) return 1;
    if (s->state != SEG_PENDING) return 0;
    return s->stream == st || (p->reuse_follow && sim_stream_dep(st, s->stream) >= s->free_seq);
}

static CUresult pool_alloc(struct sim_pool *p, size_t size, struct sim_stream *st, CUdeviceptr *out)
{
    size_t need = SIM_ROUND_UP(size, SIM_SMALL_ALIGN);
    struct chunk *c;
    struct seg *s = NULL;
    for (c = p->open; c && !s; c = s ? c : c->next) {
        if (c->avail < need || c->max_free < need) continue;
        size_t longest = 0;
        for (s = c->segs; s && !seg_usable(p, s, st, need); s = s->next)
            if (s->state != SEG_USED && s->len > longest) longest = s->len;
        if (!s) c->max_free = longest;
    }
    if (!s) {
        c = chunk_new(p, size <= SIM_SMALL_MAX ? SIM_POOL_CHUNK : SIM_ROUND_UP(size, SIM_PAGE));
        if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
        s = c->segs;
    }
    if (seg_split(s, need) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    s->state = SEG_USED;
    s->stream = NULL;
    s->request = size;
    chunk_account(p, c, need, 0);
    p->used += size;
    if (p->used > p->used_high) p->used_high = p->used;
    p->dev->alloc_calls++;
    *out = c->region->base + s->off;
    return CUDA_SUCCESS;
}

static struct seg *seg_at(struct chunk *c, size_t off)
{
    for (struct seg *s = c->segs; s; s = s->next)
        if (off >= s->off && off < s->off + s->len) return s;
    return NULL;
}

CUresult sim_pool_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size)
{
    struct seg *s = seg_at(r->owner, addr - r->base);
    if (!s || s->state != SEG_USED || addr - r->base >= s->off + s->request)
        return CUDA_ERROR_INVALID_VALUE;
    *base = r->base + s->off;
    *size = s->request;
    return CUDA_SUCCESS;
}

struct sim_pool *sim_pool_of(struct sim_region *r)
{
    return ((struct chunk *)r->owner)->pool;
}

CUresult sim_pool_free_now(struct sim_region *r, uintptr_t addr)
{
    struct chunk *c = r->owner;
    struct seg *s = seg_at(c, addr - r->base);
    if (!s || s->state != SEG_USED || s->off != addr - r->base) return CUDA_ERROR_INVALID_VALUE;
    s->state = SEG_FREE;
    c->pool->used -= s->request;
    c->pool->dev->free_calls++;
    chunk_account(c->pool, c, 0, s->len);
    struct seg *keep = s->prev && s->prev->state == SEG_FREE ? s->prev : s;
    seg_coalesce(s);
    if (keep->len > c->max_free) c->max_free = keep->len;
    return CUDA_SUCCESS;
}

/* Only the segments of this very free complete: a block freed, reused by
 * the same stream and freed again is pending again under a later seq. */
void sim_pool_free_done(void *chunk, size_t off, size_t len, struct sim_stream *st, uint64_t seq)
{
    struct chunk *c = chunk;
    c->pending_ops--;
    struct seg *s = c->segs;
    while (s) {
        struct seg *n = s->next;
        if (s->off >= off && s->off + s->len <= off + len && s->state == SEG_PENDING &&
            s->stream == st && s->free_seq == seq) {
            s->state = SEG_FREE;
            s->stream = NULL;
            struct seg *keep = s->prev && s->prev->state == SEG_FREE ? s->prev : s;
            seg_coalesce(s);
            if (keep->len > c->max_free) c->max_free = keep->len;
            n = keep->next;
        }
        s = n;
    }
}

static CUresult pool_free_async(struct sim_region *r, uintptr_t addr, struct sim_stream *st)
{
    struct chunk *c = r->owner;
    struct seg *s = seg_at(c, addr - r->base);
    if (!s || s->state != SEG_USED || s->off != addr - r->base) return CUDA_ERROR_INVALID_VALUE;
    struct sim_op *op = sim_op_new(SIM_OP_POOLFREE);
    if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
    s->state = SEG_PENDING;
    if (s->len > c->max_free) c->max_free = s->len;
    s->stream = st;
    chunk_account(c->pool, c, 0, s->len);
    c->pool->used -= s->request;
    c->pool->dev->free_calls++;
    c->pending_ops++;
    op->u.pfree.chunk = c;
    op->u.pfree.off = s->off;
    op->u.pfree.len = s->len;
    /* The free is a write to the block in stream order: pending work of
     * another stream on it, with no dependency, is a use after free. */
    op->wr_lo = addr;
    op->wr_hi = addr + s->len;
    sim_enqueue(st, op);
    s->free_seq = op->seq;
    return CUDA_SUCCESS;
}

void sim_pool_release_all(struct sim_pool *p)
{
    while (p->open || p->full) {
        struct chunk *c = p->open ? p->open : p->full;
        p->used = 0;
        c->pending_ops = 0;
        chunk_release(p, c);
    }
}

/* ---- cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync ---- */

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, struct sim_pool *p, CUstream h,
                            enum sim_default_stream ds)
{
    struct sim_stream *st;
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &st);
    if (rc == CUDA_SUCCESS && size == 0) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !p) p = st->ctx->dev->current_pool;
    if (rc == CUDA_SUCCESS) {
        if (sim_capturing(st))
            rc = sim_capture_alloc(st, size, dptr);
        else
            rc = pool_alloc(p, size, st, dptr);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SIM_ENTRY();
    return alloc_async(dptr, bytesize, NULL, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SIM_ENTRY();
    return alloc_async(dptr, bytesize, NULL, hStream, SIM_DS_PER_THREAD);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t size, CUmemoryPool h, CUstream hs,
                                enum sim_default_stream ds)
{
    CUresult rc = sim_handle_check(h, SIM_H_POOL);
    return rc == CUDA_SUCCESS ? alloc_async(dptr, size, (struct sim_pool *)h, hs, ds) : rc;
}

SIM_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    SIM_ENTRY();
    return alloc_from_pool(dptr, bytesize, pool, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    SIM_ENTRY();
    return alloc_from_pool(dptr, bytesize, pool, hStream, SIM_DS_PER_THREAD);
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, enum sim_default_stream ds)
{
    struct sim_stream *st;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &st);
    if (rc == CUDA_SUCCESS) {
        struct sim_region *r = sim_region_find(dptr);
        if (sim_capturing(st))
            rc = sim_capture_free(st, dptr);
        else if (r && r->kind == SIM_R_POOLCHUNK)
            rc = pool_free_async(r, dptr, st);
        else if (r && r->kind == SIM_R_GRAPH)
            rc = sim_graph_free_ptr(r, dptr);
        else if (r && (r->kind == SIM_R_LARGE || r->kind == SIM_R_SMALLPAGE))
            /* Measured on an H200 (driver 580.159.04): a stream-ordered free of
             * cuMemAlloc memory succeeds outside a capture and frees the block (a
             * later cuMemFree of it fails). Modelled as freed at once: no kernel
             * runs here that could still use it. */
            rc = sim_mem_free_block(r, dptr);
        else
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    SIM_ENTRY();
    return free_async(dptr, hStream, SIM_DS_LEGACY);
}

SIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    SIM_ENTRY();
    return free_async(dptr, hStream, SIM_DS_PER_THREAD);
}
