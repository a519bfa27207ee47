/* Call sites come from real stacks: two calling functions give two sites, the
 * first recorded frame belongs to the function that called cudafrag, and the
 * libunwind that did the unwinding stays out of the global symbol scope. */
#include <dlfcn.h>
#include <link.h>

#include "check.h"
#include "record/read.h"

#define PUBLIC __attribute__((visibility("default"), noinline))

PUBLIC void alloc_from_site_a(uint64_t addr);
PUBLIC void alloc_from_site_b(uint64_t addr);
__attribute__((visibility("default"))) int main(void);

void alloc_from_site_a(uint64_t addr)
{
    struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = addr, .requested = 256};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame must exist */
}

void alloc_from_site_b(uint64_t addr)
{
    struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = addr, .requested = 256};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

static struct cf_site *site_of(uint64_t addr)
{
    struct cf_alloc a;
    CHECK(cf_rec_live_at(addr, &a));
    return a.site;
}

static const char *function_at(uintptr_t pc)
{
    Dl_info info;
    if (!dladdr((void *)pc, &info) || info.dli_sname == NULL) return "?";
    return info.dli_sname;
}

static int find_libunwind(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (strstr(info->dlpi_name, "libunwind")) *(int *)arg = 1;
    return 0;
}

int main(void)
{
    /* volatile: an unrolled loop would be three call sites. */
    for (volatile uint64_t i = 0; i < 3; i++)
        alloc_from_site_a(0x1000 + i * 0x100);
    alloc_from_site_b(0x9000);

    struct cf_site *a = site_of(0x1000), *b = site_of(0x9000);
    CHECK(a != NULL && b != NULL);
    CHECK(a == site_of(0x1200)); /* same stack, same site */
    cf_rec_lock_all();
    CHECK_NE(a->hash, b->hash);
    CHECK_EQ(a->calls, 3);
    CHECK_EQ(b->calls, 1);
    CHECK_EQ(HASH_COUNT(cf_rec.sites), 2);
    CHECK(a->nframes >= 2 && a->nframes <= 16);
    CHECK(strcmp(function_at(a->frames[0]), "alloc_from_site_a") == 0);
    CHECK(strcmp(function_at(b->frames[0]), "alloc_from_site_b") == 0);
    CHECK(strcmp(function_at(a->frames[1]), "main") == 0);
    cf_rec_unlock_all();

    /* libunwind was loaded, privately: the exception unwinder is not libunwind's. */
    int loaded = 0;
    dl_iterate_phdr(find_libunwind, &loaded);
    CHECK(loaded);
    CHECK(!cf_rec.stacks_unavailable);
    void *raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    Dl_info info;
    if (raise && dladdr(raise, &info)) CHECK(strstr(info.dli_fname, "libunwind") == NULL);
    CHECK(dlsym(RTLD_DEFAULT, "unw_backtrace") == NULL);
    return 0;
}
