/* Shared by the interception tests: read cudafrag's counters through the public
 * API, looked up at run time exactly as a program that runs with or without
 * cudafrag would. */
#ifndef CF_TESTS_INTERCEPT_H
#define CF_TESTS_INTERCEPT_H

#include "check.h"

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

#endif
