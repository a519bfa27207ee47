#include "report_fill.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "record/record.h"

/* Inlined, so the recorded call site is the named function calling it. */
static inline __attribute__((always_inline)) void rec_alloc(enum cf_api api, uint64_t addr,
                                                            uint64_t size, int result)
{
    struct cf_alloc_info ai;
    memset(&ai, 0, sizeof ai);
    ai.api = api;
    ai.addr = result ? 0 : addr;
    ai.requested = size;
    ai.device = 0;
    ai.result = result;
    ai.oom = result == 2;
    cf_rec_alloc(&ai);
}

__attribute__((noinline)) void fill_hot_loop(void)
{
    for (uint64_t i = 0; i < FILL_LOOP_CALLS; i++) {
        rec_alloc(CF_API_cudaMalloc, 0x7f0000000000ull, 1ull << 20, 0);
        CHECK(cf_rec_free(CF_API_cudaFree, 0x7f0000000000ull, 0));
    }
    __asm__ volatile("" ::: "memory"); /* keep the calls above from becoming a tail call */
}

__attribute__((noinline)) void fill_many_sizes(void)
{
    for (uint64_t i = 0; i < FILL_SIZES; i++)
        rec_alloc(CF_API_cudaMalloc, 0x7e0000000000ull + i * (64ull << 20), (1ull << 20) + i * 4096,
                  0);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void fill_oom_with_free_memory(void)
{
    rec_alloc(CF_API_cudaMalloc, 0, FILL_OOM_REQUEST, 2);
    __asm__ volatile("" ::: "memory");
    CHECK_GE(cf_rec.nooms, 1);
    struct cf_oom *o = &cf_rec.ooms[cf_rec.nooms - 1];
    o->free_bytes = 8ull << 30;
    o->total_bytes = 16ull << 30;
}

char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

static char temp_path[] = "/tmp/cudafrag-test-XXXXXX";

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void remove_temp_dir(void)
{
    nftw(temp_path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *temp_dir(void)
{
    CHECK(mkdtemp(temp_path) != NULL);
    atexit(remove_temp_dir);
    return temp_path;
}
