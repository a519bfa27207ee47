/* The object is matched, not the function: naming a frame's function needs the
 * framework's debug information, which its wheels do not ship, while the
 * module's path is in every trace. The object alone does not tell a cache's
 * segment from a tensor allocated with the cache off (the same code calls the
 * driver), so a cache is listed only where its segments' sizes tell them
 * apart. CuPy's pool and XLA's BFC allocator take sizes a tensor could have:
 * they are not listed. */
#include "replay/caches.h"

#include <string.h>

static const struct {
    const char *base; /* the file name starts with this */
    struct cf_rp_cache cache;
} objects[] = {
    /* c10::cuda::CUDACachingAllocator: get_allocation_size gives 2 MiB (small
     * pool), 20 MiB, or the request rounded up to 2 MiB; expandable segments
     * map 2 MiB or 20 MiB pages. Uncached (PYTORCH_NO_CUDA_MEMORY_CACHING=1),
     * each tensor's own size. */
    {"libc10_cuda.so", {"PyTorch", 2u << 20}},
};

const struct cf_rp_cache *cf_rp_cache_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
        if (strncmp(base, objects[i].base, strlen(objects[i].base)) == 0) return &objects[i].cache;
    return NULL;
}
