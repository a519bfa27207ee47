// Call sites in C++ code are reported with demangled names: allocations made in
// a namespaced function and a template instance, checked by cxx_names.sh in the
// text report.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

namespace pipeline
{
template <typename T> __attribute__((noinline)) void *scratch(unsigned n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) return nullptr;
    __asm__ volatile("" ::: "memory");
    return p;
}
} // namespace pipeline

int main()
{
    void *a = pipeline::scratch<float>(1024);
    if (a == nullptr) return 1;
    // Left allocated: the leak table and its finding name the site too.
    std::string msg("allocated"); // a C++ program: libstdc++ is loaded
    std::puts(msg.c_str());
    return 0;
}
