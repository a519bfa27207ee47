#include "hook/cuda_abi.h"

#include "hook/symbols.h"

#include "base/ctx_state.h"
#include "base/real.h"
#include "base/export.h"
#include "base/log.h"

#include <stdbool.h>
#include <string.h>

static const struct {
    const char *name, *base;
    void *wrapper;
} dhooks[CF_DHOOK_COUNT] = {
#define CF_DHOOK_ROW(sym, b) [CF_DHOOK_##sym] = {#sym, #b, (void *)&sym},
    CF_DRIVER_HOOKS(CF_DHOOK_ROW)
#undef CF_DHOOK_ROW
};

static const struct {
    const char *name;
    void *wrapper;
} rhooks[CF_RHOOK_COUNT] = {
#define CF_RHOOK_ROW(sym) [CF_RHOOK_##sym] = {#sym, (void *)&sym},
    CF_RUNTIME_HOOKS(CF_RHOOK_ROW)
#undef CF_RHOOK_ROW
};

void *cf_dhook_resolved[CF_DHOOK_COUNT], *cf_rhook_resolved[CF_RHOOK_COUNT];

/* A lookup that finds nothing is not cached: libcuda or libcudart may be loaded later. */
void *cf_dhook_resolve(enum cf_dhook id)
{
    void *p = cf_real_driver_sym(dhooks[id].name);
    if (p == dhooks[id].wrapper) p = NULL; /* never take ourselves for the real one */
    if (p) __atomic_store_n(&cf_dhook_resolved[id], p, __ATOMIC_RELEASE);
    return p;
}

void *cf_rhook_resolve(enum cf_rhook id)
{
    void *p = cf_real_runtime_sym(rhooks[id].name);
    if (p == rhooks[id].wrapper) p = NULL;
    if (p) __atomic_store_n(&cf_rhook_resolved[id], p, __ATOMIC_RELEASE);
    return p;
}

static bool maybe_cuda_name(const char *s)
{
    return s != NULL && s[0] == 'c' && s[1] == 'u';
}

void *cf_hook_for_lookup(const char *symbol, void *found)
{
    if (found == NULL || !maybe_cuda_name(symbol)) return found;
    bool known = false;
    for (int i = 0; i < CF_DHOOK_COUNT; i++) {
        if (strcmp(dhooks[i].base, symbol) != 0 && strcmp(dhooks[i].name, symbol) != 0) continue;
        known = true;
        if (found == dhooks[i].wrapper) return found;
        if (found == cf_dhook_real((enum cf_dhook)i)) return dhooks[i].wrapper;
    }
    /* The caller keeps a function we do not wrap: if it changes contexts or
     * captures, the kept answers would miss it. */
    if (known) cf_ctx_untrack();
    if (known)
        cf_warn_once("lookup-unmatched",
                     "the driver returned an entry point for %s that is none of libcuda's "
                     "exported versions; calls through it are not recorded",
                     symbol);
    return found;
}

void *cf_hook_for_export(const char *name, void *found)
{
    if (found == NULL || !maybe_cuda_name(name)) return found;
    for (int i = 0; i < CF_DHOOK_COUNT; i++)
        if (strcmp(dhooks[i].name, name) == 0)
            return found == cf_dhook_real((enum cf_dhook)i) ? dhooks[i].wrapper : found;
    for (int i = 0; i < CF_RHOOK_COUNT; i++)
        if (strcmp(rhooks[i].name, name) == 0)
            return found == cf_rhook_real((enum cf_rhook)i) ? rhooks[i].wrapper : found;
    return found;
}
