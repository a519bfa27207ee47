// Prints the library's path as the loader named it and the ELF virtual address
// (runtime address minus the library's load bias) of a return address inside it.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>

#include "sym_cxx.h"

int main(int argc, char **)
{
    int r = demo::inner::compute(argc);
    Dl_info info;
    struct link_map *map = nullptr;
    if (dladdr1(demo::inner::seen, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) == 0 ||
        map == nullptr)
        return 1;
    std::printf("module %s\n", map->l_name);
    std::printf("inlined %#lx\n", reinterpret_cast<unsigned long>(demo::inner::seen) - map->l_addr);
    return r == 2 * (argc + 1) + 1 ? 0 : 1;
}
