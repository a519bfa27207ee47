/* What each thread counts on its own: per-API counters, the size and lifetime
 * histograms, allocation and free totals, and the thread's caches of call sites
 * and pools (internal.h, struct cf_thread). Shared atomic counters cost every
 * intercepted call a locked read-modify-write on a cache line that other threads
 * (and, under a real driver, the driver's own work) keep taking away; a thread's
 * own block stays in its cache and takes plain additions.
 *
 * The blocks form a registry. cf_thread_collect() (called by cf_rec_lock_all) sums
 * them into cf_rec under the registry lock; their owners never stop counting,
 * so what a sum sees of a call still in progress is what the shared atomics
 * showed before. A block outlives its thread: at thread exit it is only marked
 * free, and the next new thread continues counting in it (the sums do not care
 * who added what), so nothing is ever folded or lost and the registry is as
 * long as the most threads that were alive at once. */
#include <string.h>

#include "record/internal.h"

__thread struct cf_thread *cf_thread_tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cf_thread *registry; /* every block, newest first; under registry_lock */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool any_activity; /* a thread attached: it counted a call (sticky) */

/* At thread exit: the block goes to the next thread that needs one. Hooks that
 * run after this (other keys' destructors) attach a block again. */
static void thread_gone(void *arg)
{
    struct cf_thread *t = arg;
    pthread_mutex_lock(&registry_lock);
    t->owned = false;
    pthread_mutex_unlock(&registry_lock);
    cf_thread_tls = NULL;
}

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, thread_gone);
}

struct cf_thread *cf_thread_attach(void)
{
    pthread_once(&exit_key_once, make_exit_key);
    struct cf_thread *t;
    pthread_mutex_lock(&registry_lock);
    for (t = registry; t && t->owned; t = t->next) {
    }
    if (t == NULL) {
        t = cf_meta_alloc(sizeof *t);
        if (t != NULL) {
            memset(t, 0, sizeof *t);
            t->next = registry;
            registry = t;
        }
    }
    if (t != NULL) t->owned = true;
    pthread_mutex_unlock(&registry_lock);
    if (t == NULL) return NULL; /* no memory: this call is not counted */
    /* Only recording attaches a thread, and every recorded event counts a call. */
    __atomic_store_n(&any_activity, true, __ATOMIC_RELAXED);
    cf_thread_tls = t;
    pthread_setspecific(exit_key, t);
    return t;
}

bool cf_thread_any_activity(void)
{
    /* Lock-free: the fork handlers ask it while every record lock is held. */
    return __atomic_load_n(&any_activity, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* With registry_lock held. */
static void collect_totals(void)
{
    uint64_t allocs = 0, frees = 0;
    for (const struct cf_thread *t = registry; t; t = t->next) {
        allocs += load(&t->allocs);
        frees += load(&t->frees);
    }
    store(&cf_rec.total_allocs, allocs);
    store(&cf_rec.total_frees, frees);
}

/* With registry_lock held. */
static void collect_locked(void)
{
    static struct cf_api_stats api[CF_API_COUNT];
    static struct cf_hist sizes, lifetimes;
    memset(api, 0, sizeof api);
    memset(&sizes, 0, sizeof sizes);
    memset(&lifetimes, 0, sizeof lifetimes);
    for (const struct cf_thread *t = registry; t; t = t->next) {
        for (unsigned i = 0; i < CF_API_COUNT; i++) {
            api[i].calls += load(&t->api[i].calls);
            api[i].bytes += load(&t->api[i].bytes);
            api[i].failures += load(&t->api[i].failures);
            api[i].ns_total += load(&t->api[i].ns_total);
            api[i].timed += load(&t->api[i].timed);
        }
        for (unsigned b = 0; b < CF_HIST_BINS; b++) {
            sizes.count[b] += load(&t->sizes[b].count);
            sizes.bytes[b] += load(&t->sizes[b].bytes);
            lifetimes.count[b] += load(&t->lifetimes[b].count);
            lifetimes.bytes[b] += load(&t->lifetimes[b].bytes);
        }
    }
    for (unsigned i = 0; i < CF_API_COUNT; i++) {
        store(&cf_rec.api[i].calls, api[i].calls);
        store(&cf_rec.api[i].bytes, api[i].bytes);
        store(&cf_rec.api[i].failures, api[i].failures);
        store(&cf_rec.api[i].ns_total, api[i].ns_total);
        store(&cf_rec.api[i].timed, api[i].timed);
    }
    for (unsigned b = 0; b < CF_HIST_BINS; b++) {
        store(&cf_rec.sizes.count[b], sizes.count[b]);
        store(&cf_rec.sizes.bytes[b], sizes.bytes[b]);
        store(&cf_rec.lifetimes.count[b], lifetimes.count[b]);
        store(&cf_rec.lifetimes.bytes[b], lifetimes.bytes[b]);
    }
    collect_totals();
}

void cf_thread_collect(void)
{
    pthread_mutex_lock(&registry_lock);
    collect_locked();
    pthread_mutex_unlock(&registry_lock);
}

void cf_thread_publish_totals(void)
{
    pthread_mutex_lock(&registry_lock);
    collect_totals();
    pthread_mutex_unlock(&registry_lock);
}

uint64_t cf_thread_api_calls(enum cf_api api)
{
    uint64_t calls = 0;
    pthread_mutex_lock(&registry_lock);
    for (const struct cf_thread *t = registry; t; t = t->next)
        calls += load(&t->api[api].calls);
    pthread_mutex_unlock(&registry_lock);
    return calls;
}

uint64_t cf_thread_calls_total(void)
{
    uint64_t calls = 0;
    pthread_mutex_lock(&registry_lock);
    for (const struct cf_thread *t = registry; t; t = t->next)
        for (unsigned i = 0; i < CF_API_COUNT; i++)
            calls += load(&t->api[i].calls);
    pthread_mutex_unlock(&registry_lock);
    return calls;
}

/* Collected under the lock had before the deadline: taken again without one, it
 * could be waited for without end. */
bool cf_thread_collect_until(const struct timespec *deadline)
{
    if (!cf_mutex_lock_until(&registry_lock, deadline)) return false;
    collect_locked();
    pthread_mutex_unlock(&registry_lock);
    return true;
}

void cf_thread_lock(void)
{
    pthread_mutex_lock(&registry_lock);
}

void cf_thread_unlock(void)
{
    pthread_mutex_unlock(&registry_lock);
}

/* Only the forking thread lives on in the child: every other block is free for
 * the child's threads (their counts stay in them). */
void cf_thread_after_fork_child(void)
{
    for (struct cf_thread *t = registry; t; t = t->next)
        if (t != cf_thread_tls) t->owned = false;
    pthread_mutex_unlock(&registry_lock);
}
