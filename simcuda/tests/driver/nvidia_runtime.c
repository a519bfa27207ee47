/* A program that brought NVIDIA's runtime asks the driver for cuGetExportTable,
 * which the simulated driver does not have: the lookup fails as an unknown
 * name does, and stderr says once, in words, why every CUDA call will fail. */
#include "simtest.h"

#include <unistd.h>

static char text[4096];

static void lookup(const char *name, int version)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CHECK_EQ(cuGetProcAddress(name, &fn, version, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(fn == NULL);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

int main(void)
{
    char path[] = "/tmp/simcuda-nvrt-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);

    /* An unknown name alone is no sign of NVIDIA's runtime. */
    lookup("cuNoSuchFunction", 13000);
    CHECK_EQ(pread(fd, text, sizeof text - 1, 0), 0);

    /* NVIDIA's runtime asks more than once (at 3000); one message. */
    lookup("cuGetExportTable", 3000);
    lookup("cuGetExportTable", 3000);
    dup2(saved, 2);
    CHECK(pread(fd, text, sizeof text - 1, 0) > 0);
    CHECK_STR(text, "simcuda: this program uses NVIDIA's CUDA runtime (libcudart linked "
                    "statically, or loaded through an RPATH)");
    CHECK_STR(text, "the simulated device cannot run it");
    CHECK_STR(text, "cudaErrorCallRequiresNewerDriver");
    CHECK_EQ(count(text, "simcuda:"), 1);
    return 0;
}
