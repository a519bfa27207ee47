/* A program that loads libcudart itself with RTLD_LOCAL (as Python extension
 * modules are loaded) and looks the runtime up with dlsym: the runtime is not in
 * the global scope, so cudafrag finds the real functions in that private copy,
 * and dlsym on its handle hands out our wrappers. */
#include "intercept.h"

#include <cuda_runtime_api.h>

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);

int main(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    CHECK(rt != NULL);
    malloc_fn m = (malloc_fn)dlsym(rt, "cudaMalloc");
    free_fn f = (free_fn)dlsym(rt, "cudaFree");
    CHECK(m != NULL && f != NULL);
    CHECK((void *)m == dlsym(RTLD_DEFAULT, "cudaMalloc"));
    CHECK((void *)f == dlsym(RTLD_DEFAULT, "cudaFree"));
    /* Runtime symbols cudafrag does not hook come from libcudart itself. */
    void *get_device = dlsym(rt, "cudaGetDevice");
    CHECK(get_device != NULL);
    CHECK(dlsym(RTLD_DEFAULT, "cudaGetDevice") == NULL);

    void *p[5];
    for (int i = 0; i < 5; i++)
        CHECK_CU(m(&p[i], 1 << 20));
    for (int i = 0; i < 5; i++)
        CHECK_CU(f(p[i]));
    /* Our exported cudaMalloc, called directly, reaches the same private runtime. */
    malloc_fn direct = (malloc_fn)dlsym(RTLD_DEFAULT, "cudaMalloc");
    CHECK_CU(direct(&p[0], 4096));
    CHECK_CU(f(p[0]));
    CHECK_CALLS("cudaMalloc", 6);
    CHECK_CALLS("cudaFree", 6);
    CHECK_CALLS("cuMemAlloc", 0);
    CHECK_CALLS("cuMemFree", 0);
    return 0;
}
