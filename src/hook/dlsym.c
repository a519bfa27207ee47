/* The overriding dlsym. Frameworks look driver functions up on a libcuda handle
 * (dlsym(h, "cuMemAlloc_v2")), and a lookup on a handle searches only that library,
 * so our exported wrappers are never found that way: this hands them out instead.
 *
 * RTLD_NEXT and RTLD_DEFAULT lookups depend on which object called dlsym, so they
 * go to libc's dlsym by a tail jump that keeps the program's return address.
 * (RTLD_DEFAULT finds our exported wrappers by itself: libcudafrag.so comes first
 * in the global scope.) */
#include "hook/guard.h"
#include "base/real.h"
#include "hook/symbols.h"
#include "hook/tailjump.h"

#include "base/export.h"

#include <dlfcn.h>

static void *dlsym_on_handle(void *handle, const char *name)
{
    void *found = cf_real_dlsym(handle, name);
    if (found == NULL || !cf_hook_enabled()) return found;
    int saved = errno;
    void *r = cf_hook_for_export(name, found);
    errno = saved;
    return r;
}

/* Where the dlsym entry continues. */
void *cf_dlsym_target(void *handle, const char *name) __attribute__((used));
CF_NO_SANITIZE void *cf_dlsym_target(void *handle, const char *name)
{
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) return cf_real_dlsym_fn();
    return (void *)dlsym_on_handle;
}

CF_TAILJUMP(dlsym, cf_dlsym_target);
