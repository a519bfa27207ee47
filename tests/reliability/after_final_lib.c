/* Linked into reliability_after_final: a library the program needs is
 * initialized before the preloaded libcudafrag.so, so the atexit handler its
 * constructor registers runs after cudafrag's final report -- the moment where a
 * late SIGUSR1 used to start an interim report that exit then cut short. There
 * it asks for a report (cudafrag_report_now, the same path as SIGUSR1's). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void after_final(void)
{
    /* The final report must already be there, or this tests nothing. */
    const char *pattern = getenv("CUDAFRAG_OUTPUT");
    char final[4096];
    const char *p = pattern ? strstr(pattern, "%p") : NULL;
    if (p == NULL) _exit(8);
    snprintf(final, sizeof final, "%.*s%ld%s.txt", (int)(p - pattern), pattern, (long)getpid(),
             p + 2);
    if (access(final, R_OK) != 0) {
        fprintf(stderr, "the late handler ran before the final report\n");
        _exit(9);
    }
    int (*report_now)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cudafrag_report_now");
    if (report_now == NULL) _exit(10);
    fprintf(stderr, "report_now after the final report: %d\n", report_now());
}

static int armed;

__attribute__((constructor)) static void register_after_final(void)
{
    armed = atexit(after_final) == 0;
}

/* Called by the program, so that the linker keeps this library as needed. */
__attribute__((visibility("default"))) int after_final_armed(void);
int after_final_armed(void)
{
    return armed;
}
