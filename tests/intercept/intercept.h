/* Shared by the interception tests: read cudafrag's counters through the public
 * API and the simulated driver's call counts, looked up at run time exactly as a
 * program that runs with or without either would; driver entry points as the
 * runtime hands them out. */
#ifndef CF_TESTS_INTERCEPT_H
#define CF_TESTS_INTERCEPT_H

#include "check.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

typedef long long (*api_calls_fn)(const char *);

static inline long long api_calls(const char *api)
{
    static api_calls_fn fn;
    if (fn == NULL) fn = (api_calls_fn)dlsym(RTLD_DEFAULT, "cudafrag_api_calls");
    if (fn == NULL) {
        fprintf(stderr, "cudafrag_api_calls not found: libcudafrag.so is not preloaded\n");
        exit(1);
    }
    return fn(api);
}

#define CHECK_CALLS(api, n) CHECK_EQ(api_calls(api), (n))

typedef long long (*live_bytes_fn)(int);

/* cudafrag_live_bytes(device): the bytes cudafrag records live on a device. */
static inline long long live_bytes(int device)
{
    static live_bytes_fn fn;
    if (fn == NULL) fn = (live_bytes_fn)dlsym(RTLD_DEFAULT, "cudafrag_live_bytes");
    if (fn == NULL) {
        fprintf(stderr, "cudafrag_live_bytes not found: libcudafrag.so is not preloaded\n");
        exit(1);
    }
    return fn(device);
}

typedef unsigned long long (*sim_calls_fn)(const char *);

/* How often the simulated driver was called by that name (simcudaCallCount, ~0
 * unless SIMCUDA_COUNT_CALLS=1); on another driver the test is skipped (77). */
static inline unsigned long long sim_calls(const char *name)
{
    static sim_calls_fn fn;
    if (fn == NULL) fn = (sim_calls_fn)dlsym(RTLD_DEFAULT, "simcudaCallCount");
    if (fn == NULL) {
        fprintf(stderr, "simcudaCallCount not found: not the simulated driver\n");
        exit(77);
    }
    return fn(name);
}

/* A driver entry point as the runtime hands it to programs (with cudafrag loaded:
 * its wrapper), for the ABI of that CUDA version. */
static inline void *driver_entry_point(const char *name, unsigned version)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK_CU(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &st));
    CHECK_EQ(st, cudaDriverEntryPointSuccess);
    return fn;
}

#endif
