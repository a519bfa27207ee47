/* The start of libcudafrag.so: its constructor, which only the library has (the
 * core archive the command and the tests link starts nothing by itself). The
 * options are loaded first; with CUDAFRAG_ENABLE on, CUDAFRAG_CHILDREN=0 takes
 * the library out of LD_PRELOAD, then the lifecycle starts (report/lifecycle.c). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "report/lifecycle.h"

static bool preload_entry_is_us(const char *entry, size_t len, const char *self)
{
    const char *base = entry;
    for (size_t i = 0; i < len; i++)
        if (entry[i] == '/') base = entry + i + 1;
    size_t blen = len - (size_t)(base - entry);
    if (blen >= 14 && strncmp(base, "libcudafrag.so", 14) == 0) return true;
    return self && strlen(self) == len && strncmp(entry, self, len) == 0;
}

/* LD_PRELOAD without libcudafrag: entries are separated by ':' or ' ' and an entry
 * is ours when its basename starts with "libcudafrag.so" or it equals self (may be
 * NULL). Writes the rest, ':'-separated, to out; -1 if n is too small. */
static int preload_without(const char *preload, const char *self, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = preload; *p;) {
        while (*p == ':' || *p == ' ')
            p++;
        const char *end = p;
        while (*end && *end != ':' && *end != ' ')
            end++;
        size_t elen = (size_t)(end - p);
        if (elen && !preload_entry_is_us(p, elen, self)) {
            if (len + elen + 2 > n) return -1;
            if (len) out[len++] = ':';
            memcpy(out + len, p, elen);
            len += elen;
            out[len] = '\0';
        }
        p = end;
    }
    return 0;
}

/* CUDAFRAG_CHILDREN=0: programs this one execs must not load us. Done in the
 * constructor, before the program can start threads (setenv is not thread-safe). */
static void drop_from_preload(const char *self)
{
    const char *preload = getenv("LD_PRELOAD");
    if (preload == NULL) return;
    size_t n = strlen(preload) + 1;
    char *out = malloc(n);
    if (out == NULL) return;
    if (preload_without(preload, self, out, n) == 0) {
        if (out[0])
            setenv("LD_PRELOAD", out, 1);
        else
            unsetenv("LD_PRELOAD");
    }
    free(out);
}

__attribute__((constructor)) static void cf_start(void)
{
    cf_config_load();
    if (!cf_opt_bool(CF_OPT_ENABLE)) return;
    Dl_info self;
    if (!cf_opt_bool(CF_OPT_CHILDREN))
        drop_from_preload(dladdr((void *)&cf_start, &self) ? self.dli_fname : NULL);
    cf_lifecycle_start();
}
