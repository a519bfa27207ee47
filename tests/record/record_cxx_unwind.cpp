// A C++ program profiled with LD_PRELOAD=libcudafrag.so: after an allocation made
// cudafrag unwind a stack (so libunwind is loaded), C++ exceptions must still be
// thrown and caught by libgcc_s's unwinder, not by libunwind's _Unwind_* copies.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <stdexcept>

#include "check.h"

static bool module_mapped(const char *name)
{
    struct search {
        const char *name;
        bool found;
    } s = {name, false};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *arg) {
            auto *sp = static_cast<search *>(arg);
            if (std::strstr(info->dlpi_name, sp->name)) sp->found = true;
            return 0;
        },
        &s);
    return s.found;
}

__attribute__((noinline)) static void throw_one(int v)
{
    throw std::runtime_error(v ? "thrown" : "zero");
}

int main()
{
    CHECK(module_mapped("libcudafrag.so"));
    CHECK(module_mapped("libunwind")); // loaded at init, while the stack is large (stack.c)

    void *p = nullptr;
    CHECK_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
    CHECK(p != nullptr);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    CHECK(module_mapped("libunwind")); // the allocation's stack was unwound

    void *raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    Dl_info info;
    CHECK(raise != nullptr);
    CHECK(dladdr(raise, &info) != 0);
    CHECK(std::strstr(info.dli_fname, "libunwind") == nullptr);
#ifndef __SANITIZE_ADDRESS__ /* the ASan runtime brings its own copy of the unwinder */
    CHECK_STR(info.dli_fname, "libgcc_s");
#endif

    bool caught = false;
    try {
        throw_one(1);
    } catch (const std::runtime_error &e) {
        caught = std::strcmp(e.what(), "thrown") == 0;
    }
    CHECK(caught);
    return 0;
}
