/* `cudafrag run --blocks`: each framework's documented switch that bypasses its
 * cache, so that every tensor, array or buffer is an allocation cudafrag sees,
 * and the arena to serve those allocations at the speed of a pool. A setting the
 * user made is never overridden: it is kept and named, and a setting of theirs
 * that a switch makes moot is said so. (docs/replay.md, "Block-level capture".) */
#include "cli/blocks.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PT_NO_CACHE "PYTORCH_NO_CUDA_MEMORY_CACHING"
#define XLA_ALLOC   "XLA_PYTHON_CLIENT_ALLOCATOR"

/* PyTorch reads one of these, which one first depending on its version. */
static const char *const pt_conf_vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
/* XLA's BFC pool settings, which the platform allocator does not use. */
static const char *const xla_pool_vars[] = {
    "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION"};

static void append(char *buf, size_t n, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends sep (when buf is not empty) and the formatted text, cut at n. */
static void append(char *buf, size_t n, const char *sep, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len && len + 1 < n) len += (size_t)snprintf(buf + len, n - len, "%s", sep);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/* A value as recorded in CUDAFRAG_BLOCKS, whose items are ';'-separated. */
static const char *item_value(const char *v, char *out, size_t n)
{
    snprintf(out, n, "%s", v);
    for (char *p = out; *p; p++)
        if (*p == ';') *p = ',';
    return out;
}

/* The value of "key:value" in a PyTorch allocator setting ("a:b,c:d"), or NULL. */
static const char *conf_value(const char *conf, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    for (const char *p = conf; *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, ",");
        if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == ':') {
            snprintf(out, n, "%.*s", (int)(len - klen - 1), p + klen + 1);
            return out;
        }
        p += len;
    }
    return NULL;
}

/* The user's PyTorch allocator setting that picks the cudaMallocAsync backend
 * (any backend but "native"), or NULL. */
static const char *pt_async_backend(const char **var)
{
    char v[64];
    for (size_t i = 0; i < sizeof pt_conf_vars / sizeof pt_conf_vars[0]; i++) {
        const char *conf = getenv(pt_conf_vars[i]);
        if (conf && conf_value(conf, "backend", v, sizeof v) && strcmp(v, "native") != 0) {
            *var = pt_conf_vars[i];
            return conf;
        }
    }
    return NULL;
}

static void pytorch_caching_settings_moot(struct cf_blocks *b)
{
    for (size_t i = 0; i < sizeof pt_conf_vars / sizeof pt_conf_vars[0]; i++) {
        const char *conf = getenv(pt_conf_vars[i]);
        if (conf && *conf)
            append(b->notes, sizeof b->notes, "\n",
                   "PyTorch: your %s=%s does not act while caching is off; try its settings on "
                   "the trace instead: cudafrag replay --model pytorch:KNOB=VALUE TRACE",
                   pt_conf_vars[i], conf);
    }
}

/* The cudaMallocAsync backend allocates every tensor with cudaMallocAsync already
 * and does not read the no-caching switch: kept, recorded, said. */
static void pytorch_async_backend(struct cf_blocks *b, const char *var, const char *conf,
                                  char *kept, size_t keptn)
{
    char v[512];
    append(kept, keptn, ", ", "%s=%s", var, conf);
    append(b->record, sizeof b->record, "; ", "%s=%s (user's)", var, item_value(conf, v, sizeof v));
    append(b->notes, sizeof b->notes, "\n",
           "PyTorch: your %s picks the cudaMallocAsync backend, which already allocates each "
           "tensor from the driver's pool (the arena does not serve them); %s only acts on "
           "the native allocator",
           var, PT_NO_CACHE);
}

static void pytorch(struct cf_blocks *b, char *set, size_t setn, char *kept, size_t keptn)
{
    char v[512];
    const char *var, *async = pt_async_backend(&var);
    const char *mine = getenv(PT_NO_CACHE);
    if (async) pytorch_async_backend(b, var, async, kept, keptn);
    if (mine) {
        append(kept, keptn, ", ", "%s=%s", PT_NO_CACHE, mine);
        append(b->record, sizeof b->record, "; ", "%s=%s (user's)", PT_NO_CACHE,
               item_value(mine, v, sizeof v));
        if (strcmp(mine, "1") != 0 && !async)
            append(b->notes, sizeof b->notes, "\n",
                   "PyTorch: with your %s=%s its caching allocator stays on: cudafrag sees its "
                   "segments, not its tensors",
                   PT_NO_CACHE, mine);
        else if (!async)
            pytorch_caching_settings_moot(b);
    } else if (!async) {
        setenv(PT_NO_CACHE, "1", 1);
        append(set, setn, ", ", "%s=1", PT_NO_CACHE);
        append(b->record, sizeof b->record, "; ", "%s=1", PT_NO_CACHE);
        pytorch_caching_settings_moot(b);
    }
}

static void xla_pool_settings_moot(struct cf_blocks *b)
{
    for (size_t i = 0; i < sizeof xla_pool_vars / sizeof xla_pool_vars[0]; i++) {
        const char *v = getenv(xla_pool_vars[i]);
        if (v)
            append(b->notes, sizeof b->notes, "\n",
                   "JAX: your %s=%s does not act with the platform allocator", xla_pool_vars[i], v);
    }
}

static void jax(struct cf_blocks *b, char *set, size_t setn, char *kept, size_t keptn)
{
    char v[512];
    const char *mine = getenv(XLA_ALLOC);
    if (mine == NULL) {
        setenv(XLA_ALLOC, "platform", 1);
        append(set, setn, ", ", "%s=platform", XLA_ALLOC);
        append(b->record, sizeof b->record, "; ", "%s=platform", XLA_ALLOC);
        xla_pool_settings_moot(b);
        return;
    }
    append(kept, keptn, ", ", "%s=%s", XLA_ALLOC, mine);
    append(b->record, sizeof b->record, "; ", "%s=%s (user's)", XLA_ALLOC,
           item_value(mine, v, sizeof v));
    if (strcasecmp(mine, "platform") == 0)
        xla_pool_settings_moot(b);
    else if (strcasecmp(mine, "cuda_async") == 0)
        append(b->notes, sizeof b->notes, "\n",
               "JAX: with your %s=%s each buffer comes from the driver's pool (the arena does "
               "not serve them)",
               XLA_ALLOC, mine);
    else
        append(b->notes, sizeof b->notes, "\n",
               "JAX: with your %s=%s XLA keeps its own pool: cudafrag sees its segments, not "
               "its buffers",
               XLA_ALLOC, mine);
}

static void cupy(struct cf_blocks *b, const char *pydir, char *set, size_t setn)
{
    if (pydir == NULL) {
        append(b->notes, sizeof b->notes, "\n",
               "CuPy: the hook that turns its memory pools off is not installed; call "
               "cupy.cuda.set_allocator(None) in the program");
        return;
    }
    append(set, setn, ", ", "CuPy's memory pools off at import (sitecustomize in %s)", pydir);
    append(b->record, sizeof b->record, "; ", "cupy.cuda.set_allocator(None) at import");
}

static void arena(char *set, size_t setn, char *kept, size_t keptn)
{
    const char *mine = getenv("CUDAFRAG_ARENA");
    if (mine) {
        append(kept, keptn, ", ", "CUDAFRAG_ARENA=%s", mine);
        return;
    }
    setenv("CUDAFRAG_ARENA", "1", 1);
    append(set, setn, ", ", "CUDAFRAG_ARENA=1 (the arena serves them)");
}

void cf_blocks_setup(const char *pydir, struct cf_blocks *b)
{
    char set[2048] = "", kept[1024] = "";
    b->record[0] = b->line[0] = b->notes[0] = '\0';
    pytorch(b, set, sizeof set, kept, sizeof kept);
    jax(b, set, sizeof set, kept, sizeof kept);
    cupy(b, pydir, set, sizeof set);
    arena(set, sizeof set, kept, sizeof kept);
    setenv("CUDAFRAG_BLOCKS", b->record, 1);
    snprintf(b->line, sizeof b->line, "--blocks set %s", set[0] ? set : "nothing");
    if (kept[0]) append(b->line, sizeof b->line, "; ", "kept yours: %s", kept);
}
