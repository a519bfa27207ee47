/* Size-class allocator over mmap'd slabs. Each class has a free list and a bump
 * region carved from a slab; freed blocks go back to their class list and are
 * reused, slabs are never unmapped (the tables only grow to the program's peak).
 * Callers always pass the size back on free (uthash does), so blocks carry no header. */
#include "base/meta_alloc.h"

#include <pthread.h>
#include <sys/mman.h>

#include "base/log.h"

#define SLAB_BYTES (256u * 1024u)

/* Classes close enough that the record's nodes (192 and 768 bytes) fit exactly. */
static const uint32_t class_bytes[] = {16,   32,   48,   64,   96,    128,   160,
                                       192,  256,  384,  512,  768,   1024,  1536,
                                       2048, 3072, 4096, 8192, 16384, 32768, CF_META_MAX_CLASS};
#define NCLASSES (sizeof class_bytes / sizeof class_bytes[0])

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

static int class_of(size_t size)
{
    for (unsigned i = 0; i < NCLASSES; i++)
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

void *cf_meta_alloc(size_t size)
{
    int c = class_of(size ? size : 1);
    void *p;
    if (c < 0) {
        p = map_bytes(page_round(size));
    } else {
        struct size_class *sc = &classes[c];
        pthread_mutex_lock(&sc->lock);
        p = take_block(sc, class_bytes[c]);
        pthread_mutex_unlock(&sc->lock);
    }
    if (p) __atomic_add_fetch(&in_use_bytes, cf_meta_class_size(size), __ATOMIC_RELAXED);
    return p;
}

void cf_meta_free(void *p, size_t size)
{
    if (p == NULL) return;
    __atomic_sub_fetch(&in_use_bytes, cf_meta_class_size(size), __ATOMIC_RELAXED);
    int c = class_of(size ? size : 1);
    if (c < 0) {
        munmap(p, page_round(size));
        __atomic_sub_fetch(&mapped_bytes, page_round(size), __ATOMIC_RELAXED);
        return;
    }
    struct size_class *sc = &classes[c];
    struct free_block *b = p;
    pthread_mutex_lock(&sc->lock);
    b->next = sc->free;
    sc->free = b;
    pthread_mutex_unlock(&sc->lock);
}

void cf_meta_get_stats(struct cf_meta_stats *out)
{
    out->mapped = __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
    out->in_use = __atomic_load_n(&in_use_bytes, __ATOMIC_RELAXED);
}

void cf_meta_lock_all(void)
{
    for (unsigned i = 0; i < NCLASSES; i++)
        pthread_mutex_lock(&classes[i].lock);
}

void cf_meta_unlock_all(void)
{
    for (unsigned i = NCLASSES; i-- > 0;)
        pthread_mutex_unlock(&classes[i].lock);
}
