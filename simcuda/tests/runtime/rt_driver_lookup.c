/* The runtime reaches the driver the way NVIDIA's does, which is what an
 * interposer sees: one dlopen of libcuda.so.1 (found through the library
 * path), one dlsym of cuGetProcAddress_v2, a lookup of cuGetProcAddress
 * through it, and every other entry point through that answer. This program
 * defines its own dlsym, which the runtime's reference binds to, and hands
 * the runtime a recording cuGetProcAddress. */
#include "rt_test.h"

/* CUDA 13 deprecates cudaGetDriverEntryPoint, yet PyTorch and others still
 * reach the driver through it: it must keep working. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#define MAX_NAMES 512

struct lookup {
    char name[64];
    int version;
    cuuint64_t flags;
};

static char dlsym_names[8][64];
static int dlsym_calls;
static struct lookup lookups[MAX_NAMES];
static int lookup_count;
static void *(*libc_dlsym)(void *, const char *);
static PFN_cuGetProcAddress_v12000 driver_get_proc;

static CUresult recording_get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult *status)
{
    if (lookup_count < MAX_NAMES) {
        struct lookup *l = &lookups[lookup_count++];
        snprintf(l->name, sizeof(l->name), "%s", symbol);
        l->version = version;
        l->flags = flags;
    }
    CUresult r = driver_get_proc(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && strcmp(symbol, "cuGetProcAddress") == 0)
        *pfn = (void *)recording_get_proc;
    return r;
}

/* Default visibility: the shared runtime's reference must bind to it. */
__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
    if (libc_dlsym == NULL) {
        libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (libc_dlsym == NULL)
            libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    }
    if (dlsym_calls < 8) snprintf(dlsym_names[dlsym_calls], sizeof(dlsym_names[0]), "%s", name);
    dlsym_calls++;
    void *fn = libc_dlsym(handle, name);
    if (fn != NULL && strcmp(name, "cuGetProcAddress_v2") == 0) {
        driver_get_proc = (PFN_cuGetProcAddress_v12000)fn;
        return (void *)recording_get_proc;
    }
    return fn;
}

static const struct lookup *find_lookup(const char *name, cuuint64_t flags)
{
    for (int i = 0; i < lookup_count; i++)
        if (strcmp(lookups[i].name, name) == 0 && lookups[i].flags == flags) return &lookups[i];
    return NULL;
}

/* libcuda.so.1 came from a directory of LD_LIBRARY_PATH, as a real driver would. */
static void check_driver_path(void)
{
    Dl_info info;
    CHECK(dladdr((void *)driver_get_proc, &info) != 0);
    CHECK_STR(info.dli_fname, "libcuda.so.1");
    const char *path = getenv("LD_LIBRARY_PATH");
    CHECK(path != NULL);
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s", path);
    int found = 0;
    for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir != NULL;
         dir = strtok_r(NULL, ":", &save))
        if (*dir && strncmp(info.dli_fname, dir, strlen(dir)) == 0) found = 1;
    CHECK(found);
}

int main(void)
{
    CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
    void *p = NULL;
    CHECK_RT(cudaMalloc(&p, 1 * MIB));
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaMallocAsync(&p, 1 * MIB, s));
    CHECK_RT(cudaFreeAsync(p, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaStreamDestroy(s));

    CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL);
    CHECK_EQ(dlsym_calls, 1);
    CHECK_STR(dlsym_names[0], "cuGetProcAddress_v2");
    CHECK_EQ(strlen(dlsym_names[0]), strlen("cuGetProcAddress_v2"));
    check_driver_path();

    CHECK_GE(lookup_count, 20);
    CHECK_EQ(strcmp(lookups[0].name, "cuGetProcAddress"), 0);
    CHECK_EQ(lookups[0].flags, CU_GET_PROC_ADDRESS_DEFAULT);
    for (int i = 0; i < lookup_count; i++) {
        CHECK_EQ(lookups[i].version, 13000);
        /* Names before cuda.h's renames: the driver picks the version. */
        CHECK(strstr(lookups[i].name, "_v2") == NULL);
    }
    CHECK(find_lookup("cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT) != NULL);
    CHECK(find_lookup("cuMemFree", CU_GET_PROC_ADDRESS_DEFAULT) != NULL);
    CHECK(find_lookup("cuMemAllocAsync", CU_GET_PROC_ADDRESS_DEFAULT) != NULL);
    CHECK(find_lookup("cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != NULL);
    CHECK(find_lookup("cuMemcpyHtoD", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != NULL);

    /* cudaGetDriverEntryPoint goes through the same cuGetProcAddress. */
    int before = lookup_count;
    void *fn = NULL;
    CHECK_RT(cudaGetDriverEntryPoint("cuMemGetInfo", &fn, cudaEnableDefault, NULL));
    CHECK_EQ(lookup_count, before + 1);
    CHECK_EQ(strcmp(lookups[before].name, "cuMemGetInfo"), 0);
    CHECK_EQ(dlsym_calls, 1);
    return 0;
}
