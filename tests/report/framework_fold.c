/* framework_fold: allocations through a framework's library (libtorch_cfstub.so,
 * folded as PyTorch's libraries are) are shown at this program's line that called
 * in (main); those the library makes on a thread of its own, where no frame
 * of the program is, at the library's frame past the allocator (engine_thread),
 * not at the thread's start in libc. */
#include <stddef.h>
#include <stdio.h>

void *stub_alloc(size_t n);
void *stub_alloc_on_own_thread(size_t n);

int main(void)
{
    void *a = stub_alloc(1 << 20);
    void *b = stub_alloc_on_own_thread(2 << 20);
    printf("%s\n", a && b ? "ok" : "allocation failed");
    return !(a && b);
}
