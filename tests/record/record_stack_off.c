/* CUDAFRAG_STACK_DEPTH=0 (set by the test definition): no unwinding at all, one
 * site per API whatever the caller, and libunwind is never loaded. */
#include <link.h>

#include "check.h"
#include "record/record.h"

__attribute__((noinline)) static void alloc_here(enum cf_api api, uint64_t addr)
{
    struct cf_alloc_info ai = {.api = api, .addr = addr, .requested = 64};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void alloc_there(enum cf_api api, uint64_t addr)
{
    struct cf_alloc_info ai = {.api = api, .addr = addr, .requested = 64};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

static int find_libunwind(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (strstr(info->dlpi_name, "libunwind")) *(int *)arg = 1;
    return 0;
}

int main(void)
{
    alloc_here(CF_API_cudaMalloc, 0x1000);
    alloc_there(CF_API_cudaMalloc, 0x2000);
    alloc_here(CF_API_cuMemAlloc, 0x3000);
    alloc_there(CF_API_cuMemAlloc, 0x4000);
    alloc_there(CF_API_cuMemAllocManaged, 0x5000);

    cf_rec_lock_all();
    CHECK_EQ(HASH_COUNT(cf_rec.sites), 3);
    for (struct cf_site *s = cf_rec.sites; s; s = s->hh.next) {
        CHECK_EQ(s->nframes, 0);
        CHECK_EQ(s->calls, s->api == CF_API_cuMemAllocManaged ? 1 : 2);
    }
    cf_rec_unlock_all();

    int loaded = 0;
    dl_iterate_phdr(find_libunwind, &loaded);
    CHECK(!loaded);
    return 0;
}
