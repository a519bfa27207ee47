/* The dlopen entry only watches: a library opened with RTLD_DEEPBIND resolves its
 * own references inside its dependencies first, so its calls to libcudart or
 * libcuda skip our exported wrappers. That cannot be undone from here; it is
 * reported once. The call itself reaches libc by a tail jump (hook/tailjump.h),
 * so dlopen still sees the program as its caller. */
#include "base/ctx_state.h"
#include "base/real.h"
#include "hook/tailjump.h"
#include "base/export.h"
#include "base/log.h"

#include <dlfcn.h>
#include <stddef.h>

typedef void *(*dlopen_fn)(const char *, int);
static dlopen_fn real_dlopen;

CF_NO_SANITIZE static dlopen_fn find_real_dlopen(void)
{
    dlopen_fn f = __atomic_load_n(&real_dlopen, __ATOMIC_ACQUIRE);
    if (f) return f;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; f == NULL && i < sizeof versions / sizeof versions[0]; i++)
        f = (dlopen_fn)dlvsym(RTLD_NEXT, "dlopen", versions[i]);
    if (f) __atomic_store_n(&real_dlopen, f, __ATOMIC_RELEASE);
    return f;
}

void *cf_dlopen_target(const char *file, int flags) __attribute__((used));
CF_NO_SANITIZE void *cf_dlopen_target(const char *file, int flags)
{
    __atomic_add_fetch(&cf_dlopen_generation, 1, __ATOMIC_RELEASE);
    if ((flags & RTLD_DEEPBIND) && file != NULL) {
        /* Its context switches and captures would bypass our wrappers too. */
        cf_ctx_untrack();
        cf_warn_once("deepbind",
                     "%s is loaded with RTLD_DEEPBIND: CUDA calls it makes through its own "
                     "dependencies bypass cudafrag and are not recorded",
                     file);
    }
    return (void *)find_real_dlopen();
}

CF_TAILJUMP(dlopen, cf_dlopen_target);
