// A shared library with namespaced C++ functions, one inlined into the other:
// cudafrag symbolize must give demangled names for both frames. Lines that the
// test expects are marked with a SYM_ comment.
#include "sym_cxx.h"

namespace demo
{
namespace inner
{
void *seen;

__attribute__((noinline)) static int note_caller(int x)
{
    seen = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

inline __attribute__((always_inline)) int twice(int x)
{
    return 2 * note_caller(x); // SYM_CXX_INLINED
}

__attribute__((noinline)) int compute(int x)
{
    int r = twice(x); // SYM_CXX_CALLS_INLINED
    __asm__ volatile("" ::: "memory");
    return r + 1;
}
} // namespace inner
} // namespace demo
