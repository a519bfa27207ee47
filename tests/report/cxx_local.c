/* A C program that loads a C++ library with RTLD_LOCAL and lets it allocate:
 * the exit report must still name the C++ call site demangled (cxx_names.sh). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "engine_run");
    return run ? run() : 1;
}
