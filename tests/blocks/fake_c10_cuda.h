/* The fake framework's calls into its libc10_cuda.so (fake_c10_cuda.c). */
#ifndef FAKE_C10_CUDA_H
#define FAKE_C10_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>

/* The project builds with hidden visibility: the library's entry points are
 * exported by name. */
__attribute__((visibility("default"))) cudaError_t fake_c10_malloc(void **p, size_t size);
__attribute__((visibility("default"))) cudaError_t fake_c10_free(void *p);

#endif
