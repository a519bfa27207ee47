// A C++ library a C program loads privately (RTLD_LOCAL), as Python loads its
// extension modules: libstdc++ is then outside the global scope.
#include <cuda_runtime_api.h>

#include <string>

namespace engine
{
__attribute__((noinline)) void *workspace(unsigned n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess) return nullptr;
    __asm__ volatile("" ::: "memory");
    return p;
}
} // namespace engine

extern "C" __attribute__((visibility("default"))) int engine_run(void)
{
    std::string tag("engine"); // uses libstdc++
    return engine::workspace(4096 + (unsigned)tag.size()) ? 0 : 1;
}
