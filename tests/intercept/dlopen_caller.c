/* dlopen through cudafrag's entry still searches the calling program's RUNPATH
 * (the simulated driver is found only there: LD_LIBRARY_PATH is empty), and a
 * library opened with RTLD_DEEPBIND is reported once on stderr. */
#include "intercept.h"

#include <unistd.h>

static char captured[4096];

/* Runs dlopen with stderr sent to a file, returning the handle; the text written
 * is appended to `captured`. */
static void *dlopen_captured(const char *file, int flags)
{
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    int saved = dup(2);
    CHECK(dup2(fileno(tmp), 2) == 2);
    void *h = dlopen(file, flags);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    rewind(tmp);
    size_t used = strlen(captured);
    size_t n = fread(captured + used, 1, sizeof captured - used - 1, tmp);
    captured[used + n] = '\0';
    fclose(tmp);
    return h;
}

int main(void)
{
    api_calls("cudaMalloc"); /* fails unless cudafrag is preloaded */
    void *h = dlopen_captured("libcuda.so.1", RTLD_NOW | RTLD_DEEPBIND);
    if (h == NULL) {
        fprintf(stderr, "dlopen did not search the program's RUNPATH: %s\n", dlerror());
        return 1;
    }
    CHECK_STR(captured, "RTLD_DEEPBIND");
    CHECK_STR(captured, "libcuda.so.1");
    size_t first = strlen(captured);
    CHECK(dlopen_captured("libcuda.so.1", RTLD_NOW | RTLD_DEEPBIND) == h);
    CHECK_EQ(strlen(captured), first); /* reported once */
    CHECK(dlopen_captured("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == h);
    return 0;
}
