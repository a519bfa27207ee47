/* The trace's event path: each thread appends its events to a block of its own,
 * as they are in memory (trace_block.h); a full block goes to the writer's queue,
 * and the writer takes every thread's partial block each CUDAFRAG_TRACE_FLUSH_MS.
 * No malloc and no stdio here.
 *
 * Encoding on the writer rather than on the event path: the varints of an
 * allocation's event took about 25 ns per call on the H200 (the trace's whole
 * cost then), copying its 88 bytes a few (docs/performance.md).
 *
 * An append takes no locked instruction: a locked read-modify-write costs a
 * cache line held exclusively and a pipeline drain on every event, and the
 * buffer is its thread's own but for the rare moments another thread takes its
 * partial block. The owner marks itself busy and checks the buffer's lock with
 * plain loads and stores; a thread taking the block holds that lock and then
 * makes every running thread execute a full barrier (membarrier, the asymmetric
 * half of the fence), after which either the owner has seen the lock (and waits
 * on it) or the taker sees the owner busy (and leaves the block for later).
 * Where membarrier is refused, appends take the lock as before. */
#include "record/trace_append.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/lock.h"
#include "record/record.h"
#include "record/trace_block.h"
#include "base/clock.h"
#include "base/lockwait.h"
#include "base/meta_alloc.h"

/* lock: held by whoever changes cur or off (the owner on its slow path, a taker
 * of the block); an append that only adds to cur holds it only where membarrier
 * is refused (!fast). busy: the owner is appending without the lock. */
struct tbuf {
    struct cf_lock lock;
    int busy;
    bool fast;
    bool dead;   /* its thread exited: the next new thread reuses it */
    bool off;    /* the trace is finished: its thread appends no more */
    bool taking; /* the writer holds lock, its fence pending (collect_partial) */
    struct cf_block *cur;
    uint32_t tid;
    struct tbuf *next;
};

static int state = CF_TRACE_OFF; /* atomic */
/* Every thread's buffer, newest first, under tbufs_lock. Buffers are never freed,
 * so a list read once from its head may be walked without the lock. */
static struct tbuf *tbufs;
static pthread_mutex_t tbufs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t tbuf_key;
static bool asym; /* membarrier is available: appends are lock-free */
static __thread struct tbuf *my_tbuf __attribute__((tls_model("initial-exec")));

enum cf_trace_state cf_trace_state(void)
{
    return (enum cf_trace_state)__atomic_load_n(&state, __ATOMIC_RELAXED);
}

void cf_trace_state_set(enum cf_trace_state s)
{
    __atomic_store_n(&state, (int)s, __ATOMIC_RELAXED);
}

enum cf_trace_state cf_trace_state_swap(enum cf_trace_state s)
{
    return (enum cf_trace_state)__atomic_exchange_n(&state, (int)s, __ATOMIC_RELAXED);
}

bool cf_trace_on(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
    return s == CF_TRACE_BUFFERING || s == CF_TRACE_WRITING;
}

/* ---- a thread's buffer ---- */

/* The buffer goes to the next new thread: an event this thread still makes (a
 * later destructor's CUDA call) finds a buffer of its own, never this one. */
static void thread_gone(void *arg)
{
    struct tbuf *t = arg;
    my_tbuf = NULL;
    cf_lock(&t->lock);
    struct cf_block *b = t->cur;
    t->cur = NULL;
    t->dead = true;
    cf_unlock(&t->lock);
    if (b && b->nevents) cf_block_queue(b);
}

CF_COLD static struct tbuf *tbuf_get(void)
{
    if (my_tbuf) return my_tbuf;
    struct tbuf *t = NULL;
    pthread_mutex_lock(&tbufs_lock);
    for (struct tbuf *it = tbufs; it; it = it->next)
        if (it->dead) {
            t = it;
            t->dead = false;
            break;
        }
    pthread_mutex_unlock(&tbufs_lock);
    if (t == NULL) {
        t = cf_meta_alloc(sizeof *t);
        if (t == NULL) return NULL;
        memset(t, 0, sizeof *t); /* the lock free */
        t->fast = asym;          /* for good: a reused buffer keeps it */
        pthread_mutex_lock(&tbufs_lock);
        t->next = tbufs;
        tbufs = t;
        pthread_mutex_unlock(&tbufs_lock);
    }
    t->tid = cf_tid();
    my_tbuf = t;
    pthread_setspecific(tbuf_key, t);
    return t;
}

/* ---- the event path ---- */

/* e into b, if it fits. */
static inline bool put_in(struct cf_block *b, const struct cf_event *e)
{
    if (cf_record_hot(e)) return cf_block_put_hot(b, e);
    return cf_block_put_record(b, e);
}

/* e into t's block, under t's lock: a new block, a full one, a finished trace. */
CF_COLD static void append_locked(struct tbuf *t, const struct cf_event *e)
{
    cf_lock(&t->lock);
    if (CF_UNLIKELY(t->off)) {
        cf_unlock(&t->lock);
        return;
    }
    if (t->cur == NULL) t->cur = cf_block_new(t->tid);
    if (t->cur && !put_in(t->cur, e)) {
        /* Queued under the thread's lock: its blocks reach the file in order. An
         * event larger than a block is dropped. */
        if (t->cur->nevents) {
            cf_block_queue(t->cur);
            t->cur = cf_block_new(t->tid);
        }
        if (t->cur) put_in(t->cur, e);
    }
    cf_unlock(&t->lock);
}

/* e into t's current block without a locked instruction; false when the lock is
 * needed (no block, no room, a taker at work). The signal fence keeps the compiler
 * from moving the lock's load above the store of busy; the processor may, and the
 * taker's membarrier covers that. The acquire pairs with a taker's unlock, so its
 * change of cur is seen. */
static inline bool append_fast(struct tbuf *t, const struct cf_event *e)
{
    __atomic_store_n(&t->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    bool done = false;
    if (CF_LIKELY(__atomic_load_n(&t->lock.v, __ATOMIC_ACQUIRE) == 0)) {
        struct cf_block *b = t->cur;
        done = b != NULL && put_in(b, e);
    }
    __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
    return done;
}

/* A thread that has its buffer reads nothing shared to find out whether to trace:
 * the finish takes every buffer's block and marks it off. Without one, the state
 * decides. */
CF_HOT void cf_trace_emit(const struct cf_event *e)
{
    struct tbuf *t = my_tbuf;
    if (CF_UNLIKELY(t == NULL)) {
        if (!cf_trace_on()) return;
        t = tbuf_get();
        if (t == NULL) return;
    }
    if (CF_LIKELY(t->fast) && append_fast(t, e)) return;
    append_locked(t, e);
}

/* ---- taking the threads' blocks ---- */

/* The taker's half of the fence: every running thread of the process executes a
 * full barrier before this returns (a thread not running has, at its switch). */
static bool fence_all(void)
{
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}

void cf_trace_fence_setup(void)
{
    int saved = errno;
    asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
}

void cf_trace_buffers_init(void)
{
    pthread_key_create(&tbuf_key, thread_gone);
    cf_trace_fence_setup();
}

/* With t's lock held and the fence made: whether its owner is out of the lock-free
 * append (it cannot enter it again while the lock is held). */
static bool owner_out(struct tbuf *t)
{
    return __atomic_load_n(&t->busy, __ATOMIC_ACQUIRE) == 0;
}

/* One fence serves every buffer whose lock was had; a busy one waits for the
 * next round. */
void cf_trace_collect_partial(void)
{
    pthread_mutex_lock(&tbufs_lock);
    bool need_fence = false;
    for (struct tbuf *t = tbufs; t; t = t->next) {
        t->taking = cf_lock_try(&t->lock);
        need_fence |= t->taking && t->fast;
    }
    bool fenced = !need_fence || fence_all();
    for (struct tbuf *t = tbufs; t; t = t->next) {
        if (!t->taking) continue;
        t->taking = false;
        struct cf_block *b = t->cur;
        if (fenced && owner_out(t) && b && b->nevents) {
            t->cur = NULL;
            cf_block_queue(b);
        }
        cf_unlock(&t->lock);
    }
    pthread_mutex_unlock(&tbufs_lock);
}

static void sleep_ms(void)
{
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
}

/* The finish may run in an exit() called from a signal handler that interrupted
 * a thread inside an append (possibly this thread): a buffer's lock, and its
 * owner out of the lock-free append, are each tried for up to 200 ms. */
static bool tbuf_take_bounded(struct tbuf *t)
{
    int i = 0;
    while (!cf_lock_try(&t->lock)) {
        if (++i == 200) return false;
        sleep_ms();
    }
    if (!t->fast) return true;
    bool fenced = fence_all();
    for (i = 0; fenced && i < 200; i++) {
        if (owner_out(t)) return true;
        sleep_ms();
    }
    cf_unlock(&t->lock);
    return false;
}

/* The list of buffers as it is now, or NULL when its lock could not be had. */
static struct tbuf *tbufs_bounded(bool *had)
{
    struct timespec until = cf_deadline_after_ms(200);
    *had = cf_mutex_lock_until(&tbufs_lock, &until);
    if (!*had) return NULL;
    struct tbuf *head = tbufs;
    pthread_mutex_unlock(&tbufs_lock);
    return head;
}

bool cf_trace_collect_all(void)
{
    bool whole;
    /* A thread queues a full block holding its own lock, so its lock is taken here
     * without the list's: the other order would deadlock. */
    for (struct tbuf *t = tbufs_bounded(&whole); t; t = t->next) {
        if (!tbuf_take_bounded(t)) {
            whole = false;
            continue;
        }
        struct cf_block *b = t->cur;
        t->cur = NULL;
        t->off = true;
        if (b && b->nevents) cf_block_queue(b);
        cf_unlock(&t->lock);
    }
    return whole;
}

/* A thread with a buffer does not look at the state: its buffer is closed. */
void cf_trace_buffers_off(void)
{
    bool had;
    for (struct tbuf *t = tbufs_bounded(&had); t; t = t->next) {
        if (!tbuf_take_bounded(t)) continue;
        t->off = true;
        t->cur = NULL; /* dropped: the next append sees off */
        cf_unlock(&t->lock);
    }
}

void cf_trace_buffers_after_fork(void)
{
    tbufs = NULL;
    my_tbuf = NULL;
    pthread_setspecific(tbuf_key, NULL); /* else this thread's exit queues the parent's block */
    const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&tbufs_lock, &fresh, sizeof fresh);
}
