// Allocator layers a call site is named past, checked by fold_frames.sh: the
// program's own allocator (namespace fakealloc, folded only when
// CUDAFRAG_SKIP_FRAMES names it) and thrust's temporary storage (a built-in
// pattern). The lines marked CALL_* are where the sites must be shown.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <string>

namespace fakealloc
{
class Arena
{
  public:
    __attribute__((noinline)) void *grab(std::size_t n);
};

void *Arena::grab(std::size_t n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess) return nullptr;
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *take(Arena &a, std::size_t n)
{
    void *p = a.grab(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
} // namespace fakealloc

namespace thrust
{
namespace detail
{
__attribute__((noinline)) void *temporary_buffer(std::size_t n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess) return nullptr;
    __asm__ volatile("" ::: "memory");
    return p;
}
} // namespace detail
} // namespace thrust

__attribute__((noinline)) void *load_weights(fakealloc::Arena &a)
{
    void *p = fakealloc::take(a, 4u << 20); // CALL_LOAD
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *decode_frame(fakealloc::Arena &a)
{
    void *p = fakealloc::take(a, 2u << 20); // CALL_DECODE
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *sort_keys()
{
    void *p = thrust::detail::temporary_buffer(1u << 20); // CALL_SORT
    __asm__ volatile("" ::: "memory");
    return p;
}

int main()
{
    fakealloc::Arena arena;
    void *w = load_weights(arena);
    void *f1 = decode_frame(arena); // CALL_MAIN_DECODE_1
    void *f2 = decode_frame(arena); // CALL_MAIN_DECODE_2
    void *k = sort_keys();
    if (!w || !f1 || !f2 || !k) return 1;
    std::string msg("allocated"); // a C++ program: libstdc++ (and its demangler) is loaded
    std::puts(msg.c_str());
    return 0;
}
