/* The fake framework's PyTorch half calls the driver from a library named as
 * PyTorch's (libc10_cuda.so, where its caching allocator lives), so that its
 * stacks look like PyTorch's to the replay's framework-cache check. */
#include "fake_c10_cuda.h"

/* volatile: no tail call, so the library's frame is on the stack, as PyTorch's is. */
cudaError_t fake_c10_malloc(void **p, size_t size)
{
    volatile cudaError_t rc = cudaMalloc(p, size);
    return rc;
}

cudaError_t fake_c10_free(void *p)
{
    volatile cudaError_t rc = cudaFree(p);
    return rc;
}
