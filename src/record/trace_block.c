/* Blocks of trace records: the copy of a non-hot event into a block and back, the
 * pool of blocks (mmap'd once, reused) and the queue to the writer thread. */
#include "record/trace_block.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond;
static struct cf_block *q_head, *q_tail, *free_blocks;

static bool is_def(const struct cf_event *e)
{
    return e->type == CF_EV_SITE || e->type == CF_EV_MODULE || e->type == CF_EV_END ||
           e->type == CF_EV_PYFRAME;
}

static uint32_t record_size(const struct cf_event *e)
{
    if (cf_record_hot(e))
        return (uint32_t)CF_HOT_RECORD_BYTES + (cf_record_oom_values(e) ? 16u : 0u);
    uint64_t n = sizeof *e + 8u * (uint64_t)e->nframes + e->len + e->len2;
    return n > CF_BLOCK_BYTES ? UINT32_MAX : (uint32_t)((n + 7u) & ~7ull);
}

bool cf_block_put_record(struct cf_block *b, const struct cf_event *e)
{
    uint32_t n = record_size(e);
    if (n > CF_BLOCK_BYTES - b->len) return false;
    uint8_t *p = b->data + b->len;
    memcpy(p, e, sizeof *e);
    p += sizeof *e;
    if (e->nframes) memcpy(p, e->frames, 8u * (size_t)e->nframes);
    p += 8u * (size_t)e->nframes;
    if (e->len) memcpy(p, e->str, e->len);
    p += e->len;
    if (e->len2) memcpy(p, e->str2, e->len2);
    b->len += n;
    b->nevents++;
    b->defs |= is_def(e);
    return true;
}

uint32_t cf_block_get_record(const uint8_t *p, struct cf_event *e)
{
    if (p[0] == CF_EV_ALLOC || p[0] == CF_EV_FREE || p[0] == CF_EV_CALL) {
        cf_event_hot(e, p[0]);
        memcpy(e, p, CF_HOT_RECORD_BYTES);
        if (cf_record_oom_values(e)) memcpy(e->v, p + CF_HOT_RECORD_BYTES, 16);
        return record_size(e);
    }
    memcpy(e, p, sizeof *e);
    const uint8_t *q = p + sizeof *e;
    e->frames = (const uint64_t *)(const void *)q;
    q += 8u * (size_t)e->nframes;
    e->str = (const char *)q;
    e->str2 = (const char *)q + e->len;
    return record_size(e);
}

struct cf_block *cf_block_new(uint32_t tid)
{
    pthread_mutex_lock(&q_lock);
    struct cf_block *b = free_blocks;
    if (b) free_blocks = b->next;
    pthread_mutex_unlock(&q_lock);
    if (b == NULL) {
        b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return NULL;
    }
    b->next = NULL;
    b->tid = tid;
    b->len = 0;
    b->nevents = 0;
    b->defs = false;
    return b;
}

void cf_block_queue(struct cf_block *b)
{
    pthread_mutex_lock(&q_lock);
    b->next = NULL;
    if (q_tail)
        q_tail->next = b;
    else
        q_head = b;
    q_tail = b;
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
}

struct cf_block *cf_block_take_queued(void)
{
    pthread_mutex_lock(&q_lock);
    struct cf_block *b = q_head;
    q_head = q_tail = NULL;
    pthread_mutex_unlock(&q_lock);
    return b;
}

void cf_block_recycle(struct cf_block *b)
{
    pthread_mutex_lock(&q_lock);
    b->next = free_blocks;
    free_blocks = b;
    pthread_mutex_unlock(&q_lock);
}

bool cf_block_wait(const struct timespec *until, bool (*go_on)(void))
{
    pthread_mutex_lock(&q_lock);
    int rc = 0;
    while (q_head == NULL && rc != ETIMEDOUT && go_on())
        rc = pthread_cond_timedwait(&q_cond, &q_lock, until);
    pthread_mutex_unlock(&q_lock);
    return rc == ETIMEDOUT;
}

void cf_block_queue_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q_cond, &ca);
    pthread_condattr_destroy(&ca);
}

void cf_block_queue_after_fork(void)
{
    const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&q_lock, &fresh, sizeof fresh);
    q_head = q_tail = NULL;
}
