/* Size-class allocator over mmap'd slabs. Each class has a free list and a bump
 * region carved from a slab; freed blocks go back to their class list and are
 * reused, slabs are never unmapped (the tables only grow to the program's peak).
 * Callers always pass the size back on free (uthash does), so blocks carry no header.
 *
 * The small classes -- the record's nodes, a new table's buckets -- also have a
 * free list per thread, taken and refilled without a lock: an intercepted call
 * allocates a node and a free gives it back, and a class mutex there was two
 * locked operations on a line every thread shares. A thread's list exchanges
 * blocks with the shared one in batches, under the class lock, and goes back to
 * it when the thread exits. */
#include "base/meta_alloc.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "base/export.h"
#include "base/lockwait.h"
#include "base/log.h"

#define SLAB_BYTES (256u * 1024u)

/* Classes close enough that the record's nodes fit exactly. */
static const uint32_t class_bytes[] = {16,   32,   48,   64,   96,    128,   160,
                                       192,  256,  384,  512,  768,   1024,  1536,
                                       2048, 3072, 4096, 8192, 16384, 32768, CF_META_MAX_CLASS};
#define NCLASSES  (sizeof class_bytes / sizeof class_bytes[0])
#define NCACHED   13 /* classes up to 1024 bytes have per-thread lists */
#define CACHE_MAX 32 /* blocks a thread keeps per class; half move at a time */

struct free_block {
    struct free_block *next;
};

struct size_class {
    pthread_mutex_t lock;
    struct free_block *free;
    char *bump, *bump_end;
} __attribute__((aligned(64)));

static struct size_class classes[NCLASSES] = {
    [0 ... NCLASSES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};
static uint64_t mapped_bytes, in_use_bytes;

/* A thread's lists. in_use: what it handed out minus what it took back since its
 * last exchange with the shared lists, not yet in in_use_bytes. */
struct thread_cache {
    struct {
        struct free_block *head;
        uint32_t count;
    } cls[NCACHED];
    int64_t in_use;
};

enum { CACHE_NONE, CACHE_READY, CACHE_GONE };
static __thread struct thread_cache *my_cache __attribute__((tls_model("initial-exec")));
static __thread int cache_state __attribute__((tls_model("initial-exec")));
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

/* The class of sizes up to 1024 bytes by 16-byte steps: (size + 15) / 16. */
static const uint8_t small_class[65] = {
    [0 ... 1] = 0,    [2] = 1,          [3] = 2,          [4] = 3,         [5 ... 6] = 4,
    [7 ... 8] = 5,    [9 ... 10] = 6,   [11 ... 12] = 7,  [13 ... 16] = 8, [17 ... 24] = 9,
    [25 ... 32] = 10, [33 ... 48] = 11, [49 ... 64] = 12,
};

static int class_of(size_t size)
{
    if (size <= 1024) return small_class[(size + 15) >> 4];
    for (unsigned i = NCACHED; i < NCLASSES; i++)
        if (size <= class_bytes[i]) return (int)i;
    return -1;
}

static size_t page_round(size_t size)
{
    return (size + 4095) & ~(size_t)4095;
}

size_t cf_meta_class_size(size_t size)
{
    int c = class_of(size ? size : 1);
    return c >= 0 ? class_bytes[c] : page_round(size);
}

static void *map_bytes(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        cf_warn_once("meta-mmap", "cannot map %zu bytes for bookkeeping; recording degrades", len);
        return NULL;
    }
    __atomic_add_fetch(&mapped_bytes, len, __ATOMIC_RELAXED);
    return p;
}

/* With the class lock held: a block from the free list, else from the bump region. */
static void *take_block(struct size_class *sc, size_t bytes)
{
    struct free_block *b = sc->free;
    if (b) {
        sc->free = b->next;
        return b;
    }
    if ((size_t)(sc->bump_end - sc->bump) < bytes) {
        /* Never malloc here; mmap is a plain system call and may run under any lock. */
        char *slab = map_bytes(SLAB_BYTES);
        if (slab == NULL) return NULL;
        sc->bump = slab;
        sc->bump_end = slab + SLAB_BYTES;
    }
    void *p = sc->bump;
    sc->bump += bytes;
    return p;
}

static void *shared_alloc(int c)
{
    struct size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    void *p = take_block(sc, class_bytes[c]);
    pthread_mutex_unlock(&sc->lock);
    return p;
}

static void shared_free(int c, struct free_block *b)
{
    struct size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    b->next = sc->free;
    sc->free = b;
    pthread_mutex_unlock(&sc->lock);
}

static void push(struct thread_cache *tc, int c, struct free_block *b)
{
    b->next = tc->cls[c].head;
    tc->cls[c].head = b;
    tc->cls[c].count++;
}

/* Half a list's worth to the shared list, or everything (at thread exit). */
static void give_back(struct thread_cache *tc, int c, uint32_t keep)
{
    struct size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    while (tc->cls[c].count > keep) {
        struct free_block *b = tc->cls[c].head;
        tc->cls[c].head = b->next;
        tc->cls[c].count--;
        b->next = sc->free;
        sc->free = b;
    }
    pthread_mutex_unlock(&sc->lock);
    __atomic_add_fetch(&in_use_bytes, (uint64_t)tc->in_use, __ATOMIC_RELAXED);
    tc->in_use = 0;
}

static void refill(struct thread_cache *tc, int c)
{
    struct size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    while (tc->cls[c].count < CACHE_MAX / 2) {
        struct free_block *b = take_block(sc, class_bytes[c]);
        if (b == NULL) break;
        push(tc, c, b);
    }
    pthread_mutex_unlock(&sc->lock);
    __atomic_add_fetch(&in_use_bytes, (uint64_t)tc->in_use, __ATOMIC_RELAXED);
    tc->in_use = 0;
}

/* At thread exit the lists go back; later requests of this thread (other keys'
 * destructors) use the shared lists directly. */
static void cache_gone(void *arg)
{
    struct thread_cache *tc = arg;
    for (int c = 0; c < (int)NCACHED; c++)
        give_back(tc, c, 0);
    my_cache = NULL;
    cache_state = CACHE_GONE;
    __atomic_sub_fetch(&in_use_bytes, cf_meta_class_size(sizeof *tc), __ATOMIC_RELAXED);
    shared_free(class_of(sizeof *tc), (struct free_block *)tc);
}

static void make_cache_key(void)
{
    pthread_key_create(&cache_key, cache_gone);
}

static struct thread_cache *cache_self(void)
{
    if (CF_LIKELY(my_cache != NULL)) return my_cache;
    if (cache_state == CACHE_GONE) return NULL;
    pthread_once(&cache_key_once, make_cache_key);
    struct thread_cache *tc = shared_alloc(class_of(sizeof *tc));
    if (tc == NULL) return NULL;
    __atomic_add_fetch(&in_use_bytes, cf_meta_class_size(sizeof *tc), __ATOMIC_RELAXED);
    memset(tc, 0, sizeof *tc);
    my_cache = tc;
    cache_state = CACHE_READY;
    pthread_setspecific(cache_key, tc);
    return tc;
}

CF_HOT void *cf_meta_alloc(size_t size)
{
    int c = class_of(size ? size : 1);
    if (c < 0) {
        void *p = map_bytes(page_round(size));
        if (p) __atomic_add_fetch(&in_use_bytes, page_round(size), __ATOMIC_RELAXED);
        return p;
    }
    struct thread_cache *tc = c < (int)NCACHED ? cache_self() : NULL;
    if (tc == NULL) {
        void *p = shared_alloc(c);
        if (p) __atomic_add_fetch(&in_use_bytes, class_bytes[c], __ATOMIC_RELAXED);
        return p;
    }
    if (CF_UNLIKELY(tc->cls[c].head == NULL)) refill(tc, c);
    struct free_block *b = tc->cls[c].head;
    if (b == NULL) return NULL;
    tc->cls[c].head = b->next;
    tc->cls[c].count--;
    tc->in_use += class_bytes[c];
    return b;
}

CF_HOT void cf_meta_free(void *p, size_t size)
{
    if (p == NULL) return;
    int c = class_of(size ? size : 1);
    if (c < 0) {
        munmap(p, page_round(size));
        __atomic_sub_fetch(&mapped_bytes, page_round(size), __ATOMIC_RELAXED);
        __atomic_sub_fetch(&in_use_bytes, page_round(size), __ATOMIC_RELAXED);
        return;
    }
    struct thread_cache *tc = c < (int)NCACHED ? cache_self() : NULL;
    if (tc == NULL) {
        __atomic_sub_fetch(&in_use_bytes, class_bytes[c], __ATOMIC_RELAXED);
        shared_free(c, p);
        return;
    }
    push(tc, c, p);
    tc->in_use -= class_bytes[c];
    if (CF_UNLIKELY(tc->cls[c].count > CACHE_MAX)) give_back(tc, c, CACHE_MAX / 2);
}

void cf_meta_get_stats(struct cf_meta_stats *out)
{
    /* Other threads' latest changes are counted at their next exchange with the
     * shared lists; the calling thread's are counted now. */
    int64_t mine = my_cache ? my_cache->in_use : 0;
    out->mapped = __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
    out->in_use = __atomic_load_n(&in_use_bytes, __ATOMIC_RELAXED) + (uint64_t)mine;
}

void cf_meta_lock_all(void)
{
    for (unsigned i = 0; i < NCLASSES; i++)
        pthread_mutex_lock(&classes[i].lock);
}

/* Also in the child of fork. The other threads' lists are not taken over there:
 * they change without a lock, so fork may have copied one in the middle of a
 * change. Their blocks stay unused, at most CACHE_MAX small blocks per class and
 * thread that was running at the fork. */
void cf_meta_unlock_all(void)
{
    for (unsigned i = NCLASSES; i-- > 0;)
        pthread_mutex_unlock(&classes[i].lock);
}
