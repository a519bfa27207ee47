/* Finding the real CUDA and libc functions behind our interposed names.
 * Everything here works before any constructor ran and without malloc: the
 * dynamic loader may call into us (through dlsym) while it is still starting
 * libcuda, and libcuda itself calls dlsym. */
#include "base/real.h"
#include "base/export.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym;
static void *libcuda_handle;

/* dlvsym is not interposed, so it is the way to reach libc's dlsym without
 * recursing into our own override. */
CF_NO_SANITIZE static dlsym_fn find_real_dlsym(void)
{
    dlsym_fn f = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
    if (f) return f;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; f == NULL && i < sizeof versions / sizeof versions[0]; i++)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (f) __atomic_store_n(&real_dlsym, f, __ATOMIC_RELEASE);
    return f;
}

CF_NO_SANITIZE void *cf_real_dlsym_fn(void)
{
    return (void *)find_real_dlsym();
}

void *cf_real_dlsym(void *handle, const char *name)
{
    dlsym_fn f = find_real_dlsym();
    return f ? f(handle, name) : NULL;
}

void *cf_libcuda(void)
{
    void *h = __atomic_load_n(&libcuda_handle, __ATOMIC_ACQUIRE);
    if (h) return h;
    h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (h == NULL) {
        (void)dlerror(); /* a pending error would confuse the program's own dlerror() */
        return NULL;
    }
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&libcuda_handle, &expected, h, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        dlclose(h); /* another thread won; drop our extra reference */
        return expected;
    }
    return h;
}

void *cf_real_driver_sym(const char *name)
{
    void *h = cf_libcuda();
    void *p = h ? cf_real_dlsym(h, name) : NULL;
    if (p == NULL) p = cf_real_dlsym(RTLD_NEXT, name);
    if (p == NULL) (void)dlerror();
    return p;
}

void *cf_real_runtime_sym(const char *name)
{
    void *p = cf_real_dlsym(RTLD_NEXT, name);
    static const char *const sonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    for (size_t i = 0; p == NULL && i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_NOLOAD | RTLD_LAZY);
        if (h == NULL) continue;
        p = cf_real_dlsym(h, name);
        dlclose(h); /* only drops the reference RTLD_NOLOAD added */
    }
    if (p == NULL) (void)dlerror();
    return p;
}

/* ---- the driver table cudafrag's own calls use ---- */

/* Each member by its exact exported name (the ABI the member's type names), and the
 * name and version cuGetProcAddress knows it by, for a driver that does not export it. */
#define DRV(member, export, version)                                                               \
    {                                                                                              \
        offsetof(struct cf_driver, member), export, #member, version                               \
    }
static const struct {
    size_t offset;
    const char *export;
    const char *name;
    int version;
} members[] = {
    DRV(cuGetProcAddress, "cuGetProcAddress_v2", 12000),
    DRV(cuCtxGetDevice, "cuCtxGetDevice", 2000),
    DRV(cuCtxGetCurrent, "cuCtxGetCurrent", 4000),
    DRV(cuDeviceGet, "cuDeviceGet", 2000),
    DRV(cuDeviceGetCount, "cuDeviceGetCount", 2000),
    DRV(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000),
    DRV(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000),
    DRV(cuMemGetInfo, "cuMemGetInfo_v2", 3020),
    DRV(cuMemAlloc, "cuMemAlloc_v2", 3020),
    DRV(cuMemFree, "cuMemFree_v2", 3020),
    DRV(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 11020),
    DRV(cuDeviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute", 11040),
    DRV(cuStreamIsCapturing, "cuStreamIsCapturing", 10000),
    DRV(cuStreamGetDevice, "cuStreamGetDevice", 12080),
    DRV(cuStreamSynchronize, "cuStreamSynchronize", 2000),
    DRV(cuCtxSynchronize, "cuCtxSynchronize", 2000),
    DRV(cuEventCreate, "cuEventCreate", 2000),
    DRV(cuEventRecord, "cuEventRecord", 2000),
    DRV(cuEventQuery, "cuEventQuery", 2000),
    DRV(cuEventSynchronize, "cuEventSynchronize", 2000),
    DRV(cuEventDestroy, "cuEventDestroy_v2", 4000),
    DRV(cuStreamWaitEvent, "cuStreamWaitEvent", 3020),
    DRV(cuMemAddressReserve, "cuMemAddressReserve", 10020),
    DRV(cuMemAddressFree, "cuMemAddressFree", 10020),
    DRV(cuMemCreate, "cuMemCreate", 10020),
    DRV(cuMemRelease, "cuMemRelease", 10020),
    DRV(cuMemMap, "cuMemMap", 10020),
    DRV(cuMemUnmap, "cuMemUnmap", 10020),
    DRV(cuMemSetAccess, "cuMemSetAccess", 10020),
    DRV(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 10020),
    DRV(cuPointerGetAttribute, "cuPointerGetAttribute", 4000),
    DRV(cuDeviceGetMemPool, "cuDeviceGetMemPool", 11020),
    DRV(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020),
};
#undef DRV

static struct cf_driver drv;
static const struct cf_driver unresolved; /* all NULL: what callers see meanwhile */
enum { DRV_NONE, DRV_RESOLVING, DRV_DONE };
static int drv_state;
unsigned cf_dlopen_generation;
static unsigned tried_generation = ~0u, calls_since_try;

/* A failed resolution is cheap to repeat only in appearance: dlopen(RTLD_NOLOAD)
 * and dlerror() allocate. libcuda can only appear through a dlopen, so retry when
 * the dlopen entry has seen one since the last try -- and, for loads that bypass
 * it, every 4096th call. */
static bool worth_retrying(void)
{
    unsigned gen = __atomic_load_n(&cf_dlopen_generation, __ATOMIC_ACQUIRE);
    if (gen != __atomic_load_n(&tried_generation, __ATOMIC_RELAXED)) return true;
    return (__atomic_add_fetch(&calls_since_try, 1, __ATOMIC_RELAXED) & 4095) == 0;
}

static bool resolve_driver(struct cf_driver *d)
{
    void *h = cf_libcuda();
    if (h == NULL) return false;
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)cf_real_dlsym(h, "cuGetProcAddress_v2");
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        void *p = cf_real_dlsym(h, members[i].export);
        if (p == NULL && gpa != NULL &&
            gpa(members[i].name, &p, members[i].version, CU_GET_PROC_ADDRESS_DEFAULT, NULL) !=
                CUDA_SUCCESS)
            p = NULL;
        *(void **)((char *)d + members[i].offset) = p;
    }
    (void)dlerror();
    return true;
}

CF_HOT const struct cf_driver *cf_driver(void)
{
    int st = __atomic_load_n(&drv_state, __ATOMIC_ACQUIRE);
    if (st == DRV_DONE) return &drv;
    int expect = DRV_NONE;
    /* No waiting for a concurrent resolver: it may hold the loader lock we would need. */
    if (st == DRV_RESOLVING || !worth_retrying() ||
        !__atomic_compare_exchange_n(&drv_state, &expect, DRV_RESOLVING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return &unresolved;
    unsigned gen = __atomic_load_n(&cf_dlopen_generation, __ATOMIC_ACQUIRE);
    bool ok = resolve_driver(&drv);
    if (!ok) __atomic_store_n(&tried_generation, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&drv_state, ok ? DRV_DONE : DRV_NONE, __ATOMIC_RELEASE);
    return ok ? &drv : &unresolved;
}
