// Call sites in C++ code are reported with demangled names: allocations made in
// a namespaced function and a template instance, checked by cxx_names.sh in the
// text report; and in a function of local linkage whose mangled name is longer
// than a report's function field (found in the symbol table, not by dladdr).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

namespace
{
template <typename K, typename V, typename W>
__attribute__((noinline)) void *reduce_rows_into_workspace(unsigned n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(K) + sizeof(V) + sizeof(W)) != cudaSuccess) return nullptr;
    __asm__ volatile("" ::: "memory");
    return p;
}
} // namespace

using rows = std::map<std::string, std::vector<std::pair<std::string, double>>>;
using cols = std::vector<std::map<std::string, std::pair<long, std::vector<float>>>>;

int main()
{
    void *a = pipeline::scratch<float>(1024);
    if (a == nullptr) return 1;
    void *b = reduce_rows_into_workspace<rows, cols, std::pair<rows, cols>>(1024);
    if (b == nullptr) return 1;
    // Left allocated: the leak table and its finding name the site too.
    std::string msg("allocated"); // a C++ program: libstdc++ is loaded
    std::puts(msg.c_str());
    return 0;
}
