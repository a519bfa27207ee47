/* The bookkeeping allocator: blocks of every class hold their contents, freed
 * blocks are reused, large blocks are unmapped on free, and the whole recording
 * path (after its one-time initialisation) never calls malloc. */
#include <malloc.h>

#include "check.h"
#include "base/meta_alloc.h"
#include "record/read.h"

/* This program's malloc family counts calls while `counting` is set. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static int counting, mallocs;

#define COUNTED(call) (__atomic_add_fetch(&mallocs, counting, __ATOMIC_RELAXED), (call))
__attribute__((visibility("default"))) void *malloc(size_t n);
__attribute__((visibility("default"))) void *calloc(size_t n, size_t m);
__attribute__((visibility("default"))) void *realloc(void *p, size_t n);
__attribute__((visibility("default"))) void *memalign(size_t a, size_t n);
void *malloc(size_t n)
{
    return COUNTED(__libc_malloc(n));
}
void *calloc(size_t n, size_t m)
{
    return COUNTED(__libc_calloc(n, m));
}
void *realloc(void *p, size_t n)
{
    return COUNTED(__libc_realloc(p, n));
}
void *memalign(size_t a, size_t n)
{
    return COUNTED(__libc_memalign(a, n));
}

#define BLOCKS 5000

static void check_classes(void)
{
    static unsigned char *blocks[BLOCKS];
    static size_t sizes[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        sizes[i] = 1 + (size_t)(i * 37) % 5000;
        blocks[i] = cf_meta_alloc(sizes[i]);
        CHECK(blocks[i] != NULL);
        CHECK_EQ((uintptr_t)blocks[i] % 16, 0);
        memset(blocks[i], i & 0xff, sizes[i]);
    }
    for (int i = 0; i < BLOCKS; i++)
        for (size_t k = 0; k < sizes[i]; k++)
            CHECK_EQ(blocks[i][k], i & 0xff);
    for (int i = 0; i < BLOCKS; i++)
        cf_meta_free(blocks[i], sizes[i]);

    /* A freed block is handed out again before new memory is carved. */
    void *p = cf_meta_alloc(192);
    cf_meta_free(p, 192);
    CHECK(cf_meta_alloc(180) == p);
    cf_meta_free(p, 180);

    CHECK_EQ(cf_meta_class_size(sizeof(struct cf_alloc)), 96);
    /* Every request gets the smallest class that holds it. */
    static const size_t classes[] = {16,   32,   48,   64,   96,    128,   160,
                                     192,  256,  384,  512,  768,   1024,  1536,
                                     2048, 3072, 4096, 8192, 16384, 32768, 65536};
    for (size_t n = 1, k = 0; n <= 65536; n++) {
        while (classes[k] < n)
            k++;
        CHECK_EQ(cf_meta_class_size(n), classes[k]);
    }
    CHECK_EQ(cf_meta_class_size(CF_META_MAX_CLASS + 1), CF_META_MAX_CLASS + 4096);

    struct cf_meta_stats before, during, after;
    cf_meta_get_stats(&before);
    void *big = cf_meta_alloc(3 << 20);
    CHECK(big != NULL);
    memset(big, 1, 3 << 20);
    cf_meta_get_stats(&during);
    CHECK_EQ(during.mapped - before.mapped, 3 << 20);
    CHECK_EQ(during.in_use - before.in_use, 3 << 20);
    cf_meta_free(big, 3 << 20);
    cf_meta_get_stats(&after);
    CHECK_EQ(after.mapped, before.mapped);
    CHECK_EQ(after.in_use, before.in_use);
}

__attribute__((noinline)) static void alloc_at(uint64_t addr, uint64_t size)
{
    struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = addr, .requested = size};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void alloc_elsewhere(uint64_t addr)
{
    struct cf_alloc_info ai = {.api = CF_API_cuMemAllocPitch, .addr = addr, .requested = 1};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

static void check_no_malloc_when_recording(void)
{
    alloc_at(0x10, 8); /* first use: configuration, libunwind, fork handlers */
    CHECK(cf_rec_free(CF_API_cudaFree, 0x10, 0));
    __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
    for (uint64_t i = 1; i <= 20000; i++)
        alloc_at(i << 12, i); /* tables grow */
    alloc_elsewhere(0x1);     /* a new site */
    for (uint64_t i = 1; i <= 20000; i += 2)
        CHECK(cf_rec_free(CF_API_cudaFree, i << 12, 0));
    cf_rec_free(CF_API_cudaFree, 0xbad, 0);
    cf_rec_lock_all();
    cf_rec_unlock_all();
    __atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
    CHECK_EQ(mallocs, 0);
    struct cf_rec_read r; /* the report's copy is the report's, in malloc'd memory */
    CHECK_EQ(cf_rec_read(&r), 0);
    CHECK_EQ(r.live_count, 10001);
    cf_rec_read_free(&r);
    CHECK(!cf_rec.stacks_unavailable);
}

int main(void)
{
    check_classes();
    check_no_malloc_when_recording();
    return 0;
}
