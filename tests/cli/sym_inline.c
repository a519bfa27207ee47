/* A program whose call sites cudafrag symbolize must name exactly: prints the ELF
 * virtual addresses (runtime address minus the load bias) of two return addresses,
 * one in code inlined into a real function, one in main. Lines that the test
 * expects are marked with a SYM_ comment. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>

static void *seen[2];

static uintptr_t vaddr(void *addr)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL) return 0;
    return (uintptr_t)addr - map->l_addr;
}

__attribute__((noinline)) static int note_caller(int x)
{
    seen[0] = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static inline __attribute__((always_inline)) int scaled(int x)
{
    return 3 * note_caller(x); /* SYM_INLINED */
}

__attribute__((noinline)) int sym_outer(int x);
__attribute__((noinline)) int sym_outer(int x)
{
    seen[1] = __builtin_return_address(0);
    int r = scaled(x); /* SYM_CALLS_INLINED */
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

int main(int argc, char **argv)
{
    (void)argv;
    int r = sym_outer(argc); /* SYM_MAIN */
    printf("inlined %#lx\n", (unsigned long)vaddr(seen[0]));
    printf("main %#lx\n", (unsigned long)vaddr(seen[1]));
    return r == 3 * (argc + 1) + 1 ? 0 : 1;
}
